"""Plots of tempering runs: the inverse temperature β and the simulated-tempering levels.

Part of :mod:`pymc_evidence.plots` (see there for the conventions shared by every plot).
"""

from __future__ import annotations

import numpy as np

from ..methods import SIMULATED_TEMPERING, methods_in
from ._common import (
    CT_METHODS,
    TEMPERING_METHODS,
    checked_results,
    family,
    new_axes,
    stats_variable,
)

__all__ = ["plot_beta_trace", "plot_st_levels"]


def _beta_draws(idata, ds, method):
    """β per (chain, draw) and histogram bin edges suited to the method."""
    if method in CT_METHODS:
        return stats_variable(idata, "ct_beta"), None
    ladder = ds["beta"].values
    beta = ladder[stats_variable(idata, "st_level").astype(int)]
    mid = 0.5 * (ladder[1:] + ladder[:-1])
    return beta, np.concatenate([[0.0], mid, [1.0]])


def plot_beta_trace(idata, *, bins: int = 20, axes=None):
    """Histogram and trace of the inverse temperature β of a tempering run.

    For continuous tempering (``"ct"``, ``"gibbs_ct"``) the histogram of the β draws of each
    chain is overlaid with the Rao-Blackwellized density stored in the ``log_evidence`` group;
    a good run covers ``[0, 1]`` and its traces cross the interval many times. For simulated
    tempering (``"st"``) β moves on the ladder: the histogram shows the fraction of draws
    at each level (one bin per level).

    Parameters
    ----------
    idata : InferenceData or DataTree
        Results of ``pme.sample_evidence(method="ct" | "gibbs_ct" | "st")``.
    bins : int, default 20
        Number of histogram bins on ``[0, 1]`` (CT only).
    axes : sequence of 2 matplotlib Axes, optional
        Histogram and trace panels; a new ``1 x 2`` figure when omitted.

    Returns
    -------
    numpy.ndarray of matplotlib Axes, shape (2,)

    Examples
    --------
    >>> hist_ax, trace_ax = pme.plot_beta_trace(idata)  # doctest: +SKIP
    """
    ds, method = checked_results(idata, TEMPERING_METHODS, "plot_beta_trace")
    beta, edges = _beta_draws(idata, ds, method)
    levels = family(method) == SIMULATED_TEMPERING  # beta moves on a ladder
    hist_ax, trace_ax = new_axes(axes, 2, figsize=(10.0, 3.5))
    edges = np.linspace(0.0, 1.0, int(bins) + 1) if edges is None else edges
    style = {"lw": 0.8, "alpha": 0.8, "drawstyle": "steps-post" if levels else "default"}
    for c in range(beta.shape[0]):
        kwargs = {"color": f"C{c % 10}"}
        # ST: fraction of draws per level (a density over the uneven level bins would spike
        # wherever the ladder is dense, e.g. near beta = 0 with a prior base)
        scale = (
            {"density": True}
            if not levels
            else {"weights": np.full(beta[c].size, 1.0 / beta[c].size)}
        )
        hist_ax.hist(beta[c], edges, histtype="step", label=f"chain {c}", **scale, **kwargs)
        trace_ax.plot(beta[c], **style, **kwargs)
    if "beta_density" in ds:
        mass = ds["beta_density"].values  # probability of each of equal bins on [0, 1]
        rb_edges = np.linspace(0.0, 1.0, mass.size + 1)
        hist_ax.stairs(mass * mass.size, rb_edges, color="black", lw=1.5, label="Rao-Blackwellized")
    ylabel = "fraction of draws per level" if levels else "density"
    hist_ax.set(
        xlabel=r"$\beta$", ylabel=ylabel, xlim=(0.0, 1.0), title=rf"$\beta$ histogram ({method})"
    )
    trace_ax.set(
        xlabel="draw", ylabel=r"$\beta$", ylim=(-0.02, 1.02), title=rf"$\beta$ trace ({method})"
    )
    hist_ax.legend(fontsize="small")
    return np.array([hist_ax, trace_ax], dtype=object)


def plot_st_levels(idata, *, ax=None):
    """Occupancy of the simulated-tempering levels against its target.

    Bars: the Rao-Blackwellized occupancies ``ĉ_k`` (mean over draws of ``q(k | x)``);
    points: the fraction of draws at each level; line: the target ``r_k``. Adapted weights
    give ``ĉ_k ≈ r_k`` everywhere; a level far below its target is barely visited.

    Parameters
    ----------
    idata : InferenceData or DataTree
        Results of ``pme.sample_evidence(method="st")``.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes

    Examples
    --------
    >>> ax = pme.plot_st_levels(idata_st)  # doctest: +SKIP
    """
    ds, _ = checked_results(idata, methods_in(SIMULATED_TEMPERING), "plot_st_levels")
    c_hat, r = ds["c_hat"].values, ds["r"].values
    levels = np.arange(c_hat.size)
    ax = new_axes(ax)
    ax.bar(levels, c_hat, color="C0", alpha=0.6, label=r"$\hat c_k$ (Rao-Blackwellized)")
    if "occupancy" in ds:
        ax.plot(levels, ds["occupancy"].values, "o", color="C1", ms=4, label="visits")
    ax.step(levels, r, where="mid", color="black", ls="--", label=r"target $r_k$")
    ax.set(
        xlabel=r"level $k$ ($\beta$ from 0 to 1)",
        ylabel="occupancy",
        title=rf"ST levels: max $|\hat c_k - r_k|$ = {np.max(np.abs(c_hat - r)):.3g}",
    )
    ax.set_ylim(bottom=0.0)
    ax.legend(fontsize="small")
    return ax
