"""Bridge sampling: the Meng-Wong optimal bridge between posterior and proposal draws.

Pure numpy/scipy. With ``l = f / g`` (unnormalized target over normalized proposal) at
``N1`` posterior draws (``l1``) and ``N2`` proposal draws (``l2``), the optimal bridge of
Meng & Wong (1996) estimates ``Z = int f`` as the fixed point of::

    r <- mean_j[l2_j / (s1 l2_j + s2 r)] / mean_i[1 / (s1 l1_i + s2 r)]

with ``s1 = N1 / (N1 + N2)``, ``s2 = 1 - s1``. As in the ``bridgesampling`` workflow
(Gronau et al. 2017), ``N1`` in ``s1``/``s2`` is an effective sample size of the
autocorrelated posterior draws. Everything runs on ``log l`` with log-sum-exp.

The se of ``log Z`` is the root of Frühwirth-Schnatter's (2004) approximate relative
mean-squared error, ``Var(log Z_hat) ~ RE^2`` by the delta method::

    RE^2 = Var_g(f1) / (N2 E_g(f1)^2) + Var_p(f2) / (ESS(f2) E_p(f2)^2),
    f1 = p / (s1 p + s2 g),  f2 = g / (s1 p + s2 g),  p = f / Z,

where ``ESS(f2) = N1 / rho_f2(0)`` is the multi-chain Geyer ESS of
:func:`~pymc_evidence.estimators.mcse.ess_mean`, and ``s1``, ``s2`` are those of the iteration.

The warp-3 transform that makes a normal proposal fit skewed posteriors is in
:mod:`pymc_evidence.estimators.warp`.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from . import logspace
from .diagnostics import ConvergenceWarning, tagged
from .logspace import log_mean_exp
from .mcse import ess_mean
from .record import EvidenceEstimate

__all__ = [
    "bridge_iterate",
    "bridge_log_evidence",
    "bridge_relative_error",
    "combine_bridge_runs",
    "posterior_n_eff",
]

#: Fewer effective posterior draws than this triggers a warning.
N_EFF_MIN = 100.0


def _as_post(log_l, name: str) -> np.ndarray:
    """Posterior log ratios as ``(chain, draw)``; -inf allowed, nan/+inf refused."""
    arr = np.asarray(log_l, dtype=float)
    arr = arr[None, :] if arr.ndim == 1 else arr
    if arr.ndim != 2 or arr.shape[1] < 2:
        raise ValueError(f"{name} must be shaped (chain, draw) with >= 2 draws; got {arr.shape}")
    return arr


def _check_finite(arr: np.ndarray, name: str) -> None:
    bad = int(np.sum(np.isnan(arr) | (arr == np.inf)))
    if bad:
        raise ValueError(f"{name} has {bad} nan or +inf values of {arr.size}")
    if np.all(arr == -np.inf):
        raise ValueError(f"{name} is -inf everywhere: target and proposal do not overlap")


def bridge_iterate(
    log_l1, log_l2, log_s1, log_s2, *, maxiter=1000, tol=1e-10, log_r0=None, history=None
):
    """Iterate the optimal-bridge fixed point in log space.

    Parameters
    ----------
    log_l1 : ndarray
        ``log f - log g`` at the posterior draws (any shape, flattened).
    log_l2 : ndarray
        ``log f - log g`` at the proposal draws.
    log_s1, log_s2 : float
        Logs of the bridge weights ``s1``, ``s2`` (``s1 + s2 = 1``).
    maxiter : int
        Most iterations.
    tol : float
        Converged when ``|change of log r| <= tol * max(1, |log r|)``.
    log_r0 : float, optional
        Starting value; default the median of ``log_l1`` (the ratio at a typical draw).
    history : list, optional
        When given, the start and every iterate are appended to it.

    Returns
    -------
    log_r : float
        Last iterate.
    n_iter : int
    converged : bool
    last_step : float
        ``|change of log r|`` at the last iteration.

    Examples
    --------
    >>> l = np.full(10, 2.0)  # f = e^2 g: every bridge gives log r = 2 at once
    >>> log_r, n_iter, converged, _ = bridge_iterate(l, l, np.log(0.5), np.log(0.5))
    >>> round(log_r, 12), converged
    (2.0, True)
    """
    l1, l2 = np.ravel(log_l1), np.ravel(log_l2)
    finite = l1[np.isfinite(l1)]
    if log_r0 is None and finite.size == 0:
        raise ValueError("log_l1 has no finite value to start the iteration from")
    log_r = float(np.median(finite)) if log_r0 is None else float(log_r0)
    step, n_iter = np.inf, 0
    history = [] if history is None else history
    history.append(log_r)
    for n_iter in range(1, int(maxiter) + 1):
        num = l2 - np.logaddexp(log_s1 + l2, log_s2 + log_r)
        den = -np.logaddexp(log_s1 + l1, log_s2 + log_r)
        new = log_mean_exp(num) - log_mean_exp(den)
        step = abs(new - log_r)
        log_r = new
        history.append(log_r)
        if step <= tol * max(1.0, abs(log_r)):
            return log_r, n_iter, True, float(step)
    return log_r, n_iter, False, float(step)


def _relative_variance(log_v: np.ndarray) -> tuple[float, np.ndarray]:
    """``Var(v) / mean(v)^2`` of ``v = exp(log_v)`` and the shifted values."""
    v = np.exp(log_v - np.max(log_v))
    return float(np.var(v, ddof=1) / np.mean(v) ** 2), v


def bridge_relative_error(log_l1, log_l2, log_r, log_s1, log_s2) -> tuple[float, float]:
    """The two terms of Frühwirth-Schnatter's relative mean-squared error of ``r_hat``.

    Parameters
    ----------
    log_l1 : array_like, shape (chain, draw) or (draw,)
        ``log f - log g`` at the posterior draws, in chain order (for the ESS of ``f2``).
    log_l2 : array_like, shape (n2,)
        ``log f - log g`` at the proposal draws (independent).
    log_r : float
        The bridge estimate of ``log Z``.
    log_s1, log_s2 : float
        Logs of the bridge weights used by the iteration.

    Returns
    -------
    re2_proposal, re2_posterior : float
        ``Var_g(f1) / (N2 E_g(f1)^2)`` and ``Var_p(f2) / (ESS(f2) E_p(f2)^2)``; their sum
        approximates ``Var(log Z_hat)``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> re2_g, re2_p = bridge_relative_error(rng.normal(size=500), rng.normal(size=500),
    ...                                      0.0, np.log(0.5), np.log(0.5))
    >>> bool(0 < re2_g < 0.01 and 0 < re2_p < 0.01)
    True
    """
    l1 = _as_post(log_l1, "log_l1")
    u = np.ravel(log_l2) - log_r
    log_f1 = u - np.logaddexp(log_s1 + u, log_s2)
    log_f2 = -np.logaddexp(log_s1 + (l1 - log_r), log_s2)
    re2_prop, _ = _relative_variance(log_f1)
    rel_p, f2 = _relative_variance(log_f2)
    if rel_p == 0.0:
        return re2_prop / u.size, 0.0
    ess = ess_mean(f2.reshape(l1.shape))
    return re2_prop / u.size, float(rel_p / ess)


def posterior_n_eff(x) -> float:
    """Effective size of posterior draws for the bridge weights: the median ESS over coordinates.

    Parameters
    ----------
    x : array_like, shape (chain, draw, d)
        Posterior draws (in the space where the bridge runs).

    Returns
    -------
    float
        Median over the ``d`` coordinates of :func:`~pymc_evidence.estimators.mcse.ess_mean`,
        capped at ``chain * draw`` (antithetic NUTS draws can exceed it).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> n_eff = posterior_n_eff(rng.normal(size=(2, 500, 3)))   # 1000 independent draws
    >>> bool(800 < n_eff <= 1000)
    True
    """
    x = np.asarray(x, dtype=float)
    if x.ndim != 3:
        raise ValueError(f"x must be shaped (chain, draw, d); got {x.shape}")
    ess = [ess_mean(x[:, :, k]) for k in range(x.shape[2])]
    return float(min(np.nanmedian(ess), x.shape[0] * x.shape[1]))


def _single(l1, l2, n_eff, maxiter, tol, history=None):
    """Iterate and measure the error for one block of posterior draws."""
    n2 = l2.size
    log_s1 = float(np.log(n_eff) - np.log(n_eff + n2))
    log_s2 = float(np.log(n2) - np.log(n_eff + n2))
    log_r, n_iter, converged, step = bridge_iterate(
        l1, l2, log_s1, log_s2, maxiter=maxiter, tol=tol, history=history
    )
    re2_prop, re2_post = bridge_relative_error(l1, l2, log_r, log_s1, log_s2)
    info = {"n_iterations": float(n_iter), "converged": float(converged), "last_step": step}
    return log_r, re2_prop, re2_post, info


def _chain_agreement(per_chain, per_se, pooled) -> float:
    """Chi-square p-value of per-chain estimates around the pooled one (shared proposal
    draws make it conservative)."""
    ok = np.isfinite(per_se) & (per_se > 0)
    if per_chain.size < 2 or not np.all(ok):
        return float("nan")
    q = float(np.sum(((per_chain - pooled) / per_se) ** 2))
    return float(stats.chi2.sf(q, per_chain.size - 1))


def _messages(diag: dict, maxiter: int, tol: float) -> list[str]:
    out = []
    if not diag["converged"]:
        out.append(
            f"the bridge iteration did not converge in {maxiter} iterations (last change of "
            f"log Z {diag['last_step']:.2g} > tol {tol:.2g}): the estimate is the last iterate "
            "and may be off by more than its se; raise maxiter or check the proposal"
        )
    if diag["n_eff"] < N_EFF_MIN:
        out.append(
            f"only {diag['n_eff']:.0f} effective posterior draws in the bridge half: the "
            "standard error is unreliable; draw more or longer chains"
        )
    if diag.get("chain_disagreement", 1.0) < 0.01:
        out.append(
            "per-chain bridge estimates disagree beyond their standard errors (chi-square p = "
            f"{diag['chain_disagreement']:.2g}): chains may not have mixed"
        )
    return out


def bridge_log_evidence(
    log_f_post,
    log_g_post,
    log_f_prop,
    log_g_prop,
    *,
    n_eff: float | None = None,
    maxiter: int = 1000,
    tol: float = 1e-10,
    method: str = "bridge",
    emit_warnings: bool = True,
    history: list | None = None,
) -> EvidenceEstimate:
    """Log marginal likelihood by the iterative optimal bridge, with its standard error.

    Parameters
    ----------
    log_f_post, log_g_post : array_like, shape (chain, draw) or (draw,)
        Unnormalized target and normalized proposal log densities at the posterior draws.
    log_f_prop, log_g_prop : array_like, shape (n2,)
        The same at independent draws from the proposal. ``log f = -inf`` is a zero density
        (allowed); nan or +inf anywhere raises ``ValueError``.
    n_eff : float, optional
        Effective number of posterior draws, replacing ``N1`` in ``s1``/``s2`` (see
        :func:`posterior_n_eff`); default ``N1`` (independent draws).
    maxiter, tol : int, float
        See :func:`bridge_iterate`.
    method : str
        Name recorded in the estimate.
    emit_warnings : bool
        Also emit the returned warnings (as :class:`~.diagnostics.ConvergenceWarning`).
    history : list, optional
        When given, the iterates of ``log Z`` (start first) are appended to it.

    Returns
    -------
    EvidenceEstimate
        ``se = sqrt(re2_proposal + re2_posterior)``; per-chain values use each chain's
        draws with all proposal draws (and ``n_eff`` in proportion). Diagnostics:
        ``converged`` (1/0), ``n_iterations``, ``last_step``, ``n_eff``, ``n_posterior``,
        ``n_proposal``, ``re2_proposal``, ``re2_posterior``, ``chain_disagreement``. A run
        that does not converge returns its last iterate with ``converged = 0`` and a
        warning, never silently.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> xp, xg = rng.normal(0.3, 1.0, 2000), rng.normal(0.0, 1.5, 2000)
    >>> log_f = lambda x: 2.0 + stats.norm.logpdf(x, 0.3, 1.0)   # log Z = 2
    >>> log_g = lambda x: stats.norm.logpdf(x, 0.0, 1.5)
    >>> est = bridge_log_evidence(log_f(xp), log_g(xp), log_f(xg), log_g(xg))
    >>> bool(abs(est.log_z - 2.0) < 4 * est.se), bool(est.se < 0.03)
    (True, True)
    """
    l1 = _as_post(log_f_post, "log_f_post") - _as_post(log_g_post, "log_g_post")
    l2 = np.ravel(np.asarray(log_f_prop, float) - np.asarray(log_g_prop, float))
    _check_finite(l1, "log_f_post - log_g_post")
    _check_finite(l2, "log_f_prop - log_g_prop")
    n1 = l1.size
    n_eff = float(n1 if n_eff is None else n_eff)
    if not 0 < n_eff <= n1 or l2.size < 2:
        raise ValueError(f"need 0 < n_eff <= {n1} and >= 2 proposal draws (n_eff={n_eff})")
    log_r, re2_prop, re2_post, info = _single(l1, l2, n_eff, maxiter, tol, history)
    se = float(np.sqrt(re2_prop + re2_post))
    per = [_single(c[None], l2, n_eff * c.size / n1, maxiter, tol) for c in l1]
    per_z = np.array([p[0] for p in per])
    per_se = np.sqrt([p[1] + p[2] for p in per])
    diag = {
        **info,
        "n_eff": n_eff,
        "n_posterior": float(n1),
        "n_proposal": float(l2.size),
        "re2_proposal": re2_prop,
        "re2_posterior": re2_post,
        "chain_disagreement": _chain_agreement(per_z, per_se, log_r),
    }
    messages = tagged(_messages(diag, maxiter, tol), ConvergenceWarning)
    if emit_warnings:  # the argument hides logspace.emit_warnings
        logspace.emit_warnings(messages)
    return EvidenceEstimate(log_r, se, method, per_z, per_se, diag, tuple(messages))


def combine_bridge_runs(runs, *, method: str = "bridge") -> EvidenceEstimate:
    """Pool repetitions that share the posterior draws but redraw the proposal draws.

    The pooled ``log_z`` is the mean over runs. Its variance is the posterior term, which
    the runs share and averaging does not reduce, plus the proposal term over ``R`` runs,
    taking for the latter the larger of the analytic value and the empirical variance of the
    run estimates::

        se^2 = mean(re2_posterior) + max(mean(re2_proposal), var(log_z_runs)) / R

    Parameters
    ----------
    runs : sequence of EvidenceEstimate
        From :func:`bridge_log_evidence` (needs ``re2_proposal``/``re2_posterior``).
    method : str

    Returns
    -------
    EvidenceEstimate
        Per-run values in ``per_chain_log_z``/``per_chain_se`` (a ``run`` dimension);
        diagnostics: the worst ``converged`` and ``chain_disagreement``, the largest
        ``n_iterations``, ``run_sd`` (empirical sd of the run estimates) and the means of
        the others. Warnings of all
        runs, without repeats.

    Examples
    --------
    >>> runs = [EvidenceEstimate(v, 0.05, "bridge", diagnostics={"re2_proposal": 0.0016,
    ...         "re2_posterior": 0.0009, "converged": 1.0, "n_iterations": 5.0})
    ...         for v in (-1.02, -0.98, -1.0)]
    >>> est = combine_bridge_runs(runs)
    >>> round(est.log_z, 6), round(est.se, 4), est.n_chains
    (-1.0, 0.0379, 3)
    """
    runs = list(runs)
    if not runs:
        raise ValueError("no runs to combine")
    log_z = np.array([r.log_z for r in runs])
    se = np.array([r.se for r in runs])
    keys = sorted(set().union(*(r.diagnostics for r in runs)))
    diag = {k: float(np.mean([r.diagnostics.get(k, np.nan) for r in runs])) for k in keys}
    diag["converged"] = float(min(r.diagnostics.get("converged", 1.0) for r in runs))
    diag["n_iterations"] = float(max(r.diagnostics.get("n_iterations", 0.0) for r in runs))
    p_chain = [r.diagnostics.get("chain_disagreement", np.nan) for r in runs]
    if not np.all(np.isnan(p_chain)):
        diag["chain_disagreement"] = float(np.nanmin(p_chain))
    n = len(runs)
    spread = float(np.var(log_z, ddof=1)) if n > 1 else 0.0
    diag["run_sd"] = float(np.sqrt(spread))
    total = diag["re2_posterior"] + max(diag["re2_proposal"], spread) / n
    messages = tuple(dict.fromkeys(m for r in runs for m in r.warnings))
    return EvidenceEstimate(
        float(np.mean(log_z)), float(np.sqrt(total)), method, log_z, se, diag, messages
    )
