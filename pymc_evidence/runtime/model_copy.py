"""A PyMC model as a ``FunctionGraph`` and back, its custom initial values kept.

PyMC's :func:`~pymc.model.fgraph.fgraph_from_model` (and so ``clone_model``) refuses a
model with any ``initval``, and users set them where a transform needs one: the
``ordered`` transform's default initial point ``(0, 0)`` is not ordered, so ordered
means or cutpoints are written with ``initval=[-1, 1]``. The values are set aside while
the graph is made (the model is restored before anything else sees it) and put back, by
name, on the copy's free variables that still exist.
"""

from __future__ import annotations

import pymc as pm
from pymc.model.fgraph import fgraph_from_model, model_from_fgraph

__all__ = ["copy_model", "model_fgraph", "with_initvals"]


def model_fgraph(model: pm.Model):
    """``(fgraph, initvals)``: the model's graph and its custom initial values by name."""
    initvals = {rv.name: v for rv, v in model.rvs_to_initial_values.items() if v is not None}
    if not initvals:
        return fgraph_from_model(model)[0], {}
    saved = dict(model.rvs_to_initial_values)
    try:
        for rv in saved:
            model.rvs_to_initial_values[rv] = None
        return fgraph_from_model(model)[0], initvals
    finally:
        model.rvs_to_initial_values.update(saved)


def with_initvals(model: pm.Model, initvals: dict) -> pm.Model:
    """``model`` with the initial values ``initvals`` (by name) set on those of its free
    variables that have the names (a variable rewritten away keeps none)."""
    for name, value in initvals.items():
        rv = model.named_vars.get(name)
        if rv is not None and rv in model.free_RVs:
            model.set_initval(rv, value)
    return model


def copy_model(model: pm.Model) -> pm.Model:
    """A copy of ``model`` (as PyMC's ``clone_model``), initial values included.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu", 0, 1, shape=2, transform=pm.distributions.transforms.ordered,
    ...                    initval=np.array([-1.0, 1.0]))
    >>> copy_model(model).initial_point()["mu_ordered__"].round(3).tolist()
    [-1.0, 0.693]
    """
    graph, initvals = model_fgraph(model)
    return with_initvals(model_from_fgraph(graph, mutate_fgraph=True), initvals)
