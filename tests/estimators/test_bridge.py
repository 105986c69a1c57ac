"""The pure bridge-sampling estimator (:mod:`pymc_evidence.estimators.bridge`) and the warp-3
transform (:mod:`pymc_evidence.estimators.warp`) on exactly known ratios."""

import numpy as np
import pytest
from scipy import integrate, stats

from pymc_evidence.estimators.bridge import (
    bridge_log_evidence,
    combine_bridge_runs,
    posterior_n_eff,
)
from pymc_evidence.estimators.diagnostics import EvidenceWarning
from pymc_evidence.estimators.record import EvidenceEstimate
from pymc_evidence.estimators.warp import (
    warp3_log_density,
    warp3_moments,
    warp3_points,
    warp3_standardize,
)
from tests._accuracy import assert_log_z

SEED = 20260601
LOG_Z = 1.7


# ---------------------------------------------------------------- pure estimator


def _gaussian_logs(rng, n1, n2, shift=0.3, scale=1.5, log_z=LOG_Z):
    """``f = exp(log_z) N(0, S)``, ``g = N(shift, scale^2 S)``: logs at iid draws of each."""
    cov = np.array([[1.0, 0.3, 0.0], [0.3, 1.0, 0.2], [0.0, 0.2, 0.8]])
    p = stats.multivariate_normal(np.zeros(3), cov)
    g = stats.multivariate_normal(np.full(3, shift), scale**2 * cov)
    xp, xg = p.rvs(n1, random_state=rng), g.rvs(n2, random_state=rng)
    return log_z + p.logpdf(xp), g.logpdf(xp), log_z + p.logpdf(xg), g.logpdf(xg)


def test_gaussian_ratio_iid_calibrated():
    """Exactly known ratio: accurate in one run, and |error| / se ~ N(0, 1) over 200."""
    rng = np.random.default_rng(SEED)
    est = bridge_log_evidence(*_gaussian_logs(rng, 2000, 2000))
    assert est.diagnostics["converged"] == 1.0 and not est.warnings
    assert_log_z(est, LOG_Z, abs_tol=0.1, se_max=0.03, label="iid Gaussian ratio")
    z = []
    for _ in range(200):
        est = bridge_log_evidence(*_gaussian_logs(rng, 500, 500))
        z.append((est.log_z - LOG_Z) / est.se)
        assert est.diagnostics["converged"] == 1.0
    z = np.array(z)
    print(f"iid: sd z {z.std():.2f}, mean z {z.mean():+.2f}, cov2 {np.mean(abs(z) <= 2):.2f}")
    assert 0.8 < z.std() < 1.25 and abs(z.mean()) < 0.3
    assert np.mean(np.abs(z) <= 2) >= 0.9


def _ar1_chains(rng, n_chain, n_draw, phi):
    """Stationary AR(1) chains with N(0, 1) marginals (autocorrelated 'posterior' draws)."""
    x = np.empty((n_chain, n_draw))
    x[:, 0] = rng.normal(size=n_chain)
    noise = rng.normal(scale=np.sqrt(1 - phi**2), size=(n_chain, n_draw))
    for t in range(1, n_draw):
        x[:, t] = phi * x[:, t - 1] + noise[:, t]
    return x


def test_autocorrelated_draws_se_covers():
    """With AR(1) posterior draws (tau ~ 19) the ESS-based se stays calibrated."""
    rng = np.random.default_rng(SEED + 1)
    g = stats.norm(0.4, 1.4)
    z, n_eff = [], []
    for _ in range(100):
        xp = _ar1_chains(rng, 4, 500, phi=0.9)
        xg = g.rvs(2000, random_state=rng)
        est = bridge_log_evidence(
            LOG_Z + stats.norm.logpdf(xp),
            g.logpdf(xp),
            LOG_Z + stats.norm.logpdf(xg),
            g.logpdf(xg),
            n_eff=posterior_n_eff(xp[..., None]),
            emit_warnings=False,
        )
        z.append((est.log_z - LOG_Z) / est.se)
        n_eff.append(est.diagnostics["n_eff"])
    z = np.array(z)
    print(f"AR(1): sd z {z.std():.2f}, median n_eff {np.median(n_eff):.0f} of 2000")
    assert 50 < np.median(n_eff) < 250  # ~ 2000 (1 - 0.9) / (1 + 0.9) = 105
    assert 0.75 < z.std() < 1.3 and np.mean(np.abs(z) <= 2) >= 0.88


def test_identical_densities_exact_and_log_space():
    """f = e^c g gives exactly c with se 0; a 1e5 shift of log f shifts log Z exactly."""
    c = np.full((2, 50), -3.25)
    est = bridge_log_evidence(c, np.zeros_like(c), c[0], np.zeros(50))
    assert est.log_z == pytest.approx(-3.25, abs=1e-12) and est.se == 0.0
    logs = _gaussian_logs(np.random.default_rng(3), 300, 300)
    base = bridge_log_evidence(*logs)
    big = bridge_log_evidence(logs[0] + 1e5, logs[1], logs[2] + 1e5, logs[3])
    assert big.log_z - 1e5 == pytest.approx(base.log_z, abs=1e-6)
    assert big.se == pytest.approx(base.se, rel=1e-6)


