"""``pm.LKJCorr(n=2)``: a (2, 2) value stored as a (1,) unconstrained vector on PyMC 6
(``bridge`` and ``ct`` failed to map its posterior draws back: issue 23). Truth by 1-D
quadrature over the correlation ``r``, whose LKJ(eta=2) density is ``0.75 (1 - r^2)``.
"""

import numpy as np
import pymc as pm
import pytest
from scipy import stats
from scipy.integrate import quad

import pymc_evidence as pme
from pymc_evidence.testing.lkj_slopes import pymc_lkj_offset
from tests._accuracy import assert_log_z

Y = np.random.default_rng(0).multivariate_normal([0, 0], [[1, 0.5], [0.5, 1]], size=30)


def lkj_model():
    """PyMC 6 returns the Cholesky factor of the correlation matrix, PyMC 5 the
    off-diagonal element; the data's covariance is ``[[1, r], [r, 1]]`` on both."""
    with pm.Model() as model:
        corr = pm.LKJCorr("corr", n=2, eta=2.0)
        if corr.ndim == 2:
            pm.MvNormal("y", np.zeros(2), chol=corr, observed=Y)
        else:
            cov = pm.math.stack([[1.0, corr[0]], [corr[0], 1.0]])
            pm.MvNormal("y", np.zeros(2), cov=cov, observed=Y)
    return model, corr.ndim


def log_z() -> float:
    def log_f(r):
        cov = [[1.0, r], [r, 1.0]]
        return np.log(0.75 * (1 - r * r)) + stats.multivariate_normal([0, 0], cov).logpdf(Y).sum()

    peak = log_f(0.5)
    value = peak + np.log(quad(lambda r: np.exp(log_f(r) - peak), -1, 1, points=[0.5])[0])
    return value + pymc_lkj_offset(2.0)  # PyMC 5's density integrates to 16/9


@pytest.mark.parametrize("method", ["bridge", pytest.param("ct", marks=pytest.mark.slow)])
def test_lkj_corr_posterior_draws_map_back(method):
    model, _ = lkj_model()
    idata = pme.sample_evidence(model, method=method, random_seed=1, progressbar=False)
    assert_log_z(pme.log_evidence(idata), log_z(), abs_tol=0.1, label=method)


def test_unnormalized_lkj_density_is_reported_on_pymc_5():
    """PyMC 5's LKJ density integrates to 16/9 at eta=2 (pymc_lkj_offset): the model check
    says so there, and says nothing on PyMC 6."""
    import warnings

    from pymc_evidence.hygiene import check_model

    model, _ = lkj_model()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_model(model)
    flagged = [w for w in caught if "LKJ density is not normalized" in str(w.message)]
    assert len(flagged) == (1 if pymc_lkj_offset(2.0) else 0)
