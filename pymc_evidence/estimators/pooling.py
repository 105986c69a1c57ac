"""Pool independent per-chain (or per-run) estimates of ``log Z`` into one record."""

from __future__ import annotations

import numpy as np
from scipy import stats

from .diagnostics import CrossCheckWarning, WarningMessage
from .record import EvidenceEstimate

__all__ = [
    "CROSS_CHECK_Z",
    "REPLICA_ALPHA",
    "cross_check",
    "pool_chain_estimates",
    "pool_replicas",
]

#: Methods whose estimates differ by more than this many combined se are said to disagree.
CROSS_CHECK_Z = 3.0
#: Level of the replicas' calibration check (upper tail of the chi-square test).
REPLICA_ALPHA = 0.01


def pool_chain_estimates(estimates, *, method: str, diagnostics: dict | None = None):
    """Equal-weight mean of independent estimates, ``se = sqrt(sum se_c^2) / C``.

    Used when chains cannot share one estimator because each adapted its own tuning
    parameters (e.g. simulated-tempering weights). Equal weights rather than inverse-variance
    weights: a chain whose se is underestimated would otherwise dominate. Adds
    ``chain_disagreement`` (chi-square p-value of the chains around the mean) and keeps each
    chain's warnings once.

    Examples
    --------
    >>> a = EvidenceEstimate(log_z=-1.0, se=0.1, method="st")
    >>> b = EvidenceEstimate(log_z=-1.2, se=0.1, method="st")
    >>> est = pool_chain_estimates([a, b], method="st")
    >>> round(est.log_z, 6), round(est.se, 6)
    (-1.1, 0.070711)
    """
    values = np.array([e.log_z for e in estimates], dtype=float)
    ses = np.array([e.se for e in estimates], dtype=float)
    n = values.size
    if n == 0:
        raise ValueError("no estimates to pool")
    mean = float(values.mean())
    se = float(np.sqrt(np.sum(ses**2)) / n)
    diag = dict(diagnostics or {})
    if n > 1 and np.all(ses > 0):
        chi2 = float(np.sum(((values - mean) / ses) ** 2))
        diag["chain_disagreement"] = float(stats.chi2.sf(chi2, n - 1))
        diag["chain_max_z"] = float(np.max(np.abs(values - mean) / ses))
    messages = []
    for est in estimates:
        for message in est.warnings:
            if message not in messages:
                messages.append(message)
    return EvidenceEstimate(
        log_z=mean,
        se=se,
        method=method,
        per_chain_log_z=values,
        per_chain_se=ses,
        diagnostics=diag,
        warnings=tuple(messages),
    )


def cross_check(estimates, *, z_max: float = CROSS_CHECK_Z) -> EvidenceEstimate:
    """Combine estimates of the same ``log Z`` by methods with independent failure modes.

    The combined value is the inverse-variance weighted mean; its se is the weighted
    mean's, inflated by the Birge ratio ``sqrt(chi2 / (k - 1))`` when the estimates scatter
    more than their errors allow, so a disagreement widens the error bar instead of hiding.
    When any pair differs by more than ``z_max`` combined standard errors, a warning names
    the two. Per-method values go in ``per_chain_log_z``/``per_chain_se`` (in order).

    Parameters
    ----------
    estimates : sequence of EvidenceEstimate
        At least two, each with a finite, positive se.
    z_max : float
        Pairwise disagreement threshold, in combined standard errors.

    Returns
    -------
    EvidenceEstimate
        ``method`` is the methods joined by ``"+"``; diagnostics ``cross_check_max_z`` and
        ``cross_check_birge_ratio``; the estimates' own warnings are kept, and each
        disagreement adds one tagged :class:`~.diagnostics.CrossCheckWarning` (not emitted
        here).

    Examples
    --------
    >>> a = EvidenceEstimate(log_z=-3.00, se=0.02, method="smc")
    >>> b = EvidenceEstimate(log_z=-3.03, se=0.02, method="bridge")
    >>> est = cross_check([a, b])
    >>> est.method, round(est.log_z, 3), est.warnings
    ('smc+bridge', -3.015, ())
    """
    estimates = list(estimates)
    if len(estimates) < 2:
        raise ValueError("a cross-check needs at least two estimates")
    values = np.array([e.log_z for e in estimates], dtype=float)
    ses = np.array([e.se for e in estimates], dtype=float)
    if not (np.all(np.isfinite(values)) and np.all(np.isfinite(ses)) and np.all(ses > 0)):
        raise ValueError(f"every estimate needs a finite value and se > 0, got {values}, {ses}")
    w = 1.0 / ses**2
    mean = float(w @ values / w.sum())
    chi2 = float(np.sum(w * (values - mean) ** 2))
    birge = max(1.0, np.sqrt(chi2 / (values.size - 1)))
    names = [e.method for e in estimates]
    messages = [m for e in estimates for m in e.warnings]
    worst = 0.0
    for i in range(values.size):
        for j in range(i + 1, values.size):
            z = abs(values[i] - values[j]) / np.hypot(ses[i], ses[j])
            worst = max(worst, float(z))
            if z > z_max:
                text = (
                    f"{names[i]} ({values[i]:.3f} ± {ses[i]:.3f}) and {names[j]} "
                    f"({values[j]:.3f} ± {ses[j]:.3f}) disagree by {z:.1f} combined se: at "
                    "least one of them has missed part of the posterior (a mode, a funnel's "
                    "neck) or has an optimistic se; the combined se is widened accordingly"
                )
                messages.append(WarningMessage(text, CrossCheckWarning))
    return EvidenceEstimate(
        log_z=mean,
        se=float(birge / np.sqrt(w.sum())),
        method="+".join(names),
        per_chain_log_z=values,
        per_chain_se=ses,
        diagnostics={"cross_check_max_z": worst, "cross_check_birge_ratio": float(birge)},
        warnings=tuple(dict.fromkeys(messages)),
    )


