"""Base densities: ADVI fits against exact Gaussian posteriors, the Gaussian base itself,
moment matching, and the model's raveled unconstrained space.

The conjugate regression below has a strongly correlated posterior (correlation -0.58
between two weights), so mean-field and full-rank fits are told apart by their variances.
"""

import warnings

import numpy as np
import pymc as pm
import pytest
from scipy import special, stats

import pymc_evidence as pme
from pymc_evidence import GaussianBase, PriorBase
from pymc_evidence.base import prior_draws
from pymc_evidence.base.gaussian import moment_match
from pymc_evidence.basefit import BasePlan
from pymc_evidence.basefit.advi import (
    _draw_points,
    _elbo_gradients,
    _init_params,
    batched_logp,
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
    assert meanfield_base.info["is_ess"] < WIDEN_BELOW * 1000
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
    assert base.info["n_components"] == 2
    lo, hi = modes.min(axis=0), modes.max(axis=0)
    assert np.all((base.mean > lo) & (base.mean < hi))
    np.testing.assert_allclose(base.mean, mean, atol=0.2)
    np.testing.assert_allclose(base.cov, cov, atol=0.1 * np.max(np.diag(cov)))
    assert abs(base.log_zeta - mixture.log_z) < 0.1, (base.log_zeta, mixture.log_z)
    # each component alone misses the other mode's mass
    assert max(base.info["component_log_zeta"]) < mixture.log_z - 0.2


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
# Prior base and argument checks
def test_prior_base(regression):
    with regression[0].model:
        base = pme.fit_base("prior")
    assert isinstance(base, PriorBase)
    assert base.kind == "prior" and base.log_zeta == 0.0
    assert base.names == ("w",) and base.sizes == (3,) and base.ndim == 3
    assert base.space is model_space(regression[0].model)


S_SCALE, MU_LOC = 2.0, 1.0


@pytest.fixture(scope="module")
def hierarchical_prior():
    """s ~ HalfNormal(2), mu ~ N(1, s) (2,): unconstrained x = (log s, mu_1, mu_2)."""
    with pm.Model() as model:
        s = pm.HalfNormal("s", np.float64(S_SCALE))
        mu = pm.Normal("mu", np.float64(MU_LOC), s, shape=2)
        pm.Normal("y", mu.sum(), 1.0, observed=np.array([0.5]))
    return model, PriorBase.for_model(model)


def prior_logp_by_hand(x):
    """log HalfNormal(s; 2) + log s (Jacobian) + log N(mu; 1, s)."""
    x = np.atleast_2d(x)
    s = np.exp(x[:, 0])
    return (
        stats.halfnorm.logpdf(s, scale=S_SCALE)
        + x[:, 0]
        + stats.norm.logpdf(x[:, 1:], MU_LOC, s[:, None]).sum(axis=1)
    )


def test_prior_logp_matches_hand_derivation(hierarchical_prior):
    _, base = hierarchical_prior
    x = np.random.default_rng(0).normal(size=(8, 3))
    np.testing.assert_allclose(base.logp(x), prior_logp_by_hand(x), rtol=1e-10)


def test_prior_logp_is_normalized():
    with pm.Model() as model:  # 2-D version of the hierarchical prior, by quadrature
        s = pm.HalfNormal("s", np.float64(S_SCALE))
        pm.Normal("mu", np.float64(MU_LOC), s)
    base = PriorBase.for_model(model)
    # log s on a grid; mu on a grid scaled to each s (mu = 1 + s t, d mu = s dt)
    a, t = np.linspace(-14.0, 4.0, 721), np.linspace(-9.0, 9.0, 721)
    aa, tt = np.meshgrid(a, t, indexing="ij")
    mu = MU_LOC + np.exp(aa) * tt
    dens = np.exp(base.logp(np.column_stack([aa.ravel(), mu.ravel()]))).reshape(aa.shape)
    total = np.trapezoid(np.trapezoid(dens, t, axis=1) * np.exp(a), a)
    assert total == pytest.approx(1.0, abs=1e-4)


def test_prior_samples_match_the_prior(hierarchical_prior):
    _, base = hierarchical_prior
    x = base.sample(20_000, np.random.default_rng(1))
    assert x.shape == (20_000, 3)
    s = np.exp(x[:, 0])
    assert stats.kstest(s, stats.halfnorm(scale=S_SCALE).cdf).pvalue > 1e-3
    z = (x[:, 1:] - MU_LOC) / s[:, None]  # mu | s ~ N(1, s): standardised, N(0, 1)
    for j in range(2):
        assert stats.kstest(z[:, j], "norm").pvalue > 1e-3
    assert abs(np.corrcoef(z[:, 0], z[:, 1])[0, 1]) < 0.03
    # E[log s] = log 2 + E[log |N(0, 1)|] = log 2 - (euler_gamma + log 2) / 2
    mean, cov = base.moments()
    expected = np.log(S_SCALE) - 0.5 * (np.euler_gamma + np.log(2.0))
    assert mean[0] == pytest.approx(expected, abs=0.08)
    assert cov[0, 0] == pytest.approx(np.pi**2 / 8, rel=0.1)
    assert np.all(np.isfinite(base.scale)) and np.all(base.scale > 0)


def test_prior_draws_are_seeded_and_vectorized(hierarchical_prior):
    model, base = hierarchical_prior
    space = model_space(model)
    a, b = prior_draws(space, 50, 5), prior_draws(space, 50, 5)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, prior_draws(space, 50, 6))
    g1, g2 = base.sample(7, np.random.default_rng(3)), base.sample(7, np.random.default_rng(3))
    np.testing.assert_array_equal(g1, g2)
    from pymc_evidence.base.prior import _cache

    assert _cache(space)["draw"][2]  # the vectorized path


