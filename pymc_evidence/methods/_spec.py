"""What a method is: a name, its options with defaults, and one entry point.

Every method module defines one :class:`MethodSpec` (or two, for methods that share a
module) whose ``run(problem, options)`` returns a :class:`MethodResult`. The registry in
:mod:`pymc_evidence.methods` maps names to specs; :func:`pymc_evidence.sample_evidence`
checks the options against ``spec.options`` and ``spec.check`` before anything is fitted or
sampled, then runs the method and assembles its result with
:func:`pymc_evidence.results.assemble.assemble_results`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from ..estimators.record import EvidenceEstimate

__all__ = ["PROBLEM_OPTIONS", "MethodResult", "MethodSpec", "resolve_options"]

#: Options every method accepts; they shape the problem, not the method.
PROBLEM_OPTIONS = MappingProxyType({"potentials": None, "reparam": "auto"})
#: Options of methods that start from a base density.
BASE_OPTIONS = MappingProxyType({"base": "auto", "base_kwargs": None})


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
        ``run(problem, options) -> MethodResult``; ``options`` holds every option of
        :attr:`options`, defaults filled in.
    options : mapping
        Accepted method options and their defaults (problem options are added for all).
    uses_base : bool
        True when the method starts from a base density (then ``base`` and ``base_kwargs``
        are accepted).
    check : callable, optional
        ``check(options)`` raises ``ValueError`` for bad values; called before any work.
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
    """

    name: str
    description: str
    run: Callable
    options: Mapping = field(default_factory=dict)
    uses_base: bool = True
    check: Callable | None = None
    nuts: str = "none"
    ready: Callable | None = None
    distributes: bool = False

    def accepted(self) -> dict:
        """Every option this method accepts, with its default."""
        out = dict(PROBLEM_OPTIONS)
        if self.uses_base:
            out.update(BASE_OPTIONS)
        out.update(self.options)
        return out


def resolve_options(spec: MethodSpec, given: Mapping) -> dict:
    """``given`` completed with defaults; unknown names raise ``TypeError`` listing the valid
    ones and ``spec.check`` validates the values (before any fitting or sampling).

    Examples
    --------
    >>> spec = MethodSpec("demo", "a demo", run=None, options={"n": 3})
    >>> resolve_options(spec, {"n": 5})["n"]
    5
    >>> resolve_options(spec, {"m": 1})
    Traceback (most recent call last):
    ...
    TypeError: method 'demo' got unknown option(s) ['m']; valid options: base, ...
    """
    accepted = spec.accepted()
    unknown = sorted(set(given) - set(accepted))
    if unknown:
        raise TypeError(
            f"method {spec.name!r} got unknown option(s) {unknown}; valid options: "
            + ", ".join(sorted(accepted))
        )
    options = {**accepted, **given}
    if spec.check is not None:
        spec.check(options)
    return options
