"""Count and binary hierarchies (GLMMs) of any size, ``log_z`` by nested quadrature.

Part of :mod:`pymc_evidence.testing`. A random intercept per group, ``b_j ~ N(mu, tau)``,
``mu ~ N(0, 1)``, ``tau ~ HalfNormal(1)``, and rows ``y_i ~ Poisson(exp(b_g[i]))``,
``Bernoulli(logit^-1(b_g[i]))`` or ``Binomial(m, logit^-1(b_g[i]))``. Given ``(mu, tau)``
a group's likelihood depends on its rows only through their count and sum, so the groups'
integrals over ``b_j`` are computed once per distinct pair, by the trapezoidal rule on a
grid of :data:`INNER_POINTS` points over ``mu ± 10 tau`` (no mode search, no Gauss-Hermite
rule: independent of :mod:`pymc_evidence.transforms.group_quadrature`); the outer integral
over ``(mu, log tau)`` by a tensor Gauss-Legendre rule on a box around the posterior's mode,
checked against a finer rule on a wider box.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy import optimize, special, stats

from pymc_evidence.testing.analytic import AnalyticModel, as_data

__all__ = [
    "INNER_POINTS", "count_hierarchy", "draw_rows", "glmm_log_z", "group_log_integrals",
    "hessian", "log_lik_constant", "observe",
]  # fmt: skip

#: Grid points of each group's integral.
INNER_POINTS = 401
KINDS = ("poisson", "bernoulli", "binomial")


def _log_lik(kind: str, b, total, rows, trials):
    """A group's log likelihood at effects ``b`` from its rows' sum and count (without the
    terms free of ``b``)."""
    if kind == "poisson":
        return total * b - rows * np.exp(b)
    return total * b - rows * trials * np.logaddexp(0.0, b)


def group_log_integrals(kind, mu, tau, totals, rows, trials=1):
    """``log ∫ N(b; mu, tau) L(b) db`` for every ``(mu, tau)`` (any shape) and every
    group statistic ``(totals, rows)`` (``(G,)``): shape ``mu.shape + (G,)``."""
    mu, tau = np.broadcast_arrays(np.asarray(mu, float), np.asarray(tau, float))
    t = np.linspace(-10.0, 10.0, INNER_POINTS)
    log_w = stats.norm.logpdf(t) + np.log(t[1] - t[0])
    log_w[[0, -1]] -= np.log(2.0)
    flat_mu, flat_tau = mu.ravel(), tau.ravel()
    out = np.empty((flat_mu.size, len(totals)))
    for start in range(0, flat_mu.size, 64):
        b = flat_mu[start : start + 64, None] + flat_tau[start : start + 64, None] * t
        terms = _log_lik(kind, b[:, None, :], totals[:, None], rows[:, None], trials)
        terms += log_w
        top = terms.max(axis=2, keepdims=True)  # scipy's logsumexp, without its checks
        out[start : start + 64] = np.log(np.exp(terms - top).sum(axis=2)) + top[..., 0]
    return out.reshape(mu.shape + (len(totals),))


def draw_rows(kind: str, eta, trials: int, rng) -> np.ndarray:
    """Rows of ``kind`` at linear predictors ``eta``: Poisson counts of rate ``exp(eta)``,
    else binomial counts of ``trials`` trials (one: Bernoulli) and ``logit p = eta``."""
    if kind == "poisson":
        return rng.poisson(np.exp(eta))
    return rng.binomial(trials, special.expit(eta))


def observe(kind: str, linear, y, trials: int) -> None:
    """The rows ``y`` of ``kind`` at the linear predictor ``linear``, in the model on the
    context stack (``trials`` of the binomial)."""
    if kind == "poisson":
        pm.Poisson("y", pt.exp(linear), observed=y)
    elif kind == "bernoulli":
        pm.Bernoulli("y", logit_p=linear, observed=y)
    else:
        pm.Binomial("y", trials, logit_p=linear, observed=y)


def log_lik_constant(kind, y, trials) -> float:
    """The likelihood's terms free of the effects."""
    if kind == "poisson":
        return -float(np.sum(special.gammaln(y + 1.0)))
    if kind == "binomial":
        return float(np.sum(special.gammaln(trials + 1.0) - special.gammaln(y + 1.0)
                            - special.gammaln(trials - y + 1.0)))  # fmt: skip
    return 0.0


