"""Resample-move SMC and ARM: pure estimators, the engine and the methods, against exact log Z."""

import warnings

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
import xarray as xr
from scipy.special import logsumexp

import pymc_evidence as pme
from pymc_evidence.base import GaussianBase, fit_base
from pymc_evidence.compat import from_netcdf, get_group, to_netcdf
from pymc_evidence.engines import init_state
from pymc_evidence.engines.batched import batched_log_densities
from pymc_evidence.engines.smc import SMCSettings, run_resample_move
from pymc_evidence.engines.smc_kernel import MIN_REFRESH, UNMOVED_SHARE
from pymc_evidence.estimators.diagnostics import EvidenceWarning
from pymc_evidence.estimators.logspace import kish_ess, residual_resample, systematic_resample
from pymc_evidence.estimators.smc import (
    conditional_ess,
    increment_variance,
    log_increment,
    merge_log_weights,
    next_beta,
    smc_log_evidence,
)
from pymc_evidence.testing import models as tm
from tests._accuracy import assert_log_z

SEED = 505
COARSE = np.array([0.0, 0.01, 0.1, 1.0])  # a fixed schedule whose later steps are hard


# ---------------------------------------------------------------- pure estimators


@pytest.mark.parametrize("resample", [systematic_resample, residual_resample])
def test_resampling_counts_are_unbiased(resample):
    """E[count_r] = n_out * w_r, also when n_out differs from the input size."""
    rng = np.random.default_rng(0)
    w = np.array([0.41, 0.29, 0.17, 0.08, 0.05])
    n_out, reps = 7, 4000
    counts = np.array(
        [np.bincount(resample(np.log(w), n_out, rng), minlength=5) for _ in range(reps)]
    )
    assert np.all(counts.sum(axis=1) == n_out)
    mean, sd = counts.mean(axis=0), counts.std(axis=0, ddof=1) / np.sqrt(reps)
    assert np.all(np.abs(mean - n_out * w) <= 5 * sd + 1e-12), (mean, n_out * w)
    # both schemes keep every count within one of its expectation's floor / ceiling
    assert np.all(counts >= np.floor(n_out * w)) and np.all(counts <= np.ceil(n_out * w) + 1)


def test_residual_deterministic_part():
    idx = residual_resample(np.log([0.5, 0.3, 0.2]), 10, np.random.default_rng(1))
    assert np.bincount(idx, minlength=3).tolist() == [5, 3, 2]


def test_merge_proposition_1():
    """Two weighted sets targeting N(0, 1) merge, by counts, into one that still does."""
    rng = np.random.default_rng(2)
    a = rng.normal(size=4000)  # exact draws, equal weights
    b = rng.normal(0.0, 2.0, size=12000)  # importance weights N(0,1) / N(0,4)
    log_wb = -0.5 * b**2 + 0.5 * (b / 2.0) ** 2
    la, lb = merge_log_weights([np.zeros(a.size), log_wb])
    assert np.isclose(np.exp(logsumexp(la)), 0.25) and np.isclose(np.exp(logsumexp(lb)), 0.75)
    x, w = np.concatenate([a, b]), np.exp(np.concatenate([la, lb]))
    assert np.isclose(w.sum(), 1.0)
    n_eff = kish_ess(np.log(w))
    for phi, truth, var in ((x, 0.0, 1.0), (x**2, 1.0, 2.0), (np.cos(x), np.exp(-0.5), 0.2)):
        assert abs(w @ phi - truth) < 5 * np.sqrt(var / n_eff), phi[:3]


def test_next_beta_hits_target_conditional_ess():
    rng = np.random.default_rng(3)
    log_ratio = 3.0 * rng.normal(size=3000)
    log_w = rng.normal(scale=0.3, size=3000)
    for target in (0.3, 0.8, 0.95):
        beta = next_beta(0.2, log_ratio, log_w, target)
        assert 0.2 < beta < 1.0
        cess = conditional_ess(log_w, (beta - 0.2) * log_ratio) / log_ratio.size
        assert abs(cess - target) < 1e-8, (target, cess)
    assert next_beta(0.2, 1e-3 * log_ratio, log_w, 0.8) == 1.0


