"""Tests of pymc_evidence.estimators.rts against analytic truths (digest seed_rts.md).

Gaussian geometric path: base q = N(0, S0^2) (normalised), target f(x) = exp(C) N(x; M, S1^2).
f_beta q^(1-beta) is Gaussian-proportional, with precision lam = beta/S1^2 + (1-beta)/S0^2,
mean mu = beta M / (S1^2 lam) and

    log Z(beta) = beta C - beta/2 log(2 pi S1^2) - (1-beta)/2 log(2 pi S0^2)
                  - beta M^2 / (2 S1^2) + lam mu^2 / 2 + 1/2 log(2 pi / lam),

so log Z(0) = 0 and log Z(1) = C. Exact draws of the extended joint q(x, k) ∝ f_k r_k / Zhat_k:
k ~ Categorical(∝ r_k Z_k / Zhat_k), then x ~ N(mu_k, 1/lam_k).
"""

import warnings

import numpy as np
import pytest
from scipy import special, stats

from pymc_evidence.estimators.diagnostics import EvidenceWarning
from pymc_evidence.estimators.mcse import log_ratio_of_means
from pymc_evidence.estimators.record import EvidenceEstimate
from pymc_evidence.estimators.rts import (
    adaptation_converged,
    default_ladder,
    level_log_conditionals,
    naive_count_log_evidence,
    rb_thermodynamic_integration,
    round_trips,
    rts_level_estimates,
    rts_log_evidence,
    rts_update,
    validate_ladder,
)
from tests._accuracy import Z_MAX, assert_estimate, assert_log_z

C, M, S1, S0 = -2.3, 1.5, 0.5, 3.0
BETAS = default_ladder(12, 3.0)
K = BETAS.size


def precision_mean(beta):
    lam = beta / S1**2 + (1 - beta) / S0**2
    return lam, beta * M / (S1**2 * lam)


def log_z_beta(beta):
    beta = np.asarray(beta, dtype=float)
    lam, mu = precision_mean(beta)
    return (
        beta * C
        - beta / 2 * np.log(2 * np.pi * S1**2)
        - (1 - beta) / 2 * np.log(2 * np.pi * S0**2)
        - beta * M**2 / (2 * S1**2)
        + lam * mu**2 / 2
        + 0.5 * np.log(2 * np.pi / lam)
    )


def mean_delta_beta(beta):
    """E_beta[delta] in closed form (delta is quadratic in x, p(x|beta) Gaussian)."""
    lam, mu = precision_mean(np.asarray(beta, dtype=float))
    var = 1 / lam
    return C - np.log(S1 / S0) - (var + (mu - M) ** 2) / (2 * S1**2) + (var + mu**2) / (2 * S0**2)


def delta_of(x):
    return C + stats.norm.logpdf(x, M, S1) - stats.norm.logpdf(x, 0.0, S0)


TRUTH = log_z_beta(BETAS)


def sample_x(k, betas, rng):
    lam, mu = precision_mean(betas[k])
    return mu + rng.standard_normal(k.shape) / np.sqrt(lam)


def joint_draws(log_zhat, shape, rng, betas=BETAS, log_r=None):
    """Exact iid draws (k, delta) of q(x, k) ∝ f_k r_k / Zhat_k."""
    n = betas.size
    log_r = np.full(n, -np.log(n)) if log_r is None else log_r
    logits = log_r + log_z_beta(betas) - log_zhat
    k = rng.choice(n, size=shape, p=np.exp(logits - special.logsumexp(logits)))
    return k, delta_of(sample_x(k, betas, rng))


def quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        return fn(*args, **kwargs)


def test_closed_form_path_is_self_consistent():
    assert log_z_beta(0.0) == pytest.approx(0.0, abs=1e-14)
    assert log_z_beta(1.0) == pytest.approx(C, abs=1e-14)
    b = np.linspace(0.05, 0.95, 7)  # d/dbeta log Z(beta) = E_beta[delta]
    num = (log_z_beta(b + 1e-6) - log_z_beta(b - 1e-6)) / 2e-6
    np.testing.assert_allclose(num, mean_delta_beta(b), rtol=1e-6)
    rng = np.random.default_rng(0)  # and delta matches E_beta[delta] by simulation
    x = sample_x(np.full(200_000, 4), BETAS, rng)
    se = delta_of(x).std() / np.sqrt(x.size)
    assert_estimate(delta_of(x).mean(), mean_delta_beta(BETAS[4]), se, abs_tol=0.02)


