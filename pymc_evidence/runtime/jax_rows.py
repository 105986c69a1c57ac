"""A function of one flat vector, run on every row of a matrix by ``jax.jit(jax.vmap(...))``.

Why this is the default path for the batched densities: PyMC 6 compiles with PyTensor's
numba linker, which JIT-compiles every node of a graph separately, so its cost grows with the
number of nodes. The vectorized graph of a model's log density and gradient has many (a
2-component ``NormalMixture``'s took numba far longer than PyMC's own single-point
``logp_dlogp``); XLA compiles the same single-point graph, batched by :func:`jax.vmap`, in a
small fraction of that, and runs it as fast or faster (measured in :doc:`/performance`,
"What a user meets: the first call on a new model"). The single-point graph is converted by
PyTensor's own JAX dispatch (:func:`pytensor.link.jax.dispatch.jax_funcify`) after
PyTensor's JAX rewrites, and
batched by jax itself, which needs no :func:`~pytensor.graph.replace.vectorize_graph` (and so
none of its ``Blockwise`` ops, some of which PyTensor's JAX backend cannot trace).

The model's data (shared variables) stay inputs of the compiled function, so a model whose
``pm.Data`` is changed by :func:`pymc.set_data` is evaluated on its new values; their device
copies are made again only when a value changes.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
import warnings

import numpy as np

__all__ = [
    "CACHE_ELEMENTS",
    "JAX_MAX_ROWS",
    "JAX_MIN_ROWS",
    "JaxRows",
    "SMALL_CALL_ROWS",
    "compile_rows_jax",
    "jax_accelerator",
    "jax_available",
    "jax_started",
    "pad_rows",
    "padded_size",
    "require_jax",
]

#: Fewest rows of one JAX call: row counts are padded to a power of two from here, so that
#: ``jax.jit`` traces and compiles a handful of shapes rather than one per count. 32 is
#: ADVI's call (8 restarts x 4 Monte Carlo points), which the mode search's single points
#: then share: every shape is an XLA compilation of the whole graph (cheap for a
#: one-parameter model, slow for a latent GP).
JAX_MIN_ROWS = 32

#: Most rows of one JAX call on a CPU: longer matrices go in chunks of this many (the SMC
#: runs' 1000 particles are one chunk), so that a one-off long evaluation (the base's
#: 8 x 1000 draws) compiles no shape of its own. On a GPU or TPU, where wide calls are what
#: the device is for, there is no limit.
JAX_MAX_ROWS = 1024

#: Rows of a small call of a function with heavy rows (:attr:`JaxRows.call_rows` set):
#: a call of at most this many rows is padded to this many, one more compiled shape, rather
#: than to a whole chunk. The mode search's ascents call one or two points at a time, and
#: on a hierarchy with integrated groups each padded row is every row's quadrature
#: (measured in :doc:`/performance`, "What a user meets: the first call on a new model").
SMALL_CALL_ROWS = 4

_JAX_FAILED = (
    "PyTensor's JAX backend cannot run the model's log density for {what}; use "
    "backend='default' (PyTensor's default linker) for this model"
)


def jax_available() -> bool:
    """True when jax can be imported (it is a dependency, but a user may remove it)."""
    return importlib.util.find_spec("jax") is not None


_PLUGINS = ("jax_cuda13_plugin", "jax_cuda12_plugin", "jax_rocm7_plugin", "jax_rocm60_plugin")


def jax_accelerator() -> bool:
    """True when jax would run on a GPU or TPU: a CUDA/ROCm plugin or libtpu is installed
    and ``JAX_PLATFORMS`` does not confine jax to the CPU. Decided without starting jax
    (which :func:`jax_started` would then see), from what is installed."""
    platforms = os.environ.get("JAX_PLATFORMS", "").strip().lower()
    if platforms:
        return any(p in platforms for p in ("cuda", "gpu", "rocm", "tpu"))
    return any(importlib.util.find_spec(name) for name in (*_PLUGINS, "libtpu"))


def jax_started() -> bool:
    """True once jax has started a runtime in this process (its compiler's thread pools
    then exist, and a forked copy of the process can deadlock in them). Importing jax starts
    none; where this jax hides the fact, any import of jax counts as started."""
    if "jax" not in sys.modules:
        return False
    try:
        from jax._src import xla_bridge
    except ImportError:
        return True
    backends = getattr(xla_bridge, "_backends", None)
    return True if backends is None else bool(backends)


def require_jax():
    """Import jax with 64-bit floats enabled (the densities are float64, as on the default
    backend; jax computes in float32 unless ``jax_enable_x64`` is set)."""
    if not jax_available():
        raise ImportError(
            "backend='jax' needs jax: pip install jax "
            '(on an NVIDIA GPU also pip install "jax[cuda12]")'
        )
    import jax

    jax.config.update("jax_enable_x64", True)
    return jax


@functools.cache
def _inline_ofg():
    """A rewrite that replaces every ``OpFromGraph`` by its inner graph, so that the JAX
    rewrites see through it: PyMC 6's ``LKJCorr`` transform wraps a pad whose gradient
    slices at a start computed from shapes, a constant once inlined and folded, a traced
    value inside the wrapper (``jax`` refuses dynamic slices; the model then fell back to
    numba, and a long compilation on its first call)."""
    from pytensor.compile.builders import OpFromGraph
    from pytensor.graph import node_rewriter
    from pytensor.graph.replace import clone_replace
    from pytensor.graph.rewriting.basic import dfs_rewriter

    try:  # PyTensor 3: the op's frozen inner graph, bound to the node's inputs
        from pytensor.compile.rewriting import inline_ofg_node
    except ImportError:  # PyTensor 2

        def inline_ofg_node(node):
            op = node.op
            pairs = zip(op.inner_inputs, node.inputs, strict=True)
            return clone_replace(op.inner_outputs, dict(pairs))

    @node_rewriter([OpFromGraph])
    def inline(fgraph, node):
        return inline_ofg_node(node)

    return dfs_rewriter(inline)


def _jaxified(flat, outputs, what):
    """``(fn, shared)``: a jax function of ``(flat, *shared values)`` returning ``outputs``,
    and the model's shared variables it reads (kept as inputs, not frozen as constants)."""
    from pytensor.compile import mode as modes
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.fg import FunctionGraph
    from pytensor.graph.replace import graph_replace
    from pytensor.graph.traversal import graph_inputs
    from pytensor.link.jax.dispatch import jax_funcify

    shared = [v for v in graph_inputs(outputs) if isinstance(v, SharedVariable)]
    inputs = [v.type() for v in shared]
    graph = graph_replace(outputs, dict(zip(shared, inputs, strict=True)), strict=False)
    fgraph = FunctionGraph(inputs=[flat, *inputs], outputs=graph, clone=True)
    try:
        _inline_ofg().rewrite(fgraph)
        modes.JAX.optimizer.rewrite(fgraph)
        with warnings.catch_warnings():
            # PyTensor drops a parameter check (bambi's ``sigma > 0``) from a JAX graph and
            # says so; a point outside the support then gets a non-finite density, which the
            # engines count as zero density.
            warnings.filterwarnings("ignore", "Skipping .* Op", UserWarning)
            return jax_funcify(fgraph), shared
    except NotImplementedError as err:
        raise NotImplementedError(f"{_JAX_FAILED.format(what=what)} ({err})") from err


