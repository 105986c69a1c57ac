"""Evidence estimators: pure numpy/scipy functions of stored draws (no PyMC, no xarray)."""

from .bridge import bridge_log_evidence, combine_bridge_runs
from .covariance import shrinkage_intensity, shrunk_covariance
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
from .diagnostics import EvidenceWarning, evidence_messages
from .lis import (
    bridged_log_evidence,
    lis_log_evidence,
    lis_log_factors,
    log_bridge_ratios,
    reverse_lis_log_evidence,
)
from .logspace import (
    emit_warnings,
    kish_ess,
    log_mean_exp,
    log_mean_exp_se,
    normalize_log_weights,
    resample_indices,
    residual_resample,
    systematic_resample,
)
from .mcse import (
    chain_agreement_pvalue,
    ess_mean,
    log_ratio_of_means,
    mcse_mean,
    ratio_influence,
)
from .noneq import (
    ais_log_evidence,
    bar_log_evidence,
    reverse_ais_log_evidence,
    works_log_evidence,
)
from .noneq_histogram import histogram_log_evidence
from .record import EvidenceEstimate
from .rts import (
    adaptation_converged,
    default_ladder,
    level_log_conditionals,
    naive_count_log_evidence,
    rb_thermodynamic_integration,
    round_trips,
    rts_level_estimates,
    rts_log_evidence,
    rts_update,
    validate_ladder,
)

__all__ = [
    "EvidenceEstimate",
    "EvidenceWarning",
    "adaptation_converged",
    "ais_log_evidence",
    "bar_log_evidence",
    "base_moment_check",
    "beta_cdf",
    "bridge_log_evidence",
    "bridged_log_evidence",
    "chain_agreement_pvalue",
    "combine_bridge_runs",
    "ct_log_evidence",
    "ct_weights",
    "default_ladder",
    "emit_warnings",
    "ess_mean",
    "evidence_messages",
    "expected_beta",
    "histogram_log_evidence",
    "kish_ess",
    "level_log_conditionals",
    "lis_log_evidence",
    "lis_log_factors",
    "log_bridge_ratios",
    "log_mean_exp",
    "log_mean_exp_se",
    "log_ratio_of_means",
    "log_w0",
    "log_w1",
    "mcse_mean",
    "naive_count_log_evidence",
    "normalize_log_weights",
    "ratio_influence",
    "rb_thermodynamic_integration",
    "resample_indices",
    "residual_resample",
    "reverse_ais_log_evidence",
    "reverse_lis_log_evidence",
    "round_trips",
    "rts_level_estimates",
    "rts_log_evidence",
    "rts_update",
    "sample_beta",
    "shrinkage_intensity",
    "shrunk_covariance",
    "systematic_resample",
    "validate_ladder",
    "works_log_evidence",
]