def test_prior_draws_respect_dependent_bounds():
    """u ~ Uniform(0, ub) with ub ~ Exponential(1): the interval transform of each draw must
    use that draw's ub, so sigmoid(x_u) = u / ub is Uniform(0, 1)."""
    with pm.Model() as model:
        ub = pm.Exponential("ub", 1.0)
        pm.Uniform("u", 0.0, ub, shape=2)
    x = prior_draws(model_space(model), 5000, 0)
    assert np.all(np.isfinite(x))
    ratio = special.expit(x[:, 1:]).ravel()
    assert stats.kstest(ratio, "uniform").pvalue > 1e-3
    assert stats.kstest(np.exp(x[:, 0]), "expon").pvalue > 1e-3


def test_prior_draws_fall_back_when_not_batchable():
    """ZeroSumNormal with a random sigma cannot be batched: a loop (logged, no warning)."""
    with pm.Model() as model:
        tau = pm.HalfNormal("tau", 1.0)
        pm.ZeroSumNormal("z", sigma=tau, shape=3)
    space = model_space(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error", pme.ModelWarning)
        x = prior_draws(space, 300, 1)
    np.testing.assert_array_equal(x, prior_draws(space, 300, 1))
    assert x.shape == (300, 3) and np.all(np.isfinite(PriorBase.for_model(model).logp(x)))
    assert stats.kstest(np.exp(x[:, 0]), stats.halfnorm().cdf).pvalue > 1e-3


def test_prior_base_without_a_model_refuses_to_sample():
    base = PriorBase(names=("w",), sizes=(3,))
    assert base.ndim == 3
    with pytest.raises(ValueError, match="for_model"):
        base.sample(3, np.random.default_rng(0))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"method": "nuts"}, "advi"), ({"method": "ADVI"}, "method"), ({"restarts": 0}, "restarts")],
)
def test_fit_base_bad_arguments(regression, kwargs, match):
    with regression[0].model, pytest.raises(ValueError, match=match):
        pme.fit_base(**kwargs)


