"""Habeck's histogram (two-state WHAM) estimator from forward and reverse works: a
cross-check of BAR (:mod:`~pymc_evidence.estimators.noneq`, whose sign conventions it
shares). Pure numpy/scipy.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from .diagnostics import ConvergenceWarning
from .logspace import emit_warnings
from .noneq import bar_overlap_se, checked_works
from .record import EvidenceEstimate

__all__ = ["histogram_log_evidence"]


def histogram_log_evidence(
    work_f, work_r, *, tol: float = 1e-10, maxiter: int = 100_000
) -> EvidenceEstimate:
    """Habeck's histogram (two-state WHAM / MBAR) estimator; a cross-check of BAR.

    Pools ``u = W_f`` and ``-W_r`` and estimates the forward work density non-parametrically,
    ``p_f = sum_j p_j delta(W - u_j)``, from two "ensembles": forward works drawn from ``p_f``
    and reverse works from ``p_f(W) exp(-W) / Z``. The self-consistent iteration
    ``p_j ∝ 1 / (n_f + n_r exp(-u_j) / Z)``, ``Z = sum_j p_j exp(-u_j)`` (normalised
    ``p``), runs in log space until ``log Z`` changes by less than ``tol``. Its fixed point is
    exactly BAR's root, so the value should agree with
    :func:`~pymc_evidence.estimators.noneq.bar_log_evidence`; the se is BAR's asymptotic se
    at this value. Linear convergence: slow when overlap is poor.

    Parameters
    ----------
    work_f, work_r : array_like, shape (run,)
    tol : float, default 1e-10
    maxiter : int, default 100000

    Returns
    -------
    EvidenceEstimate
        ``method = "histogram"``; diagnostics ``n_f``, ``n_r``, ``overlap``, ``iterations``,
        ``converged``. Warns if not converged.

    Examples
    --------
    >>> from pymc_evidence.estimators.noneq import bar_log_evidence
    >>> est = histogram_log_evidence([0.5, 1.5, 2.5], [-1.5, -0.5, 0.5])
    >>> round(est.log_z, 6) == round(bar_log_evidence([0.5, 1.5, 2.5], [-1.5, -0.5, 0.5]).log_z, 6)
    True
    """
    wf, wr = checked_works(work_f, "work_f"), checked_works(work_r, "work_r")
    nf, nr = wf.size, wr.size
    u = np.concatenate([wf, -wr])
    log_z = 0.5 * float(special.logsumexp(-wf) - np.log(nf) + np.log(nr) - special.logsumexp(-wr))
    converged, iterations = False, 0
    for iterations in range(1, maxiter + 1):  # noqa: B007
        log_p = -np.logaddexp(np.log(nf), np.log(nr) - u - log_z)
        new = float(special.logsumexp(log_p - u) - special.logsumexp(log_p))
        change, log_z = abs(new - log_z), new
        if change < tol:
            converged = True
            break
    overlap, se = bar_overlap_se(log_z, wf, wr)
    diag = {
        "n_f": float(nf),
        "n_r": float(nr),
        "overlap": overlap,
        "iterations": float(iterations),
        "converged": float(converged),
    }
    messages = [] if converged else [f"histogram iteration did not converge in {maxiter} steps"]
    messages = emit_warnings(messages, ConvergenceWarning)
    return EvidenceEstimate(log_z, se, "histogram", np.empty(0), np.empty(0), diag, messages)
