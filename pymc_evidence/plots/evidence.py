"""Plots of evidence estimates: work distributions and model comparison.

Part of :mod:`pymc_evidence.plots` (see there for the conventions shared by every plot).
The running estimate of log Z is in :mod:`pymc_evidence.plots.running`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import numpy as np
import xarray as xr

from ..api.readers import log_evidence
from ..compare import compare
from ..compat import group_names
from ..estimators.diagnostics import CrossCheckWarning, warn_user
from ..estimators.record import EvidenceEstimate
from ._common import PARTICLE_METHODS, checked_results, new_axes, plain_ticks

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
    ds, method = checked_results(idata, PARTICLE_METHODS, "plot_work_overlap")
    series = {}
    if "work_forward" in ds:
        series[r"forward: $-W_f$"] = -ds["work_forward"].values
    if "work_reverse" in ds:
        series[r"reverse: $W_r$"] = ds["work_reverse"].values
    edges = np.histogram_bin_edges(
        np.concatenate(list(series.values())), bins=int(bins), range=bin_range
    )
    ax = new_axes(ax)
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
    plain_ticks(ax.xaxis)
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
            for method, (value, se) in est.per_method.items():  # a cross-check's parts
                rows.append((str(model), method, value, se))
    return rows


def _first_estimates(rows, prior_probs, quiet: bool):
    """:func:`pymc_evidence.compare` of each model's first estimate (a DataFrame, best first).

    ``quiet`` silences its warning of mixed methods (a table made by ``pme.compare`` gave
    it already).
    """
    firsts = {}
    for model, label, log_z, se in rows:
        firsts.setdefault(model, EvidenceEstimate(log_z, se, label))
    if isinstance(prior_probs, Mapping):
        prior_probs = {str(name): value for name, value in prior_probs.items()}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = compare(firsts, prior_probs)
    for caught_warning in caught:  # as if plot_compare had warned: point at its caller
        if not (quiet and issubclass(caught_warning.category, CrossCheckWarning)):
            warn_user(caught_warning.message, caught_warning.category)
    return table


def _differences(rows, table) -> tuple[np.ndarray, np.ndarray]:
    """``log Z - log Z_best`` of every row and its se, as in :func:`pymc_evidence.compare`.

    The best model's first estimate has its own se; every other model's first estimate has
    the table's ``log_z_minus_best_se``; further estimates ``sqrt(se**2 + se_best**2)`` alike.
    """
    best = table.index[0]
    shift, best_se = float(table.at[best, "log_z"]), float(table.at[best, "se"])
    seen, x, err = set(), [], []
    for model, _, log_z, se in rows:
        if model in seen:
            err.append(float(np.hypot(se, best_se)))
        else:
            err.append(float(table.at[model, "se" if model == best else "log_z_minus_best_se"]))
        seen.add(model)
        x.append(log_z - shift)
    return np.array(x), np.array(err)


def _rows_y(rows, models) -> np.ndarray:
    """The y of every row: its model's place (best 0, on top), several estimates side by side."""
    ys = []
    for model, label, *_ in rows:
        mates = [row[1] for row in rows if row[0] == model]
        offset = np.linspace(-0.22, 0.22, len(mates))[mates.index(label)] if len(mates) > 1 else 0
        ys.append(models.index(model) + offset)
    return np.array(ys, dtype=float)


def _pm(value: float, se: float, sign: str = "+") -> str:
    """``value ± se`` to the se's first digit (its first two if they are below 30), at most
    three decimals (a smaller se reads ``± <0.001``)."""
    if not (np.isfinite(se) and se > 0):
        return f"{value:{sign}.3f} ± {se:.3f}"
    if se < 5e-4:
        return f"{value:{sign}.3f} ± <0.001"
    power = int(np.floor(np.log10(se)))
    digits = int(np.clip(-power + (se < 3 * 10.0**power), 2, 3))
    return f"{value:{sign}.{digits}f} ± {se:.{digits}f}"


def _annotations(table, show_prior: bool) -> list[str]:
    """One line per model: log Bayes factor against the best and posterior probability."""
    texts = []
    for i, row in enumerate(table.itertuples()):
        bf = "0 (best)" if i == 0 else _pm(row.log_z_minus_best, row.log_z_minus_best_se)
        p, p_se = row.post_prob, row.post_prob_se
        prob = _pm(p, p_se, "") if p >= 1e-3 or not p_se < 1e-3 else f"{p:.1e} ± {p_se:.0e}"
        text = f"log BF {bf:<16} P(M|y) {prob}"
        texts.append(text + (f" (prior {row.prior_prob:.2g})" if show_prior else ""))
    return texts


