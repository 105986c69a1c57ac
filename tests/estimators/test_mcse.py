"""Tests of pymc_evidence.estimators.mcse against analytic AR(1) truths and direct formulas."""

import numpy as np
import pytest
from scipy import signal

from pymc_evidence.estimators import (
    chain_agreement_pvalue,
    ess_mean,
    log_ratio_of_means,
    mcse_mean,
    ratio_influence,
)


def ar1(rho, shape, rng, innovations=None):
    """Stationary unit-variance AR(1) series along the last axis."""
    e = rng.normal(size=shape) if innovations is None else innovations
    start = rng.normal(size=shape[:-1])
    b, a = [np.sqrt(1.0 - rho**2)], [1.0, -rho]
    return signal.lfilter(b, a, e, axis=-1, zi=(rho * start)[..., None])[0]


def coverage(estimates, ses, truth, k=2.0):
    return float(np.mean(np.abs(np.asarray(estimates) - truth) <= k * np.asarray(ses)))


@pytest.mark.parametrize("rho", [-0.5, 0.0, 0.5, 0.9])
def test_ess_matches_ar1_theory(rho):
    rng = np.random.default_rng(11)
    chains, draws = 4, 5000
    truth = chains * draws * (1.0 - rho) / (1.0 + rho)
    ratios = [ess_mean(ar1(rho, (chains, draws), rng)) / truth for _ in range(8)]
    assert abs(np.mean(ratios) - 1.0) < 0.15
    assert np.all(np.abs(np.array(ratios) - 1.0) < 0.4)


def test_ess_is_invariant_to_affine_maps_and_accepts_1d():
    rng = np.random.default_rng(1)
    x = ar1(0.6, (3, 400), rng)
    assert ess_mean(x) == pytest.approx(ess_mean(5.0 - 3.0 * x), rel=1e-9)
    assert ess_mean(x[0]) == pytest.approx(ess_mean(x[:1]), rel=1e-12)


def test_ess_sees_chains_that_do_not_mix():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(4, 1000)) + np.array([-3.0, -1.0, 1.0, 3.0])[:, None]
    # within each chain the draws are iid, but the chain means differ: the mean is poorly known
    assert ess_mean(x) < 0.05 * x.size


def test_ess_degenerate_inputs():
    assert ess_mean(np.full((3, 10), 2.5)) == 30.0
    assert mcse_mean(np.full((3, 10), 2.5)) == 0.0
    rng = np.random.default_rng(3)
    # one draw from each of 50 independent runs: ESS is the number of runs
    assert ess_mean(rng.normal(size=(50, 1))) == pytest.approx(50.0)
    assert np.isnan(ess_mean(rng.normal(size=(1, 3))))
    assert np.isnan(mcse_mean(rng.normal(size=(1, 3))))
    assert 1.0 <= ess_mean(rng.normal(size=(2, 3))) <= 6.0
    x = rng.normal(size=(2, 20))
    x[1, 4] = np.nan
    assert np.isnan(ess_mean(x))
    with pytest.raises(ValueError):
        ess_mean(np.zeros((2, 3, 4)))


def test_mcse_mean_calibrated_on_ar1():
    rng = np.random.default_rng(4)
    rho, reps = 0.7, 200
    x = ar1(rho, (reps, 4, 500), rng)
    means = x.mean(axis=(1, 2))
    ses = np.array([mcse_mean(xi) for xi in x])
    assert 0.9 <= coverage(means, ses, 0.0) <= 0.99
    # analytic sd of the mean of 2000 AR(1) draws is close to sqrt((1+rho)/(1-rho)/2000)
    analytic = np.sqrt((1 + rho) / (1 - rho) / 2000)
    assert np.sqrt(np.mean(ses**2)) == pytest.approx(analytic, rel=0.1)


def test_log_ratio_matches_direct_formula():
    rng = np.random.default_rng(5)
    log_a, log_b = rng.normal(size=(3, 50)), rng.normal(0.5, 2.0, size=(3, 50))
    value, se, per_chain, per_chain_se = log_ratio_of_means(log_a, log_b)
    direct = np.log(np.mean(np.exp(log_a))) - np.log(np.mean(np.exp(log_b)))
    assert value == pytest.approx(direct, abs=1e-12)
    direct_chain = np.log(np.exp(log_a).mean(1)) - np.log(np.exp(log_b).mean(1))
    np.testing.assert_allclose(per_chain, direct_chain, atol=1e-12)
    assert np.isfinite(se) and se > 0 and per_chain_se.shape == (3,)


