"""Modes the base misses become Laplace components of it (pymc_evidence.basefit.modes).

Truths are exact: the phase-transition systems of ``pymc_evidence.testing`` (closed form
via erf, checked by quadrature in tests/testing/test_hard.py) and a conjugate normal model.
"""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytest

import pymc_evidence as pme
from pymc_evidence.base import GaussianBase, MixtureBase
from pymc_evidence.basefit import BasePlan, fit_base
from pymc_evidence.basefit.laplace import find_modes
from pymc_evidence.basefit.modes import COVERAGE_GAP, add_missed_modes, coverage_gap, weights_se
from pymc_evidence.basefit.pipeline import fit_plan
from pymc_evidence.runtime import model_space
from pymc_evidence.testing import phase_transition_centred, unequal_modes
from tests._accuracy import assert_log_z


@pytest.fixture(scope="module")
def skilling():
    """A spike (sd 0.01) holding 90 % of Z at the centre of a broad bump (sd 0.1), 10-D."""
    return phase_transition_centred()


def test_spike_inside_the_bump_is_added_to_the_base(skilling):
    plan = BasePlan("fullrank_advi", modes=False)
    alone = fit_plan(model_space(skilling.model), plan, np.random.default_rng(1))
    without = alone.base
    # ADVI alone fits the bump: its evidence is the bump's 10 % of Z
    assert without.log_zeta == pytest.approx(skilling.log_z + np.log(0.1), abs=0.05)
    base = fit_base("fullrank_advi", model=skilling.model, random_seed=1, progressbar=False)
    plan, rng = BasePlan("fullrank_advi"), np.random.default_rng(1)
    record = fit_plan(model_space(skilling.model), plan, rng)
    assert record.base.log_zeta == base.log_zeta
    (added,) = record.added_modes  # the fit before the mode search is the one without it
    assert isinstance(base, MixtureBase) and coverage_gap(added, alone.fit) > COVERAGE_GAP
    # the spike's own mass (90 % of Z) and the mixture's importance-sampling evidence
    assert added.log_zeta == pytest.approx(
        skilling.log_z + np.log(skilling.data["spike_share"]), abs=0.02
    )
    assert base.log_zeta == pytest.approx(skilling.log_z, abs=0.02)
    spike = base.means[np.argmax(base.weights)]
    assert np.allclose(spike, 0.0, atol=1e-3)  # the spike's centre, in logit coordinates


def test_default_smc_finds_the_spike(skilling):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = pme.log_evidence(
            pme.sample_evidence(skilling.model, random_seed=1, progressbar=False)
        )
    assert_log_z(est, skilling.log_z, abs_tol=0.05, label="smc, Skilling's phase transition")


def test_weights_se_matches_simulated_mass_errors():
    """The formula against a simulation: independent log-mass estimates with known se,
    the resulting log weights' spread averaged over the components by weight."""
    rng = np.random.default_rng(4)
    log_m, se = np.log([0.1, 0.6, 0.3]), np.array([0.05, 0.01, 0.03])
    draws = log_m + se * rng.standard_normal((200_000, 3))
    log_w = draws - np.logaddexp.reduce(draws, axis=1, keepdims=True)
    w = np.exp(log_m - np.logaddexp.reduce(log_m))
    simulated = np.sqrt(np.sum(w * np.var(log_w, axis=0)))
    assert weights_se(np.log(w), se) == pytest.approx(simulated, rel=0.01)
    assert weights_se(np.log([0.5, 0.5]), np.array([np.inf, 0.0])) == 0.0  # unknown: skipped


