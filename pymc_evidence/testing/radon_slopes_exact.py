"""Exact log evidence of the radon varying-intercepts-and-slopes model (pure numpy / scipy).

The model (identical priors in its centred and non-centred forms)::

    mu_alpha, mu_beta ~ N(0, 10^2), sigma_alpha, sigma_beta ~ HalfNormal(1),
    sigma_y ~ HalfNormal(5), alpha_c ~ N(mu_alpha, sigma_alpha^2),
    beta_c ~ N(mu_beta, sigma_beta^2), y_i ~ N(alpha_{c[i]} + beta_{c[i]} x_i, sigma_y^2)

is linear-Gaussian given the three scales ``(a, b, s) = (sigma_alpha, sigma_beta, sigma_y)``.
Integrating the county effects gives a block-diagonal covariance with blocks
``Sigma_c = s^2 I + V_c V_c^T``, ``V_c = [a 1, b x_c]`` (a rank-2 update), whose inverse and
determinant follow from a 2 x 2 Woodbury step per county. With ``alpha = a^2 / s^2`` and
``beta = b^2 / s^2`` the step needs only

    e_c = det(I + V_c^T V_c / s^2)
        = 1 + alpha n_c + beta Sxx_c + alpha beta (n_c Sxx_c - Sx_c^2) >= 1,

and every bilinear form ``u^T Sigma_c^{-1} v`` (``u, v`` among ``1, x, y``) is
``(S_uv - (alpha P_c + beta R_c + alpha beta T_c) / e_c) / s^2`` with per-county constants
``P, R, T`` built from the six sufficient statistics ``(n, Sx, Sy, Sxx, Sxy, Syy)``. The sums
over counties are one matrix product ``(1 / e) @ coef``, so ``log p(y | a, b, s)`` costs O(K)
per point and vectorises over a grid of scales. The population means ``(mu_alpha, mu_beta)``
enter through a global 2 x 2 Woodbury step (as in :mod:`~pymc_evidence.testing.radon_exact`).

The remaining 3-D integral over ``(log a, log b, log s)`` against the HalfNormal priors (plus
the log-coordinate Jacobian) is done with composite Simpson's rule on a box around the mode
(found with :func:`scipy.optimize.minimize`). Each face of the box lies at least
:data:`EDGE_DROP` nats below the peak. The step along each axis is ``scale / r``, with
``scale`` the smaller of the posterior sd (finite-difference Hessian at the mode) and the
Gaussian-equivalent sd of the steeper side (``distance to the EDGE_DROP point /
sqrt(2 EDGE_DROP)``: the log-``sigma_beta`` density falls much faster above its mode than
below); ``r`` is raised until two successive resolutions agree to ``tol``.

Examples
--------
>>> from pymc_evidence.testing.radon_slopes_exact import radon_slopes_log_z
>>> round(radon_slopes_log_z(), 3)
-1063.11
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize

from pymc_evidence.testing.radon_exact import (
    COEF_SD,
    GROUP_SD,
    LOG_2PI,
    RESID_SD,
    county_stats,
    log_halfnormal_logscale,
    simpson_weights,
)

__all__ = ["EDGE_DROP", "radon_slopes_log_lik", "radon_slopes_log_z"]

#: Minimum drop (nats) of the log integrand from its peak to every face of the box.
EDGE_DROP = 30.0
_RESOLUTIONS = (2.0, 2.5, 3.0, 4.0, 6.0)  # grid steps per (Gaussian-equivalent) sd


def _county_coefficients(stats) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-county constants of the rank-2 Woodbury step.

    Returns ``(totals, coef, lin)``: ``totals`` (6,) the summed ``S_uv`` of the forms
    ``(1,1), (1,x), (x,x), (1,y), (x,y), (y,y)``; ``coef`` (K, 18) the columns ``P, R, T`` of
    each form; ``lin`` (3, K) the rows ``n, Sxx, n Sxx - Sx^2`` of ``e_c``.
    """
    n, sx, sy, sxx, sxy, syy = np.asarray(stats, dtype=np.float64)
    proj = {"1": (n, sx), "x": (sx, sxx), "y": (sy, sxy)}  # (1^T u, x^T u) per county
    pairs = (("1", "1", n), ("1", "x", sx), ("x", "x", sxx))
    pairs += (("1", "y", sy), ("x", "y", sxy), ("y", "y", syy))
    totals, cols = [], []
    for u, v, suv in pairs:
        (u1, u2), (v1, v2) = proj[u], proj[v]
        totals.append(suv.sum())
        cols += [u1 * v1, u2 * v2, sxx * u1 * v1 - sx * (u1 * v2 + u2 * v1) + n * u2 * v2]
    lin = np.stack([n, sxx, n * sxx - sx * sx])
    return np.array(totals), np.stack(cols, axis=-1), lin


