"""Linked importance sampling (LIS) and bridged AIS / LIS estimators (Neal 2005).

Pure numpy/scipy: arrays of log densities or log run estimates in, an
:class:`~.record.EvidenceEstimate` out.

Setting. A path of unnormalised densities ``p_0, ..., p_n`` from the normalised base
(``Z_0 = 1``) to the model's joint density (``Z_n = Z``). On the geometric path
``log p_beta = beta * log f + (1 - beta) * log q = log q + beta * u`` with
``u = log f - log q``, so every ratio of two path densities at a state depends on ``u`` only.

One LIS run (forward) draws a chain of ``K_j + 1`` states for every distribution ``j``;
consecutive chains share a link state chosen from chain ``j`` with probability proportional
to ``p_{j*j+1} / p_j`` (the bridge ``p_{j*j+1}``, geometric ``sqrt(p_j p_{j+1})`` by default).
Its estimate (Neal's eq. 9)

``r = prod_j [mean_k p_{j*j+1} / p_j (x_{j,k})] / [mean_k p_{j*j+1} / p_{j+1} (x_{j+1,k})]``

is exactly unbiased for ``Z_n / Z_0``, whatever the mixing of the chains. A reverse run (the
same procedure on the reversed sequence, started from posterior draws) is unbiased for
``1 / Z``. The two are combined by the optimal top-level bridge (bridged LIS; with AIS run
weights, bridged AIS).

Conventions: every function takes **log run estimates**, never works. ``log_r_forward``
estimates ``log Z`` run by run (``E[exp(log_r_forward)] = Z``); ``log_r_reverse`` estimates
``log(1 / Z)`` (``E[exp(log_r_reverse)] = 1 / Z``). A run whose estimate is exactly zero
has ``log r = -inf``; ``nan`` is never accepted.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .diagnostics import WeightWarning
from .logspace import emit_warnings, kish_ess, log_mean_exp, log_mean_exp_se, nan_as_zero_weight
from .noneq import bar_log_evidence
from .record import EvidenceEstimate

__all__ = [
    "bridged_log_evidence",
    "lis_log_evidence",
    "lis_log_factors",
    "log_bridge_ratios",
    "reverse_lis_log_evidence",
]

#: Bridges :func:`log_bridge_ratios` knows.
BRIDGES = ("geometric", "optimal")
#: Warn when the Kish ESS of the run estimates is below this fraction of the runs ...
ESS_MIN_FRACTION = 0.1
#: ... or below this absolute number.
ESS_MIN = 5.0


def log_bridge_ratios(
    u,
    beta_from: float,
    beta_to: float,
    *,
    bridge: str = "geometric",
    log_ratio_guess: float = 0.0,
    log_size_ratio: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Log bridge ratios ``log p_*/p_from`` and ``log p_*/p_to`` on the geometric path.

    With ``log p_beta = log q + beta * u`` and ``d = beta_to - beta_from`` (either sign):

    * ``"geometric"``: ``p_* = sqrt(p_from p_to)``, so the ratios are ``+d u / 2`` and
      ``-d u / 2``;
    * ``"optimal"`` (Bennett, Meng & Wong; Neal's eq. 6 with his LIS sample sizes):
      ``p_* = p_from p_to / (exp(g + c) p_from + p_to)`` with ``g = log_ratio_guess`` a
      guess of ``log(Z_to / Z_from)`` and ``c = log_size_ratio = log((K_from+1)/(K_to+1))``.
      The guess must be fixed before the run (e.g. from a pilot); a wrong guess costs
      efficiency, never unbiasedness.

    Parameters
    ----------
    u : array_like
        ``log f - log q`` at the states (any shape). ``nan`` is read as ``-inf`` (``f = 0``).
    beta_from, beta_to : float
        The two path positions the bridge links (in the direction of the run).
    bridge : {"geometric", "optimal"}
    log_ratio_guess, log_size_ratio : float
        Only for ``bridge="optimal"``.

    Returns
    -------
    to_from, to_to : ndarray
        ``log p_*/p_from`` (numerator weights, over the ``from`` chain) and ``log p_*/p_to``
        (denominator weights, over the ``to`` chain), both at every state of ``u``.

    Examples
    --------
    >>> a, b = log_bridge_ratios([2.0], 0.25, 0.75)
    >>> float(a[0]), float(b[0])
    (0.5, -0.5)
    """
    if bridge not in BRIDGES:
        raise ValueError(f"bridge must be one of {BRIDGES}, got {bridge!r}")
    u = np.asarray(u, dtype=float)
    u = nan_as_zero_weight(u)
    d = float(beta_to) - float(beta_from)
    if bridge == "geometric":
        with np.errstate(invalid="ignore"):
            half = 0.5 * d * u
        half = np.where(np.isnan(half), 0.0, half)  # d == 0 with infinite u: p_from == p_to
        return half, -half
    # log p_from = beta_from * u, log p_to = beta_to * u (the common log q cancels).
    with np.errstate(invalid="ignore"):
        lp_from, lp_to = beta_from * u, beta_to * u
        log_den = np.logaddexp(log_ratio_guess + log_size_ratio + lp_from, lp_to)
        to_from, to_to = lp_to - log_den, lp_from - log_den
    return nan_as_zero_weight(to_from), nan_as_zero_weight(to_to)