def test_conditional_ess_and_increment_with_equal_weights():
    """CESS = Kish ESS and (1/R) sum (W - m)^2 / m^2 = R / R_eff - 1 for equal weights."""
    rng = np.random.default_rng(4)
    log_incr = rng.normal(size=500)
    cess = conditional_ess(np.zeros(500), log_incr)
    assert np.isclose(cess, kish_ess(log_incr))
    w = np.exp(log_incr)
    assert np.isclose(np.mean((w - w.mean()) ** 2) / w.mean() ** 2, 500 / cess - 1)
    assert np.isclose(log_increment(np.full(500, 7.0), log_incr), np.log(w.mean()))


def test_variance_proxy_matches_iid_variance():
    """i.i.d. lognormal W: Var(log Zhat) = S v / R with v = exp(s^2) - 1; the proxy agrees."""
    rng = np.random.default_rng(5)
    n_stages, r, s, reps = 4, 400, 0.6, 1500
    log_w = s * rng.normal(size=(reps, n_stages, r))
    log_z = np.sum(logsumexp(log_w, axis=2) - np.log(r), axis=1)
    flat = np.zeros(r)
    proxy = np.array([sum(increment_variance(flat, lw) for lw in run) for run in log_w])
    exact = n_stages * np.expm1(s**2) / r
    assert abs(np.mean(proxy) / exact - 1) < 0.05
    assert abs(np.var(log_z, ddof=1) / exact - 1) < 0.15  # 1500 reps: sd of the ratio ~ 0.04


def test_increment_variance_with_unequal_incoming_weights():
    """Incoming weights from importance sampling N(0, 1) with N(0, 3^2) draws (Kish ESS
    ~46 %), increment exp(-delta x^2 / 2): the spread of log Zhat over repeats matches the
    mean of the delta-method variance (the conditional ESS's (R / CESS - 1) / R is half of
    it), and the estimate its exact value -log(1 + delta) / 2."""
    rng = np.random.default_rng(11)
    r, reps, delta, scale = 300, 2000, 3.0, 3.0
    x = scale * rng.normal(size=(reps, r))
    log_w = -0.5 * x**2 + 0.5 * (x / scale) ** 2
    log_incr = -0.5 * delta * x**2
    est = np.array([log_increment(w, i) for w, i in zip(log_w, log_incr, strict=True)])
    var = np.array([increment_variance(w, i) for w, i in zip(log_w, log_incr, strict=True)])
    assert abs(np.mean(est) + 0.5 * np.log1p(delta)) < 4 * np.std(est) / np.sqrt(reps) + 1e-3
    assert abs(np.var(est, ddof=1) / np.mean(var) - 1) < 0.12  # 2000 reps: sd ~ 0.035
    assert abs(conditional_ess(np.zeros(r), log_incr[0]) - kish_ess(log_incr[0])) < 1e-9
    flat = increment_variance(np.zeros(r), log_incr[0])
    assert np.isclose(flat, 1 / kish_ess(log_incr[0]) - 1 / r)


def test_smc_log_evidence_record_and_single_run():
    log_z = np.array([-3.1, -3.0, -2.95, -3.05])
    est = smc_log_evidence(log_z, np.full(4, 0.01), method="arm")
    z = np.exp(log_z - est.log_z)
    assert np.isclose(est.log_z, np.log(np.mean(np.exp(log_z))))
    spread = np.std(z, ddof=1) / 2  # 0.032, below the proxy's 0.05
    assert np.isclose(est.diagnostics["spread_se"], spread) and est.method == "arm"
    assert np.isclose(est.diagnostics["proxy_se"], 0.05)
    # pooled: 3 dof of spread, 2 of proxy; widened by t_5 / z (2.570582 / 1.959964)
    pooled = np.sqrt((3 * spread**2 + 2 * 0.05**2) / 5)  # 0.041, then 0.054
    assert np.isclose(est.se, pooled * 2.570582 / 1.959964)
    tight = smc_log_evidence(log_z * 0.1, np.full(4, 0.01))  # widened pooled 0.044: proxy floors
    assert np.isclose(tight.se, 0.05)
    bare = smc_log_evidence(log_z)  # no proxy: the spread, widened for its 3 dof (t_3 / z)
    assert np.isclose(bare.se, spread * 3.182446 / 1.959964)
    np.testing.assert_allclose(est.per_chain_se, 0.1)
    with pytest.warns(EvidenceWarning, match="single SMC run"):
        one = smc_log_evidence([-3.0])
    assert np.isnan(one.se)
    with pytest.raises(ValueError):
        smc_log_evidence([np.nan, -3.0])


