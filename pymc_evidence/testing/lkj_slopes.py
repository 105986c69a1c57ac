"""Correlated random intercepts and slopes (``LKJCholeskyCov``), ``log_z`` exact.

Part of :mod:`pymc_evidence.testing`. ``J`` groups of ``rows`` rows each,

    y_i ~ N(mu + e_g0 + (beta + e_g1) x_i, 1),  e_j ~ N(0, Σ),  mu, beta ~ N(0, 1),
    Σ = diag(s) R diag(s),  chol ~ LKJCholeskyCov(n=2, eta, sd_dist=HalfNormal(1)),

written non-centred (``z ~ N(0, 1)`` of shape ``(J, 2)``, ``e = z @ Lᵀ``) or centred
(``e ~ MvNormal(0, chol=L)``). Given ``Σ`` the model is linear and Gaussian; each group's
``4 × 4`` algebra reduces by Woodbury's identity to ``2 × 2`` matrices of its sufficient
statistics ``A_j = X_jᵀ X_j`` and ``b_j = X_jᵀ y_j``:
``C_j⁻¹ = I - X_j K_j X_jᵀ`` with ``K_j = (Σ⁻¹ + A_j)⁻¹`` and
``det C_j = det(I + Σ A_j)``, and ``(mu, beta)`` integrate in closed form over the groups'
sums. The outer integral over ``(log s_a, log s_b, atanh ρ)`` is a product of composite
Gauss-Legendre rules on a box around its mode (:func:`_box`), checked against a finer rule
on a wider box; the LKJ density of the
correlation of ``n = 2`` is ``(1 - ρ²)^(η-1) / (2^(2η-1) B(η, η))``. Nothing here uses
:mod:`pymc_evidence.transforms`, which integrates the effects by Newton steps and
quadrature in the model's graph.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy import optimize, special, stats

from pymc_evidence.testing.analytic import AnalyticModel, as_data
from pymc_evidence.testing.glmm import hessian
from pymc_evidence.testing.quadrature import box_rule

__all__ = ["lkj_slope_hierarchy", "lkj_slope_log_z", "pymc_lkj_offset", "slope_log_lik"]

#: Outer points evaluated at once (their ``(P, J, 2, 2)`` temporaries).
CHUNK = 2000


def slope_log_lik(y, x, cov) -> np.ndarray:
    """``log p(y | Σ)`` with the effects and ``(mu, beta)`` integrated, for covariances
    ``cov`` of shape ``(..., 2, 2)``; ``y``, ``x``: ``(J, r)``."""
    J, r = y.shape
    design = np.stack([np.ones_like(x), x], axis=-1)  # (J, r, 2)
    a = np.einsum("jrk,jrl->jkl", design, design)
    b = np.einsum("jrk,jr->jk", design, y)
    sigma = np.reshape(cov, (-1, 1, 2, 2))  # (P, 1, 2, 2)
    inner = np.eye(2) + sigma @ a  # I + Σ A, (P, J, 2, 2)
    k = np.linalg.solve(inner, np.broadcast_to(sigma, inner.shape))  # (Σ⁻¹ + A)⁻¹
    kb = np.einsum("pjkl,jl->pjk", k, b)
    quad = np.sum(y**2, axis=1) - np.einsum("jk,pjk->pj", b, kb)  # yᵀ C⁻¹ y
    xcx = a - a @ k @ a  # Xᵀ C⁻¹ X
    xcy = b - np.einsum("jkl,pjl->pjk", a, kb)  # Xᵀ C⁻¹ y
    precision = np.eye(2) + np.sum(xcx, axis=1)
    linear = np.sum(xcy, axis=1)
    fixed = np.einsum("pk,pk->p", linear, np.linalg.solve(precision, linear[..., None])[..., 0])
    out = (-0.5 * (np.sum(quad, axis=1) - fixed) - 0.5 * np.sum(np.linalg.slogdet(inner)[1], 1)
           - 0.5 * np.linalg.slogdet(precision)[1] - 0.5 * J * r * np.log(2 * np.pi))  # fmt: skip
    return out.reshape(np.shape(cov)[:-2])


def _log_f(y, x, eta: float):
    """The log density of ``(log s_a, log s_b, atanh ρ)`` (``(..., 3)``) and the data."""

    def log_f(t):
        t = np.asarray(t, dtype=float)
        s, rho = np.exp(t[..., :2]), np.tanh(t[..., 2])
        prior = np.sum(stats.halfnorm.logpdf(s) + t[..., :2], axis=-1)
        prior += eta * np.log1p(-(rho**2))  # LKJ's (1 - ρ²)^(η - 1), times dρ/dt = 1 - ρ²
        prior -= (2 * eta - 1) * np.log(2.0) + special.betaln(eta, eta)
        cov = np.empty(t.shape[:-1] + (2, 2))
        cov[..., 0, 0], cov[..., 1, 1] = s[..., 0] ** 2, s[..., 1] ** 2
        cov[..., 0, 1] = cov[..., 1, 0] = rho * s[..., 0] * s[..., 1]
        flat = cov.reshape(-1, 2, 2)
        lik = np.concatenate([slope_log_lik(y, x, flat[i : i + CHUNK])
                              for i in range(0, len(flat), CHUNK)])  # fmt: skip
        return prior + lik.reshape(t.shape[:-1])

    return log_f


def pymc_lkj_offset(eta: float) -> float:
    """What PyMC's density of an ``n = 2`` LKJ correlation adds to the normalized one: 0 on
    PyMC 6; on PyMC 5 twice the log normalizing constant ``c = (2η - 1) log 2 + log B(η, η)``
    (its ``LKJCorr`` and ``LKJCholeskyCov`` add ``c`` where they should subtract it: at
    ``ρ = 0.3`` and ``η = 1, 2, 3.5`` they give ``+0.693, +0.193, -0.254`` against
    ``-0.693, -0.382, -0.217``). A model's ``log Z`` as PyMC defines it is the normalized
    one plus this.

    Examples
    --------
    >>> round(pymc_lkj_offset(2.0), 4) in (0.0, 0.5754)   # log(16 / 9) on PyMC 5
    True
    """
    if int(pm.__version__.split(".")[0]) >= 6:
        return 0.0
    return 2.0 * ((2.0 * eta - 1.0) * np.log(2.0) + special.betaln(eta, eta))


def lkj_slope_log_z(y, x, eta: float = 2.0, points: int = 10) -> float:
    """``log Z`` of :func:`lkj_slope_hierarchy`'s model for data ``y``, ``x`` (``(J, r)``),
    its LKJ prior normalized (add :func:`pymc_lkj_offset` for the model PyMC defines)."""
    log_f = _log_f(y, x, eta)
    mode = optimize.minimize(lambda p: -log_f(p), [np.log(0.5), np.log(0.5), 0.0],
                             method="Nelder-Mead",
                             options={"xatol": 1e-8, "fatol": 1e-10}).x  # fmt: skip
    sd = np.sqrt(np.diag(np.linalg.inv(-hessian(log_f, mode))))
    first = _box(log_f, mode, sd, 10.0, points)
    check = _box(log_f, mode, sd, 13.0, int(points * 1.4))
    if abs(first - check) > 2e-3:
        raise RuntimeError(f"outer quadrature unsettled: {first} vs {check}")
    return check


def _box(log_f, mode, sd, width, points) -> float:
    """``log Z`` by :func:`~pymc_evidence.testing.quadrature.box_rule` over ``mode ± width
    sd``: the two log scales closed to a scale of zero, the correlation's axis clipped to
    ``|atanh ρ| < 12``."""
    grid, log_w = box_rule(mode, sd, width, points, log_scales=(0, 1), clip={2: 12.0})
    return float(special.logsumexp(log_f(grid) + log_w))


def lkj_slope_hierarchy(
    J: int = 150, rows: int = 4, *, centered: bool = False, seed: int = 0,
    cov=((0.25, 0.06), (0.06, 0.09)), eta: float = 2.0, exact: bool = True,
) -> AnalyticModel:  # fmt: skip
    """The correlated random intercept and slope hierarchy of the module's docstring.

    Parameters
    ----------
    J, rows : int
        Groups and rows per group.
    centered : bool
        ``e ~ MvNormal(0, chol=L)`` as written, or ``e = z @ Lᵀ`` with ``z ~ N(0, 1)``.
    seed : int
        Seed of the data: ``mu = 0.3``, ``beta = 0.2``, the effects' covariance ``cov``.
    eta : float
        The LKJ prior's shape.
    exact : bool
        Compute ``log_z`` (seconds); NaN without.

    Examples
    --------
    >>> system = lkj_slope_hierarchy(J=10, rows=3, seed=1, exact=False)
    >>> [rv.name for rv in system.model.free_RVs]
    ['mu', 'beta', 'chol', 'z']
    """
    rng = np.random.default_rng(seed)
    group = np.repeat(np.arange(J), rows)
    x = rng.standard_normal(J * rows)
    e = rng.multivariate_normal(np.zeros(2), np.asarray(cov), size=J)
    y = 0.3 + e[group, 0] + (0.2 + e[group, 1]) * x + rng.standard_normal(J * rows)
    with pm.Model(coords={"group": np.arange(J), "effect": ["intercept", "slope"]}) as model:
        mu, beta = pm.Normal("mu", 0.0, 1.0), pm.Normal("beta", 0.0, 1.0)
        sd_dist = pm.HalfNormal.dist(1.0, shape=2)
        chol, _, _ = pm.LKJCholeskyCov("chol", n=2, eta=eta, sd_dist=sd_dist, compute_corr=True)
        if centered:
            eff = pm.MvNormal("e", mu=np.zeros(2), chol=chol, dims=("group", "effect"))
        else:
            z = pm.Normal("z", 0.0, 1.0, dims=("group", "effect"))
            eff = pm.Deterministic("e", pt.dot(z, chol.T), dims=("group", "effect"))
        pm.Normal("y", mu + eff[group, 0] + (beta + eff[group, 1]) * x, 1.0, observed=y)
    log_z = float("nan")
    if exact:
        log_z = lkj_slope_log_z(y.reshape(J, rows), x.reshape(J, rows), eta)
        log_z += pymc_lkj_offset(eta)  # the model as this PyMC writes its density
    return AnalyticModel(
        name=f"lkj_slope_hierarchy_{J}",
        model=model,
        log_z=log_z,
        description=f"correlated random intercept and slope (LKJ), {J} groups x {rows} rows; "
        "log Z exact given the covariance, Gauss-Legendre over its three parameters",
        data=as_data(y=y, x=x, group=group),
    )
