"""A hierarchy with a random intercept and a random slope per group, ``log_z`` exact.

Part of :mod:`pymc_evidence.testing`. ``J`` groups of ``rows`` rows each,

    y_i ~ N(mu + a_g + (beta + b_g) x_i, 1),  a_j ~ N(0, sa),  b_j ~ N(0, sb),
    mu, beta ~ N(0, 1),  sa, sb ~ HalfNormal(1),

written non-centred as bambi writes ``y ~ 1 + x + (1 + x | g)`` (``a = sa * z_a``) or
centred. Given ``(sa, sb)`` the model is linear and Gaussian: each group's rows are
``N(X_j (mu, beta), C_j)`` with ``C_j = I + X_j diag(sa², sb²) X_jᵀ`` once its effects are
integrated, and ``(mu, beta)`` integrate in closed form over the groups' ``4 × 4``
algebra; the outer integral over ``(log sa, log sb)`` is a Gauss-Legendre rule on a box
around its mode, checked against a finer rule on a wider box (independent of
:mod:`pymc_evidence.transforms.group_pairs`, which integrates the effects by its own
Newton steps and quadrature).
"""

from __future__ import annotations

import numpy as np
import pymc as pm
from scipy import optimize, special, stats

from pymc_evidence.testing.analytic import AnalyticModel, as_data
from pymc_evidence.testing.glmm import hessian

__all__ = ["slope_hierarchy", "slope_log_z"]


def _log_lik(y, x, scales) -> np.ndarray:
    """``log p(y | sa, sb)`` with the effects and ``(mu, beta)`` integrated, for scales
    ``(..., 2)``; ``y``, ``x``: ``(J, r)``."""
    J, r = y.shape
    design = np.stack([np.ones_like(x), x], axis=-1)  # (J, r, 2)
    var = np.reshape(scales, (-1, 2)) ** 2  # (P, 2)
    cov = np.eye(r) + np.einsum("jrk,pk,jsk->pjrs", design, var, design)  # (P, J, r, r)
    chol = np.linalg.cholesky(cov)
    log_det = 2.0 * np.sum(np.log(np.diagonal(chol, axis1=-2, axis2=-1)), axis=(-1, -2))
    solve_y = np.linalg.solve(cov, np.broadcast_to(y[None, :, :, None], cov.shape[:-1] + (1,)))
    solve_x = np.linalg.solve(cov, np.broadcast_to(design[None], cov.shape[:-1] + (2,)))
    quad = np.einsum("jr,pjr->p", y, solve_y[..., 0])
    precision = np.eye(2) + np.einsum("jrk,pjrl->pkl", design, solve_x)
    linear = np.einsum("jrk,pjr->pk", design, solve_y[..., 0])
    inner = np.einsum("pk,pk->p", linear, np.linalg.solve(precision, linear[..., None])[..., 0])
    out = (-0.5 * (quad - inner) - 0.5 * log_det - 0.5 * np.linalg.slogdet(precision)[1]
           - 0.5 * J * r * np.log(2 * np.pi))  # fmt: skip
    return out.reshape(np.shape(scales)[:-1])


def slope_log_z(y, x, points: int = 40) -> float:
    """``log Z`` of :func:`slope_hierarchy`'s model for data ``y``, ``x`` (``(J, r)``)."""

    def log_f(log_scales):
        log_scales = np.asarray(log_scales, dtype=float)
        prior = np.sum(stats.halfnorm.logpdf(np.exp(log_scales)) + log_scales, axis=-1)
        return prior + _log_lik(y, x, np.exp(log_scales))

    mode = optimize.minimize(lambda p: -log_f(p), [np.log(0.5)] * 2, method="Nelder-Mead",
                             options={"xatol": 1e-8, "fatol": 1e-10}).x  # fmt: skip
    hess = hessian(log_f, mode)
    sd = np.sqrt(np.diag(np.linalg.inv(-hess)))
    first = _box(log_f, mode, sd, 10.0, points)
    check = _box(log_f, mode, sd, 14.0, int(points * 1.5))
    if abs(first - check) > 1e-4:
        raise RuntimeError(f"outer quadrature unsettled: {first} vs {check}")
    return check


