"""Forward AIS, reverse AIS, BAR (and the stage raise of AIS and LIS) through sample_evidence,
against exact log Z."""

import warnings

import numpy as np
import pytest

import pymc_evidence as pme
from pymc_evidence.compat import from_netcdf, get_group, to_netcdf
from pymc_evidence.estimators.diagnostics import DIVERGING_FRACTION_MAX
from pymc_evidence.methods.noneq import (
    HEAVY_PARTICLE_FACTOR,
    MAX_PARTICLE_FACTOR,
    MAX_STAGE_FACTOR,
    WORK_SD_MAX,
    ReverseAISOptions,
    more_particles,
    more_stages,
)
from pymc_evidence.results.diagnostics import PARETO_K_MAX
from pymc_evidence.testing import models as tm
from tests._accuracy import assert_below, assert_log_z

SEED = 404


@pytest.fixture(scope="module")
def regression():
    return tm.conjugate_regression(d=5)


@pytest.fixture(scope="module")
def bar_run(regression):
    return pme.sample_evidence(
        regression.model, method="bar", random_seed=SEED, progressbar=False, chains=2
    )


def test_bar_exact_and_bounds(bar_run, regression):
    est = pme.log_evidence(bar_run)
    assert_log_z(est, regression.log_z, abs_tol=0.1, se_max=0.1)
    d = est.diagnostics
    # Stochastic bounds: a generous MC allowance, they must bracket the truth.
    assert d["lower_bound"] <= regression.log_z + 0.02
    assert d["upper_bound"] >= regression.log_z - 0.02
    assert 0 < d["overlap"] <= 1


def test_bar_results_group_round_trip(bar_run, tmp_path):
    group = get_group(bar_run, "log_evidence")
    assert group["work_forward"].dims == ("particle",)
    assert group["beta"].dims == ("stage",) and group["beta"].values[-1] == 1.0
    back = from_netcdf(to_netcdf(bar_run, tmp_path / "bar.nc"))
    assert pme.log_evidence(back).log_z == pme.log_evidence(bar_run).log_z


@pytest.mark.parametrize("method", ["rais"])
def test_one_direction_exact(method, regression):
    idata = pme.sample_evidence(
        regression.model, method=method, random_seed=SEED, progressbar=False, chains=2
    )
    assert_log_z(pme.log_evidence(idata), regression.log_z, abs_tol=0.1, se_max=0.1)


def test_reverse_reuses_user_posterior(bar_run, regression):
    """posterior= skips the internal NUTS run and reuses the user's draws."""
    idata = pme.sample_evidence(
        regression.model, method="rais", posterior=bar_run, random_seed=SEED + 1, progressbar=False
    )
    assert_log_z(pme.log_evidence(idata), regression.log_z, abs_tol=0.1, se_max=0.1)
    np.testing.assert_array_equal(
        get_group(idata, "posterior")["w"].values, get_group(bar_run, "posterior")["w"].values
    )


def test_prior_base_power_posterior():
    """base="prior": particles start from exact prior draws (the power-posterior path)."""
    case = tm.beta_bernoulli()
    idata = pme.sample_evidence(
        case.model, method="ais", base="prior", random_seed=SEED, progressbar=False
    )
    est = pme.log_evidence(idata)
    assert_log_z(est, case.log_z, abs_tol=0.1, se_max=0.1)
    assert get_group(idata, "log_evidence").attrs["base_kind"] == "prior"


@pytest.mark.parametrize("schedule", ["linear", "geometric"])
def test_fixed_schedules(schedule, regression):
    idata = pme.sample_evidence(
        regression.model, method="ais", schedule=schedule, random_seed=SEED, progressbar=False
    )
    assert_log_z(pme.log_evidence(idata), regression.log_z, abs_tol=0.1, se_max=0.1)
    assert get_group(idata, "log_evidence").attrs["schedule"] == schedule


