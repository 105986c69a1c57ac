"""Plots of evidence estimates: work distributions and model comparison.

Part of :mod:`pymc_evidence.plots` (see there for the conventions shared by every plot).
The running estimate of log Z is in :mod:`pymc_evidence.plots.running`.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import xarray as xr

from ..compat import group_names
from ..estimators.record import EvidenceEstimate
from ..results import log_evidence
from ._common import PARTICLE_METHODS, _new_axes, _results

__all__ = ["plot_compare", "plot_work_overlap"]


def plot_work_overlap(idata, *, bins: int = 30, bin_range=None, ax=None):
    """Forward and reverse work distributions of AIS / reverse AIS / BAR, and their overlap.

    Both are drawn in log-Z units: the forward log weights ``-W_f`` (``E[exp(-W_f)] = Z``)
    and the reverse works ``W_r`` (``E[exp(-W_r)] = 1/Z``), the mirror image of the usual
    ``W_f`` / ``-W_r`` picture. By Crooks' theorem their densities cross at ``log Z``;
    ``mean(-W_f) <= log Z <= mean(W_r)`` (Jensen), and the gap is the hysteresis. BAR is
    reliable only where the histograms overlap (hatched).

    Parameters
    ----------
    idata : InferenceData or DataTree
        Results of ``pme.sample_evidence(method="ais" | "rais" | "bar")``.
    bins : int, default 30
        Number of shared histogram bins.
    bin_range : (float, float), optional
        Range of the bins, to zoom on the overlap when a few runs have extreme works;
        default: all works.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes

    Examples
    --------
    >>> ax = pme.plot_work_overlap(idata_bar)  # doctest: +SKIP
    """
    ds, method = _results(idata, PARTICLE_METHODS, "plot_work_overlap")
    series = {}
    if "work_forward" in ds:
        series[r"forward: $-W_f$"] = -ds["work_forward"].values
    if "work_reverse" in ds:
        series[r"reverse: $W_r$"] = ds["work_reverse"].values
    edges = np.histogram_bin_edges(
        np.concatenate(list(series.values())), bins=int(bins), range=bin_range
    )
    ax = _new_axes(ax)
    heights = []
    for i, (label, values) in enumerate(series.items()):
        h, _ = np.histogram(values, bins=edges, density=True)
        heights.append(h)
        ax.stairs(h, edges, fill=True, alpha=0.35, color=f"C{i}")
        ax.stairs(h, edges, color=f"C{i}", lw=1.5, label=f"{label} (mean {values.mean():.3g})")
    if len(heights) == 2:
        hatch = {"fill": True, "hatch": "//", "facecolor": "none", "edgecolor": "black", "lw": 0}
        ax.stairs(np.minimum(*heights), edges, label="overlap", **hatch)
    log_z = float(ds["log_marginal_likelihood"])
    ax.axvline(log_z, color="black", lw=1.5, label=f"log Z = {log_z:.3f} ({method})")
    title = f"work distributions ({method})"
    if "diag_overlap" in ds:
        title += f", BAR overlap = {float(ds['diag_overlap']):.2f}"
    ax.set(xlabel="log weight (nats)", ylabel="density", title=title)
    ax.legend(fontsize="small")
    return ax


def _is_results(obj) -> bool:
    """True for anything :func:`~pymc_evidence.log_evidence` reads (not a dict of them)."""
    if isinstance(obj, EvidenceEstimate | xr.Dataset):
        return True
    try:
        group_names(obj)
    except TypeError:
        return not isinstance(obj, Mapping)  # let log_evidence raise its own error
    return True


def _compare_rows(results) -> list[tuple[str, str, float, float]]:
    """``(model, label, log_z, se)`` from a compare table, a flat or a nested mapping."""
    if hasattr(results, "columns") and hasattr(results, "index"):
        missing = {"log_z", "se"} - set(results.columns)
        if missing:
            raise ValueError(f"the table needs columns 'log_z' and 'se'; missing {missing}")
        labels = results["method"] if "method" in results.columns else [""] * len(results)
        return [
            (str(m), str(lab), float(z), float(s))
            for m, lab, z, s in zip(
                results.index, labels, results["log_z"], results["se"], strict=True
            )
        ]
    if not isinstance(results, Mapping):
        raise TypeError(
            "results must be a dict of name to results, a dict of dicts, or the "
            f"DataFrame of pme.compare; got {type(results).__name__}"
        )
    rows = []
    for model, value in results.items():
        inner = {None: value} if _is_results(value) else value
        for label, obj in inner.items():
            est = log_evidence(obj)
            rows.append(
                (str(model), est.method if label is None else str(label), est.log_z, est.se)
            )
    return rows


def plot_compare(results, *, reference=None, k: float = 2.0, ax=None):
    """log Z ``± k se`` of several models and methods, with exact values when known.

    Parameters
    ----------
    results : dict, dict of dicts, or pandas.DataFrame
        ``{model: idata}`` (one row per model, coloured by method), ``{model: {label:
        idata}}`` (e.g. several methods per model, side by side), or the table returned by
        :func:`pymc_evidence.compare`. Values may be InferenceData, DataTree, the
        ``log_evidence`` group or an :class:`~pymc_evidence.EvidenceEstimate`.
    reference : dict, optional
        ``{model: exact log Z}``, drawn as black diamonds.
    k : float, default 2.0
        Half-width of the error bars in standard errors.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes

    Raises
    ------
    ValueError
        If ``results`` is empty or ``reference`` names an unknown model.

    Examples
    --------
    >>> from pymc_evidence import EvidenceEstimate
    >>> from pymc_evidence.plots import plot_compare
    >>> ax = plot_compare({"a": {"ct": EvidenceEstimate(-3.0, 0.02, "ct"),
    ...                          "st": EvidenceEstimate(-3.05, 0.03, "st")},
    ...                    "b": {"ct": EvidenceEstimate(-4.1, 0.05, "ct")}},
    ...                   reference={"a": -3.01, "b": -4.0})
    >>> len(ax.get_yticks())
    2
    """
    rows = _compare_rows(results)
    if not rows:
        raise ValueError("results is empty; pass at least one model")
    models = list(dict.fromkeys(row[0] for row in rows))
    labels = list(dict.fromkeys(row[1] for row in rows))
    reference = {str(name): float(value) for name, value in (reference or {}).items()}
    unknown = sorted(set(reference) - set(models))
    if unknown:
        raise ValueError(f"reference names unknown models {unknown}; models: {models}")
    ax = _new_axes(ax)
    for i, (model, label, log_z, se) in enumerate(rows):
        mates = [row[1] for row in rows if row[0] == model]  # side by side within a model
        y = models.index(model) + (
            0.0 if len(mates) < 2 else np.linspace(-0.25, 0.25, len(mates))[mates.index(label)]
        )
        first = all(row[1] != label for row in rows[:i])
        color, text = f"C{labels.index(label) % 10}", label if first and label else None
        ax.errorbar(log_z, y, xerr=k * se, fmt="o", capsize=3, color=color, label=text)
    marker = {"marker": "D", "ls": "none", "mfc": "none", "mec": "black", "ms": 8}
    for j, (model, value) in enumerate(reference.items()):
        ax.plot(value, models.index(model), label=None if j else "exact", **marker)
    ax.set_yticks(np.arange(len(models)), models)
    ax.set_ylim(len(models) - 0.5, -0.5)
    ax.set(xlabel=f"log Z (± {k:g} se)", title="model evidence")
    if reference or labels != [""]:
        ax.legend(fontsize="small")
    return ax
