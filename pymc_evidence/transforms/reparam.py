"""Automatic non-centred reparametrisation as a model transform.

A free location–scale variable ``x ~ D(mu, sigma)`` whose ``mu`` or ``sigma`` depends on other
free variables is rewritten as

    x_z ~ D(0, 1),   x = mu + sigma * x_z   (a ``pm.Deterministic`` with x's name and dims).

This is a change of variables of the latent space with Jacobian ``prod(sigma)``, so the
marginal likelihood ``log Z`` is unchanged, while the geometry a sampler sees (the funnel of a
centred hierarchical model) usually becomes much easier.

A variable is rewritten only when it is safe to do so:

* its distribution is ``Normal``, ``StudentT`` (``nu`` kept), ``Cauchy``, ``Laplace`` or
  ``Logistic``, as created by PyMC (no truncation, censoring or custom ``Distribution``);
* it is free (not observed) and has no value transform (no bounds, no ``ordered`` etc.);
* its location or scale depends on another free variable (directly or through
  deterministics, including deterministics created by this transform: chains are handled);
* its scale is provably positive (a positive constant, a free variable of positive support,
  ``exp``/``softplus``/``sigmoid``/``abs`` of anything, products, sums and powers of these).
  Otherwise the centred model gives zero density to ``sigma <= 0`` while the non-centred one
  would not, and ``log Z`` would change: such variables are left alone with a warning.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytensor.tensor.random.basic as rvb
from pymc.logprob.transforms import LogTransform
from pymc.model.fgraph import (
    ModelDeterministic,
    ModelFreeRV,
    ModelNamed,
    ModelVar,
    model_from_fgraph,
)
from pytensor.graph.basic import Constant
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.type_other import NoneTypeT

from ..estimators.diagnostics import ModelWarning, warn_user
from ..runtime.model_copy import model_fgraph, with_initvals
from ..runtime.runtime import runtime_of
from .group_rows import data_rich

try:  # PyTensor >= 2.32 moved graph walks to ``traversal``
    from pytensor.graph.traversal import ancestors
except ImportError:  # pragma: no cover - older PyTensor (PyMC 5 stacks)
    from pytensor.graph.basic import ancestors

__all__ = ["centred_scales", "noncentrable", "reparam_info", "reparametrize"]

#: Location-scale random variable ops -> (index of loc, index of scale) among dist params.
_LOC_SCALE = {
    rvb.NormalRV: (0, 1),
    rvb.StudentTRV: (1, 2),
    rvb.CauchyRV: (0, 1),
    rvb.LaplaceRV: (0, 1),
    rvb.LogisticRV: (0, 1),
}
_POSITIVE_RVS = (
    rvb.HalfNormalRV,
    rvb.HalfCauchyRV,
    rvb.ExponentialRV,
    rvb.GammaRV,
    rvb.InvGammaRV,
    rvb.LogNormalRV,
    rvb.WeibullRV,
)
_POSITIVE_ELEMWISE = {"Exp", "Exp2", "Cosh", "Softplus", "Sigmoid"}
_NONZERO_ELEMWISE = {"Abs", "Sqr"}  # positive unless the argument is a constant with zeros
_ALL_POSITIVE_ELEMWISE = {"Mul", "TrueDiv", "Add", "Sqrt", "Reciprocal", "Cast"}
_ANY_POSITIVE_ELEMWISE = {"ScalarMaximum"}
_PASS_THROUGH = {
    "DimShuffle",
    "SpecifyShape",
    "Alloc",
    "Subtensor",
    "AdvancedSubtensor",
    "AdvancedSubtensor1",
    "Reshape",
    "BroadcastTo",
    "ViewOp",
}
_NAME_IN_OP = "name" in getattr(ModelVar, "__props__", ())  # PyMC >= 6: name/dims on the Op


# --- PyMC 5 / 6 differences in the fgraph representation --------------------------------
def _node_name(node) -> str:
    return node.op.name if _NAME_IN_OP else node.outputs[0].name


def _node_dims(node):
    """Dims of a ModelVar node, in the form the ModelVar constructors take."""
    if _NAME_IN_OP:
        return tuple(node.op.dims)
    n_meta = 2 if isinstance(node.op, ModelFreeRV) else 1
    return tuple(node.inputs[n_meta:])


def _dim_names(dims) -> tuple[str, ...]:
    return tuple(d if isinstance(d, str) else str(d.data) for d in dims)


def _wrap_free(rv, value, name, dims):
    if _NAME_IN_OP:
        return ModelFreeRV(name=name, dims=dims, transform=None)(rv, value)
    rv.name = name
    return ModelFreeRV(transform=None)(rv, value, *dims)


def _wrap_deterministic(var, name, dims):
    if _NAME_IN_OP:
        return ModelDeterministic(name=name, dims=dims)(var)
    var.name = name
    return ModelDeterministic()(var, *dims)


# --- which variables qualify -------------------------------------------------------------
def _positive(var) -> bool:
    """Whether ``var`` is provably positive (almost surely, under its own prior)."""
    if isinstance(var, Constant):
        data = np.asarray(var.data)
        return data.dtype.kind in "fiu" and bool(np.all(data > 0))
    node = var.owner
    if node is None:
        return False
    op = node.op
    if isinstance(op, ModelFreeRV):
        return isinstance(op.transform, LogTransform) or (
            op.transform is None and isinstance(node.inputs[0].owner.op, _POSITIVE_RVS)
        )
    if isinstance(op, ModelDeterministic | ModelNamed):
        return _positive(node.inputs[0])
    if isinstance(op, Elemwise):
        kind = type(op.scalar_op).__name__
        if kind in _POSITIVE_ELEMWISE:
            return True
        if kind in _NONZERO_ELEMWISE:
            arg = node.inputs[0]
            return not isinstance(arg, Constant) or bool(np.all(np.asarray(arg.data) != 0))
        if kind in _ALL_POSITIVE_ELEMWISE:
            return var.dtype.startswith("float") and all(_positive(i) for i in node.inputs)
        if kind == "Pow":
            return _positive(node.inputs[0])
        if kind in _ANY_POSITIVE_ELEMWISE:
            return any(_positive(i) for i in node.inputs)
        return False
    if type(op).__name__ in _PASS_THROUGH:
        return _positive(node.inputs[0])
    return False


def _depends_on_free(var) -> bool:
    return any(
        a.owner is not None and isinstance(a.owner.op, ModelFreeRV) for a in ancestors([var])
    )


def _plan(fgraph, keep=()):
    """Free-RV nodes to rewrite (in topological order) and ``{name: reason}`` of those skipped;
    ``keep``: names left centred (data-rich, :func:`~.group_rows.data_rich`)."""
    todo, skipped = [], {}
    for node in fgraph.toposort():
        if not isinstance(node.op, ModelFreeRV) or node.op.transform is not None:
            continue
        if _node_name(node) in keep:
            continue
        rv_node = node.inputs[0].owner
        idx = _LOC_SCALE.get(type(rv_node.op)) if rv_node is not None else None
        if idx is None:
            continue
        params = rv_node.op.dist_params(rv_node)
        loc, scale = params[idx[0]], params[idx[1]]
        if not (_depends_on_free(loc) or _depends_on_free(scale)):
            continue
        if not _positive(scale):
            skipped[_node_name(node)] = (
                "its scale is not provably positive: the centred model gives it zero density "
                "for scale <= 0 and the non-centred one would not, which would change log Z"
            )
            continue
        todo.append(node)
    return todo, skipped


def _to_fgraph(model):
    """The model's graph and its custom initial values by name."""
    if model.parent is not None:
        raise ValueError("reparametrize works on a root model, not on a nested sub-model.")
    return model_fgraph(model)


