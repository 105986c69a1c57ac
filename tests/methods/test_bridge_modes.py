"""Bridge sampling on multimodal posteriors: clusters of chains that do not mix, and modes
no chain visited, against exact log Z (pymc_evidence.testing)."""

import warnings

import numpy as np
import pymc as pm
import pytest
import xarray as xr
from scipy import stats
from scipy.special import logsumexp

import pymc_evidence as pme
from pymc_evidence import compat
from pymc_evidence import testing as T
from pymc_evidence.base.gaussian import GaussianBase
from pymc_evidence.base.mixture import MixtureBase
from pymc_evidence.estimators.bridge_modes import (
    chain_clusters,
    combine_clusters,
    sum_of_parts,
    summed_iterates,
)
from pymc_evidence.estimators.diagnostics import CrossCheckWarning
from pymc_evidence.estimators.record import EvidenceEstimate
from pymc_evidence.methods import bridge as bridge_method
from pymc_evidence.methods.bridge_proposals import gaussian_fit
from pymc_evidence.nuts import SamplingArgs
from pymc_evidence.problem import EvidenceProblem
from pymc_evidence.results import log_evidence
from tests._accuracy import assert_log_z

SEED = 20260615


# ---------------------------------------------------------------- clustering (pure numpy)


def _ar1(rng, shape, rho=0.9):
    """Autocorrelated standard-normal chains ``(chain, draw, d)`` (few effective draws)."""
    x = np.empty(shape)
    x[:, 0] = rng.normal(size=(shape[0], shape[2]))
    for t in range(1, shape[1]):
        x[:, t] = rho * x[:, t - 1] + np.sqrt(1 - rho**2) * rng.normal(size=(shape[0], shape[2]))
    return x


def _labels(clusters):
    return [c.tolist() for c in clusters]


def test_clusters_two_separated_modes():
    """Chains 0, 2, 3 in one mode, 1 and 4 in another 8 sd away in 5-d."""
    rng = np.random.default_rng(SEED)
    x = _ar1(rng, (5, 500, 5))
    x[[1, 4]] += 8.0 / np.sqrt(5)  # 8 sd along the diagonal: 1.8 sd per coordinate
    assert _labels(chain_clusters(x)) == [[0, 2, 3], [1, 4]]


def test_clusters_one_region_no_false_split_in_high_dimension():
    """Chains of one correlated 300-d region, 20 effective draws each: one cluster."""
    rng = np.random.default_rng(SEED)
    d = 300
    mix = np.linalg.cholesky(0.5 * np.eye(d) + 0.5)  # correlation 0.5 between coordinates
    x = _ar1(rng, (4, 200, d)) @ mix.T * rng.uniform(0.1, 10.0, size=d)
    assert _labels(chain_clusters(x)) == [[0, 1, 2, 3]]


def test_clusters_chains_that_mix_or_bridge_are_merged():
    """A chain that visits both modes joins them; closure is transitive."""
    rng = np.random.default_rng(SEED)
    x = rng.normal(size=(4, 400, 2)) * 0.3
    x[1] += 10.0
    x[3, ::2] += 10.0  # chain 3 crosses between the modes
    assert _labels(chain_clusters(x)) == [[0, 1, 2, 3]]
    x[3, ::2] -= 10.0  # chain 3 now in chain 0's mode only
    assert _labels(chain_clusters(x)) == [[0, 2, 3], [1]]
    stuck = np.full((1, 400, 2), 0.1)  # a chain stuck inside chain 0's region
    assert _labels(chain_clusters(np.concatenate([x, stuck]))) == [[0, 2, 3, 4], [1]]


def _shell_draws(rng, centre, n, radius=2.0, width=0.1, d=3):
    """``n`` draws near a thin shell (i.i.d.: directions uniform, radii ``N(r, w^2)``)."""
    u = rng.normal(size=(n, d))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    return centre + u * rng.normal(radius, width, size=(n, 1))


def _two_shells_log_density(centres, radius=2.0, width=0.1):
    def log_density(points):
        dist = np.linalg.norm(points[:, None, :] - centres[None], axis=-1)
        return logsumexp(-0.5 * ((dist - radius) / width) ** 2, axis=1)

    return log_density


