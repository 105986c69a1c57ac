"""The model runtime: one object per PyMC model that owns everything made for the model.

A :class:`ModelRuntime` holds, for one model,

- its raveled unconstrained space (:attr:`ModelRuntime.space`, a
  :class:`~pymc_evidence.runtime.space.ModelSpace`, built on first use);
- every function compiled for the model (:meth:`ModelRuntime.compiled`: batched densities,
  prior draws, component starts), so a second call on the same model compiles nothing;
- the copies of the model that leave ``log Z`` unchanged (:meth:`ModelRuntime.prepared`:
  reparametrised, discrete variables summed out, latents integrated), remade when the
  model's variables, coords or data change (:func:`fingerprint`: ``pm.set_data`` shows);
- what built the model, where this package did (:attr:`ModelRuntime.origin`: the
  :class:`~pymc_evidence.transforms.CTSpec` of a ``continuous_tempering`` model, the record
  of a ``reparametrize`` rewrite);
- the backend its batched densities compile with (:attr:`ModelRuntime.backend`, see
  :mod:`~pymc_evidence.runtime._compile`): a value set by the call that prepares the model
  (``pymc_evidence.sample_evidence(backend=...)``), read by every compilation for it.

:func:`runtime_of` is the one accessor. The runtime lives on the model object itself, as
the attribute ``_pymc_evidence_runtime``, rather than in a module-level registry: it lives
and dies with the model (a registry keyed weakly by the model and holding a runtime that
refers to the model would keep both alive), and there is no module state to reset between
calls or to inherit in worker processes. A pickled model (an executor's task,
:mod:`~pymc_evidence.methods._remote`) carries an empty runtime, never compiled functions
(:meth:`ModelRuntime.__reduce__`), and a copy made by ``model.copy()`` starts its own.

The module lives in ``runtime/``, beside the modules whose functions it holds (``space``,
``batched_logp``, ``_compile``): the base densities (``base/``), their fit (``basefit/``) and
the transforms, all above it, read it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
import pymc as pm

from ._compile import resolve_backend
from .space import ModelSpace

__all__ = ["ModelRuntime", "fingerprint", "model_space", "runtime_of"]

#: The attribute of a ``pm.Model`` that holds its runtime.
ATTRIBUTE = "_pymc_evidence_runtime"


def fingerprint(model: pm.Model) -> tuple:
    """What a prepared copy of ``model`` depends on: its variables, its coords and the
    values of its data containers (a copy holds copies of them, so ``pm.set_data`` must
    show).

    Examples
    --------
    >>> import pymc as pm
    >>> with pm.Model() as model:
    ...     x = pm.Data("x", [1.0, 2.0])
    ...     mu = pm.Normal("mu")
    >>> before = fingerprint(model)
    >>> pm.set_data({"x": [3.0, 4.0]}, model=model)
    >>> fingerprint(model) == before
    False
    """
    data = tuple((v.name, _digest(v)) for v in model.data_vars)
    coords = tuple((k, None if v is None else tuple(v)) for k, v in model.coords.items())
    return tuple(model.named_vars), data, coords


def _digest(var) -> str:
    """A hash of a data container's value (a shared variable's, or a constant's: a copy
    made by ``pm.do(..., make_interventions_shared=False)`` holds constants)."""
    value = var.get_value() if hasattr(var, "get_value") else var.data
    return hashlib.blake2b(np.ascontiguousarray(value).tobytes()).hexdigest()


@dataclass(eq=False)
class ModelRuntime:
    """The owner of one model's space, compiled functions, prepared copies and backend.

    Get one with :func:`runtime_of`; never build one directly.

    Attributes
    ----------
    model : pm.Model
    backend : {"auto", "default", "jax"}
        The backend of the model's batched densities (see
        :func:`~pymc_evidence.runtime._compile.resolve_backend`); ``"auto"`` until a call
        sets another (:func:`runtime_of` with ``backend=``).
    origin : object
        What built the model, where this package did (None otherwise).

    Examples
    --------
    >>> import pymc as pm
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu")
    >>> runtime = runtime_of(model)
    >>> runtime is runtime_of(model), runtime.space.names, runtime.backend
    (True, ('mu',), 'auto')
    """

    model: pm.Model = field(repr=False)
    backend: str = "auto"
    origin: object = field(default=None, repr=False)
    _space: ModelSpace | None = field(default=None, repr=False)
    _compiled: dict = field(default_factory=dict, repr=False)
    _prepared: dict = field(default_factory=dict, repr=False)

    def __reduce__(self):
        """Pickled (with its model), a runtime is an empty one: compiled functions stay in
        the process that compiled them."""
        return (_empty_runtime, ())

    @property
    def space(self) -> ModelSpace:
        """The model's raveled unconstrained space (built on first use)."""
        if self._space is None:
            self._space = ModelSpace.of(self.model, self)
        return self._space

    def compiled(self, purpose: str, factory=dict):
        """The store of this model's compiled functions for one ``purpose`` (made by
        ``factory`` on first use): batched densities, prior draws, component starts.

        Examples
        --------
        >>> import pymc as pm
        >>> with pm.Model() as model:
        ...     mu = pm.Normal("mu")
        >>> runtime_of(model).compiled("example") is runtime_of(model).compiled("example")
        True
        """
        return self._compiled.setdefault(purpose, factory())

    def prepared(self, key: str, make, stamp: tuple | None = None):
        """``make(model)``, made once per ``key`` while the model's :func:`fingerprint`
        (``stamp``, computed when not given) stays the same.

        Examples
        --------
        >>> import pymc as pm
        >>> with pm.Model() as model:
        ...     mu = pm.Normal("mu")
        >>> runtime = runtime_of(model)
        >>> runtime.prepared("copy", pm.Model.copy) is runtime.prepared("copy", pm.Model.copy)
        True
        """
        stamp = fingerprint(self.model) if stamp is None else stamp
        held = self._prepared.get(key)
        if held is None or held[0] != stamp:
            held = self._prepared[key] = (stamp, make(self.model))
        return held[1]


def _empty_runtime() -> None:
    """What a pickled runtime becomes: nothing (the unpickled model makes its own)."""
    return None


def runtime_of(model: pm.Model | None = None, *, backend: str | None = None) -> ModelRuntime:
    """The :class:`ModelRuntime` of ``model`` (or of the model in context), made on first
    use; with ``backend``, its backend set to it first (checked by
    :func:`~pymc_evidence.runtime._compile.resolve_backend`).

    Examples
    --------
    >>> import pymc as pm
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu")
    >>> runtime_of(model, backend="default").backend
    'default'
    """
    model = pm.modelcontext(model)
    runtime = getattr(model, ATTRIBUTE, None)
    if runtime is None:
        runtime = ModelRuntime(model=model)
        setattr(model, ATTRIBUTE, runtime)
    if backend is not None:
        runtime.backend = resolve_backend(backend)
    return runtime


def model_space(model: pm.Model | None = None) -> ModelSpace:
    """The :class:`~pymc_evidence.runtime.space.ModelSpace` of ``model`` or of the model in
    context, from its runtime (built once per model).

    Examples
    --------
    >>> import pymc as pm
    >>> with pm.Model() as model:
    ...     s = pm.HalfNormal("s")
    ...     mu = pm.Normal("mu", shape=2)
    >>> space = model_space(model)
    >>> space.names, space.ndim
    (('s_log__', 'mu'), 3)
    """
    return runtime_of(model).space