# --- the rewrite ---------------------------------------------------------------------------
def _fresh_name(base: str, taken: set) -> str:
    name, k = f"{base}_z", 1
    while name in taken:
        name, k = f"{base}_z_{k}", k + 1
    taken.add(name)
    return name


def _rewrite_one(fgraph, node, z_name):
    """Replace the free-RV ``node`` by ``loc + scale * z`` with a standard ``z``."""
    rv = node.inputs[0]
    rv_node = rv.owner
    op = rv_node.op
    name, dims = _node_name(node), _node_dims(node)
    params = list(op.dist_params(rv_node))
    i_loc, i_scale = _LOC_SCALE[type(op)]
    loc, scale = params[i_loc], params[i_scale]
    size = op.size_param(rv_node)
    if size is None or isinstance(size.type, NoneTypeT):
        if None not in rv.type.shape:
            size = pt.constant(np.array(rv.type.shape, dtype="int64"))
        else:
            size = pt.stack(pt.broadcast_shape(*params, arrays_are_shapes=False))
    std = list(params)
    std[i_loc] = pt.constant(0.0, dtype=loc.dtype)
    std[i_scale] = pt.constant(1.0, dtype=scale.dtype)
    z_rv = op.make_node(op.rng_param(rv_node), size, *std).default_output()
    z_value = z_rv.type()
    z_value.name = z_name
    fgraph.add_input(z_value)
    z_free = _wrap_free(z_rv, z_value, z_name, dims)
    x = pt.cast(loc + scale * z_free, rv.dtype)
    x = rv.type.filter_variable(pt.broadcast_to(x, z_free.shape), allow_convert=True)
    value = node.inputs[1]  # graphs on the value variable (a potential made on values)
    deterministic = _wrap_deterministic(x, name, dims)
    fgraph.replace(node.outputs[0], deterministic, import_missing=True)
    if fgraph.clients.get(value):  # read it too: x has no value transform, so value == x
        fgraph.replace(value, deterministic, import_missing=True)
    return name, op.name, _dim_names(dims)