def test_clusters_shells_that_the_ellipsoids_join_are_held_apart():
    """Two thin 3-D shells 1 apart: each chain's ellipsoid reaches into the other shell, so
    the ellipsoids alone pool the 3 : 1 chains; their draws lie apart, and the density
    dips 12 nats between the closest ones, so the chains are held apart."""
    rng = np.random.default_rng(SEED)
    centres = np.array([[-2.5, 0.0, 0.0], [2.5, 0.0, 0.0]])
    x = np.stack([_shell_draws(rng, centres[k], 500) for k in (0, 0, 0, 1)])
    assert _labels(chain_clusters(x)) == [[0, 1, 2, 3]]
    density = _two_shells_log_density(centres)
    assert _labels(chain_clusters(x, log_density=density)) == [[0, 1, 2], [3]]
    one = np.stack([_shell_draws(rng, centres[0], 500) for _ in range(4)])
    assert _labels(chain_clusters(one, log_density=density)) == [[0, 1, 2, 3]]


def test_clusters_no_split_along_a_ridge_without_a_barrier():
    """Four chains that each sample their own stretch of one long Gaussian ridge (as slowly
    mixing chains do) lie apart by their draws, and their ellipsoids join them; nothing
    dips between them, so they stay one cluster."""
    rng = np.random.default_rng(SEED)
    x = np.stack(
        [np.column_stack([rng.uniform(2 * k, 2 * k + 1.6, 400), rng.normal(size=400)])
         for k in range(4)]
    )  # fmt: skip

    def ridge(points):
        return -0.5 * ((points[:, 0] - 3.0) / 10.0) ** 2 - 0.5 * points[:, 1] ** 2

    assert _labels(chain_clusters(x)) == [[0, 1, 2, 3]]
    assert _labels(chain_clusters(x, log_density=ridge)) == [[0, 1, 2, 3]]

    def cut(points):  # a wall between the first two stretches
        return np.where(np.abs(points[:, 0] - 1.8) < 0.2, -50.0, 0.0) + ridge(points)

    assert _labels(chain_clusters(x, log_density=cut)) == [[0], [1, 2, 3]]


def test_clusters_bad_input():
    with pytest.raises(ValueError, match="chain, draw"):
        chain_clusters(np.zeros((4, 10)))
    with pytest.raises(ValueError, match="nan"):
        chain_clusters(np.full((2, 10, 1), np.nan))
    with pytest.raises(ValueError, match="probability"):
        chain_clusters(np.zeros((2, 10, 1)), probability=1.0)


# ---------------------------------------------------------------- sums of parts


def test_sum_of_parts_delta_method():
    """se of log(Z1 + Z2) against a direct simulation of independent lognormal parts."""
    log_z, se = np.array([-1.0, 0.5]), np.array([0.05, 0.2])
    total, total_se, w = sum_of_parts(log_z, se)
    assert total == pytest.approx(np.log(np.exp(-1.0) + np.exp(0.5)))
    assert w.sum() == pytest.approx(1.0)
    rng = np.random.default_rng(SEED)
    draws = np.log(np.exp(log_z + se * rng.normal(size=(200_000, 2))).sum(axis=1))
    assert total_se == pytest.approx(draws.std(), rel=0.03)
    with pytest.raises(ValueError, match="matching"):
        sum_of_parts([0.0, 1.0], [0.1])


def test_combine_clusters_per_chain_and_extras():
    diag_a = {"re2_proposal": 1e-4, "re2_posterior": 3e-4, "converged": 1.0}
    diag_b = {"re2_proposal": 6e-4, "re2_posterior": 1e-3, "converged": 0.0}
    a = EvidenceEstimate(np.log(0.3), 0.02, "bridge", np.log([0.28, 0.32]), [0.03] * 2, diag_a)
    b = EvidenceEstimate(np.log(0.2), 0.04, "bridge", np.log([0.2]), [0.04], diag_b)
    est = combine_clusters([a, b], [[0, 2], [1]], 3, extra_log_mass=[np.log(0.5)], extra_se=[0.1])
    assert est.log_z == pytest.approx(0.0, abs=1e-12)
    assert est.se == pytest.approx(np.sqrt((0.3 * 0.02) ** 2 + (0.2 * 0.04) ** 2 + 0.05**2))
    assert est.per_chain_log_z == pytest.approx(np.log([0.98, 1.0, 1.02]))
    diag = est.diagnostics
    assert diag["re2_proposal"] + diag["re2_posterior"] == pytest.approx(est.se**2)
    assert (diag["n_clusters"], diag["n_missed_modes"], diag["converged"]) == (2.0, 1.0, 0.0)
    assert diag["log_z_cluster_1"] == pytest.approx(np.log(0.2))
    assert diag["missed_mode_log_mass"] == pytest.approx(np.log(0.5))
    running = summed_iterates([[0.0, np.log(0.3)], [np.log(0.2)]], [np.log(0.5)])
    assert running == pytest.approx(np.log([1.7, 1.0]))


