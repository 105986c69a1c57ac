"""What a method is: a name, its options as a frozen dataclass, and one entry point.

Every method module defines one :class:`MethodSpec` (or two, for methods that share a
module) whose ``run(problem, options)`` returns a :class:`MethodResult`. A method's options
are a frozen dataclass, a subclass of :class:`MethodOptions`, whose fields are the options
with their defaults and whose :meth:`~MethodOptions.check` validates them as it is made;
:func:`pymc_evidence.sample_evidence` makes it once from the user's keywords
(:func:`resolve_options`), before anything is fitted or sampled, together with the one
:class:`ProblemOptions` of the call (``potentials``, ``reparam``, ``base``,
``base_kwargs``, which shape the problem every method runs on). The run reads the options'
fields, and stores the settings that :meth:`~MethodOptions.to_attrs` gives as attributes of
the ``log_evidence`` group. The registry in :mod:`pymc_evidence.methods` maps names to
specs; :func:`pymc_evidence.results.assemble.assemble_results` assembles the results.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import ClassVar

from ..estimators.record import EvidenceEstimate

__all__ = [
    "ANNEALING",
    "BASE_OPTIONS",
    "BRIDGE_SAMPLING",
    "CONTINUOUS_TEMPERING",
    "FAMILIES",
    "LINKED_RUNS",
    "PROBLEM_OPTIONS",
    "MethodOptions",
    "MethodResult",
    "MethodSpec",
    "ProblemOptions",
    "SIMULATED_TEMPERING",
    "SMC_RUNS",
    "refuse_unknown",
    "resolve_options",
]

#: The families of methods (:attr:`MethodSpec.family`): what the estimate is computed from,
#: which says what a method's ``log_evidence`` group holds (the plots read it).
CONTINUOUS_TEMPERING = "continuous tempering draws"
SIMULATED_TEMPERING = "simulated tempering levels"
ANNEALING = "annealing works"
LINKED_RUNS = "linked importance sampling runs"
SMC_RUNS = "sequential Monte Carlo runs"
BRIDGE_SAMPLING = "bridge sampling iterates"
FAMILIES = (
    CONTINUOUS_TEMPERING,
    SIMULATED_TEMPERING,
    ANNEALING,
    LINKED_RUNS,
    SMC_RUNS,
    BRIDGE_SAMPLING,
)


@dataclass(frozen=True)
class ProblemOptions:
    """The options of a call that shape its problem, not one method: one record per call,
    shared by every method of a cross-check.

    Attributes
    ----------
    potentials : {None, "likelihood"}
        How ``pm.Potential`` terms count
        (:meth:`~pymc_evidence.problem.EvidenceProblem.build`).
    reparam : {"auto", None}
        The model's rewrites (:meth:`~pymc_evidence.problem.EvidenceProblem.build`); the
        user's ``posterior`` draws turn it off (they are of the model as written).
    base, base_kwargs
        The base density and the keywords of its fit, for the methods that start from one
        (:attr:`MethodSpec.uses_base`).

    Examples
    --------
    >>> ProblemOptions.from_keywords({"reparam": None, "n_runs": 2})
    ProblemOptions(potentials=None, reparam=None, base='auto', base_kwargs=None)
    """

    potentials: str | None = None
    reparam: str | None = "auto"
    base: object = "auto"
    base_kwargs: dict | None = None

    @classmethod
    def from_keywords(cls, given: Mapping) -> ProblemOptions:
        """The record of the problem options among ``given`` (other keywords are ignored)."""
        return cls(**{f.name: given[f.name] for f in fields(cls) if f.name in given})


_SHARED = {f.name: f.default for f in fields(ProblemOptions)}
#: Options every method accepts; they shape the problem, not the method.
PROBLEM_OPTIONS = MappingProxyType({key: _SHARED[key] for key in ("potentials", "reparam")})
#: Options of methods that start from a base density.
BASE_OPTIONS = MappingProxyType({key: _SHARED[key] for key in ("base", "base_kwargs")})


@dataclass(frozen=True)
class MethodOptions:
    """A method's options: subclasses are frozen dataclasses whose fields are the options
    and their defaults, made once per call and checked as they are made.

    ``__post_init__`` runs :meth:`check` on the values as given, then makes the fields
    named in :attr:`INTS` ``int`` (None stays None), so the run counts with ints.
    :meth:`to_attrs` gives the settings stored as attributes of the ``log_evidence``
    group: the fields named in :attr:`ATTRS`, unless a subclass says otherwise.

    Examples
    --------
    >>> @dataclass(frozen=True)
    ... class DemoOptions(MethodOptions):
    ...     n: int = 3
    ...     INTS = ATTRS = ("n",)
    ...
    ...     def check(self):
    ...         if int(self.n) < 1:
    ...             raise ValueError(f"n must be >= 1, got {self.n}")
    >>> DemoOptions(n=5.0).to_attrs()
    {'n': 5}
    >>> DemoOptions(n=0)
    Traceback (most recent call last):
    ...
    ValueError: n must be >= 1, got 0
    """

    #: Fields made ``int`` once checked (None stays None).
    INTS: ClassVar[tuple[str, ...]] = ()
    #: Fields that :meth:`to_attrs` stores, in this order.
    ATTRS: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self):
        self.check()
        for name in self.INTS:
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, int(value))

    def check(self) -> None:
        """Raise ``ValueError`` for a bad value; called as the options are made, before
        any fitting or sampling. Nothing to check here."""

    @classmethod
    def defaults(cls) -> dict:
        """Every option of the class with its default."""
        return {f.name: f.default for f in fields(cls) if f.init}

    def values(self) -> dict:
        """Every option with its value (a shallow dict; :func:`dataclasses.asdict` would
        copy arrays and data)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.init}

    @property
    def given_draws(self):
        """The user's posterior draws (the option ``posterior``, where the method has it),
        or None."""
        return getattr(self, "posterior", None)

    def to_attrs(self) -> dict:
        """The settings stored as attributes of the ``log_evidence`` group."""
        return {name: getattr(self, name) for name in self.ATTRS}


