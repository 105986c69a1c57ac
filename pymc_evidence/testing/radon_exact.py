"""Exact log evidence of the radon varying-intercept model (pure numpy / scipy).

The model (identical priors in its centred and non-centred forms)::

    mu_alpha ~ N(0, 10^2), beta ~ N(0, 10^2), sigma_alpha ~ HalfNormal(1),
    sigma_y ~ HalfNormal(5), alpha_c ~ N(mu_alpha, sigma_alpha^2),
    y_i ~ N(alpha_{c[i]} + beta x_i, sigma_y^2)

is linear-Gaussian given the two scales ``(a, s) = (sigma_alpha, sigma_y)``. The county
effects give a block-diagonal covariance ``Sigma = blockdiag_c(s^2 I + a^2 1 1^T)`` whose
inverse and determinant are closed form per county (Sherman-Morrison), so
``log p(y | a, s)`` needs only six sufficient statistics per county and a 2 x 2 Woodbury step
for ``(mu_alpha, beta)``: it is cheap and vectorised over a grid of scales. The remaining 2-D
integral over ``(log a, log s)`` against the HalfNormal priors is done with composite
Simpson's rule on a grid centred on the mode; the grid is refined until two resolutions agree.

Examples
--------
>>> from pymc_evidence.testing.radon_exact import radon_intercepts_log_z
>>> round(radon_intercepts_log_z(), 3)
-1062.666
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize

__all__ = [
    "county_stats",
    "radon_intercepts_log_lik",
    "radon_intercepts_log_z",
    "radon_pooled_log_z",
]

LOG_2PI = math.log(2.0 * math.pi)
COEF_SD, GROUP_SD, RESID_SD = 10.0, 1.0, 5.0


def county_stats(county_idx, x, y) -> np.ndarray:
    """Per-county sufficient statistics ``(n, Sx, Sy, Sxx, Sxy, Syy)``, shape ``(6, K)``.

    Parameters
    ----------
    county_idx : array of int
        County code of each observation, ``0..K-1``.
    x, y : array of float
        Floor indicator and log radon of each observation.

    Returns
    -------
    numpy.ndarray
        Rows ``n_c``, ``sum x``, ``sum y``, ``sum x^2``, ``sum x y``, ``sum y^2`` per county.
    """
    idx = np.asarray(county_idx, dtype=np.int64)
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    k = int(idx.max()) + 1
    cols = (np.ones_like(x), x, y, x * x, x * y, y * y)
    return np.array([np.bincount(idx, weights=c, minlength=k) for c in cols])


def radon_intercepts_log_lik(stats, a, s, coef_sd=COEF_SD) -> np.ndarray:
    """``log p(y | sigma_alpha=a, sigma_y=s)`` with ``mu_alpha``, ``beta``, ``alpha`` integrated.

    Parameters
    ----------
    stats : numpy.ndarray
        Output of :func:`county_stats`.
    a, s : array_like
        Group and residual scales (broadcast against each other).
    coef_sd : float, default 10.0
        Prior standard deviation of ``mu_alpha`` and ``beta``.

    Returns
    -------
    numpy.ndarray
        The Gaussian log marginal density, shape ``broadcast(a, s)``.
    """
    a2 = np.asarray(a, dtype=np.float64)[..., None] ** 2
    s2 = np.asarray(s, dtype=np.float64)[..., None] ** 2
    n, sx, sy, sxx, sxy, syy = stats
    gamma = a2 / (s2 + n * a2)  # Sigma_c^{-1} = (I - gamma 1 1^T) / s^2

    def form(suv, su, sv):  # u^T Sigma^{-1} v summed over counties
        return np.sum(suv - gamma * su * sv, axis=-1) / s2[..., 0]

    m11, m12, m22 = form(n, n, n), form(sx, n, sx), form(sxx, sx, sx)
    b1, b2, q = form(sy, n, sy), form(sxy, sx, sy), form(syy, sy, sy)
    logdet = np.sum(n * np.log(s2) + np.log1p(n * a2 / s2), axis=-1)
    # Woodbury for the two coefficients with prior covariance coef_sd^2 I
    p = coef_sd**2
    det_i = (1.0 + p * m11) * (1.0 + p * m22) - p * p * m12 * m12  # det(I + P M)
    h11, h12, h22 = m11 + 1.0 / p, m12, m22 + 1.0 / p  # P^{-1} + M
    det_h = h11 * h22 - h12 * h12
    quad_b = (h22 * b1 * b1 - 2.0 * h12 * b1 * b2 + h11 * b2 * b2) / det_h
    n_obs = float(np.sum(n))
    return -0.5 * (n_obs * LOG_2PI + logdet + np.log(det_i) + q - quad_b)


def log_halfnormal_logscale(t, scale):
    """Log HalfNormal density of ``exp(t)`` plus the Jacobian ``t`` of integrating over log."""
    return 0.5 * math.log(2.0 / math.pi) - math.log(scale) - 0.5 * (np.exp(t) / scale) ** 2 + t


def _log_integrand(stats, ta, ts):
    """Integrand over ``(log sigma_alpha, log sigma_y)``, broadcast over ``ta`` and ``ts``."""
    ta, ts = np.broadcast_arrays(ta, ts)
    return (
        radon_intercepts_log_lik(stats, np.exp(ta), np.exp(ts))
        + log_halfnormal_logscale(ta, GROUP_SD)
        + log_halfnormal_logscale(ts, RESID_SD)
    )


def simpson_weights(n, h):
    w = np.ones(n)
    w[1:-1:2], w[2:-1:2] = 4.0, 2.0
    return w * h / 3.0


def _grid_log_z(stats, centre, half, npts):
    """Simpson's rule on an ``npts x npts`` grid of ``centre +- half`` (log-scale units)."""
    ta = np.linspace(centre[0] - half[0], centre[0] + half[0], npts)
    ts = np.linspace(centre[1] - half[1], centre[1] + half[1], npts)
    lf = np.stack([_log_integrand(stats, t, ts) for t in ta])
    shift = float(lf.max())
    wa, ws = simpson_weights(npts, ta[1] - ta[0]), simpson_weights(npts, ts[1] - ts[0])
    edge = shift - max(lf[0].max(), lf[-1].max(), lf[:, 0].max(), lf[:, -1].max())
    return shift + math.log(wa @ np.exp(lf - shift) @ ws), edge