# --- public API ----------------------------------------------------------------------------
def noncentrable(model: pm.Model | None = None) -> tuple[str, ...]:
    """Names of the free variables :func:`reparametrize` would rewrite.

    Parameters
    ----------
    model : pymc.Model, optional
        The model; taken from the context when omitted.

    Returns
    -------
    tuple of str
        Names of the qualifying free variables, parents before children.

    Examples
    --------
    >>> from pymc_evidence.testing import hierarchical_normal
    >>> from pymc_evidence.transforms import noncentrable
    >>> noncentrable(hierarchical_normal(J=3, centered=True).model)
    ('theta',)
    >>> noncentrable(hierarchical_normal(J=3, centered=False).model)
    ()
    """
    model = pm.modelcontext(model)
    todo, _ = _plan(_to_fgraph(model)[0], data_rich(model))
    return tuple(_node_name(node) for node in todo)


def centred_scales(model: pm.Model | None = None) -> tuple[str, ...]:
    """Free location-scale variables whose *scale* depends on other free variables.

    These are the funnels of a model as written (``theta ~ Normal(mu, tau)`` with ``tau``
    free): where the model keeps them (``reparam=None``, or a scale :func:`reparametrize`
    cannot prove positive), a base fitted to the posterior never covers the funnel's neck
    and the particle kernels cannot enter it, so ``base="auto"`` anneals from the prior
    instead, which covers the neck from the start (as ``pm.sample_smc`` does). A data-rich
    vector (:func:`~.group_rows.data_rich`) has no funnel and is not one of them.

    Examples
    --------
    >>> from pymc_evidence.testing import hierarchical_normal
    >>> centred_scales(hierarchical_normal(J=3, centered=True).model)
    ('theta',)
    >>> centred_scales(reparametrize(hierarchical_normal(J=3, centered=True).model))
    ()
    """
    model = pm.modelcontext(model)
    names, rich = [], data_rich(model)
    for node in _to_fgraph(model)[0].toposort():
        if not isinstance(node.op, ModelFreeRV) or node.op.transform is not None:
            continue
        if _node_name(node) in rich:
            continue
        rv_node = node.inputs[0].owner
        idx = _LOC_SCALE.get(type(rv_node.op)) if rv_node is not None else None
        if idx is not None and _depends_on_free(rv_node.op.dist_params(rv_node)[idx[1]]):
            names.append(_node_name(node))
    return tuple(names)


