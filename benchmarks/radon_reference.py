#!/usr/bin/env python
"""Reference log Z of radon models by deterministic quadrature (no sampling).

Given the scale parameters, the ``pooled``, ``unpooled`` and ``varying_intercept`` radon
models of :func:`pymc_evidence.datasets.radon_models` are linear-Gaussian: with ``A`` the
design of all Gaussian coefficients (intercept column, floor, county indicators) and ``G``
their prior variances (``10^2``, or ``sigma_alpha^2`` for the non-centred county offsets
``sigma_alpha * z_c``),

    y | scales ~ N(0, sigma_y^2 I + A G A^T).

That density is evaluated with the Woodbury identity / matrix determinant lemma (a k x k
Cholesky, k <= 87) and integrated against the HalfNormal priors of the scales, in log scale
coordinates, with composite Simpson's rule on a grid around the mode: 1-D (``sigma_y``) for
pooled and unpooled, 2-D (``sigma_alpha``, ``sigma_y``) for varying_intercept. The grid is
refined once and the result is accepted only if the two agree to ``1e-6``. Not supported:
``varying_intercept_slope`` (would need 3-D quadrature).

    PYTHONPATH=. python benchmarks/radon_reference.py
"""

from __future__ import annotations

import math
import sys

import numpy as np

SUPPORTED = ("pooled", "unpooled", "varying_intercept")
_LOG_2PI = math.log(2 * math.pi)


def _halfnormal_logpdf_logscale(s, scale):
    """log HalfNormal(s; scale) + log s (the Jacobian of integrating over log s)."""
    return 0.5 * math.log(2 / math.pi) - math.log(scale) - 0.5 * (s / scale) ** 2 + np.log(s)


def _simpson_logsum(logf, h):
    n = logf.shape[-1]
    if n % 2 == 0:
        raise ValueError("Simpson's rule needs an odd number of points")
    w = np.ones(n)
    w[1:-1:2], w[2:-1:2] = 4.0, 2.0
    w *= h / 3.0
    m = logf.max(axis=-1, keepdims=True)
    return m[..., 0] + np.log(np.sum(w * np.exp(logf - m), axis=-1))


class _GaussianMarginal:
    """log N(y; 0, sy^2 I + A diag(g) A^T), batched over (g, sy) pairs."""

    def __init__(self, A, y):
        self.AtA, self.Aty, self.yty, self.n = A.T @ A, A.T @ y, float(y @ y), y.size

    def __call__(self, g, sy):
        g = np.atleast_2d(g)  # (batch, k)
        sy = np.broadcast_to(np.asarray(sy, float), (g.shape[0],))
        s, s2 = np.sqrt(g), sy**2
        M = s[:, :, None] * self.AtA[None] * s[:, None, :] / s2[:, None, None]
        M += np.eye(g.shape[1])[None]
        L = np.linalg.cholesky(M)
        v = np.linalg.solve(L, (s * self.Aty[None] / s2[:, None])[..., None])[..., 0]
        logdet = self.n * np.log(s2) + 2 * np.log(np.diagonal(L, axis1=1, axis2=2)).sum(-1)
        quad = self.yty / s2 - np.sum(v**2, -1)
        return -0.5 * (self.n * _LOG_2PI + logdet + quad)


def _design(name):
    from pymc_evidence.datasets import county_coding, load_radon

    data = load_radon()
    county_idx, counties = county_coding(data)
    x = data["floor"].to_numpy(np.float64)
    y = data["log_radon"].to_numpy(np.float64)
    n, k = y.size, len(counties)
    C = np.zeros((n, k))
    C[np.arange(n), county_idx] = 1.0
    if name == "pooled":
        return np.column_stack([np.ones(n), x]), y, 0
    if name == "unpooled":
        return np.column_stack([x, C]), y, 0
    return np.column_stack([np.ones(n), x, C]), y, k  # last k columns scaled by sigma_alpha


def _log_z(name, npts, ly, la=None):
    A, y, n_group = _design(name)
    lik = _GaussianMarginal(A, y)
    fixed = np.full(A.shape[1] - n_group, 100.0)
    ty = np.linspace(*ly, npts)
    sy = np.exp(ty)
    if n_group == 0:
        lf = lik(np.tile(fixed, (npts, 1)), sy) + _halfnormal_logpdf_logscale(sy, 5.0)
        return float(_simpson_logsum(lf, ty[1] - ty[0])), lf[None]
    ta = np.linspace(*la, npts)
    rows = []
    for a in ta:
        g = np.concatenate([fixed, np.full(n_group, math.exp(a) ** 2)])
        rows.append(
            lik(np.tile(g, (npts, 1)), sy)
            + _halfnormal_logpdf_logscale(sy, 5.0)
            + _halfnormal_logpdf_logscale(math.exp(a), 1.0)
        )
    lf = np.array(rows)
    inner = _simpson_logsum(lf, ty[1] - ty[0])
    return float(_simpson_logsum(inner, ta[1] - ta[0])), lf


def radon_reference_log_z(name: str, tol: float = 1e-6) -> float:
    """Quadrature log Z of ``radon_models()[name]``; NaN for unsupported models."""
    if name not in SUPPORTED:
        return math.nan
    ly = (math.log(0.3), math.log(2.5))  # sigma_y: posterior ~0.73-0.79, sd ~0.02
    la = (math.log(0.005), math.log(3.0))  # sigma_alpha: posterior ~0.32
    coarse, lf = _log_z(name, 201, ly, la)
    fine, _ = _log_z(name, 401, ly, la)
    border = [lf[:, 0].max(), lf[:, -1].max()]  # sigma_y ends
    if lf.shape[0] > 1:  # sigma_alpha ends
        border += [lf[0].max(), lf[-1].max()]
    edge = lf.max() - max(border)  # log-density drop from the mode to the grid's border
    if abs(fine - coarse) > tol or edge < 30:
        raise RuntimeError(
            f"{name}: quadrature not converged ({coarse} vs {fine}, edge drop {edge:.1f})"
        )
    return fine


if __name__ == "__main__":
    for key in sys.argv[1:] or SUPPORTED:
        print(f"{key}: log Z = {radon_reference_log_z(key):.6f}")
