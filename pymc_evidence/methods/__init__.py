"""The evidence methods, one module each, and the registry that names them.

Each method is a :class:`~pymc_evidence.methods._spec.MethodSpec`: a name, a one-line
description, its options with defaults and ``run(problem, options)``. Adding a method means
one new module and one line in :data:`REGISTRY`.
"""

from __future__ import annotations

from types import MappingProxyType

from . import bridge, ct, lis, noneq, smc, st
from ._spec import MethodResult, MethodSpec, resolve_options

__all__ = ["METHODS", "REGISTRY", "MethodResult", "MethodSpec", "get_method", "resolve_options"]

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
    """The spec of method ``name``; a ``ValueError`` lists the methods for an unknown one."""
    if not isinstance(name, str) or name not in REGISTRY:
        options = ", ".join(f"{k!r} ({v})" for k, v in METHODS.items())
        raise ValueError(f"unknown method {name!r}; choose one of: {options}")
    return REGISTRY[name]
