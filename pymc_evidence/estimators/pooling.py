"""Pool independent per-chain (or per-run) estimates of ``log Z`` into one record."""

from __future__ import annotations

import numpy as np
from scipy import stats

from .record import EvidenceEstimate

__all__ = ["pool_chain_estimates"]


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