def lis_log_factors(log_num, log_den) -> np.ndarray:
    """Per-run, per-link log factors of Neal's LIS estimate (eq. 9).

    Parameters
    ----------
    log_num : sequence of n arrays, shape (run, K_j + 1)
        For link ``j``: ``log p_{j*j+1} / p_j`` at the states of chain ``j``.
    log_den : sequence of n arrays, shape (run, K_{j+1} + 1)
        For link ``j``: ``log p_{j*j+1} / p_{j+1}`` at the states of chain ``j + 1``
        (which contains the link state).

    Returns
    -------
    ndarray, shape (run, n)
        ``log mean_k exp(log_num[j]) - log mean_k exp(log_den[j])``; ``-inf`` where the
        numerator is zero (no state of chain ``j`` in the bridge's support: that run's
        estimate is exactly zero). Their row sums are the per-run ``log r``.

    Raises
    ------
    ValueError
        For ``nan`` or ``+inf`` weights, mismatched run counts, or a zero denominator with a
        non-zero numerator (impossible when chain ``j + 1`` holds the link, so it flags inputs
        that do not come from one LIS run).

    Examples
    --------
    >>> num = [np.log([[0.5, 1.5]])]          # chain 0: mean ratio 1.0
    >>> den = [np.log([[0.25, 0.25, 0.25]])]  # chain 1: mean ratio 0.25
    >>> lis_log_factors(num, den).round(6).tolist()
    [[1.386294]]
    """
    if len(log_num) != len(log_den) or len(log_num) == 0:
        raise ValueError("log_num and log_den must hold one array per link (n >= 1)")
    factors = []
    for j, (num, den) in enumerate(zip(log_num, log_den, strict=True)):
        num, den = np.atleast_2d(np.asarray(num, float)), np.atleast_2d(np.asarray(den, float))
        if num.shape[0] != den.shape[0]:
            raise ValueError(f"link {j}: {num.shape[0]} runs in log_num, {den.shape[0]} in log_den")
        if np.any(np.isnan(num) | (num == np.inf)) or np.any(np.isnan(den) | (den == np.inf)):
            raise ValueError(f"link {j}: log bridge ratios must not be nan or +inf")
        top, bottom = log_mean_exp(num, axis=1), log_mean_exp(den, axis=1)
        if np.any(np.isfinite(top) & ~np.isfinite(bottom)):
            raise ValueError(f"link {j}: zero denominator with a non-zero numerator")
        with np.errstate(invalid="ignore"):
            factors.append(np.where(np.isfinite(top), top - bottom, -np.inf))
    return np.stack(factors, axis=1)


def _check_log_r(log_r, name: str) -> np.ndarray:
    log_r = np.asarray(log_r, dtype=float)
    if log_r.ndim != 1 or log_r.size < 2:
        raise ValueError(f"{name} must be a 1-D array of >= 2 run estimates, got {log_r.shape}")
    if np.any(np.isnan(log_r) | (log_r == np.inf)):
        raise ValueError(f"{name} must not contain nan or +inf")
    if not np.any(np.isfinite(log_r)):
        raise ValueError(
            f"every run in {name} gave a zero estimate (log r = -inf): the chains never reached "
            "the bridges' support; use more or closer intermediate distributions"
        )
    return log_r