def test_adaptive_schedule_is_recorded_and_frozen(regression):
    """The pilot-chosen schedule: recorded, and the same fixed kernels in both directions."""
    idata = pme.sample_evidence(
        regression.model,
        method="bar",
        schedule="adaptive",
        n_stages=100,
        random_seed=SEED,
        progressbar=False,
        chains=2,
    )
    assert_log_z(pme.log_evidence(idata), regression.log_z, abs_tol=0.1, se_max=0.1)
    group = get_group(idata, "log_evidence")
    assert group.attrs["schedule"] == "adaptive"
    beta = group["beta"].values
    assert beta[0] == 0.0 and beta[-1] == 1.0 and np.all(np.diff(beta) >= 0)
    inner = slice(1, beta.size - 1)
    np.testing.assert_array_equal(
        group["forward_step_sizes"].values[inner], group["reverse_step_sizes"].values[inner]
    )
    assert np.all(np.isfinite(group["forward_step_sizes"].values[inner]))


def test_unknown_schedule(regression):
    with pytest.raises(ValueError, match="schedule must be one of"):
        pme.sample_evidence(regression.model, method="ais", schedule="cosine")


def test_divergent_reference_posterior_warns(regression):
    """Divergences in the draws that start reverse AIS become a warning and a diagnostic."""
    from pymc_evidence.estimators.noneq import works_log_evidence
    from pymc_evidence.methods._particles import run_checks

    rng = np.random.default_rng(0)
    wf, wr = rng.normal(0.5, 1.0, 200), rng.normal(0.5, 1.0, 200)
    with pytest.warns(pme.EvidenceWarning, match="divergent"):
        est = works_log_evidence(wf, wr)  # both works: BAR
        est = run_checks(est, work_f=wf, physical_r=wr, n_div=7.0)
    assert est.diagnostics["n_divergences"] == 7.0
    assert any("divergent" in w for w in est.warnings)


def test_lis_bridged_exact(regression):
    """Bridged LIS (default): forward and reverse runs with the same frozen kernels."""
    idata = pme.sample_evidence(
        regression.model, method="lis", random_seed=SEED, progressbar=False, chains=2
    )
    est = pme.log_evidence(idata)
    assert_log_z(est, regression.log_z, abs_tol=0.1, se_max=0.1)
    group = get_group(idata, "log_evidence")
    assert group.attrs["direction"] == "bridged" and est.method == "lis"
    assert group["log_r_forward"].dims == ("particle",)
    inner = group["forward_step_sizes"].values
    np.testing.assert_array_equal(inner, group["reverse_step_sizes"].values)
    # unbridged estimates bracket the truth up to Monte Carlo error
    assert_below(est.diagnostics["log_z_forward"], regression.log_z, est.se, slack=0.1)


def test_lis_forward_prior_base():
    case = tm.beta_bernoulli()
    idata = pme.sample_evidence(
        case.model,
        method="lis",
        direction="forward",
        base="prior",
        random_seed=SEED,
        progressbar=False,
    )
    assert_log_z(pme.log_evidence(idata), case.log_z, abs_tol=0.1, se_max=0.1)
    assert "sample_stats" not in pme.compat.group_names(idata)


def test_lis_bad_direction(regression):
    with pytest.raises(ValueError, match="direction must be one of"):
        pme.sample_evidence(regression.model, method="lis", direction="sideways")


def test_diverging_kernels_warn_on_the_funnel():
    """Centred funnel kept as written (``reparam=None``): AIS's fixed-step HMC trajectories
    diverge in the neck, and the method says so."""
    case = tm.hierarchical_normal(J=8, centered=True)
    with pytest.warns(pme.EvidenceWarning, match="trajectories diverged"):
        idata = pme.sample_evidence(
            case.model, method="ais", random_seed=SEED, progressbar=False, reparam=None,
            n_particles=64, n_stages=50, max_stages=50,
        )  # fmt: skip
    assert pme.log_evidence(idata).diagnostics["diverging_fraction"] > 0.01


