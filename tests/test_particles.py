"""Forward AIS, reverse AIS and BAR through sample_evidence, against exact log Z."""

import numpy as np
import pytest

import pymc_evidence as pme
from pymc_evidence.compat import from_netcdf, get_group, to_netcdf
from pymc_evidence.testing import models as tm

SEED = 404


@pytest.fixture(scope="module")
def regression():
    return tm.conjugate_regression(d=5)


@pytest.fixture(scope="module")
def bar_run(regression):
    return pme.sample_evidence(
        regression.model, method="bar", random_seed=SEED, progressbar=False, chains=2
    )


def _within(est, truth):
    error = est.log_z - truth
    print(f"{est}  truth {truth:.4f}  error {error:+.4f}")
    assert est.se <= 0.1
    assert abs(error) <= max(4 * est.se, 0.1), (error, est.se)


def test_bar_exact_and_bounds(bar_run, regression):
    est = pme.log_evidence(bar_run)
    _within(est, regression.log_z)
    d = est.diagnostics
    # Stochastic bounds: a generous MC allowance, they must bracket the truth.
    assert d["lower_bound"] <= regression.log_z + 0.02
    assert d["upper_bound"] >= regression.log_z - 0.02
    assert 0 < d["overlap"] <= 1


def test_bar_results_group_round_trip(bar_run, tmp_path):
    group = get_group(bar_run, "log_evidence")
    assert group["work_forward"].dims == ("particle",)
    assert group["beta"].dims == ("stage",) and group["beta"].values[-1] == 1.0
    back = from_netcdf(to_netcdf(bar_run, tmp_path / "bar.nc"))
    assert pme.log_evidence(back).log_z == pme.log_evidence(bar_run).log_z


@pytest.mark.parametrize("method", ["ais", "rais"])
def test_one_direction_exact(method, regression):
    idata = pme.sample_evidence(
        regression.model, method=method, random_seed=SEED, progressbar=False, chains=2
    )
    _within(pme.log_evidence(idata), regression.log_z)


def test_reverse_reuses_user_posterior(bar_run, regression):
    """posterior= skips the internal NUTS run and reuses the user's draws."""
    idata = pme.sample_evidence(
        regression.model, method="rais", posterior=bar_run, random_seed=SEED + 1, progressbar=False
    )
    _within(pme.log_evidence(idata), regression.log_z)
    np.testing.assert_array_equal(
        get_group(idata, "posterior")["w"].values, get_group(bar_run, "posterior")["w"].values
    )


def test_beta_bernoulli_ais():
    case = tm.beta_bernoulli()
    idata = pme.sample_evidence(case.model, method="ais", random_seed=SEED, progressbar=False)
    _within(pme.log_evidence(idata), case.log_z)


def test_prior_base_is_refused(regression):
    with pytest.raises(ValueError, match="Gaussian base"):
        pme.sample_evidence(regression.model, method="ais", base="prior")