def compile_rows_jax(flat, outputs, *, what: str, ndim: int, check: bool = True) -> JaxRows:
    """``outputs`` (graphs of the single-point vector ``flat``) for every row of a matrix.

    Parameters
    ----------
    flat : TensorVariable
        A float64 vector of length ``ndim``.
    outputs : list of TensorVariable
    what : str
        What the function is for, named in errors.
    ndim : int
    check : bool, default True
        Trace the function once on ``JAX_MIN_ROWS`` rows (no compilation), so that a graph
        jax cannot trace fails here rather than at its first call.

    Raises
    ------
    NotImplementedError
        An op with no JAX implementation, or a graph jax cannot trace (the message names it).
    """
    jax = require_jax()
    single = not isinstance(outputs, list | tuple)
    fn, shared = _jaxified(flat, [outputs] if single else list(outputs), what)
    in_axes = (0,) + (None,) * len(shared)
    chunk = row_chunk(outputs)
    rows = JaxRows(_mapped(jax, fn, in_axes, chunk), shared, what, int(ndim), single)
    if chunk is not None:  # heavy rows: one compiled shape, the rest a loop of calls
        rows.call_rows = JAX_MIN_ROWS
    if check:
        rows.trace()
    return rows


#: Most elements (float64) of one row's intermediate arrays, counted from the graph's static
#: shapes, for all rows of a call to be batched at once; a heavier function runs in batches
#: of :data:`JAX_MIN_ROWS` rows.
HEAVY_ROW = 2**14
#: Elements of intermediates a batch of rows may hold at once, counted over the graph's
#: nodes before XLA fuses them: a 10**6-row logistic density counts many data-sized arrays
#: a row of which XLA holds only a few (its unbatched base fit crashed), so 2**28 counted
#: elements are a few hundred MiB held, not 2 GiB.
ROW_BUDGET = 2**28
#: Elements of a batch's largest intermediate array (4 MiB of float64) where one row's
#: fits: the batch then stays in the CPU's cache. The 1 000-group Bernoulli hierarchy's
#: 15-node quadrature, ``(15, 3000)`` a row, ran much faster in batches of 8 rows than of 32
#: (measured in :doc:`/performance`, "What a user meets: the first call on a new model").
CACHE_ELEMENTS = 2**19