@dataclass(frozen=True)
class MethodResult:
    """What a method returns, as a value: the estimate and the pieces of the results
    container (the API adds the call's attributes and builds the container).

    Attributes
    ----------
    estimate : EvidenceEstimate
        With every warning of the run already in ``estimate.warnings`` (and emitted).
    groups : dict of str to xarray.Dataset
        ``posterior`` and any other group (``sample_stats``, ``extended_posterior``, ...).
    layout : dict
        Keyword arguments of :func:`~pymc_evidence.results.estimate_to_dataset` besides the
        estimate and attrs: ``chain_dim``, ``chain_values``, ``stage_values``, ``stage_dim``,
        ``extra_dims``.
    attrs : dict
        The method's settings, stored as attributes of the ``log_evidence`` group.
    nuts : tuple of str
        The NUTS backends of the method's own runs (the problem's reference runs are
        counted by the problem: :attr:`~pymc_evidence.problem.EvidenceProblem.reference_samplers`).
    """

    estimate: EvidenceEstimate
    groups: dict
    layout: dict = field(default_factory=dict)
    attrs: dict = field(default_factory=dict)
    nuts: tuple[str, ...] = ()


@dataclass(frozen=True)
class MethodSpec:
    """A registered method.

    Attributes
    ----------
    name : str
        What users pass as ``method=``.
    description : str
        One line, shown in :data:`pymc_evidence.METHODS` and in errors.
    run : callable
        ``run(problem, options) -> MethodResult``; ``options`` an instance of
        :attr:`options`.
    options : type
        The method's :class:`MethodOptions` subclass: its fields are the accepted method
        options and their defaults (the problem options are added for all), its ``check``
        validates them.
    uses_base : bool
        True when the method starts from a base density (then ``base`` and ``base_kwargs``
        are accepted).
    tempering : bool
        True when the method starts from the tempering base
        (:attr:`~pymc_evidence.problem.EvidenceProblem.tempering_base`), fitted with the
        problem.
    ready : callable, optional
        ``ready(problem, options)`` raises ``ValueError`` where the method cannot be right
        on this problem (e.g. too many dimensions for its draws); called once the problem
        is built, before any method of the call samples anything.
    nuts : {"none", "any", "step"}
        Whether the method runs NUTS: ``"none"`` (particle methods: ``draws``, ``tune``,
        ``chains`` and the NUTS arguments are refused), ``"any"`` (through
        :func:`~pymc_evidence.nuts.run_nuts`, every backend) or ``"step"`` (a PyMC step
        method of this package: PyMC's sampler only).
    distributes : bool
        Whether its independent runs go to ``sample_evidence``'s ``executor``.
    sizes : str
        For a method that runs no NUTS: the options that size its runs, named where
        ``pm.sample``'s sizes are given to it.
    family : str
        One of :data:`FAMILIES`: what the estimate is computed from (tempered draws, ladder
        levels, annealing works, linked runs, SMC runs, bridge iterates), so what the
        method's results hold; code that handles the results of a kind of method reads it
        rather than comparing method names.
    works : tuple of str
        For the methods whose estimate is a function of annealing works (AIS, reverse AIS,
        BAR): the directions, ``"forward"`` and/or ``"reverse"``, whose works enter it
        (:func:`~pymc_evidence.estimators.noneq.works_log_evidence`); the others run may
        be kept for their kernels but do not count. Empty for every other method.
    """

    name: str
    description: str
    run: Callable
    options: type[MethodOptions] = MethodOptions
    uses_base: bool = True
    tempering: bool = False
    nuts: str = "none"
    ready: Callable | None = None
    distributes: bool = False
    sizes: str = ""
    family: str = ""
    works: tuple[str, ...] = ()

    def accepted(self) -> dict:
        """Every option this method accepts, with its default."""
        out = dict(PROBLEM_OPTIONS)
        if self.uses_base:
            out.update(BASE_OPTIONS)
        out.update(self.options.defaults())
        return out


