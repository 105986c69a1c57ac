"""Method ``st`` (:mod:`pymc_evidence.methods.st`) against exact log Z; the
SimulatedTempering step in a user's ``pm.sample`` is tested in
``tests/steps/test_simulated_tempering.py``."""

import numpy as np
import pytest
from scipy import stats

import pymc_evidence as pme
from pymc_evidence.compat import get_group
from pymc_evidence.testing import models as tm
from tests._accuracy import assert_log_z

SEED = 31


@pytest.mark.parametrize(
    "factory",
    [tm.beta_bernoulli, lambda: tm.conjugate_regression(d=5), tm.normalized_density],
    ids=["beta_bernoulli", "regression_d5", "normalized_density"],
)
def test_st_exact_log_z_at_defaults(factory):
    case = factory()
    idata = pme.sample_evidence(case.model, method="st", random_seed=SEED, progressbar=False)
    assert_log_z(pme.log_evidence(idata), case.log_z, abs_tol=0.1, se_max=0.1, label=case.name)


@pytest.fixture(scope="module")
def bimodal():
    """The prior as base: the power-posterior path sees every mode at beta = 0, whereas an
    ADVI base sees only the modes its restarts found (6 of 8 seeds find both here).

    3000 draws: at the default 1000 the se (about 0.06) is honest (rms error/se 1.1 over 28
    seeds, PyMC 5.28) but too wide for the 0.1 bound (|error| > 0.1 on 5 of 28 seeds); at
    3000 it is about 0.034 (rms error/se 1.0, largest |error| 0.088 over 20 seeds)."""
    case = tm.mixture_likelihood()
    idata = pme.sample_evidence(
        case.model, method="st", base="prior", draws=3000, random_seed=SEED, progressbar=False
    )
    return case, idata


def test_st_bimodal_evidence(bimodal):
    case, idata = bimodal
    assert_log_z(pme.log_evidence(idata), case.log_z, abs_tol=0.1, se_max=0.1, label=case.name)


def test_st_bimodal_mode_masses(bimodal):
    """The target-level weighted draws hold both modes with their exact masses."""
    case, idata = bimodal
    d = case.data
    y, a, w = np.asarray(d["y"]), np.asarray(d["offset"]), d["weight"]
    s0, s = d["prior_sigma"], d["noise_sigma"]
    sd = np.sqrt(s0**2 + s**2)
    log_mass = [
        np.log(w) + stats.norm.logpdf(y, a, sd).sum(),
        np.log1p(-w) + stats.norm.logpdf(y, -a, sd).sum(),
    ]
    exact = np.exp(log_mass[0] - np.logaddexp(*log_mass))
    shrink = s0**2 / (s0**2 + s**2)
    x = get_group(idata, "posterior")["x"].values.reshape(-1, y.size)
    plus = np.linalg.norm(x - shrink * (y - a), axis=1) < np.linalg.norm(
        x - shrink * (y + a), axis=1
    )
    assert abs(plus.mean() - exact) < 0.08, (plus.mean(), exact)


def test_st_results_level_dimension(bimodal):
    _, idata = bimodal
    group = get_group(idata, "log_evidence")
    assert group["beta"].dims == ("level",)
    betas = group["beta"].values
    assert betas[0] == 0.0 and betas[-1] == 1.0 and np.all(np.diff(betas) > 0)
    assert np.isclose(group["c_hat"].sum(), 1.0)
    assert np.all(group["round_trips"].values >= 1)
    assert not any(str(v).startswith("st_q_") for v in get_group(idata, "sample_stats").data_vars)


def test_st_samples_again_where_chains_cross_the_ladder_rarely():
    """100 draws per chain leave a chain with fewer than 8 round trips over the ladder, so
    the run is repeated with 16 / trips times the draws (at most 4 times: 400 here)."""
    from pymc_evidence.methods.st import ROUND_TRIPS_MIN, more_draws

    assert more_draws(ROUND_TRIPS_MIN, 1000) is None and more_draws(4.0, 1000) == 4000
    case = tm.conjugate_regression(d=5)
    idata = pme.sample_evidence(
        case.model, method="st", draws=100, tune=200, chains=2, random_seed=SEED,
        progressbar=False,
    )  # fmt: skip
    est = pme.log_evidence(idata)
    assert est.diagnostics["first_run_min_round_trips"] < ROUND_TRIPS_MIN
    assert get_group(idata, "sample_stats").sizes["draw"] == 400
    assert_log_z(est, case.log_z, abs_tol=0.1, label="regression, longer run")


def test_st_options_are_the_steps_keywords():
    """``STOptions`` lists every keyword-only argument of the step that the problem does
    not set, with the step's defaults (a new argument of the step needs a field there)."""
    import inspect

    from pymc_evidence.methods.st import STOptions

    params = inspect.signature(pme.SimulatedTempering.__init__).parameters
    set_by_problem = {"base", "potentials", "random_seed", "model", "warn_tempered"}
    expected = {
        name: p.default
        for name, p in params.items()
        if p.kind is p.KEYWORD_ONLY and name not in set_by_problem
    }
    assert STOptions.defaults() == expected
