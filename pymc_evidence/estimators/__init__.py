"""Evidence estimators: pure numpy/scipy functions of stored draws (no PyMC, no xarray)."""

from .ct import (
    base_moment_check,
    beta_cdf,
    ct_log_evidence,
    ct_weights,
    expected_beta,
    log_w0,
    log_w1,
    sample_beta,
)
from .diagnostics import EvidenceWarning, evidence_messages, kish_ess
from .mcse import (
    chain_agreement_pvalue,
    ess_mean,
    log_ratio_of_means,
    mcse_mean,
    ratio_influence,
)
from .record import EvidenceEstimate

__all__ = [
    "EvidenceEstimate",
    "EvidenceWarning",
    "base_moment_check",
    "beta_cdf",
    "chain_agreement_pvalue",
    "ct_log_evidence",
    "ct_weights",
    "ess_mean",
    "evidence_messages",
    "expected_beta",
    "kish_ess",
    "log_ratio_of_means",
    "log_w0",
    "log_w1",
    "mcse_mean",
    "ratio_influence",
    "sample_beta",
]
