"""Pool independent per-chain (or per-run) estimates of ``log Z`` into one record."""

from __future__ import annotations

import numpy as np
from scipy import stats

from .diagnostics import CrossCheckWarning, WarningMessage
from .record import EvidenceEstimate

__all__ = ["CROSS_CHECK_Z", "cross_check", "pool_chain_estimates"]

#: Methods whose estimates differ by more than this many combined se are said to disagree.
CROSS_CHECK_Z = 3.0


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
