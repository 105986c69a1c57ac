"""The base fit: ADVI fits against exact Gaussian posteriors, widening, restarts on a
bimodal posterior, the prior base as a fit, and the argument checks.

The conjugate regression below has a strongly correlated posterior (correlation -0.58
between two weights), so mean-field and full-rank fits are told apart by their variances.
"""

import numpy as np
import pymc as pm
import pytest
from scipy import special, stats

import pymc_evidence as pme
from pymc_evidence import GaussianBase, PriorBase
from pymc_evidence.base import prior_draws
from pymc_evidence.basefit import BasePlan
from pymc_evidence.basefit.advi import (
    _draw_points,
    _elbo_gradients,
    _init_params,
    run_advi,
)
from pymc_evidence.basefit.pipeline import fit_plan
from pymc_evidence.basefit.widen import DEFENSIVE, DEFENSIVE_WIDTH, WIDEN, WIDEN_BELOW
from pymc_evidence.problem import EvidenceProblem
from pymc_evidence.runtime import model_space
from pymc_evidence.testing import conjugate_regression, mixture_likelihood
from tests._accuracy import assert_below, assert_estimate


# ------------------------------------------------------------------------------------------
# Exact references
def exact_regression_posterior(system):
    """Posterior N(m, C) of w: C = (X'X/σ² + I/τ²)^-1, m = C X'y/σ²."""
    X, y = system.data["X"], system.data["y"]
    sigma, tau = system.data["sigma"], system.data["prior_sigma"]
    precision = X.T @ X / sigma**2 + np.eye(X.shape[1]) / tau**2
    cov = np.linalg.inv(precision)
    return cov @ X.T @ y / sigma**2, cov, precision


def gaussian_kl(m_q, c_q, m_p, c_p):
    """KL(N(m_q, c_q) || N(m_p, c_p))."""
    p_inv = np.linalg.inv(c_p)
    diff = m_q - m_p
    return 0.5 * (
        np.trace(p_inv @ c_q)
        + diff @ p_inv @ diff
        - len(m_q)
        + np.linalg.slogdet(c_p)[1]
        - np.linalg.slogdet(c_q)[1]
    )


@pytest.fixture(scope="module")
def regression():
    system = conjugate_regression(d=3, n=12, seed=1)
    mean, cov, precision = exact_regression_posterior(system)
    return system, mean, cov, precision


@pytest.fixture(scope="module")
def fullrank_base(regression):
    with regression[0].model:
        return pme.fit_base("fullrank_advi", n_steps=2500, random_seed=0)


@pytest.fixture(scope="module")
def meanfield_base(regression):
    plan = BasePlan("advi", n_steps=2000, widen=False)
    return fit_plan(model_space(regression[0].model), plan, np.random.default_rng(0)).base


def test_reference_posterior_is_correlated(regression):
    """Guard: the test model must separate conditional from marginal variances."""
    _, _, cov, precision = regression
    marginal, conditional = np.sqrt(np.diag(cov)), 1 / np.sqrt(np.diag(precision))
    assert np.max(marginal / conditional) > 1.15


# ------------------------------------------------------------------------------------------
# ADVI on the conjugate regression
@pytest.mark.parametrize("which", ["fullrank", "meanfield"])
def test_advi_mean_is_the_posterior_mean(regression, fullrank_base, meanfield_base, which):
    _, mean, cov, _ = regression
    base = fullrank_base if which == "fullrank" else meanfield_base
    assert base.names == ("w",) and base.sizes == (3,)
    np.testing.assert_array_less(np.abs(base.mean - mean), 0.15 * np.sqrt(np.diag(cov)))


def test_fullrank_covariance_matches(regression, fullrank_base):
    _, _, cov, _ = regression
    assert fullrank_base.kind == "fullrank_advi"
    assert not fullrank_base.is_diagonal
    rel = np.linalg.norm(fullrank_base.cov - cov) / np.linalg.norm(cov)
    assert rel < 0.15, rel
    np.testing.assert_allclose(fullrank_base.std, np.sqrt(np.diag(cov)), rtol=0.1)


def test_meanfield_std_is_the_conditional_std(regression, meanfield_base):
    """Mean-field KL(q||p) on a Gaussian gives q's variance = 1 / precision_ii exactly,
    i.e. the conditional std, which underestimates the marginal std."""
    _, _, cov, precision = regression
    marginal, conditional = np.sqrt(np.diag(cov)), 1 / np.sqrt(np.diag(precision))
    assert meanfield_base.kind == "advi"
    assert meanfield_base.is_diagonal
    std = meanfield_base.std
    np.testing.assert_allclose(std, conditional, rtol=0.1)
    assert np.all(std >= 0.85 * conditional)
    assert np.all(std <= 1.05 * marginal)
    wide = marginal / conditional > 1.15
    assert np.all(std[wide] < 0.92 * marginal[wide])


