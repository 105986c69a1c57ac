"""The user-facing functions: wiring only.

:func:`sample_evidence` builds one :class:`~pymc_evidence.problem.EvidenceProblem`, looks
the method up in the registry (:mod:`pymc_evidence.methods`), runs it and assembles the
result with :func:`~pymc_evidence.results.assemble.assemble_results`; the readers turn
traces users sampled themselves into the same results.
"""

from ..methods import METHODS
from .readers import bridge_sampling, ct_evidence, error_measures, log_evidence, st_evidence
from .sample import sample_evidence

__all__ = [
    "METHODS",
    "bridge_sampling",
    "ct_evidence",
    "error_measures",
    "log_evidence",
    "sample_evidence",
    "st_evidence",
]
