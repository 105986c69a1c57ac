"""The model's joint log density and its gradient at every row of a matrix, compiled once.

:func:`batched_logp` compiles ``model.logp(jacobian=True)`` and its gradient on one flat
vector and vectorises both over the rows of a matrix (:func:`pytensor.graph.replace.
vectorize_graph`), cached per model. PyMC's parameter checks are first turned into ``-inf``
switches, so one row outside the support gives ``-inf`` for that row only. ADVI evaluates
all restarts and Monte Carlo draws of a step with one call.

The function is compiled on JAX by default (``backend="auto"``: the single-point graph
batched by :func:`jax.vmap`, see :mod:`~pymc_evidence.runtime.jax_rows`; on the device jax has,
a GPU with the CUDA build of jax), or on PyTensor's default linker (``backend="default"``, or
where jax cannot run the model). ``jax_enable_x64`` is switched on, so the values are
float64 on either backend.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytensor.tensor as pt

from ._compile import (
    checks_to_ninf,
    compile_rows,
    float64_constants,
    is_jax_rows,
    resolve_backend,
)
from .runtime import runtime_of
from .simplify import simplify_logp
from .space import ModelSpace

__all__ = ["BatchedLogp", "backend_used", "batched_logp"]


@dataclass(eq=False)
class BatchedLogp:
    """Joint log density (Jacobians included) and its gradient at every row of a matrix.

    Get one from :func:`batched_logp`. It holds no reference to the model (the cache that
    keeps it is keyed weakly by the model).

    Attributes
    ----------
    vectorized : bool
        True when one compiled function evaluates all rows; False when a single-point
        function is called row by row (the fallback when vectorization fails).
    backend : str
        ``"default"`` or ``"jax"``: the backend it was compiled with (``"auto"`` gives
        ``"jax"`` unless jax is missing or cannot run the model).
    """

    vectorized: bool
    _fn: object = field(repr=False)
    backend: str = "default"

    @property
    def jax_rows(self):
        """The :class:`~pymc_evidence.runtime.jax_rows.JaxRows` this evaluates with, or None
        (PyTensor's default linker, or the row-by-row fallback)."""
        return self._fn if self.backend == "jax" and self.vectorized else None

    @property
    def thread_safe(self) -> bool:
        """True on JAX, whose jitted functions threads may call at once (a PyTensor
        function keeps its inputs and outputs in shared storage)."""
        return self.backend == "jax"

    def __call__(self, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(log f (n,), grad log f (n, d))`` at the rows of ``xs`` (n, d); non-finite
        values are returned as computed, row by row."""
        xs = np.atleast_2d(np.asarray(xs, dtype=np.float64))
        if self.vectorized:
            logp, grad = self._fn(xs)
        else:
            rows = [self._fn(x) for x in xs]
            logp, grad = [r[0] for r in rows], [r[1] for r in rows]
        logp = np.asarray(logp, dtype=np.float64).reshape(len(xs))
        return logp, np.asarray(grad, dtype=np.float64).reshape(xs.shape)


def _point_graph(space: ModelSpace):
    """Flat vector ``x`` and the graphs ``[log f(x), grad log f(x)]``.

    Parameter checks become ``-inf`` switches *before* vectorizing, so that a row outside
    the support gives ``-inf`` for that row only (a vectorized check would fail them all).
    The log density is rewritten (:func:`~pymc_evidence.runtime.simplify.simplify_logp`: a
    Bernoulli-logit row with one softplus, not two) before its gradient is taken, so that
    what folds to a constant leaves no gradient behind: an integrated latent GP's
    likelihood term at ``v = 0`` kept a Cholesky factor of its kernel and that factor's
    gradient otherwise. The rewrite keeps the graph's ``zero_grad`` and other view ops
    (``local_view_op`` excluded): an integrated hierarchy's Newton iterations are constants
    of its gradient (:mod:`~pymc_evidence.transforms.group_quadrature`), and without them
    the gradient ran back through every iteration.
    """
    flat, logp = space.on_flat(space.model.logp(jacobian=True))
    logp = pt.cast(checks_to_ninf(float64_constants(logp)), "float64")
    logp = simplify_logp(logp)
    return flat, [logp, pt.grad(logp, flat)]


def _compile_batched(space: ModelSpace, vectorize: bool, backend: str):
    flat, outputs = _point_graph(space)
    what = "ADVI and the particle methods"
    return compile_rows(
        flat, outputs, vectorize=vectorize, what=what, backend=backend, ndim=space.ndim
    )


def batched_logp(space: ModelSpace, *, vectorize: bool = True, backend=None) -> BatchedLogp:
    """The (cached) batched log density and gradient of a model's raveled space.

    Parameters
    ----------
    space : ModelSpace
    vectorize : bool, default True
        Vectorize over rows with :func:`~pytensor.graph.replace.vectorize_graph`. If False,
        or if vectorization fails (then with a :class:`~pymc_evidence.ModelWarning`), rows
        are evaluated in a Python loop by a single-point function.
    backend : {None, "auto", "default", "jax"}
        None takes the backend of the model's runtime
        (:attr:`~pymc_evidence.runtime.runtime.ModelRuntime.backend`, ``"auto"`` unless a call
        set another): JAX, or PyTensor's default linker where jax cannot run the model.
        ``"jax"`` refuses such a model instead.

    Returns
    -------
    BatchedLogp
        Compiled once per model, ``vectorize`` and backend, and kept by the model's
        runtime.

    Raises
    ------
    ValueError
        An unknown backend.
    NotImplementedError
        ``"jax"`` for a model with an op PyTensor cannot run on JAX (the message names it).

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from pymc_evidence.runtime import model_space
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu", 0.0, 1.0, shape=2)
    >>> logp, grad = batched_logp(model_space(model))(np.ones((3, 2)))
    >>> bool(np.allclose(logp, -1.0 - np.log(2 * np.pi))), bool(np.allclose(grad, -1.0))
    (True, True)
    """
    backend = space.runtime.backend if backend is None else resolve_backend(backend)
    per_model = space.runtime.compiled("batched_logp")
    key = (bool(vectorize), backend)
    if key not in per_model:
        vectorized, fn = _compile_batched(space, *key)
        used = "jax" if is_jax_rows(fn) else "default"
        per_model[key] = BatchedLogp(vectorized=vectorized, _fn=fn, backend=used)
    return per_model[key]


def backend_used(model, backend: str) -> str | None:
    """The backend (``"jax"`` or ``"default"``) of the vectorized batched density compiled
    for ``model`` under ``backend`` (from :func:`resolve_backend`), None if none was."""
    fn = runtime_of(model).compiled("batched_logp").get((True, backend))
    return None if fn is None else fn.backend


# ------------------------------------------------------------------------------------------
# Gaussian parameters of R fits: rows of [mean (d), log diag(chol) (d), strict lower (d(d-1)/2)]
