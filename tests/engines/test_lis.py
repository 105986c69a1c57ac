"""The linked importance sampling engine (:mod:`pymc_evidence.engines.lis`, Neal 2005) and
bridged AIS / LIS runs.

Truth comes from a 1-D Gaussian path whose ``log Z`` is a constant we choose, and from PyMC
models with closed-form evidence. The estimators are tested in
``tests/estimators/test_lis.py``.
"""

from dataclasses import replace

import numpy as np
import pytest
from scipy.special import logit

from pymc_evidence.base import GaussianBase
from pymc_evidence.engines import (
    KernelSettings,
    LinkSettings,
    batched_log_densities,
    run_forward_ais,
    sigmoidal_schedule,
)
from pymc_evidence.engines.lis import interpolate_step_sizes, run_lis
from pymc_evidence.estimators.lis import (
    bridged_log_evidence,
    lis_log_evidence,
    reverse_lis_log_evidence,
)
from pymc_evidence.testing.models import beta_bernoulli, conjugate_regression
from tests._accuracy import assert_estimate, assert_log_z

# --------------------------------------------------------------------------------------------
# Engine on a 1-D Gaussian path: q = N(0, 1), f = c N(m, s^2), so log Z = log c exactly
# --------------------------------------------------------------------------------------------

LOG_C, M_F, S_F = 1.3, 1.5, 0.8


class Gauss1D:
    """A stand-in for BatchedDensity: ``(log f, log q, grad f, grad q)`` per row."""

    n_calls = 0

    def __call__(self, x):
        self.n_calls += 1
        x = np.atleast_2d(x)[:, 0]
        z = (x - M_F) / S_F
        log_f = LOG_C - 0.5 * np.log(2 * np.pi * S_F**2) - 0.5 * z**2
        log_q = -0.5 * np.log(2 * np.pi) - 0.5 * x**2
        return log_f, log_q, (-z / S_F)[:, None], -x[:, None]


def _reverse(settings):
    """The same kernel and links, walked from the posterior back to the base."""
    kernel, links = settings
    return kernel, replace(links, direction="reverse")


def _mean_ratio(log_r, log_target):
    """Mean and se of r / r_true (the unbiased scale, not the log)."""
    r = np.exp(log_r - log_target)
    return r.mean(), r.std(ddof=1) / np.sqrt(r.size)


@pytest.mark.parametrize("kernel", ["hmc", "rwm"])
def test_engine_unbiased_with_poor_mixing(kernel):
    """Monte Carlo: E[r] = c forward and E[rbar] = 1/c reverse, chains far from equilibrium."""
    n, betas = 20_000, [0.0, 0.3, 0.7, 1.0]
    rng = np.random.default_rng(11)
    settings = (
        KernelSettings(step_size=1.5, n_leapfrog=1, scale=None, kind=kernel),
        LinkSettings(chain_length=3),
    )
    log_r, info = run_lis(Gauss1D(), betas, rng.normal(size=(n, 1)), rng, *settings)
    mean, se = _mean_ratio(log_r, LOG_C)
    assert_estimate(mean, 1.0, se, abs_tol=0.08, label="forward E[r] / c")
    assert se < 0.02
    assert np.mean(log_r) < LOG_C  # Jensen: the log of one run is biased low
    post = rng.normal(M_F, S_F, size=(n, 1))  # exact draws from pi_1 = f / c
    log_rbar, _ = run_lis(Gauss1D(), betas, post, rng, *_reverse(settings))
    mean, se = _mean_ratio(log_rbar, -LOG_C)
    assert_estimate(mean, 1.0, se, abs_tol=0.08, label="reverse E[rbar] c")
    assert se < 0.02
    assert info.acceptance.shape == (4,) and np.all(info.acceptance < 0.95)
    assert info.log_factors.shape == (n, 3)
    np.testing.assert_allclose(info.log_factors.sum(axis=1), log_r)


