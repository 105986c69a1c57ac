"""The smallest se an estimate reports (:func:`with_se_floor`).

The record every estimator returns, :class:`~pymc_evidence.record.EvidenceEstimate`, lives
in :mod:`pymc_evidence.record` (below the estimators, so that the results schema can use it
without importing one); it is imported here too, so that
``pymc_evidence.estimators.record.EvidenceEstimate`` keeps working.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..record import EvidenceEstimate

__all__ = ["SE_FLOOR", "EvidenceEstimate", "with_se_floor"]

#: The smallest se a Monte Carlo estimate of ``sample_evidence`` reports, relative to
#: ``max(1, |log Z|)``: what the model's own log density holds. PyTensor keeps constants
#: such as a known noise scale of 0.5 in float32, and PyMC's compiled density (NUTS, the
#: tempering steps) then computes ``log 0.5`` to 2e-9 per row (up to 3e-8 for other
#: constants): 6e-8 on a 40-row regression whose ``log Z`` is -32.8.
SE_FLOOR = 1e-7


def with_se_floor(est: EvidenceEstimate) -> EvidenceEstimate:
    """``est`` with its se raised to :data:`SE_FLOOR` ``* max(1, |log Z|)`` where it is below.

    A base that is exactly the posterior (the Laplace Gaussian of a Gaussian model) makes
    every importance weight equal: the estimators then return an se of exactly 0 (their
    arithmetic is right), but the estimate itself is only as good as the model's log
    density and the floating-point sums behind it (see :data:`SE_FLOOR`), and an se of 0
    would claim more.

    Examples
    --------
    >>> with_se_floor(EvidenceEstimate(-3.7, 0.0, "bar")).se
    3.7e-07
    >>> with_se_floor(EvidenceEstimate(-3.7, 0.02, "bar")).se
    0.02
    """
    if not np.isfinite(est.log_z) or not np.isfinite(est.se):
        return est
    floor = SE_FLOOR * max(1.0, abs(float(est.log_z)))
    return est if est.se >= floor else replace(est, se=floor)