# ---------------------------------------------------------------- PyMC workflow


def test_symmetric_mixture_chains_in_both_modes():
    """Two equal 5-d modes; seed 1 leaves three chains in one mode and one in the other,
    which pooled bridge sampling got 0.10 nats low. Clusters sum to the exact log Z."""
    case = T.symmetric_mixture()
    out = pme.sample_evidence(case.model, method="bridge", random_seed=1, progressbar=False)
    est = log_evidence(out)
    assert est.diagnostics["n_clusters"] == 2 and est.diagnostics["n_missed_modes"] == 0
    diag = est.diagnostics
    halves = diag["log_z_cluster_0"] - diag["log_z_cluster_1"]
    assert_log_z((halves, np.hypot(diag["se_cluster_0"], diag["se_cluster_1"])), 0.0, abs_tol=0.15)
    assert_log_z(est, case.log_z, abs_tol=0.15, label="symmetric mixture")
    again = log_evidence(  # the user's draws, through posterior=: the same estimate
        pme.sample_evidence(case.model, method="bridge", posterior=out, random_seed=1)
    )
    assert again.log_z == est.log_z and again.se == est.se


def test_phase_transition_missed_spike_is_added_with_warning():
    """A spike holding 90 % of Z inside a broad bump: NUTS stays in the bump (log 0.1 =
    -2.30 alone); the ascent from the bump's mean finds the spike and adds its mass."""
    case = T.phase_transition_centred()
    with pytest.warns(CrossCheckWarning, match=r"missed a mode holding 9\d(\.\d)? % of"):
        out = pme.sample_evidence(case.model, method="bridge", random_seed=1, progressbar=False)
    est = log_evidence(out)
    assert est.diagnostics["n_missed_modes"] == 1 and est.diagnostics["n_clusters"] == 1
    assert est.diagnostics["missed_mode_log_mass"] == pytest.approx(np.log(0.9), abs=0.05)
    assert_log_z(est, case.log_z, abs_tol=0.15, label="centred phase transition")