def test_fitted_base_on_a_kept_funnel_warns():
    """SMC settles its step before each stage, so few trajectories diverge even in a funnel's
    neck; what biases it there is a fitted base (0.13-0.20 nats low on eight schools as
    written), and that is what the warning names."""
    case = tm.hierarchical_normal(J=8, centered=True)
    with pytest.warns(pme.BaseFitWarning, match="centred scales"):
        pme.sample_evidence(
            case.model, method="smc", random_seed=SEED, progressbar=False, reparam=None,
            base="fullrank_advi", n_particles=200, n_runs=2,
        )  # fmt: skip


@pytest.mark.parametrize("reparam", ["auto", None])
def test_funnel_at_defaults_is_right_without_divergence_warnings(reparam):
    """Eight schools at the defaults (non-centred form) and as written (annealed from the
    prior): right, and the step settled before each stage keeps the diverging trajectories
    far below the warning level (reparametrised, seeds 404 and 1-3: 0.06-0.18 %; before
    the settling 1.7-7 %, and bimodal, ring and prior-conflict runs warned every time)."""
    case = tm.hierarchical_normal(J=8, centered=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", pme.SamplingWarning)
        idata = pme.sample_evidence(
            case.model, method="smc", random_seed=SEED, progressbar=False, reparam=reparam
        )
    est = pme.log_evidence(idata)
    assert_log_z(est, case.log_z, abs_tol=0.1, se_max=0.1)
    assert est.diagnostics["diverging_fraction"] < DIVERGING_FRACTION_MAX / 2


def test_no_divergence_warning_on_a_regression(bar_run):
    est = pme.log_evidence(bar_run)
    assert est.diagnostics["nonfinite_fraction"] == 0.0
    assert est.diagnostics["diverging_fraction"] < 0.01
    assert not any("not finite" in w or "diverged" in w for w in est.warnings)


def _start(chain):
    from pymc_evidence.methods._particles import ReverseStart

    chain = np.asarray(chain)
    return ReverseStart(np.zeros((chain.size, 1)), None, None, chain=chain)


def test_chain_spread_widens_the_se_when_the_chains_disagree():
    from pymc_evidence.estimators.record import EvidenceEstimate
    from pymc_evidence.methods._particles import with_chain_spread

    chain = np.repeat([0, 1, 2, 3], 50)
    values = np.where(chain == 0, 1.0, 0.0)  # one chain sits in another mode
    est = EvidenceEstimate(log_z=0.25, se=0.01, method="rais")
    out, messages = with_chain_spread(est, _start(chain), lambda keep: values[keep].mean())
    # leave-one-out means: 0 once, 1/3 three times -> (3/4 * 3 * (1/12)^2 ... ) ** 0.5
    theta = np.array([0.0, 1 / 3, 1 / 3, 1 / 3])
    expected = np.sqrt(3 / 4 * np.sum((theta - theta.mean()) ** 2))
    assert out.se == pytest.approx(expected) and out.log_z == est.log_z
    assert out.diagnostics["runs_se"] == 0.01 and len(messages) == 1
    assert "separate modes" in str(messages[0])

    agree = np.zeros(chain.size)
    same, messages = with_chain_spread(est, _start(chain), lambda keep: agree[keep].mean())
    assert same.se == est.se and same.diagnostics["chain_jackknife_se"] == 0.0 and not messages
    alone, messages = with_chain_spread(est, _start(np.zeros(10, int)), lambda keep: 0.0)
    assert alone is est and not messages  # one chain: nothing to compare
    exact = EvidenceEstimate(log_z=0.25, se=0.0, method="rais")  # base = posterior
    noise = 1e-15 * (chain == 0)
    same, messages = with_chain_spread(exact, _start(chain), lambda keep: 0.25 + noise[keep].sum())
    assert same.se == 0.0 and not messages  # floating-point noise is not a disagreement
    wide, messages = with_chain_spread(exact, _start(chain), lambda keep: values[keep].mean())
    assert wide.se == pytest.approx(expected) and len(messages) == 1


@pytest.mark.heavy
def test_reverse_runs_from_chains_in_separate_shells_get_their_spread():
    """Two thin shells: NUTS chains split between them (four chains 3 : 1 gave rais
    -0.242 +- 0.076 at seed 1 before the chain jackknife), and the reverse runs' own spread
    misses it. The chains start on the shells, six on one and two on the other, so that the
    split does not hang on where the chains happen to go (a thin shell keeps its chain)."""
    from pymc_evidence.testing import gaussian_shells

    system = gaussian_shells()  # its base: 7 separated modes on PyMC 6, so 8 chains
    on_shell = [np.array([sign * 1.5, 0.0, 0.0, 0.0, 0.0]) for sign in (-1,) * 6 + (1,) * 2]
    with pytest.warns(pme.CrossCheckWarning, match="separate modes"):
        idata = pme.sample_evidence(
            system.model, method="rais", random_seed=1, progressbar=False, chains=8,
            initvals=[{"x": x} for x in on_shell],
        )  # fmt: skip
    est = pme.log_evidence(idata)
    assert abs(est.log_z - system.log_z) < 2 * est.se
    assert est.diagnostics["chain_jackknife_se"] > 2 * est.diagnostics["runs_se"]


def test_reverse_methods_refuse_more_modes_than_chains():
    """rais, bar and lis start from NUTS chains, each of which keeps its mode: a base with
    more separated modes than chains is refused before any NUTS sampling (the egg-box's 18
    modes, 4 chains: rais -0.339 +- 0.235 at seed 1), naming smc; the user's own draws run."""
    from types import SimpleNamespace

    from pymc_evidence.base import GaussianBase, MixtureBase
    from pymc_evidence.basefit.pipeline import BaseFit
    from pymc_evidence.methods._nuts import refuse_modes_beyond_chains, separated_modes

    def mixture(k, small=0):
        weights = np.r_[np.ones(k), np.full(small, 1e-3)]
        n = k + small
        return MixtureBase(np.log(weights), np.zeros((n, 1)), np.ones((n, 1, 1)), log_zeta=0.0)

    merged = GaussianBase.from_moments(
        np.zeros(1), np.eye(1), log_zeta=0.0, kind="merged",
        component_log_zeta=[0.0] * 6 + [-10.0],
    )  # fmt: skip
    assert [separated_modes(b) for b in (mixture(4, small=5), merged)] == [4, 6]

    def problem(base, chains=4):
        return SimpleNamespace(fitted=BaseFit.given(base), sampling=SimpleNamespace(chains=chains))

    plain, given = ReverseAISOptions(), ReverseAISOptions(posterior=object())
    refuse_modes_beyond_chains(problem(mixture(4, small=5)), plain)
    refuse_modes_beyond_chains(problem(mixture(5), chains=5), plain)
    refuse_modes_beyond_chains(problem(mixture(5)), given)  # the user's
    for base in (mixture(5), merged):
        with pytest.raises(ValueError, match="method='smc'"):
            refuse_modes_beyond_chains(problem(base), plain)

    system = pme.testing.egg_box()
    for method in ("rais", "lis"):
        with pytest.raises(ValueError, match="separated modes"):
            pme.sample_evidence(system.model, method=method, random_seed=1, progressbar=False)
    forward = pme.sample_evidence(
        system.model, method="lis", direction="forward", random_seed=1, progressbar=False
    )  # forward links start from the base: not refused
    assert np.isfinite(pme.log_evidence(forward).log_z)


def test_ais_anneals_again_with_more_stages_where_works_spread(regression):
    """10 stages from the prior: the forward works spread by several nats, so the runs are
    repeated with 16 times the stages (the most), which brings the exact log Z within its
    se; with ``max_stages=10`` the 10-stage estimate stays (about -0.8 +- 0.5 at seed 1)."""
    assert more_stages(3.0, 200, 3200) == 800 and more_stages(WORK_SD_MAX, 200, 3200) is None
    assert more_stages(30.0, 200, 10_000) == 200 * MAX_STAGE_FACTOR
    runs = {}
    for top in (3200, 10):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            runs[top] = pme.sample_evidence(
                regression.model,
                method="ais",
                base="prior",
                n_stages=10,
                max_stages=top,
                random_seed=1,
                progressbar=False,
            )
    stages = {top: get_group(out, "log_evidence").attrs["n_stages"] for top, out in runs.items()}
    assert stages == {3200: 160, 10: 10}
    assert_log_z(pme.log_evidence(runs[3200]), regression.log_z, abs_tol=0.3, label="raised")
    assert pme.log_evidence(runs[10]).se > 2 * pme.log_evidence(runs[3200]).se


def test_ais_takes_more_particles_where_more_stages_leave_the_works_wide():
    """exp(s^2 - 1.5^2) times the particles (2 to 16 times, at most ``max_particles``) where
    the works still spread by s > 1.5 nats after the stages were raised, at least 4 times
    where their weights are heavy-tailed (Pareto k-hat above 0.7)."""
    assert more_particles(WORK_SD_MAX, 256, 1024) is None
    assert more_particles(1.0, 256, 4096, khat=PARETO_K_MAX) is None
    assert more_particles(1.0, 256, 4096, khat=1.3) == 256 * HEAVY_PARTICLE_FACTOR
    assert more_particles(1.6, 256, 1024) == 512  # at least twice
    assert more_particles(1.9, 100, 10_000) == int(np.ceil(100 * np.exp(1.9**2 - 1.5**2)))
    assert more_particles(5.0, 100, 10_000) == 100 * MAX_PARTICLE_FACTOR
    assert more_particles(5.0, 256, 1024) == 1024 and more_particles(5.0, 1024, 1024) is None
    assert more_particles(float("nan"), 256, 1024) is None  # left to the checks
    with pytest.raises(ValueError, match="max_particles"):
        pme.sample_evidence(tm.conjugate_regression().model, method="ais", max_particles=1)


def test_ais_on_the_gaussian_shells_with_more_particles():
    """Seven modes in the base. The works spread by 2.2-2.4 nats after 496 stages, or less
    than 1.5 nats with weights still heavy-tailed (Pareto k-hat 1.32: 256 particles gave
    +0.198 +- 0.111 on the packages of 2026-12-02); 1024 give the exact log Z within 0.15.
    PyMC 5's base needs 1541 stages, after which the works spread less than 1.5 nats and 256
    particles are right (-0.010 +- 0.063): more particles only where the runs ask."""
    from pymc_evidence.testing import gaussian_shells

    system = gaussian_shells()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pme.sample_evidence(system.model, method="ais", random_seed=1, progressbar=False)
    group = get_group(idata, "log_evidence")
    if group.attrs["n_particles"] == 256:
        assert float(group["diag_sd_work"]) <= WORK_SD_MAX
        assert float(group["diag_pareto_k_forward"]) <= PARETO_K_MAX
    else:
        assert group.attrs["n_particles"] == 1024
    assert_log_z(pme.log_evidence(idata), system.log_z, abs_tol=0.15, label="shells ais")
    assert pme.log_evidence(idata).se <= 0.15


def test_lis_links_again_with_more_links_where_log_weights_spread(regression):
    """Three links from the prior: the log weights spread, so the runs are repeated with 16
    times the links (48); ``max_stages=3`` keeps the three (about +0.10 +- 0.16)."""
    runs = {}
    for top in (80, 3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            runs[top] = pme.sample_evidence(
                regression.model, method="lis", base="prior", n_stages=3, max_stages=top,
                random_seed=1, progressbar=False,
            )  # fmt: skip
    stages = {top: get_group(out, "log_evidence").attrs["n_stages"] for top, out in runs.items()}
    assert stages == {80: 48, 3: 3}
    assert_log_z(pme.log_evidence(runs[80]), regression.log_z, abs_tol=0.15, label="more links")
    assert pme.log_evidence(runs[3]).se > 2 * pme.log_evidence(runs[80]).se
