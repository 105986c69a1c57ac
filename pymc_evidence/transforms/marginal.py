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
The cheapest exact sum is taken: one variable whose elements each enter their own terms
(an indicator per observation) is summed element by element, several variables one at a
time (:mod:`~pymc_evidence.transforms.elimination`: a hidden Markov chain written with one
``pm.Categorical`` per step); otherwise the sum is one vectorized graph over every joint
value (:func:`pytensor.graph.replace.vectorize_graph`), at most :data:`MAX_JOINT_VALUES`
of them, and more are refused.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.graph.replace import graph_replace, vectorize_graph
from pytensor.graph.traversal import ancestors

from ..hygiene import is_discrete
from ..runtime._compile import compile_fn
from ..runtime.runtime import model_space
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
    summed = _cheaper_than_joint(model, discrete)
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


def _cheaper_than_joint(model, discrete) -> SummedOut | Eliminated | None:
    """The discrete variables summed by a way that costs less than enumerating their joint
    values, or None where none applies: one variable's elements one by one (``K`` values an
    element instead of ``K**n`` joint ones), else several variables one at a time (its
    largest table is at most the joint count).

    Tried whatever the joint count: an indicator per observation of a 9-row mixture has 512
    joint values, which the joint sum evaluated at every point (with a gather and a
    scatter of 512 x 9 values in the gradient), many times the cost of the elementwise sum
    (measured in :doc:`/hard_models`, "An allocation per row, a class per subject").
    """
    one = len(discrete) == 1
    if one and log_value_count(discrete, model) > np.log(len(finite_support(discrete[0], model))):
        summed = _sum_elementwise(model, discrete[0])
        if summed is not None:
            return summed
    return None if one else eliminate(model, discrete)


def _sum_elementwise(model, rv) -> SummedOut | None:
    """``rv``'s elements summed one by one, where each element's own term and its
    children's terms at that element depend on that element alone (an indicator per
    observation: ``y[i] ~ f(θ, z[i])``); None where that does not hold (checked at the
    initial point, with mixed joint values against the one-value-everywhere ones)."""
    z = model.rvs_to_values[rv]
    own, children = _elementwise_terms(model, rv, z)
    if own is None:
        return None
    support = finite_support(rv, model)
    shape = model_space(model).initial_point()[rv.name].shape
    mixed = _mixed_values(support, shape)
    every = np.broadcast_to(support.reshape((-1,) + (1,) * len(shape)), (len(support), *shape))
    batch = np.concatenate([every, mixed]).astype(rv.type.dtype)
    terms = pt.add(own, *children)
    checked = vectorize_graph(terms, replace={z: pt.constant(batch)})
    if not _separable(model, checked, support, mixed):
        return None
    # the model's graph holds the support's values only, not the check's mixed ones
    log_weights = vectorize_graph(terms, replace={z: pt.constant(every.astype(rv.type.dtype))})
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
    that depend on it, each of ``rv``'s shape; ``(None, None)`` when one is not. A child's
    term with more axes than ``rv`` but ``rv``'s shape first (a row of observations per
    element: a latent class per subject, several answers each) is summed over the rest."""
    point = model_space(model).initial_point()
    shape = point[rv.name].shape
    own, children = None, []
    for other, term in model_terms(model):
        if other is rv:
            own = term
        elif z in set(ancestors([term])):
            children.append(term)
    terms = []
    for term in (own, *children):
        inputs = [v for v in model.value_vars if v in set(ancestors([term]))]
        value = compile_fn(inputs, term, jit=False)(*[point[v.name] for v in inputs])
        if np.shape(value)[: len(shape)] != shape:
            return None, None
        extra = tuple(range(len(shape), np.ndim(value)))
        terms.append(term.sum(axis=extra) if extra else term)
    return terms[0], terms[1:]


def _mixed_values(support, shape) -> np.ndarray:
    """Joint values at which separability is checked: the support laid along the elements
    in every cyclic shift (no element's neighbours all share its value), and two random
    ones (a random value alone can be uniform: with three binary elements, one in four)."""
    size = int(np.prod(shape, dtype=int))
    shifts = [np.roll(np.resize(support, size), r) for r in range(len(support))]
    random = np.random.default_rng(0).choice(support, size=(2, size))
    return np.concatenate([np.stack(shifts), random]).reshape((-1, *shape))


def _separable(model, total, support, mixed) -> bool:
    """True when the terms ``total`` at the ``mixed`` joint values (its rows after the
    support's) equal, element by element, the terms where every element takes that
    element's value (its first rows)."""
    (values,) = values_at_initial_point(model, [total])
    k = len(support)
    for row, config in enumerate(mixed):
        index = np.searchsorted(support, config)
        expected = np.take_along_axis(values[:k], index[None], axis=0)[0]
        if not np.allclose(values[k + row], expected, rtol=1e-9, atol=1e-9, equal_nan=True):
            return False
    return True