# ------------------------------------------------------------------------------------------
def test_ladders():
    b = default_ladder(5, 2.0)
    np.testing.assert_allclose(b, [0, 1 / 16, 1 / 4, 9 / 16, 1])
    assert default_ladder().shape == (32,) and default_ladder()[1] == pytest.approx(31.0**-4)
    np.testing.assert_array_equal(validate_ladder(b), b)
    bad = [
        [0.1, 0.5, 1.0],
        [0.0, 0.5, 0.99],
        [0.0, 0.6, 0.5, 1.0],
        [0.0, 0.5, 0.5, 1.0],
        [0.0],
        [[0.0, 1.0]],
        [0.0, np.nan, 1.0],
    ]
    for betas in bad:
        with pytest.raises(ValueError):
            validate_ladder(betas)
    for args in [(1, 2.0), (4, 0.0), (4, -1.0), (2.5, 1.0)]:
        with pytest.raises(ValueError):
            default_ladder(*args)


def test_level_log_conditionals_is_a_softmax():
    rng = np.random.default_rng(1)
    delta = rng.normal(0, 30, size=(2, 3))
    log_zhat, log_r = rng.normal(size=K), rng.normal(size=K)
    lq = level_log_conditionals(delta, BETAS, log_zhat, log_r)
    assert lq.shape == (2, 3, K)
    np.testing.assert_allclose(np.exp(lq).sum(-1), 1.0, rtol=1e-12)
    w = np.exp(BETAS * delta[..., None] + log_r - log_zhat)
    np.testing.assert_allclose(np.exp(lq), w / w.sum(-1, keepdims=True), rtol=1e-10, atol=1e-300)
    uniform = level_log_conditionals(delta, BETAS, log_zhat)  # r uniform = constant log_r
    np.testing.assert_allclose(uniform, level_log_conditionals(delta, BETAS, log_zhat, np.ones(K)))
    # huge delta stays finite; infinite delta gives the limits, nan propagates
    assert np.all(np.isfinite(level_log_conditionals(1e6, BETAS, log_zhat)))
    lim = np.exp(level_log_conditionals([np.inf, -np.inf], BETAS, log_zhat))
    np.testing.assert_array_equal(lim[0], np.eye(K)[-1])
    np.testing.assert_array_equal(lim[1], np.eye(K)[0])
    assert np.all(np.isnan(level_log_conditionals(np.nan, BETAS, log_zhat)))
    with pytest.raises(ValueError):
        level_log_conditionals(delta, BETAS, log_zhat[:-1])


# ------------------------------------------------------------------------------------------
OFFSETS = {
    "exact": np.zeros(K),
    "pm2": np.array([0, 2, 0, -2, 0, 2, -2, 0, 0, -2, 2, 2.0]),
    "end_low": np.array([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -2.0]),
}


@pytest.mark.parametrize("case", list(OFFSETS))
def test_rts_recovers_log_z_with_exact_or_wrong_zhat(case):
    rng = np.random.default_rng(10 + len(case))
    log_zhat = TRUTH + OFFSETS[case]
    _, delta = joint_draws(log_zhat, (4, 1000), rng)
    lq = level_log_conditionals(delta, BETAS, log_zhat)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", EvidenceWarning)
        est = rts_log_evidence(lq, BETAS, log_zhat)
    assert isinstance(est, EvidenceEstimate) and est.method == "st"
    assert_log_z(est, C, abs_tol=0.1, se_max=0.2)
    assert est.se > 1e-3
    for z_c, se_c in zip(est.per_chain_log_z, est.per_chain_se, strict=True):
        assert_log_z((z_c, se_c), C, abs_tol=0.3, label="one chain")
    assert est.n_chains == 4 and est.diagnostics["n_draws"] == 4000.0
    far = any("far from r" in m for m in est.warnings)
    assert far == (case != "exact")  # c_k ≈ r_k only when Zhat = Z
    assert len(caught) == len(est.warnings)
    # shifting all of log_zhat (nonzero log_zhat[0]) leaves the estimate unchanged
    shifted = quiet(rts_log_evidence, lq, BETAS, log_zhat + 5.0)
    assert shifted.log_z == pytest.approx(est.log_z, abs=1e-12)


