"""Evidence estimators: pure numpy/scipy functions of stored draws (no PyMC, no xarray)."""

from .bridge import bridge_log_evidence, combine_bridge_runs
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
from .lis import (
    bridged_log_evidence,
    lis_log_evidence,
    lis_log_factors,
    log_bridge_ratios,
    reverse_lis_log_evidence,
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
    histogram_log_evidence,
    reverse_ais_log_evidence,
)
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
    "ess_mean",
    "evidence_messages",
    "expected_beta",
    "histogram_log_evidence",
    "kish_ess",
    "level_log_conditionals",
    "lis_log_evidence",
    "lis_log_factors",
    "log_bridge_ratios",
    "log_ratio_of_means",
    "log_w0",
    "log_w1",
    "mcse_mean",
    "naive_count_log_evidence",
    "ratio_influence",
    "rb_thermodynamic_integration",
    "reverse_ais_log_evidence",
    "reverse_lis_log_evidence",
    "round_trips",
    "rts_level_estimates",
    "rts_log_evidence",
    "rts_update",
    "sample_beta",
    "validate_ladder",
]
