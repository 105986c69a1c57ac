"""pymc_evidence: marginal likelihoods (model evidence) with honest error bars for PyMC models.

Examples
--------
>>> import pymc as pm, pymc_evidence as pme
>>> with pm.Model() as model:
...     mu = pm.Normal("mu", 0, 1)
...     y = pm.Normal("y", mu, 1, observed=[0.1, -0.3])
...     idata = pme.sample_evidence(method="ct", draws=300, tune=300, chains=2,
...                                 random_seed=1, progressbar=False)
>>> est = pme.log_evidence(idata)
"""

__version__ = "0.1.0"

import logging

from .api import (
    METHODS,
    bridge_sampling,
    ct_evidence,
    error_measures,
    log_evidence,
    sample_evidence,
    st_evidence,
)
from .base import GaussianBase, MixtureBase, PriorBase
from .basefit import BaseFitError, fit_base
from .compare import bayes_factor, bf, compare, post_prob
from .compare_methods import compare_methods
from .hygiene import ModelHygieneError, check_model
from .many import ModelComparison, compare_models
from .plots import (
    plot_beta_trace,
    plot_compare,
    plot_running_log_z,
    plot_st_levels,
    plot_work_overlap,
)
from .record import (
    BaseFitWarning,
    ConvergenceWarning,
    CrossCheckWarning,
    EvidenceEstimate,
    EvidenceWarning,
    ModelWarning,
    SamplingWarning,
    WeightWarning,
)
from .steps import GibbsContinuousTempering, SimulatedTempering
from .transforms import continuous_tempering

__all__ = [
    "METHODS",
    "BaseFitError",
    "BaseFitWarning",
    "ConvergenceWarning",
    "CrossCheckWarning",
    "EvidenceEstimate",
    "EvidenceWarning",
    "GaussianBase",
    "GibbsContinuousTempering",
    "MixtureBase",
    "ModelComparison",
    "ModelHygieneError",
    "ModelWarning",
    "PriorBase",
    "SamplingWarning",
    "SimulatedTempering",
    "WeightWarning",
    "__version__",
    "bayes_factor",
    "bf",
    "bridge_sampling",
    "check_model",
    "compare",
    "compare_methods",
    "compare_models",
    "continuous_tempering",
    "ct_evidence",
    "error_measures",
    "fit_base",
    "log_evidence",
    "plot_beta_trace",
    "plot_compare",
    "plot_running_log_z",
    "plot_st_levels",
    "plot_work_overlap",
    "post_prob",
    "sample_evidence",
    "st_evidence",
]


def _show_info_lines(logger: logging.Logger) -> None:
    """Print the package's INFO lines (e.g. CT adaptation rounds) on stderr, as PyMC does,
    unless the application has configured logging (the root logger has a handler)."""
    if logging.getLogger().handlers:
        return
    logger.setLevel(logging.INFO)
    if not logger.handlers:
        logger.addHandler(logging.StreamHandler())


_show_info_lines(logging.getLogger(__name__))