def _compare_axes(ax, zoom, n_rows: int):
    """``(main, zoom or None)``: the given Axes (one, or two with a zoom panel) or new ones."""
    if ax is not None:
        axes = np.ravel(np.asarray(ax, dtype=object))
        if axes.size not in (1, 2):
            raise ValueError(f"ax must be one Axes or two (main, zoom); got {axes.size}")
        return axes[0], (axes[1] if axes.size == 2 else None)
    size = (10.5 if zoom else 8.5, 1.5 + 0.5 * n_rows)
    axes = new_axes(None, 2 if zoom else 1, size, width_ratios=[3, 1.3] if zoom else None)
    return (axes[0], axes[1]) if zoom else (axes, None)


def _bars_hidden(x, err, k: float, diamonds) -> bool:
    """Whether some ``± k se`` bar is below 1.5 % of the span of the main panel."""
    span = np.ptp(np.concatenate([x - k * err, x + k * err, diamonds]))
    return bool(span > 0 and np.any(k * err < 0.015 * span))


def _draw_rows(ax, x, ys, err, colors, labels) -> None:
    """One ``x ± err`` error bar per row, a legend entry per label (method) the first time."""
    for i, (xi, yi, ei, color) in enumerate(zip(x, ys, err, colors, strict=True)):
        first = labels[i] and labels[i] not in labels[:i]
        ax.errorbar(
            xi,
            yi,
            xerr=ei,
            fmt="o",
            ms=5,
            capsize=3,
            lw=1.5,
            color=color,
            label=labels[i] if first else None,
        )


def _draw_reference(ax, xs, ys, lim=None) -> None:
    """The exact values as diamonds; beyond ``± lim`` as a triangle on the edge."""
    marker = {"ls": "none", "mfc": "none", "mec": "black", "ms": 8}
    for j, (x, y) in enumerate(zip(xs, ys, strict=True)):
        if lim is not None and abs(x) > lim:
            x, marker["marker"] = np.sign(x) * 0.96 * lim, ">" if x > 0 else "<"
        else:
            marker["marker"] = "D"
        ax.plot(x, y, label=None if j else "exact", clip_on=False, **marker)


def _draw_zoom(zoom, x, ys, err, rows, colors, ref) -> None:
    """The main panel's rows magnified: each shifted so that its model's first estimate is at
    0, on a scale where the bars show. Exact values within six such half-widths widen the
    scale; others sit on the edge as triangles.
    """
    models = [row[0] for row in rows]
    centre = {model: x[models.index(model)] for model in dict.fromkeys(models)}
    x = x - np.array([centre[model] for model in models])
    ref_x = np.array([value - centre[model] for model, value, _ in ref])
    lim = max(float(np.nanmax(np.abs(x) + err)), 1e-6)
    near = np.abs(ref_x)[np.abs(ref_x) <= 6 * lim]
    lim = 1.25 * max([lim, *near])
    zoom.axvline(0.0, color="0.6", lw=1, ls="--", zorder=0)
    _draw_rows(zoom, x, ys, err, colors, [""] * len(rows))
    _draw_reference(zoom, ref_x, [y for *_, y in ref], lim)
    from matplotlib.ticker import MaxNLocator  # loaded already: the axes exist

    zoom.set_xlim(-lim, lim)
    zoom.xaxis.set_major_locator(MaxNLocator(nbins=2, symmetric=True))  # labels apart
    if len(centre) == len(models):  # one estimate a model: the panel shows their error bars
        zoom.set(xlabel="log Z minus the model's estimate", title="each model's error bar")
    else:
        zoom.set(xlabel="offset from the model's first estimate", title="estimates of a model")