# ------------------------------------------------------------------------------------------
# GaussianBase and moment_match
@pytest.fixture(scope="module")
def random_gaussian():
    rng = np.random.default_rng(42)
    a = rng.normal(size=(4, 4))
    cov = a @ a.T + 0.5 * np.eye(4)
    mean = rng.normal(size=4)
    return mean, cov, GaussianBase(mean, np.linalg.cholesky(cov), log_zeta=0.0, kind="moments")


def test_gaussian_logp_matches_scipy(random_gaussian):
    mean, cov, base = random_gaussian
    x = np.random.default_rng(1).normal(size=(7, 4)) * 2
    np.testing.assert_allclose(
        base.logp(x), stats.multivariate_normal(mean, cov).logpdf(x), rtol=1e-12
    )
    assert base.logp(x[0]).shape == (1,)
    np.testing.assert_allclose(base.cov, cov, rtol=1e-12)
    np.testing.assert_allclose(base.std, np.sqrt(np.diag(cov)), rtol=1e-12)
    assert base.log_det_chol() == pytest.approx(0.5 * np.linalg.slogdet(cov)[1], rel=1e-12)


def test_gaussian_sample_moments(random_gaussian):
    mean, cov, base = random_gaussian
    x = base.sample(40_000, np.random.default_rng(3))
    assert x.shape == (40_000, 4)
    se = np.sqrt(np.diag(cov) / 40_000)
    assert_estimate(x.mean(axis=0), mean, se, abs_tol=0.02 * np.sqrt(np.max(np.diag(cov))))
    np.testing.assert_allclose(np.cov(x.T), cov, atol=0.05 * np.max(np.diag(cov)))


def test_gaussian_from_moments_and_validation(random_gaussian):
    mean, cov, _ = random_gaussian
    base = GaussianBase.from_moments(mean, cov, log_zeta=-2.0)
    np.testing.assert_allclose(base.cov, cov, rtol=1e-7)
    assert base.log_zeta == -2.0 and base.kind == "moments"
    assert base.with_values(log_zeta=1.0).log_zeta == 1.0 and base.log_zeta == -2.0
    with pytest.raises(ValueError):
        GaussianBase(np.zeros(2), np.eye(3), log_zeta=0.0, kind="x")
    with pytest.raises(ValueError):
        GaussianBase(np.zeros(2), np.diag([1.0, 0.0]), log_zeta=0.0, kind="x")
    with pytest.raises(ValueError):
        GaussianBase(np.array([0.0, np.nan]), np.eye(2), log_zeta=0.0, kind="x")


def test_moment_match_hand_numbers():
    """Weights 1/4, 3/4; means (0,0), (2,-2); covariances I, 2I:
    mean = (1.5, -1.5); E[xx'] = I/4 + 3/4 (2I + [[4,-4],[-4,4]]) = [[4.75,-3],[-3,4.75]];
    cov = E[xx'] - mean mean' = [[2.5, -0.75], [-0.75, 2.5]]."""
    means = np.array([[0.0, 0.0], [2.0, -2.0]])
    covs = np.array([np.eye(2), 2 * np.eye(2)])
    for log_w in (np.log([0.25, 0.75]), np.array([10.0, 10.0 + np.log(3.0)])):  # unnormalized
        mean, cov = moment_match(log_w, means, covs)
        np.testing.assert_allclose(mean, [1.5, -1.5], rtol=1e-12)
        np.testing.assert_allclose(cov, [[2.5, -0.75], [-0.75, 2.5]], rtol=1e-12)


# ------------------------------------------------------------------------------------------
# ModelSpace
@pytest.fixture(scope="module")
def constrained_model():
    with pm.Model() as model:
        s = pm.HalfNormal("s", np.float64(2.0))
        p = pm.Beta("p", np.float64(2.0), np.float64(3.0), shape=2)
        mu = pm.Normal("mu", np.float64(0.0), np.float64(1.0), shape=(2, 2))
        pm.Normal("y", mu.sum() * p.sum(), s, observed=np.array([0.3, 1.2]))
    return model