def test_a_fit_narrower_than_the_posterior_is_widened(regression, meanfield_base):
    """The mean-field fit has the conditional stds (ESS well below half the draws); by
    default ``fit_base`` keeps a wider copy when its importance-sampling ESS is larger, and
    adds a defensive component twice as wide."""
    system = regression[0]
    with system.model:
        wide = pme.fit_base("advi", n_steps=2000, random_seed=0)
    plan, rng = BasePlan("advi", n_steps=2000), np.random.default_rng(0)
    record = fit_plan(model_space(system.model), plan, rng)
    assert meanfield_base.stats.is_ess < WIDEN_BELOW * 1000
    factor = record.widened
    assert record.base.log_zeta == wide.log_zeta and record.fit.log_zeta == meanfield_base.log_zeta
    assert factor in WIDEN and wide.kind == "advi"
    np.testing.assert_allclose(wide.weights, [1 - DEFENSIVE, DEFENSIVE])
    np.testing.assert_allclose(wide.chols[0], factor * meanfield_base.chol)
    np.testing.assert_allclose(wide.chols[1], DEFENSIVE_WIDTH * factor * meanfield_base.chol)
    assert abs(wide.log_zeta - system.log_z) < 0.1


def test_nuts_tempering_methods_keep_the_fit(regression):
    """The particle methods start from the widened base; ``ct``, ``gibbs_ct`` and ``st``
    (and the NUTS chains' starting points) from the fit itself, a Gaussian ``ct`` can refit."""
    problem = EvidenceProblem.build(
        regression[0].model, random_seed=0, base="advi", base_kwargs={"n_steps": 2000},
        fit="tempering",
    )  # fmt: skip
    record = problem.fitted
    assert record.widened in WIDEN
    fit = problem.tempering_base
    assert isinstance(fit, GaussianBase) and fit is record.fit
    np.testing.assert_allclose(problem.base.chols[0], record.widened * fit.chol)


def test_no_widening_on_an_ess_of_noise(monkeypatch):
    """Two ESS of one or two draws in a thousand say nothing: a wider base with an ESS of 1.4
    does not replace a fit's 1.3 (the 300-group hierarchy at seed 4, whose widened base
    then took 23 SMC stages); one with a real ESS (50) does."""
    from pymc_evidence.basefit import widen

    base = GaussianBase(np.zeros(3), np.eye(3), 0.0, "advi")
    for wider_ess, factor in ((1.4, 1.0), (50.0, WIDEN[0])):
        stats = [{"is_ess": wider_ess}, {"is_ess": 1.0}]
        monkeypatch.setattr(widen, "evaluate_bases", lambda *a, s=stats: s)
        kept, stat, got = widen.widest_better(base, {"is_ess": 1.3}, None, 1000, None)
        assert got == factor and stat["is_ess"] == (wider_ess if factor > 1 else 1.3)


@pytest.mark.parametrize("which", ["fullrank", "meanfield"])
def test_log_zeta_and_elbo_against_exact_log_z(regression, fullrank_base, meanfield_base, which):
    """log ζ (importance sampling) ≈ log Z; ELBO = log Z − KL(q || posterior) exactly for a
    Gaussian posterior, so the Monte Carlo ELBO must match that and stay below log Z."""
    system, mean, cov, _ = regression
    base = fullrank_base if which == "fullrank" else meanfield_base
    assert abs(base.log_zeta - system.log_z) < 0.1
    assert_below(base.elbo, system.log_z, base.elbo_se, label="ELBO below log Z")
    elbo_exact = system.log_z - gaussian_kl(base.mean, base.cov, mean, cov)
    assert_estimate(base.elbo, elbo_exact, base.elbo_se, abs_tol=0.05, label="ELBO")
    assert 0 < base.elbo_se < 0.1


def test_meanfield_elbo_gap_is_visible(regression, meanfield_base, fullrank_base):
    """On a correlated posterior the mean-field ELBO is clearly lower than the full-rank one."""
    system = regression[0]
    assert system.log_z - meanfield_base.elbo > 0.1
    assert meanfield_base.elbo < fullrank_base.elbo


# ------------------------------------------------------------------------------------------
# Restarts on a bimodal posterior
@pytest.fixture(scope="module")
def mixture():
    return mixture_likelihood(d=2)


