"""Batched L-BFGS ascents (:mod:`pymc_evidence.basefit.ascents`) against scipy's, one start at
a time, on densities whose modes are known in closed form."""

from __future__ import annotations

import numpy as np

from pymc_evidence.basefit import ascents
from pymc_evidence.basefit.ascents import ascend_many
from pymc_evidence.basefit.laplace import ascend


def _rosenbrock(xs):
    """``log f = -(1 - a)^2 - 100 (b - a^2)^2``: one mode at (1, 1), a curved valley."""
    a, b = xs[:, 0], xs[:, 1]
    logp = -((1 - a) ** 2) - 100 * (b - a**2) ** 2
    grad = np.stack([2 * (1 - a) + 400 * a * (b - a**2), -200 * (b - a**2)], axis=1)
    return logp, grad


def _correlated(d=6, rho=0.95):
    """A Gaussian with correlation ``rho`` between all pairs, mean 1..d, log f = 0 at it."""
    cov = np.full((d, d), rho) + (1 - rho) * np.eye(d)
    prec, mean = np.linalg.inv(cov), np.arange(1.0, d + 1)

    def density(xs):
        z = xs - mean
        return -0.5 * np.einsum("nd,de,ne->n", z, prec, z), -z @ prec

    return density, mean


def test_modes_as_scipy_finds_them():
    rng = np.random.default_rng(0)
    for density, mode in ((_rosenbrock, np.ones(2)), _correlated()):
        starts = mode + 3.0 * rng.standard_normal((40, mode.size))
        x, log_f = ascend_many(density, starts)
        np.testing.assert_allclose(x, np.broadcast_to(mode, x.shape), atol=2e-3)
        assert np.all(log_f > -1e-5)
        one = lambda v, density=density: tuple(o[0] for o in density(v[None, :]))  # noqa: E731
        for start, end in zip(starts[:5], x[:5], strict=True):
            np.testing.assert_allclose(end, ascend(one, start, 500)[0], atol=2e-3)


def test_walls_and_dead_starts():
    """A start outside the support is not climbed (``-inf``); a start beside a wall (log f
    is -inf for x < 0) climbs to the mode at 1 without crossing it."""

    def density(xs):
        x = xs[:, 0]
        with np.errstate(divide="ignore", invalid="ignore"):
            logp = np.where(x > 0, np.log(x) - x, -np.inf)
            grad = np.where(x > 0, 1 / x - 1, np.nan)
        return logp, grad[:, None]

    x, log_f = ascend_many(density, np.array([[-1.0], [1e-3], [30.0]]))
    assert log_f[0] == -np.inf and np.all(x[0] == -1.0)
    np.testing.assert_allclose(x[1:, 0], 1.0, atol=1e-4)
    np.testing.assert_allclose(log_f[1:], -1.0, atol=1e-8)


def test_rows_go_in_chunks(monkeypatch):
    """No call of the density has more rows than ``CHUNK`` (the shape ADVI compiled)."""
    density, mode = _correlated(d=3)
    sizes = []

    def counted(xs):
        sizes.append(len(xs))
        return density(xs)

    monkeypatch.setattr(ascents, "CHUNK", 8)
    starts = mode + np.random.default_rng(1).standard_normal((20, 3))
    x, _ = ascend_many(counted, starts)
    assert max(sizes) == 8 and len(sizes) < 20 * 10
    np.testing.assert_allclose(x, np.broadcast_to(mode, x.shape), atol=1e-4)


def test_an_end_on_a_slope_is_no_mode():
    """An ascent stopped before the mode (here after no step at all) has a positive-definite
    Hessian but a Newton step of 5 standard deviations: it is not taken for a mode."""
    import pymc as pm

    from pymc_evidence.basefit.laplace import ascend_into
    from pymc_evidence.runtime import model_space
    from pymc_evidence.runtime.batched_logp import batched_logp

    with pm.Model() as model:
        pm.Normal("x", 0.0, 1.0, shape=2)
    space = model_space(model)
    density, start = batched_logp(space), np.array([[5.0, 0.0]])
    assert ascend_into(space, density, start, [], maxiter=0).tolist() == [-1]
    kept = []
    assert ascend_into(space, density, start, kept).tolist() == [0]
    np.testing.assert_allclose(kept[0].mean, 0.0, atol=1e-6)
