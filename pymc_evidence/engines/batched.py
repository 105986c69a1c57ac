"""Log densities and gradients of a whole batch of particles in one compiled call.

Particle engines (AIS, reverse AIS, SMC) move ``n`` points of a model's raveled unconstrained
space at once. :func:`batched_log_densities` builds the single-point graphs of the model's
joint log density ``log f`` (Jacobians included, as in :func:`pymc.Model.logp`) and of the
normalized base log density ``log q`` on one flat vector, differentiates them with
:func:`pytensor.grad`, and vectorizes the four outputs over the rows of a matrix with
:func:`pytensor.graph.replace.vectorize_graph`. The result is compiled once per
``(model, base)`` pair and kept by the model's runtime. ``log q`` comes from the base's own graph
(:meth:`~pymc_evidence.base.BaseDensity.logp_graph`), so every kind of base works alike.

A base with a closed-form ``logp_grad`` (Gaussian and mixture bases) needs no graph: then
``log f`` and its gradient come from :func:`~pymc_evidence.runtime.batched_logp.batched_logp`,
the function ADVI compiled while fitting that base, and ``log q`` from numpy. One compile per
model then serves the base fit and every particle method (on a cold start of ``smc`` the
second compilation this saves was a sizeable share of the call).

Both gradients are returned separately (rather than the gradient of one tempered density):
any point of the geometric path ``beta * log f + (1 - beta) * log q`` is then a cheap numpy
combination, for a scalar or a per-particle ``beta``, without recompiling.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, field

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from ..base.gaussian import BaseDensity
from ..runtime._compile import checks_to_ninf, compile_rows, is_jax_rows, resolve_backend
from ..runtime.batched_logp import BatchedLogp, batched_logp
from ..runtime.runtime import runtime_of
from ..runtime.space import ModelSpace
from ..transforms.tempering import check_layout, raveled_value_vars, tempered_terms
from .leapfrog import FUSED_MIN_ROWS, fused_trajectory

__all__ = ["BatchedDensity", "batched_log_densities"]

#: Guards the building of a density's fused trajectory (SMC runs on JAX run in threads of
#: one process, and one of them builds it).
_BUILD_LOCK = threading.Lock()


@dataclass(eq=False)
class BatchedDensity:
    """``log f``, ``log q`` and their gradients at every row of a particle matrix.

    Get one from :func:`batched_log_densities`; call it on an array ``x`` of shape
    ``(n, d)``.

    Attributes
    ----------
    space : ModelSpace
        The raveled unconstrained space of the model.
    base : BaseDensity
        The base density ``q``.
    vectorized : bool
        True when one compiled function evaluates all rows; False when it loops over rows
        with a single-point function (the fallback).

    Nothing is counted here (runs, threads and calls share a density): each step returns
    what it met, its calls included (:class:`~pymc_evidence.engines.counts.Counts`).
    """

    space: ModelSpace
    base: BaseDensity
    vectorized: bool
    _fn: object = field(repr=False)
    _fused: object = field(default=None, repr=False)

    @property
    def thread_safe(self) -> bool:
        """True when threads may evaluate this density at once (a JAX function)."""
        if isinstance(self._fn, BatchedLogp):
            return self._fn.thread_safe
        return is_jax_rows(self._fn)

    @property
    def ndim(self) -> int:
        """Dimension ``d`` of the space."""
        return self.space.ndim

    def __call__(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Evaluate at each row of ``x``.

        Parameters
        ----------
        x : ndarray, shape (n, d)

        Returns
        -------
        log_f, log_q : ndarray, shape (n,)
            Joint model log density (with Jacobians) and normalized base log density.
        grad_f, grad_q : ndarray, shape (n, d)
            Their gradients with respect to ``x``.

        Notes
        -----
        Values are returned as computed: a particle outside the support gives ``-inf`` or
        ``nan``. The engines treat any non-finite log density as a rejected move.
        """
        x = np.atleast_2d(np.asarray(x, dtype=np.float64))
        if x.shape[1] != self.ndim:
            raise ValueError(f"particles have dimension {x.shape[1]}, the model {self.ndim}")
        if isinstance(self._fn, BatchedLogp):  # log f compiled, log q in closed form
            log_f, grad_f = self._fn(x)
            log_q, grad_q = self.base.logp_grad(x)
            out = (log_f, log_q, grad_f, grad_q)
        elif self.vectorized:
            out = self._fn(x)
        else:
            rows = [self._fn(row) for row in x]
            out = [np.stack([np.asarray(r[k]) for r in rows]) for k in range(4)]
        return tuple(np.asarray(o, dtype=np.float64) for o in out)

    def fused_trajectory(self, n: int):
        """The fused jax trajectory of :mod:`~pymc_evidence.engines.leapfrog` for ``n``
        particles (or a subset of ``n``), or None where there is none (fewer than
        :data:`~pymc_evidence.engines.leapfrog.FUSED_MIN_ROWS` particles, more than one JAX
        call takes, a density not on JAX or with heavy rows, or a base with no jax form).
        Built once per density.
        """
        rows = self._fn.jax_rows if isinstance(self._fn, BatchedLogp) else None
        if rows is None:
            return None
        if not hasattr(self.base, "jax_logp_grad") or not FUSED_MIN_ROWS <= n <= rows.max_rows:
            return None
        if rows.call_rows is not None:  # heavy rows: a call's work dwarfs its dispatch, and
            return None  # the fused trajectory would compile the density again (seconds)
        if self._fused is None:
            with _BUILD_LOCK:  # runs in threads: one builds it
                if self._fused is None:
                    self._fused = fused_trajectory(rows, self.base)
        return self._fused

    def log_path(self, x: np.ndarray, beta) -> np.ndarray:
        """``beta * log f + (1 - beta) * log q`` at each row of ``x`` (``beta`` scalar or (n,))."""
        log_f, log_q, _, _ = self(x)
        return beta * log_f + (1.0 - beta) * log_q


