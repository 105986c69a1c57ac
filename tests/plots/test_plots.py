"""Smoke tests of the diagnostic plots on small real results (Agg backend)."""

import doctest
import sys
import warnings

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402
import pytest  # noqa: E402
import xarray as xr  # noqa: E402

import pymc_evidence as pme  # noqa: E402
from pymc_evidence import compat, plots  # noqa: E402
from pymc_evidence.estimators.diagnostics import EvidenceWarning  # noqa: E402
from pymc_evidence.estimators.noneq import ais_log_evidence, reverse_ais_log_evidence  # noqa: E402
from pymc_evidence.methods import get_method  # noqa: E402
from pymc_evidence.plots import (  # noqa: E402
    plot_beta_trace,
    plot_compare,
    plot_running_log_z,
    plot_st_levels,
    plot_work_overlap,
)
from pymc_evidence.results import GROUP, estimate_to_dataset  # noqa: E402
from pymc_evidence.results.schema import (  # noqa: E402
    CHAIN_LOG_Z,
    CHAIN_LOG_Z_SE,
    LOG_Z,
    LOG_Z_SE,
)

Y = np.array([0.3, -0.5])
COV = np.eye(2) + 1.0  # y ~ N(0, I + 11'): mu ~ N(0, 1), y_i | mu ~ N(mu, 1)
EXACT = float(-0.5 * Y @ np.linalg.solve(COV, Y) - 0.5 * np.linalg.slogdet(2 * np.pi * COV)[1])
QUIET = {"random_seed": 0, "progressbar": False}
SMALL = {"draws": 200, "tune": 200, "chains": 2, **QUIET}
FAST_BASE = {"base_kwargs": {"restarts": 2}}
CT_FAST = {"adapt_rounds": 1, "adapt_draws": 200, "adapt_tune": 200, **FAST_BASE}
AIS_FAST = {"n_particles": 64, "n_stages": 30, **FAST_BASE}
# SMC from the prior, so that the adaptive schedule takes several stages
SMC_FAST = {"n_particles": 64, "n_runs": 2, "base": "prior"}
OPTIONS = {
    "ct": CT_FAST,
    "gibbs_ct": CT_FAST,
    "st": FAST_BASE,
    "ais": AIS_FAST,
    "rais": AIS_FAST,
    "bar": AIS_FAST,
    "lis": {"n_particles": 64, "n_stages": 8, "chain_length": 5, **FAST_BASE},
    "smc": SMC_FAST,
    "arm": SMC_FAST,
    "bridge": {},
}
CROSS_CHECK = ("smc", "bridge")
OFF_SCALE = "off scale (full range in inset)"


def _model():
    model = pm.Model()
    with model:
        mu = pm.Normal("mu", 0, 1)
        pm.Normal("y", mu, 1, observed=Y)
    return model


def _run(method):
    """Tiny results of ``method`` (a name, or a tuple of names for a cross-check)."""
    names = [method] if isinstance(method, str) else list(method)
    uses_nuts = any(get_method(name).nuts != "none" for name in names)
    sizes = SMALL if uses_nuts else QUIET  # methods without NUTS refuse draws/tune/chains
    options = {key: value for name in names for key, value in OPTIONS[name].items()}
    with _model(), warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        return pme.sample_evidence(method=method if len(names) == 1 else names, **sizes, **options)


@pytest.fixture(scope="module")
def results():
    """``results(method)``: each method (or cross-check) runs once per module, on demand."""
    cache = {}

    def get(method):
        if method not in cache:
            cache[method] = _run(method)
        return cache[method]

    return get


@pytest.fixture(scope="module")
def ct(results):
    return results("ct")


@pytest.fixture(scope="module")
def st(results):
    return results("st")


@pytest.fixture(scope="module")
def bar(results):
    return results("bar")


@pytest.fixture(scope="module")
def ais(bar):
    """Forward-AIS results made from the works of the BAR run (no extra sampling)."""
    work = compat.get_group(bar, GROUP)["work_forward"].values
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        est = ais_log_evidence(work)
    group = estimate_to_dataset(
        est, chain_dim="run", extra_dims={"work_forward": ("particle", work)}
    )
    return compat.new_idata({GROUP: group})


