"""Analytic test systems with exactly known evidence.

Small PyMC models paired with their exact log marginal likelihood, for testing and
benchmarking evidence estimators (in the spirit of ``pymbar.testsystems``).

Examples
--------
>>> from pymc_evidence.testing import registry
>>> for system in registry():  # doctest: +SKIP
...     print(f"{system.name:32s} {system.log_z:.6f}")
"""

from pymc_evidence.testing.hard import (
    HARD_MODELS,
    bimodal_1d,
    centred_radon_intercepts,
    hierarchical_normal_cauchy,
    noncentred_radon_intercepts,
    phase_transition,
    phase_transition_centred,
    prior_conflict,
    ring,
    symmetric_mixture,
    unequal_modes,
)
from pymc_evidence.testing.hard_hierarchical import centred_radon_slopes, noncentred_radon_slopes
from pymc_evidence.testing.models import (
    ALL_MODELS,
    AnalyticModel,
    beta_bernoulli,
    conjugate_regression,
    hierarchical_normal,
    mixture_likelihood,
    normalized_density,
    registry,
)
from pymc_evidence.testing.nested_benchmarks import egg_box, gaussian_shells

__all__ = [
    "ALL_MODELS",
    "AnalyticModel",
    "beta_bernoulli",
    "conjugate_regression",
    "hierarchical_normal",
    "mixture_likelihood",
    "normalized_density",
    "registry",
    "HARD_MODELS",
    "bimodal_1d",
    "egg_box",
    "gaussian_shells",
    "centred_radon_intercepts",
    "centred_radon_slopes",
    "hierarchical_normal_cauchy",
    "noncentred_radon_intercepts",
    "noncentred_radon_slopes",
    "phase_transition",
    "phase_transition_centred",
    "prior_conflict",
    "ring",
    "symmetric_mixture",
    "unequal_modes",
]