def _mean_runs(log_r: np.ndarray, label: str) -> tuple[float, float, dict, list[str]]:
    """Log of the mean of the unbiased run estimates, delta-method se, diagnostics, warnings."""
    n = log_r.size
    value, se = log_mean_exp_se(log_r)
    finite = log_r[np.isfinite(log_r)]
    ess = kish_ess(log_r)
    diag = {
        "n_runs": float(n),
        "n_zero_runs": float(n - finite.size),
        "ess": ess,
        "mean_log_r": float(np.mean(log_r)),
        "sd_log_r": float(np.std(finite, ddof=1)) if finite.size > 1 else float("nan"),
    }
    messages = []
    if ess < ESS_MIN_FRACTION * n or ess < ESS_MIN:
        messages.append(
            f"Kish ESS of the {label} run estimates is {ess:.1f} of {n} runs (below 5 or 10%): "
            "the mean rests on a few runs, so the estimate is probably biased low and its se "
            "unreliable; lengthen the chains, add intermediate distributions or bridge with "
            "reverse runs"
        )
    if finite.size < n:
        messages.append(
            f"{n - finite.size} of {n} {label} runs gave a zero estimate (a chain never reached "
            "its bridge's support): adjacent distributions barely overlap"
        )
    return value, se, diag, messages


def lis_log_evidence(log_r_runs, *, method: str = "lis") -> EvidenceEstimate:
    """Log evidence from independent forward LIS (or AIS) runs, ``log mean_i r_i``.

    Each run's ``r_i`` is unbiased for ``Z``, so their mean is too; ``log`` of it is biased
    low (Jensen) when the runs' spread is large. The se is the delta method from the spread
    over runs, ``sd(r_i / rbar) / sqrt(M)``, and is unreliable when a few runs dominate
    (then the ESS warning fires).

    Parameters
    ----------
    log_r_runs : array_like, shape (run,)
        Per-run ``log r_i`` (``-inf`` for a run whose estimate is zero; it counts as zero).
    method : str, default "lis"
        Label of the record (e.g. ``"ais"`` when the runs are AIS weights).

    Returns
    -------
    EvidenceEstimate
        ``per_chain_log_z`` holds the runs' ``log r_i``. Diagnostics: ``n_runs``,
        ``n_zero_runs``, ``ess`` (Kish ESS of the ``r_i``), ``mean_log_r`` (a stochastic
        lower bound on ``log Z``), ``sd_log_r``. Warns (:class:`EvidenceWarning`) when the
        ESS is below 10% of the runs or below 5, or when some runs gave zero.

    Examples
    --------
    >>> est = lis_log_evidence(np.log([0.5, 1.5, 1.0, 1.0, 0.5, 1.5]))
    >>> round(est.log_z, 12), round(est.se, 4)
    (0.0, 0.1826)
    """
    log_r = _check_log_r(log_r_runs, "log_r_runs")
    value, se, diag, messages = _mean_runs(log_r, "forward")
    return EvidenceEstimate(
        value, se, method, log_r, np.empty(0), diag, emit_warnings(messages, WeightWarning)
    )


def reverse_lis_log_evidence(log_r_reverse, *, method: str = "reverse_lis") -> EvidenceEstimate:
    """Log evidence from reverse LIS (or AIS) runs: ``log Z = -log mean_i rbar_i``.

    Each ``rbar_i`` is unbiased for ``1 / Z`` (runs started from exact posterior draws), so
    this estimate is biased high. The se is the delta method, as in
    :func:`lis_log_evidence`.

    Parameters
    ----------
    log_r_reverse : array_like, shape (run,)
        Per-run ``log rbar_i``, estimates of ``log(1 / Z)``.
    method : str, default "reverse_lis"

    Returns
    -------
    EvidenceEstimate
        As :func:`lis_log_evidence`; ``per_chain_log_z`` holds ``-log rbar_i`` and
        ``mean_log_r`` is the mean of ``log rbar_i`` (``-mean_log_r`` is a stochastic upper
        bound on ``log Z``).

    Examples
    --------
    >>> round(reverse_lis_log_evidence(np.full(6, -2.0)).log_z, 12)
    2.0
    """
    log_r = _check_log_r(log_r_reverse, "log_r_reverse")
    value, se, diag, messages = _mean_runs(log_r, "reverse")
    return EvidenceEstimate(
        -value, se, method, -log_r, np.empty(0), diag, emit_warnings(messages, WeightWarning)
    )