# ---------------------------------------------------------------- engine


@pytest.fixture(scope="module")
def toy():
    """mu ~ N(0, 1), y ~ N(mu, 1), y = 0.5: posterior N(0.25, 0.5), log Z exact."""
    with pm.Model() as model:
        mu = pm.Normal("mu", np.float64(0.0), np.float64(1.0))
        pm.Normal("y", mu, np.float64(1.0), observed=np.array([0.5]))
    log_z = -0.5 * np.log(2 * np.pi * 2) - 0.25 * 0.5**2
    return model, log_z


def test_engine_exact_when_base_is_the_posterior(toy):
    """log f - log q is constant: every increment is exact, gamma = 1, no expansion."""
    model, log_z = toy
    base = GaussianBase(np.array([0.25]), np.sqrt([[0.5]]), log_zeta=0.0, kind="moments")
    density = batched_log_densities(model, base)
    rng = np.random.default_rng(SEED)
    settings = SMCSettings(schedule=COARSE, arm=True, n_moves=1)
    value, info = run_resample_move(density, base.sample(200, rng), rng, settings)
    assert abs(value - log_z) < 1e-10
    np.testing.assert_allclose(info.gamma[1:], 1.0)
    assert np.all(info.n_particles == 200) and info.variance_proxy < 1e-20


def test_engine_determinism_and_arm_off_reproduces_smc(toy):
    model, _ = toy
    base = GaussianBase(np.zeros(1), np.eye(1), log_zeta=0.0, kind="moments")
    density = batched_log_densities(model, base)

    def run(**kwargs):
        rng = np.random.default_rng(SEED)
        return run_resample_move(density, base.sample(100, rng), rng, SMCSettings(**kwargs))

    plain, _ = run(schedule=COARSE)
    assert run(schedule=COARSE)[0] == plain
    assert run(schedule=COARSE, arm=True, arm_threshold=0.0)[0] == plain
    assert run(schedule=COARSE, arm=True, max_expansions=0)[0] == plain


def test_moves_continue_while_the_log_ratio_is_correlated(toy):
    """Tiny steps leave log f - log q correlated with its start: moves go on to max_moves;
    decorrelation=1 (always met) or max_moves=n_moves stop at n_moves. The last move, at
    beta = 1, only parts the copies resampling made (MIN_REFRESH steps here)."""
    model, _ = toy
    base = GaussianBase(np.zeros(1), np.eye(1), log_zeta=0.0, kind="moments")
    density = batched_log_densities(model, base)

    def moves(**kwargs):
        rng = np.random.default_rng(SEED)
        settings = SMCSettings(schedule=COARSE, n_moves=3, **{"n_leapfrog": 1, **kwargs})
        _, info = run_resample_move(density, base.sample(200, rng), rng, settings)
        return info.n_moves

    tiny = moves(step_size=1e-4, step_gain=0.0, max_moves=13)
    assert tiny[0] == 0 and np.all(tiny[1:-1] == 13) and tiny[-1] == MIN_REFRESH, tiny
    loose = moves(step_size=1e-4, step_gain=0.0, max_moves=13, decorrelation=1.0)
    assert np.all(loose[1:-1] == 3)
    assert np.all(moves(max_moves=3)[1:-1] == 3)
    # well-sized steps decorrelate a 1-d Gaussian within the first block
    assert np.all(moves(max_moves=50, n_leapfrog=10)[1:] <= 8)


def _correlated(rho: float):
    """A ``N(0, 10^2)`` prior on two coordinates times a Gaussian likelihood of
    correlation ``rho``: the posterior of two confounded coordinates, and its covariance."""
    prec = np.linalg.inv([[1.0, rho], [rho, 1.0]])
    with pm.Model() as model:
        x = pm.Normal("x", 0.0, 10.0, shape=2)
        pm.Potential("lik", -0.5 * pt.dot(x, pt.dot(prec, x)))
    return model, np.linalg.inv(prec + np.eye(2) / 100.0)


