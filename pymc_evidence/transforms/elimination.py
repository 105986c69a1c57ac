"""Discrete latent variables summed out one at a time (variable elimination).

When a model's discrete variables take too many joint values to enumerate together (a
hidden Markov chain written as one ``pm.Categorical`` per time step takes ``K**T``), the
sum ``Σ_z exp(Σ_j t_j(z_{S_j}, θ))`` over the log density terms ``t_j``, each holding a
few of them (its scope ``S_j``), is taken one variable at a time: the terms that hold
``z_v`` are added into a table over the union of their scopes and ``z_v`` is summed out of
it (a log-sum-exp over one axis), which leaves one term over the rest (Koller & Friedman
2009, ch. 9). The order is greedy, the variable whose table is smallest first. The result
is exact; its cost is the largest table, refused above
:data:`~pymc_evidence.transforms.discrete_values.MAX_JOINT_VALUES` values. On a chain each
table holds two neighbours: ``K**2`` values, the forward algorithm.

The posterior's discrete draws go in the reverse order: each variable from its table at
the values already drawn for the others in it, which is its conditional given those and
``θ, y`` (on a chain: forward filtering, backward sampling).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.graph.basic import Constant
from pytensor.graph.replace import clone_replace, graph_replace, vectorize_graph
from pytensor.graph.traversal import ancestors

from ..runtime.runtime import model_space
from .discrete_values import (
    MAX_JOINT_VALUES,
    dependent_terms,
    draw_index,
    joint_values,
    log_value_count,
    most_probable,
    to_new_values,
    values_at_initial_point,
)

__all__ = ["Eliminated", "Step", "eliminate"]


@dataclass(frozen=True)
class Step:
    """One elimination: the variable ``var`` (an index into ``names``) summed out of a table
    whose axes are the variables ``scope`` (``var`` among them), in that order."""

    var: int
    scope: tuple


@dataclass(frozen=True)
class Eliminated:
    """A model with its discrete variables summed out by elimination, and how to draw them.

    Attributes
    ----------
    model : pm.Model
        The continuous model (discrete variables fixed by :func:`pymc.do`, plus the
        potential ``"summed_out_discrete"``).
    names : tuple of str
        The discrete variables summed out.
    values : dict
        ``name -> array (K, *shape)``: each of the variable's own values.
    tables : tuple of TensorVariable
        One per step, on ``model``'s value variables: the log table the step summed over.
    steps : tuple of Step
    """

    model: pm.Model
    names: tuple
    values: dict
    tables: tuple
    steps: tuple
    #: Posterior draws whose tables are computed at once, on the batched density's backend
    #: (run by numpy's ops instead, a chain's tables cost seconds per thousand draws).
    draw_chunk = 1024

    def draw(self, tables: list, rng: np.random.Generator) -> dict:
        """Discrete draws ``name -> (n, *shape)`` given each row's tables (``(n, *sizes)``
        per step, in the order of :attr:`tables`)."""
        index = _backward(self.steps, tables, lambda w: draw_index(w[..., None], rng)[:, 0])
        return {name: self.values[name][index[i]] for i, name in enumerate(self.names)}


def _backward(steps, tables, choose) -> dict:
    """``var -> (n,)`` value indices, chosen by ``choose`` from each step's table at the
    indices already chosen for the table's other variables, last step first."""
    index = {}
    for step, table in reversed(list(zip(steps, tables, strict=True))):
        table = np.moveaxis(np.asarray(table), 1 + step.scope.index(step.var), -1)
        rows = np.arange(table.shape[0])
        others = tuple(index[u] for u in step.scope if u != step.var)
        index[step.var] = choose(table[(rows, *others)])
    return index


def _table(term, scope, zs, values, sizes):
    """``term`` at every joint value of the variables ``scope``: shape ``sizes[scope]``."""
    grids = np.meshgrid(*[np.arange(sizes[i]) for i in scope], indexing="ij")
    replace = {zs[i]: pt.constant(values[i][g.ravel()]) for i, g in zip(scope, grids, strict=True)}
    return vectorize_graph(term, replace=replace).reshape([sizes[i] for i in scope])


