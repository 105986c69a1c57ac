"""Tests of pymc_evidence.estimators.ct against analytic truths (digest seed_cthmc.md, sec. 5)."""

import subprocess
import sys
import warnings
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from scipy import special, stats

from pymc_evidence.estimators import (
    EvidenceEstimate,
    EvidenceWarning,
    base_moment_check,
    beta_cdf,
    ct_log_evidence,
    ct_weights,
    expected_beta,
    log_w0,
    log_w1,
    sample_beta,
)
from tests._accuracy import assert_estimate, assert_log_z

LD = np.longdouble
GRID = np.concatenate([-np.logspace(-12, 4, 801)[::-1], [0.0], np.logspace(-12, 4, 801)])


# ----------------------------------------------------------------------------------------
# high-precision references (independent of the code: Bernoulli series / long double)
def _bernoulli_even(n_terms):
    b = special.bernoulli(2 * n_terms)
    return [LD(b[2 * k]) for k in range(1, n_terms + 1)]


def ref_g(d):
    """g(d) = log(d / (1 - e^-d)): series d/2 - sum B_2k d^2k / (2k (2k)!) for |d| <= 1."""
    d = LD(d)
    if abs(d) <= 1:
        terms = [
            b * d ** (2 * k) / (2 * k * special.factorial(2 * k, exact=True))
            for k, b in enumerate(_bernoulli_even(12), start=1)
        ]
        return d / 2 - sum(terms)
    return np.log(d / (LD(1) - np.exp(-d)))


def ref_mean_beta(d):
    """E[beta|d] = 1/d - 1/(e^d - 1): series 1/2 - sum B_2k d^(2k-1) / (2k)! for |d| <= 1."""
    d = LD(d)
    if abs(d) <= 1:
        terms = [
            b * d ** (2 * k - 1) / special.factorial(2 * k, exact=True)
            for k, b in enumerate(_bernoulli_even(12), start=1)
        ]
        return LD(0.5) - sum(terms)
    return LD(1) / d - LD(1) / (np.exp(d) - LD(1))


def truncexp_cdf(b, d):
    """Direct CDF (1 - e^{-b d}) / (1 - e^{-d}) of p(beta|x), uniform at d = 0."""
    if d == 0:
        return b
    return np.expm1(-b * d) / np.expm1(-d)


# ----------------------------------------------------------------------------------------
# exact iid draws from the CT joint in 1-D: target Z N(M, S^2), base N(0, S0^2)
LOG_Z, M, S, S0 = 2.5, 1.0, 0.7, 2.0


def phi(x):
    return -LOG_Z - stats.norm.logpdf(x, M, S)


def psi(x):
    return -stats.norm.logpdf(x, 0.0, S0)


@cache
def _marginal_cdf(log_zeta):
    """Grid CDF of p(x) ∝ e^{-psi} (1 - e^{-Delta}) / Delta, computed in long double."""
    grid = np.linspace(-16.0, 16.0, 200_001)
    d = (phi(grid) + log_zeta - psi(grid)).astype(LD)
    tiny = np.abs(d) < 1e-12
    inv_w0 = np.where(tiny, 1 - d / 2, (1 - np.exp(-d)) / np.where(tiny, 1, d))
    dens = np.exp(-psi(grid).astype(LD)) * inv_w0
    cdf = np.concatenate([[0], np.cumsum((dens[1:] + dens[:-1]) / 2)])
    return grid, (cdf / cdf[-1]).astype(float)


def joint_draws(offset, shape, rng):
    """x ~ p(x) exactly (up to a 1.6e-4 grid), and Delta(x), for log zeta = LOG_Z + offset."""
    log_zeta = LOG_Z + offset
    grid, cdf = _marginal_cdf(log_zeta)
    x = np.interp(rng.random(shape), cdf, grid)
    return x, phi(x) + log_zeta - psi(x), log_zeta


def quiet_estimate(delta, log_zeta):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        return ct_log_evidence(delta, log_zeta)