@pytest.mark.parametrize("method", ["gibbs_ct", "st"])
def test_chain_methods_carry_the_mixture_weights_se(skilling, method):
    """Chains that stay in the spike's component lean on the mixture's weights: before
    their se counted, ct / gibbs_ct / st were 0.0003 nats off with an se of 0.0001."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = pme.sample_evidence(skilling.model, method, random_seed=1, progressbar=False)
    est = pme.log_evidence(result)
    extra = est.diagnostics["base_weights_se"]
    assert 0.0 < extra < 0.05
    assert est.se == pytest.approx(np.hypot(est.diagnostics["mcmc_se"], extra))
    assert_log_z(est, skilling.log_z, abs_tol=0.05, label=f"{method}, Skilling's phase transition")


def test_a_base_that_covers_its_mode_is_returned_unchanged():
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu, 1.0, observed=np.array([0.3, 1.1]))
    kwargs = dict(model=model, random_seed=2, progressbar=False)
    base = fit_base("fullrank_advi", **kwargs)
    assert isinstance(base, GaussianBase)
    plan, rng = BasePlan("fullrank_advi", modes=False), np.random.default_rng(2)
    same = fit_plan(model_space(model), plan, rng).base
    assert base.log_zeta == same.log_zeta and np.array_equal(base.mean, same.mean)
    (mode,) = find_modes(model_space(model), base.mean[None, :])
    assert abs(coverage_gap(mode, base)) < 0.5  # q ~ posterior: the weight at the mode ~ Z


def test_a_mode_holding_a_negligible_share_is_not_added():
    with pm.Model() as model:  # a spike with 1e-4 of the evidence
        x = pm.Flat("x")
        comps = [pm.Normal.dist(x, 1.0), pm.Normal.dist(x, 0.01)]
        pm.Mixture("y", w=np.array([1 - 1e-4, 1e-4]), comp_dists=comps, observed=0.0)
    bump = GaussianBase(np.array([0.0]), np.array([[1.0]]), np.log(1 - 1e-4), "moments")
    assert add_missed_modes(bump, model_space(model), np.random.default_rng(0)) is bump


def test_auto_base_above_30_dims_keeps_the_correlations():
    """Mean-field ADVI drops the posterior correlations of a 60-d regression (smc then
    drifted -0.1 to -0.5 nats low at d = 50-200); the Laplace Gaussian replaces it."""
    from pymc_evidence.basefit.plan import FULLRANK_MAX_DIM
    from pymc_evidence.testing import conjugate_regression

    system = conjugate_regression(d=2 * FULLRANK_MAX_DIM, seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = pme.sample_evidence(system.model, random_seed=2, progressbar=False)
    est = pme.log_evidence(result)
    assert_log_z(est, system.log_z, abs_tol=0.03, label="smc, 60-d regression")
    mean_field = fit_base("advi", model=system.model, random_seed=2, progressbar=False)
    assert mean_field.kind != "laplace" and mean_field.log_zeta < system.log_z - 0.05


@pytest.fixture(scope="module")
def two_modes():
    """A narrow mode (30 % of Z) whose basin holds 16 % of the prior mass, and a broad one."""
    return unequal_modes()


@pytest.mark.parametrize("method", ["smc", "bridge"])
def test_a_mode_with_a_small_basin_is_found(two_modes, method):
    """Seed 1: bridge reported the broad mode alone (log 0.7, 0.36 nats low, se 0.001) when
    its mode search started from 4 prior draws; smc did so on one seed in two when the
    base's search started from none. Both climb from 32 prior draws now."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = pme.sample_evidence(two_modes.model, method, random_seed=1, progressbar=False)
    est = pme.log_evidence(result)
    assert_log_z(est, two_modes.log_z, abs_tol=0.1, se_max=0.1, label=f"{method}, unequal modes")


def test_reverse_runs_say_when_their_draws_miss_a_mode_of_the_base(two_modes):
    """The NUTS chains that start rais never enter the narrow mode the base holds: the
    estimate is off (+0.24 at seed 1) and the warning says why."""
    with pytest.warns(pme.CrossCheckWarning, match="never came near a mode that the base"):
        pme.sample_evidence(two_modes.model, "rais", random_seed=1, progressbar=False)


