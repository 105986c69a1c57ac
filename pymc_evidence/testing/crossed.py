"""Crossed random intercepts, ``(1|county) + (1|year)``, with a log Z computed without PyMC.

.. math::

    \\mu \\sim N(0, 5^2), \\quad \\sigma, \\tau_a, \\tau_b \\sim \\mathrm{HalfNormal}(1), \\quad
    a_j \\sim N(0, \\tau_a^2), \\quad b_k \\sim N(0, \\tau_b^2), \\quad
    y_i \\sim N(\\mu + a_{j(i)} + b_{k(i)}, \\sigma^2).

Given the three scales the data are Gaussian, ``y ~ N(0, sigma^2 I + U D U')`` with ``U =
[1, Z_a, Z_b]`` and ``D = diag(25, tau_a^2 I, tau_b^2 I)``. Woodbury's identity turns its
determinant and quadratic form into those of ``M = D^-1 + U'U / sigma^2``, whose county
block is diagonal: the Schur complement onto ``(mu, years)`` leaves a ``(1 + K)``-square
system per point. The three scales are integrated in log space by a composite tensor
Gauss-Legendre rule around the mode, checked against a wider, finer one.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
from scipy import optimize, special, stats

from pymc_evidence.testing.analytic import LOG_2PI, AnalyticModel, as_data, f64
from pymc_evidence.testing.glmm import hessian

__all__ = ["crossed_intercepts", "crossed_log_lik"]

MU_SD = 5.0


def _stats(y, county, year, J: int, K: int):
    """The sufficient statistics of the data for :func:`crossed_log_lik`."""
    n_a = np.bincount(county, minlength=J).astype(float)
    cross = np.zeros((J, K))
    np.add.at(cross, (county, year), 1.0)
    n_b = cross.sum(0)
    return {
        "n": y.size, "yy": float(y @ y), "sum": float(y.sum()),
        "y_a": np.bincount(county, weights=y, minlength=J),
        "y_b": np.bincount(year, weights=y, minlength=K),
        "n_a": n_a, "n_b": n_b, "cross": cross, "parent": _parent(cross),
    }  # fmt: skip


def _parent(cross: np.ndarray):
    """Each county's year when every county's rows share one (nested groupings), else None."""
    if np.any(np.count_nonzero(cross, axis=1) > 1):
        return None
    return np.argmax(cross, axis=1)


def _nested_log_lik(s: dict, var: float, ta2: float, tb2: np.ndarray) -> np.ndarray:
    """:func:`crossed_log_lik` where every county lies in one year (state): the Schur
    complement onto ``(mu, states)`` is then an arrow (``mu`` against a diagonal), solved
    in ``O(J + K)`` instead of a ``(1 + K)``-square Cholesky factor."""
    a_diag = 1.0 / ta2 + s["n_a"] / var
    u_a = s["y_a"] / var
    parent, K = s["parent"], s["n_b"].size
    w = np.bincount(parent, s["n_a"] ** 2 / var**2 / a_diag, K)  # (B' B / a) by state
    wy = np.bincount(parent, s["n_a"] / var * u_a / a_diag, K)
    c00 = 1.0 / MU_SD**2 + s["n"] / var - w.sum()
    c0 = s["n_b"] / var - w
    d = c0[None, :] + 1.0 / tb2[:, None]  # the states' diagonal, each tau_b
    r0, r = s["sum"] / var - wy.sum(), s["y_b"] / var - wy
    schur = c00 - np.sum(c0**2 / d, axis=1)
    quad_m = np.sum(r**2 / d, axis=1) + (r0 - np.sum(c0 * r / d, axis=1)) ** 2 / schur
    quad = s["yy"] / var - np.sum(u_a**2 / a_diag) - quad_m
    log_det_m = np.sum(np.log(a_diag)) + np.sum(np.log(d), axis=1) + np.log(schur)
    log_det_d = np.log(MU_SD**2) + s["n_a"].size * np.log(ta2) + K * np.log(tb2)
    log_det = s["n"] * np.log(var) + log_det_d + log_det_m
    return -0.5 * (s["n"] * LOG_2PI + log_det + quad)


def crossed_log_lik(s: dict, log_sigma: float, log_ta: float, log_tb) -> np.ndarray:
    """``log N(y; 0, sigma^2 I + U D U')`` from the statistics ``s`` (Woodbury, Schur), for
    one ``sigma`` and ``tau_a`` and every ``tau_b`` of the array ``exp(log_tb)``."""
    log_tb = np.atleast_1d(np.asarray(log_tb, dtype=float))
    var, ta2, tb2 = np.exp(2 * log_sigma), np.exp(2 * log_ta), np.exp(2 * log_tb)
    if s.get("parent") is not None:
        return _nested_log_lik(s, var, ta2, tb2)
    K = s["n_b"].size
    a_diag = 1.0 / ta2 + s["n_a"] / var  # county block of M (diagonal)
    B = np.column_stack([s["n_a"], s["cross"]]) / var  # county x (mu, years)
    C = np.zeros((1 + K, 1 + K))
    C[0, 0], C[0, 1:], C[1:, 0] = 1.0 / MU_SD**2 + s["n"] / var, s["n_b"] / var, s["n_b"] / var
    C[1:, 1:] = np.diag(s["n_b"] / var)
    schur = np.repeat((C - B.T @ (B / a_diag[:, None]))[None], log_tb.size, axis=0)
    schur[:, np.arange(1, K + 1), np.arange(1, K + 1)] += 1.0 / tb2[:, None]
    u_a, u_rest = s["y_a"] / var, np.r_[s["sum"], s["y_b"]] / var
    rhs = u_rest - B.T @ (u_a / a_diag)
    chol = np.linalg.cholesky(schur)
    solved = np.linalg.solve(chol, np.broadcast_to(rhs, (log_tb.size, K + 1))[..., None])[..., 0]
    quad = s["yy"] / var - np.sum(u_a**2 / a_diag) - np.sum(solved**2, axis=1)
    log_det_m = np.sum(np.log(a_diag)) + 2 * np.sum(np.log(np.diagonal(chol, 0, 1, 2)), axis=1)
    log_det_d = np.log(MU_SD**2) + s["n_a"].size * np.log(ta2) + K * np.log(tb2)
    log_det = s["n"] * np.log(var) + log_det_d + log_det_m
    return -0.5 * (s["n"] * LOG_2PI + log_det + quad)


def _log_f(s):
    def log_f(t):
        """``log p(y, t)`` at ``t = (log sigma, log tau_a, log tau_b)``, ``t[2]`` an array or
        a scalar (then a float)."""
        tb = np.asarray(t[2], dtype=float)
        scales = [np.exp(t[0]), np.exp(t[1]), np.exp(tb)]
        prior = sum(stats.halfnorm.logpdf(v) for v in scales) + t[0] + t[1] + tb
        out = crossed_log_lik(s, t[0], t[1], tb) + prior  # HalfNormal(1), log Jacobian
        return float(out[0]) if tb.ndim == 0 else out

    return log_f


def _axis(mode: float, sd: float, tail: float, points: int):
    """Nodes and log weights of one log scale: Gauss-Legendre on ``[mode - tail, mode - 8
    sd]`` (the left tail, which falls only like the scale itself, as the prior's
    ``tau e^-tau^2/2`` in log space) and on ``[mode - 8 sd, mode + 8 sd]`` (at most
    ``log 7``)."""
    x, w = np.polynomial.legendre.leggauss(points)
    nodes, log_w = [], []
    top = min(mode + 8 * sd, np.log(7.0))  # HalfNormal(1) mass above 7: 2.6e-12
    low = mode - 8 * sd
    segments = [(low, top)] if tail is None else [(min(mode - tail, low - 1.0), low), (low, top)]
    for lo, hi in segments:
        half = 0.5 * (hi - lo)
        nodes.append(lo + half * (x + 1.0))
        log_w.append(np.log(w * half))
    return np.concatenate(nodes), np.concatenate(log_w)


def _rule(log_f, mode, sd, tail: float, points: int) -> float:
    """The tensor rule of :func:`_axis` over the three log scales."""
    tails = (None, tail, tail)  # sigma's left tail falls like sigma^-n exp(-ss / sigma^2)
    (xa, wa), (xb, wb), (xc, wc) = (
        _axis(m, d, t, points) for m, d, t in zip(mode, sd, tails, strict=True)
    )
    total = []
    for a, log_wa in zip(xa, wa, strict=True):
        for b, log_wb in zip(xb, wb, strict=True):
            values = log_f((a, b, xc))
            total.append(special.logsumexp(values + wc) + log_wa + log_wb)
    return float(special.logsumexp(total))


def crossed_log_z(s: dict, points: int = 40) -> float:
    """``log Z`` by the composite Gauss-Legendre rule of :func:`_axis` (``points`` a
    segment), from 14 below each group scale's log mode, checked against ``1.5 points``
    from 18 below (``RuntimeError`` if they differ by more than 1e-4)."""
    log_f = _log_f(s)
    start = np.log([0.8, 0.5, 0.5])
    mode = optimize.minimize(lambda t: -log_f(t), start, method="Nelder-Mead",
                             options={"xatol": 1e-7, "fatol": 1e-9, "maxiter": 4000}).x  # fmt: skip
    sd = np.sqrt(np.diag(np.linalg.inv(-hessian(log_f, mode))))
    first = _rule(log_f, mode, sd, 14.0, points)
    check = _rule(log_f, mode, sd, 18.0, int(1.5 * points))
    if abs(first - check) > 1e-4:
        raise RuntimeError(f"crossed quadrature unsettled: {first} vs {check}")
    return check


def crossed_intercepts(
    J: int = 100,
    K: int = 8,
    rows: int = 4,
    seed: int = 0,
    centered: bool = True,
    nested: bool = False,
    three_level: bool = False,
) -> AnalyticModel:
    """``J`` counties crossed with ``K`` years, ``rows`` rows a county (years drawn at
    random), intercepts ``a ~ N(0, 0.6)``, ``b ~ N(0, 0.4)``, noise 1 (module docstring).

    ``nested=True``: the ``K`` groups are states that hold whole counties (each county's
    rows all in one state, drawn at random), bambi's ``(1|state) + (1|state:county)``;
    the same algebra gives its log Z. ``three_level=True`` (with ``nested``) writes the
    counties centred on their state, ``a ~ N(b[state], tau_a)``, and the rows ``mu +
    a[county]``: the same data covariance and log Z.

    Examples
    --------
    >>> system = crossed_intercepts(J=10, K=3, rows=3)
    >>> [rv.name for rv in system.model.free_RVs]
    ['mu', 'sigma', 'tau_a', 'tau_b', 'a', 'b']
    """
    if three_level and not nested:
        raise ValueError("three_level=True needs nested=True: crossed years hold no counties")
    rng = np.random.default_rng(seed)
    county = np.repeat(np.arange(J), rows)
    year = rng.integers(0, K, J)[county] if nested else rng.integers(0, K, county.size)
    y = 1.0 + rng.normal(0, 0.6, J)[county] + rng.normal(0, 0.4, K)[year]
    y = y + rng.normal(size=county.size)
    coords = {"county": np.arange(J), "year": np.arange(K)}
    with pm.Model(coords=coords) as model:
        mu = pm.Normal("mu", f64(0.0), f64(MU_SD))
        sigma = pm.HalfNormal("sigma", f64(1.0))
        tau_a, tau_b = pm.HalfNormal("tau_a", f64(1.0)), pm.HalfNormal("tau_b", f64(1.0))
        if three_level:
            b = pm.Normal("b", f64(0.0), tau_b, dims="year")
            a = pm.Normal("a", b[year[::rows]], tau_a, dims="county")
            pm.Normal("y", mu + a[county], sigma, observed=y)
        elif centered:
            a = pm.Normal("a", f64(0.0), tau_a, dims="county")
            b = pm.Normal("b", f64(0.0), tau_b, dims="year")
        else:
            a = pm.Deterministic("a", tau_a * pm.Normal("za", 0.0, 1.0, dims="county"))
            b = pm.Deterministic("b", tau_b * pm.Normal("zb", 0.0, 1.0, dims="year"))
        if not three_level:
            pm.Normal("y", mu + a[county] + b[year], sigma, observed=y)
    log_z = crossed_log_z(_stats(y, county, year, J, K))
    description = (
        f"{'Nested' if nested else 'Crossed'} random intercepts: {J} counties x {K} "
        f"{'states' if nested else 'years'}, {rows} rows a county "
        f"(seed={seed}); log Z by Woodbury and a 3-D Gauss-Legendre rule over the scales."
    )
    data = as_data(y=y, county=county, year=year)
    name = f"{'nested' if nested else 'crossed'}{'3' if three_level else ''}_{J}x{K}"
    return AnalyticModel(name, model, log_z, description, data)