def reparametrize(model: pm.Model | None = None) -> pm.Model:
    """Non-centred copy of ``model``: same ``log Z``, easier geometry for samplers.

    Every free location–scale variable ``x ~ D(mu, sigma)`` (``Normal``, ``StudentT``,
    ``Cauchy``, ``Laplace``, ``Logistic``) without value transform, whose location or scale
    depends on other free variables, becomes ``x_z ~ D(0, 1)`` (``StudentT`` keeps ``nu``)
    with the same shape and dims, plus ``pm.Deterministic("x", mu + sigma * x_z)`` with x's
    dims, so posteriors still report ``x``. Observed variables, data containers, coords,
    deterministics and potentials are copied. Variables whose scale is not provably positive
    are left alone with a :class:`~pymc_evidence.ModelWarning` (rewriting them would change
    ``log Z``), data-rich vectors (:func:`~.group_rows.data_rich`) without one.

    Parameters
    ----------
    model : pymc.Model, optional
        The model; taken from the context when omitted. It is never modified.

    Returns
    -------
    pymc.Model
        A new model (data containers are copies), or ``model`` itself when nothing qualifies.
        :func:`reparam_info` tells what was rewritten.

    Raises
    ------
    ValueError
        For nested sub-models. Custom initial values (``initval``) are kept on the
        variables not rewritten.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_evidence.testing import hierarchical_normal
    >>> from pymc_evidence.transforms import reparam_info, reparametrize
    >>> case = hierarchical_normal(J=3, centered=True)
    >>> new = reparametrize(case.model)
    >>> sorted(rv.name for rv in new.free_RVs)
    ['mu', 'tau', 'theta_z']
    >>> [d.name for d in new.deterministics], tuple(new.named_vars_to_dims["theta_z"])
    (['theta'], ('school',))
    >>> reparam_info(new)["rewritten"]
    {'theta': 'theta_z'}
    >>> pt = {"mu": 1.0, "tau_log__": np.log(2.0), "theta_z": np.zeros(3)}
    >>> th = {"mu": 1.0, "tau_log__": np.log(2.0), "theta": np.ones(3)}
    >>> bool(np.isclose(new.compile_logp()(pt),
    ...                 case.model.compile_logp()(th) + 3 * np.log(2.0)))
    True
    """
    model = pm.modelcontext(model)
    fgraph, initvals = _to_fgraph(model)
    todo, skipped = _plan(fgraph, data_rich(model))
    for name, reason in skipped.items():
        warn_user(
            f"reparametrize: {name!r} is not rewritten: {reason}.",
            ModelWarning,
        )
    if not todo:
        return model
    taken = set(model.named_vars) | {v.name for v in model.value_vars}
    rewritten, dists, dims = {}, {}, {}
    for node in todo:
        z_name = _fresh_name(_node_name(node), taken)
        name, dist, node_dims = _rewrite_one(fgraph, node, z_name)
        rewritten[name], dists[name], dims[name] = z_name, dist, node_dims
    new = with_initvals(model_from_fgraph(fgraph, mutate_fgraph=True), initvals)
    if hasattr(model, "check_bounds"):
        new.check_bounds = model.check_bounds
    info = {"rewritten": rewritten, "distributions": dists, "dims": dims, "skipped": skipped}
    runtime_of(new).origin = info  # read back by reparam_info
    return new


def reparam_info(model: pm.Model) -> dict:
    """What :func:`reparametrize` did to build ``model``.

    Parameters
    ----------
    model : pymc.Model
        A model returned by :func:`reparametrize`.

    Returns
    -------
    dict
        ``rewritten`` (``{name: name_z}``), ``distributions`` (``{name: rv op name}``),
        ``dims`` (``{name: dims}``) and ``skipped`` (``{name: reason}``); an empty dict for a
        model that :func:`reparametrize` did not build (including an input returned
        unchanged). The dict is a copy.

    Examples
    --------
    >>> from pymc_evidence.testing import hierarchical_normal
    >>> from pymc_evidence.transforms import reparam_info, reparametrize
    >>> new = reparametrize(hierarchical_normal(J=2).model)
    >>> reparam_info(new)["distributions"]
    {'theta': 'normal'}
    """
    origin = runtime_of(model).origin if isinstance(model, pm.Model) else None
    info = origin if isinstance(origin, dict) else {}
    return {k: dict(v) for k, v in info.items()}