def _egg_box_search(monkeypatch=None, cap=None):
    """The mode search of the egg-box (18 equal modes; its truth is quadrature)."""
    from pymc_evidence.basefit import mode_search as modes_module
    from pymc_evidence.runtime.batched_logp import batched_logp
    from pymc_evidence.testing.nested_benchmarks import egg_box

    if cap is not None:
        monkeypatch.setattr(modes_module, "MAX_PRIOR_STARTS", cap)
    space = model_space(egg_box().model)
    start = GaussianBase(space.initial_x(), np.eye(2), 0.0, "moments")
    return modes_module.search_modes(space, start, batched_logp(space), np.random.default_rng(0))


def test_the_search_draws_starts_until_it_stops_finding_new_modes():
    modes, info = _egg_box_search()
    # the 18 modes, at the points (2 pi i, 2 pi j) with i + j even, i, j = 0..5
    width = 10 * np.pi
    cells = [np.round(width / (1 + np.exp(-m.mean)) / (2 * np.pi)).astype(int) for m in modes]
    found = {tuple(c) for c in cells}
    expected = {(i, j) for i in range(6) for j in range(6) if (i + j) % 2 == 0}
    assert found == expected
    assert info.n_prior_starts > 32 and info.unseen_share <= 0.02


def test_a_search_still_finding_modes_at_its_budget_warns(monkeypatch):
    from pymc_evidence.basefit.mode_search import warn_unseen

    _, info = _egg_box_search(monkeypatch, cap=32)
    assert info.n_prior_starts == 32 and info.unseen_share > 0.05
    with pytest.warns(pme.BaseFitWarning, match="still finding new ones"):
        warn_unseen(info)


def test_a_batch_that_reaches_a_new_basin_asks_for_another():
    """The egg-box at bridge's seed 9: one singleton in 64 starts (Good-Turing 1.6 %) while
    the second batch had reached two new basins; the search stopped with 16 of 18 modes."""
    from pymc_evidence.basefit.mode_search import keep_searching

    hits = np.r_[np.repeat(np.arange(15), 4), 15, 15, 15, 16]  # 64 starts, one singleton
    assert not keep_searching(hits, hits[32:], known=17)  # nothing new in the batch
    assert keep_searching(hits, hits[32:], known=15)  # basins 15 and 16 were new
    assert keep_searching(np.arange(64) % 40, [], known=40)  # many singletons
    assert not keep_searching(hits[:32], hits[:32], known=None)  # a first batch: share only


def test_a_one_mode_posterior_gets_one_batch_of_starts():
    from pymc_evidence.basefit.mode_search import N_PRIOR_STARTS, ONE_BUMP_STARTS, search_modes
    from pymc_evidence.runtime.batched_logp import batched_logp

    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0, shape=3)
        pm.Normal("y", mu, 1.0, observed=np.array([0.5, -1.0, 2.0]))
    space = model_space(model)
    start = GaussianBase(np.zeros(3), np.eye(3), 0.0, "moments")
    modes, info = search_modes(space, start, batched_logp(space), np.random.default_rng(1))
    assert len(modes) == 1 and info.n_prior_starts == N_PRIOR_STARTS
    assert info.unseen_share == 0.0
    one, info = search_modes(space, start, batched_logp(space), np.random.default_rng(1),
                             one_bump=True)  # fmt: skip
    assert info.n_prior_starts == ONE_BUMP_STARTS
    assert len(one) == 1 and np.allclose(one[0].mean, modes[0].mean, atol=1e-6)


def test_default_is_right_on_the_egg_box():
    """All 18 modes in the base, the edge modes' Gaussians widened: seed 6 was -0.115 +- 0.033
    with three edge modes dropped (too light a Laplace Gaussian), seed 10 +0.226 +- 0.245."""
    from pymc_evidence.testing import egg_box

    system = egg_box()
    for seed in (6, 10):
        with warnings.catch_warnings():
            warnings.simplefilter("error", pme.BaseFitWarning)
            idata = pme.sample_evidence(model=system.model, random_seed=seed, progressbar=False)
        assert_log_z(pme.log_evidence(idata), system.log_z, abs_tol=0.1, se_max=0.05)
