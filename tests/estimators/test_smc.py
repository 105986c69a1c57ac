"""The SMC evidence estimators (:mod:`pymc_evidence.estimators.smc` and the resampling of
:mod:`pymc_evidence.estimators.logspace`) against analytic values."""

import numpy as np
import pytest
from scipy.special import logsumexp

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
