"""Nested count and binary hierarchies, ``(1|state) + (1|state:county)``, ``log_z`` by
nested quadrature.

Part of :mod:`pymc_evidence.testing`. ``mu ~ N(0, 1)``, ``tau_s, tau_c ~ HalfNormal(1)``,
a state effect ``b_k ~ N(0, tau_s)``, a county effect ``a_c ~ N(0, tau_c)``, every county in
one state, and rows ``y_i ~ Poisson(exp(eta_i))``, ``Bernoulli(logit^-1(eta_i))`` or
``Binomial(m, logit^-1(eta_i))`` with ``eta_i = mu + b_k + a_c``.

With ``x = mu + b_k`` (a state's level) the likelihood factors:

    p(y | mu, tau_s, tau_c) = ∏_k ∫ N(x; mu, tau_s) ∏_{c in k} f_c(x; tau_c) dx,
    f_c(x; tau_c) = ∫ N(η; x, tau_c) ∏_{i in c} p(y_i | η) dη,

and ``f_c`` depends on a county's rows only through their count and sum, so it is
computed once per distinct pair (:func:`~pymc_evidence.testing.glmm.group_log_integrals`,
a trapezoid on 401 points) on a uniform grid of ``x``. Each state's integral over ``x`` is
the trapezoidal rule on that grid, within a window of the state's ``∏ f_c`` around its peak;
for a smooth integrand whose width is several grid steps it converges exponentially in
the steps per width. Where ``tau_s`` is under two steps (the box's tail toward zero) the
Gaussian is taken as a point mass at ``mu``. The outer integral over ``(mu, log tau_s, log
tau_c)`` is :func:`~pymc_evidence.testing.quadrature.box_rule` around the mode, checked
against a wider, finer rule. None of it shares code with the package's quadratures.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
from scipy import optimize, special, stats

from pymc_evidence.testing.analytic import AnalyticModel, as_data
from pymc_evidence.testing.glmm import (
    KINDS,
    draw_rows,
    group_log_integrals,
    hessian,
    log_lik_constant,
    observe,
)
from pymc_evidence.testing.quadrature import box_rule

__all__ = ["nested_count_hierarchy", "nested_glmm_log_z"]


class _States:
    """The data's statistics, and each state's log integral for a ``tau_c`` and arrays of
    ``(mu, tau_s)``."""

    def __init__(self, kind, y, county, state_of, trials, step, strict=True):
        n_c = int(county.max()) + 1
        totals = np.bincount(county, weights=y, minlength=n_c)
        rows = np.bincount(county, minlength=n_c).astype(float)
        self.stat, which = np.unique(np.stack([totals, rows], 1), axis=0, return_inverse=True)
        n_k = int(state_of.max()) + 1
        self.counts = np.zeros((n_k, len(self.stat)))  # counties of each statistic per state
        np.add.at(self.counts, (state_of, which.ravel()), 1.0)
        self.kind, self.trials, self.step, self.strict = kind, trials, step, strict
        self.x = np.arange(-10.0, 10.0 + step / 2, step)

    def table(self, tau_c):
        """``(N, K)`` each state's ``log ∏ f_c`` on the grid, and its largest value
        (``(K,)``)."""
        with np.errstate(over="ignore"):  # exp of a rate far out: a term of -inf
            f = group_log_integrals(self.kind, self.x, tau_c, self.stat[:, 0],
                                    self.stat[:, 1], self.trials)  # fmt: skip
        log_g = f @ self.counts.T
        peak = np.argmax(log_g, axis=0)
        inner, cols = np.clip(peak, 1, len(self.x) - 2), np.arange(log_g.shape[1])
        second = log_g[inner + 1, cols] - 2 * log_g[inner, cols] + log_g[inner - 1, cols]
        if self.strict and np.any(
            -second > 0.4
        ):  # a peak narrower than 1.6 steps: error above e^-50
            raise RuntimeError(f"grid step {self.step} too coarse for a state's integrand")
        return log_g, log_g[peak, cols]

    def log_integrals(self, tau_c, mu, tau_s):
        """``(M, K)``: each state's log integral over ``x`` at ``(mu, tau_s)`` (``(M,)``),
        a matrix product of the Gaussian's and the counties' terms on the grid (each
        scaled to its largest: what underflows lies more than 700 nats below)."""
        log_g, top = self.table(tau_c)
        log_n = stats.norm.logpdf(self.x[None, :], mu[:, None], tau_s[:, None])
        n_top = log_n.max(axis=1, keepdims=True)
        with np.errstate(divide="ignore"):
            out = np.log(np.exp(log_n - n_top) @ np.exp(log_g - top)) + n_top + top
            point = np.stack([np.interp(mu, self.x, col) for col in log_g.T], axis=1)
        return np.where(tau_s[:, None] < 2.0 * self.step, point, out + np.log(self.step))


def _log_prior(mu, log_ts, log_tc):
    """The hyperparameters' log prior density in ``(mu, log tau_s, log tau_c)``."""
    ts, tc = np.exp(log_ts), np.exp(log_tc)
    return (stats.norm.logpdf(mu) + stats.halfnorm.logpdf(ts) + log_ts
            + stats.halfnorm.logpdf(tc) + log_tc)  # fmt: skip


def _box(states: _States, mode, sd, width, points) -> float:
    """``log Z`` less the rows' constant over the box rule's nodes, one ``tau_c`` at a
    time."""
    grid, log_w = box_rule(mode, sd, width, points, log_scales=(1, 2))
    total = np.empty(grid.shape[:3])
    for i in range(grid.shape[2]):
        nodes = grid[:, :, i].reshape(-1, 3)
        lik = states.log_integrals(np.exp(nodes[0, 2]), nodes[:, 0], np.exp(nodes[:, 1]))
        value = _log_prior(*nodes.T) + lik.sum(axis=1)
        total[:, :, i] = value.reshape(grid.shape[:2])
    return float(special.logsumexp(total + log_w))


