"""The values a model's discrete variables can take, and the log density terms they enter.

Shared by the two ways of summing them out: enumeration of every joint value or of each
element (:mod:`~pymc_evidence.transforms.marginal`) and variable elimination
(:mod:`~pymc_evidence.transforms.elimination`).
"""

from __future__ import annotations

import numpy as np
import pymc as pm
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import ancestors

from ..hygiene import ModelHygieneError
from ..runtime._compile import compile_fn, evaluate
from ..runtime.runtime import model_space

__all__ = [
    "MAX_JOINT_VALUES",
    "dependent_terms",
    "draw_index",
    "finite_support",
    "independence_chain",
    "joint_values",
    "log_value_count",
    "model_terms",
    "most_probable",
    "stale_deterministics",
    "start_index",
    "to_new_values",
    "values_at_initial_point",
]

#: Most values a table of the discrete variables may hold: every joint value when they are
#: enumerated together, one factor's or one elimination step's values otherwise.
MAX_JOINT_VALUES = 4096

#: Distributions whose support is finite when their count parameter is fixed.
_BOUNDED = ("BernoulliRV", "CategoricalRV", "DiscreteUniformRV", "BinomialRV", "BetaBinomialRV")


def _fixed(param, model: pm.Model, name: str, what: str) -> np.ndarray:
    """The value of a parameter that must not depend on other random variables."""
    if set(ancestors([param])) & set(model.basic_RVs):
        raise ModelHygieneError(
            f"{name!r}'s {what} depends on other random variables, so its support is not "
            "fixed and it cannot be summed out; give it a fixed value"
        )
    return evaluate(param)


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
        size = params[0].type.shape[-1]  # known statically, or evaluated
        return np.arange(int(evaluate(params[0].shape[-1]) if size is None else size))
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


def log_value_count(discrete, model: pm.Model, point=None) -> float:
    """``log`` of the number of joint values of the variables ``discrete`` (``point``: the
    model's initial point, when already at hand)."""
    point = model_space(model).initial_point() if point is None else point
    return float(
        sum(np.size(point[rv.name]) * np.log(len(finite_support(rv, model))) for rv in discrete)
    )


def joint_values(discrete, model: pm.Model, point=None) -> dict:
    """``name -> (K, *shape)``: every joint value of the discrete variables (``point``: the
    model's initial point, when already at hand).

    Raises
    ------
    ModelHygieneError
        Above :data:`MAX_JOINT_VALUES` joint values, naming the variables.
    """
    supports, shapes = [], []
    point = model_space(model).initial_point() if point is None else point
    for rv in discrete:
        shape = tuple(int(s) for s in point[rv.name].shape)
        support = finite_support(rv, model)
        supports += [support] * int(np.prod(shape, dtype=int))
        shapes.append(shape)
    count = float(np.prod([len(s) for s in supports]))
    if count > MAX_JOINT_VALUES:
        names = ", ".join(repr(rv.name) for rv in discrete)
        raise ModelHygieneError(
            f"the discrete variables {names} take {count:.3g} joint values, more than the "
            f"{MAX_JOINT_VALUES} pymc_evidence sums over, and no order of summing them one "
            "at a time keeps every table within that. Sum them out in the model (per "
            "observation: pm.Mixture / pm.NormalMixture instead of an indicator per row). "
            "Indicators that enter one term together (variable selection over many "
            "coefficients) have no cheaper exact sum: fewer of them, a continuous "
            "relaxation, or pm.sample_smc (its Metropolis moves take discrete variables; "
            "its estimate has no error bar)."
        )
    grid = np.stack([g.ravel() for g in np.meshgrid(*supports, indexing="ij")], axis=1)
    out, start = {}, 0
    for rv, shape in zip(discrete, shapes, strict=True):
        size = int(np.prod(shape, dtype=int))
        out[rv.name] = grid[:, start : start + size].reshape((-1, *shape)).astype(rv.type.dtype)
        start += size
    return out


def model_terms(model: pm.Model) -> list:
    """``(variable, elementwise log density term)`` of every random variable and potential,
    built in one call (one call per variable rebuilds every term each time, which on a model
    of many variables cost far more)."""
    every = [*model.basic_RVs, *model.potentials]
    return list(zip(every, model.logp(vars=every, jacobian=True, sum=False), strict=True))