def test_unimodal_unchanged():
    """One cluster, no missed mode: bit for bit the plain bridge estimate of all draws."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 2.0, shape=3)
        pm.Normal("y", mu, 1.0, observed=np.array([0.5, -1.0, 2.0]))
    truth = float(stats.multivariate_normal(np.zeros(3), 5.0 * np.eye(3)).logpdf([0.5, -1.0, 2.0]))
    kwargs = dict(tune=300, chains=3, random_seed=SEED, compute_convergence_checks=False)
    idata = pm.sample(400, progressbar=False, model=model, **kwargs)
    problem = EvidenceProblem.build(model, random_seed=5, base=None, reparam=None)
    options = bridge_method.BridgeOptions()
    result = bridge_method.bridge_parts(problem, idata, options)
    x = bridge_method._posterior_draws(idata, problem.space)
    plain, _, _ = bridge_method._estimate(problem.log_f, x, options, problem.rng("method"))
    est = result.estimate
    assert (est.log_z, est.se) == (plain.log_z, plain.se)
    assert np.array_equal(est.per_chain_log_z, plain.per_chain_log_z)
    assert (est.diagnostics["n_clusters"], est.diagnostics["n_missed_modes"]) == (1.0, 0.0)
    assert not [w for w in est.warnings if "missed a mode" in w]
    assert_log_z(est, truth, abs_tol=0.1)


def test_mirror_mode_no_chain_entered():
    """y ~ N(theta^2, 1): seed 2 leaves all four chains at theta > 0 (pooled bridge was
    log 2 low, no warning); an ascent from a prior draw finds theta < 0 and adds it."""
    case = T.bimodal_1d()
    with pytest.warns(CrossCheckWarning, match="missed a mode holding"):
        out = pme.sample_evidence(case.model, method="bridge", random_seed=2, progressbar=False)
    est = log_evidence(out)
    assert est.diagnostics["n_missed_modes"] == 1 and est.diagnostics["n_clusters"] == 1
    assert est.diagnostics["missed_mode_log_mass"] == pytest.approx(
        case.log_z - np.log(2), abs=0.05
    )
    assert_log_z(est, case.log_z, abs_tol=0.15, label="bimodal, one mode sampled")


# ---------------------------------------------------------------- chains that hop between modes


def _exact_mixture_posterior(case, shape, rng):
    """Exact draws ``(chain, draw, d)`` of ``symmetric_mixture``'s posterior: each draw
    picks a mode with probability 1/2, ``x | mode ~ N(c (y -+ a), c s^2 I)`` with
    ``c = s0^2 / (s0^2 + s^2)``; every chain holds both modes, as hopping chains do."""
    data = case.data
    s0, s = data["prior_sigma"], data["noise_sigma"]
    c = s0**2 / (s0**2 + s**2)
    sign = rng.choice([-1.0, 1.0], size=shape[:2])[..., None]
    mean = c * (data["y"] - sign * data["offset"])
    return mean + np.sqrt(c) * s * rng.normal(size=shape)


def test_proposal_pieces_only_where_the_draws_have_separated_modes():
    """One Gaussian for Gaussian draws (bit for bit the moments fit); a mixture of pieces,
    each inside one mode, for draws pooled from two separated modes."""
    rng = np.random.default_rng(SEED)
    gauss = rng.normal(size=(2000, 5)) @ np.diag([1.0, 2.0, 0.5, 1.0, 3.0])
    assert isinstance(gaussian_fit(gauss), GaussianBase)
    case = T.symmetric_mixture()
    flat = _exact_mixture_posterior(case, (1, 2000, 5), rng)[0]
    fit = gaussian_fit(flat)
    assert isinstance(fit, MixtureBase) and fit.n_components >= 2
    side = np.sign((fit.means - fit.means.mean(0)) @ case.data["offset"])
    assert set(side) == {-1.0, 1.0}  # pieces in both modes, none straddling the gap
    assert fit.weights[side > 0].sum() == pytest.approx(0.5, abs=0.05)


def test_hopping_chains_bridge_with_piece_proposal():
    """Four chains, each holding both modes of ``symmetric_mixture`` (one cluster): the
    piece mixture proposal gives the exact log Z with an se a single Gaussian spread over
    both modes could not (measured: 0.0017 against 0.027 with one Gaussian)."""
    case = T.symmetric_mixture()
    x = _exact_mixture_posterior(case, (4, 1000, 5), np.random.default_rng(SEED))
    posterior = xr.Dataset({"x": (("chain", "draw", "dim"), x)})
    idata = compat.new_idata({"posterior": posterior})
    problem = EvidenceProblem.build(case.model, random_seed=5, base=None, reparam=None)
    result = bridge_method.bridge_parts(problem, idata, bridge_method.BridgeOptions())
    est = result.estimate
    assert est.diagnostics["n_clusters"] == 1
    assert_log_z(est, case.log_z, abs_tol=0.05, label="hopping chains")
    assert est.se < 0.01


def test_a_missed_shell_whose_mass_cannot_be_measured_is_reported():
    """Four chains all on one of two thin 5-D shells (bridge was then log 2 low with an se
    of 0.03 and no warning): the ascents reach the other shell, whose peak is as high as
    the draws', and no Laplace Gaussian measures a shell: a warning says its mass is
    missing."""
    from pymc_evidence.methods.bridge_missed import missed_mode_masses, missed_mode_messages

    case = T.gaussian_shells()
    problem = EvidenceProblem.build(case.model, random_seed=1, reparam=None)
    rng = np.random.default_rng(SEED)
    shell = _shell_draws(rng, np.array([3.5, 0.0, 0.0, 0.0, 0.0]), 1200, d=5)
    x = problem.space.unconstrain({"x": shell.reshape(4, 300, 5)})
    half = case.log_z - np.log(2.0)
    missed = missed_mode_masses(problem.space, x, [np.arange(4)], half, rng, problem.log_f)
    assert missed.log_mass.size == 0 and missed.n_unmeasured == 1
    (message,) = missed_mode_messages(missed, half)
    assert message.category is CrossCheckWarning and "not in the estimate" in message


def test_a_missed_shell_gets_chains_of_its_own():
    """All four chains on one of the two shells (seed 2 at the defaults: 0.66 nats low, with
    a warning): NUTS chains started at the other shell's peaks join the draws, each shell
    is bridged alone, and a warning says the posterior group holds the first chains only."""
    case = T.gaussian_shells()
    sampling = SamplingArgs(draws=300, tune=300, chains=4, progressbar=False)
    problem = EvidenceProblem.build(case.model, random_seed=1, reparam=None, sampling=sampling)
    shell = _shell_draws(np.random.default_rng(SEED), np.array([3.5, 0, 0, 0, 0]), 1200, d=5)
    posterior = xr.Dataset({"x": (("chain", "draw", "x_dim_0"), shell.reshape(4, 300, 5))})
    idata = compat.new_idata({"posterior": posterior})
    options = bridge_method.BridgeOptions()
    result = bridge_method.bridge_parts(problem, idata, options, more_chains=True)
    est = result.estimate
    assert est.diagnostics["n_more_chains"] >= 2 and est.diagnostics["n_clusters"] == 2
    assert any("more NUTS chains started there" in w for w in est.warnings)
    assert not any("not in the estimate" in w for w in est.warnings)
    assert_log_z(est, case.log_z, abs_tol=0.15, label="one shell sampled, then both")


def test_shells_split_three_to_one_are_summed_by_shell():
    """Seed 1 leaves three chains on one Gaussian shell and one on the other; pooled, the
    draws held the shells 3 : 1 (-0.134 +- 0.219). Held apart, each shell is bridged
    alone and the masses add up."""
    case = T.gaussian_shells()
    est = log_evidence(
        pme.sample_evidence(case.model, method="bridge", random_seed=1, progressbar=False)
    )
    assert est.diagnostics["n_clusters"] == 2
    assert_log_z(est, case.log_z, abs_tol=0.15, label="two Gaussian shells, bridge")
    assert est.se <= 0.15


@pytest.mark.parametrize("seed", [1, 6, 9])
def test_egg_box_modes_no_chain_visited_are_searched_for_until_none_is_new(seed):
    """The egg-box's 18 modes, four chains in three or four of them: the mode search adds
    prior starts while they keep reaching new basins (one fixed batch left modes out:
    -0.078 +- 0.007 at seed 2; stopping at a Good-Turing share under 2 % alone, 16 modes
    and -0.109 +- 0.003 at seed 9). Each added mode's se includes the distance between its
    Laplace and importance-sampling masses (seeds 5, 8, 9 were 0.013-0.017 low at se
    0.003); seed 6's fresh mass of a corner mode had an ESS of 1 (+0.56 +- 0.43)."""
    case = T.egg_box()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CrossCheckWarning)  # the modes it added, one each
        out = pme.sample_evidence(case.model, method="bridge", random_seed=seed, progressbar=False)
    est = log_evidence(out)
    assert est.diagnostics["n_clusters"] + est.diagnostics["n_missed_modes"] == 18
    assert_log_z(est, case.log_z, abs_tol=0.05, label=f"egg-box, bridge, seed {seed}", se_max=0.05)


@pytest.mark.heavy
def test_a_funnels_neck_is_no_missed_region():
    """The centred radon intercepts (89 parameters, real data): an ascent climbs into the
    funnel's neck, higher than any draw, with no barrier on the way; that is no missed
    region, and no warning says so (it did before the barrier test)."""
    case = T.centred_radon_intercepts()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = pme.sample_evidence(case.model, method="bridge", random_seed=1, progressbar=False)
    assert not [w for w in caught if "region(s)" in str(w.message)]
    assert_log_z(log_evidence(out), case.log_z, abs_tol=0.15, label="centred radon, bridge")