def test_space_layout(constrained_model):
    space = model_space(constrained_model)
    assert space is model_space(constrained_model)  # cached
    assert space.names == ("s_log__", "p_logodds__", "mu")
    assert space.sizes == (1, 2, 4) and space.ndim == 7
    assert space.shapes == ((), (2,), (2, 2))


def test_unconstrain_is_log_and_logit(constrained_model):
    space = model_space(constrained_model)
    rng = np.random.default_rng(0)
    s = rng.uniform(0.1, 3.0, size=(2, 5))
    p = rng.uniform(0.05, 0.95, size=(2, 5, 2))
    mu = rng.normal(size=(2, 5, 2, 2))
    x = space.unconstrain({"s": s, "p": p, "mu": mu})
    assert x.shape == (2, 5, 7)
    np.testing.assert_allclose(x[..., 0], np.log(s), rtol=1e-12)
    np.testing.assert_allclose(x[..., 1:3], special.logit(p), rtol=1e-10)
    np.testing.assert_allclose(x[..., 3:], mu.reshape(2, 5, 4), rtol=1e-12)
    # and back
    back = space.constrain(x[1, 3])
    assert back["s"] == pytest.approx(s[1, 3], rel=1e-12)
    np.testing.assert_allclose(back["p"], p[1, 3], rtol=1e-10)
    np.testing.assert_allclose(back["mu"], mu[1, 3], rtol=1e-12)
    # ravel / unravel of value points
    point = space.unravel(x[0, 0])
    assert set(point) == set(space.names) and point["mu"].shape == (2, 2)
    np.testing.assert_array_equal(space.ravel(point), x[0, 0])


def test_space_logp_includes_jacobians(constrained_model):
    space = model_space(constrained_model)
    x = np.array([np.log(1.3), special.logit(0.3), special.logit(0.6), 0.1, -0.2, 0.5, 0.3])
    s, p, mu = 1.3, np.array([0.3, 0.6]), x[3:]
    expected = (
        stats.halfnorm.logpdf(s, scale=2.0)
        + np.log(s)
        + stats.beta.logpdf(p, 2, 3).sum()
        + np.log(p * (1 - p)).sum()
        + stats.norm.logpdf(mu).sum()
        + stats.norm.logpdf([0.3, 1.2], mu.sum() * p.sum(), s).sum()
    )
    logp, grad = space.logp_dlogp(x)
    assert logp == pytest.approx(expected, rel=1e-10)
    # gradient by central differences
    eps = 1e-6
    numeric = [
        (space.logp_dlogp(x + eps * e)[0] - space.logp_dlogp(x - eps * e)[0]) / (2 * eps)
        for e in np.eye(7)
    ]
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(space.logp_many(np.stack([x, x])), [expected, expected], rtol=1e-10)


# ------------------------------------------------------------------------------------------
# Batched ADVI: the vectorized log density, all restarts at once, failures, determinism
def test_batched_logp_matches_the_single_point_function(constrained_model):
    space = model_space(constrained_model)
    x = np.random.default_rng(5).normal(size=(6, space.ndim))
    density = batched_logp(space)
    assert density.vectorized and density is batched_logp(space)  # compiled once, cached
    logp, grad = density(x)
    assert logp.shape == (6,) and grad.shape == (6, space.ndim)
    for row, lp, g in zip(x, logp, grad, strict=True):
        ref_lp, ref_g = space.logp_dlogp(row)
        assert lp == pytest.approx(ref_lp, rel=1e-10)
        np.testing.assert_allclose(g, ref_g, rtol=1e-8, atol=1e-10)
    loop_logp, loop_grad = batched_logp(space, vectorize=False)(x)
    assert not batched_logp(space, vectorize=False).vectorized
    np.testing.assert_allclose(loop_logp, logp, rtol=1e-10)
    np.testing.assert_allclose(loop_grad, grad, rtol=1e-8, atol=1e-10)