def test_engine_independent_end_chains_unbiased():
    """x0 of K+1 iid draws (T_0 = independent sampling) and an end_sampler keep E[r] exact."""
    n, k, betas = 20_000, 2, [0.0, 0.5, 1.0]
    rng = np.random.default_rng(12)
    settings = (
        KernelSettings(step_size=[0.5, 1.2, 0.6], n_leapfrog=2, scale=None),
        LinkSettings(chain_length=k),
    )
    x0 = rng.normal(size=(n, k + 1, 1))
    log_r, info = run_lis(Gauss1D(), betas, x0, rng, *settings)
    mean, se = _mean_ratio(log_r, LOG_C)
    assert_estimate(mean, 1.0, se, abs_tol=0.1, label="forward E[r] / c")
    assert np.isnan(info.acceptance[0]) and np.isfinite(info.acceptance[1:]).all()

    def base_sampler(m, gen):
        return gen.normal(size=(m, 1))

    post = rng.normal(M_F, S_F, size=(n, 1))
    log_rbar, info_r = run_lis(
        Gauss1D(), betas, post, rng, *_reverse(settings), end_sampler=base_sampler
    )
    mean, se = _mean_ratio(log_rbar, -LOG_C)
    assert_estimate(mean, 1.0, se, abs_tol=0.1, label="reverse E[rbar] c")
    assert np.isnan(info_r.acceptance[0]) and np.isfinite(info_r.acceptance[1:]).all()
    # Link diagnostics: betas order, forward sign (estimates of log Z_{k+1}/Z_k) both ways.
    assert info.link_log_ratio.sum() == pytest.approx(np.mean(log_r))
    assert info_r.link_log_ratio.sum() == pytest.approx(-np.mean(log_rbar))
    assert info.link_log_ratio.sum() < LOG_C < info_r.link_log_ratio.sum()


def test_engine_without_transitions_is_simple_importance_sampling():
    """K = 0 and one link: r = f / q at the start draw, exactly."""
    x0 = np.linspace(-2, 2, 7)[:, None]
    kernel, links = KernelSettings(step_size=np.nan, scale=None), LinkSettings(chain_length=0)
    log_r, info = run_lis(Gauss1D(), [0.0, 1.0], x0, np.random.default_rng(0), kernel, links)
    log_f, log_q, _, _ = Gauss1D()(x0)
    np.testing.assert_allclose(log_r, log_f - log_q, rtol=1e-12)
    assert info.n_density_calls == 1


def test_engine_argument_checks():
    x0, rng = np.zeros((4, 1)), np.random.default_rng(0)
    kernel, one = KernelSettings(step_size=1.0, scale=None), LinkSettings(chain_length=1)
    with pytest.raises(ValueError, match="start"):
        run_lis(Gauss1D(), [0.2, 1.0], x0, rng, kernel, one)
    with pytest.raises(ValueError, match="direction"):
        LinkSettings(chain_length=1, direction="up")
    with pytest.raises(ValueError, match="step_sizes"):
        gap = KernelSettings(step_size=[1, np.nan, 1], scale=None)
        run_lis(Gauss1D(), [0.0, 0.5, 1.0], x0, rng, gap, one)
    with pytest.raises(ValueError, match="states per run"):
        run_lis(Gauss1D(), [0.0, 1.0], np.zeros((4, 2, 1)), rng, kernel, LinkSettings(3))
    with pytest.raises(ValueError, match="kind"):
        KernelSettings(step_size=1.0, kind="nuts")
    with pytest.raises(ValueError, match="needs the base"):
        run_lis(Gauss1D(), [0.0, 1.0], x0, rng, KernelSettings(step_size=1.0), one)


def test_interpolate_step_sizes_skips_nan():
    eps = interpolate_step_sizes([0.0, 0.25, 0.75, 1.0], [np.nan, 0.2, 0.8, np.nan], [0, 0.5, 1])
    np.testing.assert_allclose(eps, [0.2, 0.4, 0.8])  # geometric mean in the middle


