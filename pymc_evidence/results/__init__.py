"""The ``log_evidence`` results group: schema, conversion and reading.

See :mod:`pymc_evidence.results.schema` for the exact layout of the group.
"""

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
    "dataset_to_estimate",
    "estimate_to_dataset",
    "log_evidence",
    "validate_log_evidence",
]