def radon_slopes_log_lik(stats, a, b, s, coef_sd=COEF_SD) -> np.ndarray:
    """``log p(y | sigma_alpha=a, sigma_beta=b, sigma_y=s)``, all coefficients integrated.

    Integrates ``mu_alpha, mu_beta`` (prior ``N(0, coef_sd^2)``) and the county intercepts
    and slopes exactly: O(K) work per point (see the module docstring).

    Parameters
    ----------
    stats : numpy.ndarray
        Per-county sufficient statistics, shape ``(6, K)``, from
        :func:`~pymc_evidence.testing.radon_exact.county_stats`.
    a, b, s : array_like
        Intercept, slope and residual scales (broadcast against each other).
    coef_sd : float, default 10.0
        Prior standard deviation of ``mu_alpha`` and ``mu_beta``.

    Returns
    -------
    numpy.ndarray
        The Gaussian log marginal density, shape ``broadcast(a, b, s)``.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_evidence.testing.radon_exact import county_stats
    >>> stats = county_stats([0, 0, 1], [0.0, 1.0, 0.0], [0.5, -0.2, 1.0])
    >>> radon_slopes_log_lik(stats, 0.5, [0.1, 1.0], 0.8).shape
    (2,)
    """
    totals, coef, lin = _county_coefficients(stats)
    a, b, s = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in (a, b, s)))
    s2 = s * s
    al, be = a * a / s2, b * b / s2  # scale ratios alpha, beta
    ab = al * be
    e = 1.0 + al[..., None] * lin[0] + be[..., None] * lin[1] + ab[..., None] * lin[2]
    w = (1.0 / e) @ coef  # (..., 18): sum_c P/e, R/e, T/e for each form
    m11, m12, m22, b1, b2, q = (
        (totals[i] - al * w[..., 3 * i] - be * w[..., 3 * i + 1] - ab * w[..., 3 * i + 2]) / s2
        for i in range(6)
    )
    logdet = totals[0] * np.log(s2) + np.sum(np.log(e), axis=-1)
    # Woodbury for (mu_alpha, mu_beta) with prior covariance coef_sd^2 I
    p = coef_sd**2
    det_i = (1.0 + p * m11) * (1.0 + p * m22) - p * p * m12 * m12  # det(I + P M)
    h11, h22 = m11 + 1.0 / p, m22 + 1.0 / p  # P^{-1} + M
    det_h = h11 * h22 - m12 * m12
    quad_b = (h22 * b1 * b1 - 2.0 * m12 * b1 * b2 + h11 * b2 * b2) / det_h
    return -0.5 * (totals[0] * LOG_2PI + logdet + np.log(det_i) + q - quad_b)


def _log_integrand(stats, ta, tb, ts):
    """Integrand over ``(log a, log b, log s)``: likelihood, HalfNormal priors and Jacobian."""
    ta, tb, ts = np.broadcast_arrays(ta, tb, ts)
    return (
        radon_slopes_log_lik(stats, np.exp(ta), np.exp(tb), np.exp(ts))
        + log_halfnormal_logscale(ta, GROUP_SD)
        + log_halfnormal_logscale(tb, GROUP_SD)
        + log_halfnormal_logscale(ts, RESID_SD)
    )


def _radon_stats(data) -> np.ndarray:
    from pymc_evidence.datasets import county_coding, load_radon

    data = load_radon() if data is None else data
    idx, _ = county_coding(data)
    return county_stats(idx, data["floor"].to_numpy(float), data["log_radon"].to_numpy(float))


def _mode_and_sd(stats) -> tuple[np.ndarray, np.ndarray]:
    """Mode of the log integrand and marginal sds from a finite-difference Hessian there."""

    def neg(t):
        return -float(_log_integrand(stats, t[0], t[1], t[2]))

    n, sy, syy = stats[0].sum(), stats[2].sum(), stats[5].sum()
    resid = math.sqrt(max(syy / n - (sy / n) ** 2, 1e-6))
    res = optimize.minimize(neg, np.log([0.3, 0.3, resid]), method="BFGS")
    res = optimize.minimize(neg, res.x, method="Nelder-Mead", options={"xatol": 1e-8})
    eps, eye, hess = 1e-3, np.eye(3) * 1e-3, np.empty((3, 3))
    for i in range(3):
        for j in range(3):
            d = [neg(res.x + si * eye[i] + sj * eye[j]) for si in (1, -1) for sj in (1, -1)]
            hess[i, j] = (d[0] - d[1] - d[2] + d[3]) / (4.0 * eps * eps)
    try:
        var = np.diag(np.linalg.inv(hess))
    except np.linalg.LinAlgError:
        var = np.full(3, 0.25)
    var = np.where(np.isfinite(var) & (var > 0), var, 0.25)
    return res.x, np.clip(np.sqrt(var), 1e-3, 2.0)