def _replica_check(values, ses, alpha):
    """Chi-square test of replicas against their own se: diagnostics and warning texts."""
    n = values.size
    if n < 2 or not (np.all(np.isfinite(ses)) and np.all(ses > 0)):
        return {}, []
    w = 1.0 / ses**2
    chi2 = float(np.sum(w * (values - w @ values / w.sum()) ** 2))
    high, low = float(stats.chi2.sf(chi2, n - 1)), float(stats.chi2.cdf(chi2, n - 1))
    diag = {"replica_chi2": chi2, "replica_p_high": high, "replica_p_low": low}
    if high >= alpha:
        return diag, []
    text = (
        f"{n} replicas scatter more than their se allow (chi2 = {chi2:.2f} on {n - 1} dof, "
        f"p = {high:.2g}): the per-run se is optimistic, or a replica missed part of the "
        "posterior; the pooled se is taken from the replicas' spread"
    )
    return diag, [WarningMessage(text, CrossCheckWarning)]


def pool_replicas(estimates, *, alpha: float = REPLICA_ALPHA) -> EvidenceEstimate:
    """Pool independent replicas (same model, same method, different seeds) into one estimate.

    The pooled value is ``log(mean_r exp(log_z_r))``, the log of the mean evidence. Not
    the inverse-variance mean of the ``log_z_r``: the particle methods' evidence estimates
    are unbiased in ``Z`` (not in ``log Z``), and averaging them in ``Z`` keeps that, so
    the pooled estimate's downward bias in ``log Z`` shrinks as replicas are added; it
    also gives no weight to a replica's own, possibly optimistic, se. With small errors
    the two means agree to ``O(se^2)``.

    Its se (delta method, ``w_r = Z_r / mean Z``) is the larger of

    - the replicas' spread, ``sd(w_r) / sqrt(R)`` (``R >= 2``): honest even when a
      per-run se is optimistic, but itself noisy with few replicas, and
    - the per-run se propagated, ``sqrt(sum w_r^2 se_r^2) / R``: a floor, so that two
      replicas that happen to agree closely do not claim a tiny error.

    A calibration check comes free: ``chi2 = sum ((log_z_r - m) / se_r)^2`` (``m`` the
    inverse-variance mean) on ``R - 1`` dof; replicas that scatter more than that allows
    (upper-tail p-value below ``alpha``) add a :class:`~.diagnostics.CrossCheckWarning`
    message (not emitted here). Scatter much smaller than the se allow only sets
    ``replica_p_low`` (no warning: the pooled se already keeps the per-run se, and with few
    replicas close agreement is mostly chance). Per-run se estimated from a few runs
    themselves make the test somewhat liberal.

    Parameters
    ----------
    estimates : sequence of EvidenceEstimate
        One per replica, with finite ``log_z``.
    alpha : float
        Level of the calibration check.

    Returns
    -------
    EvidenceEstimate
        Replica values in ``per_chain_log_z``/``per_chain_se``; diagnostics
        ``replica_spread_se``, ``replica_run_se`` and (``R >= 2``, every se positive)
        ``replica_chi2``, ``replica_p_high``, ``replica_p_low``; the replicas' own warnings
        are kept once.

    Examples
    --------
    >>> a = EvidenceEstimate(log_z=-3.00, se=0.02, method="smc")
    >>> b = EvidenceEstimate(log_z=-3.02, se=0.02, method="smc")
    >>> est = pool_replicas([a, b])
    >>> round(est.log_z, 4), round(est.se, 4), est.warnings
    (-3.01, 0.0141, ())
    """
    estimates = list(estimates)
    if not estimates:
        raise ValueError("no replicas to pool")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    values = np.array([e.log_z for e in estimates], dtype=float)
    ses = np.array([e.se for e in estimates], dtype=float)
    if not np.all(np.isfinite(values)):
        raise ValueError(f"every replica needs a finite log_z, got {values}")
    n = values.size
    top = values.max()
    pooled = float(top + np.log(np.mean(np.exp(values - top))))
    w = np.exp(values - pooled)
    run_se = float(np.sqrt(np.sum(w**2 * ses**2)) / n)
    spread_se = float(np.std(w, ddof=1) / np.sqrt(n)) if n > 1 else float("nan")
    se = float(np.nanmax([run_se, spread_se])) if n > 1 else run_se
    diag, messages = _replica_check(values, ses, alpha)
    diag.update(replica_spread_se=spread_se, replica_run_se=run_se)
    kept = [m for e in estimates for m in e.warnings]
    return EvidenceEstimate(
        log_z=pooled,
        se=se,
        method="+".join(dict.fromkeys(e.method for e in estimates)),
        per_chain_log_z=values,
        per_chain_se=ses,
        diagnostics=diag,
        warnings=tuple(dict.fromkeys(kept + messages)),
    )
