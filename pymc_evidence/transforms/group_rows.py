"""Where a group effect's rows are in a model's graph: ``b[g]``, then elementwise.

:func:`row_terms` turns the log density of the observed variable that a group effect ``b``
enters into a function of each row's effect ``u = b[g]``
(:class:`~pymc_evidence.transforms.group_quadrature.RowTerms`), or finds that it is not one:
``b`` must reach the rows through ``b[g]`` for one constant index ``g`` (after an
elementwise expression of ``b`` indexed by group, ``(mu + tau * z)[g]``, is lifted to
``z[g]``), or through ``b`` itself with one row per group, and from ``u`` to the rows' log
density every op must be ``Elemwise`` (or the broadcast of the result, or a parameter check
whose condition does not depend on ``u``).
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.graph.replace import graph_replace
from pytensor.graph.rewriting.utils import rewrite_graph
from pytensor.graph.traversal import ancestors
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.random.basic import NormalRV

from ..runtime._compile import evaluate
from ..runtime.simplify import simplify_logp
from .gaussian_latent import dependents, static_size
from .group_quadrature import RowTerms

__all__ = [
    "RICH_ROWS", "constant_in", "constant_index", "data_rich", "effect_prior", "effect_reads",
    "effect_rows", "elementwise_rows", "index_lifted", "length", "row_terms", "shape_of",
]  # fmt: skip

#: A ``Normal`` vector every element of which reaches at least this many rows of an
#: observed variable (through one index, as ``b[year]``) is data-rich: the likelihood pins
#: each element, its centred posterior has no funnel, and the non-centred one would tie
#: every ``z_k`` to the scale along a curved ridge (:func:`data_rich`).
RICH_ROWS = 20


def row_terms(model: pm.Model, effect, y) -> RowTerms | None:
    """The rows' log density of ``y`` as a function of each row's effect, or None when it
    does not depend on ``effect`` through one constant index and then elementwise."""
    found = effect_rows(model, [effect], y)
    if found is None:
        return None
    logp, (u,), group, ((mean, sd),) = found
    d2 = pt.grad(pt.sum(pt.grad(pt.sum(logp), u)), u)
    return RowTerms(logp, u, group, length(effect), mean, sd, gaussian=constant_in([d2], [u]))


def constant_in(graphs, us) -> bool:
    """True when ``graphs`` do not depend on ``us`` once specialized (a second derivative's
    fill of the rows' shape still names them after the canonical rewrites)."""
    graphs = rewrite_graph(graphs, include=("canonicalize", "ShapeOpt", "specialize"))
    return not any(u in ancestors(graphs) for u in us)


def data_rich(model: pm.Model) -> tuple[str, ...]:
    """Names of the free ``Normal`` vectors each of whose elements reaches at least
    :data:`RICH_ROWS` rows of one observed variable.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> year = np.repeat(np.arange(4), 30)
    >>> with pm.Model() as model:
    ...     tau = pm.HalfNormal("tau", 1.0)
    ...     b = pm.Normal("b", 0.0, tau, shape=4)
    ...     c = pm.Normal("c", 0.0, tau, shape=40)
    ...     _ = pm.Normal("y", b[year] + c[np.arange(120) % 40], 1.0, observed=np.zeros(120))
    >>> data_rich(model)
    ('b',)
    """
    names = []
    for rv in model.free_RVs:
        if not isinstance(rv.owner.op, NormalRV) or rv.type.ndim != 1:
            continue
        if model.rvs_to_transforms.get(rv) or length(rv) < 2:
            continue
        for y in (d for d in dependents(model, rv) if d in model.observed_RVs):
            rows = row_terms(model, rv, y)
            counts = None if rows is None else np.bincount(rows.group, minlength=length(rv))
            if counts is not None and counts.min() >= RICH_ROWS:
                names.append(rv.name)
                break
    return tuple(names)


def effect_rows(model: pm.Model, effects, y, shared: bool = True):
    """``(logp, us, group, priors)``: the rows' log density of ``y`` with each of
    ``effects`` (Normal vectors) replaced by a dummy ``(n,)`` input of each row's value
    (``us``), the one group index they share (with ``shared=False``, a tuple of each
    effect's index) and each effect's prior mean and sd over its groups; None when an
    effect does not reach the rows through one constant index and then elementwise."""
    logp = model.logp(vars=[y], sum=False)[0]
    n = length(y)
    if logp.type.ndim != 1 or not n:
        return None
    us, groups, priors = [], [], []
    for k, effect in enumerate(effects):
        value, n_groups = model.rvs_to_values[effect], length(effect)
        u = pt.vector(f"u_row_effect_{k}", dtype="float64", shape=(n,))
        logp = index_lifted(logp, value)
        found = effect_reads(logp, value, n, n_groups)
        if found is None or (shared and groups and not np.array_equal(found[0], groups[0])):
            return None
        groups.append(found[0])
        logp = graph_replace(logp, {r: u for r in found[1]}, strict=False)
        if value in ancestors([logp]):
            return None
        us.append(u)
        priors.append(effect_prior(model, effect, n_groups))
    logp = elementwise_rows(logp, us)
    group = groups[0] if shared else tuple(groups)
    return None if logp is None else (logp, tuple(us), group, tuple(priors))


def elementwise_rows(logp, us):
    """``logp`` (the rows' log density in the row effects ``us``) simplified and without
    the parameter checks that depend on ``us``, or None when a row depends on other rows'
    effects (an op between ``us`` and ``logp`` that is not elementwise)."""
    logp = simplify_logp(logp)
    for u in us:
        logp = _without_effect_checks(logp, u)
    return logp if all(_elementwise(logp, u) for u in us) else None


def effect_prior(model: pm.Model, effect, n_groups: int):
    """The prior mean and sd of every group's effect, in the model's value variables."""
    mean, sd = effect.owner.op.dist_params(effect.owner)
    shape = (n_groups,)
    return tuple(
        model.replace_rvs_by_values(
            [
                pt.broadcast_to(mean, shape).astype("float64"),
                pt.broadcast_to(sd, shape).astype("float64"),
            ]
        )
    )


def shape_of(var) -> tuple | None:
    """The shape of ``var`` as integers (None where it is not constant)."""
    if all(s is not None for s in var.type.shape):
        return tuple(int(s) for s in var.type.shape)
    try:
        return tuple(int(s) for s in evaluate(var.shape))
    except Exception:  # a shape that depends on other inputs
        return None


def length(var) -> int:
    """The number of elements of a vector variable (0 where its shape is not constant)."""
    if static_size(var):
        return static_size(var)
    try:
        return int(np.prod(evaluate(var.shape), dtype=int))
    except Exception:  # a shape that depends on other inputs
        return 0


def effect_reads(logp, value, n: int, n_groups: int):
    """``(group index, variables to replace by the row effect)``: the outputs of ``value[g]``
    for one constant ``g``, or ``value`` itself with one row per group; else None."""
    nodes = {v.owner for v in ancestors([logp]) if v.owner is not None}
    clients = [node for node in nodes if any(i is value for i in node.inputs)]
    indices = [_index_of(node, value, n_groups) for node in clients]
    if clients and all(i is not None for i in indices):
        first = indices[0]
        if all(np.array_equal(first, i) for i in indices) and len(first) == n:
            return first, [node.outputs[0] for node in clients]
        return None
    if any(i is not None for i in indices) or n != n_groups:
        return None
    return np.arange(n_groups), [value]


def index_lifted(logp, value):
    """``logp`` with every ``e(value, ...)[g]`` of an elementwise ``e`` written as
    ``e(value[g], ...[g])``, down to ``value`` (a non-centred effect ``mu + tau * z``
    indexed by group), so that :func:`effect_reads` finds ``value[g]`` itself."""
    nodes = {v.owner for v in ancestors([logp]) if v.owner is not None}
    lifted = {}
    for node in nodes:
        name = type(node.op).__name__
        if name not in ("AdvancedSubtensor1", "AdvancedSubtensor") or len(node.inputs) != 2:
            continue
        source, index = node.inputs
        if source is value or value not in ancestors([source]):
            continue
        new = _lift(source, index, value)
        if new is not None:
            lifted[node.outputs[0]] = new
    return graph_replace(logp, lifted, strict=False) if lifted else logp


def _lift(x, index, value):
    """``x[index]`` pushed through the vector ``Elemwise`` ops between ``value`` and ``x``
    (and ``value[inner][index]`` written ``value[inner[index]]`` for constant indices: an
    upper level read through a lower one, ``(b[state] + tau * z)[county]``), or None where
    another op stands between them."""
    if x is value:
        return value[index]
    node = x.owner
    if node is not None and node.inputs and node.inputs[0] is value:
        return _composed(node, index, value)
    if node is None or not isinstance(node.op, Elemwise) or x.type.ndim != 1:
        return None
    inputs = []
    for inp in node.inputs:
        if value in ancestors([inp]):
            inp = _lift(inp, index, value)
            if inp is None:
                return None
        elif inp.type.ndim == 1 and not inp.type.broadcastable[0]:
            inp = inp[index]
        inputs.append(inp)
    return node.op(*inputs)


def _composed(node, index, value):
    """``value[inner[index]]`` where ``node`` is ``value[inner]`` and both indices are
    constant integer vectors; else None."""
    if type(node.op).__name__ not in ("AdvancedSubtensor1", "AdvancedSubtensor"):
        return None
    if len(node.inputs) != 2 or node.outputs[0].type.ndim != 1:
        return None
    inner = constant_index(node.inputs[1], length(value))
    outer = None if inner is None else constant_index(index, len(inner))
    if outer is None:
        return None
    return value[pt.constant(inner[outer])]


def _index_of(node, value, n_groups: int):
    """The constant index ``g`` of ``node`` when it is ``value[g]`` (a 1-d integer index,
    a constant or a data container's value), else None."""
    if type(node.op).__name__ not in ("AdvancedSubtensor1", "AdvancedSubtensor"):
        return None
    if len(node.inputs) != 2 or node.inputs[0] is not value or node.outputs[0].type.ndim != 1:
        return None
    return constant_index(node.inputs[1], n_groups)


def constant_index(index, n_groups: int, ndim: int = 1):
    """The value of ``index`` (a constant or a data container's value) when it is an integer
    array of ``ndim`` dimensions (1: a group index, 0: a column) within ``n_groups``,
    wrapped to ``0..n_groups-1``; else None."""
    data = index.get_value() if hasattr(index, "get_value") else getattr(index, "data", None)
    if data is None:
        return None
    data = np.asarray(data)
    if data.ndim != ndim or data.dtype.kind not in "iu" or data.min(initial=0) < -n_groups:
        return None
    if data.max(initial=0) >= n_groups:
        return None
    return np.mod(data, n_groups).astype(np.int64)


def _without_effect_checks(logp, u):
    """``logp`` without PyMC's parameter checks whose condition depends on ``u`` (a
    Poisson's ``mu >= 0``): a row outside the support is then NaN or ``-inf`` by itself
    (:meth:`RowTerms.at` counts NaN as ``-inf``), where the check would reduce over rows."""
    while True:
        nodes = {v.owner for v in ancestors([logp]) if v.owner is not None}
        checks = [
            node
            for node in nodes
            if type(node.op).__name__ == "CheckParameterValue" and u in ancestors(node.inputs[1:])
        ]
        if not checks:
            return logp
        logp = graph_replace(logp, {c.outputs[0]: c.inputs[0] for c in checks}, strict=False)


def _elementwise(logp, u) -> bool:
    """True when every op between ``u`` and ``logp`` is ``Elemwise`` on vectors (or the
    broadcast of the result to the rows' shape, or a parameter check whose condition does
    not depend on ``u``), so that row ``i`` depends on ``u[i]`` alone."""
    depends: dict = {}
    stack = [logp]
    while stack:
        var = stack[-1]
        if var is u or var.owner is None:
            depends[var] = var is u
            stack.pop()
            continue
        todo = [i for i in var.owner.inputs if i not in depends]
        if todo:
            stack.extend(todo)
            continue
        stack.pop()
        inputs = var.owner.inputs
        depends[var] = any(depends[i] for i in inputs)
        if depends[var] and not _elementwise_node(var, inputs, depends):
            return False
    return True


def _elementwise_node(var, inputs, depends) -> bool:
    """Whether one node that depends on the row effect keeps rows apart."""
    op = var.owner.op
    if var.type.ndim != 1:
        return False
    if isinstance(op, Elemwise):
        return all(i.type.ndim == 1 or not depends[i] for i in inputs)
    if type(op).__name__ in ("Alloc", "CheckParameterValue", "SpecifyShape"):
        return not any(depends[i] for i in inputs[1:])  # shapes, conditions
    if type(op).__name__ == "Subtensor":  # PyMC writes b[arange(J)] as b[:J]
        return _whole_slice(op, inputs)
    return False


def _whole_slice(op, inputs) -> bool:
    """Whether a ``Subtensor`` node takes every element of its vector, in order."""
    from pytensor.tensor.subtensor import get_idx_list

    n = inputs[0].type.shape[0]
    if n is None or len(op.idx_list) != 1 or not isinstance(op.idx_list[0], slice):
        return False
    try:
        (index,) = get_idx_list(inputs, op.idx_list)
        bounds = [None if b is None else int(pt.get_underlying_scalar_constant_value(b))
                  for b in (index.start, index.stop, index.step)]  # fmt: skip
    except Exception:  # a bound that is not a constant
        return False
    return range(*slice(*bounds).indices(n)) == range(n)