def _initial_box(stats, centre, sd) -> tuple[np.ndarray, np.ndarray]:
    """Along each axis and side, the point where the integrand is EDGE_DROP below the mode.

    Walks out from the mode in growing multiples of ``sd`` to bracket the drop, then solves
    for it (:func:`scipy.optimize.brentq`). Returns the box corners ``lo, hi``.
    """
    peak = float(_log_integrand(stats, *centre))
    bounds = np.empty((2, 3))
    for i in range(3):
        for side, sign in enumerate((-1.0, 1.0)):

            def excess(k, i=i, sign=sign):
                t = centre.copy()
                t[i] += sign * k * sd[i]
                return peak - float(_log_integrand(stats, *t)) - EDGE_DROP

            k_lo, k = 0.0, 4.0
            while excess(k) < 0.0 and k < 1e4:
                k_lo, k = k, 1.5 * k
            if excess(k) > 0.0:
                k = optimize.brentq(excess, k_lo, k, xtol=1e-3)
            bounds[side, i] = centre[i] + sign * k * sd[i]
    return bounds[0], bounds[1]


def _grid_log_z(stats, lo, hi, step) -> tuple[float, np.ndarray]:
    """Simpson's rule on the box ``[lo, hi]`` with steps of at most ``step`` per axis.

    Returns the log integral and the drops (nats below the peak) of the six faces, shape
    ``(3, 2)`` (axis, low / high side).
    """
    npts = [
        max(int(math.ceil((u - v) / h)), 4) // 2 * 2 + 1
        for v, u, h in zip(lo, hi, step, strict=True)
    ]
    axes = [np.linspace(v, u, k) for v, u, k in zip(lo, hi, npts, strict=True)]
    tb, ts = np.meshgrid(axes[1], axes[2], indexing="ij")
    lf = np.stack([_log_integrand(stats, ta, tb, ts) for ta in axes[0]])
    peak = float(lf.max())
    weights = [simpson_weights(k, ax[1] - ax[0]) for k, ax in zip(npts, axes, strict=True)]
    value = peak + math.log(np.einsum("ijk,i,j,k->", np.exp(lf - peak), *weights))
    faces = [np.moveaxis(lf, i, 0)[j].max() for i in range(3) for j in (0, -1)]
    return value, peak - np.array(faces).reshape(3, 2)


def _fit_box(stats, centre, lo, hi, step) -> tuple[np.ndarray, np.ndarray, float]:
    """Push out every face of ``[lo, hi]`` less than EDGE_DROP below the peak on the grid.

    A face ``d`` nats down moves out by the factor ``EDGE_DROP / d`` (exact for a linear
    log-tail, generous for a Gaussian one) plus 5%. Returns the box and its Simpson value.
    """
    for _ in range(50):
        value, drops = _grid_log_z(stats, lo, hi, step)
        if (drops >= EDGE_DROP).all():
            return lo, hi, value
        grow = np.where(drops < EDGE_DROP, 1.05 * EDGE_DROP / np.maximum(drops, 1.0), 1.0)
        lo, hi = centre - grow[:, 0] * (centre - lo), centre + grow[:, 1] * (hi - centre)
    raise RuntimeError("radon slopes quadrature: could not bound the integrand")


def radon_slopes_log_z(data=None, tol: float = 1e-6) -> float:
    """Exact log evidence of the radon varying-intercepts-and-slopes model.

    Either parametrisation (``alpha_c, beta_c`` centred or non-centred) has this evidence:
    the model ``"varying_intercept_slope"`` of :func:`pymc_evidence.datasets.radon_models`.

    Parameters
    ----------
    data : pandas.DataFrame, optional
        Radon data as from :func:`pymc_evidence.datasets.load_radon` (the default).
    tol : float, default 1e-6
        Required agreement of two successive grid resolutions.

    Returns
    -------
    float
        ``log p(y)``: ``mu_alpha, mu_beta, alpha, beta`` integrated exactly
        (:func:`radon_slopes_log_lik`), the three scales by Simpson's rule in log coordinates
        over a box whose faces lie at least :data:`EDGE_DROP` nats below the peak.

    Raises
    ------
    RuntimeError
        If the finest resolutions still disagree by more than ``tol``.

    Examples
    --------
    Three counties, intercepts and floor slopes:

    >>> import pandas as pd
    >>> data = pd.DataFrame({
    ...     "county": ["A", "A", "A", "B", "B", "B", "C", "C"],
    ...     "floor": [0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0],
    ...     "log_radon": [1.2, 0.8, 0.3, 1.9, 1.1, 0.7, 0.4, 0.5],
    ... })
    >>> round(radon_slopes_log_z(data), 4)
    -15.4514
    """
    stats = _radon_stats(data)
    centre, sd = _mode_and_sd(stats)
    lo, hi = _initial_box(stats, centre, sd)
    # Gaussian-equivalent sd of the steeper side: a Gaussian drops EDGE_DROP at sqrt(2 EDGE_DROP) sd
    scale = np.minimum(sd, np.minimum(centre - lo, hi - centre) / math.sqrt(2.0 * EDGE_DROP))
    lo, hi, _ = _fit_box(stats, centre, lo, hi, scale)  # on a coarse grid: cheap
    previous = value = math.nan
    for r in _RESOLUTIONS:
        lo, hi, value = _fit_box(stats, centre, lo, hi, scale / r)
        if abs(value - previous) < tol:
            return value
        previous = value
    raise RuntimeError(f"radon slopes quadrature did not converge (last two: {previous}, {value})")
