"""The running estimate of log Z, for the results of every method.

Part of :mod:`pymc_evidence.plots` (see there for the conventions shared by every plot).
Each method is shown along its natural axis:

* ``"ct"``, ``"gibbs_ct"``, ``"st"``: the estimate on growing prefixes of the draws of every
  chain; ``"ais"``, ``"rais"``, ``"bar"``: on growing numbers of particles; ``"lis"``: on
  growing numbers of LIS runs. Recomputed from the stored raw quantities (CT ``delta``, ST
  level conditionals, works, per-run LIS ratios) with the estimator that produced the final
  value, so the last point is the stored ``log Z``.
* ``"smc"``, ``"arm"``: every run's cumulative ``log Z_beta`` (the sum of its stored stage
  increments) against the inverse temperature, one marker per annealing stage; each trace
  ends at that run's estimate.
* ``"bridge"``: the iterates of the Meng-Wong fixed point of every repetition (stored as
  ``log_z_iterates``); the last one is the repetition's estimate.
* a cross-check (``method=[...]``): one point per method with its error bar.

Each plot marks the final (pooled) estimate and its ``± k se`` band. Where SMC/ARM traces
or bridge iterates range far wider, the main panel zooms on the final estimate and an
inset shows the full range.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..estimators.ct import ct_log_evidence
from ..estimators.diagnostics import EvidenceWarning
from ..estimators.lis import bridged_log_evidence, lis_log_evidence, reverse_lis_log_evidence
from ..estimators.noneq import works_log_evidence
from ..estimators.pooling import pool_chain_estimates
from ..estimators.rts import rts_log_evidence
from ..methods import (
    ANNEALING,
    BRIDGE_SAMPLING,
    CONTINUOUS_TEMPERING,
    LINKED_RUNS,
    REGISTRY,
    SIMULATED_TEMPERING,
    SMC_RUNS,
    methods_in,
)
from ..results.schema import CHAIN_LOG_Z, CHAIN_LOG_Z_SE, LOG_Z, LOG_Z_SE
from ._common import (
    CROSS_CHECK,
    checked_results,
    family,
    new_axes,
    plain_ticks,
    stats_variable,
)

__all__ = ["plot_running_log_z"]


def _prefixes(n: int, n_points: int, smallest: int) -> np.ndarray:
    start = min(n, max(smallest, n // n_points))
    return np.unique(np.linspace(start, n, n_points).round().astype(int))


def _running_ct(idata, ds, method, n_points):
    delta = stats_variable(idata, "ct_delta")
    log_zeta = float(ds.attrs["log_zeta"])
    sizes = _prefixes(delta.shape[1], n_points, 10)
    ests = [ct_log_evidence(delta[:, :n], log_zeta, method=method) for n in sizes]
    return sizes, ests, "draws per chain"


def _running_st(idata, ds, method, n_points):
    log_cond = stats_variable(idata, "st_log_q", ("extended_posterior",))
    betas, tops = ds["beta"].values, ds["log_zhat_top"].values
    log_zhat = np.zeros((tops.size, betas.size))
    log_zhat[:, -1] = tops  # as in api/st.py: reproduces each chain's frozen weights
    sizes = _prefixes(log_cond.shape[1], n_points, 10)
    ests = []
    for n in sizes:
        chains = [
            rts_log_evidence(log_cond[c : c + 1, :n], betas, log_zhat[c]) for c in range(tops.size)
        ]
        ests.append(pool_chain_estimates(chains, method=method))
    return sizes, ests, "draws per chain"


def _stored(ds, names, method):
    """The stored arrays ``names`` (``None`` for those absent); ``ValueError`` if none is."""
    arrays = [ds[name].values if name in ds else None for name in names]
    if all(a is None for a in arrays):
        raise ValueError(
            f"plot_running_log_z: these {method!r} results hold none of {names}, the raw "
            "values the running estimate is recomputed from"
        )
    return arrays


def _running_particles(idata, ds, method, n_points):
    # every run stores the forward works (they tune the kernels): the method's spec says
    # which enter its estimate
    works = _stored(ds, ("work_forward", "work_reverse"), method)
    uses = REGISTRY[method].works
    used = [w if d in uses else None for d, w in zip(("forward", "reverse"), works, strict=True)]
    sizes = _prefixes(ds.sizes["particle"], n_points, 4)
    ests = [works_log_evidence(*(None if w is None else w[:n] for w in used)) for n in sizes]
    return sizes, ests, "particles (independent runs)"


def _lis_estimate(log_r_f, log_r_r, method):
    """As ``methods/lis.py``: forward, reverse or bridged, by which runs are there."""
    if log_r_r is None:
        return lis_log_evidence(log_r_f, method=method)
    if log_r_f is None:
        return reverse_lis_log_evidence(log_r_r, method=method)
    return bridged_log_evidence(log_r_f, log_r_r, method=method)


def _running_lis(idata, ds, method, n_points):
    log_r = _stored(ds, ("log_r_forward", "log_r_reverse"), method)
    sizes = _prefixes(ds.sizes["particle"], n_points, 4)
    ests = [_lis_estimate(*(None if r is None else r[:n] for r in log_r), method) for n in sizes]
    return sizes, ests, "LIS runs (per direction)"


def _draw_running(ax, idata, ds, method, n_points, k):
    """The running estimate on growing samples, with its own ``± k se`` band."""
    sizes, ests, xlabel = _RUNNING[family(method)](idata, ds, method, n_points)
    log_z = np.array([e.log_z for e in ests])
    se = np.array([e.se for e in ests])
    ax.fill_between(
        sizes, log_z - k * se, log_z + k * se, color="C0", alpha=0.3, label=f"± {k:g} se"
    )
    ax.plot(sizes, log_z, color="C0", marker=".", label="running estimate")
    return xlabel


def _final_band(ax, ds, k):
    """The pooled estimate's ``± k se`` band, for plots whose lines carry no band."""
    log_z, se = float(ds[LOG_Z]), float(ds[LOG_Z_SE])
    ax.axhspan(log_z - k * se, log_z + k * se, color="C0", alpha=0.2, lw=0, label=f"± {k:g} se")