def row_chunk(outputs) -> int | None:
    """Rows per batch of a call: None (every row at once) for a function of at most
    :data:`HEAVY_ROW` elements of intermediates a row, else as many rows as fit in
    :data:`ROW_BUDGET` elements and (where one row's largest array fits there) whose
    largest arrays fit in :data:`CACHE_ELEMENTS`, a power of two between 1 and
    :data:`JAX_MIN_ROWS`.

    A call's arrays then stay in the CPU's caches (the group quadrature of
    :mod:`~pymc_evidence.transforms.group_quadrature` ran much faster so: measured in
    :doc:`/performance`, "What a user meets: the first call on a new model"), and a density
    over a million rows holds seven rows' arrays
    instead of 1024's. Models without data-sized intermediates keep one batch."""
    from pytensor.graph.traversal import ancestors

    graphs = list(outputs) if isinstance(outputs, list | tuple) else [outputs]
    work, largest = 0, 1
    for var in ancestors(graphs):
        shape = getattr(var.type, "shape", None)
        if var.owner is not None and shape and None not in shape:
            size = int(np.prod(shape, dtype=np.int64))
            work, largest = work + size, max(largest, size)
    if work <= HEAVY_ROW:
        return None
    rows = ROW_BUDGET // work
    if largest <= CACHE_ELEMENTS:
        rows = min(rows, 1 << (CACHE_ELEMENTS // largest).bit_length() - 1)
    return int(np.clip(rows, 1, JAX_MIN_ROWS))


def _mapped(jax, fn, in_axes, chunk):
    """``fn`` over the rows of its first argument: ``jax.vmap``, in batches of ``chunk``
    rows (:func:`jax.lax.map`) when given."""
    rows = jax.vmap(fn, in_axes=in_axes)
    if chunk is None:
        return rows

    def batched(xs, *shared):
        if xs.shape[0] <= chunk:
            return rows(xs, *shared)
        return jax.lax.map(lambda x: fn(x, *shared), xs, batch_size=chunk)

    return batched


class JaxRows:
    """A jitted, vmapped function of a matrix's rows, returning float64 numpy arrays.

    A matrix's rows are padded (by repeating the last row) to a power of two of at least
    :data:`JAX_MIN_ROWS`, and the outputs cut back; on a CPU, more than
    :data:`JAX_MAX_ROWS` rows go in chunks of that many (functions with heavy rows: always
    chunks of :attr:`call_rows`, one compiled shape, and calls of at most
    :data:`SMALL_CALL_ROWS` rows one more: the 300-group Poisson hierarchy's density had
    compiled four, several seconds each). ``jax.jit`` compiles once per
    input shape, so particle counts that change (ARM, the last chunk of a long evaluation)
    reuse a few compiled shapes instead of compiling for each.

    Attributes
    ----------
    batched : callable
        The vmapped function before ``jax.jit``: ``batched(xs, *shared values)``, for jax
        code that calls it inside a larger jitted function (the fused leapfrog trajectories
        of :mod:`~pymc_evidence.engines.leapfrog`).
    fused : dict
        Those larger jitted functions, kept here so that they live (and stay compiled) as
        long as this function does, keyed by their maker's choice.
    """

    def __init__(self, batched, shared, what: str, ndim: int, single: bool = False):
        import jax

        self.batched, self.fn, self.fused = batched, jax.jit(batched), {}
        self.shared, self.what, self.ndim = list(shared), what, ndim
        self.single = single  # one output graph: return its array, not a list of one
        self.max_rows = sys.maxsize if jax_accelerator() else JAX_MAX_ROWS
        #: Rows of every direct call (None: a power of two up to :attr:`max_rows`); set for
        #: heavy rows (:func:`row_chunk`), whose compilation costs seconds a shape.
        self.call_rows: int | None = None
        self._values: list = [None] * len(self.shared)  # (host array, device array)

    def shared_values(self) -> list:
        """The device copies of the shared variables' values, renewed when one changed."""
        import jax.numpy as jnp

        out = []
        for i, var in enumerate(self.shared):
            value = var.get_value(borrow=True)
            kept = self._values[i]
            if kept is None or kept[0] is not value:
                kept = self._values[i] = (value, jnp.asarray(value))
            out.append(kept[1])
        return out

    def trace(self) -> None:
        """Trace (not compile) the function on ``JAX_MIN_ROWS`` rows."""
        import jax

        xs = jax.ShapeDtypeStruct((JAX_MIN_ROWS, self.ndim), np.float64)
        try:
            jax.eval_shape(self.fn, xs, *self.shared_values())
        except Exception as err:  # jax could not trace the graph
            raise NotImplementedError(f"{_JAX_FAILED.format(what=self.what)} ({err})") from err

    def __call__(self, xs):
        xs = np.asarray(xs, dtype=np.float64)
        step = self.call_rows or self.max_rows
        # every chunk dispatched before any is read back: XLA runs one while the next goes in
        calls = [self._dispatch(xs[i : i + step]) for i in range(0, max(len(xs), 1), step)]
        parts = [[_cut(o, n) for o in out] for out, n in calls]
        if len(parts) == 1:
            out = parts[0]
        else:
            out = [np.concatenate(chunks) for chunks in zip(*parts, strict=True)]
        return out[0] if self.single else out

    def _dispatch(self, xs):
        """The device outputs at the rows of ``xs`` (at most :attr:`max_rows`), from one
        padded call, and the number of rows to keep."""
        n = len(xs)
        if self.call_rows is None:
            size = padded_size(n)
        else:
            size = SMALL_CALL_ROWS if n <= SMALL_CALL_ROWS else self.call_rows
        out = self.fn(pad_rows(xs, size), *self.shared_values())
        return (out if isinstance(out, list | tuple) else [out]), n


def padded_size(n: int) -> int:
    """The rows of a JAX call for ``n`` rows: a power of two, at least :data:`JAX_MIN_ROWS`."""
    return max(JAX_MIN_ROWS, 1 << max(int(n) - 1, 0).bit_length())


def pad_rows(xs: np.ndarray, size: int) -> np.ndarray:
    """``xs`` (rows first) with its last row repeated up to ``size`` rows (zeros if empty)."""
    n = len(xs)
    if size <= n:
        return xs
    fill = xs[-1:] if n else np.zeros((1, *xs.shape[1:]), dtype=xs.dtype)
    return np.concatenate([xs, np.repeat(fill, size - n, axis=0)])


def _cut(out, n: int) -> np.ndarray:
    """``out`` as a float64 numpy array, its first ``n`` rows."""
    return np.asarray(out, dtype=np.float64)[:n]
