"""Shrunk covariance of draws: against the known covariance the draws came from."""

import numpy as np
import pytest

from pymc_evidence.estimators.covariance import shrinkage_intensity, shrunk_covariance


def _gaussian_kl(cov_fit, cov_true) -> float:
    """KL( N(0, cov_true) || N(0, cov_fit) ): what a proposal fitted to draws pays."""
    d = cov_true.shape[0]
    solve = np.linalg.solve(cov_fit, cov_true)
    _, logdet_fit = np.linalg.slogdet(cov_fit)
    _, logdet_true = np.linalg.slogdet(cov_true)
    return 0.5 * (np.trace(solve) - d + logdet_fit - logdet_true)


def _ar1(d, rho, scales):
    idx = np.arange(d)
    corr = rho ** np.abs(idx[:, None] - idx[None, :])
    return corr * np.outer(scales, scales)


@pytest.mark.parametrize("rho", [0.0, 0.3, 0.9])
def test_shrinking_brings_the_fit_closer_to_the_true_covariance(rho):
    """d = 120, n = 400: the sample covariance pays ~d^2/(4n) nats of noise; shrinking must
    cut that, whatever the true correlation, and keep the measured variances."""
    rng = np.random.default_rng(11)
    d, n = 120, 400
    cov = _ar1(d, rho, scales=np.exp(rng.uniform(-3, 3, size=d)))
    x = rng.multivariate_normal(np.zeros(d), cov, size=n)
    raw, shrunk = np.cov(x, rowvar=False), shrunk_covariance(x)
    kl_raw, kl_shrunk = _gaussian_kl(raw, cov), _gaussian_kl(shrunk, cov)
    assert kl_raw > 0.5 * d * d / (4 * n)  # the noise the module docstring describes
    assert kl_shrunk < 0.6 * kl_raw, (kl_shrunk, kl_raw)
    np.testing.assert_allclose(np.diag(shrunk), np.diag(raw))


def test_intensity_follows_the_evidence_for_correlation():
    rng = np.random.default_rng(12)
    independent = rng.normal(size=(200, 50))
    assert shrinkage_intensity(independent) > 0.7
    common = rng.normal(size=(5000, 1))
    assert shrinkage_intensity(common + 0.3 * rng.normal(size=(5000, 6))) < 0.01
    assert shrinkage_intensity(rng.normal(size=(100, 1))) == 0.0


def test_bias_argument_and_bad_input():
    x = np.random.default_rng(13).normal(size=(10, 3))
    np.testing.assert_allclose(np.diag(shrunk_covariance(x, bias=True)), np.var(x, axis=0, ddof=0))
    with pytest.raises(ValueError, match="shape"):
        shrinkage_intensity(np.zeros((2, 3)))


def test_weights_generalise_the_equal_weight_estimate():
    """Equal weights give the biased (1/n) estimate; zero weights drop their draws."""
    rng = np.random.default_rng(14)
    x = rng.multivariate_normal(np.zeros(4), _ar1(4, 0.5, np.ones(4)), size=60)
    np.testing.assert_allclose(
        shrunk_covariance(x, np.full(60, 3.0)), shrunk_covariance(x, bias=True)
    )
    extra = np.vstack([x, rng.normal(size=(20, 4)) * 50.0])
    weights = np.r_[np.ones(60), np.zeros(20)]
    np.testing.assert_allclose(
        shrunk_covariance(extra, weights), shrunk_covariance(x, bias=True), atol=1e-12
    )
    with pytest.raises(ValueError, match="weights"):
        shrunk_covariance(x, -np.ones(60))
