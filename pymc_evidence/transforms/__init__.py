"""Model transforms: a PyMC model in, an extended PyMC model out (graph surgery only)."""

from .tempering import CTSpec, continuous_tempering, ct_spec, set_base

__all__ = ["CTSpec", "continuous_tempering", "ct_spec", "set_base"]
from .reparam import centred_scales, noncentrable, reparam_info, reparametrize  # noqa: E402

__all__ += ["centred_scales", "noncentrable", "reparam_info", "reparametrize"]
