"""Base densities in a model's raveled unconstrained space."""

from .advi import BaseFitError
from .fit import BASE_METHODS, fit_base
from .gaussian import GaussianBase, PriorBase
from .space import ModelSpace, model_space

__all__ = [
    "BASE_METHODS",
    "BaseFitError",
    "GaussianBase",
    "ModelSpace",
    "PriorBase",
    "fit_base",
    "model_space",
]