def refuse_unknown(given: Iterable[str], accepted: Iterable[str], who: str) -> None:
    """Raise ``TypeError`` naming the keywords of ``given`` not in ``accepted`` (the closest
    accepted name of each, where one is close, and every valid one); ``who`` begins the
    message.

    Examples
    --------
    >>> refuse_unknown(["n_particle"], ["n_particles", "n_runs"], "method 'smc'")
    Traceback (most recent call last):
    ...
    TypeError: method 'smc' got unknown option(s) ['n_particle']; did you mean 'n_particles'? ...
    """
    accepted = sorted(set(accepted))
    unknown = sorted(set(given) - set(accepted))
    if not unknown:
        return
    close = {name: difflib.get_close_matches(name, accepted, n=1) for name in unknown}
    close = {name: match[0] for name, match in close.items() if match}
    hint = ""
    if len(unknown) == 1 and close:
        hint = f"did you mean {close[unknown[0]]!r}? "
    elif close:
        hint = "did you mean " + ", ".join(f"{m!r} (for {n!r})" for n, m in close.items()) + "? "
    raise TypeError(
        f"{who} got unknown option(s) {unknown}; {hint}valid options: " + ", ".join(accepted)
    )


def resolve_options(spec: MethodSpec, given: Mapping) -> MethodOptions:
    """The method's options (an instance of ``spec.options``) from ``given``: an option the
    method does not accept raises ``TypeError`` listing the valid ones, the problem options
    (:class:`ProblemOptions`) are left out, and the values are checked as the options are
    made (before any fitting or sampling).

    Examples
    --------
    >>> @dataclass(frozen=True)
    ... class DemoOptions(MethodOptions):
    ...     n: int = 3
    >>> spec = MethodSpec("demo", "a demo", run=None, options=DemoOptions)
    >>> resolve_options(spec, {"n": 5, "reparam": None})
    DemoOptions(n=5)
    >>> resolve_options(spec, {"m": 1})
    Traceback (most recent call last):
    ...
    TypeError: method 'demo' got unknown option(s) ['m']; valid options: base, ...
    """
    refuse_unknown(given, spec.accepted(), f"method {spec.name!r}")
    own = spec.options.defaults()
    return spec.options(**{key: value for key, value in given.items() if key in own})