def test_level_vector_matches_every_level_and_c_sums_to_one():
    rng = np.random.default_rng(3)
    log_zhat = TRUTH + OFFSETS["pm2"]
    _, delta = joint_draws(log_zhat, (4, 1500), rng)
    lq = level_log_conditionals(delta, BETAS, log_zhat)
    log_z, c = rts_level_estimates(lq, BETAS, log_zhat)
    assert log_z.shape == c.shape == (K,) and log_z[0] == 0.0
    assert c.sum() == pytest.approx(1.0, abs=1e-12)
    assert log_z[-1] == pytest.approx(quiet(rts_log_evidence, lq, BETAS, log_zhat).log_z)
    q_k = np.exp(-OFFSETS["pm2"]) / np.exp(-OFFSETS["pm2"]).sum()  # exact occupancy
    assert_estimate(c, q_k, np.sqrt(q_k / 6000), abs_tol=0.05, label="level occupancy")
    for k in range(1, K):
        _, se, _, _ = log_ratio_of_means(lq[..., k], lq[..., 0])
        assert_log_z((log_z[k], se), TRUTH[k], abs_tol=0.5, label=f"level {k}")


def test_one_update_from_wrong_zhat_reaches_the_truth():
    rng = np.random.default_rng(4)
    log_zhat = TRUTH + np.linspace(0, 3, K) ** 2 - 0.5 * np.sin(np.arange(K))  # up to 9 nats
    _, delta = joint_draws(log_zhat, (4, 2000), rng)
    lq = level_log_conditionals(delta, BETAS, log_zhat)
    _, c = rts_level_estimates(lq, BETAS, log_zhat)
    new = rts_update(log_zhat, c)
    np.testing.assert_allclose(new, rts_level_estimates(lq, BETAS, log_zhat)[0], atol=1e-10)
    for k in range(1, K):
        _, se, _, _ = log_ratio_of_means(lq[..., k], lq[..., 0])
        assert_log_z((new[k], se), TRUTH[k], abs_tol=0.5, se_max=0.125, label=f"level {k}")
    assert np.max(np.abs(log_zhat - TRUTH)) > 5  # the start really was wrong
    half = rts_update(log_zhat, c, damping=0.5)
    np.testing.assert_allclose(half, (log_zhat - log_zhat[0] + new) / 2, atol=1e-12)
    # after the update the occupancy is (nearly) r: adaptation_converged at a loose tol
    _, delta2 = joint_draws(new, (4, 2000), rng)
    _, c2 = rts_level_estimates(level_log_conditionals(delta2, BETAS, new), BETAS, new)
    assert not adaptation_converged(c) and adaptation_converged(c2, tol=0.5)


def test_update_guards_zero_occupancy_and_non_uniform_r():
    c = np.array([0.5, 0.5, 0.0])
    new = rts_update([0.0, 0.0, 0.0], c)
    assert np.all(np.isfinite(new)) and new[0] == 0.0 and new[1] == 0.0 and new[2] < -700
    log_r = np.log([0.2, 0.3, 0.5])
    new = rts_update([1.0, 2.0, 3.0], [0.2, 0.3, 0.5], log_r)  # c = r: only pinned to 0
    np.testing.assert_allclose(new, [0.0, 1.0, 2.0], atol=1e-12)
    with pytest.raises(ValueError):
        rts_update([0.0, 0.0], [0.5, -0.1])


def test_adaptation_converged_rule():
    r = np.full(4, 0.25)
    assert adaptation_converged(r)
    assert adaptation_converged(r + np.array([0.09, -0.09, 0, 0]) / 4)
    assert not adaptation_converged(r + np.array([0.11, -0.11, 0, 0]) / 4)
    assert adaptation_converged(r + np.array([0.11, -0.11, 0, 0]) / 4, tol=0.2)
    log_r = np.log([0.1, 0.2, 0.3, 0.4])
    assert adaptation_converged([0.1, 0.2, 0.3, 0.4], log_r)
    assert not adaptation_converged(r, log_r)


