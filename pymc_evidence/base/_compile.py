"""Compile PyTensor functions the way PyMC does, on the default backend or on JAX.

PyMC's compiler turns parameter checks (``0 <= p <= 1``) into ``-inf`` log densities instead of
exceptions, so a proposal that leaves a parameter's support is simply rejected.

:func:`compile_rows` compiles a function of a matrix of rows (the particle methods' and
ADVI's batched density) with PyTensor's default linker or, with ``backend="jax"``, with its
JAX linker (``mode="JAX"``), whose :func:`jax.jit` runs it on whatever device jax has. The
backend is an argument or, when not given, the one :func:`use_backend` set for the current
context (``pymc_evidence.sample_evidence(backend=...)`` sets it for the whole call).
"""

from __future__ import annotations

import contextlib
import importlib.util
import warnings
from contextvars import ContextVar

import numpy as np
import pytensor.tensor as pt
from pytensor.graph.replace import vectorize_graph

from ..estimators.diagnostics import ModelWarning

try:  # PyMC >= 5.19
    from pymc.pytensorf import compile as _pymc_compile
except ImportError:  # pragma: no cover - older PyMC
    from pymc.pytensorf import compile_pymc as _pymc_compile

__all__ = [
    "BACKENDS",
    "compile_fn",
    "compile_rows",
    "current_backend",
    "resolve_backend",
    "use_backend",
]

#: The backends of the batched density: PyTensor's default linker, or its JAX linker.
BACKENDS = ("default", "jax")
_BACKEND: ContextVar[str] = ContextVar("pymc_evidence_backend", default="default")
#: Fewest rows of one JAX call: row counts are padded to a power of two from here, so that
#: ``jax.jit`` traces and compiles a handful of shapes rather than one per count.
JAX_MIN_ROWS = 8


def compile_fn(inputs, outputs, **kwargs):
    """``pytensor.function`` with PyMC's rewrites (parameter checks become ``-inf``)."""
    kwargs.setdefault("on_unused_input", "ignore")
    return _pymc_compile(inputs, outputs, **kwargs)


def _is_jax_mode(mode) -> bool:
    """True for ``"JAX"`` (any case) or a PyTensor ``Mode`` whose linker is JAX's."""
    if isinstance(mode, str):
        return mode.upper() == "JAX"
    return type(getattr(mode, "linker", None)).__name__ == "JAXLinker"


def resolve_backend(backend=None, compile_kwargs: dict | None = None) -> str:
    """The backend name, ``"default"`` or ``"jax"``, checked.

    Parameters
    ----------
    backend : {None, "default", "jax"}
        None takes the backend from ``compile_kwargs``: ``{"mode": "JAX"}`` means ``"jax"``.
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
        ``"jax"`` without jax installed (``pip install pymc_evidence[jax]``).

    Examples
    --------
    >>> resolve_backend(None), resolve_backend("default")
    ('default', 'default')
    """
    if backend is None:
        jax_mode = _is_jax_mode((compile_kwargs or {}).get("mode"))
        backend = "jax" if jax_mode else "default"
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS} or None, got {backend!r}")
    if backend == "jax":
        _require_jax()
    return backend


def _require_jax():
    """Import jax with 64-bit floats enabled (the densities are float64, as on the default
    backend; jax computes in float32 unless ``jax_enable_x64`` is set)."""
    if importlib.util.find_spec("jax") is None:
        raise ImportError(
            "backend='jax' needs jax: pip install pymc_evidence[jax] "
            '(on an NVIDIA GPU also pip install "jax[cuda12]")'
        )
    import jax

    jax.config.update("jax_enable_x64", True)
    return jax


def current_backend() -> str:
    """The backend :func:`use_backend` set for this context (``"default"`` outside one)."""
    return _BACKEND.get()


@contextlib.contextmanager
def use_backend(backend):
    """Compile batched densities with ``backend`` (see :func:`resolve_backend`) inside the
    ``with`` block, unless a call names its own.

    Examples
    --------
    >>> with use_backend("default"):
    ...     current_backend()
    'default'
    """
    token = _BACKEND.set(resolve_backend(backend))
    try:
        yield
    finally:
        _BACKEND.reset(token)


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
    stacklevel=4,
    backend=None,
    ndim: int | None = None,
):
    """Compile ``outputs`` of the single-point input ``flat`` for a matrix of rows.

    Returns ``(vectorized, fn)``: ``fn`` takes a matrix when ``vectorized``, else one row
    (when vectorizing fails, with a warning of ``category``, by default
    :class:`~pymc_evidence.ModelWarning`, saying ``what`` is now slower).

    ``backend`` (default: :func:`current_backend`) ``"jax"`` compiles with PyTensor's JAX
    linker, with ``jax_enable_x64`` set, and ``fn`` returns float64 numpy arrays. The JAX
    linker needs static shapes: give ``ndim``, the length of ``flat`` (without it, a graph
    that reshapes by a computed length fails when first called). A graph holding an op with
    no JAX implementation is a ``NotImplementedError`` naming the op: nothing falls back
    silently to the default backend (one asks for JAX to run on an accelerator).
    """
    backend = current_backend() if backend is None else resolve_backend(backend)
    if backend == "jax":
        return _compile_rows_jax(flat, outputs, vectorize, what, ndim, (category, stacklevel))
    if vectorize:
        try:
            xs = pt.matrix("xs", dtype="float64")
            fn = compile_fn([xs], vectorize_graph(outputs, replace={flat: xs}))
            fn.trust_input = True  # callers pass float64 matrices only
            return True, fn
        except Exception as err:  # any op that cannot be batched
            _warn_unbatched(err, what, category, stacklevel)
    return False, compile_fn([flat], outputs)