def exact_mixture_posterior(system):
    """Two Gaussian modes with exact weights; the mixture's mean and covariance."""
    y, a = system.data["y"], system.data["offset"]
    s0, s, w = system.data["prior_sigma"], system.data["noise_sigma"], system.data["weight"]
    k = s0**2 / (s0**2 + s**2)
    modes = np.array([k * (y - a), k * (y + a)])  # component x + a, component x - a
    log_terms = [
        np.log(w) + stats.norm.logpdf(y, a, np.sqrt(s0**2 + s**2)).sum(),
        np.log1p(-w) + stats.norm.logpdf(y, -a, np.sqrt(s0**2 + s**2)).sum(),
    ]
    weights = np.exp(log_terms - special.logsumexp(log_terms))
    covs = np.array([k * s**2 * np.eye(len(y))] * 2)
    mean = weights @ modes
    second = np.einsum("k,kij->ij", weights, covs + np.einsum("ki,kj->kij", modes, modes))
    return modes, mean, second - np.outer(mean, mean)


def test_restarts_merge_both_modes(mixture):
    """Seed 2 finds both modes (observed: seed 0 finds only the heavier one, kind 'advi';
    4 of seeds 0-9 find both). The merged base is the moment-matched Gaussian of the exact
    bimodal posterior, and log ζ sums the modes' evidence."""
    with mixture.model:
        base = pme.fit_base("advi", restarts=4, n_steps=1000, random_seed=2)
    modes, mean, cov = exact_mixture_posterior(mixture)
    assert base.kind == "merged"
    assert base.stats.n_components == 2
    lo, hi = modes.min(axis=0), modes.max(axis=0)
    assert np.all((base.mean > lo) & (base.mean < hi))
    np.testing.assert_allclose(base.mean, mean, atol=0.2)
    np.testing.assert_allclose(base.cov, cov, atol=0.1 * np.max(np.diag(cov)))
    assert abs(base.log_zeta - mixture.log_z) < 0.1, (base.log_zeta, mixture.log_z)
    # each component alone misses the other mode's mass
    assert max(base.component_log_zeta) < mixture.log_z - 0.2


def test_single_fit_sees_one_mode_and_the_mode_search_the_other(mixture):
    """One ADVI fit sits in one mode; the ascents from prior draws find the other, which
    becomes a component of a mixture base whose evidence is then the whole ``Z``."""
    with mixture.model:
        base = pme.fit_base("advi", restarts=1, n_steps=1000, random_seed=0)
    plan = BasePlan("advi", restarts=1, n_steps=1000, modes=False)
    alone = fit_plan(model_space(mixture.model), plan, np.random.default_rng(0)).base
    modes, _, _ = exact_mixture_posterior(mixture)
    assert alone.kind == "advi"
    assert min(np.max(np.abs(alone.mean - m)) for m in modes) < 0.3
    assert alone.log_zeta < mixture.log_z - 0.2
    assert base.kind == "mixture" and len(base.components()) == 2
    for m in modes:  # one component at each exact mode
        assert min(np.max(np.abs(mean - m)) for mean in base.means) < 0.3
    assert base.log_zeta == pytest.approx(mixture.log_z, abs=0.05)


# ------------------------------------------------------------------------------------------
# The prior base as a fit, and argument checks
def test_prior_base(regression):
    with regression[0].model:
        base = pme.fit_base("prior")
    assert isinstance(base, PriorBase)
    assert base.kind == "prior" and base.log_zeta == 0.0
    assert base.names == ("w",) and base.sizes == (3,) and base.ndim == 3
    assert base.space is model_space(regression[0].model)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"method": "nuts"}, "advi"), ({"method": "ADVI"}, "method"), ({"restarts": 0}, "restarts")],
)
def test_fit_base_bad_arguments(regression, kwargs, match):
    with regression[0].model, pytest.raises(ValueError, match=match):
        pme.fit_base(**kwargs)


# ------------------------------------------------------------------------------------------
# ADVI's steps: gradients, a failing restart, early stopping, determinism
def reparameterized_elbo(params, eps, d, fullrank, log_f):
    """ELBO of fixed standard-normal draws ``eps`` (R, n_mc, d), for finite differences."""
    x = _draw_points(params, eps, d, fullrank)
    entropy = params[:, d : 2 * d].sum(axis=1) + 0.5 * d * (1 + np.log(2 * np.pi))
    return log_f(x).mean(axis=1) + entropy


@pytest.mark.parametrize("fullrank", [False, True])
def test_elbo_gradients_match_finite_differences(fullrank):
    """log f(x) = -0.5 x' A x: analytic gradient -A x; the batched reparameterization
    gradient of every restart must equal the finite-difference gradient of its ELBO."""
    d, n_restarts, rng = 3, 2, np.random.default_rng(0)
    a = np.array([[2.0, 0.5, 0.0], [0.5, 1.0, 0.3], [0.0, 0.3, 1.5]])
    log_f = lambda x: -0.5 * np.einsum("...i,ij,...j->...", x, a, x)  # noqa: E731
    params = _init_params(rng.normal(size=(n_restarts, d)), fullrank, 0.5)
    params[:, d:] += 0.1 * rng.normal(size=params[:, d:].shape)
    eps = rng.standard_normal((n_restarts, 5, d))
    x = _draw_points(params, eps, d, fullrank)
    elbo, grad = _elbo_gradients(params, eps, log_f(x), -x @ a, d, fullrank)
    np.testing.assert_allclose(elbo, reparameterized_elbo(params, eps, d, fullrank, log_f))
    h, numeric = 1e-6, np.empty_like(params)
    for j in range(params.shape[1]):
        up, down = params.copy(), params.copy()
        up[:, j] += h
        down[:, j] -= h
        diff = reparameterized_elbo(up, eps, d, fullrank, log_f)
        numeric[:, j] = (diff - reparameterized_elbo(down, eps, d, fullrank, log_f)) / (2 * h)
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-7)


