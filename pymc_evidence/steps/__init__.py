"""PyMC step methods: thin shells over the estimators."""

from .gibbs_ct import GibbsContinuousTempering
from .simulated_tempering import SimulatedTempering

__all__ = ["GibbsContinuousTempering", "SimulatedTempering"]