def _traces(ax, xs, ys, what: str, marker: str) -> None:
    """One line per run (rows of ``xs``/``ys``, NaN-padded); a legend entry each for a few."""
    n = len(ys)
    for r in range(n):
        keep = np.isfinite(xs[r]) & np.isfinite(ys[r])
        label = f"{what} {r}" if n <= 6 else (f"{what}s (one line each)" if r == 0 else None)
        ax.plot(xs[r][keep], ys[r][keep], color=f"C{r % 9 + 1}", marker=marker, label=label)


def _draw_smc(ax, idata, ds, method, n_points, k):
    """Cumulative ``log Z_beta`` of every SMC/ARM run against beta, one marker per stage."""
    beta, increment = _stored(ds, ("beta", "log_increment"), method)
    if beta is None or increment is None:
        raise ValueError(
            f"plot_running_log_z: these {method!r} results lack 'beta' or 'log_increment'"
        )
    beta, increment = np.atleast_2d(beta), np.atleast_2d(increment)
    log_z = np.where(np.isfinite(beta), np.nancumsum(increment, axis=1), np.nan)
    _final_band(ax, ds, k)
    _traces(ax, beta, log_z, "run", ".")
    stages = int(np.max(np.sum(np.isfinite(beta), axis=1))) - 1
    if stages <= 2:  # the path is a step or two: what there is to read is the runs' ends
        ax.text(0.5, 0.97, f"{stages} stage(s): the base was close to the posterior;\n"
                "read the runs' ends at $\\beta = 1$ against the band",
                transform=ax.transAxes, fontsize="small", ha="center", va="top")  # fmt: skip
    return r"inverse temperature $\beta$ (one marker per stage)"


def _draw_bridge(ax, idata, ds, method, n_points, k):
    """The Meng-Wong iterates of every repetition (iteration 0 is the start)."""
    if "log_z_iterates" not in ds:
        return _draw_points(ax, idata, ds, method, n_points, k)  # written before they were kept
    from matplotlib.ticker import MaxNLocator  # loaded already: the axes exist

    iterates = np.atleast_2d(ds["log_z_iterates"].values)
    steps = np.broadcast_to(np.arange(iterates.shape[1], dtype=float), iterates.shape)
    _final_band(ax, ds, k)
    _traces(ax, steps, iterates, "repetition", "o")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    return "Meng-Wong fixed-point iteration (0 = start)"


def _point_labels(ds, method, n: int) -> list[str]:
    if method == CROSS_CHECK:
        names = str(ds.attrs["methods"]).split(",")
        if len(names) == n:
            return names
    dim = ds[CHAIN_LOG_Z].dims[0]
    return [f"{dim} {i}" for i in range(n)]


def _draw_points(ax, idata, ds, method, n_points, k):
    """One point per method (cross-check), or per chain/run, with ``± k se`` error bars."""
    log_z = ds[CHAIN_LOG_Z].values
    se = ds[CHAIN_LOG_Z_SE].values if CHAIN_LOG_Z_SE in ds else np.full(log_z.size, np.nan)
    if log_z.size == 0:
        raise ValueError(
            f"plot_running_log_z: these {method!r} results hold neither the values it draws "
            "along the method's own axis nor per-chain estimates"
        )
    labels = _point_labels(ds, method, log_z.size)
    _final_band(ax, ds, k)
    for i, (z, s) in enumerate(zip(log_z, se, strict=True)):
        ax.errorbar(i, z, yerr=k * s, fmt="o", capsize=4, color=f"C{i % 9 + 1}", label=labels[i])
    ax.set_xticks(np.arange(log_z.size), labels)
    ax.set_xlim(-0.5, log_z.size - 0.5)
    return "method" if method == CROSS_CHECK else ds[CHAIN_LOG_Z].dims[0]


