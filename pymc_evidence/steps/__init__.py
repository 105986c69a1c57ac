"""PyMC step methods: thin shells over the estimators."""

from .gibbs_ct import GibbsContinuousTempering

__all__ = ["GibbsContinuousTempering"]
