"""PyMC's sampling arguments, and the one function through which every method runs NUTS.

:class:`SamplingArgs` holds what a user passes to :func:`pymc_evidence.sample_evidence` in
:func:`pymc.sample`'s words (``draws``, ``tune``, ``chains``, ``cores``, ``progressbar``,
``nuts_sampler``, ``target_accept``, ``nuts_sampler_kwargs``, ``initvals``,
``compile_kwargs``, ``idata_kwargs``) and remembers which of them the user actually gave,
so that methods which run no NUTS can refuse them instead of reinterpreting them.

:func:`run_nuts` is the only place that calls :func:`pymc.sample` for NUTS, so every method
honours the arguments the same way:

* ``nuts_sampler=None`` picks what PyMC itself would pick: nutpie when it is installed and
  PyTensor compiles with Numba or JAX (PyMC 6's default), PyMC's own NUTS otherwise.
* With PyMC's NUTS a method may hand in a compiled ``logp_dlogp`` (compiled once per model
  and reused across adaptation rounds) and an initial mass matrix (``potential``, e.g. the
  base's variances). Other backends adapt their own mass matrix (nutpie has no argument for
  an initial one); they start from the method's first starting point instead.
* The user's ``initvals`` override the method's starting points variable by variable.
* ``target_accept`` given by the user overrides the method's own default.
"""

from __future__ import annotations

import importlib.util
import logging
from dataclasses import dataclass, field, fields

import pymc as pm

from .compat import IS_DATATREE

__all__ = ["NUTS_SAMPLERS", "SamplingArgs", "default_nuts_sampler", "run_nuts", "run_step"]

NUTS_SAMPLERS = ("pymc", "nutpie", "numpyro", "blackjax")
#: The arguments that only matter to a NUTS run.
NUTS_ARGS = ("nuts_sampler", "target_accept", "nuts_sampler_kwargs", "initvals", "compile_kwargs")
_DEFAULTS = {"draws": 1000, "tune": 1000, "chains": 4}


def default_nuts_sampler() -> str:
    """``"nutpie"`` when it is installed and PyTensor's default linker is Numba or JAX (as
    on PyMC 6, whose ``pm.sample`` then prefers nutpie too), else ``"pymc"``.

    Examples
    --------
    >>> default_nuts_sampler() in NUTS_SAMPLERS
    True
    """
    if importlib.util.find_spec("nutpie") is None:
        return "pymc"
    from pytensor.compile.mode import get_mode

    linker = type(get_mode(None).linker).__name__
    return "nutpie" if linker in ("NumbaLinker", "JAXLinker") else "pymc"