#: The running estimate of each family of methods (:attr:`~pymc_evidence.methods.MethodSpec.family`)
_RUNNING = {
    CONTINUOUS_TEMPERING: _running_ct,
    SIMULATED_TEMPERING: _running_st,
    LINKED_RUNS: _running_lis,
    ANNEALING: _running_particles,
}
#: How each family's results are drawn
_DRAW = dict.fromkeys(_RUNNING, _draw_running)
_DRAW.update({SMC_RUNS: _draw_smc, BRIDGE_SAMPLING: _draw_bridge, CROSS_CHECK: _draw_points})


#: The main panel of an SMC/ARM or bridge plot shows ``final ± max(ZOOM_SE se, ZOOM_FLOOR)``
#: (wider if needed to show every run's own end point) when its lines range wider.
ZOOM_SE = 6.0
ZOOM_FLOOR = 0.01
#: Where the full-range inset may go (axes fractions), in order of preference.
_INSET_SPOTS = ((0.1, 0.1), (0.1, 0.55), (0.55, 0.1), (0.55, 0.55))
_INSET_SIZE = (0.38, 0.36)


def _zoom_window(ds, traces, reference) -> tuple[float, float]:
    """``final ± half``: ``ZOOM_SE`` se (at least ``ZOOM_FLOOR``), every trace's end, and the
    reference unless it is more than ten such half-widths away."""
    final, se = float(ds[LOG_Z]), float(ds[LOG_Z_SE])
    half = max(ZOOM_SE * se if np.isfinite(se) else 0.0, ZOOM_FLOOR)
    for line in traces:
        y = np.asarray(line.get_ydata(), dtype=float)
        y = y[np.isfinite(y)]
        half = max(half, 1.1 * abs(y[-1] - final)) if y.size else half
    if reference is not None and abs(reference - final) < 10 * half:
        half = max(half, 1.1 * abs(reference - final))
    return final - half, final + half


def _mark_off_scale(ax, x, y, lo: float, hi: float) -> None:
    """Points above/below the window as triangles on the top/bottom edge, one line each."""
    style = {"ls": "none", "color": "0.4", "ms": 6, "transform": ax.get_xaxis_transform()}
    label = "off scale (full range in inset)"
    for outside, edge, marker in ((y > hi, 0.97, "^"), (y < lo, 0.03, "v")):
        if outside.any():
            ax.plot(x[outside], np.full(outside.sum(), edge), marker=marker, label=label, **style)
            label = None


def _inset_spot(ax, x, y) -> tuple[float, float]:
    """The corner of the axes holding the fewest drawn points (clipped to the edges)."""
    ax.get_xlim(), ax.get_ylim()  # settle the view limits that transLimits reads
    points = ax.transLimits.transform(np.column_stack([x, y]))
    points = np.clip(points, 0.0, 1.0)
    width, height = _INSET_SIZE

    def crowd(spot):
        (x0, y0), pad = spot, 0.08
        inside = (points[:, 0] > x0 - pad) & (points[:, 0] < x0 + width + pad)
        return np.sum(inside & (points[:, 1] > y0 - pad) & (points[:, 1] < y0 + height + pad))

    return min(_INSET_SPOTS, key=crowd)


def _full_range_inset(ax, traces, ds, reference, spot):
    """An inset with every trace over its full range, the final estimate and the reference."""
    inset = ax.inset_axes([*spot, *_INSET_SIZE])
    for line in traces:
        inset.plot(
            line.get_xdata(),
            line.get_ydata(),
            color=line.get_color(),
            marker=line.get_marker(),
            ms=3,
            lw=1,
        )
    inset.axhline(float(ds[LOG_Z]), color="C0", ls="--", lw=1)
    if reference is not None:
        inset.axhline(float(reference), color="black", ls=":", lw=1)
    inset.text(
        0.96, 0.94, "full range", transform=inset.transAxes, ha="right", va="top", fontsize="small"
    )
    inset.tick_params(labelsize="x-small")
    inset.xaxis.set_major_locator(ax.xaxis.get_major_locator())
    plain_ticks(inset.yaxis)
    return inset


