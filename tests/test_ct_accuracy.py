"""Continuous tempering against exactly known log Z, at default settings and fixed seeds.

Each case asserts |log_z - truth| <= max(4 se, 0.1) and se <= 0.1, the acceptance rule of
the project; the truths come from closed forms or quadrature in
``pymc_evidence.testing.models``, never from this package's estimators.
"""

import numpy as np
import pytest

import pymc_evidence as pme
from pymc_evidence.testing import models as tm

SEED = 20261122
ABS_TOL = 0.1

FAST_CASES = {
    "regression_d5": lambda: tm.conjugate_regression(d=5),
    "beta_bernoulli": tm.beta_bernoulli,
    "normalized_density": tm.normalized_density,
}


def _check(case, method, **options):
    idata = pme.sample_evidence(
        case.model, method=method, random_seed=SEED, progressbar=False, **options
    )
    est = pme.log_evidence(idata)
    error = est.log_z - case.log_z
    print(f"{case.name} {method}: {est}  truth {case.log_z:.4f}  error {error:+.4f}")
    assert np.isfinite(est.se) and est.se > 0
    assert est.se <= 0.1, f"se {est.se:.3f} too large"
    assert abs(error) <= max(4 * est.se, ABS_TOL), f"error {error:+.4f} vs se {est.se:.4f}"
    return est


@pytest.mark.parametrize("method", ["ct", "gibbs_ct"])
@pytest.mark.parametrize("name", list(FAST_CASES))
def test_exact_log_z_at_defaults(name, method):
    _check(FAST_CASES[name](), method)


@pytest.mark.parametrize("method", ["ct", "gibbs_ct"])
def test_bimodal_with_prior_base(method):
    """Far-apart modes: the prior base (power-posterior path) sees both at beta = 0.

    The prior is a poorer base than ADVI's, so the se at 1000 draws is about 0.11; three
    times the draws bring it under the 0.1 target.
    """
    _check(tm.mixture_likelihood(), method, base="prior", draws=3000)


def test_bimodal_posterior_mass_split():
    """Both modes are found, with the exact posterior weights (0.674 / 0.326)."""
    case = tm.mixture_likelihood()
    idata = pme.sample_evidence(
        case.model, method="ct", base="prior", random_seed=SEED, progressbar=False
    )
    from scipy import stats

    from pymc_evidence.compat import get_group

    data = case.data
    y, a, w = np.asarray(data["y"]), np.asarray(data["offset"]), data["weight"]
    s0, s = data["prior_sigma"], data["noise_sigma"]
    sd = np.sqrt(s0**2 + s**2)
    log_mass = np.array(
        [
            np.log(w) + stats.norm.logpdf(y, a, sd).sum(),
            np.log1p(-w) + stats.norm.logpdf(y, -a, sd).sum(),
        ]
    )
    exact = np.exp(log_mass[0] - np.logaddexp(*log_mass))
    shrink = s0**2 / (s0**2 + s**2)
    centre_plus, centre_minus = shrink * (y - a), shrink * (y + a)
    x = get_group(idata, "posterior")["x"].values.reshape(-1, y.size)
    near_plus = np.linalg.norm(x - centre_plus, axis=1) < np.linalg.norm(x - centre_minus, axis=1)
    assert abs(near_plus.mean() - exact) < 0.08, (near_plus.mean(), exact)


def test_regression_d50_joint():
    """Where pm.sample_smc drifts by about a nat, CT stays within its error bar."""
    _check(tm.conjugate_regression(d=50), "ct")


@pytest.mark.slow
def test_regression_d50_gibbs():
    _check(tm.conjugate_regression(d=50), "gibbs_ct")


FUNNEL_OPTIONS = {"draws": 4000, "target_accept": 0.99}


@pytest.mark.slow
@pytest.mark.parametrize("method", ["ct", "gibbs_ct"])
def test_centered_funnel(method):
    """Centred hierarchical normal (a funnel), exact log Z by 1-D quadrature over tau.

    At default settings the estimate is within its tolerance on some seeds but not all
    (error up to 0.2 with se 0.06-0.12 and NUTS divergences, which are warned about), so
    this check uses more draws and a careful NUTS; see the closing note of issue 2.
    """
    _check(tm.hierarchical_normal(), method, **FUNNEL_OPTIONS)
