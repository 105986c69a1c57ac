"""Compile PyTensor functions the way PyMC does.

PyMC's compiler turns parameter checks (``0 <= p <= 1``) into ``-inf`` log densities instead of
exceptions, so a proposal that leaves a parameter's support is simply rejected.
"""

from __future__ import annotations

import warnings

import pytensor.tensor as pt
from pytensor.graph.replace import vectorize_graph

from ..estimators.diagnostics import ModelWarning

try:  # PyMC >= 5.19
    from pymc.pytensorf import compile as _pymc_compile
except ImportError:  # pragma: no cover - older PyMC
    from pymc.pytensorf import compile_pymc as _pymc_compile

__all__ = ["compile_fn"]


def compile_fn(inputs, outputs, **kwargs):
    """``pytensor.function`` with PyMC's rewrites (parameter checks become ``-inf``)."""
    kwargs.setdefault("on_unused_input", "ignore")
    return _pymc_compile(inputs, outputs, **kwargs)


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
    flat, outputs, *, vectorize: bool = True, what: str, category=ModelWarning, stacklevel=4
):
    """Compile ``outputs`` of the single-point input ``flat`` for a matrix of rows.

    Returns ``(vectorized, fn)``: ``fn`` takes a matrix when ``vectorized``, else one row
    (when vectorizing fails, with a warning of ``category``, by default
    :class:`~pymc_evidence.ModelWarning`, saying ``what`` is now slower).
    """
    if vectorize:
        try:
            xs = pt.matrix("xs", dtype="float64")
            fn = compile_fn([xs], vectorize_graph(outputs, replace={flat: xs}))
            fn.trust_input = True  # callers pass float64 matrices only
            return True, fn
        except Exception as err:  # any op that cannot be batched
            warnings.warn(
                f"could not vectorize the model's log density ({err!r}); {what} evaluates "
                "one point at a time, which is much slower",
                category,
                stacklevel=stacklevel,
            )
    return False, compile_fn([flat], outputs)
