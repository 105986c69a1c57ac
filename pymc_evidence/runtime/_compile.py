"""Compile PyTensor functions the way PyMC does, and choose the backend of batched densities.

PyMC's compiler turns parameter checks (``0 <= p <= 1``) into ``-inf`` log densities instead of
exceptions, so a proposal that leaves a parameter's support is simply rejected.

:func:`compile_rows` compiles a function of a matrix of rows (the particle methods' and
ADVI's batched density). The backend is an argument: callers pass the backend of the model's
runtime (:attr:`~pymc_evidence.runtime.runtime.ModelRuntime.backend`, which
``pymc_evidence.sample_evidence(backend=...)`` sets for the models of the call):

- ``"auto"`` (the default): JAX (:mod:`~pymc_evidence.runtime.jax_rows`), which compiles a new
  model's density far sooner than numba, falling back to PyTensor's default linker when jax is
  not installed or cannot run one of the model's ops;
- ``"default"``: PyTensor's default linker (numba on PyMC 6, C on PyMC 5) on the graph
  vectorized over rows, whose compilation is most of a new model's first call
  (measured in :doc:`/performance`, "What a user meets: the first call on a new model");
- ``"jax"``: JAX or an error naming the op it cannot run (for an accelerator).

:func:`compile_fn` with ``jit=False`` compiles without any JIT (PyTensor's Python linker:
each op runs its numpy implementation), for functions called a few times per call
(prior draws, the posterior's variables), where numba or gcc would spend far longer compiling
than the calls take to run.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytensor.tensor as pt
from pymc.pytensorf import compile as _pymc_compile  # PyMC >= 5.19 (we need >= 5.20)
from pytensor.graph.basic import Constant
from pytensor.graph.replace import clone_replace, vectorize_graph
from pytensor.graph.traversal import ancestors

from ..estimators.diagnostics import ModelWarning, warn_user
from ._no_jit import no_jit_mode
from .graph_traits import GROUP_INDEX, gathers_data, old_jax_solves
from .jax_rows import JaxRows, compile_rows_jax, jax_accelerator, jax_available, require_jax

__all__ = [
    "BACKENDS",
    "compile_fn",
    "compile_rows",
    "evaluate",
    "GROUP_INDEX",
    "no_jit_mode",
    "rows_of",
    "resolve_backend",
    "is_jax_rows",
    "uses_jax",
]

#: The backends of the batched density (see the module's docstring).
BACKENDS = ("auto", "default", "jax")


def rows_of(flat):
    """A float64 matrix whose rows stand for the vector ``flat`` in
    :func:`~pytensor.graph.replace.vectorize_graph`, with ``flat``'s static length as its
    own: a row length unknown to PyTensor cannot be proved to broadcast against a
    variable of size 1 (a 2-component simplex), and the vectorized graph then fails."""
    return pt.tensor("xs", dtype="float64", shape=(None, flat.type.shape[0]))


def compile_fn(inputs, outputs, *, jit: bool = True, **kwargs):
    """``pytensor.function`` with PyMC's rewrites (parameter checks become ``-inf``).

    ``jit=False`` (for functions called a few times) compiles nothing: each op runs its
    numpy implementation, with the same random draws as the compiled function.
    """
    kwargs.setdefault("on_unused_input", "ignore")
    if jit:
        return _pymc_compile(inputs, outputs, **kwargs)
    import pytensor

    kwargs.setdefault("mode", no_jit_mode())
    with pytensor.config.change_flags(cxx=""):  # inner graphs (rewrites make some) too
        return _pymc_compile(inputs, outputs, **kwargs)


def evaluate(graph) -> np.ndarray:
    """The value of a graph of no inputs (a shape, a fixed parameter), by its ops' numpy
    code: ``graph.eval()`` JIT-compiles it, about a second each on a fresh process.

    Examples
    --------
    >>> import pytensor.tensor as pt
    >>> evaluate(pt.zeros((2, 3)).shape)
    array([2, 3])
    """
    return np.asarray(compile_fn([], graph, jit=False)())


def _is_jax_mode(mode) -> bool:
    """True for ``"JAX"`` (any case) or a PyTensor ``Mode`` whose linker is JAX's."""
    if isinstance(mode, str):
        return mode.upper() == "JAX"
    return type(getattr(mode, "linker", None)).__name__ == "JAXLinker"


