"""Discrete latent variables with finite support, summed out of a model.

The evidence does not change when a discrete latent variable ``z`` is summed out:
``p(y) = ∫ Σ_z p(θ, z, y) dθ``. :func:`sum_out_discrete` makes a continuous copy of a model
on which every method runs: PyMC's :func:`pymc.do` fixes each discrete free variable at one
value ``z0``, and a ``pm.Potential`` adds ``log Σ_k p(z = k, ...) - log p(..., z = z0)``,
where the sum runs over every joint value of the discrete variables and the terms are the
log densities that depend on them (their own, and those of their children, observed or
free). The copy's log density is then ``log Σ_z p(θ, z, y)`` exactly, and its free
variables' own terms are still a normalized prior (the potential is a likelihood term), so
the prior-to-posterior paths hold as well.

Written here rather than taken from pymc-extras' ``marginalize``: its releases pin one minor
version of PyMC each (0.15.1: ``pymc<6.4``), and this library supports PyMC 5 and 6.
The sum is one vectorized graph over the joint values (:func:`pytensor.graph.replace.
vectorize_graph`), so it is exact and costs one batched evaluation of the dependent terms.
Above :data:`MAX_JOINT_VALUES` joint values, one variable whose elements each enter their
own terms (an indicator per observation) is summed element by element, and several
variables one at a time (:mod:`~pymc_evidence.transforms.elimination`: a hidden Markov
chain written with one ``pm.Categorical`` per step); what neither covers is refused.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.graph.replace import graph_replace, vectorize_graph
from pytensor.graph.traversal import ancestors

from ..base._compile import compile_fn
from ..base.space import model_space
from ..hygiene import is_discrete
from .discrete_values import (
    MAX_JOINT_VALUES,
    dependent_terms,
    draw_index,
    finite_support,
    joint_values,
    log_value_count,
    model_terms,
    start_index,
    to_new_values,
    values_at_initial_point,
)
from .elimination import Eliminated, eliminate

__all__ = ["MAX_JOINT_VALUES", "SummedOut", "finite_support", "sum_out_discrete"]


@dataclass(frozen=True)
class SummedOut:
    """A model with its discrete variables summed out, and how to draw them back.

    Attributes
    ----------
    model : pm.Model
        The continuous model (discrete variables fixed by :func:`pymc.do`, plus the
        potential ``"summed_out_discrete"``).
    names : tuple of str
        The discrete variables summed out.
    values : dict
        ``name -> array (K, *shape)``: the variable's value in each of the K joint values.
    log_weights : TensorVariable
        ``(K,)`` log of ``p(z = k, y, θ)`` up to a constant in ``k``, on ``model``'s value
        variables: the conditional ``p(z | θ, y)`` after normalizing.
    """

    model: pm.Model
    names: tuple
    values: dict
    log_weights: object
    #: True when one variable's elements were summed one by one (``values[name]`` is then
    #: its support (K,), and ``log_weights`` is ``(K, *shape)``: the elements' conditionals).
    elementwise: bool = False

    @property
    def tables(self) -> tuple:
        """The graphs :meth:`draw` needs at each row: ``(log_weights,)``."""
        return (self.log_weights,)

    def draw(self, tables: list, rng: np.random.Generator) -> dict:
        """Discrete draws ``name -> (n, *shape)`` given the rows' log weights ``(n, K)``
        (``(n, K, *shape)`` when :attr:`elementwise`), the one entry of ``tables``."""
        (log_weights,) = tables
        n, k = log_weights.shape[:2]
        index = draw_index(log_weights.reshape(n, k, -1), rng)  # (n, elements)
        if self.elementwise:
            name = self.names[0]
            return {name: self.values[name][index].reshape((n,) + log_weights.shape[2:])}
        return {name: self.values[name][index[:, 0]] for name in self.names}


def sum_out_discrete(model: pm.Model) -> SummedOut | Eliminated | None:
    """``model`` with its discrete free variables summed out, or None when it has none.

    Raises
    ------
    ModelHygieneError
        A discrete variable of unbounded support, whose support depends on other random
        variables, or more than :data:`MAX_JOINT_VALUES` joint values that can be summed
        neither element by element nor one variable at a time
        (:func:`~pymc_evidence.transforms.elimination.eliminate`).
    """
    discrete = [rv for rv in model.free_RVs if is_discrete(rv)]
    if not discrete:
        return None
    if log_value_count(discrete, model) > np.log(MAX_JOINT_VALUES):
        summed = _sum_elementwise(model, discrete[0]) if len(discrete) == 1 else None
        summed = summed or eliminate(model, discrete)
        if summed is not None:
            return summed
    values = joint_values(discrete, model)
    z_values = [model.rvs_to_values[rv] for rv in discrete]
    own, children = dependent_terms(model, z_values)
    total = pt.add(*own, *children)
    batched = {z: pt.constant(values[rv.name]) for z, rv in zip(z_values, discrete, strict=True)}
    log_weights = vectorize_graph(total, replace=batched)
    start = int(start_index(model, log_weights))
    fixed = {rv.name: values[rv.name][start] for rv in discrete}
    kept = [pt.constant(fixed[rv.name]) for rv in discrete]
    at_start = graph_replace(
        pt.add(0.0, *children), dict(zip(z_values, kept, strict=True)), strict=False
    )
    new = pm.do(model, fixed)
    renamed = to_new_values(model, new, [log_weights, at_start])
    with new:
        pm.Potential("summed_out_discrete", pm.math.logsumexp(renamed[0]) - renamed[1])
    return SummedOut(new, tuple(rv.name for rv in discrete), values, renamed[0])


def _sum_elementwise(model, rv) -> SummedOut | None:
    """``rv``'s elements summed one by one, where each element's own term and its
    children's terms at that element depend on that element alone (an indicator per
    observation: ``y[i] ~ f(θ, z[i])``); None where that does not hold (checked at the
    initial point, with two random joint values against the one-value-everywhere ones)."""
    z = model.rvs_to_values[rv]
    own, children = _elementwise_terms(model, rv, z)
    if own is None:
        return None
    support = finite_support(rv, model)
    shape = model_space(model).initial_point()[rv.name].shape
    rng = np.random.default_rng(0)
    mixed = rng.choice(support, size=(2, *shape))
    every = np.broadcast_to(support.reshape((-1,) + (1,) * len(shape)), (len(support), *shape))
    batch = np.concatenate([every, mixed]).astype(rv.type.dtype)
    total = vectorize_graph(pt.add(own, *children), replace={z: pt.constant(batch)})
    if not _separable(model, total, support, mixed):
        return None
    log_weights = total[: len(support)]
    start = support[start_index(model, log_weights, axis=0)]
    at_start = graph_replace(
        pt.add(0.0, *[c.sum() for c in children]),
        {z: pt.constant(start.astype(rv.type.dtype))},
        strict=False,
    )
    new = pm.do(model, {rv.name: start.astype(rv.type.dtype)})
    renamed = to_new_values(model, new, [log_weights, at_start])
    with new:
        summed = pm.math.logsumexp(renamed[0], axis=0).sum()
        pm.Potential("summed_out_discrete", summed - renamed[1])
    return SummedOut(new, (rv.name,), {rv.name: support}, renamed[0], elementwise=True)


def _elementwise_terms(model, rv, z):
    """``(own, children)``: elementwise log density terms of ``rv`` and of the variables
    that depend on it, each of ``rv``'s shape; ``(None, None)`` when one is not."""
    point = model_space(model).initial_point()
    shape = point[rv.name].shape
    own, children = None, []
    for other, term in model_terms(model):
        if other is rv:
            own = term
        elif z in set(ancestors([term])):
            children.append(term)
    for term in (own, *children):
        inputs = [v for v in model.value_vars if v in set(ancestors([term]))]
        value = compile_fn(inputs, term, jit=False)(*[point[v.name] for v in inputs])
        if np.shape(value) != shape:
            return None, None
    return own, children


def _separable(model, total, support, mixed) -> bool:
    """True when the terms at the mixed joint values equal, element by element, the terms
    where every element takes that element's value."""
    (values,) = values_at_initial_point(model, [total])
    k = len(support)
    for row, config in enumerate(mixed):
        index = np.searchsorted(support, config)
        expected = np.take_along_axis(values[:k], index[None], axis=0)[0]
        if not np.allclose(values[k + row], expected, rtol=1e-9, atol=1e-9, equal_nan=True):
            return False
    return True