def glmm_log_z(kind, y, group, trials=1, points: int = 80) -> float:
    """``log Z`` of :func:`count_hierarchy`'s model for data ``y`` in groups ``group``."""
    n_groups = int(group.max()) + 1
    totals = np.bincount(group, weights=y, minlength=n_groups)
    rows = np.bincount(group, minlength=n_groups).astype(float)
    stat, counts = np.unique(np.stack([totals, rows], 1), axis=0, return_counts=True)

    def log_f(mu, log_tau):
        tau = np.exp(log_tau)
        inner = group_log_integrals(kind, mu, tau, stat[:, 0], stat[:, 1], trials)
        prior = stats.norm.logpdf(mu) + stats.halfnorm.logpdf(tau) + log_tau
        return prior + inner @ counts

    mode = optimize.minimize(lambda p: -log_f(*p), [0.0, np.log(0.5)], method="Nelder-Mead",
                             options={"xatol": 1e-8, "fatol": 1e-10}).x  # fmt: skip
    hess = hessian(lambda p: log_f(*p), mode)
    sd = np.sqrt(np.diag(np.linalg.inv(-hess)))
    first = _box_integral(log_f, mode, sd, 12.0, points)
    check = _box_integral(log_f, mode, sd, 18.0, int(points * 1.5))
    if abs(first - check) > 1e-6:
        raise RuntimeError(f"outer quadrature unsettled: {first} vs {check}")
    return check + log_lik_constant(kind, y, trials)


def hessian(f, x, h=1e-4):
    """Central-difference Hessian of ``f`` at ``x``."""
    n = len(x)
    out = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            e_i, e_j = np.eye(n)[i] * h, np.eye(n)[j] * h
            out[i, j] = (f(x + e_i + e_j) - f(x + e_i - e_j) - f(x - e_i + e_j)
                         + f(x - e_i - e_j)) / (4 * h * h)  # fmt: skip
    return out


def _box_integral(log_f, mode, sd, width, points) -> float:
    """Gauss-Legendre over ``mode ± width sd`` (``points`` per axis), the ``log tau`` axis
    extended by a second segment 40 below (its exponential left tail: as ``tau -> 0`` the
    likelihood tends to the pooled one and the density to ``tau`` times a constant)."""
    x, w = np.polynomial.legendre.leggauss(points)
    mu_lo, mu_hi = mode[0] - width * sd[0], mode[0] + width * sd[0]
    lt_lo, lt_hi = mode[1] - width * sd[1], mode[1] + width * sd[1]
    mus, mu_w = _segment(x, w, mu_lo, mu_hi)
    tails = [_segment(x, w, lt_lo - 40.0, lt_lo), _segment(x, w, lt_lo, lt_hi)]
    lts, lt_w = (np.concatenate(parts) for parts in zip(*tails, strict=True))
    grid = log_f(*np.meshgrid(mus, lts, indexing="ij"))
    return float(special.logsumexp(grid + np.log(mu_w)[:, None] + np.log(lt_w)[None, :]))


def _segment(x, w, lo, hi):
    """Gauss-Legendre nodes and weights on ``[lo, hi]``."""
    half = 0.5 * (hi - lo)
    return lo + half * (x + 1.0), half * w


def count_hierarchy(
    J: int = 200, rows: int = 3, kind: str = "poisson", *, centered: bool = True,
    trials: int = 5, seed: int = 0, tau: float = 0.5, exact: bool = True,
) -> AnalyticModel:  # fmt: skip
    """A random-intercept GLMM of ``J`` groups with ``rows`` rows each (module docstring).

    Parameters
    ----------
    J, rows : int
        Groups and rows per group.
    kind : {"poisson", "bernoulli", "binomial"}
    centered : bool
        ``b ~ N(mu, tau)`` as written, or ``b = mu + tau * z``, ``z ~ N(0, 1)``.
    trials : int
        Trials per row of the binomial.
    seed : int
        Seed of the data: ``mu = 0.3``, ``tau`` as given.
    exact : bool
        Compute ``log_z`` (seconds at a few hundred groups); NaN without.

    Examples
    --------
    >>> system = count_hierarchy(J=20, rows=2, kind="bernoulli", seed=1)
    >>> system.name, [rv.name for rv in system.model.free_RVs]
    ('bernoulli_hierarchy_20', ['mu', 'tau', 'b'])
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    rng = np.random.default_rng(seed)
    group = np.repeat(np.arange(J), rows)
    eta = 0.3 + tau * rng.standard_normal(J)
    m = 1 if kind != "binomial" else trials
    y = draw_rows(kind, eta[group], m, rng)
    with pm.Model(coords={"group": np.arange(J)}) as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        scale = pm.HalfNormal("tau", 1.0)
        if centered:
            b = pm.Normal("b", mu, scale, dims="group")
        else:
            b = pm.Deterministic("b", mu + scale * pm.Normal("z", 0.0, 1.0, dims="group"))
        observe(kind, b[group], y, m)
    return AnalyticModel(
        name=f"{kind}_hierarchy_{J}",
        model=model,
        log_z=glmm_log_z(kind, y.astype(float), group, m) if exact else float("nan"),
        description=f"{kind} random-intercept hierarchy, {J} groups x {rows} rows; log Z by "
        "nested quadrature (trapezoid per group statistic, Gauss-Legendre over mu, log tau)",
        data=as_data(y=y, group=group, kind=kind, trials=m),
    )
