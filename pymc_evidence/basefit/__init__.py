"""The base fit: from a model to the base density every path starts from.

:func:`fit_base` is the public face; :class:`BasePlan` (:mod:`~pymc_evidence.basefit.plan`)
is the policy as a value, and :func:`~pymc_evidence.basefit.pipeline.fit_record` runs it
and returns the frozen :class:`BaseFit` record (:mod:`~pymc_evidence.basefit.pipeline`
orders the steps: starts, Laplace first, ADVI, combine, missed modes, widen, choose). The
modules beside them are the steps: ADVI (:mod:`~pymc_evidence.basefit.advi`,
:mod:`~pymc_evidence.basefit.advi_fits`), the mode search and Laplace Gaussians
(:mod:`~pymc_evidence.basefit.laplace_first`, :mod:`~pymc_evidence.basefit.modes`,
:mod:`~pymc_evidence.basefit.mode_search`), widening, recentring and refitting
(:mod:`~pymc_evidence.basefit.widen`, :mod:`~pymc_evidence.basefit.recentre`,
:mod:`~pymc_evidence.basefit.refit`). They make the densities of :mod:`pymc_evidence.base`
on the model runtime of :mod:`pymc_evidence.runtime`.

Examples
--------
>>> import pymc as pm
>>> from pymc_evidence.basefit import fit_base
>>> with pm.Model() as model:
...     x = pm.Normal("x", shape=2)
>>> fit_base("prior", model=model).ndim
2
"""

from .evaluation import BaseFitError
from .fit import BASE_METHODS, COMBINE_METHODS, DEFAULT_RESTARTS, fit_base
from .pipeline import BaseFit
from .plan import BasePlan

__all__ = [
    "BASE_METHODS",
    "COMBINE_METHODS",
    "DEFAULT_RESTARTS",
    "BaseFit",
    "BaseFitError",
    "BasePlan",
    "fit_base",
]
