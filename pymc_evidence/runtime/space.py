"""The model's raveled unconstrained space, and one compiled log density on it.

Every base density and every sampler of this package works on the same flat vector: PyMC's
value variables (unconstrained, transforms applied) raveled in ``model.value_vars`` order. The
log density on it is ``model.logp(jacobian=True)``, so a normalized base here integrates the
model's joint density to the marginal likelihood.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.blocking import DictToArrayBijection, RaveledVars
from pymc.initial_point import make_initial_point_expression, make_initial_point_fn
from pymc.pytensorf import find_rng_nodes, replace_rng_nodes, reseed_rngs
from pytensor.graph.replace import graph_replace, vectorize_graph

from ._compile import compile_fn, compile_rows, rows_of

if TYPE_CHECKING:
    from .runtime import ModelRuntime

__all__ = ["DRAW_CHUNK", "ModelSpace", "in_chunks"]

#: Draws evaluated in one vectorized call by :func:`in_chunks`: a row-sized deterministic's
#: temporaries (bambi's ``mu``: draws × rows) stay a few MB and are reused, where all draws
#: at once allocated fresh arrays of hundreds of MB for every op (measured in
#: :doc:`/performance`, "What a user meets: the first call on a new model").
DRAW_CHUNK = 128


def in_chunks(fn, x: np.ndarray, size: int = DRAW_CHUNK) -> list:
    """``fn(x)`` (a :meth:`ModelSpace.rows_function`: a list of arrays with a leading
    dimension of ``len(x)``) evaluated ``size`` rows at a time and joined.

    Examples
    --------
    >>> import numpy as np
    >>> in_chunks(lambda x: [2 * x, x.sum(1)], np.ones((5, 2)), size=2)[1]
    array([2., 2., 2., 2., 2.])
    """
    parts = [fn(x[i : i + size]) for i in range(0, len(x), size)]
    return [np.concatenate(out) for out in zip(*parts, strict=True)]


def _initvals_key(model) -> tuple:
    """The model's initial-value settings, comparable: a changed one means a new function."""

    def one(value):
        if value is None or isinstance(value, str):
            return value
        if isinstance(value, np.ndarray | float | int):
            return (np.shape(value), np.asarray(value).tobytes())
        return id(value)  # a symbolic initial value

    return tuple((rv.name, one(v)) for rv, v in model.rvs_to_initial_values.items())


