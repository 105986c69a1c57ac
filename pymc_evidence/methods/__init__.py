"""The evidence methods, one module each, and the registry that names them.

Each method is a :class:`~pymc_evidence.methods._spec.MethodSpec`: a name, a one-line
description, its options (a frozen :class:`~pymc_evidence.methods._spec.MethodOptions`
dataclass whose fields are the options with their defaults, checked as it is made) and
``run(problem, options)``. Adding a method means one new module and one line in
:data:`REGISTRY`.
"""

from __future__ import annotations

import difflib
from types import MappingProxyType

from . import bridge, ct, lis, noneq, smc, st
from ._spec import (
    ANNEALING,
    BRIDGE_SAMPLING,
    CONTINUOUS_TEMPERING,
    FAMILIES,
    LINKED_RUNS,
    SIMULATED_TEMPERING,
    SMC_RUNS,
    MethodOptions,
    MethodResult,
    MethodSpec,
    ProblemOptions,
    refuse_unknown,
    resolve_options,
)

__all__ = [
    "ANNEALING",
    "BRIDGE_SAMPLING",
    "CONTINUOUS_TEMPERING",
    "FAMILIES",
    "LINKED_RUNS",
    "METHODS",
    "REGISTRY",
    "MethodOptions",
    "MethodResult",
    "MethodSpec",
    "ProblemOptions",
    "SIMULATED_TEMPERING",
    "SMC_RUNS",
    "get_method",
    "methods_in",
    "refuse_unknown",
    "resolve_options",
]

#: method name -> its spec
REGISTRY = MappingProxyType(
    {
        spec.name: spec
        for spec in (
            ct.CT_SPEC,
            ct.GIBBS_CT_SPEC,
            st.SPEC,
            noneq.AIS_SPEC,
            noneq.RAIS_SPEC,
            noneq.BAR_SPEC,
            smc.SMC_SPEC,
            smc.ARM_SPEC,
            lis.SPEC,
            bridge.SPEC,
        )
    }
)

#: method name -> one-line description (shown in the error for an unknown method)
METHODS = MappingProxyType({name: spec.description for name, spec in REGISTRY.items()})


def get_method(name) -> MethodSpec:
    """The spec of method ``name``.

    Raises
    ------
    ValueError
        An unknown name: the message names the closest method when one is close
        (``'smcc'``: did you mean ``'smc'``?) and lists the others by name only (their
        descriptions are in :data:`METHODS`).

    Examples
    --------
    >>> get_method("smc").name
    'smc'
    """
    if isinstance(name, str) and name in REGISTRY:
        return REGISTRY[name]
    close = difflib.get_close_matches(name.lower(), REGISTRY, n=1) if isinstance(name, str) else []
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise ValueError(
        f"unknown method {name!r}; {hint}the methods are {', '.join(map(repr, REGISTRY))} "
        "(the default is 'smc'; pymc_evidence.METHODS describes each)"
    )


def methods_in(*families: str) -> tuple[str, ...]:
    """The names of the registered methods of these families (:data:`FAMILIES`), in the
    registry's order.

    Examples
    --------
    >>> methods_in(SMC_RUNS)
    ('smc', 'arm')
    """
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        raise ValueError(f"unknown method families {unknown}; the families are {FAMILIES}")
    return tuple(name for name, spec in REGISTRY.items() if spec.family in families)
