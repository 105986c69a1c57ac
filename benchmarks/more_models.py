"""More model kinds users write, each with a log Z computed here with scipy/numpy alone.

The companions of ``first_call_models.py`` for accuracy sweeps (``default_coverage.py``
takes their names too): a latent random walk, a hierarchy written non-centred by hand, a
heavy-tailed regression, a regression with 50 000 rows, a 10-category simplex, and larger
latent GPs and mixtures than the first-call benchmark's. Every builder returns
``(model, log_z)``; run this file to print each truth::

    PYTHONPATH=. .venv/bin/python benchmarks/more_models.py
"""

from __future__ import annotations

import numpy as np
import pymc as pm
from first_call_models import (
    _quad_log,
)
from scipy import integrate, stats


def random_walk(T: int = 60, noise: float = 0.3):
    """``x ~ GaussianRandomWalk(s)`` (``N(0, 1)`` start), ``s ~ HalfNormal(0.5)``,
    ``y ~ N(x, noise)``: ``y | s`` is Gaussian with covariance ``1 + s² min(i, j) +
    noise² I``; ``s`` by adaptive quadrature."""
    rng = np.random.default_rng(21)
    y = np.cumsum(rng.normal(0, 0.3, T)) + rng.normal(0, noise, T)
    with pm.Model() as model:
        s = pm.HalfNormal("s", 0.5)
        x = pm.GaussianRandomWalk("x", sigma=s, init_dist=pm.Normal.dist(0, 1), steps=T - 1)
        pm.Normal("y", x, noise, observed=y)
    steps = np.minimum.outer(np.arange(T), np.arange(T))

    def log_f(s):
        cov = 1.0 + s**2 * steps + noise**2 * np.eye(T)
        return stats.multivariate_normal(np.zeros(T), cov).logpdf(y) + stats.halfnorm.logpdf(
            s, scale=0.5
        )

    return model, _quad_log(log_f, 1e-9, 3.0)


def student_t(n: int = 40):
    """``y ~ StudentT(3, a + b x, 1)``, ``a, b ~ N(0, 2)``: Simpson's rule on a 2-D grid."""
    rng = np.random.default_rng(5)
    x = rng.uniform(-2, 2, n)
    y = 0.5 + 1.2 * x + rng.standard_t(3, n)
    with pm.Model() as model:
        a = pm.Normal("a", 0, 2)
        b = pm.Normal("b", 0, 2)
        pm.StudentT("y", nu=3, mu=a + b * x, sigma=1.0, observed=y)
    ga, gb = np.linspace(-2, 3, 1001), np.linspace(-0.5, 3, 1001)
    A, B = np.meshgrid(ga, gb, indexing="ij")
    log_f = stats.norm.logpdf(A, 0, 2) + stats.norm.logpdf(B, 0, 2)
    for xi, yi in zip(x, y, strict=True):
        log_f += stats.t.logpdf(yi, 3, A + B * xi, 1.0)
    top = log_f.max()
    inner = integrate.simpson(np.exp(log_f - top), x=gb, axis=1)
    return model, float(top + np.log(integrate.simpson(inner, x=ga)))


if __name__ == "__main__":
    import sys

    from registry import build, family, ndim

    for name in family("more") if len(sys.argv) < 2 else sys.argv[1].split(","):
        model, log_z = build(name)
        print(f"{name:24s} d={ndim(model):5d} log Z = {log_z:.4f}", flush=True)
