"""Base densities in a model's raveled unconstrained space.

Every base (:class:`GaussianBase`, :class:`MixtureBase`, :class:`PriorBase`) implements
:class:`BaseDensity`; callers never need to branch on which one they hold.
"""

from .advi import BaseFitError
from .fit import BASE_METHODS, COMBINE_METHODS, DEFAULT_RESTARTS, fit_base
from .gaussian import BaseDensity, GaussianBase
from .mixture import MixtureBase
from .pipeline import BaseFit
from .plan import BasePlan
from .prior import PriorBase, prior_draws
from .runtime import ModelRuntime, model_space, runtime_of
from .space import ModelSpace

__all__ = [
    "BASE_METHODS",
    "COMBINE_METHODS",
    "DEFAULT_RESTARTS",
    "BaseDensity",
    "BaseFit",
    "BaseFitError",
    "BasePlan",
    "GaussianBase",
    "MixtureBase",
    "ModelRuntime",
    "ModelSpace",
    "PriorBase",
    "fit_base",
    "model_space",
    "prior_draws",
    "runtime_of",
]