def _order(scopes, sizes) -> list | None:
    """A greedy elimination order (smallest table next), or None when some table would
    exceed :data:`MAX_JOINT_VALUES` values."""
    scopes, order = [set(s) for s in scopes], []
    remaining = set().union(*scopes)

    def merged(v):
        return set().union(*(s for s in scopes if v in s))

    while remaining:
        v = min(remaining, key=lambda u: (np.prod([sizes[w] for w in merged(u)]), u))
        union = merged(v)
        if np.prod([float(sizes[w]) for w in union]) > MAX_JOINT_VALUES:
            return None
        scopes = [s for s in scopes if v not in s] + [union - {v}]
        remaining.discard(v)
        order.append(v)
    return order


def _eliminate(factors, order):
    """Sum the variables out in ``order``: ``(log of the sum, tables, steps)``."""
    tables, steps = [], []
    for v in order:
        holding = [f for f in factors if v in f[1]]
        factors = [f for f in factors if v not in f[1]]
        scope = tuple(sorted(set().union(*(s for _, s in holding))))
        aligned = [t.dimshuffle([s.index(u) if u in s else "x" for u in scope]) for t, s in holding]
        table = aligned[0] if len(aligned) == 1 else pt.add(*aligned)
        tables.append(table)
        steps.append(Step(v, scope))
        rest = tuple(u for u in scope if u != v)
        factors.append((pt.logsumexp(table, axis=scope.index(v)), rest))
    total = [t for t, _ in factors]
    return (total[0] if len(total) == 1 else pt.add(*total)), tables, steps


def eliminate(model: pm.Model, discrete) -> Eliminated | None:
    """``model`` with the discrete variables ``discrete`` summed out by variable
    elimination, or None when a variable alone, a term's scope or a step's table holds more
    than :data:`MAX_JOINT_VALUES` values."""
    point = model_space(model).initial_point()
    if max(log_value_count([rv], model, point) for rv in discrete) > np.log(MAX_JOINT_VALUES):
        return None
    values = [joint_values([rv], model, point)[rv.name] for rv in discrete]
    sizes = [len(v) for v in values]
    zs = [model.rvs_to_values[rv] for rv in discrete]
    own, children = dependent_terms(model, zs)
    scopes = []
    for term in (*own, *children):
        held = set(ancestors([term]))
        scopes.append(tuple(i for i, z in enumerate(zs) if z in held))
    order = _order(scopes, sizes)
    if order is None:
        return None
    factors = [
        (_table(t, s, zs, values, sizes), s) for t, s in zip((*own, *children), scopes, strict=True)
    ]
    total, tables, steps = _eliminate(factors, order)
    at_point = values_at_initial_point(model, tables)
    best = _backward(steps, [t[None] for t in at_point], most_probable)
    fixed = {rv.name: values[i][best[i][0]] for i, rv in enumerate(discrete)}
    kept = dict(zip(zs, (pt.constant(fixed[rv.name]) for rv in discrete), strict=True))
    at_start = graph_replace(pt.add(0.0, *children), kept, strict=False)
    new = pm.do(model, fixed)
    renamed = to_new_values(model, new, [total, at_start, *tables])
    potential, *traceless = _without_traces([renamed[0] - renamed[1], *renamed[2:]])
    with new:
        pm.Potential("summed_out_discrete", potential)
    names = tuple(rv.name for rv in discrete)
    return Eliminated(
        new, names, dict(zip(names, values, strict=True)), tuple(traceless), tuple(steps)
    )


def _without_traces(graphs) -> list:
    """A copy of ``graphs`` whose variables keep no creation traceback (see
    :func:`~pymc_evidence.runtime._compile.without_tracebacks`: on a chain of steps each
    holding the same constant, their lists double at every rewrite)."""
    graphs = clone_replace(graphs)
    for var in ancestors(graphs):
        if var.owner is not None or isinstance(var, Constant):
            var.tag.trace = []
    return graphs
