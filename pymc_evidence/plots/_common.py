"""Shared helpers of the plots: matplotlib import, axes, and reading the stored results."""

from __future__ import annotations

import numpy as np

from ..compat import get_group, group_names
from ..methods import (
    ANNEALING,
    CONTINUOUS_TEMPERING,
    REGISTRY,
    SIMULATED_TEMPERING,
    SMC_RUNS,
    methods_in,
)
from ..results import GROUP

# The methods whose results each plot reads, by family (the registry's MethodSpec.family)
CT_METHODS = methods_in(CONTINUOUS_TEMPERING)
TEMPERING_METHODS = methods_in(CONTINUOUS_TEMPERING, SIMULATED_TEMPERING)
PARTICLE_METHODS = methods_in(ANNEALING)
SMC_METHODS = methods_in(SMC_RUNS)
#: What :func:`checked_results` calls the combined result of ``method=[...]`` (a cross-check).
CROSS_CHECK = "cross-check"


def family(method: str) -> str:
    """The family of a registered ``method`` (:attr:`~pymc_evidence.methods.MethodSpec.family`);
    :data:`CROSS_CHECK` for a cross-check.

    >>> family("rais") == ANNEALING
    True
    """
    return CROSS_CHECK if method == CROSS_CHECK else REGISTRY[method].family


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as err:
        raise ImportError(
            "pymc_evidence plots need matplotlib, an optional dependency: "
            "`pip install matplotlib` (or `pip install pymc-evidence[test]`)"
        ) from err
    return plt


def new_axes(ax, n: int = 1, figsize=(6.0, 4.0), width_ratios=None):
    """``ax`` checked (a sequence of ``n`` Axes when ``n > 1``), or a new figure's axes."""
    if ax is None:
        _, ax = _pyplot().subplots(
            1, n, figsize=figsize, squeeze=False, layout="constrained", width_ratios=width_ratios
        )
        return ax[0] if n > 1 else ax[0, 0]
    if n > 1:
        ax = np.asarray(ax, dtype=object).ravel()
        if ax.size != n:
            raise ValueError(f"axes must hold {n} matplotlib Axes, got {ax.size}")
    return ax


def checked_results(idata, allowed: tuple[str, ...], plot: str):
    """``(log_evidence group, method)``; ``ValueError`` unless the method is in ``allowed``.

    The combined result of several methods (it has a ``methods`` attribute) is the method
    :data:`CROSS_CHECK`.
    """
    try:
        names = group_names(idata)
    except TypeError as err:
        raise TypeError(
            f"{plot} needs the results returned by pme.sample_evidence (InferenceData or "
            f"DataTree), got {type(idata).__name__}"
        ) from err
    if GROUP not in names:
        raise ValueError(f"{plot}: these results have no {GROUP!r} group (groups: {names})")
    ds = get_group(idata, GROUP)
    method = CROSS_CHECK if "methods" in ds.attrs else str(ds.attrs.get("method", ""))
    if method not in allowed:
        raise ValueError(f"{plot} handles results of methods {allowed}, not {method!r}")
    return ds, method


def stats_variable(idata, name: str, groups=("extended_posterior", "sample_stats")) -> np.ndarray:
    for group in groups:
        if group in group_names(idata) and name in get_group(idata, group):
            return np.asarray(get_group(idata, group)[name].values)
    raise ValueError(f"the results hold no {name!r} in any of the groups {groups}")


def plain_ticks(*axes) -> None:
    """Plain tick labels on these axes (``ax.xaxis``, ``ax.yaxis``): no offset, no powers.

    Without it a log Z axis spanning -69.81 to -69.80 reads ``-6.98e1`` with ticks of
    ``-0.0075``.
    """
    from matplotlib.ticker import ScalarFormatter  # loaded already: the axes exist

    for axis in axes:
        formatter = ScalarFormatter(useOffset=False)
        formatter.set_scientific(False)
        axis.set_major_formatter(formatter)