# ----------------------------------------------------------------------------------------
def test_log_w0_matches_high_precision_reference():
    ref = np.array([ref_g(d) for d in GRID])
    got = log_w0(GRID)
    rel = np.abs((got - ref) / np.where(ref == 0, 1, ref)).astype(float)
    assert rel.max() < 1e-13
    assert log_w0(0.0) == 0.0
    tiny = GRID[np.abs(GRID) < 1e-8]
    np.testing.assert_allclose(log_w0(tiny), tiny / 2, rtol=1e-8)


def test_log_w1_minus_log_w0_is_minus_delta_and_finite():
    lw0, lw1 = log_w0(GRID), log_w1(GRID)
    assert np.all(np.isfinite(lw0)) and np.all(np.isfinite(lw1))
    np.testing.assert_allclose(lw1 - lw0, -GRID, rtol=1e-14, atol=1e-15)
    huge = np.array([-1e300, -1e30, 1e30, 1e300])
    assert np.all(np.isfinite(log_w0(huge))) and np.all(np.isfinite(log_w1(huge)))
    # limits: Delta = +inf (target impossible) has w1 = 0
    np.testing.assert_array_equal(log_w0([np.inf, -np.inf]), [np.inf, -np.inf])
    np.testing.assert_array_equal(log_w1([np.inf, -np.inf]), [-np.inf, np.inf])


def test_expected_beta_matches_reference():
    ref = np.array([ref_mean_beta(d) for d in GRID])
    got = expected_beta(GRID)
    assert np.max(np.abs((got - ref) / ref).astype(float)) < 1e-13
    assert expected_beta(0.0) == 0.5
    assert np.all((got >= 0) & (got <= 1))
    np.testing.assert_array_equal(expected_beta([np.inf, -np.inf]), [0.0, 1.0])


def test_beta_cdf_matches_direct_formula():
    deltas = [-700.0, -50.0, -3.0, -1e-6, 0.0, 1e-9, 0.4, 2.0, 50.0, 700.0]
    bs = np.linspace(0, 1, 21)
    for d in deltas:
        ref = np.array([truncexp_cdf(LD(b), LD(d)) for b in bs]).astype(float)
        np.testing.assert_allclose(beta_cdf(bs, d), ref, rtol=1e-12, atol=1e-300)
    # symmetry P(beta > 1 - b | d) = P(beta < b | -d)
    np.testing.assert_allclose(1 - beta_cdf(0.9, 3.0), beta_cdf(0.1, -3.0), rtol=1e-12)


@pytest.mark.parametrize("delta", [-50.0, -3.0, -1e-13, 0.0, 2.0, 50.0])
def test_sample_beta_is_the_truncated_exponential(delta):
    rng = np.random.default_rng(abs(hash(delta)) % 2**32)
    beta = sample_beta(np.full(20_000, delta), rng)
    assert beta.shape == (20_000,) and np.all((beta >= 0) & (beta <= 1))
    cdf = np.vectorize(lambda b: float(truncexp_cdf(LD(b), LD(delta))))
    assert stats.kstest(beta, cdf).pvalue > 1e-3
    se = beta.std() / np.sqrt(beta.size)
    assert_estimate(beta.mean(), float(ref_mean_beta(delta)), se, abs_tol=0.02)


def test_sample_beta_vectorised_and_limits():
    rng = np.random.default_rng(0)
    delta = np.array([[np.inf, -np.inf], [1e4, -1e4]])
    beta = sample_beta(delta, rng)
    assert beta.shape == (2, 2)
    assert beta[0, 0] == 0.0 and beta[0, 1] == 1.0
    assert beta[1, 0] < 1e-2 and beta[1, 1] > 1 - 1e-2