def _box(log_f, mode, sd, width, points) -> float:
    """Gauss-Legendre over ``mode ± width sd`` in both log scales, each extended by a
    segment 30 below (a scale's density tends to the scale times a constant at zero)."""
    x, w = np.polynomial.legendre.leggauss(points)
    axes = []
    for m, s in zip(mode, sd, strict=True):
        lo, hi = m - width * s, m + width * s
        nodes = np.concatenate([lo - 15.0 + 7.5 * (x + 1.0), lo + 0.5 * (hi - lo) * (x + 1.0)])
        weights = np.concatenate([7.5 * w, 0.5 * (hi - lo) * w])
        axes.append((nodes, weights))
    (n1, w1), (n2, w2) = axes
    grid = np.stack(np.meshgrid(n1, n2, indexing="ij"), axis=-1)
    values = np.concatenate([log_f(row) for row in np.array_split(grid.reshape(-1, 2), 40)])
    values = values.reshape(grid.shape[:-1])
    return float(special.logsumexp(values + np.log(w1)[:, None] + np.log(w2)[None, :]))


def slope_hierarchy(
    J: int = 150, rows: int = 4, *, centered: bool = False, seed: int = 0,
    sa: float = 0.5, sb: float = 0.3, exact: bool = True,
) -> AnalyticModel:  # fmt: skip
    """The random intercept and slope hierarchy of the module's docstring.

    Parameters
    ----------
    J, rows : int
        Groups and rows per group.
    centered : bool
        ``a ~ N(0, sa)`` as written, or ``a = sa * z``, ``z ~ N(0, 1)`` (bambi's form).
    seed : int
        Seed of the data: ``mu = 0.3``, ``beta = 0.2``, the scales as given.
    exact : bool
        Compute ``log_z`` (seconds); NaN without.

    Examples
    --------
    >>> system = slope_hierarchy(J=10, rows=3, seed=1)
    >>> [rv.name for rv in system.model.free_RVs]
    ['mu', 'beta', 'sa', 'sb', 'za', 'zb']
    """
    rng = np.random.default_rng(seed)
    group = np.repeat(np.arange(J), rows)
    x = rng.standard_normal(J * rows)
    a, b = sa * rng.standard_normal(J), sb * rng.standard_normal(J)
    y = 0.3 + a[group] + (0.2 + b[group]) * x + rng.standard_normal(J * rows)
    with pm.Model(coords={"group": np.arange(J)}) as model:
        mu, beta = pm.Normal("mu", 0.0, 1.0), pm.Normal("beta", 0.0, 1.0)
        scale_a, scale_b = pm.HalfNormal("sa", 1.0), pm.HalfNormal("sb", 1.0)
        if centered:
            ea = pm.Normal("a", 0.0, scale_a, dims="group")
            eb = pm.Normal("b", 0.0, scale_b, dims="group")
        else:
            ea = pm.Deterministic("a", scale_a * pm.Normal("za", 0.0, 1.0, dims="group"))
            eb = pm.Deterministic("b", scale_b * pm.Normal("zb", 0.0, 1.0, dims="group"))
        pm.Normal("y", mu + ea[group] + (beta + eb[group]) * x, 1.0, observed=y)
    log_z = slope_log_z(y.reshape(J, rows), x.reshape(J, rows)) if exact else float("nan")
    return AnalyticModel(
        name=f"slope_hierarchy_{J}",
        model=model,
        log_z=log_z,
        description=f"random intercept and slope, {J} groups x {rows} rows; log Z exact "
        "given the scales, Gauss-Legendre over (log sa, log sb)",
        data=as_data(y=y, x=x, group=group),
    )