def most_probable(log_weights: np.ndarray, axis=-1) -> np.ndarray:
    """The index of the largest weight along ``axis`` (a NaN weight counts as zero)."""
    return np.argmax(np.where(np.isnan(log_weights), -np.inf, log_weights), axis=axis)


def dependent_terms(model: pm.Model, values_of_z) -> tuple[list, list]:
    """The model's log density terms that depend on the discrete values, split into the
    discrete variables' own and the rest (their children)."""
    own, children = [], []
    zs = set(values_of_z)
    for rv, term in model_terms(model):
        term = term.sum()
        if model.rvs_to_values.get(rv) in zs:
            own.append(term)
        elif zs & set(ancestors([term])):
            children.append(term)
    return own, children


def values_at_initial_point(model: pm.Model, graphs: list) -> list:
    """``graphs`` at the model's initial point, its continuous values moved by a fixed
    N(0, 0.5²) jitter (the initial point of ``mu ~ N(0, s)`` is 0, where ``switch(z, mu,
    0)`` would hide that the terms depend on ``z``)."""
    rng = np.random.default_rng(12345)
    point = model_space(model).initial_point()
    for name, value in point.items():
        if value.dtype.kind == "f":
            point[name] = value + 0.5 * rng.standard_normal(np.shape(value))
    inputs = [v for v in model.value_vars if v in set(ancestors(graphs))]
    outs = compile_fn(inputs, list(graphs), jit=False)(*[point[v.name] for v in inputs])
    return [np.asarray(o) for o in outs]


def start_index(model: pm.Model, log_weights, axis=None):
    """The joint value (or, along ``axis``, each element's value) with the highest weight
    at the model's initial point: the value the summed-out variables are fixed at, where
    the children's terms are finite wherever any is."""
    (weights,) = values_at_initial_point(model, [log_weights])
    return most_probable(weights, axis=axis)


def stale_deterministics(source: pm.Model, names) -> list[str]:
    """Names of ``source``'s deterministics that read any of the variables ``names``: a
    copy with those variables summed out or integrated computes them at the variables'
    fixed values, and the results compute them again from the variables' draws."""
    removed = {source[name] for name in names}
    return [d.name for d in source.deterministics if removed & set(ancestors([d]))]


def to_new_values(model: pm.Model, new: pm.Model, graphs) -> list:
    """``graphs`` on ``new``'s value variables (matched by name) instead of ``model``'s."""
    by_name = {new.rvs_to_values[rv].name: new.rvs_to_values[rv] for rv in new.free_RVs}
    replace = {v: by_name[v.name] for v in model.value_vars if v.name in by_name}
    return graph_replace(graphs, replace, strict=False)


def draw_index(log_weights: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Indices ``(n, m)`` drawn from unnormalized log weights ``(n, K, m)`` along axis 1 (a
    weight that is NaN counts as zero)."""
    n, k = log_weights.shape[:2]
    w = np.where(np.isnan(log_weights), -np.inf, log_weights)
    w = np.exp(w - np.max(w, axis=1, keepdims=True))
    cdf = np.cumsum(w / w.sum(axis=1, keepdims=True), axis=1)
    u = rng.uniform(size=(n, 1, w.shape[2]))
    return np.minimum((cdf < u).sum(axis=1), k - 1)


def independence_chain(log_w: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The last states ``(n, m)`` of independence Metropolis chains through ``K`` proposals,
    from the first, given each proposal's log weight ``(n, K, m)`` (target over proposal
    density; a NaN weight counts as zero).

    Examples
    --------
    >>> import numpy as np
    >>> log_w = np.log([[[1.0], [0.0], [1.0]]])  # the middle proposal has no weight
    >>> int(independence_chain(log_w, np.random.default_rng(0))[0, 0]) in (0, 2)
    True
    """
    log_w = np.where(np.isnan(log_w), -np.inf, log_w)
    state = np.zeros((log_w.shape[0], log_w.shape[2]), dtype=int)
    for t in range(1, log_w.shape[1]):
        current = np.take_along_axis(log_w, state[:, None], axis=1)[:, 0]
        with np.errstate(invalid="ignore"):  # -inf - -inf: never accepted
            accept = np.log(rng.uniform(size=state.shape)) < log_w[:, t] - current
        state = np.where(accept, t, state)
    return state