def nested_glmm_log_z(kind, y, county, state_of, trials=1, points: int = 8,
                      step: float = 0.02) -> float:  # fmt: skip
    """``log Z`` of :func:`nested_count_hierarchy`'s model for rows ``y`` in counties
    ``county`` (``(n,)``), each county's state ``state_of`` (``(J,)``); ``points`` Gauss-
    Legendre nodes a segment of the outer rule, ``step`` the grid of a state's level.

    Examples
    --------
    >>> import numpy as np
    >>> county, state_of = np.repeat(np.arange(4), 2), np.array([0, 0, 1, 1])
    >>> y = np.array([1, 0, 2, 1, 0, 0, 3, 1])
    >>> round(nested_glmm_log_z("poisson", y, county, state_of, points=6), 3)  # doctest: +SKIP
    """
    y = np.asarray(y, dtype=float)
    coarse = _States(kind, y, county, state_of, trials, 2.5 * step, strict=False)
    states = _States(kind, y, county, state_of, trials, step)

    def log_f(p, grid=states):
        lik = grid.log_integrals(np.exp(p[2]), np.array([p[0]]), np.array([np.exp(p[1])]))
        return float(_log_prior(*p) + lik.sum())

    start = [float(np.log(max(y.mean(), 0.05))) if kind == "poisson" else 0.0, -0.7, -0.7]
    mode = optimize.minimize(lambda p: -log_f(p, coarse), start, method="Nelder-Mead",
                             options={"xatol": 1e-3, "fatol": 1e-6}).x  # fmt: skip
    sd = np.sqrt(np.diag(np.linalg.inv(-hessian(lambda p: log_f(p, coarse), mode, h=1e-3))))
    finer = _States(kind, y, county, state_of, trials, step / 2)
    for p in (mode, mode - 3 * sd, mode + 3 * sd):
        if abs(log_f(p) - log_f(p, finer)) > 1e-6:
            raise RuntimeError(f"grid step {step} unsettled at {p}")
    first = _box(states, mode, sd, 9.0, points)
    check = _box(states, mode, sd, 12.0, int(points * 1.5))
    if abs(first - check) > 2e-3:
        raise RuntimeError(f"outer quadrature unsettled: {first} vs {check}")
    return check + log_lik_constant(kind, y, trials)


def _data(kind, J, K, rows, trials, seed):
    """Rows of ``J`` counties in ``K`` states: ``mu = 0.3``, ``tau_s = 0.5``, ``tau_c =
    0.3``."""
    rng = np.random.default_rng(seed)
    county = np.repeat(np.arange(J), rows)
    state_of = np.arange(J) % K
    eta = 0.3 + 0.5 * rng.standard_normal(K)[state_of] + 0.3 * rng.standard_normal(J)
    return county, state_of, draw_rows(kind, eta[county], trials, rng)


def nested_count_hierarchy(
    J: int = 200, K: int = 10, rows: int = 4, kind: str = "poisson", *,
    three_level: bool = False, trials: int = 5, seed: int = 0, exact: bool = True,
) -> AnalyticModel:  # fmt: skip
    """A nested random-intercept GLMM (module docstring): ``J`` counties of ``rows`` rows
    in ``K`` states (county ``c`` in state ``c mod K``).

    Parameters
    ----------
    J, K, rows : int
        Counties, states, and rows per county.
    kind : {"poisson", "bernoulli", "binomial"}
    three_level : bool
        Written as bambi writes ``(1|state) + (1|state:county)`` (``mu + b[state] +
        a[county]``), or in three levels: ``b ~ N(mu, tau_s)``, ``a ~ N(b[state], tau_c)``,
        rows ``a[county]`` (the same ``log Z``).
    trials : int
        Trials per row of the binomial.
    seed : int
        Seed of the data.
    exact : bool
        Compute ``log_z`` (seconds to a minute); NaN without.

    Examples
    --------
    >>> system = nested_count_hierarchy(J=20, K=4, kind="bernoulli", exact=False)
    >>> [rv.name for rv in system.model.free_RVs]
    ['mu', 'tau_s', 'tau_c', 'b', 'a']
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    m = trials if kind == "binomial" else 1
    county, state_of, y = _data(kind, J, K, rows, m, seed)
    with pm.Model(coords={"state": np.arange(K), "county": np.arange(J)}) as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        tau_s, tau_c = pm.HalfNormal("tau_s", 1.0), pm.HalfNormal("tau_c", 1.0)
        if three_level:
            b = pm.Normal("b", mu, tau_s, dims="state")
            a = pm.Normal("a", b[state_of], tau_c, dims="county")
            eta = a[county]
        else:
            b = pm.Normal("b", 0.0, tau_s, dims="state")
            a = pm.Normal("a", 0.0, tau_c, dims="county")
            eta = mu + b[state_of[county]] + a[county]
        observe(kind, eta, y, m)
    log_z = nested_glmm_log_z(kind, y, county, state_of, m) if exact else float("nan")
    return AnalyticModel(
        name=f"nested_{kind}_hierarchy_{J}",
        model=model,
        log_z=log_z,
        description=f"nested {kind} random intercepts, {J} counties in {K} states x {rows} "
        "rows; log Z by nested quadrature (trapezoid per county statistic and per state, "
        "Gauss-Legendre over mu, log tau_s, log tau_c)",
        data=as_data(y=y, county=county, state_of=state_of, kind=kind, trials=m),
    )
