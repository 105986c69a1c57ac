"""Base densities in a model's raveled unconstrained space.

Every base (:class:`GaussianBase`, :class:`MixtureBase`, :class:`PriorBase`) implements
:class:`BaseDensity`; callers never need to branch on which one they hold. What a base's
fit measured rides on it as a typed record, :class:`FitStats` (``base.stats``). The densities
sit on the model runtime (:mod:`pymc_evidence.runtime`) and below their fit
(:mod:`pymc_evidence.basefit`, which makes them from a model).

:func:`model_space`, :func:`runtime_of`, :class:`ModelRuntime` and :class:`ModelSpace` are
:mod:`pymc_evidence.runtime`'s, re-exported here for code that imported them from
``pymc_evidence.base`` (not in its ``__all__``: they are documented once, in
:mod:`pymc_evidence.runtime`).
"""

from ..runtime import ModelRuntime, ModelSpace, model_space, runtime_of  # noqa: F401
from .gaussian import BaseDensity, GaussianBase
from .mixture import MixtureBase
from .prior import PriorBase, prior_draws
from .stats import FitStats

__all__ = [
    "BaseDensity",
    "FitStats",
    "GaussianBase",
    "MixtureBase",
    "PriorBase",
    "prior_draws",
]