def test_batched_logp_rejects_rows_one_by_one():
    """A parameter check (sigma > 0) failing at one row gives -inf at that row only: a
    vectorized check would reject the whole batch."""
    with pm.Model() as model:
        s = pm.Normal("s", 1.0, 1.0)
        pm.Normal("y", 0.0, s, observed=np.array([0.3, 0.5]))
    logp, grad = batched_logp(model_space(model))(np.array([[1.0], [-1.0], [2.0]]))
    assert np.isneginf(logp[1]) and np.all(np.isfinite(logp[[0, 2]]))
    expected = stats.norm.logpdf([1.0, 2.0], 1.0, 1.0) + [
        stats.norm.logpdf([0.3, 0.5], 0.0, s).sum() for s in (1.0, 2.0)
    ]
    np.testing.assert_allclose(logp[[0, 2]], expected, rtol=1e-10)
    assert np.all(np.isfinite(grad[[0, 2]]))


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
    assert a.info["n_pooled"] == DEFAULT_RESTARTS  # one mode: every restart is a duplicate


def test_initial_point_function_compiled_once_and_follows_data_and_initvals():
    """The space keeps the compiled initial-point function: the same function across calls,
    while ``pm.set_data`` and a new initial value are still seen."""
    with pm.Model() as model:
        level = pm.Data("level", 1.0)
        x = pm.Normal("x", mu=level)
    space = model_space(model)
    assert space.initial_x().tolist() == [1.0]
    fn = space._initial_point[1]
    pm.set_data({"level": 3.0}, model=model)
    assert space.initial_x().tolist() == [3.0] and space._initial_point[1] is fn
    model.set_initval(x, 5.0)
    assert space.initial_x().tolist() == [5.0] and space._initial_point[1] is not fn


def test_initial_point_is_pymcs_without_compiling_c(monkeypatch):
    """The space's initial point is ``model.initial_point()`` (transformed values, a user's
    initial value included) on a model whose PyMC initial-point function compiles C (the
    ``Scan`` behind ``LKJCholeskyCov``: 3-7 s of a first call), built without any C."""
    from pytensor.link.c.basic import CLinker

    with pm.Model() as model:
        sd = pm.Exponential.dist(1.0, shape=3)
        pm.LKJCholeskyCov("chol", n=3, eta=2.0, sd_dist=sd, compute_corr=False)
        pm.HalfNormal("s", initval=2.5)
        pm.Uniform("u", -1.0, 3.0, shape=2)
    expected = model.initial_point()

    def no_c(*args, **kwargs):
        raise AssertionError("the initial point compiled C")

    monkeypatch.setattr(CLinker, "make_thunk", no_c)
    point = model_space(model).initial_point()
    assert list(point) == list(expected)
    for name, value in expected.items():
        np.testing.assert_array_equal(point[name], value)
    assert point["s_log__"] == pytest.approx(np.log(2.5))


def test_no_jit_clip_runs_as_numpy_with_the_values_of_clip():
    """``compile_fn(jit=False)`` rewrites ``clip`` (which PyTensor's Python linker runs
    element by element) to switches: the values of ``clip``, NaN and ``lo > hi`` included."""
    import pytensor.tensor as pt

    from pymc_evidence.runtime._compile import compile_fn

    x, lo, hi = pt.vector("x"), pt.scalar("lo"), pt.scalar("hi")
    fn = compile_fn([x, lo, hi], pt.clip(x, lo, hi), jit=False)
    assert "Clip" not in str([node.op for node in fn.maker.fgraph.apply_nodes])
    values = np.array([-1.0, 0.5, 3.0, np.nan, np.inf, -np.inf])
    for a, b in [(0.0, 1.0), (2.0, 1.0), (np.nan, 1.0)]:
        expected = [a if v < a else (b if v > b else v) for v in values]  # Clip.impl's rule
        np.testing.assert_array_equal(fn(values, a, b), expected)
