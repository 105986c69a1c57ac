"""Starts at the modes of a mixture likelihood's components, one component at a time.

A likelihood written as a mixture (``pm.Mixture``, ``pm.NormalMixture``) has its modes
near those of its components. A narrow component away from the others (Skilling's phase
change with the spike off the bump's centre, :func:`pymc_evidence.testing.phase_transition`)
has a basin of about :math:`10^{-13}` of the prior's volume under the mixture: no prior
draw, ADVI fit or tempered particle lands in it. Under that component alone its basin is
the whole space. So, for every mixture variable of the model and every component ``k``, the
model is copied with the mixture's weights replaced by the one-hot vector of ``k``, its log
density climbed from the initial point, and the end point handed to the mode search as a
start of an ascent of the true density (:func:`~pymc_evidence.basefit.mode_search.search_modes`),
which keeps it only if it reaches a mode the fit missed and the rules of
:func:`~pymc_evidence.basefit.modes.add_missed_modes` accept.

The copy runs without JIT (PyTensor's Python linker): a few hundred calls per component.
Its function is built once per model and mixture variable (PyTensor's rewriting was a
sizeable share of a warm call on the 3-component mixture when it was built per call) and
kept while the model lives. Mixtures written by hand (a ``pm.Potential`` of a ``logsumexp``)
are not recognised.
"""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
from pymc.distributions.mixture import MixtureRV
from pymc.model.fgraph import model_from_fgraph

from ..runtime._compile import compile_fn
from ..runtime.model_copy import model_fgraph, with_initvals
from ..runtime.space import ModelSpace
from .laplace import ascend

__all__ = ["component_starts", "mixture_sizes"]

#: Iterations of each component's ascent.
MAXITER = 500


def mixture_sizes(model) -> dict[str, int]:
    """``{name: number of components}`` of the model's mixture variables (observed or free)
    whose number of components is known from the graph's static shapes."""
    sizes = {}
    for rv in model.observed_RVs + model.free_RVs:
        if rv.owner is not None and isinstance(rv.owner.op, MixtureRV):
            weights, components = rv.owner.inputs[1], rv.owner.inputs[2:]
            k = len(components) if len(components) > 1 else weights.type.shape[-1]
            if k is not None and k > 1:
                sizes[rv.name] = int(k)
    return sizes


def _one_component(model, name: str, k: int):
    """A copy of ``model`` whose mixture ``name`` has the weights of a shared one-hot
    vector (the shared variable is returned with it)."""
    graph, initvals = model_fgraph(model)
    onehot = pytensor.shared(np.zeros(k), name=f"{name}_component")
    node = next(
        n for n in graph.apply_nodes if isinstance(n.op, MixtureRV) and n.outputs[-1].name == name
    )
    weights = node.inputs[1]
    replacement = pt.broadcast_to(onehot.astype(weights.dtype), weights.shape)
    graph.change_node_input(node, 1, weights.type.filter_variable(replacement), import_missing=True)
    return with_initvals(model_from_fgraph(graph, mutate_fgraph=True), initvals), onehot


def _logp_dlogp(space: ModelSpace, model):
    """``x -> (log f, grad)`` of ``model`` (a copy with the variables of ``space``'s model,
    laid out as ``space``), compiled without JIT."""
    by_name = {v.name: v for v in model.value_vars}
    value_vars = [by_name[name] for name in space.names]
    logp = model.logp()
    grad = pt.concatenate([g.ravel() for g in pt.grad(logp, value_vars)])
    flat, graphs = space.on_flat([logp, grad], value_vars)
    fn = compile_fn([flat], graphs, jit=False)

    def logp_dlogp(x):
        value, grad = fn(np.asarray(x, dtype=float))
        return float(value), np.asarray(grad, dtype=float)

    return logp_dlogp


def _component_density(space: ModelSpace, name: str, k: int):
    """``(logp_dlogp, onehot)`` of the copy with mixture ``name``'s weights one-hot (built
    once per model), or None where PyMC cannot copy or differentiate the graph."""
    per_model = space.runtime.compiled("component_starts")  # name -> (logp_dlogp, one-hot) or None
    if name not in per_model:
        try:
            copy, onehot = _one_component(space.model, name, k)
            same = sorted(v.name for v in copy.value_vars) == sorted(space.names)
            per_model[name] = (_logp_dlogp(space, copy), onehot) if same else None
        except Exception:  # no starts from this variable
            per_model[name] = None
    return per_model[name]


def component_starts(space: ModelSpace, start: np.ndarray) -> np.ndarray:
    """The modes, one per component and mixture variable, of the model with that component
    alone, each climbed from ``start``; shape ``(m, d)`` (``m = 0`` for a model without a
    mixture, or where a copy cannot be made or climbed).

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from pymc_evidence.runtime import model_space
    >>> with pm.Model() as model:   # a narrow component at 0.3 inside a broad one at 0
    ...     x = pm.Uniform("x", -1.0, 1.0)
    ...     comps = [pm.Normal.dist(x, 0.1), pm.Normal.dist(x - 0.3, 0.001)]
    ...     _ = pm.Mixture("y", w=[0.5, 0.5], comp_dists=comps, observed=0.0)
    >>> space = model_space(model)
    >>> xs = component_starts(space, space.initial_x())
    >>> np.round(np.tanh(xs[:, 0] / 2), 3).tolist()   # back to x in (-1, 1)
    [0.0, 0.3]
    """
    points = []
    for name, k in mixture_sizes(space.model).items():
        built = _component_density(space, name, k)
        if built is None:
            continue
        logp_dlogp, onehot = built
        for j in range(k):
            onehot.set_value(np.eye(k)[j])
            x, log_f = ascend(logp_dlogp, np.asarray(start, dtype=float), MAXITER)
            if np.isfinite(log_f):
                points.append(x)
    return np.array(points).reshape(-1, space.ndim)
