"""Hard analytic test systems: multimodal, heavy-tailed, curved or conflicting posteriors.

Like :mod:`pymc_evidence.testing.models`, every factory returns an
:class:`~pymc_evidence.testing.models.AnalyticModel` whose ``log_z`` is computed without PyMC
(closed forms, or :func:`scipy.integrate.quad`); ``tests/testing/test_hard.py`` checks each
value against a second, independent computation. These systems are meant to separate the
estimators (``benchmarks/hard_models.py``), not to be easy: bimodal and ring-shaped posteriors,
a narrow spike holding most of the evidence inside or far from a broad bump (a first-order phase
transition on the tempering path), a prior far from the likelihood, a heavy-tailed scale prior
and a real-data hierarchical model in its centred (funnel) form.

All priors are proper, constants are float64 arrays and every density is an ordinary
observed PyMC likelihood (no ``pm.Potential``), so ``log_z`` is the evidence PyMC scores.

The factories live in :mod:`pymc_evidence.testing.hard_geometry` (posterior geometry),
:mod:`pymc_evidence.testing.hard_modes` (modes of unequal mass and basin) and
:mod:`pymc_evidence.testing.hard_hierarchical` (hierarchical models); this module re-exports
them and holds the registry :data:`HARD_MODELS`.
"""

from __future__ import annotations

from collections.abc import Callable

from pymc_evidence.testing.hard_geometry import (
    bimodal_1d,
    phase_transition,
    phase_transition_centred,
    prior_conflict,
    ring,
    symmetric_mixture,
)
from pymc_evidence.testing.hard_hierarchical import (
    centred_radon_intercepts,
    hierarchical_normal_cauchy,
    noncentred_radon_intercepts,
)
from pymc_evidence.testing.hard_modes import unequal_modes
from pymc_evidence.testing.models import AnalyticModel

__all__ = [
    "HARD_MODELS",
    "bimodal_1d",
    "centred_radon_intercepts",
    "hierarchical_normal_cauchy",
    "noncentred_radon_intercepts",
    "phase_transition",
    "phase_transition_centred",
    "prior_conflict",
    "ring",
    "symmetric_mixture",
    "unequal_modes",
]


HARD_MODELS: dict[str, Callable[[], AnalyticModel]] = {
    "hierarchical_normal_cauchy": hierarchical_normal_cauchy,
    "bimodal_1d": bimodal_1d,
    "symmetric_mixture": symmetric_mixture,
    "unequal_modes": unequal_modes,
    "phase_transition": phase_transition,
    "phase_transition_centred": phase_transition_centred,
    "prior_conflict": prior_conflict,
    "ring": ring,
    "radon_intercepts_centred": centred_radon_intercepts,
    "radon_intercepts_noncentred": noncentred_radon_intercepts,
}
"""Factories of the default hard systems, keyed by :attr:`AnalyticModel.name`."""
