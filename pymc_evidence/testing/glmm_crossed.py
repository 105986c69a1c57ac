"""Crossed count and binary hierarchies, ``(1|county) + (1|year)``, ``log_z`` by quadrature
over the counties and importance sampling over the rest.

Part of :mod:`pymc_evidence.testing`. ``mu ~ N(0, 1)``, ``tau_a, tau_b ~ HalfNormal(1)``, a
county effect ``a_c ~ N(0, tau_a)``, a year effect ``b_t ~ N(0, tau_b)``, every row in one
county and one year, and rows ``y_i ~ Poisson(exp(eta_i))``, ``Bernoulli(logit^-1(eta_i))``
or ``Binomial(m, logit^-1(eta_i))`` with ``eta_i = mu + a_c + b_t``.

Given ``(mu, tau_a, b)`` the counties are independent:

    p(y | mu, tau_a, b) = ∏_c ∫ N(a; 0, tau_a) ∏_{i in c} p(y_i | mu + b_{t_i} + a) da,

each a one-dimensional integral, computed by the trapezoidal rule on a fixed grid of
:data:`INNER_POINTS` points over ``± 10 tau_a`` (checked against twice as many points at the
mode). The years' effects are taken non-centred, ``b = tau_b z`` (in ``(log tau_b, b)``
a few years' density has no mode: a funnel). ``log tau_b`` is integrated by Gauss-Legendre
rules on a segment of ``± 8`` sds around its marginal's mean and one 30 below (its
exponential left tail); that mean and sd come from Laplace approximations given ``tau_b`` at
a first set of nodes (the joint mode can sit far from the marginal's mass when the years
are few). At each node the remaining ``T + 2`` dimensions are integrated by importance
sampling from a multivariate t (5 degrees of freedom) around their Laplace approximation
given ``tau_b``: the standard errors combine over the nodes. None of it shares code with the
package's quadratures.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
from scipy import optimize, special, stats

from pymc_evidence.testing.analytic import AnalyticModel, as_data
from pymc_evidence.testing.glmm import KINDS, draw_rows, log_lik_constant, observe

__all__ = ["crossed_count_hierarchy", "crossed_glmm_log_z"]

#: Grid points of each county's integral.
INNER_POINTS = 401
#: Importance-sampling draws at each node of ``log tau_b``.
IS_DRAWS = 1000
#: The top of ``log tau_b``'s rule: the ``HalfNormal(1)`` prior's density at ``tau_b = 10`` is
#: ``e^-50`` of its peak, and a ``tau_b`` that large leaves the years' Laplace fits singular.
LOG_TAU_MAX = float(np.log(10.0))


class _Counties:
    """The rows, and ``log p(y | theta)`` less the rows' constant, on a grid of ``points``
    points."""

    def __init__(self, kind, y, county, year, trials, points=INNER_POINTS):
        order = np.argsort(county, kind="stable")
        self.y, self.county, self.year = y[order], county[order], year[order]
        self.starts = np.flatnonzero(np.diff(self.county, prepend=-1))
        self.kind, self.trials = kind, trials
        self.t = np.linspace(-10.0, 10.0, points)
        self.log_w = stats.norm.logpdf(self.t) + np.log(self.t[1] - self.t[0])
        self.log_w[[0, -1]] -= np.log(2.0)
        self.totals = np.add.reduceat(self.y, self.starts)
        self.fixed = None if kind != "poisson" else self.totals[:, None] * self.t[None, :]

    def log_lik(self, mu, tau_a, b) -> np.ndarray:
        """``sum_c log ∫ N(a; 0, tau_a) ∏ p(y_i | mu + b_t + a) da`` at ``M`` points
        (``mu`` and ``tau_a`` ``(M,)``, ``b`` ``(M, T)``)."""
        offset = mu[:, None] + b[:, self.year]  # (M, n)
        a = tau_a[:, None] * self.t[None, :]  # (M, points)
        if self.kind == "poisson":  # a county's rows through two sums
            rates = np.add.reduceat(np.exp(offset), self.starts, axis=1)
            linear = np.add.reduceat(self.y * offset, self.starts, axis=1)
            with np.errstate(over="ignore"):
                terms = (linear[:, :, None] + self.totals[None, :, None] * a[:, None, :]
                         - rates[:, :, None] * np.exp(a)[:, None, :])  # fmt: skip
        else:
            eta = offset[:, :, None] + a[:, None, :]
            rows = self.y[:, None] * eta - self.trials * np.logaddexp(0.0, eta)
            terms = np.add.reduceat(rows, self.starts, axis=1)
        return np.sum(special.logsumexp(terms + self.log_w, axis=2), axis=1)


def _log_prior_tau(log_tau):
    """``log HalfNormal(tau; 1)`` with the Jacobian of ``log tau``."""
    return stats.halfnorm.logpdf(np.exp(log_tau)) + log_tau


def _log_f(counties: _Counties, theta: np.ndarray, chunk: int = 32) -> np.ndarray:
    """The log density at the rows of ``theta = (mu, log tau_a, log tau_b, z)`` (``(M,
    T + 3)``), the years' effects ``b = tau_b z``, unnormalized, less the rows' constant."""
    out = []
    for part in np.split(theta, range(chunk, len(theta), chunk)):
        mu, log_ta, log_tb, z = part[:, 0], part[:, 1], part[:, 2], part[:, 3:]
        prior = (stats.norm.logpdf(mu) + _log_prior_tau(log_ta) + _log_prior_tau(log_tb)
                 + np.sum(stats.norm.logpdf(z), axis=1))  # fmt: skip
        out.append(prior + counties.log_lik(mu, np.exp(log_ta), np.exp(log_tb)[:, None] * z))
    return np.concatenate(out)


def _hessian(log_f, x, h: float = 1e-3) -> np.ndarray:
    """Central-difference Hessian of the batched ``log_f`` at ``x``, every point at once."""
    d, eye = len(x), np.eye(len(x)) * h
    signs = [(1, 1), (1, -1), (-1, 1), (-1, -1)]
    points = [x + si * eye[i] + sj * eye[j] for i in range(d) for j in range(d) for si, sj in signs]
    values = log_f(np.array(points)).reshape(d, d, 4)
    return (values[..., 0] - values[..., 1] - values[..., 2] + values[..., 3]) / (4 * h * h)


def _laplace(log_f, start):
    """The mode of the batched ``log_f`` from ``start`` and the inverse negative Hessian."""
    mode = optimize.minimize(lambda p: -log_f(p[None])[0], start, method="BFGS",
                             options={"gtol": 1e-6}).x  # fmt: skip
    return mode, np.linalg.inv(-_hessian(log_f, mode))


def _is_log_z(log_f, proposal, draws: int):
    """Importance-sampling log Z, its delta-method se, and the draws and their weights."""
    x = proposal.rvs(draws)
    log_w = log_f(x) - proposal.logpdf(x)
    w = np.exp(log_w - log_w.max())
    log_z = special.logsumexp(log_w) - np.log(draws)
    return float(log_z), float(np.std(w) / np.mean(w) / np.sqrt(draws)), x, w / w.sum()


def _given_tau_b(counties, log_tb, start, rng, draws):
    """``(log Z, se, mode)`` of ``(mu, log tau_a, z)`` given ``log tau_b`` by importance
    sampling from a t (5 degrees of freedom) at the weighted moments of a first sample
    from a t around the Laplace approximation."""

    def log_f(p):
        return _log_f(counties, np.insert(p, 2, log_tb, axis=1))

    mode, cov = _laplace(log_f, start)
    *_, x, w = _is_log_z(log_f, stats.multivariate_t(mode, cov, df=5, seed=rng), draws)
    mean = w @ x
    moved = stats.multivariate_t(mean, (x - mean).T @ ((x - mean) * w[:, None]), df=5, seed=rng)
    return (*_is_log_z(log_f, moved, draws)[:2], mode)


def _legendre(segments, points: int):
    """Gauss-Legendre nodes and log weights of ``points`` nodes on each ``(lo, hi)``."""
    x, w = np.polynomial.legendre.leggauss(points)
    nodes = np.concatenate([lo + (hi - lo) * (x + 1) / 2 for lo, hi in segments])
    return nodes, np.log(np.concatenate([(hi - lo) * w / 2 for lo, hi in segments]))


def _sweep(nodes, centre, sd, known, fit) -> list:
    """``fit(v, start)`` (returning ``(log Z, se, mode)``) at every node, from the centre out
    so that each fit starts from its neighbour's mode (within 8 ``sd``); in the nodes' order."""
    found = {}
    for i in np.argsort(np.abs(nodes - centre)):
        v = nodes[i]
        found[i] = fit(v, np.concatenate([known[:2], np.clip(known[2:] / np.exp(v), -4.0, 4.0)]))
        if abs(v - centre) < 8 * sd:
            known = np.concatenate([found[i][2][:2], np.exp(v) * found[i][2][2:]])
    return [found[i] for i in range(len(nodes))]


def _laplace_given_tau_b(counties, log_tb, start):
    """``(log Z, 0, mode)`` of ``(mu, log tau_a, z)`` given ``log tau_b`` by Laplace."""

    def log_f(p):
        return _log_f(counties, np.insert(p, 2, log_tb, axis=1))

    mode, cov = _laplace(log_f, start)
    log_det = np.linalg.slogdet(2 * np.pi * cov)[1]
    return float(log_f(mode[None])[0] + 0.5 * log_det), 0.0, mode


def _log_tau_b_moments(counties, centre, sd, known, points: int, passes: int = 2):
    """Mean and sd of ``log tau_b``'s marginal, from Laplace approximations given it at
    ``points`` nodes over ``± 8 sd`` (at most :data:`LOG_TAU_MAX`), starting from the joint
    mode's ``centre`` and ``sd``.

    The joint mode of the non-centred years can sit far from the marginal's mass (at small
    ``tau_b`` the years' ``z`` spread over a wider volume), and its curvature then says little
    of the marginal's width, so a rule placed by it puts too few nodes where the mass is.
    """
    for _ in range(passes):
        nodes, log_w = _legendre([(centre - 8 * sd, min(centre + 8 * sd, LOG_TAU_MAX))], points)
        found = _sweep(nodes, centre, sd, known,
                       lambda v, start: _laplace_given_tau_b(counties, v, start))  # fmt: skip
        log_mass = np.array([f[0] for f in found]) + log_w
        share = np.exp(log_mass - special.logsumexp(log_mass))
        centre = float(share @ nodes)
        sd = float(np.sqrt(share @ (nodes - centre) ** 2))
    return centre, sd


def crossed_glmm_log_z(kind, y, county, year, trials=1, seed: int = 0,
                       points: int = 16) -> tuple[float, float]:  # fmt: skip
    """``(log Z, se)`` of :func:`crossed_count_hierarchy`'s model for rows ``y`` in
    counties ``county`` and years ``year`` (the module's docstring); ``seed`` of the
    importance sampling, ``points`` Gauss-Legendre nodes of each segment over
    ``log tau_b``.

    Examples
    --------
    >>> import numpy as np
    >>> county, year = np.repeat(np.arange(6), 2), np.tile([0, 1], 6)
    >>> y = np.array([1, 0, 2, 1, 0, 0, 3, 1, 1, 1, 0, 2])
    >>> crossed_glmm_log_z("poisson", y, county, year)  # doctest: +SKIP
    """
    y = np.asarray(y, dtype=float)
    counties = _Counties(kind, y, county, year, trials)
    n_t = int(year.max()) + 1
    mean = float(np.clip(y.mean() / trials, 0.05, 0.95))
    level = np.log(y.mean() + 0.05) if kind == "poisson" else special.logit(mean)
    start = np.concatenate([[level, np.log(0.5), np.log(0.5)], np.zeros(n_t)])
    mode, cov = _laplace(lambda p: _log_f(counties, p), start)
    finer = _Counties(kind, y, county, year, trials, 2 * INNER_POINTS - 1)
    if abs(_log_f(counties, mode[None])[0] - _log_f(finer, mode[None])[0]) > 1e-8:
        raise RuntimeError("the counties' grid is too coarse at the mode")
    known = np.concatenate([mode[:2], np.exp(mode[2]) * mode[3:]])  # (mu, log tau_a, b)
    centre, sd = _log_tau_b_moments(counties, mode[2], np.sqrt(cov[2, 2]), known, points)
    lo, hi = centre - 8 * sd, min(centre + 8 * sd, LOG_TAU_MAX)
    nodes, log_w = _legendre([(lo - 30.0, lo), (lo, hi)], points)
    rng = np.random.default_rng(seed)
    found = _sweep(nodes, centre, sd, known,
                   lambda v, start: _given_tau_b(counties, v, start, rng, IS_DRAWS))  # fmt: skip
    log_z, se = np.array([f[0] for f in found]), np.array([f[1] for f in found])
    total = special.logsumexp(log_z + log_w)
    share = np.exp(log_z + log_w - total)  # each node's share of Z
    se = float(np.sqrt(np.sum((share * se) ** 2)))
    return float(total + log_lik_constant(kind, y, trials)), se


def crossed_count_hierarchy(
    J: int = 200, T: int = 10, rows: int = 4, kind: str = "poisson", *,
    trials: int = 5, seed: int = 0, exact: bool = True,
) -> AnalyticModel:  # fmt: skip
    """A crossed random-intercept GLMM (module docstring): ``J`` counties of ``rows`` rows,
    each row in one of ``T`` years drawn at random, written as bambi writes ``(1|county) +
    (1|year)`` (``mu + a[county] + b[year]``, both effects centred at zero).

    Parameters
    ----------
    J, T, rows : int
        Counties, years, and rows per county.
    kind : {"poisson", "bernoulli", "binomial"}
    trials : int
        Trials per row of the binomial.
    seed : int
        Seed of the data (``mu = 0.3``, ``tau_a = 0.4``, ``tau_b = 0.3``) and of the
        importance sampling.
    exact : bool
        Compute ``log_z`` (seconds to minutes); NaN without.

    Examples
    --------
    >>> system = crossed_count_hierarchy(J=20, T=4, kind="bernoulli", exact=False)
    >>> [rv.name for rv in system.model.free_RVs]
    ['mu', 'tau_a', 'tau_b', 'a', 'b']
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    m = trials if kind == "binomial" else 1
    rng = np.random.default_rng(seed)
    county, year = np.repeat(np.arange(J), rows), rng.integers(T, size=J * rows)
    eta = 0.3 + 0.4 * rng.standard_normal(J)[county] + 0.3 * rng.standard_normal(T)[year]
    y = draw_rows(kind, eta, m, rng)
    with pm.Model(coords={"county": np.arange(J), "year": np.arange(T)}) as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        tau_a, tau_b = pm.HalfNormal("tau_a", 1.0), pm.HalfNormal("tau_b", 1.0)
        a = pm.Normal("a", 0.0, tau_a, dims="county")
        b = pm.Normal("b", 0.0, tau_b, dims="year")
        observe(kind, mu + a[county] + b[year], y, m)
    log_z, se = crossed_glmm_log_z(kind, y, county, year, m, seed) if exact else (np.nan, np.nan)
    return AnalyticModel(
        name=f"crossed_{kind}_hierarchy_{J}",
        model=model,
        log_z=log_z,
        description=f"crossed {kind} random intercepts, {J} counties x {rows} rows in {T} "
        f"years; log Z by a trapezoid per county and importance sampling over the rest "
        f"(se {se:.4f})",
        data=as_data(y=y, county=county, year=year, kind=kind, trials=m),
    )