def plot_compare(results, *, reference=None, k: float = 2.0, prior_probs=None, zoom=None, ax=None):
    """Models best first: log Z relative to the best, Bayes factors, model probabilities.

    Read like ArviZ's ``plot_compare``: one row per model, the best on top; the x axis is
    ``log Z - log Z_best`` (the best at 0, the others negative) with ``± k se`` bars, the se
    of the difference ``sqrt(se**2 + se_best**2)`` (the best model: its own se). On the
    right of each row: the log Bayes factor against the best and the posterior model
    probability, each ``± se``, as :func:`pymc_evidence.compare` gives them for each
    model's first estimate. Where the bars would be too narrow to see (the usual case: se
    of a few hundredths against differences of several nats), a zoom panel on the right
    magnifies every row: the same points, bars and exact values, shifted so that the
    model's first estimate sits at 0 (an exact value far off the zoomed scale becomes a
    triangle on its edge).

    Parameters
    ----------
    results : dict, dict of dicts, or pandas.DataFrame
        ``{model: idata}`` (one row per model, coloured by method), ``{model: {label:
        idata}}`` (e.g. several methods per model, side by side; the first label of each
        model gives its place, Bayes factor and probability), or the table returned by
        :func:`pymc_evidence.compare`. Values may be InferenceData, DataTree, the
        ``log_evidence`` group or an :class:`~pymc_evidence.EvidenceEstimate`.
    reference : dict, optional
        ``{model: exact log Z}``, drawn as black diamonds (less the same best log Z).
    k : float, default 2.0
        Half-width of the error bars in standard errors.
    prior_probs : dict or sequence of float, optional
        Prior model probabilities, as in :func:`pymc_evidence.compare`. Default: those of
        a table's ``prior_prob`` column, else equal.
    zoom : bool, optional
        Draw the zoom panel on a new figure; default: when some bar would be narrower than
        1.5 % of the x axis.
    ax : matplotlib Axes, or two of them, optional
        The main panel, or ``(main, zoom)``: the zoom panel is drawn if and only if two
        are given. The annotations are tick labels on the right of the last one.

    Returns
    -------
    matplotlib Axes
        The main panel (the zoom panel, when drawn, is the figure's next Axes).

    Raises
    ------
    ValueError
        If ``results`` is empty, ``reference`` names an unknown model, or ``prior_probs``
        is invalid.

    Warns
    -----
    CrossCheckWarning
        If the models' first estimates come from different methods (as
        :func:`pymc_evidence.compare`; not again for its table).

    Examples
    --------
    >>> from pymc_evidence import EvidenceEstimate
    >>> from pymc_evidence.plots import plot_compare
    >>> ax = plot_compare({"a": {"ct": EvidenceEstimate(-4.1, 0.02, "ct"),
    ...                          "st": EvidenceEstimate(-4.05, 0.03, "st")},
    ...                    "b": {"ct": EvidenceEstimate(-3.0, 0.05, "ct")}},
    ...                   reference={"a": -4.11, "b": -3.01})
    >>> [label.get_text() for label in ax.get_yticklabels()]  # best first
    ['b', 'a']
    >>> right = ax.child_axes[0]  # the labels on the right (bars wide enough: no zoom panel)
    >>> for label in right.get_yticklabels():
    ...     print(label.get_text())
    log BF 0 (best)         P(M|y) 0.750 ± 0.010
    log BF -1.10 ± 0.05     P(M|y) 0.250 ± 0.010
    """
    rows = _compare_rows(results)
    if not rows:
        raise ValueError("results is empty; pass at least one model")
    is_table = hasattr(results, "columns")
    if prior_probs is None and is_table and "prior_prob" in results.columns:
        prior_probs = [float(p) for p in results["prior_prob"]]
    table = _first_estimates(rows, prior_probs, quiet=is_table)
    models, labels = list(table.index), [row[1] for row in rows]
    reference = {str(name): float(value) for name, value in (reference or {}).items()}
    unknown = sorted(set(reference) - set(models))
    if unknown:
        raise ValueError(f"reference names unknown models {unknown}; models: {models}")
    shift = float(table["log_z"].iloc[0])
    ref = [(model, value - shift, models.index(model)) for model, value in reference.items()]
    ref_x = np.array([value for _, value, _ in ref])
    x, err = _differences(rows, table)
    if zoom is None:
        zoom = _bars_hidden(x, err, k, ref_x)
    ax, zoom_ax = _compare_axes(ax, zoom, len(models) + 0.3 * (len(rows) - len(models)))
    colors = [f"C{list(dict.fromkeys(labels)).index(label) % 10}" for label in labels]
    ys = _rows_y(rows, models)
    ax.axvline(0.0, color="0.6", lw=1, ls="--", zorder=0)
    _draw_rows(ax, x, ys, k * err, colors, labels)
    _draw_reference(ax, ref_x, [y for *_, y in ref])
    if zoom_ax is not None:
        _draw_zoom(zoom_ax, x, ys, k * err, rows, colors, ref)
    for panel in (ax, zoom_ax) if zoom_ax is not None else (ax,):
        panel.set_yticks(np.arange(len(models)), models if panel is ax else [])
        panel.set_ylim(len(models) - 0.5, -0.5)
        plain_ticks(panel.xaxis)
    uniform = np.allclose(table["prior_prob"], 1.0 / len(models))
    right = (zoom_ax if zoom_ax is not None else ax).secondary_yaxis("right")
    right.set_yticks(
        np.arange(len(models)),
        _annotations(table, not uniform),
        family="monospace",
        fontsize="small",
    )
    right.tick_params(length=0)
    ax.set(xlabel=f"log Z − log Z of the best (± {k:g} se)", title="model evidence, best first")
    if reference or set(labels) != {""}:
        ax.legend(fontsize="small", loc="best")
    return ax