def test_perfect_base_gives_log_zeta_exactly():
    est = ct_log_evidence(np.zeros((3, 200)), log_zeta=-7.25)
    assert isinstance(est, EvidenceEstimate)
    assert est.log_z == -7.25 and est.se == 0.0
    np.testing.assert_array_equal(est.per_chain_log_z, -7.25)
    assert est.diagnostics["frac_beta_lt_0.1"] == pytest.approx(0.1)
    assert est.diagnostics["frac_beta_gt_0.9"] == pytest.approx(0.1)
    assert est.diagnostics["mean_beta"] == 0.5
    assert est.diagnostics["chain_disagreement"] == 1.0
    assert est.warnings == ()


@pytest.mark.parametrize("offset", [-3.0, 0.0, 3.0])
def test_ct_recovers_known_log_z_from_exact_joint_draws(offset):
    rng = np.random.default_rng(100 + int(offset))
    x, delta, log_zeta = joint_draws(offset, (4, 5000), rng)
    est = quiet_estimate(delta, log_zeta)
    assert_log_z(est, LOG_Z, abs_tol=0.1)
    assert 0.002 < est.se < 0.1
    for z_c, se_c in zip(est.per_chain_log_z, est.per_chain_se, strict=True):
        assert_log_z((z_c, se_c), LOG_Z, abs_tol=0.3, label="one chain")
    # Rao-Blackwellised beta occupancy equals the occupancy of exact beta | x draws
    beta = sample_beta(delta, rng)
    fracs = {"frac_beta_lt_0.1": np.mean(beta < 0.1), "frac_beta_gt_0.9": np.mean(beta > 0.9)}
    for key, frac in fracs.items():
        se = np.sqrt(frac * (1 - frac) / beta.size)
        assert_estimate(est.diagnostics[key], frac, se, abs_tol=0.02, label=key)
    se = beta.std() / np.sqrt(beta.size)
    assert_estimate(est.diagnostics["mean_beta"], beta.mean(), se, abs_tol=0.02, label="mean beta")
    # zeta above Z pushes beta to the base end, and vice versa (p(beta=1)/p(beta=0) = Z/zeta)
    if offset != 0.0:
        tilt = est.diagnostics["frac_beta_gt_0.9"] - est.diagnostics["frac_beta_lt_0.1"]
        assert np.sign(tilt) == -np.sign(offset)


def test_ct_standard_error_is_calibrated():
    rng = np.random.default_rng(7)
    for offset in (-3.0, 0.0, 3.0):
        errors, ses = [], []
        for _ in range(200):
            _, delta, log_zeta = joint_draws(offset, (4, 500), rng)
            est = quiet_estimate(delta, log_zeta)
            errors.append(est.log_z - LOG_Z)
            ses.append(est.se)
        errors, ses = np.array(errors), np.array(ses)
        assert 0.9 <= np.mean(np.abs(errors) <= 2 * ses) <= 0.99, offset
        assert np.std(errors) / np.sqrt(np.mean(ses**2)) == pytest.approx(1.0, abs=0.2)


def test_ct_weights_reweight_to_the_target():
    rng = np.random.default_rng(3)
    x, delta, _ = joint_draws(0.0, (4, 5000), rng)
    w = ct_weights(delta)
    assert w.shape == (x.size,) and np.all(w >= 0) and w.sum() == pytest.approx(1.0)
    mean = w @ x.ravel()
    se = np.sqrt(np.sum(w**2 * (x.ravel() - mean) ** 2))  # iid draws
    assert_estimate(mean, M, se, abs_tol=0.1 * S, label="reweighted mean")
    var = w @ (x.ravel() - mean) ** 2
    assert var == pytest.approx(S**2, rel=0.1)


def test_base_moment_check_on_exact_joint_draws():
    rng = np.random.default_rng(4)
    x, delta, _ = joint_draws(0.0, (4, 5000), rng)
    good = base_moment_check(x, delta, 0.0, S0**2)
    assert good["max_mean_z"] < 4 and good["max_var_z"] < 4
    assert good["max_mean_discrepancy_sd"] < 0.1 and good["max_log_sd_ratio"] < 0.1
    bad = base_moment_check(x, delta, 1.0, 1.0)  # wrong base moments are flagged
    assert bad["max_mean_z"] > 10 and bad["max_var_z"] > 10