def bridged_log_evidence(
    log_r_forward, log_r_reverse, *, method: str = "bridged_lis", tol: float = 1e-10
) -> EvidenceEstimate:
    """Bridged LIS / bridged AIS: the optimal top-level bridge over forward and reverse runs.

    With ``M`` forward estimates ``r_i`` (unbiased for ``Z``) and ``Mbar`` reverse estimates
    ``rbar_j`` (unbiased for ``1 / Z``), Neal's (2005, sec. 2.3) iterated optimal bridge is
    the fixed point ``r`` of

    ``r = [mean_i 1 / (r (M/Mbar) / r_i + 1)] / [mean_j 1 / (r (M/Mbar) + 1 / rbar_j)]``.

    Multiplying out, with ``l = log r``, ``m = log(M / Mbar)``, ``W_f,i = -log r_i``,
    ``W_r,j = -log rbar_j`` and ``s`` the logistic function, this is exactly Bennett's
    equation ``sum_i s(-(m + W_f,i + l)) = sum_j s(m - W_r,j + l)``, the root solved (in log
    space, bracketed, :func:`scipy.optimize.brentq`) by
    :func:`~.noneq.bar_log_evidence`. So this function calls it with
    ``work_f = -log_r_forward`` and ``work_r = -log_r_reverse``: those are that module's
    forward works and *physical* reverse works (``E[exp(-W_r)] = 1 / Z``), i.e. **minus**
    the reverse "works" of :func:`~pymc_evidence.engines.run_reverse_ais`. The se is BAR's
    asymptotic se ``sqrt((1/M + 1/Mbar)(1/overlap - 1))``; the extended-space argument of
    Neal's section 2.2 makes forward and reverse runs satisfy Crooks' relation, which is all
    BAR needs. The kernels must be the same in both directions.

    Parameters
    ----------
    log_r_forward : array_like, shape (M,)
        Per-run log estimates of ``log Z`` (forward LIS or AIS runs).
    log_r_reverse : array_like, shape (Mbar,)
        Per-run log estimates of ``log(1 / Z)`` (reverse runs from posterior draws).
    method : str, default "bridged_lis"
        Label of the record (``"bridged_ais"`` for AIS runs).
    tol : float
        Absolute tolerance on ``log Z``.

    Returns
    -------
    EvidenceEstimate
        BAR's record relabelled, with the unbridged estimates added to the diagnostics as
        ``log_z_forward`` and ``log_z_reverse`` (BAR's ``log_z_ais``, ``log_z_rais``).

    Raises
    ------
    ValueError
        If a run's estimate is zero (``log r = -inf``): the BAR solver takes finite works
        only, and dropping such runs would bias the bridge. Use :func:`lis_log_evidence`.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> fwd = rng.normal(1.0 - 0.5, 1.0, 400)   # log Z = 1, unbiased log-normal runs
    >>> rev = rng.normal(-1.0 - 0.5, 1.0, 400)
    >>> est = bridged_log_evidence(fwd, rev)
    >>> bool(abs(est.log_z - 1.0) < 4 * est.se)
    True
    """
    fwd = _check_log_r(log_r_forward, "log_r_forward")
    rev = _check_log_r(log_r_reverse, "log_r_reverse")
    for name, values in (("log_r_forward", fwd), ("log_r_reverse", rev)):
        if not np.all(np.isfinite(values)):
            raise ValueError(
                f"{name} holds zero-estimate runs (log r = -inf); the top-level bridge needs "
                "finite run estimates: use lis_log_evidence, or add intermediate distributions"
            )
    est = bar_log_evidence(-fwd, -rev, tol=tol)
    diag = dict(est.diagnostics)
    diag["log_z_forward"], diag["log_z_reverse"] = diag["log_z_ais"], diag["log_z_rais"]
    return dataclasses.replace(est, method=method, diagnostics=diag)