def test_barely_visited_level_and_bad_input_are_reported():
    rng = np.random.default_rng(5)
    log_zhat = TRUTH + np.where(np.arange(K) == 6, 5.0, 0.0)  # level 6 ~ e^-5 r
    _, delta = joint_draws(log_zhat, (2, 1000), rng)
    lq = level_log_conditionals(delta, BETAS, log_zhat)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", EvidenceWarning)
        est = rts_log_evidence(lq, BETAS, log_zhat)
    assert [str(w.message) for w in caught] == list(est.warnings)
    assert "barely visited" in est.warnings[0] and "6 (beta=" in est.warnings[0]
    assert "far from r" in est.warnings[1]  # c_6 ≈ 0 is 1/K away from r_6
    diag = est.diagnostics
    assert diag["c_min_ratio"] < 1 / 20 and diag["c_min"] == pytest.approx(diag["c_min_ratio"] / K)
    assert 0 < diag["mean_beta"] < 1 and diag["ess"] > 100 and diag["n_levels"] == K
    assert_log_z(est, C, abs_tol=0.1)
    with pytest.raises(ValueError, match="log-probabilities"):
        rts_log_evidence(lq + 0.1, BETAS, log_zhat)
    with pytest.raises(ValueError):
        rts_log_evidence(lq[..., :-1], BETAS, log_zhat)


# ------------------------------------------------------------------------------------------
def rts_replicates(n_rep, shape, rng):
    log_zhat = TRUTH + OFFSETS["pm2"]
    out = []
    for _ in range(n_rep):
        _, delta = joint_draws(log_zhat, shape, rng)
        lq = level_log_conditionals(delta, BETAS, log_zhat)
        out.append(quiet(rts_log_evidence, lq, BETAS, log_zhat))
    return np.array([(e.log_z, e.se) for e in out])


def test_rts_se_is_calibrated_over_replicates():
    res = rts_replicates(200, (4, 300), np.random.default_rng(6))
    coverage = np.mean(np.abs(res[:, 0] - C) < 2 * res[:, 1])
    assert 0.9 <= coverage <= 0.99
    assert 0.8 < res[:, 1].mean() / res[:, 0].std() < 1.25


def st_chains(log_zhat, n_chains, n_draws, rng, phi=0.9, betas=BETAS):
    """Simulated-tempering MCMC started at stationarity: x moves by an autoregressive kernel
    x' = mu_k + phi (x - mu_k) + sqrt(1 - phi^2) sd_k eps, which leaves p(x | beta_k) invariant
    (so draws are autocorrelated, integrated time ~13 at phi = 0.9), then k ~ q(k | x) exactly."""
    k, _ = joint_draws(log_zhat, n_chains, rng, betas)
    x = sample_x(k, betas, rng)
    ks, deltas = np.empty((n_chains, n_draws), int), np.empty((n_chains, n_draws))
    for t in range(n_draws):
        lam, mu = precision_mean(betas[k])
        x = mu + phi * (x - mu) + np.sqrt((1 - phi**2) / lam) * rng.standard_normal(n_chains)
        d = delta_of(x)
        p = np.exp(level_log_conditionals(d, betas, log_zhat))
        k = np.minimum((rng.random((n_chains, 1)) > np.cumsum(p, axis=1)).sum(1), betas.size - 1)
        ks[:, t], deltas[:, t] = k, d
    return ks, deltas


def test_se_is_autocorrelation_aware_on_st_chains():
    rng = np.random.default_rng(7)
    n_rep, n_chains, n_draws = 200, 4, 600
    ks, deltas = st_chains(TRUTH, n_rep * n_chains, n_draws, rng)
    res, iid_se = [], []
    for i in range(n_rep):
        lq = level_log_conditionals(deltas[i * n_chains : (i + 1) * n_chains], BETAS, TRUTH)
        est = quiet(rts_log_evidence, lq, BETAS, TRUTH)
        a, b = np.exp(lq[..., -1]), np.exp(lq[..., 0])
        z = a / a.mean() - b / b.mean()  # influence series; iid se ignores its autocorrelation
        res.append((est.log_z, est.se))
        iid_se.append(z.std() / np.sqrt(z.size))
    res, iid_se = np.array(res), np.array(iid_se)
    coverage = np.mean(np.abs(res[:, 0] - C) < 2 * res[:, 1])
    iid_coverage = np.mean(np.abs(res[:, 0] - C) < 2 * iid_se)
    assert 0.9 <= coverage <= 0.99
    assert 0.8 < res[:, 1].mean() / res[:, 0].std() < 1.25
    assert iid_coverage < 0.7 and np.median(res[:, 1] / iid_se) > 2.5
    assert round_trips(ks, K).min() > 0