def test_nonconvergence_is_flagged_not_silent():
    logs = _gaussian_logs(np.random.default_rng(4), 400, 400, shift=1.0)
    with pytest.warns(EvidenceWarning, match="did not converge"):
        est = bridge_log_evidence(*logs, maxiter=1)
    assert est.diagnostics["converged"] == 0.0 and est.diagnostics["n_iterations"] == 1
    assert np.isfinite(est.log_z) and any("did not converge" in w for w in est.warnings)
    assert est.diagnostics["last_step"] > 1e-10


def test_invalid_log_densities_raise():
    good = np.zeros(10)
    with pytest.raises(ValueError, match="nan"):
        bridge_log_evidence(np.r_[np.nan, good[1:]], good, good, good)
    with pytest.raises(ValueError, match="do not overlap"):
        bridge_log_evidence(good, good, np.full(10, -np.inf), good)
    with pytest.raises(ValueError, match="n_eff"):
        bridge_log_evidence(good, good, good, good, n_eff=11)


def test_combine_runs_formula():
    diag = {"re2_proposal": 4e-4, "re2_posterior": 1e-4, "converged": 1.0, "n_iterations": 3.0}
    runs = [EvidenceEstimate(v, 0.02, "bridge", diagnostics=diag) for v in (0.0, 0.1, 0.2)]
    est = combine_bridge_runs(runs)
    # empirical variance 0.01 > analytic 4e-4: se^2 = 1e-4 + 0.01 / 3
    assert est.log_z == pytest.approx(0.1) and est.se == pytest.approx(np.sqrt(1e-4 + 0.01 / 3))
    assert est.diagnostics["run_sd"] == pytest.approx(0.1)


def test_warp3_gaussian_exact():
    """With a Gaussian's own mean and Cholesky factor the warped density is Z N(0, I)."""
    rng = np.random.default_rng(5)
    mean = np.array([1.0, -2.0, 0.5])
    chol = np.linalg.cholesky([[2.0, 0.5, 0.0], [0.5, 1.0, 0.3], [0.0, 0.3, 0.5]])
    p = stats.multivariate_normal(mean, chol @ chol.T)
    eta = rng.normal(size=(100, 3))
    plus, minus = warp3_points(eta, mean, chol)
    value = warp3_log_density(LOG_Z + p.logpdf(plus), LOG_Z + p.logpdf(minus), chol)
    np.testing.assert_allclose(value, LOG_Z + stats.norm.logpdf(eta).sum(1), atol=1e-10)


def test_warp3_keeps_normalizing_constant_of_skewed_density():
    """For a skewed density and arbitrary moments the warped density still integrates to Z."""

    def log_f(x):
        return LOG_Z + stats.gamma.logpdf(x[:, 0], 2.0)

    mean, chol = np.array([1.5]), np.array([[0.8]])

    def density(e):
        plus, minus = warp3_points(np.array([[e]]), mean, chol)
        return float(np.exp(warp3_log_density(log_f(plus), log_f(minus), chol)[0] - LOG_Z))

    total = sum(integrate.quad(density, a, b, limit=200)[0] for a, b in ((-40, 0), (0, 40)))
    assert np.log(total) == pytest.approx(0.0, abs=1e-8)


def test_warp3_symmetrises_skewed_sample():
    rng = np.random.default_rng(6)
    x = np.column_stack([rng.gamma(1.5, size=20000), rng.lognormal(size=20000)])
    mean, chol = warp3_moments(x)
    eta = warp3_standardize(x, mean, chol)
    np.testing.assert_allclose(eta.mean(0), 0.0, atol=1e-10)
    # the correlations of the standardisation are shrunk (independent columns: to zero), so
    # the standardised draws are uncorrelated up to sampling noise, not exactly
    np.testing.assert_allclose(np.cov(eta, rowvar=False, bias=True), np.eye(2), atol=0.02)
    assert np.all(stats.skew(eta) > 1.5)
    flipped = warp3_standardize(x, mean, chol, rng=rng)
    assert np.all(np.abs(stats.skew(flipped)) < 0.15 * stats.skew(eta))


def test_warp3_bridge_beats_normal_on_skewed_target():
    """x = log(lambda), lambda ~ Gamma(1.5): a left-skewed target with log Z = 1.7."""
    rng = np.random.default_rng(7)

    def log_f(x):
        return LOG_Z + stats.loggamma.logpdf(x, 1.5)

    fit, post = np.log(rng.gamma(1.5, size=(2, 2000)))
    mean, chol = warp3_moments(fit[:, None])
    g = stats.norm(mean[0], chol[0, 0])
    xg = g.rvs(2000, random_state=rng)
    normal = bridge_log_evidence(log_f(post), g.logpdf(post), log_f(xg), g.logpdf(xg))
    eta, eta_g = warp3_standardize(post[:, None], mean, chol), rng.normal(size=(2000, 1))
    logs = []
    for e in (eta, eta_g):
        plus, minus = warp3_points(e, mean, chol)
        logs += [warp3_log_density(log_f(plus[:, 0]), log_f(minus[:, 0]), chol)]
        logs += [stats.norm.logpdf(e[:, 0])]
    warp = bridge_log_evidence(*logs)
    print(f"skewed: normal {normal}, warp3 {warp}")
    for est in (normal, warp):
        assert_log_z(est, LOG_Z, abs_tol=0.1, label="skewed")
    assert warp.se < 0.7 * normal.se