def _zoom_on_final(ax, ds, reference):
    """Zoom the y axis on the final estimate when the traces range wider; full range inset."""
    traces = list(ax.get_lines())
    x = np.concatenate([np.asarray(line.get_xdata(), dtype=float) for line in traces])
    y = np.concatenate([np.asarray(line.get_ydata(), dtype=float) for line in traces])
    lo, hi = _zoom_window(ds, traces, reference)
    finite = np.isfinite(y)
    x, y = x[finite], y[finite]
    if np.all((y >= lo) & (y <= hi)):
        return None
    _mark_off_scale(ax, x, y, lo, hi)
    ax.set_ylim(lo, hi)
    return _full_range_inset(ax, traces, ds, reference, _inset_spot(ax, x, y))


def _title(ds, method) -> str:
    if method == CROSS_CHECK:
        return f"log Z cross-check ({', '.join(str(ds.attrs['methods']).split(','))})"
    return f"running log Z ({method})"


def plot_running_log_z(idata, *, n_points: int = 30, k: float = 2.0, reference=None, ax=None):
    """How the estimate of log Z builds up, along the natural axis of the method.

    * ``"ct"``, ``"gibbs_ct"``, ``"st"``: the estimate on growing prefixes of the draws of
      every chain (same estimator and pooling as the final value), with its ``± k se``
      band. A trustworthy run settles down early and stays inside its shrinking band;
      drifts or jumps point to poor mixing.
    * ``"ais"``, ``"rais"``, ``"bar"``: the same over growing numbers of particles;
      ``"lis"``: over growing numbers of LIS runs (per direction). Jumps show single
      particles or runs that dominate the weights.
    * ``"smc"``, ``"arm"``: each run's cumulative ``log Z_beta`` (its stage increments
      summed) against the inverse temperature ``beta``, one marker per annealing stage,
      ending at the run's estimate. Runs that part ways at some ``beta`` show where the
      path is hard.
    * ``"bridge"``: the iterates of the Meng-Wong fixed point of every repetition, the
      last one being its estimate (results without stored iterates: one point per chain).
    * a cross-check (``method=[...]``): one point per method with ``± k se`` error bars.

    Every plot marks the final (pooled) estimate; where the lines carry no band of their
    own, a shaded band shows its ``± k se``. SMC/ARM traces (from ``log Z_0 = 0``) and
    bridge iterates can range far wider than that band: then the main panel zooms on the
    final estimate ``± max(6 se, 0.01)`` (widened to show every run's end, and the
    reference unless it is far off), the points above or below are triangles on its edge,
    and an inset shows the full range. The y axis reads plain numbers (no offset). The
    legend sits right of the axes.

    Parameters
    ----------
    idata : InferenceData or DataTree
        Results of ``pme.sample_evidence`` with any method, or a list of methods.
    n_points : int, default 30
        Number of prefixes evaluated (draws, particles and LIS runs only).
    k : float, default 2.0
        Half-width of the bands and error bars in standard errors.
    reference : float, optional
        A known exact log Z, drawn as a horizontal line.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes

    Raises
    ------
    ValueError
        If the results lack the values drawn (e.g. a hand-built ``log_evidence`` group).

    Examples
    --------
    >>> ax = pme.plot_running_log_z(idata, reference=-2.5505)  # doctest: +SKIP
    >>> ax = pme.plot_running_log_z(idata_smc)  # zooms on the estimate  # doctest: +SKIP
    >>> inset = ax.child_axes[0]  # every stage, from log Z_0 = 0  # doctest: +SKIP
    >>> ax = pme.plot_running_log_z(idata_bar, k=1)  # doctest: +SKIP
    """
    allowed = (*methods_in(*(f for f in _DRAW if f != CROSS_CHECK)), CROSS_CHECK)
    ds, method = checked_results(idata, allowed, "plot_running_log_z")
    ax = new_axes(ax, figsize=(7.5, 4.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        xlabel = _DRAW[family(method)](ax, idata, ds, method, int(n_points), float(k))
    reference = None if reference is None else float(reference)
    zoomed = None
    kind = family(method)  # SMC traces and bridge iterates may range far wider than the band
    if kind == SMC_RUNS or (kind == BRIDGE_SAMPLING and "log_z_iterates" in ds):
        zoomed = _zoom_on_final(ax, ds, reference)
    ax.axhline(float(ds[LOG_Z]), color="C0", ls="--", lw=1, label="final estimate")
    if reference is not None:
        low, high = ax.get_ylim()
        off = zoomed is not None and not low <= reference <= high
        label = f"reference ({reference:.4g}, off scale)" if off else "reference"
        ax.axhline(reference, color="black", ls=":", label=label)
    plain_ticks(ax.yaxis)
    ax.set(xlabel=xlabel, ylabel="log Z", title=_title(ds, method))
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return ax
