"""The resample-move SMC engine (:mod:`pymc_evidence.engines.smc` and its kernel) against
exact log Z: moves, the last move's copies, and the checked settings."""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import pymc_evidence as pme
from pymc_evidence.base import GaussianBase
from pymc_evidence.engines import init_state
from pymc_evidence.engines.batched import batched_log_densities
from pymc_evidence.engines.smc import SMCSettings, run_resample_move
from pymc_evidence.engines.smc_kernel import MIN_REFRESH, UNMOVED_SHARE
from tests._accuracy import assert_log_z

SEED = 505
COARSE = np.array([0.0, 0.01, 0.1, 1.0])  # a fixed schedule whose later steps are hard


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


def test_weighted_particles_stay_put_without_move_weighted(toy):
    """``move_weighted=False``: a stage moves only where the last reweighting resampled
    (the particles it left weighted are distinct draws), the finishing move still runs,
    and log Z over eight runs matches the exact value; the default moves at every stage
    after the first."""
    model, log_z = toy
    base = GaussianBase(np.zeros(1), np.eye(1) * 2.0, log_zeta=0.0, kind="moments")
    density = batched_log_densities(model, base)
    schedule = np.linspace(0.0, 1.0, 9)

    def run(seed, **kwargs):
        rng = np.random.default_rng(seed)
        settings = SMCSettings(schedule=schedule, n_moves=3, **kwargs)
        return run_resample_move(density, base.sample(400, rng), rng, settings)

    runs = [run(SEED + i, move_weighted=False) for i in range(8)]
    for _, info in runs:
        resampled = info.resampled[1:-1].astype(bool)
        np.testing.assert_array_equal(info.n_moves[1:-1] > 0, resampled)
        assert info.n_moves[-1] > 0
    assert any(info.resampled[1:-1].any() and not info.resampled[1:-1].all() for _, info in runs)
    values = np.array([value for value, _ in runs])
    assert_log_z((values.mean(), values.std(ddof=1) / np.sqrt(8)), log_z, abs_tol=0.06)
    assert np.all(run(SEED)[1].n_moves[1:] > 0)


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


def test_copies_of_a_resampling_at_the_last_reweighting_are_parted(toy):
    """A base ten times too wide gives one step to beta = 1 an ESS under the resampling
    threshold: the reweighting resamples, and the move at beta = 1 still parts the copies
    it left (before, equal weights there moved nothing and about a third of the
    posterior's particles were copies)."""
    model, _ = toy
    wide = GaussianBase(np.zeros(1), np.eye(1) * 10.0, log_zeta=0.0, kind="moments")
    density = batched_log_densities(model, wide)
    rng = np.random.default_rng(SEED)
    settings = SMCSettings(schedule=[0.0, 1.0], posterior_moves=0)
    _, info = run_resample_move(density, wide.sample(400, rng), rng, settings)
    assert info.resampled[-1] and info.n_moves[-1] >= MIN_REFRESH
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
