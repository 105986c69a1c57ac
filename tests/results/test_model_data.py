"""Issue 25, point 7: a result speaks the model as written.

``reparam="auto"`` samples the non-centred model, whose free variables include internal
ones (``theta_z``, ``y_unobserved_z``); the returned ``posterior`` must hold the variables
of the model as written only. ``observed_data`` (and ``constant_data``) must be present for
every method, as ``pm.sample`` writes them.
"""

import warnings

import numpy as np
import pymc as pm
import pytest

import pymc_evidence as pme
from pymc_evidence.compat import get_group, group_names
from pymc_evidence.results.model_data import internal_names, model_data_groups
from pymc_evidence.transforms import reparametrize

Y = [1.0, np.nan, 2.0]


def centred_model():
    """A centred hierarchy (``theta`` is rewritten) with one missing observation (imputed
    ``y_unobserved``, rewritten too) and a data container."""
    with pm.Model(coords={"g": ["a", "b", "c"]}) as model:
        x = pm.Data("x", np.array([1.0, 2.0, 3.0]), dims="g")
        mu = pm.Normal("mu", 0.0, 2.0)
        tau = pm.HalfNormal("tau", 1.0)
        theta = pm.Normal("theta", mu, tau, dims="g")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # PyMC's ImputationWarning
            pm.Normal("y", theta * x, 1.0, observed=Y, dims="g")
    return model


@pytest.fixture(scope="module")
def model():
    return centred_model()


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _written(model):
    """What pm.sample's posterior holds: free variables and deterministics as written."""
    return {v.name for v in model.free_RVs} | {d.name for d in model.deterministics}


def test_the_model_is_rewritten(model):
    new = reparametrize(model)
    assert internal_names(new, model) == ["theta_z", "y_unobserved_z"]


@pytest.mark.parametrize(
    "method, options",
    [
        ("smc", dict(n_particles=100, n_runs=2)),
        ("bridge", dict(draws=150, tune=150, chains=2)),
    ],
)
def test_posterior_and_data_groups(model, method, options):
    idata = _quiet(
        pme.sample_evidence, model, method=method, random_seed=1, progressbar=False, **options
    )
    post = get_group(idata, "posterior")
    assert set(post.data_vars) == _written(model)
    assert not [name for name in post.data_vars if name.endswith("_z")]
    assert {"observed_data", "constant_data"} <= set(group_names(idata))
    observed = get_group(idata, "observed_data")
    np.testing.assert_array_equal(observed["y_observed"].values, [1.0, 2.0])
    constant = get_group(idata, "constant_data")
    np.testing.assert_array_equal(constant["x"].values, [1.0, 2.0, 3.0])
    assert constant["x"].dims == ("g",)
    rewritten = get_group(idata, "log_evidence").attrs["reparametrized"]
    assert set(rewritten.split(",")) == {"theta", "y_unobserved"}  # named there instead


def test_data_groups_are_what_pm_sample_writes(model):
    with model:
        trace = _quiet(
            pm.sample, 20, tune=20, chains=1, progressbar=False, compute_convergence_checks=False
        )
    ours = model_data_groups(model)
    for name in ("observed_data", "constant_data"):
        theirs = get_group(trace, name)
        assert set(ours[name].data_vars) == set(theirs.data_vars)
        for var in theirs.data_vars:
            assert ours[name][var].dims == theirs[var].dims
            np.testing.assert_array_equal(ours[name][var].values, theirs[var].values)


def test_exact_results_carry_the_observed_data():
    with pm.Model() as model:
        pm.Normal("y", 0.0, 1.0, observed=[0.5, -0.2])
    idata = pme.sample_evidence(model, progressbar=False)
    assert get_group(idata, "log_evidence").attrs["method"] == "exact"
    np.testing.assert_array_equal(get_group(idata, "observed_data")["y"].values, [0.5, -0.2])
