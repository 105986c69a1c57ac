"""The model's own prior as a base density (the tempering path is then the power posterior).

The prior is normalized on the raveled unconstrained space once the Jacobians of the value
transforms are included, so it is a base like any other: :class:`PriorBase` draws from it
exactly (forward sampling of the free variables, then their value transforms) and evaluates
``model.logp(vars=model.free_RVs, jacobian=True)``. Both compiled functions are made once per
model and cached with its :class:`~pymc_evidence.runtime.space.ModelSpace`.

:func:`prior_draws` draws ``n`` points in one compiled, vectorized call: the graph of one draw
(free variables and their forward transforms) is batched over a leading dimension of length
``n``. Where a distribution cannot be batched it falls back to calling a compiled one-draw
function ``n`` times. Both are deterministic in the seed.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import ClassVar

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from ..runtime._compile import checks_to_ninf, compile_fn, compile_rows, float64_constants
from ..runtime.runtime import model_space
from ..runtime.space import ModelSpace
from .gaussian import assign_shared, make_shared, shared_structure
from .stats import FitStats

_log = logging.getLogger("pymc_evidence")

__all__ = ["PriorBase", "prior_draws"]

#: Prior draws (seeded by :data:`MOMENT_SEED`) behind :meth:`PriorBase.moments` and ``scale``.
N_MOMENT_DRAWS = 4000
MOMENT_SEED = 0
#: Guards the compiled draw functions (their random generators and storage are shared).
_DRAW_LOCK = threading.Lock()


def _cache(space: ModelSpace) -> dict:
    return space.runtime.compiled("prior")


def _batch(outputs, replace_map):
    """``vectorize_graph``, except that a random variable whose first parameter gained fewer
    batch dimensions than another parameter gets that parameter padded first (PyTensor sizes
    the batched draw from the first parameter only)."""
    from pytensor.graph.basic import Apply
    from pytensor.graph.replace import _vectorize_node
    from pytensor.graph.traversal import toposort, truncated_graph_inputs
    from pytensor.tensor.random.op import RandomVariable

    inputs = truncated_graph_inputs(outputs, ancestors_to_include=replace_map.keys())
    new = {inp: replace_map.get(inp, inp) for inp in inputs}
    for node in toposort(outputs, blockers=inputs):
        args = [new.get(inp, inp) for inp in node.inputs]
        if isinstance(node.op, RandomVariable):
            pairs = zip(args[2:], node.inputs[2:], strict=True)
            extra = [a.type.ndim - o.type.ndim for a, o in pairs]
            if extra and extra[0] < max(extra):
                args[2] = pt.shape_padleft(args[2], max(extra) - extra[0])
        out = _vectorize_node(node.op, node, *args)
        outs = out.outputs if isinstance(out, Apply) else out
        for old, var in zip(node.outputs, outs, strict=True):
            new.setdefault(old, var)
    return [new[o] for o in outputs]


def _one_draw_graphs(model: pm.Model, names: tuple):
    """Unconstrained value of each free variable at one forward draw, in ``names`` order."""
    by_value = {}
    for rv in model.free_RVs:
        transform = model.rvs_to_transforms.get(rv)
        value = rv if transform is None else transform.forward(rv, *rv.owner.inputs)
        by_value[model.rvs_to_values[rv].name] = value
    return [by_value[name] for name in names]


def _compile_draws(space: ModelSpace):
    """``(fn, rngs, vectorized)``: ``fn(n)`` returns ``(n, d)`` draws (vectorized) or
    ``fn()`` one ``(d,)`` draw (fallback); ``rngs`` are its private generators."""
    from pymc.distributions.shape_utils import change_dist_size
    from pymc.pytensorf import find_rng_nodes, replace_rng_nodes
    from pytensor.graph.traversal import ancestors

    model = space.model
    outs = _one_draw_graphs(model, space.names)
    try:
        n = pt.lscalar("n")
        free = set(model.free_RVs)
        roots = [rv for rv in model.free_RVs if not free & set(ancestors(rv.owner.inputs))]
        resized = {rv: change_dist_size(rv, (n,), expand=True) for rv in roots}
        batched = [pt.reshape(v, (n, -1)) for v in _batch(outs, resized)]
        flat = replace_rng_nodes([pt.concatenate(batched, axis=1)])[0]
        return compile_fn([n], flat, jit=False), find_rng_nodes([flat]), True
    except Exception as err:  # a distribution that cannot be batched (LKJCorr on PyMC 6)
        # the same draws one point at a time: right, and without JIT about a millisecond a
        # draw, so not worth a warning the user cannot act on
        _log.debug("could not vectorize prior draws (%r); drawing one point at a time", err)
    flat = replace_rng_nodes([pt.concatenate([pt.flatten(v) for v in outs])])[0]
    return compile_fn([], flat, jit=False), find_rng_nodes([flat]), False


def prior_draws(space: ModelSpace, n: int, seed) -> np.ndarray:
    """``n`` exact draws from the model's prior, as raveled unconstrained vectors ``(n, d)``.

    Parameters
    ----------
    space : ModelSpace
    n : int
    seed : int, SeedSequence, Generator or None
        The same seed gives the same draws.

    Examples
    --------
    >>> import pymc as pm
    >>> with pm.Model() as model:
    ...     s = pm.HalfNormal("s", 2.0)
    ...     mu = pm.Normal("mu", 0.0, s, shape=2)
    >>> x = prior_draws(model_space(model), 5000, seed=1)
    >>> x.shape, bool(abs(x[:, 1].mean()) < 0.1)
    ((5000, 3), True)
    """
    from pymc.pytensorf import reseed_rngs

    cache = _cache(space)
    if "draw" not in cache:
        cache["draw"] = _compile_draws(space)
    fn, rngs, vectorized = cache["draw"]
    entropy = np.random.default_rng(seed).integers(2**63, size=2)
    n = int(n)
    with _DRAW_LOCK:  # reseed and draw at once: runs in threads share the function
        reseed_rngs(rngs, [int(e) for e in entropy])
        if vectorized:
            out = np.asarray(fn(n), dtype=float)
        else:
            out = np.array([np.asarray(fn(), dtype=float) for _ in range(n)])
    return out.reshape(n, space.ndim)


def _prior_logp_fn(space: ModelSpace):
    """``(fn, vectorized)``: the prior log density (Jacobians included) of rows of a matrix."""
    model = space.model
    flat, graph = space.on_flat(model.logp(vars=model.free_RVs, jacobian=True))
    graph = pt.cast(checks_to_ninf(float64_constants(graph)), "float64")
    vectorized, fn = compile_rows(
        flat, graph, what="the prior base", backend=space.runtime.backend, ndim=space.ndim
    )
    return fn, vectorized


@dataclass(frozen=True, eq=False)
class PriorBase:
    """The model's own prior as the base density (the path is then the power posterior).

    Build it with :meth:`for_model` (or ``fit_base("prior")``), which ties it to a model so
    that it can draw and evaluate itself. A ``PriorBase`` without a ``space`` still works on
    the graph side (the tempering transform and batched densities read the prior from the
    model they are given) but cannot ``sample``, ``logp``, ``moments`` or ``scale``.

    Parameters
    ----------
    log_zeta : float
        Current guess of ``log Z``.
    names, sizes : tuple
        Layout of the space.
    kind : str
        ``"prior"``.
    info : dict
        Provenance.
    space : ModelSpace, optional
        The model's space; compiled draw and density functions are cached with it.
    stats : FitStats
        Empty: the prior is not fitted.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu", 1.0, 2.0)
    >>> base = PriorBase.for_model(model)
    >>> bool(np.isclose(base.logp(np.array([[1.0]]))[0], -np.log(2.0 * np.sqrt(2 * np.pi))))
    True
    >>> bool(abs(base.scale[0] - 2.0) < 0.1)
    True
    """

    exact_moments: ClassVar[bool] = False  # moments() is estimated from prior draws

    log_zeta: float = 0.0
    names: tuple = ()
    sizes: tuple = ()
    kind: str = "prior"
    info: dict = field(default_factory=dict)
    space: ModelSpace | None = field(default=None, repr=False)
    stats: FitStats = FitStats()

    @classmethod
    def for_model(cls, model: pm.Model | None = None, *, log_zeta: float = 0.0, **kwargs):
        """The prior base of ``model`` (or of the model in context)."""
        space = model_space(model)
        return cls(
            log_zeta=float(log_zeta), names=space.names, sizes=space.sizes, space=space, **kwargs
        )

    @property
    def ndim(self) -> int:
        """Dimension of the space."""
        if not self.sizes and self.space is not None:
            return self.space.ndim
        return int(sum(self.sizes))

    def with_values(self, **changes) -> PriorBase:
        """A copy with some fields replaced."""
        return replace(self, **changes)

    def _space(self) -> ModelSpace:
        if self.space is None:
            raise ValueError(
                "this PriorBase is not tied to a model; build it with PriorBase.for_model(model) "
                "or fit_base('prior') to draw from it or evaluate it"
            )
        return self.space

    def logp(self, x: np.ndarray) -> np.ndarray:
        """Normalized prior log density (Jacobians included) at each row of ``x``."""
        space = self._space()
        cache = _cache(space)
        if "logp" not in cache:
            cache["logp"] = _prior_logp_fn(space)
        fn, vectorized = cache["logp"]
        x = np.atleast_2d(np.asarray(x, dtype=float))
        if vectorized:
            return np.asarray(fn(x), dtype=float).reshape(x.shape[0])
        return np.array([float(fn(row)) for row in x])

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` exact prior draws, shape ``(n, d)`` (see :func:`prior_draws`)."""
        return prior_draws(self._space(), n, rng)

    def _draws(self) -> np.ndarray:
        cache = _cache(self._space())
        if "moment_draws" not in cache:
            cache["moment_draws"] = prior_draws(self.space, N_MOMENT_DRAWS, MOMENT_SEED)
        return cache["moment_draws"]

    def moments(self) -> tuple[np.ndarray, np.ndarray]:
        """Mean and covariance of :data:`N_MOMENT_DRAWS` cached prior draws (fixed seed)."""
        x = self._draws()
        return x.mean(axis=0), np.atleast_2d(np.cov(x, rowvar=False))

    @property
    def scale(self) -> np.ndarray:
        """Per-coordinate spread of the cached prior draws: half the 15.9-84.1% range, the
        standard deviation for a Gaussian marginal and finite for heavy-tailed priors."""
        lo, hi = np.percentile(self._draws(), [15.865525, 84.134475], axis=0)
        return np.maximum(0.5 * (hi - lo), 1e-8)

    # -- graph side -----------------------------------------------------------------------
    @cached_property
    def _shared_values(self) -> dict:
        return {"log_zeta": np.float64(self.log_zeta)}

    @property
    def structure(self) -> tuple:
        """``("PriorBase", ...)``: every prior base shares one graph."""
        return shared_structure(self)

    def make_shared(self) -> dict:
        """Shared variables holding ``log_zeta`` (the prior has no other parameters)."""
        return make_shared(self._shared_values)

    def assign(self, shared: dict) -> None:
        """Write ``log_zeta`` into ``shared``."""
        assign_shared(shared, self._shared_values, self)

    def logp_graph(self, model, shared: dict, x):
        """``model.logp(vars=model.free_RVs, jacobian=True)`` on ``model``'s value variables
        (which ``x`` is the raveled form of)."""
        return model.logp(vars=model.free_RVs, jacobian=True)