@dataclass
class SamplingArgs:
    """The PyMC-style sampling arguments of a call (``pm.sample``'s meaning).

    Build with :meth:`from_call` to record which arguments were given (``None`` means
    "not given": the default is used and :attr:`given` does not list it).

    Examples
    --------
    >>> args = SamplingArgs.from_call(draws=500, target_accept=0.9)
    >>> args.draws, args.tune, sorted(args.given)
    (500, 1000, ['draws', 'target_accept'])
    """

    draws: int = 1000
    tune: int = 1000
    chains: int = 4
    cores: int | None = None
    progressbar: bool = True
    nuts_sampler: str | None = None
    target_accept: float | None = None
    nuts_sampler_kwargs: dict = field(default_factory=dict)
    initvals: object = None
    compile_kwargs: dict = field(default_factory=dict)
    idata_kwargs: dict = field(default_factory=dict)
    #: Where the independent runs of the particle methods go (a ``concurrent.futures``
    #: executor; None: here, in up to ``cores`` forked processes).
    executor: object = None
    given: frozenset = frozenset()

    @classmethod
    def from_call(cls, **kwargs) -> SamplingArgs:
        """Arguments as a user passed them; ``None`` values take the defaults."""
        names = {f.name for f in fields(cls)} - {"given"}
        unknown = sorted(set(kwargs) - names)
        if unknown:
            raise TypeError(f"unknown sampling argument(s) {unknown}")
        given = frozenset(k for k, v in kwargs.items() if v is not None)
        values = {k: v for k, v in kwargs.items() if v is not None}
        for key in ("nuts_sampler_kwargs", "compile_kwargs", "idata_kwargs"):
            values.setdefault(key, {})
        return cls(**{**_DEFAULTS, **values}, given=given)

    def __post_init__(self):
        for name in ("draws", "chains"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if int(self.tune) < 0:
            raise ValueError(f"tune must be >= 0, got {self.tune}")
        if self.cores is not None and int(self.cores) < 1:
            raise ValueError(f"cores must be at least 1, got {self.cores}")
        if self.nuts_sampler is not None and self.nuts_sampler not in NUTS_SAMPLERS:
            raise ValueError(
                f"nuts_sampler must be one of {NUTS_SAMPLERS} or None, got {self.nuts_sampler!r}"
            )
        if self.target_accept is not None and not 0 < float(self.target_accept) < 1:
            raise ValueError(f"target_accept must be in (0, 1), got {self.target_accept}")
        for key in ("nuts_sampler_kwargs", "compile_kwargs", "idata_kwargs"):
            if not isinstance(getattr(self, key), dict):
                raise TypeError(f"{key} must be a dict, got {type(getattr(self, key)).__name__}")
            setattr(self, key, dict(getattr(self, key)))

    @property
    def sampler(self) -> str:
        """The NUTS backend: ``nuts_sampler``, or :func:`default_nuts_sampler`."""
        return self.nuts_sampler or default_nuts_sampler()


def _merged_initvals(ours, theirs, chains: int):
    """Per-chain starting points: the method's (``ours``, a list or None) updated by the
    user's (``theirs``: one dict for every chain, or one per chain)."""
    if theirs is None:
        return ours
    if isinstance(theirs, dict):
        theirs = [theirs] * chains
    theirs = list(theirs)
    if len(theirs) != chains:
        raise ValueError(f"initvals holds {len(theirs)} points for {chains} chains")
    ours = ours or [{} for _ in range(chains)]
    return [{**a, **dict(b or {})} for a, b in zip(ours, theirs, strict=True)]


def _sample_keywords(model, sampling: SamplingArgs, random_seed, draws, tune) -> dict:
    """The ``pm.sample`` keywords every run shares. ``idata_kwargs`` go along without
    ``log_likelihood``: that one is computed once, on the returned posterior, by
    :func:`pymc_evidence.sample_evidence`."""
    kwargs = dict(
        draws=int(sampling.draws if draws is None else draws),
        tune=int(sampling.tune if tune is None else tune),
        chains=int(sampling.chains),
        cores=sampling.cores,
        progressbar=bool(sampling.progressbar),
        random_seed=int(random_seed),
        compute_convergence_checks=False,
        model=model,
    )
    kept = {k: v for k, v in sampling.idata_kwargs.items() if k != "log_likelihood"}
    if kept:
        kwargs["idata_kwargs"] = kept
    return kwargs


def _nuts_keywords(sampler: str, target_accept: float, kwargs: dict) -> dict:
    """``target_accept`` and the NUTS keywords in the form the installed PyMC takes them
    (PyMC 6 reads both from ``nuts=``; PyMC 5 sends ``nuts_sampler_kwargs`` to external
    samplers and ``target_accept`` through ``nuts=``)."""
    if IS_DATATREE or sampler == "pymc":
        return {"nuts": {"target_accept": float(target_accept), **kwargs}}
    return {"nuts": {"target_accept": float(target_accept)}, "nuts_sampler_kwargs": dict(kwargs)}


def run_nuts(
    model: pm.Model,
    sampling: SamplingArgs,
    *,
    random_seed: int,
    target_accept: float,
    draws: int | None = None,
    tune: int | None = None,
    initvals: list | None = None,
    potential=None,
    logp_dlogp=None,
    sampler: str | None = None,
):
    """One NUTS run of ``model`` with the call's sampling arguments.

    Parameters
    ----------
    model : pm.Model
    sampling : SamplingArgs
    random_seed : int
    target_accept : float
        The method's default; the user's ``target_accept`` wins when given.
    draws, tune : int, optional
        Override ``sampling.draws`` / ``sampling.tune`` (adaptation rounds).
    initvals : list of dict, optional
        The method's per-chain starting points (the user's ``initvals`` update them).
    potential : QuadPotential, optional
        Initial mass matrix for PyMC's NUTS (other backends adapt their own).
    logp_dlogp : callable, optional
        A compiled ``model.logp_dlogp_function(ravel_inputs=True)``, reused by PyMC's NUTS.
    sampler : str, optional
        The backend when the user named none (default :attr:`SamplingArgs.sampler`).

    Returns
    -------
    InferenceData or DataTree
        What :func:`pymc.sample` returns (convergence checks are the caller's).
    """
    sampler = sampling.nuts_sampler or sampler or sampling.sampler
    target = sampling.target_accept or target_accept
    points = _merged_initvals(initvals, sampling.initvals, sampling.chains)
    kwargs = _sample_keywords(model, sampling, random_seed, draws, tune)
    if sampler == "pymc" and (potential is not None or logp_dlogp is not None):
        compile_kwargs = {} if logp_dlogp is not None else dict(sampling.compile_kwargs)
        step = pm.NUTS(
            model=model,
            potential=potential,
            logp_dlogp_func=logp_dlogp,
            target_accept=float(target),
            **sampling.nuts_sampler_kwargs,
            **compile_kwargs,
        )
        return _pm_sample(step=step, initvals=points, **kwargs)
    if points is not None and sampler == "nutpie":
        points = points[0]  # nutpie takes one starting point and jitters it per chain
    if sampling.compile_kwargs:
        kwargs["compile_kwargs"] = dict(sampling.compile_kwargs)
    return _pm_sample(
        nuts_sampler=sampler,
        initvals=points,
        **_nuts_keywords(sampler, target, sampling.nuts_sampler_kwargs),
        **kwargs,
    )


def run_step(
    model: pm.Model,
    sampling: SamplingArgs,
    step,
    *,
    random_seed: int,
    draws: int | None = None,
    tune: int | None = None,
    initvals: list | None = None,
):
    """``pm.sample`` with one of the package's own step methods (tempering steppers run
    inside PyMC's sampler, so only ``nuts_sampler="pymc"`` can run them; the NUTS keywords
    and ``compile_kwargs`` were given to the step when it was built).

    Returns
    -------
    InferenceData or DataTree
    """
    if sampling.nuts_sampler not in (None, "pymc"):
        raise ValueError(
            f"{type(step).__name__} is a PyMC step method: it runs in PyMC's own sampler, "
            f"not nuts_sampler={sampling.nuts_sampler!r}"
        )
    kwargs = _sample_keywords(model, sampling, random_seed, draws, tune)
    points = _merged_initvals(initvals, sampling.initvals, sampling.chains)
    return _pm_sample(step=step, initvals=points, **kwargs)


def _pm_sample(**kwargs):
    """:func:`pymc.sample`; with the call's progress bar off, PyMC's INFO notices of these
    internal runs ("Sequential sampling (4 chains in 1 job)", "NUTS: [...]", the time it
    took) are not printed either (its warnings still are)."""
    if kwargs.get("progressbar", True):
        return pm.sample(**kwargs)
    logger = logging.getLogger("pymc")
    level = logger.level
    logger.setLevel(max(level, logging.WARNING))
    try:
        return pm.sample(**kwargs)
    finally:
        logger.setLevel(level)