# ------------------------------------------------------------------------------------------
def test_rb_ti_matches_truth_up_to_discretisation():
    betas = default_ladder(48, 2.0)
    rng = np.random.default_rng(8)
    log_zhat = log_z_beta(betas)
    _, delta = joint_draws(log_zhat, (4, 2000), rng, betas)
    lq = level_log_conditionals(delta, betas, log_zhat)
    est = quiet(rb_thermodynamic_integration, delta, lq, betas)
    assert est.method == "st_ti"
    mu = mean_delta_beta(betas)
    trapezoid = np.sum(np.diff(betas) * (mu[1:] + mu[:-1]) / 2)  # analytic limit of the estimator
    assert_log_z(est, trapezoid, abs_tol=0.1, label="against the estimator's limit")
    assert abs(trapezoid - C) <= est.diagnostics["discretisation_bound"]
    # Friel et al.'s curvature correction estimates the (here tiny) discretisation error
    assert est.diagnostics["trapezoid_correction"] == pytest.approx(C - trapezoid, rel=0.5)
    assert est.warnings == ()
    assert_estimate(est.per_chain_log_z, trapezoid, est.per_chain_se, abs_tol=0.2, label="chains")


def test_rb_ti_se_is_calibrated_and_coarse_ladder_bias_is_flagged():
    betas = default_ladder(16, 2.0)
    rng = np.random.default_rng(9)
    log_zhat = log_z_beta(betas)
    mu = mean_delta_beta(betas)
    trapezoid = np.sum(np.diff(betas) * (mu[1:] + mu[:-1]) / 2)
    res = []
    for _ in range(200):
        _, delta = joint_draws(log_zhat, (4, 300), rng, betas)
        lq = level_log_conditionals(delta, betas, log_zhat)
        est = quiet(rb_thermodynamic_integration, delta, lq, betas)
        res.append((est.log_z, est.se))
    res = np.array(res)
    assert 0.9 <= np.mean(np.abs(res[:, 0] - trapezoid) < 2 * res[:, 1]) <= 0.99
    coarse = np.array([0.0, 0.5, 1.0])
    _, delta = joint_draws(log_z_beta(coarse), (4, 2000), rng, coarse)
    lq = level_log_conditionals(delta, coarse, log_z_beta(coarse))
    with pytest.warns(EvidenceWarning, match="discretisation"):
        est = rb_thermodynamic_integration(delta, lq, coarse)
    assert abs(est.log_z - C) > Z_MAX * est.se  # the bias is real, and RTS has none:
    assert abs(quiet(rts_log_evidence, lq, coarse, log_z_beta(coarse)).log_z - C) < 0.1


def test_naive_counts_estimator_is_consistent():
    rng = np.random.default_rng(11)
    log_zhat = TRUTH + OFFSETS["pm2"]
    k, delta = joint_draws(log_zhat, (4, 2000), rng)
    est = naive_count_log_evidence(k, BETAS, log_zhat)
    assert est.method == "st_counts"
    assert_log_z(est, C, abs_tol=0.1)
    rb = quiet(rts_log_evidence, level_log_conditionals(delta, BETAS, log_zhat), BETAS, log_zhat)
    assert rb.se < est.se  # Rao-Blackwellization helps
    with pytest.raises(ValueError):
        naive_count_log_evidence(k + 1, BETAS, log_zhat)


def test_round_trips_on_hand_made_sequences():
    assert round_trips([0, 1, 2, 1, 0], 3).tolist() == [1]
    assert round_trips([2, 1, 0, 1, 2, 1, 0], 3).tolist() == [1]
    assert round_trips([0, 2, 0, 2, 0], 3).tolist() == [2]
    assert round_trips([0, 0, 1, 1, 2, 2, 2, 1, 0, 0], 3).tolist() == [1]
    assert round_trips([0, 1, 2, 1], 3).tolist() == [0]
    assert round_trips([1, 1, 1], 3).tolist() == [0]
    assert round_trips([[0, 1, 0, 1, 0], [1, 0, 1, 0, 1]], 2).tolist() == [2, 1]
    with pytest.raises(ValueError):
        round_trips([0, 3], 3)
    with pytest.raises(ValueError):
        round_trips([0.0, 1.0], 2)
