"""The ``log_evidence`` results group: schema, conversion and reading.

See :mod:`pymc_evidence.results.schema` for the exact layout of the group. Also here: the
reader of ``pm.sample_smc`` results (:func:`sample_smc_log_z`), the ArviZ diagnostics of
the pieces behind an estimate (:func:`pareto_khat`, :func:`pareto_check`,
:func:`nuts_messages`) and the record returned by :func:`pymc_evidence.error_measures`.
The schema only: nothing here computes an estimate, so this package imports neither the
estimators nor the step methods (``tests/test_layering.py``); the record it writes and
reads is :class:`pymc_evidence.record.EvidenceEstimate`.
"""

from pymc_evidence.results.diagnostics import nuts_messages, pareto_check, pareto_khat
from pymc_evidence.results.error_measures import ErrorMeasures
from pymc_evidence.results.external import sample_smc_log_z
from pymc_evidence.results.schema import (
    CHAIN_DIMS,
    GROUP,
    dataset_to_estimate,
    estimate_to_dataset,
    log_evidence,
    validate_log_evidence,
)

__all__ = [
    "CHAIN_DIMS",
    "GROUP",
    "ErrorMeasures",
    "dataset_to_estimate",
    "estimate_to_dataset",
    "log_evidence",
    "nuts_messages",
    "pareto_check",
    "pareto_khat",
    "sample_smc_log_z",
    "validate_log_evidence",
]