# --------------------------------------------------------------------------------------------
# PyMC models with exact log Z
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def regression():
    """Conjugate regression d=5 with a mean-field (ADVI-like), shifted Gaussian base."""
    case = conjugate_regression(d=5)
    X, y = case.data["X"], case.data["y"]
    precision = X.T @ X / case.data["sigma"] ** 2 + np.eye(5) / case.data["prior_sigma"] ** 2
    cov = np.linalg.inv(precision)
    mean = cov @ X.T @ y / case.data["sigma"] ** 2
    base = GaussianBase.from_moments(
        mean + 0.5 * np.sqrt(np.diag(cov)),
        np.diag(1.0 / np.diag(precision)),
        log_zeta=0.0,
        names=("w",),
        sizes=(5,),
    )
    density = batched_log_densities(case.model, base)
    rng = np.random.default_rng(21)
    _, pilot = run_forward_ais(
        density, base, sigmoidal_schedule(30), 32, rng, KernelSettings(n_leapfrog=5)
    )
    return case, mean, cov, base, density, pilot


def test_regression_forward_reverse_bridged(regression):
    case, mean, cov, base, density, pilot = regression
    rng = np.random.default_rng(22)
    n, k, betas = 64, 20, np.linspace(0.0, 1.0, 6)
    steps = interpolate_step_sizes(pilot.beta, pilot.step_size, betas)
    settings = (
        KernelSettings(step_size=steps, n_leapfrog=5, scale=pilot.scale),
        LinkSettings(chain_length=k),
    )
    x0 = base.sample(n * (k + 1), rng).reshape(n, k + 1, 5)
    log_r, info = run_lis(density, betas, x0, rng, *settings)
    post = rng.multivariate_normal(mean, cov, size=n)
    log_rbar, info_r = run_lis(
        density, betas, post, rng, *_reverse(settings), end_sampler=base.sample
    )
    forward, reverse = lis_log_evidence(log_r), reverse_lis_log_evidence(log_rbar)
    bridged = bridged_log_evidence(log_r, log_rbar)
    for est in (forward, reverse, bridged):
        assert_log_z(est, case.log_z, abs_tol=0.1, se_max=0.1)
    # Stochastic bounds (generous MC allowance): E[log r] <= log Z <= -E[log rbar].
    assert forward.diagnostics["mean_log_r"] <= case.log_z + 0.1
    assert -reverse.diagnostics["mean_log_r"] >= case.log_z - 0.1
    assert np.nansum(info.link_log_ratio) == pytest.approx(case.log_z, abs=0.5)
    assert info.n_density_calls == 1 + 5 * k * 5  # iid chain 0, five HMC chains
    assert np.all(info.link_ess > 1.0) and np.all(info_r.acceptance[1:] > 0.2)


def test_beta_bernoulli_bridged():
    case = beta_bernoulli()
    heads, flips = int(case.data["y"].sum()), case.data["y"].size
    a, b = case.data["a"] + heads, case.data["b"] + flips - heads
    var = (a + b) / (a * b)  # variance of the posterior log-odds, Laplace approximation
    base = GaussianBase.from_moments(
        np.array([logit(a / (a + b)) + 0.3]), np.array([[1.5 * var]]), log_zeta=0.0,
        names=("p_logodds__",), sizes=(1,),
    )  # fmt: skip
    density = batched_log_densities(case.model, base)
    rng = np.random.default_rng(31)
    n, k, betas = 64, 10, np.linspace(0.0, 1.0, 4)
    settings = (
        KernelSettings(step_size=1.0, n_leapfrog=3, scale=base.std),
        LinkSettings(chain_length=k),
    )
    x0 = base.sample(n * (k + 1), rng).reshape(n, k + 1, 1)
    log_r, _ = run_lis(density, betas, x0, rng, *settings)
    post = logit(rng.beta(a, b, size=(n, 1)))
    log_rbar, _ = run_lis(density, betas, post, rng, *_reverse(settings), end_sampler=base.sample)
    assert_log_z(bridged_log_evidence(log_r, log_rbar), case.log_z, abs_tol=0.1, se_max=0.05)
    assert_log_z(lis_log_evidence(log_r), case.log_z, abs_tol=0.1, se_max=0.05)