def resolve_backend(backend=None, compile_kwargs: dict | None = None) -> str:
    """The backend name, ``"auto"``, ``"default"`` or ``"jax"``, checked.

    Parameters
    ----------
    backend : {None, "auto", "default", "jax"}
        None is ``"auto"``, unless ``compile_kwargs`` holds ``{"mode": "JAX"}``: ``"jax"``.
    compile_kwargs : dict, optional
        As given to :func:`pymc_evidence.sample_evidence`.

    Returns
    -------
    str

    Raises
    ------
    ValueError
        An unknown backend.
    ImportError
        ``"jax"`` without jax installed.

    Examples
    --------
    >>> resolve_backend(None), resolve_backend("default")
    ('auto', 'default')
    """
    if backend is None:
        backend = "jax" if _is_jax_mode((compile_kwargs or {}).get("mode")) else "auto"
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS} or None, got {backend!r}")
    if backend == "jax":
        require_jax()
    return backend


def uses_jax(backend: str) -> bool:
    """True when batched densities of ``backend`` run on JAX (a process that ran JAX must
    not be forked: the copy deadlocks).

    Examples
    --------
    >>> uses_jax("default")
    False
    """
    return backend == "jax" or (backend == "auto" and jax_available())


@contextlib.contextmanager
def exact_float_math():
    """Compile with numba's fast-math off inside the ``with`` block (for every function
    compiled there, PyMC's NUTS functions included), so that the same seed gives the same
    bits whatever PyTensor's compile cache holds.

    With fast-math on (PyTensor's default), LLVM may reassociate floating-point sums, and
    does so differently when it compiles a graph afresh than when it links the pieces it
    finds in the cache: PyMC's compiled log density of a 3-component mixture differed in
    the last bits between an empty and a warm cache, enough for NUTS trajectories, and
    ``ct`` or ``bridge`` estimates, to differ well beyond rounding for the same seed
    (``benchmarks/cache_determinism.py``). The flag is part of PyTensor's cache key, so
    functions compiled with it off are cached apart.

    Examples
    --------
    >>> import pytensor
    >>> with exact_float_math():
    ...     bool(pytensor.config.numba__fastmath)
    False
    """
    import pytensor

    if not hasattr(pytensor.config, "numba__fastmath"):  # a PyTensor without numba
        yield
        return
    with pytensor.config.change_flags(numba__fastmath=False):
        yield


@contextlib.contextmanager
def without_tracebacks():
    """Build and compile graphs without PyTensor's creation tracebacks inside the block.

    PyTensor stores where each variable was made (``tag.trace``, for its error messages),
    and a rewrite copies the traces of a node's inputs and outputs onto its replacement,
    the replacement's own among them. Where the replacement is one constant shared by many
    nodes, its list doubles at every rewrite: a hidden Markov chain of 25 ``pm.Categorical``
    steps, summed out (:mod:`~pymc_evidence.transforms.elimination`), took many times the
    memory and time to compile its batched density with them (measured in :doc:`/hard_models`,
    "Model kinds users write: chains of discrete states, ordered parameters, log links").

    Examples
    --------
    >>> import pytensor
    >>> with without_tracebacks():
    ...     int(pytensor.config.traceback__limit)
    0
    """
    import pytensor

    with pytensor.config.change_flags(traceback__limit=0):
        yield


