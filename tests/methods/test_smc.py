"""Methods ``smc`` and ``arm`` (:mod:`pymc_evidence.methods.smc`) end to end against exact
log Z; the estimators and the engine are tested in ``tests/estimators/test_smc.py`` and
``tests/engines/test_smc.py``."""

import warnings

import numpy as np
import pytest
import xarray as xr

import pymc_evidence as pme
from pymc_evidence.basefit import fit_base
from pymc_evidence.compat import from_netcdf, get_group, to_netcdf
from pymc_evidence.estimators.diagnostics import EvidenceWarning
from pymc_evidence.testing import models as tm
from tests._accuracy import assert_log_z

SEED = 505
COARSE = np.array([0.0, 0.01, 0.1, 1.0])  # a fixed schedule whose later steps are hard


# ---------------------------------------------------------------- end to end


def _estimate(model, method, **kwargs):
    options = dict(n_particles=500, n_runs=4, cores=None, random_seed=SEED, progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        idata = pme.sample_evidence(model, method, **{**options, **kwargs})
    return idata, pme.log_evidence(idata)


@pytest.fixture(scope="module")
def regression():
    return tm.conjugate_regression(d=5)


@pytest.fixture(scope="module")
def bernoulli():
    return tm.beta_bernoulli()


@pytest.fixture(scope="module")
def advi_bases(regression, bernoulli):
    """One quick ADVI fit per model (the default has 8 restarts; see the slow test)."""
    return {
        case.name: fit_base("advi", model=case.model, random_seed=SEED, n_steps=2000)
        for case in (regression, bernoulli)
    }


@pytest.mark.parametrize("name", ["regression", "bernoulli"])
@pytest.mark.parametrize("base", ["prior", "advi"])
def test_smc_exact_models(name, base, request, advi_bases):
    case = request.getfixturevalue(name)
    base = advi_bases[case.name] if base == "advi" else base
    _, est = _estimate(case.model, "smc", base=base)
    assert_log_z(est, case.log_z, abs_tol=0.1, se_max=0.1)


def test_smc_results_group(regression, tmp_path):
    idata, est = _estimate(regression.model, "smc", base="prior", n_particles=300, n_runs=3)
    group = get_group(idata, "log_evidence")
    assert group.attrs["method"] == "smc" and group.attrs["schedule"] == "pilot"
    assert group.attrs["pilot_particles"] == 75  # n_particles // 4
    # every run follows the pilot's schedule
    np.testing.assert_array_equal(group["beta"].values, group["beta"].values[[0, 0, 0]])
    np.testing.assert_array_equal(group["beta"].values[0], group.attrs["schedule_betas"])
    assert group["log_marginal_likelihood_chain"].dims == ("run",) and group.sizes["run"] == 3
    for key in ("beta", "log_increment", "ess", "n_particles", "acceptance"):
        assert group[key].dims == ("run", "stage")
    beta = group["beta"].values
    assert np.all(np.nanmax(beta, axis=1) == 1.0) and np.all(beta[:, 0] == 0.0)
    # per-run log Z is the sum of its increments
    np.testing.assert_allclose(
        np.nansum(group["log_increment"].values, axis=1), group["log_marginal_likelihood_chain"]
    )
    posterior = get_group(idata, "posterior")
    assert posterior["w"].shape == (3, 300, 5)
    back = from_netcdf(to_netcdf(idata, tmp_path / "smc.nc"))
    assert pme.log_evidence(back).log_z == est.log_z
    # xr.open_dataset reads the root group: a hint, and the evidence group read alone
    with pytest.raises(TypeError, match="xr.open_datatree"):
        pme.log_evidence(xr.open_dataset(tmp_path / "smc.nc"))
    group = xr.open_dataset(tmp_path / "smc.nc", group="log_evidence")
    assert pme.log_evidence(group).log_z == est.log_z


def test_adaptive_schedule_per_run_is_still_offered(regression):
    idata, est = _estimate(
        regression.model, "smc", base="prior", n_particles=300, n_runs=2, schedule="adaptive"
    )
    group = get_group(idata, "log_evidence")
    assert group.attrs["schedule"] == "adaptive" and "pilot_particles" not in group.attrs
    assert_log_z(est, regression.log_z, abs_tol=0.15, se_max=0.15)
    with pytest.raises(ValueError, match="pilot_particles"):
        _estimate(regression.model, "smc", pilot_particles=1)


def test_pilot_moves_at_every_stage_whatever_move_weighted_says(regression):
    """``move_weighted=False`` leaves the runs' weighted particles in place, not the
    pilot's: the schedule is the one the moves give, and the runs move less on it."""
    idata = {}
    for flag in (True, False):
        idata[flag], est = _estimate(
            regression.model, "smc", base="prior", n_particles=300, move_weighted=flag
        )
        assert_log_z(est, regression.log_z, abs_tol=0.15, se_max=0.15)
    on, off = (get_group(idata[flag], "log_evidence") for flag in (True, False))
    np.testing.assert_array_equal(on.attrs["schedule_betas"], off.attrs["schedule_betas"])
    assert not off.attrs["move_weighted"] and on.attrs["move_weighted"]
    assert np.nansum(off["n_moves"]) < np.nansum(on["n_moves"])
    with pytest.raises(ValueError, match="move_weighted"):
        _estimate(regression.model, "smc", move_weighted="no")


def test_arm_expands_on_coarse_fixed_schedule(regression, advi_bases):
    """ARM adds particles where the coarse steps are hard, stays within (i_max+1) R, is exact."""
    base = advi_bases[regression.name]
    kwargs = dict(base=base, schedule=COARSE, n_particles=400, max_expansions=3)
    idata, est = _estimate(regression.model, "arm", **kwargs)
    assert_log_z(est, regression.log_z, abs_tol=0.1, se_max=0.1)
    group = get_group(idata, "log_evidence")
    counts = group["n_particles"].values[:, 1:]
    assert np.all(counts % 400 == 0) and counts.min() >= 400 and counts.max() <= 1600
    assert counts.max() > 400, "no stage expanded"
    expanded = group["n_expansions"].values[:, 1:] > 0
    assert np.all(group["resampled"].values[:, 1:][expanded] == 1)
    assert np.all(group["gamma"].values[:, 1:][~expanded] >= 0.7)
    smc, _ = _estimate(regression.model, "smc", **kwargs)
    assert np.all(get_group(smc, "log_evidence")["n_particles"].values[:, 1:] == 400)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["smc", "arm"])