def test_dense_inverse_mass_keeps_the_target_and_mixes_correlated_coordinates():
    """HMC with the Cholesky factor of the particles' covariance as its scale leaves a
    correlation of 0.995 invariant (the moments of exact draws after 20 steps) and moves
    along the long axis in three steps, where the per-coordinate scale, its step held
    down by the narrow axis, barely moves; SMC's moves take the dense scale up to
    ``dense_max_dim`` dimensions."""
    from pymc_evidence.engines.hmc import hmc_step as step
    from pymc_evidence.engines.smc_kernel import DENSE_ESS_PER_DIM, Kernel, dense_spread

    model, cov = _correlated(0.995)
    base = GaussianBase(np.zeros(2), np.linalg.cholesky(cov), log_zeta=0.0, kind="moments")
    density = batched_log_densities(model, base)
    rng = np.random.default_rng(SEED)
    start = init_state(base.sample(4000, rng), density)
    chol = dense_spread(start.x, np.zeros(4000), None)
    state = start
    for _ in range(20):
        state, info = step(state, 1.0, density, 0.8, 5, rng, chol)
    assert np.mean(info.acceptance) > 0.6
    np.testing.assert_allclose(np.cov(state.x.T), cov, atol=0.07)

    def long_axis_memory(scale, eps):
        moved = start
        for _ in range(3):
            moved, info = step(moved, 1.0, density, eps, 5, np.random.default_rng(2), scale)
        assert np.mean(info.acceptance) > 0.6
        long = np.array([1.0, 1.0]) / np.sqrt(2.0)
        return np.corrcoef(start.x @ long, moved.x @ long)[0, 1]

    sd = np.sqrt(np.diag(cov))
    assert long_axis_memory(chol, 0.8) < 0.3 < 0.8 < long_axis_memory(sd, 0.05)
    # too few effective particles for a covariance: the per-coordinate scale
    few = np.full(4000, -np.inf)
    few[: DENSE_ESS_PER_DIM * 2 - 1] = 0.0
    diag = dense_spread(state.x, few, None)
    assert np.count_nonzero(diag - np.diag(np.diag(diag))) == 0
    kernel = Kernel(density, SMCSettings(dense_max_dim=2))
    assert kernel.scale_of(start.x, np.zeros(4000), None).shape == (2, 2)
    kernel = Kernel(density, SMCSettings(dense_max_dim=1))
    assert kernel.scale_of(start.x, np.zeros(4000), None).shape == (2,)


def test_last_move_parts_the_copies(toy):
    """After the last resampling the particles are copies of fewer positions; the move at
    beta = 1 goes on until all but UNMOVED_SHARE of them have left theirs."""
    model, _ = toy
    base = GaussianBase(np.zeros(1), np.eye(1), log_zeta=0.0, kind="moments")
    density = batched_log_densities(model, base)
    rng = np.random.default_rng(SEED)
    _, info = run_resample_move(density, base.sample(400, rng), rng, SMCSettings(schedule=COARSE))
    assert MIN_REFRESH <= info.n_moves[-1] <= SMCSettings().n_moves
    assert np.unique(info.x).size >= (1 - UNMOVED_SHARE) * 400 - 1


def test_last_move_moves_only_the_copies(toy):
    """The move at beta = 1 moves the copies resampling made and nothing else: none when
    the base is the posterior (equal weights: the particles are the base's draws), fewer
    than every particle otherwise."""
    model, _ = toy
    exact = GaussianBase(np.array([0.25]), np.sqrt([[0.5]]), log_zeta=0.0, kind="moments")
    rng = np.random.default_rng(SEED)
    x0 = exact.sample(300, rng)
    density = batched_log_densities(model, exact)
    _, info = run_resample_move(density, x0, rng, SMCSettings(schedule=[0.0, 1.0]))
    assert info.n_moves[-1] == 0 and info.n_particle_moves == 0
    np.testing.assert_array_equal(info.x, x0)

    wide = GaussianBase(np.zeros(1), np.eye(1), log_zeta=0.0, kind="moments")
    density = batched_log_densities(model, wide)
    _, info = run_resample_move(
        density, wide.sample(300, rng), rng, SMCSettings(schedule=[0.0, 1.0])
    )
    assert info.n_moves[-1] >= MIN_REFRESH
    assert 0 < info.n_particle_moves < 300 * info.n_moves[-1] / 2


