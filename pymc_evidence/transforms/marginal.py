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
vectorize_graph`), so it is exact and costs one batched evaluation of the dependent terms;
it is refused above :data:`MAX_JOINT_VALUES` joint values.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.graph.replace import graph_replace, vectorize_graph
from pytensor.graph.traversal import ancestors

from ..base._compile import compile_fn
from ..hygiene import ModelHygieneError, is_discrete

__all__ = ["MAX_JOINT_VALUES", "SummedOut", "finite_support", "sum_out_discrete"]

#: Most joint values of a model's discrete variables that are summed out by enumeration.
MAX_JOINT_VALUES = 4096

#: Distributions whose support is finite when their count parameter is fixed.
_BOUNDED = ("BernoulliRV", "CategoricalRV", "DiscreteUniformRV", "BinomialRV", "BetaBinomialRV")


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

    def draw(self, log_weights: np.ndarray, rng: np.random.Generator) -> dict:
        """Discrete draws ``name -> (n, *shape)`` given the rows' log weights ``(n, K)``
        (``(n, K, *shape)`` when :attr:`elementwise`)."""
        n, k = log_weights.shape[:2]
        w = log_weights.reshape(n, k, -1)
        w = np.exp(w - np.max(w, axis=1, keepdims=True))
        cdf = np.cumsum(w / w.sum(axis=1, keepdims=True), axis=1)
        u = rng.uniform(size=(n, 1, w.shape[2]))
        index = np.minimum((cdf < u).sum(axis=1), k - 1)  # (n, elements)
        if self.elementwise:
            name = self.names[0]
            return {name: self.values[name][index].reshape((n,) + log_weights.shape[2:])}
        return {name: self.values[name][index[:, 0]] for name in self.names}


def _fixed(param, model: pm.Model, name: str, what: str) -> np.ndarray:
    """The value of a parameter that must not depend on other random variables."""
    if set(ancestors([param])) & set(model.basic_RVs):
        raise ModelHygieneError(
            f"{name!r}'s {what} depends on other random variables, so its support is not "
            "fixed and it cannot be summed out; give it a fixed value"
        )
    return np.asarray(param.eval())


def finite_support(rv, model: pm.Model) -> np.ndarray:
    """The values one element of the discrete variable ``rv`` can take (1-D, sorted).

    Raises
    ------
    ModelHygieneError
        For a distribution with unbounded support (Poisson, geometric, negative binomial,
        ...) or one not known to be bounded, naming the variable.
    """
    op = type(rv.owner.op).__name__
    params = rv.owner.op.dist_params(rv.owner)
    if op == "BernoulliRV":
        return np.array([0, 1])
    if op == "CategoricalRV":
        return np.arange(int(params[0].shape[-1].eval()))
    if op == "DiscreteUniformRV":
        low, high = (_fixed(p, model, rv.name, "bounds") for p in params[:2])
        return np.arange(int(np.min(low)), int(np.max(high)) + 1)
    if op in ("BinomialRV", "BetaBinomialRV"):
        return np.arange(int(np.max(_fixed(params[0], model, rv.name, "number of trials"))) + 1)
    raise ModelHygieneError(
        f"{rv.name!r} is a discrete free variable of unbounded or unknown support "
        f"({op}); pymc_evidence sums out discrete variables of finite support only "
        f"({', '.join(n[:-2] for n in _BOUNDED)}). Sum it out by hand (e.g. truncate it "
        "and write the sum with pm.math.logsumexp in a pm.Potential, or use pm.Mixture)."
    )


def _too_many(discrete, model) -> bool:
    """True when the discrete variables take more than :data:`MAX_JOINT_VALUES` values."""
    point = model.initial_point()
    log_count = sum(
        np.size(point[rv.name]) * np.log(len(finite_support(rv, model))) for rv in discrete
    )
    return log_count > np.log(MAX_JOINT_VALUES)


def _joint_values(discrete, model) -> dict:
    """``name -> (K, *shape)``: every joint value of the discrete variables."""
    supports, shapes = [], []
    for rv in discrete:
        shape = tuple(int(s) for s in model.initial_point()[rv.name].shape)
        support = finite_support(rv, model)
        supports += [support] * int(np.prod(shape, dtype=int))
        shapes.append(shape)
    count = float(np.prod([len(s) for s in supports]))
    if count > MAX_JOINT_VALUES:
        names = ", ".join(repr(rv.name) for rv in discrete)
        raise ModelHygieneError(
            f"the discrete variables {names} take {count:.3g} joint values, more than the "
            f"{MAX_JOINT_VALUES} pymc_evidence sums over. Sum them out in the model "
            "(per observation: pm.Mixture / pm.NormalMixture instead of an indicator per row)."
        )
    grid = np.stack([g.ravel() for g in np.meshgrid(*supports, indexing="ij")], axis=1)
    out, start = {}, 0
    for rv, shape in zip(discrete, shapes, strict=True):
        size = int(np.prod(shape, dtype=int))
        out[rv.name] = grid[:, start : start + size].reshape((-1, *shape)).astype(rv.type.dtype)
        start += size
    return out


def _dependent_terms(model, values_of_z) -> tuple[list, list]:
    """The model's log density terms that depend on the discrete values, split into the
    discrete variables' own and the rest (their children)."""
    own, children = [], []
    zs = set(values_of_z)
    for rv in [*model.basic_RVs, *model.potentials]:
        term = model.logp(vars=[rv], jacobian=True)
        if model.rvs_to_values.get(rv) in zs:
            own.append(term)
        elif zs & set(ancestors([term])):
            children.append(term)
    return own, children


def sum_out_discrete(model: pm.Model) -> SummedOut | None:
    """``model`` with its discrete free variables summed out, or None when it has none.

    Raises
    ------
    ModelHygieneError
        A discrete variable of unbounded support, whose support depends on other random
        variables, or more than :data:`MAX_JOINT_VALUES` joint values.
    """
    discrete = [rv for rv in model.free_RVs if is_discrete(rv)]
    if not discrete:
        return None
    if len(discrete) == 1 and _too_many(discrete, model):
        summed = _sum_elementwise(model, discrete[0])
        if summed is not None:
            return summed
    values = _joint_values(discrete, model)
    z_values = [model.rvs_to_values[rv] for rv in discrete]
    own, children = _dependent_terms(model, z_values)
    total = pt.add(*own, *children)
    batched = {z: pt.constant(values[rv.name]) for z, rv in zip(z_values, discrete, strict=True)}
    log_weights = vectorize_graph(total, replace=batched)
    start = int(_start_index(model, log_weights))
    fixed = {rv.name: values[rv.name][start] for rv in discrete}
    kept = [pt.constant(fixed[rv.name]) for rv in discrete]
    at_start = graph_replace(
        pt.add(0.0, *children), dict(zip(z_values, kept, strict=True)), strict=False
    )
    new = pm.do(model, fixed)
    renamed = _to_new_values(model, new, [log_weights, at_start])
    with new:
        pm.Potential("summed_out_discrete", pm.math.logsumexp(renamed[0]) - renamed[1])
    return SummedOut(new, tuple(rv.name for rv in discrete), values, renamed[0])


def _values_at_initial_point(model, graph) -> np.ndarray:
    """``graph`` at the model's initial point, its continuous values moved by a fixed
    N(0, 0.5²) jitter (the initial point of ``mu ~ N(0, s)`` is 0, where ``switch(z, mu,
    0)`` would hide that the terms depend on ``z``)."""
    rng = np.random.default_rng(12345)
    point = model.initial_point()
    for name, value in point.items():
        if value.dtype.kind == "f":
            point[name] = value + 0.5 * rng.standard_normal(np.shape(value))
    inputs = [v for v in model.value_vars if v in set(ancestors([graph]))]
    return np.asarray(compile_fn(inputs, graph, jit=False)(*[point[v.name] for v in inputs]))


def _start_index(model, log_weights, axis=None):
    """The joint value (or, along ``axis``, each element's value) with the highest weight
    at the model's initial point: the value the summed-out variables are fixed at, where
    the children's terms are finite wherever any is."""
    weights = _values_at_initial_point(model, log_weights)
    return np.argmax(np.where(np.isnan(weights), -np.inf, weights), axis=axis)


def _to_new_values(model, new, graphs) -> list:
    """``graphs`` on ``new``'s value variables (matched by name) instead of ``model``'s."""
    by_name = {new.rvs_to_values[rv].name: new.rvs_to_values[rv] for rv in new.free_RVs}
    replace = {v: by_name[v.name] for v in model.value_vars if v.name in by_name}
    return graph_replace(graphs, replace, strict=False)


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
    shape = model.initial_point()[rv.name].shape
    rng = np.random.default_rng(0)
    mixed = rng.choice(support, size=(2, *shape))
    every = np.broadcast_to(support.reshape((-1,) + (1,) * len(shape)), (len(support), *shape))
    batch = np.concatenate([every, mixed]).astype(rv.type.dtype)
    total = vectorize_graph(pt.add(own, *children), replace={z: pt.constant(batch)})
    if not _separable(model, total, support, mixed):
        return None
    log_weights = total[: len(support)]
    start = support[_start_index(model, log_weights, axis=0)]
    at_start = graph_replace(
        pt.add(0.0, *[c.sum() for c in children]),
        {z: pt.constant(start.astype(rv.type.dtype))},
        strict=False,
    )
    new = pm.do(model, {rv.name: start.astype(rv.type.dtype)})
    renamed = _to_new_values(model, new, [log_weights, at_start])
    with new:
        summed = pm.math.logsumexp(renamed[0], axis=0).sum()
        pm.Potential("summed_out_discrete", summed - renamed[1])
    return SummedOut(new, (rv.name,), {rv.name: support}, renamed[0], elementwise=True)


def _elementwise_terms(model, rv, z):
    """``(own, children)``: elementwise log density terms of ``rv`` and of the variables
    that depend on it, each of ``rv``'s shape; ``(None, None)`` when one is not."""
    shape = model.initial_point()[rv.name].shape
    own = model.logp(vars=[rv], jacobian=True, sum=False)[0]
    children = []
    for other in [*model.basic_RVs, *model.potentials]:
        if other is rv:
            continue
        term = model.logp(vars=[other], jacobian=True, sum=False)[0]
        if z in set(ancestors([term])):
            children.append(term)
    point = model.initial_point()
    for term in (own, *children):
        inputs = [v for v in model.value_vars if v in set(ancestors([term]))]
        value = compile_fn(inputs, term, jit=False)(*[point[v.name] for v in inputs])
        if np.shape(value) != shape:
            return None, None
    return own, children


def _separable(model, total, support, mixed) -> bool:
    """True when the terms at the mixed joint values equal, element by element, the terms
    where every element takes that element's value."""
    values = _values_at_initial_point(model, total)
    k = len(support)
    for row, config in enumerate(mixed):
        index = np.searchsorted(support, config)
        expected = np.take_along_axis(values[:k], index[None], axis=0)[0]
        if not np.allclose(values[k + row], expected, rtol=1e-9, atol=1e-9, equal_nan=True):
            return False
    return True
