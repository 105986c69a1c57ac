"""The model runtime: what this package makes for one PyMC model, and how it compiles.

:func:`runtime_of` gives a model's :class:`ModelRuntime` (its raveled unconstrained
:class:`ModelSpace`, its compiled functions, its prepared copies, its backend);
:func:`model_space` is the space alone. The modules beside it compile the model's graphs
(:mod:`~pymc_evidence.runtime._compile`, :mod:`~pymc_evidence.runtime.jax_rows`,
:mod:`~pymc_evidence.runtime.batched_logp`) and read or copy them
(:mod:`~pymc_evidence.runtime.graph_traits`, :mod:`~pymc_evidence.runtime.simplify`,
:mod:`~pymc_evidence.runtime.model_copy`). Nothing here knows a base density: the densities
(:mod:`pymc_evidence.base`) and their fit (:mod:`pymc_evidence.basefit`) sit above it.

Examples
--------
>>> import pymc as pm
>>> from pymc_evidence.runtime import model_space
>>> with pm.Model() as model:
...     x = pm.Normal("x", shape=2)
>>> model_space(model).ndim
2
"""

from .runtime import ModelRuntime, model_space, runtime_of
from .space import ModelSpace

__all__ = ["ModelRuntime", "ModelSpace", "model_space", "runtime_of"]