def radon_intercepts_log_z(data=None, tol: float = 1e-7) -> float:
    """Exact log evidence of the radon varying-intercept model (either parametrisation).

    Parameters
    ----------
    data : pandas.DataFrame, optional
        Radon data as from :func:`pymc_evidence.datasets.load_radon` (the default).
    tol : float, default 1e-7
        Required agreement of two successive grid refinements.

    Returns
    -------
    float
        ``log p(y)`` integrating ``mu_alpha, beta, alpha`` exactly and the two scales by
        Simpson's rule in log coordinates over a box of at least 12 posterior sds (and at
        least 40 nats below the mode at its edge).
    """
    from pymc_evidence.datasets import county_coding, load_radon

    data = load_radon() if data is None else data
    idx, _ = county_coding(data)
    stats = county_stats(idx, data["floor"].to_numpy(float), data["log_radon"].to_numpy(float))

    def neg(t):
        return -float(_log_integrand(stats, t[0], t[1]))

    res = optimize.minimize(neg, x0=np.array([math.log(0.3), math.log(0.8)]), method="BFGS")
    centre = res.x
    hess_inv = np.atleast_2d(res.hess_inv)
    half = np.maximum(12.0 * np.sqrt(np.diag(hess_inv)), 0.5)
    previous = math.nan
    for npts in (201, 401, 801, 1601):
        value, edge = _grid_log_z(stats, centre, half, npts)
        while edge < 40.0:  # widen until the border is negligible
            half = 1.5 * half
            value, edge = _grid_log_z(stats, centre, half, npts)
        if abs(value - previous) < tol:
            return value
        previous = value
    raise RuntimeError(f"radon quadrature did not converge (last two: {previous}, {value})")


def radon_pooled_log_z(data=None) -> float:
    """Exact log evidence of the complete-pooling radon model.

    ``alpha, beta ~ N(0, 10^2)``, ``sigma_y ~ HalfNormal(5)``,
    ``y_i ~ N(alpha + beta x_i, sigma_y^2)`` (the ``"pooled"`` model of
    :func:`pymc_evidence.datasets.radon_models`). Given ``sigma_y = s`` the data are Gaussian,
    ``y ~ N(0, s^2 I + 10^2 A A^T)`` with ``A = [1, x]``; its density comes from the 2 x 2
    Woodbury / determinant-lemma step, and the one remaining integral over ``log s`` from
    adaptive quadrature (:func:`scipy.integrate.quad`, relative tolerance 1e-12).

    Examples
    --------
    >>> round(radon_pooled_log_z(), 2)
    -1102.33
    """
    from scipy import integrate

    from pymc_evidence.datasets import load_radon

    data = load_radon() if data is None else data
    x, y = data["floor"].to_numpy(float), data["log_radon"].to_numpy(float)
    a = np.column_stack([np.ones_like(x), x])
    ata, aty, yty, n = a.T @ a, a.T @ y, float(y @ y), y.size

    def log_lik(t):
        s2 = math.exp(2.0 * t)
        m = np.eye(2) / COEF_SD**2 + ata / s2  # prior precision + data precision
        chol = np.linalg.cholesky(m)
        v = np.linalg.solve(chol, aty / s2)
        log_det = n * math.log(s2) + 2 * np.log(np.diag(chol)).sum() + 2 * 2 * math.log(COEF_SD)
        return -0.5 * (n * LOG_2PI + log_det + yty / s2 - v @ v)

    def log_integrand(t):
        return log_lik(t) + float(log_halfnormal_logscale(t, RESID_SD))

    peak = optimize.minimize_scalar(lambda t: -log_integrand(t), bounds=(-3, 2), method="bounded")
    shift = -float(peak.fun)
    value, _ = integrate.quad(
        lambda t: math.exp(log_integrand(t) - shift), peak.x - 3.0, peak.x + 3.0,
        points=[peak.x], epsrel=1e-12, limit=200,
    )  # fmt: skip
    return shift + math.log(value)