@dataclass(eq=False)
class ModelSpace:
    """Raveled unconstrained coordinates of a PyMC model, with its compiled log density.

    Use :func:`~pymc_evidence.runtime.runtime.model_space` to get one: it is the space of the
    model's :class:`~pymc_evidence.runtime.runtime.ModelRuntime`, built once per model, so the
    functions compiled here (log density, initial point, constrain and unconstrain, the
    posterior's tables) are compiled once.

    Attributes
    ----------
    model : pm.Model
    names : tuple of str
        Value-variable names, in raveling order.
    shapes : tuple of tuple of int
    sizes : tuple of int
    runtime : ModelRuntime
        The model's runtime, which owns this space (its backend and compiled stores).
    """

    model: pm.Model
    names: tuple
    shapes: tuple
    sizes: tuple
    runtime: ModelRuntime = field(repr=False)
    _logp_dlogp: object = field(default=None, repr=False)
    _unconstrain: object = field(default=None, repr=False)
    _constrain: object = field(default=None, repr=False)
    _initial_point: object = field(default=None, repr=False)
    _rows_fns: dict = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, model: pm.Model, runtime: ModelRuntime) -> ModelSpace:
        """The space of ``model``, owned by ``runtime`` (its layout read from the model's
        initial point); :func:`~pymc_evidence.runtime.runtime.model_space` calls this once."""
        space = cls(model=model, names=(), shapes=(), sizes=(), runtime=runtime)
        point = space.initial_point()
        space.names = tuple(v.name for v in model.value_vars)
        space.shapes = tuple(tuple(np.shape(point[n])) for n in space.names)
        space.sizes = tuple(int(np.prod(s, dtype=int)) for s in space.shapes)
        return space

    @property
    def ndim(self) -> int:
        """Length of the raveled vector."""
        return int(sum(self.sizes))

    def ravel(self, point: dict) -> np.ndarray:
        """Flatten a point (dict of value-variable name to array) into a vector."""
        return np.concatenate([np.ravel(point[name]) for name in self.names]).astype(float)

    def unravel(self, x: np.ndarray) -> dict:
        """Split a vector back into a point dict keyed by value-variable names."""
        info = tuple(
            (name, shape, size, np.dtype(float))
            for name, shape, size in zip(self.names, self.shapes, self.sizes, strict=True)
        )
        return DictToArrayBijection.rmap(RaveledVars(np.asarray(x, dtype=float), info))

    def initial_x(self) -> np.ndarray:
        """The model's initial point as a vector.

        PyMC compiles a function for every ``model.initial_point()`` (noticeable on a
        9-parameter ``LKJCholeskyCov`` model, several times a call); the compiled function is
        kept here while the model's initial-value settings stay as they were. It reads the
        model's data when called, so ``pm.set_data`` is seen."""
        return self.ravel(self.initial_point())

    def initial_point(self) -> dict:
        """``model.initial_point()``, from a function built once per initial-value setting
        (see :func:`_initial_point_fn`)."""
        key = _initvals_key(self.model)
        if self._initial_point is None or self._initial_point[0] != key:
            self._initial_point = (key, _initial_point_fn(self.model))
        return dict(self._initial_point[1](None))

    def logp_dlogp(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """Joint log density (Jacobians included) and its gradient at one vector."""
        if self._logp_dlogp is None:
            fn = self.model.logp_dlogp_function(ravel_inputs=True)
            fn.set_extra_values({})
            self._logp_dlogp = fn
        logp, grad = self._logp_dlogp(np.asarray(x, dtype=float))
        return float(logp), np.asarray(grad, dtype=float)

    def logp_many(self, xs: np.ndarray) -> np.ndarray:
        """Joint log density at each row of ``xs`` (shape ``(n, ndim)``)."""
        return np.array([self.logp_dlogp(x)[0] for x in np.atleast_2d(xs)])

    def on_flat(self, graphs, value_vars=None):
        """``(flat, graphs)``: ``graphs`` with the value variables replaced by slices of one
        float64 vector ``flat`` (in the order of ``value_vars``, default this model's; pass
        a clone's variables, ordered by :attr:`names`, for a cloned model)."""
        value_vars = self.model.value_vars if value_vars is None else value_vars
        flat = pt.tensor("x", dtype="float64", shape=(self.ndim,))  # static: see rows_of
        replace, start = {}, 0
        for var, shape, size in zip(value_vars, self.shapes, self.sizes, strict=True):
            replace[var] = flat[start : start + size].reshape(shape).astype(var.dtype)
            start += size
        return flat, graph_replace(graphs, replace, strict=False)

    def compile_raveled(self, graph, model: pm.Model | None = None, *, jit: bool = True):
        """Compile ``graph`` (in the value variables of ``model``, default this space's model,
        or a clone of it) as a function of one flat vector (``jit=False``: no JIT, for
        functions called a few times; see :func:`~pymc_evidence.runtime._compile.compile_fn`)."""
        flat, graph = self.on_flat(graph, (model or self.model).value_vars)
        return compile_fn([flat], graph, jit=jit)

    def compile_raveled_rows(self, graph: list):
        """``graph`` (a list, in this space's value variables) at every row of a matrix, with
        no JIT: one numpy call for all rows (the graph vectorized over rows) or, where it
        cannot be vectorized, a loop over rows. Returns ``fn(xs) -> list of arrays`` with
        a leading dimension of ``len(xs)``; for functions called a few times per call."""
        flat, graph = self.on_flat(graph)
        try:
            xs = rows_of(flat)
            fn = compile_fn([xs], vectorize_graph(graph, replace={flat: xs}), jit=False)
        except Exception:  # an op that cannot be batched: one row at a time
            one = compile_fn([flat], graph, jit=False)
            return lambda x: [np.stack(v) for v in zip(*(one(row) for row in x), strict=True)]

        def rows(x):
            outs = fn(np.asarray(x, dtype=np.float64))
            return [  # an output that does not depend on the row is broadcast
                o if np.ndim(o) == var.type.ndim + 1 else np.broadcast_to(o, (len(x), *np.shape(o)))
                for o, var in zip(outs, graph, strict=True)
            ]

        return rows

    def rows_function(self, key, graph_of):
        """:meth:`compile_raveled_rows` of ``graph_of()``, compiled once per ``key`` while
        this space lives (the outputs of a posterior group are compiled for every call of
        a model otherwise, a noticeable cost each time). ``key`` must name one graph for this
        space's model; the model's data stay inputs, so :func:`pymc.set_data` is seen."""
        fn = self._rows_fns.get(key)
        if fn is None:
            fn = self._rows_fns[key] = self.compile_raveled_rows(graph_of())
        return fn

    def batched_rows_function(self, key, graph_of, extra: int = 0):
        """As :meth:`rows_function`, compiled as the batched density is (on JAX where it
        can run: :func:`~pymc_evidence.runtime._compile.compile_rows`), for graphs evaluated
        at many rows whose numpy evaluation would cost more than a compilation. With
        ``extra``, ``graph_of(z)`` takes a vector ``z`` of that length, and each row is a
        point's raveled values followed by its ``z`` (random draws the graphs use)."""
        key = ("batched", key, extra)
        fn = self._rows_fns.get(key)
        if fn is None:
            if extra:
                z = pt.tensor("z", dtype="float64", shape=(extra,))
                flat, graph = self.on_flat(list(graph_of(z)))
                row = pt.tensor("x", dtype="float64", shape=(self.ndim + extra,))
                swap = {flat: row[: self.ndim], z: row[self.ndim :]}
                flat, graph = row, graph_replace(graph, swap, strict=False)
            else:
                flat, graph = self.on_flat(list(graph_of()))
            what = "the posterior's tables"
            vectorized, one = compile_rows(
                flat, graph, what=what, backend=self.runtime.backend, ndim=self.ndim + extra
            )
            fn = self._rows_fns[key] = _as_rows(one, vectorized)
        return fn

    def unconstrain(self, values: dict) -> np.ndarray:
        """Map constrained draws (dict of free-variable name to array with leading sample
        dims, as in a ``posterior`` group) to raveled unconstrained vectors.

        Returns an array of shape ``sample_dims + (ndim,)``.
        """
        if self._unconstrain is None:
            self._unconstrain = _compile_unconstrain(self.model)
        rvs = self.model.free_RVs
        first = np.asarray(values[rvs[0].name])
        lead = first.shape[: first.ndim - rvs[0].type.ndim]  # the value's ndim, not the
        # unconstrained one's (LKJCorr(n=2): a (2, 2) value stored as a (1,) vector)
        n = int(np.prod(lead, dtype=int))
        rows = [
            np.asarray(values[rv.name], dtype=rv.type.dtype).reshape(
                (n, *rv.type.shape)
                if None not in rv.type.shape
                else (n, *np.shape(values[rv.name])[len(lead) :])
            )
            for rv in rvs
        ]
        outs = self._unconstrain(rows)
        out = np.concatenate([np.reshape(o, (n, -1)) for o in outs], axis=1)
        return out.reshape((*lead, self.ndim))

    def constrain(self, x: np.ndarray) -> dict:
        """Map one raveled unconstrained vector to ``{free-variable name: constrained value}``
        (the form ``pm.sample(initvals=...)`` takes)."""
        if self._constrain is None:
            rvs = self.model.free_RVs
            graph = self.model.replace_rvs_by_values(rvs)
            self._constrain = self.compile_raveled(graph, jit=False)
        values = self._constrain(np.asarray(x, dtype=float))
        return {rv.name: np.asarray(v) for rv, v in zip(self.model.free_RVs, values, strict=True)}

    def layout(self) -> dict:
        """Names and sizes, to check that a base was fitted on the same space."""
        return {"names": self.names, "sizes": self.sizes}


def _compile_unconstrain(model: pm.Model):
    """``fn(values) -> list``: the free variables' unconstrained values at every row of
    their constrained ones (a list of ``(n, *shape)`` arrays), by one numpy call of the
    graph vectorized over rows (a loop over thousands of posterior draws was slow) or, where
    it cannot be vectorized, a loop."""
    inputs = [rv.type() for rv in model.free_RVs]
    to_input = dict(zip(model.free_RVs, inputs, strict=True))
    outputs = []
    for rv, value in zip(model.free_RVs, inputs, strict=True):
        transform = model.rvs_to_transforms.get(rv)
        outputs.append(value if transform is None else transform.forward(value, *rv.owner.inputs))
    outputs = graph_replace(outputs, to_input, strict=False)
    try:
        batched = [pt.tensor(dtype=v.type.dtype, shape=(None, *v.type.shape)) for v in inputs]
        rows = vectorize_graph(outputs, replace=dict(zip(inputs, batched, strict=True)))
        fn = compile_fn(batched, rows, jit=False)
        return lambda values: fn(*values)
    except Exception:  # an op that cannot be batched: one row at a time
        one = compile_fn(inputs, outputs, jit=False)
        return lambda values: [np.stack(v) for v in zip(*map(one, *values), strict=True)]


def _initial_point_fn(model):
    """PyMC's initial-point function of ``model`` (transformed values, default strategies),
    without JIT: each op its numpy implementation.

    ``pymc.initial_point.make_initial_point_fn`` compiles in ``FAST_COMPILE``, whose inner
    graphs still compile C: an ``LKJCholeskyCov``'s initial point held a ``Scan`` whose C
    code took seconds of a new model's first call, before anything was on the screen. The
    values are PyMC's own expressions; where they cannot run without JIT, PyMC's function.
    """
    values = make_initial_point_expression(
        free_rvs=model.free_RVs,
        rvs_to_transforms=model.rvs_to_transforms,
        initval_strategies=model.rvs_to_initial_values,
        return_transformed=True,
    )
    names = [model.rvs_to_values[rv].name for rv in model.free_RVs]
    try:
        fn = compile_fn([], replace_rng_nodes(values), jit=False)
    except Exception:  # an op without a numpy implementation: PyMC's compiled function
        return make_initial_point_fn(model=model, return_transformed=True)
    rngs = find_rng_nodes(fn.maker.fgraph.outputs)

    def initial_point(seed) -> dict:
        reseed_rngs(rngs, seed)
        return dict(zip(names, fn(), strict=True))

    return initial_point


def _as_rows(fn, vectorized: bool):
    """``fn(xs) -> list of (len(xs), ...) arrays`` from :func:`compile_rows`'s function."""
    if vectorized:
        return lambda xs: [np.asarray(o) for o in fn(np.asarray(xs, dtype=np.float64))]
    return lambda xs: [np.stack(v) for v in zip(*(fn(row) for row in xs), strict=True)]
