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
from pymc_evidence.plots import (  # noqa: E402
    plot_beta_trace,
    plot_compare,
    plot_running_log_z,
    plot_st_levels,
    plot_work_overlap,
)
from pymc_evidence.results import GROUP, estimate_to_dataset  # noqa: E402

Y = np.array([0.3, -0.5])
COV = np.eye(2) + 1.0  # y ~ N(0, I + 11'): mu ~ N(0, 1), y_i | mu ~ N(mu, 1)
EXACT = float(-0.5 * Y @ np.linalg.solve(COV, Y) - 0.5 * np.linalg.slogdet(2 * np.pi * COV)[1])
SMALL = {"draws": 200, "tune": 200, "chains": 2, "random_seed": 0, "progressbar": False}
FAST_BASE = {"base_kwargs": {"restarts": 2}}
OPTIONS = {
    "ct": {"adapt_rounds": 1, "adapt_draws": 200, "adapt_tune": 200, **FAST_BASE},
    "st": FAST_BASE,
    "bar": {"n_particles": 64, "n_stages": 30, **FAST_BASE},
}


def _run(method):
    with pm.Model(), warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        mu = pm.Normal("mu", 0, 1)
        pm.Normal("y", mu, 1, observed=Y)
        return pme.sample_evidence(method=method, **SMALL, **OPTIONS[method])


@pytest.fixture(scope="module")
def ct():
    return _run("ct")


@pytest.fixture(scope="module")
def st():
    return _run("st")


@pytest.fixture(scope="module")
def bar():
    return _run("bar")


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
        assert beta.size == SMALL["draws"] and 0.0 <= beta.min() and beta.max() <= 1.0
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


@pytest.mark.parametrize("name", ["ct", "st", "bar", "ais", "rais"])
def test_running_log_z_ends_at_the_stored_estimate(name, request):
    idata = request.getfixturevalue(name)
    ax = plot_running_log_z(idata, n_points=12, reference=EXACT)
    est = pme.log_evidence(idata)
    (line,) = [line for line in ax.get_lines() if line.get_label() == "running estimate"]
    assert 2 <= line.get_xdata().size <= 12 and np.all(np.diff(line.get_xdata()) > 0)
    assert line.get_ydata()[-1] == pytest.approx(est.log_z, abs=1e-10)
    assert len(ax.collections) == 1  # the band
    band = ax.collections[0].get_paths()[0].vertices[:, 1]
    assert band.max() - band.min() > 0.0
    assert _labels(ax) == ["± 2 se", "running estimate", "final estimate", "reference"]
    assert ax.get_ylabel() == "log Z" and name in ax.get_title()


def test_running_log_z_after_netcdf_round_trip(ct, tmp_path):
    idata = compat.from_netcdf(compat.to_netcdf(ct, tmp_path / "ct.nc"))
    ax = plot_running_log_z(idata, n_points=5)
    assert ax.get_lines()[0].get_ydata()[-1] == pytest.approx(pme.log_evidence(ct).log_z)


def test_running_log_z_rejects_methods_without_raw_quantities():
    with pytest.raises(ValueError, match="plot_running_log_z handles .* not 'bridge'"):
        plot_running_log_z(_only("bridge"))


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


def test_compare_nested_with_reference(ct, st, bar):
    results = {"normal": {"ct": ct, "st": st, "bar": bar}, "shifted": {"ct": _only("ct")}}
    ax = plot_compare(results, reference={"normal": EXACT})
    assert [t.get_text() for t in ax.get_yticklabels()] == ["normal", "shifted"]
    assert len(ax.containers) == 4  # one error bar per estimate
    assert sorted(_labels(ax)) == ["bar", "ct", "exact", "st"]
    first = ax.containers[0].lines[0].get_xydata()[0]
    assert first[0] == pytest.approx(pme.log_evidence(ct).log_z) and first[1] < 0.0
    assert ax.get_xlabel() == "log Z (± 2 se)"


def test_compare_flat_dict_and_table(ct, st):
    flat = plot_compare({"a": ct, "b": pme.log_evidence(st)}, k=1)
    assert [t.get_text() for t in flat.get_yticklabels()] == ["a", "b"]
    assert flat.get_xlabel() == "log Z (± 1 se)"
    with pytest.warns(UserWarning, match="different methods"):
        table = pme.compare({"a": ct, "b": st})
    ax = plot_compare(table)
    assert [t.get_text() for t in ax.get_yticklabels()] == list(table.index)
    ys = [container.lines[0].get_xydata()[0, 1] for container in ax.containers]
    assert ys == [0.0, 1.0]  # one estimate per model sits on its tick


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
    "module", [plots, plots.tempering, plots.evidence], ids=["init", "tempering", "evidence"]
)
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0 or module is plots.tempering  # its examples all need a run
