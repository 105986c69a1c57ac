"""Compile PyTensor functions the way PyMC does.

PyMC's compiler turns parameter checks (``0 <= p <= 1``) into ``-inf`` log densities instead of
exceptions, so a proposal that leaves a parameter's support is simply rejected.
"""

from __future__ import annotations

try:  # PyMC >= 5.19
    from pymc.pytensorf import compile as _pymc_compile
except ImportError:  # pragma: no cover - older PyMC
    from pymc.pytensorf import compile_pymc as _pymc_compile

__all__ = ["compile_fn"]


def compile_fn(inputs, outputs, **kwargs):
    """``pytensor.function`` with PyMC's rewrites (parameter checks become ``-inf``)."""
    kwargs.setdefault("on_unused_input", "ignore")
    return _pymc_compile(inputs, outputs, **kwargs)