class _FakeDensity:
    """log f = -0.5 |x|^2, but NaN wherever x_0 > 50 (a start there never recovers)."""

    def __call__(self, xs):
        logp = -0.5 * np.sum(xs**2, axis=1)
        return np.where(xs[:, 0] > 50, np.nan, logp), -xs


def test_run_advi_drops_a_failing_restart_and_keeps_the_others():
    starts = np.array([[0.5, 0.5], [100.0, 0.0], [-1.0, 1.0]])
    result = run_advi(_FakeDensity(), starts, n_steps=400, rng=np.random.default_rng(0))
    assert result.errors[0] is None and result.errors[2] is None
    assert "non-finite" in result.errors[1]
    for k in (0, 2):  # the standard normal, up to ADVI noise
        np.testing.assert_allclose(result.means[k], 0.0, atol=0.15)
        np.testing.assert_allclose(np.diag(result.chols[k]), 1.0, atol=0.15)
    everything_fails = run_advi(
        _FakeDensity(), starts[[1, 1]], n_steps=400, rng=np.random.default_rng(0)
    )
    assert all("non-finite" in err for err in everything_fails.errors)


def test_fit_base_raises_when_every_restart_fails():
    with pm.Model() as model:
        x = pm.Normal("x", 0.0, 1.0)
        pm.Normal("y", x, -1.0, observed=np.array([0.5]))  # sigma < 0: -inf everywhere
    with pytest.raises(pme.BaseFitError, match="every ADVI fit failed"):
        pme.fit_base("advi", restarts=3, n_steps=200, random_seed=0, model=model)


def test_run_advi_early_stop_shortens_the_constant_phase_and_the_decay():
    """A plateau after ``k`` steps ends the constant rate there and the decay takes ``k``
    more steps, at least a quarter of ``n_steps`` (not half); the fits are as good as the
    full schedule's."""
    starts = np.zeros((3, 2))
    short = run_advi(_FakeDensity(), starts, n_steps=1600, rng=np.random.default_rng(1))
    full = run_advi(
        _FakeDensity(), starts, n_steps=1600, rng=np.random.default_rng(1), early_stop=False
    )
    assert full.n_steps == 1600 and full.traces.shape == (3, 1600)
    assert 600 <= short.n_steps <= 1000 and short.traces.shape == (3, short.n_steps)
    for result in (short, full):
        np.testing.assert_allclose(result.means, 0.0, atol=0.1)
        np.testing.assert_allclose(np.diagonal(result.chols, axis1=1, axis2=2), 1.0, atol=0.1)


def test_fit_base_restarts_default_starts_and_determinism(regression, monkeypatch):
    """Eight restarts by default: the initial point, then prior draws seeded from the
    generator; the same seed gives a bit-identical base."""
    import inspect

    from pymc_evidence.basefit import DEFAULT_RESTARTS
    from pymc_evidence.basefit import advi_fits as fit_module

    assert DEFAULT_RESTARTS == 8
    assert inspect.signature(pme.fit_base).parameters["restarts"].default == DEFAULT_RESTARTS
    model, seen = regression[0].model, {}
    real = fit_module.run_advi

    def spy(density, starts, **kwargs):
        seen["starts"] = starts
        return real(density, starts, **kwargs)

    monkeypatch.setattr(fit_module, "run_advi", spy)
    a = pme.fit_base("advi", n_steps=300, random_seed=3, model=model)
    space, rng = model_space(model), np.random.default_rng(3)
    assert seen["starts"].shape == (DEFAULT_RESTARTS, 3)
    np.testing.assert_array_equal(seen["starts"][0], space.initial_x())
    expected = prior_draws(space, DEFAULT_RESTARTS - 1, rng.integers(2**31))
    np.testing.assert_array_equal(seen["starts"][1:], expected)
    b = pme.fit_base("advi", n_steps=300, random_seed=3, model=model)
    for left, right in zip(a.moments(), b.moments(), strict=True):  # widened or not
        np.testing.assert_array_equal(left, right)
    assert a.log_zeta == b.log_zeta and a.elbo == b.elbo
    assert a.stats.n_pooled == DEFAULT_RESTARTS  # one mode: every restart is a duplicate
