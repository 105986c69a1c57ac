"""The base densities themselves: the prior base (its log density, draws and prior draws),
the Gaussian base and moment matching."""

import warnings

import numpy as np
import pymc as pm
import pytest
from scipy import special, stats

import pymc_evidence as pme
from pymc_evidence import GaussianBase, PriorBase
from pymc_evidence.base import prior_draws
from pymc_evidence.base.gaussian import moment_match
from pymc_evidence.runtime import model_space
from tests._accuracy import assert_estimate

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