def float64_constants(graph):
    """``graph`` with its float32 constants made float64 (the graph rebuilt around them).

    PyTensor stores a Python float that float32 represents exactly (``0.5``, ``2.0``, ...)
    as a float32 constant, and an op on it alone stays float32: a ``pm.Normal(..., 0.5,
    observed=y)`` term computes ``log 0.5`` to 2e-9, once per observation, so a known noise
    scale of 0.5 put the 40-row regression's log density 7.6e-8 away from its exact value
    (and 50 000 rows would put it 1e-4 away), far beyond the se of an exact base. The
    evidence is then of the model as written, in float64. A graph that cannot be rebuilt
    is returned as it is.

    Examples
    --------
    >>> import pytensor.tensor as pt
    >>> float64_constants(pt.log(pt.constant(0.5, dtype="float32"))).dtype
    'float64'
    """
    narrow = [
        v
        for v in ancestors([graph])
        if isinstance(v, Constant) and getattr(v.type, "dtype", None) == "float32"
    ]
    if not narrow:
        return graph
    wide = {v: pt.constant(np.asarray(v.data, dtype=np.float64), name=v.name) for v in narrow}
    try:
        return clone_replace(graph, replace=wide, rebuild_strict=False)
    except Exception:  # an op that insists on float32: keep the model's graph
        return graph


def checks_to_ninf(graph):
    """``graph`` with PyMC's parameter checks turned into ``-inf`` switches.

    Done on a single-point graph *before* vectorizing it over rows, so that a row outside
    the support gives ``-inf`` for that row only (a vectorized check fails the whole batch).
    """
    from pytensor.graph.rewriting.basic import in2out
    from pytensor.graph.rewriting.utils import rewrite_graph

    try:
        from pymc.logprob.utils import local_check_parameter_to_ninf_switch
    except ImportError:  # pragma: no cover - older PyMC
        from pymc.pytensorf import local_check_parameter_to_ninf_switch
    to_switch = in2out(local_check_parameter_to_ninf_switch)
    return rewrite_graph(graph, include=(), custom_rewrite=to_switch)


def compile_rows(
    flat,
    outputs,
    *,
    vectorize: bool = True,
    what: str,
    category=ModelWarning,
    backend: str = "auto",
    ndim: int | None = None,
):
    """Compile ``outputs`` of the single-point input ``flat`` (of length ``ndim``) for a
    matrix of rows.

    Returns ``(vectorized, fn)``: ``fn`` takes a matrix when ``vectorized``, else one row
    (when vectorizing fails, with a warning of ``category``, by default
    :class:`~pymc_evidence.ModelWarning`, saying ``what`` is now slower).

    ``backend`` (the model runtime's, checked by :func:`resolve_backend`): on ``"auto"`` and
    ``"jax"`` ``fn`` is a :class:`~pymc_evidence.runtime.jax_rows.JaxRows` (float64 numpy
    arrays out); a graph that
    jax cannot run is a ``NotImplementedError`` naming the op on ``"jax"``, and compiled by
    PyTensor's default linker on ``"auto"``. ``vectorize=False`` on ``"auto"`` is the
    default linker's loop over rows (on ``"jax"`` rows are always batched by ``jax.vmap``).
    ``"auto"`` also takes the default linker for a graph that :func:`gathers_data`.
    """
    backend = resolve_backend(backend)
    if backend == "auto" and not jax_accelerator() and gathers_data(outputs):
        backend = "default"
    if backend == "auto" and old_jax_solves(outputs):
        backend = "default"
    if uses_jax(backend) and (vectorize or backend == "jax"):
        try:
            return True, compile_rows_jax(flat, outputs, what=what, ndim=_length(flat, ndim))
        except NotImplementedError:
            if backend == "jax":
                raise
    if vectorize:
        try:
            xs = rows_of(flat)
            fn = compile_fn([xs], vectorize_graph(outputs, replace={flat: xs}))
            fn.trust_input = True  # callers pass float64 matrices only
            return True, fn
        except Exception as err:  # any op that cannot be batched
            _warn_unbatched(err, what, category)
    return False, compile_fn([flat], outputs)


def _warn_unbatched(err, what, category):
    warn_user(
        f"could not vectorize the model's log density ({err!r}); {what} evaluates "
        "one point at a time, which is much slower",
        category,
    )


def _length(flat, ndim: int | None) -> int:
    """The length of the vector ``flat``: ``ndim``, or its static length."""
    if ndim is None:
        ndim = flat.type.shape[0]
    if ndim is None:
        raise ValueError("compile_rows on JAX needs ndim, the length of the input vector")
    return int(ndim)


def is_jax_rows(fn) -> bool:
    """True when ``fn`` (from :func:`compile_rows`) runs on JAX."""
    return isinstance(fn, JaxRows)