def test_log_ratio_iid_se_matches_delta_method_formula():
    rng = np.random.default_rng(6)
    a, b = rng.gamma(3.0, size=(1, 4000)), rng.gamma(5.0, size=(1, 4000))
    _, se, _, _ = log_ratio_of_means(np.log(a), np.log(b))
    n = a.size
    cov = np.cov(a / a.mean(), b / b.mean())
    delta_method = np.sqrt((cov[0, 0] + cov[1, 1] - 2 * cov[0, 1]) / n)
    assert se == pytest.approx(delta_method, rel=0.1)


def test_log_ratio_is_shift_invariant_and_never_overflows():
    rng = np.random.default_rng(7)
    log_a, log_b = rng.normal(size=(2, 100)), rng.normal(size=(2, 100))
    base = log_ratio_of_means(log_a, log_b)
    shifted = log_ratio_of_means(log_a + 1e4, log_b - 2e4)
    assert shifted[0] == pytest.approx(base[0] + 3e4, abs=1e-9)
    assert shifted[1] == pytest.approx(base[1], rel=1e-9)
    np.testing.assert_allclose(shifted[2], base[2] + 3e4, atol=1e-9)


def test_log_ratio_zero_values_and_bad_input():
    log_b = np.zeros((2, 10))
    value, _, per_chain, _ = log_ratio_of_means(np.full((2, 10), -np.inf), log_b)
    assert value == -np.inf and np.all(per_chain == -np.inf)
    log_a = np.zeros((2, 10))
    log_a[0, :5] = -np.inf  # half the values of chain 0 are zero
    value, _, per_chain, _ = log_ratio_of_means(log_a, log_b)
    assert value == pytest.approx(np.log(0.75))
    assert per_chain[0] == pytest.approx(np.log(0.5))
    log_a[1, 2] = np.nan
    with pytest.raises(ValueError, match="1 nan"):
        log_ratio_of_means(log_a, log_b)
    with pytest.raises(ValueError, match="same shape"):
        log_ratio_of_means(np.zeros((2, 10)), np.zeros((2, 11)))


def test_log_ratio_calibrated_on_correlated_lognormal_ar1():
    rng = np.random.default_rng(8)
    reps, shape, rho, corr = 200, (4, 500), 0.5, 0.6
    s_a, s_b = 0.8, 0.5
    e1 = rng.normal(size=(reps, *shape))
    e2 = corr * e1 + np.sqrt(1 - corr**2) * rng.normal(size=(reps, *shape))
    log_a = s_a * ar1(rho, e1.shape, rng, innovations=e1)
    log_b = s_b * ar1(rho, e2.shape, rng, innovations=e2)
    truth = (s_a**2 - s_b**2) / 2.0  # log E[e^{s Z}] = s^2 / 2
    out = [log_ratio_of_means(a, b) for a, b in zip(log_a, log_b, strict=True)]
    values, ses = np.array([o[0] for o in out]), np.array([o[1] for o in out])
    assert 0.9 <= coverage(values, ses, truth) <= 0.99
    assert np.std(values) / np.sqrt(np.mean(ses**2)) == pytest.approx(1.0, abs=0.2)
    chain_values = np.concatenate([o[2] for o in out])
    chain_ses = np.concatenate([o[3] for o in out])
    assert 0.88 <= coverage(chain_values, chain_ses, truth) <= 0.99


def test_chain_agreement_pvalue_is_calibrated_and_detects_a_stuck_chain():
    rng = np.random.default_rng(9)
    x = ar1(0.8, (300, 4, 500), rng)
    p = np.array([chain_agreement_pvalue(xi) for xi in x])
    assert 0.02 <= np.mean(p < 0.05) <= 0.1  # nominal 0.05 under agreement
    shifted = x[0] + np.array([0.0, 0.0, 0.0, 1.0])[:, None]
    assert chain_agreement_pvalue(shifted) < 1e-4
    assert np.isnan(chain_agreement_pvalue(x[0, :1]))


def test_ratio_influence_linearises_the_per_chain_estimates():
    rng = np.random.default_rng(10)
    log_a, log_b = 0.3 * rng.normal(size=(4, 2000)), 0.3 * rng.normal(size=(4, 2000))
    value, _, per_chain, _ = log_ratio_of_means(log_a, log_b)
    z = ratio_influence(log_a, log_b)
    assert abs(z.mean()) < 1e-12
    np.testing.assert_allclose(per_chain - value, z.mean(axis=1), atol=2e-3)