def test_defaults_exact_models(method, regression, bernoulli):
    """sample_evidence-like defaults: ADVI base with 8 restarts, 1000 particles, 4 runs."""
    for case in (regression, bernoulli):
        _, est = _estimate(case.model, method, n_particles=1000, base="advi")
        assert_log_z(est, case.log_z, abs_tol=0.1, se_max=0.1)


def test_sample_evidence_smc_entry_point():
    """method="smc" through sample_evidence: n_particles per run, n_runs runs."""
    import pymc_evidence as pme
    from pymc_evidence.testing import models as tm

    case = tm.beta_bernoulli()
    with case.model:
        idata = pme.sample_evidence(
            method="smc", n_particles=300, n_runs=3, base="prior", random_seed=7, progressbar=False
        )
    est = pme.log_evidence(idata)
    assert est.method == "smc" and est.n_chains == 3
    assert_log_z(est, case.log_z, abs_tol=0.1, label="smc via sample_evidence")


@pytest.mark.parametrize("method", ["smc", "arm", "ais"])
@pytest.mark.parametrize(
    "given", [{"draws": 300}, {"chains": 3}, {"tune": 100}, {"target_accept": 0.9}]
)
def test_particle_methods_refuse_pm_sample_sizes(method, given):
    """draws/chains/tune (and NUTS arguments) are refused, not reinterpreted, before any work."""
    import pymc_evidence as pme
    from pymc_evidence.testing import models as tm

    with pytest.raises(TypeError, match="n_particles"):
        pme.sample_evidence(tm.beta_bernoulli().model, method, progressbar=False, **given)