@pytest.fixture(scope="module")
def rais(bar):
    """Reverse-AIS results from the BAR run's works; like a real "rais" run they keep the
    forward works too (the forward run tunes the kernels)."""
    group = compat.get_group(bar, GROUP)
    works = {name: ("particle", group[name].values) for name in ("work_forward", "work_reverse")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        est = reverse_ais_log_evidence(works["work_reverse"][1])
    return compat.new_idata({GROUP: estimate_to_dataset(est, chain_dim="run", extra_dims=works)})


@pytest.fixture(autouse=True)
def render_and_close():
    """Render every figure a test made (mathtext errors show only then), then close it."""
    yield
    for number in plt.get_fignums():
        plt.figure(number).canvas.draw()
    plt.close("all")


def _labels(ax):
    return [text.get_text() for text in ax.get_legend().get_texts()]


def _only(idata_method, **attrs):
    est = pme.EvidenceEstimate(-1.0, 0.1, idata_method)
    return compat.new_idata({GROUP: estimate_to_dataset(est, attrs=attrs)})


@pytest.mark.parametrize("name", ["ct", "st"])
def test_beta_trace(name, request):
    idata = request.getfixturevalue(name)
    hist_ax, trace_ax = axes = plot_beta_trace(idata)
    assert axes.shape == (2,) and hist_ax.figure is trace_ax.figure
    assert len(trace_ax.get_lines()) == 2  # one trace per chain
    for line in trace_ax.get_lines():
        beta = line.get_ydata()
        # st samples again with up to 4 times the draws where its chains crossed the
        # ladder fewer than 8 times (200 draws: 800 here)
        most = SMALL["draws"] * (4 if name == "st" else 1)
        assert SMALL["draws"] <= beta.size <= most and 0.0 <= beta.min() and beta.max() <= 1.0
    labels = _labels(hist_ax)
    assert labels[:2] == ["chain 0", "chain 1"]
    assert ("Rao-Blackwellized" in labels) == (name == "ct")
    assert len(hist_ax.patches) == 2 + (name == "ct")
    assert "beta" in hist_ax.get_xlabel() and name in trace_ax.get_title()
    if name == "st":  # fractions of draws per level, never a spiky density
        assert hist_ax.get_ylim()[1] <= 1.1 and "fraction" in hist_ax.get_ylabel()


def test_gibbs_ct_beta_read_from_sample_stats(ct):
    """The Gibbs step records beta as a sampler statistic, not in the extended draws."""
    extended = compat.get_group(ct, "extended_posterior")
    group = compat.get_group(ct, GROUP)
    group.attrs["method"] = "gibbs_ct"
    gibbs = compat.new_idata(
        {
            "extended_posterior": extended.drop_vars("ct_beta"),
            "sample_stats": extended[["ct_beta"]],
            GROUP: group,
        }
    )
    _, trace_ax = plot_beta_trace(gibbs)
    np.testing.assert_array_equal(trace_ax.get_lines()[1].get_ydata(), extended["ct_beta"][1])
    assert "gibbs_ct" in plot_running_log_z(gibbs, n_points=3).get_title()


def test_beta_trace_draws_on_given_axes(ct):
    fig, given = plt.subplots(2, 1)
    axes = plot_beta_trace(ct, axes=given, bins=10)
    assert list(axes) == list(given) and len(fig.axes) == 2
    with pytest.raises(ValueError, match="axes must hold 2"):
        plot_beta_trace(ct, axes=[given[0]])


PREFIX_XLABELS = {
    "ct": "draws per chain",
    "gibbs_ct": "draws per chain",
    "st": "draws per chain",
    "ais": "particles (independent runs)",
    "rais": "particles (independent runs)",
    "bar": "particles (independent runs)",
    "lis": "LIS runs (per direction)",
}


def _check_prefix_plot(ax, name, group):
    """A running estimate over growing prefixes that ends at the stored estimate."""
    (line,) = [line for line in ax.get_lines() if line.get_label() == "running estimate"]
    assert 2 <= line.get_xdata().size <= 8 and np.all(np.diff(line.get_xdata()) > 0)
    assert line.get_ydata()[-1] == pytest.approx(float(group[LOG_Z]), abs=1e-10)
    assert len(ax.collections) == 1  # the band
    band = ax.collections[0].get_paths()[0].vertices[:, 1]
    assert band.max() - band.min() > 0.0
    assert _labels(ax) == ["± 2 se", "running estimate", "final estimate", "reference"]
    assert ax.get_xlabel() == PREFIX_XLABELS[name]


def _check_smc_plot(ax, group):
    """One cumulative log Z trace per run, from (0, 0) to (1, that run's log Z); the main
    panel zooms on the estimate (the stages above it marked on the top edge), an inset
    shows every stage."""
    n_runs = group.sizes["run"]
    traces = ax.get_lines()[:n_runs]
    (marks,) = [line for line in ax.get_lines() if line.get_label() == OFF_SCALE]
    assert len(ax.get_lines()) == n_runs + 3  # runs, off-scale marks, final, reference
    assert _labels(ax) == [
        "± 2 se",
        *(f"run {r}" for r in range(n_runs)),
        OFF_SCALE,
        "final estimate",
        "reference",
    ]
    for r, line in enumerate(traces):
        x, y = line.get_xdata(), line.get_ydata()
        assert x.size == group["n_stages"].values[r] + 1 >= 3  # a marker per stage
        assert (x[0], y[0], x[-1]) == (0.0, 0.0, 1.0) and np.all(np.diff(x) > 0)
        assert y[-1] == pytest.approx(float(group[CHAIN_LOG_Z][r]), abs=1e-10)
    assert 0.0 in marks.get_xdata() and set(marks.get_ydata()) == {0.97}  # beta = 0 is above
    _check_zoom(ax, group, traces)
    assert "beta" in ax.get_xlabel() and len(ax.patches) == 1  # the final band


def _check_zoom(ax, group, traces, reference=EXACT):
    """The y axis spans the estimate ± max(6 se, 0.01, the runs' ends, the reference)."""
    final, se = float(group[LOG_Z]), float(group[LOG_Z_SE])
    ends = [line.get_ydata()[np.isfinite(line.get_ydata())][-1] for line in traces]
    half = max(6 * se, 0.01, *(1.1 * abs(np.array([*ends, reference]) - final)))
    assert ax.get_ylim() == pytest.approx((final - half, final + half))
    (inset,) = ax.child_axes
    assert len(inset.get_lines()) == len(traces) + 2  # the traces, final, reference
    low, high = inset.get_ylim()
    assert low < min(line.get_ydata().min() for line in traces) and high > 0.0


def _check_bridge_plot(ax, group):
    (trace,) = [line for line in ax.get_lines() if line.get_label() == "repetition 0"]
    n_iter = int(group["diag_n_iterations"])
    np.testing.assert_array_equal(trace.get_xdata(), np.arange(n_iter + 1))
    np.testing.assert_array_equal(trace.get_ydata(), group["log_z_iterates"].values)
    assert trace.get_ydata()[-1] == float(group[LOG_Z])
    assert _labels(ax) == ["± 2 se", "repetition 0", "final estimate", "reference"]
    assert "iteration" in ax.get_xlabel() and len(ax.patches) == 1


def _check_cross_check_plot(ax, group):
    """One point per method with its ± 2 se error bar, and the combined band."""
    assert [t.get_text() for t in ax.get_xticklabels()] == list(CROSS_CHECK)
    assert len(ax.containers) == len(CROSS_CHECK) and len(ax.patches) == 1
    for i, container in enumerate(ax.containers):
        x, y = container.lines[0].get_xydata()[0]
        assert (x, y) == (i, pytest.approx(float(group[CHAIN_LOG_Z][i])))
        low, high = container.lines[2][0].get_segments()[0][:, 1]
        assert high - low == pytest.approx(4 * float(group[CHAIN_LOG_Z_SE][i]))
    assert _labels(ax) == ["± 2 se", "final estimate", "reference", *CROSS_CHECK]
    assert ax.get_xlabel() == "method" and "cross-check (smc, bridge)" in ax.get_title()


@pytest.mark.parametrize("name", [*pme.METHODS, "cross-check"])
def test_running_log_z_every_method(name, results):
    idata = results(CROSS_CHECK if name == "cross-check" else name)
    group = compat.get_group(idata, GROUP)
    ax = plot_running_log_z(idata, n_points=8, reference=EXACT)
    final, reference = ax.get_lines()[-2:]
    assert final.get_ydata()[0] == float(group[LOG_Z]) and reference.get_ydata()[0] == EXACT
    assert ax.get_ylabel() == "log Z" and name in ax.get_title()
    _check_plain_ticks(ax.yaxis)
    if name in PREFIX_XLABELS:
        _check_prefix_plot(ax, name, group)
    elif name in ("smc", "arm"):
        _check_smc_plot(ax, group)
    elif name == "bridge":
        _check_bridge_plot(ax, group)
    else:
        _check_cross_check_plot(ax, group)


@pytest.mark.parametrize("name", ["ais", "rais"])
def test_running_log_z_of_works_alone(name, request):
    """Groups with works only (forward, or both for reverse AIS) end at their estimate."""
    idata = request.getfixturevalue(name)
    ax = plot_running_log_z(idata, n_points=8)
    line = ax.get_lines()[0]
    assert line.get_ydata()[-1] == pytest.approx(pme.log_evidence(idata).log_z, abs=1e-10)


def test_running_log_z_smc_runs_of_different_lengths():
    """Adaptive runs take different numbers of stages: the NaN padding is not drawn."""
    betas = [[0.0, 0.3, 1.0], [0.0, 0.1, 0.4, 1.0]]
    increments = [[np.nan, -1.0, -1.5], [np.nan, -0.5, -1.0, -1.1]]
    est = pme.EvidenceEstimate(-2.55, 0.02, "smc", np.array([-2.5, -2.6]), np.array([0.03] * 2))
    group = estimate_to_dataset(
        est, chain_dim="run", stage_values={"beta": betas, "log_increment": increments}
    )
    ax = plot_running_log_z(compat.new_idata({GROUP: group}), k=1)
    runs = ax.get_lines()[:2]
    np.testing.assert_array_equal(runs[0].get_xdata(), betas[0])
    np.testing.assert_allclose(runs[0].get_ydata(), [0.0, -1.0, -2.5])
    np.testing.assert_allclose(runs[1].get_ydata(), [0.0, -0.5, -1.5, -2.6])
    assert _labels(ax)[0] == "± 1 se"


def _smc_idata(final=-41.0, se=0.01, spread=0.004, short=False):
    """Two SMC runs whose stages sum to about ``final`` (cumulative 0, -5, -20, final; or,
    ``short``, one step from the base)."""
    ends = np.array([final - spread / 2, final + spread / 2])
    betas = [[0.0, 1.0] if short else [0.0, 0.1, 0.4, 1.0]] * 2
    increments = [[np.nan, end] if short else [np.nan, -5.0, -15.0, end + 20.0] for end in ends]
    est = pme.EvidenceEstimate(final, se, "smc", ends, np.array([se * np.sqrt(2)] * 2))
    group = estimate_to_dataset(
        est, chain_dim="run", stage_values={"beta": betas, "log_increment": increments}
    )
    return compat.new_idata({GROUP: group})


def _check_plain_ticks(axis):
    """Neither an offset (``-6.98e1``) nor powers of ten on a log Z axis, once drawn."""
    axis.axes.figure.canvas.draw()
    assert axis.get_offset_text().get_text() == ""
    assert not any("e" in label.get_text() for label in axis.get_ticklabels())


def test_running_log_z_smc_zooms_on_the_estimate():
    """The stages span 0 to -41: the main panel shows -41 ± 6 se, the inset all stages."""
    idata = _smc_idata()
    ax = plot_running_log_z(idata, reference=-41.02)
    assert ax.get_ylim() == pytest.approx((-41.06, -40.94))  # final ± 6 se
    (marks,) = [line for line in ax.get_lines() if line.get_label() == OFF_SCALE]
    np.testing.assert_array_equal(marks.get_xdata(), [0.0, 0.1, 0.4] * 2)  # the stages above
    assert marks.get_marker() == "^" and _labels(ax)[-1] == "reference"
    (inset,) = ax.child_axes
    assert inset.get_ylim()[0] < -41.0 and inset.get_ylim()[1] > 0.0
    _check_plain_ticks(ax.yaxis)
    _check_plain_ticks(inset.yaxis)


def test_running_log_z_says_what_to_read_on_a_short_path():
    """A run of one step from its base has no path to read: the plot says to read the runs'
    ends against the band (a long path does not get the note)."""
    texts = [t.get_text() for t in plot_running_log_z(_smc_idata(short=True)).texts]
    assert any(t.startswith("1 stage(s)") and "runs' ends" in t for t in texts)
    assert not plot_running_log_z(_smc_idata()).texts


def test_running_log_z_zoom_floor_and_far_reference():
    """A zero se zooms on ± 0.01 nats; a reference far off is named in the legend."""
    ax = plot_running_log_z(_smc_idata(se=0.0, spread=0.0), reference=-30.0)
    assert ax.get_ylim() == pytest.approx((-41.01, -40.99))
    assert _labels(ax)[-1] == "reference (-30, off scale)"
    # a wide spread of the runs' ends widens the zoom so that every end shows
    ax = plot_running_log_z(_smc_idata(spread=0.4))
    assert ax.get_ylim() == pytest.approx((-41.22, -40.78))


def test_running_log_z_no_zoom_when_everything_shows():
    """Bridge iterates within ± 6 se of the estimate: plain autoscale, no inset."""
    est = pme.EvidenceEstimate(-69.8031, 0.002, "bridge", np.array([-69.8031]), np.array([0.002]))
    iterates = {"log_z_iterates": ("iteration", [-69.805, -69.8032, -69.8031])}
    group = estimate_to_dataset(est, extra_dims=iterates)
    idata = compat.new_idata({GROUP: group})
    ax = plot_running_log_z(idata)
    assert ax.child_axes == [] and OFF_SCALE not in _labels(ax)
    _check_plain_ticks(ax.yaxis)  # -69.805 to -69.801: matplotlib's default offsets it
    ax = plot_running_log_z(idata, reference=-69.9)
    assert _labels(ax)[-1] == "reference" and ax.get_ylim()[0] < -69.9  # autoscaled to it


def test_running_log_z_bridge_repetitions(results):
    """Repetitions redraw the proposal: one trace each, the final line is their mean."""
    draws = results("bridge")  # outside the model's context: it builds a model of its own
    with _model(), warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        idata = pme.bridge_sampling(draws, repetitions=3, random_seed=1)
    group = compat.get_group(idata, GROUP)
    ax = plot_running_log_z(idata)
    traces = ax.get_lines()[:3]
    assert [line.get_label() for line in traces] == [f"repetition {r}" for r in range(3)]
    ends = [line.get_ydata()[-1] for line in traces]
    np.testing.assert_allclose(ends, group[CHAIN_LOG_Z].values, atol=1e-12)
    assert ax.get_lines()[3].get_ydata()[0] == pytest.approx(np.mean(ends))
    n_iter = group["n_iterations"].values
    assert [line.get_xdata().size for line in traces] == list(n_iter.astype(int) + 1)


def test_running_log_z_bridge_without_iterates_shows_chains(results):
    group = compat.get_group(results("bridge"), GROUP).drop_vars("log_z_iterates")
    ax = plot_running_log_z(compat.new_idata({GROUP: group}))
    assert [t.get_text() for t in ax.get_xticklabels()] == ["chain 0", "chain 1"]
    assert len(ax.containers) == 2 and ax.get_xlabel() == "chain"


def test_running_log_z_after_netcdf_round_trip(ct, tmp_path):
    idata = compat.from_netcdf(compat.to_netcdf(ct, tmp_path / "ct.nc"))
    ax = plot_running_log_z(idata, n_points=5)
    assert ax.get_lines()[0].get_ydata()[-1] == pytest.approx(pme.log_evidence(ct).log_z)


def test_running_log_z_rejects_results_without_values():
    with pytest.raises(ValueError, match="plot_running_log_z handles .* not 'nuts'"):
        plot_running_log_z(_only("nuts"))
    with pytest.raises(ValueError, match="neither the values .* nor per-chain"):
        plot_running_log_z(_only("bridge"))
    with pytest.raises(ValueError, match="'smc' results hold none of"):
        plot_running_log_z(_only("smc"))
    with pytest.raises(ValueError, match="'lis' results hold none of"):
        plot_running_log_z(_only("lis"))


def test_work_overlap_bar(bar):
    ax = plot_work_overlap(bar, bins=20)
    group = compat.get_group(bar, GROUP)
    labels = _labels(ax)
    assert labels[0].startswith("forward") and labels[1].startswith("reverse")
    assert labels[2] == "overlap" and labels[3].startswith("log Z = ")
    assert len(ax.patches) == 5  # two filled and two outlined histograms, the overlap
    (vline,) = ax.get_lines()
    assert vline.get_xdata()[0] == pytest.approx(float(group["log_marginal_likelihood"]))
    assert "overlap" in ax.get_title()
    # forward log weights -W_f and reverse works W_r bracket log Z on average (Jensen)
    lower, upper = -group["work_forward"].mean(), group["work_reverse"].mean()
    assert float(lower) <= float(group["log_marginal_likelihood"]) + 1e-3 <= float(upper) + 2e-3


def test_work_overlap_forward_only(ais):
    ax = plot_work_overlap(ais)
    assert len(ax.patches) == 2 and "overlap" not in _labels(ax)


@pytest.mark.parametrize("plot", [plot_work_overlap, plot_st_levels])
def test_method_specific_plots_reject_ct(plot, ct):
    with pytest.raises(ValueError, match=f"{plot.__name__} handles"):
        plot(ct)


def test_beta_trace_rejects_particle_results(bar):
    with pytest.raises(
        ValueError, match=r"plot_beta_trace handles .*\('ct', 'gibbs_ct', 'st'\), not 'bar'"
    ):
        plot_beta_trace(bar)


def test_st_levels(st):
    ax = plot_st_levels(st)
    group = compat.get_group(st, GROUP)
    n_levels = group.sizes["level"]
    assert len(ax.patches) == n_levels
    heights = [patch.get_height() for patch in ax.patches]
    np.testing.assert_allclose(heights, group["c_hat"].values)
    assert _labels(ax) == ["visits", "target $r_k$", r"$\hat c_k$ (Rao-Blackwellized)"]
    assert "level" in ax.get_xlabel()


def _right_labels(ax):
    """The annotation of each row: the right-hand tick labels of the last panel."""
    (right,) = ax.figure.axes[-1].child_axes
    return [label.get_text() for label in right.get_yticklabels()]


def _bars(ax):
    """``(x, y, half-width)`` of every error bar of ``ax``, in drawing order."""
    out = []
    for container in ax.containers:
        x, y = container.lines[0].get_xydata()[0]
        low, high = container.lines[2][0].get_segments()[0][:, 0]
        out.append((x, y, (high - low) / 2))
    return np.array(out)


def _numbers(text):
    """The numbers in an annotation, e.g. ``[-1.5, 0.25, 0.12, 0.02]``."""
    words = text.replace("±", " ").replace("(", " ").replace(")", " ").split()
    return [float(word) for word in words if word[-1].isdigit()]


E = pme.EvidenceEstimate
#: Input order worst first; the bars (a few tenths) show on the difference axis.
CLOSE = {
    "no_pool": E(-126.0, 0.1, "ct"),
    "pooled": E(-120.4, 0.15, "ct"),
    "hier": E(-118.9, 0.2, "ct"),
    "hier_t": E(-119.3, 0.35, "ct"),
}


def test_compare_best_first_with_bayes_factors_and_probabilities():
    table = pme.compare(CLOSE)
    ax = plot_compare(CLOSE, k=2)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["hier", "hier_t", "pooled", "no_pool"]
    assert ax.get_ylim() == (3.5, -0.5)  # the best on top
    bars = _bars(ax)[np.argsort(_bars(ax)[:, 1])]  # by row
    np.testing.assert_allclose(bars[:, 0], table["log_z_minus_best"])  # x: log Z - best log Z
    np.testing.assert_allclose(bars[:, 2], 2 * np.r_[0.2, table["log_z_minus_best_se"][1:]])
    labels = _right_labels(ax)
    assert labels[0].startswith("log BF 0 (best)") and "P(M|y)" in labels[0]
    for text, (_, row) in zip(labels, table.iterrows(), strict=True):
        numbers = _numbers(text)
        if row["log_z_minus_best"] < 0:
            np.testing.assert_allclose(
                numbers[:2],
                row[["log_z_minus_best", "log_z_minus_best_se"]].astype(float),
                atol=0.006,
            )
        np.testing.assert_allclose(
            numbers[-2:], row[["post_prob", "post_prob_se"]].astype(float), atol=6e-3
        )
    assert len(ax.figure.axes) == 1  # the bars show: no zoom panel
    assert ax.get_xlabel() == "log Z − log Z of the best (± 2 se)"
    _check_plain_ticks(ax.xaxis)


def test_compare_prior_probs_and_table_input():
    prior = {"hier": 0.1, "hier_t": 0.1, "pooled": 0.4, "no_pool": 0.4}
    table = pme.compare(CLOSE, prior_probs=prior)
    for ax in (plot_compare(CLOSE, prior_probs=prior), plot_compare(table)):
        labels = _right_labels(ax)
        assert labels[2].endswith("(prior 0.4)")
        assert _numbers(labels[2])[-3] == pytest.approx(table.loc["pooled", "post_prob"], abs=6e-3)
    equal = _right_labels(plot_compare(CLOSE))
    assert "prior" not in equal[2] and equal[2] != labels[2]


def test_compare_zoom_panel_when_bars_are_too_small():
    """se of hundredths against 6 nats: a panel magnifies each row, bars and exact values."""
    results = {"a": E(-60.0, 0.01, "smc"), "b": E(-53.5, 0.007, "smc")}
    ax = plot_compare(results, reference={"a": -60.015, "b": -53.9})
    main, zoom = ax.figure.axes
    assert main is ax and [t.get_text() for t in ax.get_yticklabels()] == ["b", "a"]
    bars = _bars(zoom)
    np.testing.assert_allclose(bars[:, 0], 0.0, atol=1e-12)  # each row on its first estimate
    np.testing.assert_allclose(bars[:, 2], 2 * np.array([np.hypot(0.01, 0.007), 0.007]))
    low, high = zoom.get_xlim()
    assert high == -low and 2 * 0.0122 < high < 0.1  # bars wide on the zoom axis
    marks = {line.get_marker(): line.get_xydata()[0] for line in zoom.get_lines()[1:]}
    assert marks["D"] == pytest.approx((-0.015, 1.0))  # a's exact value, near: a diamond
    assert marks["<"][0] == pytest.approx(-0.96 * high)  # b's, 0.4 below: on the edge
    assert _right_labels(ax)[1].startswith("log BF -6.500 ± 0.012")
    assert zoom.get_title() == "each model's error bar"  # one estimate a model: said so
    assert plot_compare(results, zoom=False).figure.axes == [plt.gca()]


def test_compare_shows_a_cross_checks_methods_and_readable_zoom_ticks():
    """A cross-check's row gets its methods' estimates beside the combined one (which
    places the model); an se far below a thousandth reads ``<0.001`` on the right, and
    the zoom panel keeps three ticks (at -a, 0, a), whose labels do not collide."""
    check = E(-5.0, 0.002, "smc+bridge", per_chain_log_z=np.array([-4.997, -5.001]),
              per_chain_se=np.array([0.004, 0.002]))  # fmt: skip
    with pytest.warns(pme.CrossCheckWarning, match="different methods"):
        ax = plot_compare({"coin": check, "other": E(-9.0, 0.003, "smc")}, zoom=False)
    labels = [text.get_text() for text in ax.get_legend().get_texts()]
    assert labels == ["smc+bridge", "smc", "bridge"]
    np.testing.assert_allclose(_bars(ax)[:3, 0], [0.0, 0.003, -0.001], atol=1e-12)
    ax = plot_compare({"a": E(-60.0, 1e-5, "smc"), "b": E(-53.5, 2e-5, "smc")})
    assert _right_labels(ax)[1].startswith("log BF -6.500 ± <0.001")
    zoom = ax.figure.axes[1]
    ticks = [t for t in zoom.get_xticks() if zoom.get_xlim()[0] <= t <= zoom.get_xlim()[1]]
    assert len(ticks) == 3 and ticks[1] == 0.0


def test_compare_nested_with_reference(ct, st, bar):
    results = {"normal": {"ct": ct, "st": st, "bar": bar}, "shifted": {"ct": _only("ct")}}
    ax = plot_compare(results, reference={"normal": EXACT})
    assert [t.get_text() for t in ax.get_yticklabels()] == ["shifted", "normal"]  # -1 > -2.55
    assert len(ax.containers) == 4  # one error bar per estimate
    assert sorted(_labels(ax)) == ["bar", "ct", "exact", "st"]
    x, y, half = _bars(ax)[0]  # normal's ct, the first of three estimates side by side
    assert x == pytest.approx(pme.log_evidence(ct).log_z + 1.0) and 0.5 < y < 1.0
    assert half == pytest.approx(2 * np.hypot(pme.log_evidence(ct).se, 0.1))
    exact = [line for line in ax.get_lines() if line.get_label() == "exact"][0]
    assert tuple(exact.get_xydata()[0]) == pytest.approx((EXACT + 1.0, 1.0))
    assert [text.split()[:3] for text in _right_labels(ax)][0] == ["log", "BF", "0"]


def test_compare_flat_dict_and_table(ct, st):
    with pytest.warns(pme.CrossCheckWarning, match="different methods") as caught:
        flat = plot_compare({"a": ct, "b": pme.log_evidence(st)}, k=1)
    assert caught[0].filename == __file__  # points at the call, not into the library
    order = sorted(["a", "b"], key=lambda m: -pme.log_evidence({"a": ct, "b": st}[m]).log_z)
    assert [t.get_text() for t in flat.get_yticklabels()] == order
    assert flat.get_xlabel().endswith("(± 1 se)")
    with pytest.warns(pme.CrossCheckWarning, match="different methods"):
        table = pme.compare({"a": ct, "b": st})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the table's warning was given already
        ax = plot_compare(table)
    assert [t.get_text() for t in ax.get_yticklabels()] == list(table.index)
    ys = [container.lines[0].get_xydata()[0, 1] for container in ax.containers]
    assert ys == [0.0, 1.0]  # one estimate per model sits on its tick


def test_compare_given_axes():
    fig, (main, zoom) = plt.subplots(1, 2)
    assert plot_compare(CLOSE, ax=(main, zoom)) is main and len(zoom.containers) == 4
    assert len(_right_labels(main)) == 4 and zoom.child_axes  # the labels right of the zoom
    _, single = plt.subplots()
    plot_compare({"a": E(-60.0, 0.01, "smc"), "b": E(-53.5, 0.007, "smc")}, ax=single)
    assert len(single.figure.axes) == 1 and len(single.containers) == 2
    with pytest.raises(ValueError, match="one Axes or two"):
        plot_compare(CLOSE, ax=[main, zoom, single])


def test_compare_rejects_bad_input(ct):
    with pytest.raises(ValueError, match="empty"):
        plot_compare({})
    with pytest.raises(ValueError, match="unknown models"):
        plot_compare({"a": ct}, reference={"b": 0.0})
    with pytest.raises(TypeError, match="dict of name to results"):
        plot_compare([ct])
    with pytest.raises(ValueError, match="columns 'log_z' and 'se'"):
        plot_compare(pme.compare({"a": ct}).drop(columns="se"))


def test_inputs_that_are_not_results():
    with pytest.raises(TypeError, match="plot_st_levels needs the results"):
        plot_st_levels({"method": "st"})
    no_group = compat.new_idata({"posterior": xr.Dataset({"x": ("draw", [0.0, 1.0])})})
    with pytest.raises(ValueError, match="no 'log_evidence' group"):
        plot_running_log_z(no_group)
    with pytest.raises(ValueError, match="no 'ct_beta'"):
        plot_beta_trace(_only("ct", log_zeta=0.0))


def test_clear_error_without_matplotlib(monkeypatch, st):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match="need matplotlib"):
        plot_st_levels(st)


def test_no_global_state_changed(ct, st, bar, monkeypatch):
    before = dict(matplotlib.rcParams)
    shown = []
    monkeypatch.setattr(plt, "show", lambda *a, **k: shown.append(1))
    plot_beta_trace(ct)
    plot_running_log_z(st, n_points=4)
    plot_work_overlap(bar)
    plot_st_levels(st)
    plot_compare({"ct": ct})
    assert dict(matplotlib.rcParams) == before and not shown


@pytest.mark.parametrize(
    "module",
    [plots, plots.tempering, plots.evidence, plots.running],
    ids=["init", "tempering", "evidence", "running"],
)
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0 or module in (plots.tempering, plots.running)  # need a run
