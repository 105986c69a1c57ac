"""Sequential Monte Carlo evidence: resample-move and ARM (Fraccaro, Paquet & Winther).

A run of resample-move SMC on a sequence ``p_0, ..., p_S`` (here the tempered path
``pi_beta``) estimates each ratio ``Z_{n+1} / Z_n`` by importance sampling with the current
weighted particles, ``log Z_{n+1}/Z_n ~ log sum_r w~_r W_r`` (normalised incoming weights
``w~``, incremental weights ``W``), and sums the logs (eq. 5 of the paper). ``Zhat`` is
unbiased; ``log Zhat`` is biased low (Jensen), so independent runs are combined on the
``Z`` scale.

Everything here is plain numpy/scipy on arrays of log weights; nothing knows about PyMC or
xarray. Non-finite rule: a ``NaN`` log weight is an error here; the engines map a
``NaN`` incremental log weight to ``-inf`` (weight zero) before calling these functions.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from .diagnostics import ConvergenceWarning, WarningMessage, WeightWarning
from .logspace import (
    checked_log_weights,
    emit_warnings,
    kish_ess,
    log_mean_exp_se,
    logsumexp,
    normalize_log_weights,
)
from .record import EvidenceEstimate

__all__ = [
    "PROXY_DOF",
    "conditional_ess",
    "few_runs_factor",
    "increment_variance",
    "log_increment",
    "merge_log_weights",
    "next_beta",
    "smc_log_evidence",
]

#: Degrees of freedom the i.i.d. variance proxy counts for when it is pooled with the runs'
#: spread into the se: with the settled HMC step the proxy's se is close to the spread's on
#: average, and pooled with 2 dof ±2 se covered the truth closer to 95 % than the spread
#: alone or a t factor on it (measured in :doc:`/hard_models`, "The default over ten
#: seeds").
PROXY_DOF = 2.0
#: Runs whose importance weights ``Z_r / sum Z`` have a Kish ESS below this fraction of the
#: number of runs trigger a warning: the estimate then rests on one or two runs.
RUN_ESS_MIN_FRACTION = 0.5


def log_increment(log_w, log_incr) -> float:
    """``log sum_r w~_r W_r``: the estimate of ``log Z_{n+1} / Z_n`` from one stage.

    Parameters
    ----------
    log_w : array_like, shape (R,)
        Log incoming weights (any normalisation).
    log_incr : array_like, shape (R,)
        Log incremental weights ``log W_r`` (``-inf`` allowed).

    Examples
    --------
    >>> round(log_increment(np.zeros(2), np.log([1.0, 3.0])), 6)  # log((1 + 3) / 2)
    0.693147
    """
    lw, li = checked_log_weights(log_w), np.asarray(log_incr, dtype=float).ravel()
    if li.shape != lw.shape or np.any(np.isnan(li)):
        raise ValueError("log_incr must match log_w in shape and hold no NaN")
    return float(logsumexp(lw + li) - logsumexp(lw))


def conditional_ess(log_w, log_incr) -> float:
    """Conditional ESS ``R (sum w~ W)^2 / sum w~ W^2`` (Zhou, Johansen & Aston 2016).

    Between 0 and ``R``. With equal incoming weights it is the Kish ESS of the new weights,
    and ``R / CESS - 1`` is the weighted squared coefficient of variation ``v_n`` of ``W``
    that drives Theorem 1 of Fraccaro et al. (``gamma = CESS / R = 1 / (1 + v_n)``).

    Examples
    --------
    >>> conditional_ess(np.zeros(4), np.zeros(4))
    4.0
    >>> conditional_ess(np.zeros(4), [0.0, 0.0, -np.inf, -np.inf])
    2.0
    """
    lw = normalize_log_weights(log_w)
    li = np.asarray(log_incr, dtype=float).ravel()
    if li.shape != lw.shape or np.any(np.isnan(li)):
        raise ValueError("log_incr must match log_w in shape and hold no NaN")
    if not np.any(np.isfinite(lw + li)):
        return 0.0
    log_cess = np.log(lw.size) + 2.0 * logsumexp(lw + li) - logsumexp(lw + 2.0 * li)
    return float(np.exp(log_cess))


def next_beta(beta: float, log_ratio, log_w, target: float, n_bisect: int = 60) -> float:
    """The next inverse temperature: bisection so that ``CESS / R`` equals ``target``.

    On the geometric path the incremental weight from ``beta`` to ``beta + delta`` is
    ``W = exp(delta * (log f - log q))``; ``CESS(delta)`` decreases in ``delta``.

    Parameters
    ----------
    beta : float
        Current inverse temperature in ``[0, 1)``.
    log_ratio : array_like, shape (R,)
        ``log f - log q`` at each particle (``-inf`` allowed).
    log_w : array_like, shape (R,)
        Current log weights.
    target : float
        Target conditional ESS fraction in ``(0, 1)``.
    n_bisect : int
        Bisection steps (the bracket shrinks by ``2**-n_bisect``).

    Returns
    -------
    float
        ``1.0`` if the whole remaining step keeps ``CESS / R >= target``; otherwise the
        largest bracketed ``beta + delta`` with ``CESS / R >= target``. If even the smallest
        bracketed step falls below ``target`` (particles with ``log f = -inf`` drop out at
        any ``delta > 0``), that smallest step is returned, so the path always advances.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> log_ratio = rng.normal(size=2000)
    >>> b = next_beta(0.0, log_ratio, np.zeros(2000), target=0.5)
    >>> round(conditional_ess(np.zeros(2000), b * log_ratio) / 2000, 6)
    0.5
    """
    if not 0.0 < target < 1.0:
        raise ValueError(f"target must be in (0, 1), got {target}")
    if not 0.0 <= beta < 1.0:
        raise ValueError(f"beta must be in [0, 1), got {beta}")
    lr = np.asarray(log_ratio, dtype=float).ravel()
    if np.any(np.isnan(lr)):
        raise ValueError("log_ratio holds NaN")
    n = lr.size

    def fraction(delta):
        with np.errstate(invalid="ignore"):
            return conditional_ess(log_w, np.where(lr == -np.inf, -np.inf, delta * lr)) / n

    hi = 1.0 - beta
    if fraction(hi) >= target:
        return 1.0
    lo = 0.0
    for _ in range(int(n_bisect)):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if fraction(mid) >= target else (lo, mid)
    return float(beta + (lo if lo > 0.0 else hi))


def merge_log_weights(log_weight_sets) -> list[np.ndarray]:
    """Proposition 1: merge weighted particle sets that all target ``p_n``.

    Each set's weights are normalised and scaled by ``alpha_k = R_k / sum_j R_j`` (its
    share of the particle count), so the union targets ``p_n`` and sums to one.

    Parameters
    ----------
    log_weight_sets : sequence of array_like
        Log weights of each set (any normalisation).

    Returns
    -------
    list of ndarray
        The merged log weights of each set, in the same order; concatenate them.

    Examples
    --------
    >>> a, b = merge_log_weights([np.zeros(2), [0.0, np.log(3.0), -np.inf, -np.inf]])
    >>> np.exp(a).round(4).tolist(), np.exp(b).round(4).tolist()
    ([0.1667, 0.1667], [0.1667, 0.5, 0.0, 0.0])
    """
    sets = [normalize_log_weights(lw) for lw in log_weight_sets]
    total = sum(lw.size for lw in sets)
    return [lw + np.log(lw.size / total) for lw in sets]


def increment_variance(log_w, log_incr) -> float:
    """The delta-method variance of :func:`log_increment` for independent particles,
    ``sum_r (p_r - w~_r)^2`` with ``p = w~ W / sum w~ W`` the new normalised weights.

    ``log sum_r w~_r W_r`` is a ratio estimator (``sum u W / sum u`` for unnormalised ``u``),
    so its log has variance ``sum_r w~_r^2 (W_r / Zhat - 1)^2``, which is the expression
    above. With equal incoming weights it is ``(R / ESS - 1) / R``, the term of Theorem 1 of
    Fraccaro et al. Unlike ``(R / CESS - 1) / R`` it stays bounded (by 2) where a particle of
    negligible incoming weight meets a huge increment: the conditional ESS then collapses
    while the estimate hardly moves. Summed over the stages it is the run's i.i.d. variance
    proxy; resampling correlations and imperfect mixing make the true variance larger.

    Examples
    --------
    >>> round(increment_variance(np.zeros(4), np.log([1.0, 1.0, 1.0, 3.0])), 6)  # ESS 3
    0.083333
    >>> log_w, log_incr = [-100.0, 0.0, 0.0, 0.0], [60.0, 0.0, 0.0, 0.0]
    >>> float(conditional_ess(log_w, log_incr)) < 1e-7, increment_variance(log_w, log_incr) < 1e-15
    (True, True)
    """
    lw = normalize_log_weights(log_w)
    li = np.asarray(log_incr, dtype=float).ravel()
    if li.shape != lw.shape or np.any(np.isnan(li)):
        raise ValueError("log_incr must match log_w in shape and hold no NaN")
    if not np.any(np.isfinite(lw + li)):
        return float("nan")
    p = np.exp(normalize_log_weights(lw + li))
    return float(np.sum((p - np.exp(lw)) ** 2))


def few_runs_factor(n_runs: int, prior_dof: float = 0.0) -> float:
    """``t_nu(0.975) / z(0.975)`` with ``nu = n_runs - 1 + prior_dof``: how much wider the
    95 % interval of a mean is when its variance is estimated with ``nu`` degrees of
    freedom (``NaN`` without any).

    An se from the spread of a few independent estimates is itself uncertain; multiplying
    it by this factor makes ``estimate ± 1.96 se`` the Student-t interval, so that an se
    read as a normal one keeps its coverage.

    Examples
    --------
    >>> round(few_runs_factor(4), 3), round(few_runs_factor(4, PROXY_DOF), 3)
    (1.624, 1.312)
    """
    nu = n_runs - 1 + prior_dof
    if nu <= 0:
        return float("nan")
    return float(stats.t.ppf(0.975, nu) / stats.norm.ppf(0.975))


def _pooled_se(spread_se: float, proxy_se: float, n_runs: int) -> tuple[float, float]:
    """The spread's and the proxy's variance pooled (``n_runs - 1`` and :data:`PROXY_DOF`
    degrees of freedom) and widened by :func:`few_runs_factor`; ``(se, factor)``."""
    if n_runs < 2:
        return proxy_se, float("nan")
    nu = n_runs - 1 + PROXY_DOF
    pooled = np.sqrt(((n_runs - 1) * spread_se**2 + PROXY_DOF * proxy_se**2) / nu)
    factor = few_runs_factor(n_runs, PROXY_DOF)
    return float(max(pooled * factor, proxy_se)), factor


def _run_messages(log_z: np.ndarray, n_runs: int) -> list[WarningMessage]:
    out = []
    if n_runs < 2:
        text = (
            "a single SMC run gives no spread over runs: the standard error is only the"
            " i.i.d. variance proxy (a lower bound), or NaN without one; use n_runs >= 2"
        )
        out.append(WarningMessage(text, ConvergenceWarning))
    if np.any(log_z == -np.inf):
        text = f"{int(np.sum(log_z == -np.inf))} run(s) ended with every weight zero (log Z = -inf)"
        out.append(WarningMessage(text, WeightWarning))
    ess = kish_ess(log_z)
    if n_runs >= 2 and ess < RUN_ESS_MIN_FRACTION * n_runs:
        text = (
            f"the runs disagree: Kish ESS of the run weights Z_r is {ess:.1f} of {n_runs}, so "
            "the estimate rests on one or two runs and its se is unreliable; use more "
            "particles, more moves per stage or a finer schedule"
        )
        out.append(WarningMessage(text, WeightWarning))
    return out


def smc_log_evidence(
    log_z_runs,
    variance_proxy=None,
    *,
    method: str = "smc",
    diagnostics: dict | None = None,
) -> EvidenceEstimate:
    """Combine independent SMC runs: ``log Zhat = log mean_r exp(log Zhat_r)``.

    Each run's ``Zhat_r`` is unbiased for ``Z``, so their mean is too; its log is biased
    low by about ``se**2 / 2``.

    **Which se the record carries**: the spread over independent runs, by the delta
    method, ``spread_se = sd_r(Zhat_r / Zhat) / sqrt(n_runs)`` (``NaN`` for a single run),
    and the se that the i.i.d. variance proxy of :func:`increment_variance` implies,
    ``proxy_se = sqrt(mean proxy / n_runs)``. The spread includes every source of error
    within a run (resampling correlation, imperfect mixing) but with few runs it is itself
    noisy: with 4 runs the studentised error is a ``t`` with 3 degrees of freedom, and ±2
    ``spread_se`` covers the truth only 86 % of the time (its coverage over seeds is measured
    in :doc:`/methods`, "Linked importance sampling, SMC and bridge sampling"). The proxy
    ignores the correlation that resampling and moves leave, so it
    can be too small, but never by chance. So the two variances are pooled, the spread with
    ``n_runs - 1`` degrees of freedom and the proxy with :data:`PROXY_DOF`, the result is
    widened by :func:`few_runs_factor` for that many degrees of freedom (1.31 for 4 runs,
    1.62 for 2) and floored by ``proxy_se``. Without a proxy the spread alone is widened
    for ``n_runs - 1`` degrees of freedom. The parts are kept in the diagnostics
    (``spread_se``, ``proxy_se``, ``few_runs_factor``); the proxy per run is
    ``per_chain_se``.

    Parameters
    ----------
    log_z_runs : array_like, shape (n_runs,)
        ``log Zhat`` of each independent run (``-inf`` allowed, ``NaN`` is an error).
    variance_proxy : array_like, shape (n_runs,), optional
        Each run's i.i.d. variance proxy of ``log Zhat_r``.
    method : str, default "smc"
        Name stored in the record (the calling method's).
    diagnostics : dict, optional
        Extra scalar diagnostics to store with the standard ones.

    Returns
    -------
    EvidenceEstimate
        Diagnostics: ``n_runs``, ``sd_log_z_runs``, ``run_ess`` (Kish ESS of the ``Zhat_r``),
        ``spread_se``, ``few_runs_factor`` and with a proxy
        ``proxy_se = sqrt(mean proxy / n_runs)``.

    Examples
    --------
    >>> est = smc_log_evidence([-3.01, -2.99, -3.02, -2.98], [4e-4] * 4)
    >>> round(est.log_z, 3), round(est.diagnostics["spread_se"], 4), round(est.se, 4)
    (-3.0, 0.0091, 0.0124)
    """
    log_z = np.asarray(log_z_runs, dtype=float).ravel()
    if log_z.size == 0 or np.any(np.isnan(log_z)) or np.all(log_z == -np.inf):
        raise ValueError("log_z_runs must be non-empty, without NaN, with a finite value")
    n = log_z.size
    value, spread_se = log_mean_exp_se(log_z)
    finite = log_z[np.isfinite(log_z)]
    diag = {
        "n_runs": float(n),
        "sd_log_z_runs": float(np.std(finite, ddof=1)) if finite.size > 1 else np.nan,
        "run_ess": kish_ess(log_z),
        "spread_se": spread_se,
        "few_runs_factor": few_runs_factor(n),
    }
    se = spread_se * diag["few_runs_factor"]
    per_run_se = np.full(n, np.nan)
    if variance_proxy is not None:
        proxy = np.asarray(variance_proxy, dtype=float).ravel()
        if proxy.shape != log_z.shape:
            raise ValueError(f"variance_proxy has {proxy.size} values for {n} runs")
        proxy = np.maximum(proxy, 0.0)  # rounding: -1e-17 where every weight is equal
        per_run_se = np.sqrt(proxy)
        diag["proxy_se"] = float(np.sqrt(np.mean(proxy) / n))
        se, diag["few_runs_factor"] = _pooled_se(spread_se, diag["proxy_se"], n)
    diag.update(diagnostics or {})
    messages = emit_warnings(_run_messages(log_z, n))
    return EvidenceEstimate(
        log_z=value,
        se=se,
        method=method,
        per_chain_log_z=log_z,
        per_chain_se=per_run_se,
        diagnostics=diag,
        warnings=messages,
    )