def _single_point_graphs(model: pm.Model, base, space: ModelSpace, shared: dict):
    """Flat input vector and the graphs ``[log f, log q, grad f, grad q]`` on it."""
    log_f, log_q = tempered_terms(model, base, shared, names=space.names)
    flat, (log_f, log_q) = space.on_flat([log_f, log_q], raveled_value_vars(model, space.names))
    log_f, log_q = checks_to_ninf([log_f, log_q])  # a bad row gives -inf for itself only
    log_f, log_q = pt.cast(log_f, "float64"), pt.cast(log_q, "float64")
    grads = [pt.grad(log_f, flat), pt.grad(log_q, flat)]
    return flat, [log_f, log_q, *grads]


def _compile(model, base, space: ModelSpace, shared: dict, vectorize: bool, backend="auto"):
    flat, outputs = _single_point_graphs(model, base, space, shared)
    what = "every particle method"
    return compile_rows(
        flat, outputs, vectorize=vectorize, what=what, backend=backend, ndim=space.ndim
    )


def batched_log_densities(
    model: pm.Model | None = None,
    base: BaseDensity | None = None,
    *,
    vectorize: bool = True,
    backend: str | None = None,
) -> BatchedDensity:
    """Compile (once, kept by the model's runtime) the batched ``log f``, ``log q`` and
    gradients of a model.

    Parameters
    ----------
    model : pm.Model, optional
        Taken from the context when omitted.
    base : GaussianBase, MixtureBase or PriorBase
        The normalized base density on the model's raveled unconstrained space. Its
        parameters are frozen into the compiled function: a new base object compiles anew.
    vectorize : bool, default True
        Vectorize over particles with :func:`~pytensor.graph.replace.vectorize_graph`. If
        False, or if vectorization fails (then with a :class:`~pymc_evidence.ModelWarning`), rows
        are evaluated in a Python loop by a single-point function.
    backend : {None, "auto", "default", "jax"}
        None takes the backend of the model's runtime
        (:attr:`~pymc_evidence.runtime.runtime.ModelRuntime.backend`).

    Returns
    -------
    BatchedDensity
        Callable on an ``(n, d)`` array, returning ``(log_f, log_q, grad_f, grad_q)``.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from pymc_evidence.base import GaussianBase
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu", 0.0, 1.0, shape=2)
    >>> base = GaussianBase(np.zeros(2), np.eye(2), log_zeta=0.0, kind="moments")
    >>> density = batched_log_densities(model, base)
    >>> log_f, log_q, grad_f, grad_q = density(np.ones((3, 2)))
    >>> log_f.shape, grad_f.shape
    ((3,), (3, 2))
    >>> bool(np.allclose(log_f, log_q)), bool(np.allclose(grad_f, -1.0))
    (True, True)
    """
    model = pm.modelcontext(model)
    if base is None:
        raise ValueError("a base density is required (see pymc_evidence.fit_base)")
    runtime = runtime_of(model)
    space = runtime.space
    check_layout(base, space)
    per_model = runtime.compiled("batched_density", weakref.WeakKeyDictionary)
    backend = runtime.backend if backend is None else resolve_backend(backend)
    key = (bool(vectorize), backend)
    per_base = per_model.setdefault(base, {})
    if key not in per_base:
        if hasattr(base, "logp_grad"):  # Gaussian and mixture bases: one compile per model
            fn = batched_logp(space, vectorize=vectorize, backend=backend)
            vectorized = fn.vectorized
        else:
            vectorized, fn = _compile(model, base, space, base.make_shared(), *key)
        per_base[key] = BatchedDensity(space=space, base=base, vectorized=vectorized, _fn=fn)
    return per_base[key]