def test_moves_after_the_last_reweighting_are_counted_apart(toy):
    """What the moves at ``beta = 1`` meet touches the draws, not log Z: the run keeps their
    counts apart (``posterior_counts``), and a diverging share of them gets its own
    warning, which says the evidence is not affected."""
    model, _ = toy
    base = GaussianBase(np.zeros(1), np.eye(1), log_zeta=0.0, kind="moments")
    density = batched_log_densities(model, base)

    def run(**kwargs):
        rng = np.random.default_rng(SEED)
        settings = SMCSettings(schedule=COARSE, **kwargs)
        return run_resample_move(density, base.sample(200, rng), rng, settings)[1]

    plain, moved = run(), run(posterior_moves=3)
    assert moved.counts == plain.counts  # the stages met the same points
    extra = moved.posterior_counts.n_trajectories - plain.posterior_counts.n_trajectories
    assert extra == 3 * 200 and moved.n_density_calls > plain.n_density_calls
    assert plain.posterior_counts.n_trajectories > 0  # the copies' refresh
    from pymc_evidence.estimators.diagnostics import SamplingWarning, evidence_messages

    (message,) = evidence_messages({"posterior_diverging_fraction": 0.05}, 0.01)
    assert message.category is SamplingWarning and "evidence is not affected" in message
    assert not evidence_messages({"posterior_diverging_fraction": 0.01}, 0.01)


def test_settings_are_checked(toy):
    for bad in (
        {"schedule": "geometric"},
        {"schedule": [0.0, 0.5]},
        {"schedule": [0.0, 0.6, 0.5, 1.0]},
        {"target_ess": 1.0},
        {"resampling": "multinomial"},
        {"n_moves": 0},
        {"n_moves": 10, "max_moves": 5},
        {"decorrelation": 1.5},
    ):
        with pytest.raises(ValueError):
            SMCSettings(**bad).checked_schedule()
    with pytest.raises(ValueError, match="unknown method 'smc2'; did you mean 'smc'"):
        pme.sample_evidence(toy[0], "smc2", n_runs=2, random_seed=1, progressbar=False)
    with pytest.raises(ValueError, match="unknown method 'xyz'; the methods are 'ct'"):
        pme.sample_evidence(toy[0], "xyz", random_seed=1, progressbar=False)


# ---------------------------------------------------------------- end to end