def _warn_unbatched(err, what, category, stacklevel):
    warnings.warn(
        f"could not vectorize the model's log density ({err!r}); {what} evaluates "
        "one point at a time, which is much slower",
        category,
        stacklevel=stacklevel + 1,
    )


def _compile_rows_jax(flat, outputs, vectorize, what, ndim, warn_as):
    """:func:`compile_rows` on PyTensor's JAX linker."""
    _require_jax()
    if vectorize:
        shape = (None, None if ndim is None else int(ndim))
        xs = pt.tensor("xs", dtype="float64", shape=shape)
        try:
            graph = vectorize_graph(outputs, replace={flat: xs})
        except Exception as err:  # any op that cannot be batched
            _warn_unbatched(err, what, warn_as[0], warn_as[1] + 1)
        else:
            fn = _compile_jax([xs], graph, what)
            return True, JaxRows(fn, what, batched=True, graph=(flat, outputs, ndim))
    return False, JaxRows(_compile_jax([flat], outputs, what), what, batched=False)


def _compile_jax(inputs, outputs, what):
    """``mode="JAX"``; PyTensor's notes that it drops shape assertions are silenced (the
    parameter checks are ``-inf`` switches by then, and jax checks shapes itself)."""
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Skipping .*as JAX tracing would remove it")
            return compile_fn(inputs, outputs, mode="JAX")
    except NotImplementedError as err:
        raise NotImplementedError(f"{_JAX_FAILED.format(what=what)} ({err})") from err


_JAX_FAILED = (
    "PyTensor's JAX backend cannot run the model's log density for {what}; use "
    "backend=None (PyTensor's default backend) for this model"
)


class JaxRows:
    """A function compiled by PyTensor's JAX linker, returning float64 numpy arrays.

    A matrix's rows are padded (by repeating the last row) to a power of two of at least
    :data:`JAX_MIN_ROWS`, and the outputs cut back: ``jax.jit`` compiles once per input
    shape, so particle counts that change (ARM, the last chunk of a long evaluation) reuse
    a few compiled shapes instead of compiling for each.

    Where jax cannot trace the graph with an unknown number of rows (a shape computed from
    it, as older PyTensor leaves some batched ``Blockwise`` graphs), ``graph``, the
    single-point ``(flat, outputs, ndim)``, is compiled anew for each padded row count,
    every shape then static.
    """

    def __init__(self, fn, what: str, *, batched: bool, graph=None):
        self.fn, self.what, self.batched, self.graph = fn, what, batched, graph
        self._static: dict | None = None  # padded row count -> function, once needed

    def __call__(self, xs):
        xs = np.asarray(xs, dtype=np.float64)
        n = len(xs) if self.batched else 0
        padded = xs
        if n:
            size = max(JAX_MIN_ROWS, 1 << (n - 1).bit_length())
            padded = np.concatenate([xs, np.repeat(xs[-1:], size - n, axis=0)])
        try:
            out = self._function(len(padded))(padded)
        except Exception as err:  # jax traces the graph at the first call of each shape
            if self._static is not None or not self._can_fix_rows():
                raise RuntimeError(f"{_JAX_FAILED.format(what=self.what)} ({err})") from err
            self._static = {}  # from now on, one function per padded row count
            return self(xs)
        if not isinstance(out, list):  # one output
            return _cut(out, n)
        return [_cut(o, n) for o in out]

    def _can_fix_rows(self) -> bool:
        return self.batched and self.graph is not None and self.graph[2] is not None

    def _function(self, rows: int):
        """The function for ``rows`` rows: the one compiled for any count, or (after it
        failed to trace) one compiled for exactly ``rows``."""
        if self._static is None:
            return self.fn
        if rows not in self._static:
            flat, outputs, ndim = self.graph
            xs = pt.tensor("xs", dtype="float64", shape=(rows, int(ndim)))
            graph = vectorize_graph(outputs, replace={flat: xs})
            self._static[rows] = _compile_jax([xs], graph, self.what)
        return self._static[rows]


def _cut(out, n: int) -> np.ndarray:
    """``out`` as a float64 numpy array, its first ``n`` rows (all when ``n`` is 0)."""
    out = np.asarray(out, dtype=np.float64)
    return out[:n] if n else out