def test_base_moment_check_multivariate():
    rng = np.random.default_rng(5)
    cov = np.array([[2.0, 0.6, 0.0], [0.6, 1.0, -0.3], [0.0, -0.3, 0.5]])
    mean = np.array([1.0, -2.0, 0.5])
    x = rng.multivariate_normal(mean, cov, size=(3, 2000))
    out = base_moment_check(x, np.zeros((3, 2000)), mean, cov)  # w0 constant: plain moments
    assert out["weighted_mean"].shape == (3,) and out["weighted_cov"].shape == (3, 3)
    assert out["max_mean_z"] < 4 and out["max_var_z"] < 4
    assert out["max_corr_discrepancy"] < 0.1
    assert out["ess_w0"] == pytest.approx(6000.0)
    with pytest.raises(ValueError):
        base_moment_check(x[:, :10], np.zeros((3, 2000)), mean, cov)


def test_warns_when_beta_misses_an_end():
    rng = np.random.default_rng(6)
    _, delta, log_zeta = joint_draws(20.0, (4, 1000), rng)  # zeta = e^20 Z
    with pytest.warns(EvidenceWarning, match="target end"):
        est = ct_log_evidence(delta, log_zeta)
    assert any("beta rarely visits the target end" in m for m in est.warnings)
    _, delta, log_zeta = joint_draws(-20.0, (4, 1000), rng)
    with pytest.warns(EvidenceWarning, match="base end"):
        ct_log_evidence(delta, log_zeta)


def test_warns_when_w1_rests_on_few_draws():
    delta = np.full((2, 500), 15.0)
    delta[0, 7] = -40.0  # one draw carries essentially all the target-end weight
    with pytest.warns(EvidenceWarning) as record:
        est = ct_log_evidence(delta, 0.0)
    assert any("Kish ESS" in str(w.message) for w in record)
    assert any("Kish ESS" in m for m in est.warnings)
    assert est.diagnostics["ess_w1"] == pytest.approx(1.0, abs=1e-2)


def test_warns_when_chains_disagree():
    rng = np.random.default_rng(8)
    _, delta, log_zeta = joint_draws(0.0, (4, 2000), rng)
    delta[0] += 1.0  # one chain computed with the wrong zeta
    with pytest.warns(EvidenceWarning, match="disagree"):
        est = ct_log_evidence(delta, log_zeta)
    assert est.diagnostics["chain_disagreement"] < 1e-3
    assert est.diagnostics["chain_max_z"] > 4


def test_no_warnings_on_a_healthy_run():
    rng = np.random.default_rng(10)  # (seed 9 is one of the ~1% false alarms)
    _, delta, log_zeta = joint_draws(0.0, (4, 2000), rng)
    with warnings.catch_warnings():
        warnings.simplefilter("error", EvidenceWarning)
        est = ct_log_evidence(delta, log_zeta, method="ct-test")
    assert est.warnings == () and est.method == "ct-test" and est.n_chains == 4
    assert all(isinstance(v, float) for v in est.diagnostics.values())


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_delta_raises(bad):
    delta = np.zeros((2, 50))
    delta[1, :3] = bad
    with pytest.raises(ValueError, match="3 non-finite"):
        ct_log_evidence(delta, 0.0)
    with pytest.raises(ValueError, match="non-finite"):
        ct_weights(delta)


def test_importing_estimators_does_not_import_pymc():
    # The package's own __init__ imports PyMC (it wires everything together), so the parent
    # package is replaced by an empty stub: only what estimators/ imports itself counts.
    code = (
        "import sys, types; "
        "pkg = types.ModuleType('pymc_evidence'); pkg.__path__ = ['pymc_evidence']; "
        "sys.modules['pymc_evidence'] = pkg; "
        "import pymc_evidence.estimators; "
        "bad = [m for m in ('pymc', 'pytensor', 'xarray') if m in sys.modules]; "
        "assert not bad, bad"
    )
    subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        cwd=Path(__file__).parents[2],
    )