def _estimate(model, method, **kwargs):
    options = dict(n_particles=500, n_runs=4, cores=None, random_seed=SEED, progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        idata = pme.sample_evidence(model, method, **{**options, **kwargs})
    return idata, pme.log_evidence(idata)


@pytest.fixture(scope="module")
def regression():
    return tm.conjugate_regression(d=5)


@pytest.fixture(scope="module")
def bernoulli():
    return tm.beta_bernoulli()


@pytest.fixture(scope="module")
def advi_bases(regression, bernoulli):
    """One quick ADVI fit per model (the default has 8 restarts; see the slow test)."""
    return {
        case.name: fit_base("advi", model=case.model, random_seed=SEED, n_steps=2000)
        for case in (regression, bernoulli)
    }


@pytest.mark.parametrize("name", ["regression", "bernoulli"])
@pytest.mark.parametrize("base", ["prior", "advi"])
def test_smc_exact_models(name, base, request, advi_bases):
    case = request.getfixturevalue(name)
    base = advi_bases[case.name] if base == "advi" else base
    _, est = _estimate(case.model, "smc", base=base)
    assert_log_z(est, case.log_z, abs_tol=0.1, se_max=0.1)


def test_smc_results_group(regression, tmp_path):
    idata, est = _estimate(regression.model, "smc", base="prior", n_particles=300, n_runs=3)
    group = get_group(idata, "log_evidence")
    assert group.attrs["method"] == "smc" and group.attrs["schedule"] == "pilot"
    assert group.attrs["pilot_particles"] == 75  # n_particles // 4
    # every run follows the pilot's schedule
    np.testing.assert_array_equal(group["beta"].values, group["beta"].values[[0, 0, 0]])
    np.testing.assert_array_equal(group["beta"].values[0], group.attrs["schedule_betas"])
    assert group["log_marginal_likelihood_chain"].dims == ("run",) and group.sizes["run"] == 3
    for key in ("beta", "log_increment", "ess", "n_particles", "acceptance"):
        assert group[key].dims == ("run", "stage")
    beta = group["beta"].values
    assert np.all(np.nanmax(beta, axis=1) == 1.0) and np.all(beta[:, 0] == 0.0)
    # per-run log Z is the sum of its increments
    np.testing.assert_allclose(
        np.nansum(group["log_increment"].values, axis=1), group["log_marginal_likelihood_chain"]
    )
    posterior = get_group(idata, "posterior")
    assert posterior["w"].shape == (3, 300, 5)
    back = from_netcdf(to_netcdf(idata, tmp_path / "smc.nc"))
    assert pme.log_evidence(back).log_z == est.log_z
    # xr.open_dataset reads the root group: a hint, and the evidence group read alone
    with pytest.raises(TypeError, match="xr.open_datatree"):
        pme.log_evidence(xr.open_dataset(tmp_path / "smc.nc"))
    group = xr.open_dataset(tmp_path / "smc.nc", group="log_evidence")
    assert pme.log_evidence(group).log_z == est.log_z


def test_adaptive_schedule_per_run_is_still_offered(regression):
    idata, est = _estimate(
        regression.model, "smc", base="prior", n_particles=300, n_runs=2, schedule="adaptive"
    )
    group = get_group(idata, "log_evidence")
    assert group.attrs["schedule"] == "adaptive" and "pilot_particles" not in group.attrs
    assert_log_z(est, regression.log_z, abs_tol=0.15, se_max=0.15)
    with pytest.raises(ValueError, match="pilot_particles"):
        _estimate(regression.model, "smc", pilot_particles=1)


def test_arm_expands_on_coarse_fixed_schedule(regression, advi_bases):
    """ARM adds particles where the coarse steps are hard, stays within (i_max+1) R, is exact."""
    base = advi_bases[regression.name]
    kwargs = dict(base=base, schedule=COARSE, n_particles=400, max_expansions=3)
    idata, est = _estimate(regression.model, "arm", **kwargs)
    assert_log_z(est, regression.log_z, abs_tol=0.1, se_max=0.1)
    group = get_group(idata, "log_evidence")
    counts = group["n_particles"].values[:, 1:]
    assert np.all(counts % 400 == 0) and counts.min() >= 400 and counts.max() <= 1600
    assert counts.max() > 400, "no stage expanded"
    expanded = group["n_expansions"].values[:, 1:] > 0
    assert np.all(group["resampled"].values[:, 1:][expanded] == 1)
    assert np.all(group["gamma"].values[:, 1:][~expanded] >= 0.7)
    smc, _ = _estimate(regression.model, "smc", **kwargs)
    assert np.all(get_group(smc, "log_evidence")["n_particles"].values[:, 1:] == 400)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["smc", "arm"])
def test_defaults_exact_models(method, regression, bernoulli):
    """sample_evidence-like defaults: ADVI base with 8 restarts, 1000 particles, 4 runs."""
    for case in (regression, bernoulli):
        _, est = _estimate(case.model, method, n_particles=1000, base="advi")
        assert_log_z(est, case.log_z, abs_tol=0.1, se_max=0.1)


def test_sample_evidence_smc_entry_point():
    """method="smc" through sample_evidence: n_particles per run, n_runs runs."""
    import pymc_evidence as pme
    from pymc_evidence.testing import models as tm

    case = tm.beta_bernoulli()
    with case.model:
        idata = pme.sample_evidence(
            method="smc", n_particles=300, n_runs=3, base="prior", random_seed=7, progressbar=False
        )
    est = pme.log_evidence(idata)
    assert est.method == "smc" and est.n_chains == 3
    assert_log_z(est, case.log_z, abs_tol=0.1, label="smc via sample_evidence")


@pytest.mark.parametrize("method", ["smc", "arm", "ais"])
@pytest.mark.parametrize(
    "given", [{"draws": 300}, {"chains": 3}, {"tune": 100}, {"target_accept": 0.9}]
)
def test_particle_methods_refuse_pm_sample_sizes(method, given):
    """draws/chains/tune (and NUTS arguments) are refused, not reinterpreted, before any work."""
    import pymc_evidence as pme
    from pymc_evidence.testing import models as tm

    with pytest.raises(TypeError, match="n_particles"):
        pme.sample_evidence(tm.beta_bernoulli().model, method, progressbar=False, **given)
