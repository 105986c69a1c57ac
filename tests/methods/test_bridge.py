"""Method ``bridge`` (:mod:`pymc_evidence.methods.bridge`): the PyMC workflow on models with
exact log Z (pymc_evidence.testing.models), under PyMC 5 and PyMC 6. The pure estimator is
tested in ``tests/estimators/test_bridge.py``."""

import numpy as np
import pymc as pm
import pytest
import xarray as xr

import pymc_evidence as pme
from pymc_evidence import bridge_sampling, compat
from pymc_evidence.estimators.diagnostics import EvidenceWarning
from pymc_evidence.hygiene import ModelHygieneError
from pymc_evidence.results import log_evidence
from pymc_evidence.testing import models as tm
from tests._accuracy import assert_log_z

SEED = 20260601


# ---------------------------------------------------------------- PyMC workflow

DRAWS, TUNE, CHAINS = 1000, 500, 4
CASES = {
    "regression_d5": lambda: tm.conjugate_regression(d=5),
    "beta_bernoulli": tm.beta_bernoulli,
    "normalized_density": tm.normalized_density,
    "beta_bernoulli_skewed": lambda: tm.beta_bernoulli(n=8, heads=0),
}
_SAMPLES: dict = {}


def _sampled(name):
    """(case, idata) with 4 x 1000 NUTS draws, sampled once per test session."""
    if name not in _SAMPLES:
        case = CASES[name]()
        idata = pm.sample(
            DRAWS,
            tune=TUNE,
            chains=CHAINS,
            cores=1,
            random_seed=SEED,
            progressbar=False,
            compute_convergence_checks=False,
            model=case.model,
        )
        _SAMPLES[name] = case, idata
    return _SAMPLES[name]


def _check(est, truth, se_max=0.05):
    assert est.method == "bridge" and est.diagnostics["converged"] == 1.0
    assert_log_z(est, truth, abs_tol=0.1, se_max=se_max)


@pytest.mark.parametrize("name", ["regression_d5", "beta_bernoulli", "normalized_density"])
def test_exact_log_z(name):
    case, idata = _sampled(name)
    est = log_evidence(bridge_sampling(idata, case.model, random_seed=1))
    _check(est, case.log_z)
    assert est.n_chains == CHAINS and est.diagnostics["n_posterior"] == CHAINS * DRAWS / 2


def test_warp3_on_skewed_posterior():
    """logit p after 0 heads in 8 flips is skewed: warp-3 is right and more precise."""
    case, idata = _sampled("beta_bernoulli_skewed")
    with case.model:  # the model from the context
        normal = log_evidence(bridge_sampling(idata, random_seed=1))
        warp = log_evidence(bridge_sampling(idata, proposal="warp3", random_seed=1))
    _check(normal, case.log_z)
    _check(warp, case.log_z)
    assert warp.se < normal.se


def test_repetitions_on_run_dim():
    case, idata = _sampled("beta_bernoulli")
    out = bridge_sampling(idata, case.model, repetitions=4, proposal="warp3", random_seed=2)
    group = compat.get_group(out, "log_evidence")
    est = log_evidence(out)
    assert group["log_marginal_likelihood_chain"].dims == ("run",) and est.n_chains == 4
    assert group["converged"].dims == ("run",) and group.attrs["repetitions"] == 4
    assert est.log_z == pytest.approx(np.mean(est.per_chain_log_z))
    assert est.se >= np.sqrt(est.diagnostics["re2_posterior"])
    _check(est, case.log_z)


def _as_datatree(idata):
    names = compat.group_names(idata)
    return xr.DataTree.from_dict({name: compat.get_group(idata, name) for name in names})


@pytest.mark.parametrize("kind", ["native", "datatree"])
def test_container_kept_and_round_trip(kind, tmp_path):
    """pm.sample's container (InferenceData on PyMC 5, DataTree on 6) and a DataTree."""
    case, idata = _sampled("normalized_density")
    source = idata if kind == "native" else _as_datatree(idata)
    before = compat.group_names(source)
    out = bridge_sampling(source, case.model, random_seed=3)
    assert type(out) is type(source) and compat.group_names(source) == before
    assert compat.group_names(out) == [*before, "log_evidence"]
    back = compat.from_netcdf(compat.to_netcdf(out, tmp_path / "bridge.nc"))
    assert log_evidence(back).log_z == log_evidence(out).log_z
    again = bridge_sampling(out, case.model, random_seed=3)  # replaces the group
    assert compat.group_names(again).count("log_evidence") == 1


def test_api_nonconvergence_reported():
    case, idata = _sampled("regression_d5")
    with pytest.warns(EvidenceWarning, match="did not converge"):
        out = bridge_sampling(idata, case.model, maxiter=1, random_seed=1)
    group = compat.get_group(out, "log_evidence")
    assert float(group["diag_converged"]) == 0.0 and "did not converge" in group.attrs["warnings"]


def test_run_bridge_samples_or_reuses():
    case, idata = _sampled("normalized_density")
    kwargs = dict(tune=200, chains=2, cores=1, random_seed=4, progressbar=False)
    reused = pme.sample_evidence(case.model, "bridge", draws=200, posterior=idata, **kwargs)
    assert compat.get_group(reused, "posterior").sizes["draw"] == DRAWS
    with case.model:  # through the public entry point, model from the context
        fresh = pme.sample_evidence(method="bridge", draws=300, proposal="warp3", **kwargs)
    assert compat.get_group(fresh, "posterior").sizes == {"chain": 2, "draw": 300, "dim": 3}
    _check(log_evidence(fresh), case.log_z)


def test_input_errors():
    case, idata = _sampled("normalized_density")
    posterior = compat.get_group(idata, "posterior")
    with pytest.raises(ValueError, match="no 'posterior' group"):
        bridge_sampling(compat.new_idata({"observed_data": posterior}), case.model)
    with pytest.raises(ValueError, match=r"lacks the model's free variables \['x'\]"):
        bridge_sampling(compat.new_idata({"posterior": posterior.rename({"x": "z"})}), case.model)
    with pytest.raises(ValueError, match="too few draws"):
        bridge_sampling(compat.new_idata({"posterior": posterior.isel(draw=slice(6))}), case.model)
    with pytest.raises(ValueError, match="unknown proposal 'warp2'.*'normal'.*'warp3'"):
        bridge_sampling(idata, case.model, proposal="warp2")
    with pytest.raises(ValueError, match="repetitions"):
        bridge_sampling(idata, case.model, repetitions=0)
    other, _ = _sampled("beta_bernoulli")
    with pytest.raises(ValueError, match="lacks the model's free variables"):
        bridge_sampling(idata, other.model)


def test_discrete_and_improper_models_refused():
    with pm.Model() as discrete:
        k = pm.Poisson("k", 3.0)
        pm.Normal("y", k, 1.0, observed=[1.0])
    fake = compat.new_idata(
        {"posterior": xr.Dataset({"k": (("chain", "draw"), np.ones((1, 20), dtype=int))})}
    )
    with pytest.raises(ModelHygieneError, match="discrete"):
        bridge_sampling(fake, discrete)
    with pm.Model() as improper:
        pm.Flat("x")
    with pytest.raises(ModelHygieneError, match="improper"):
        bridge_sampling(fake, improper)


def test_bridge_sampling_without_a_model_says_what_to_pass():
    fake = object()
    with pytest.raises(TypeError, match=r"bridge_sampling\(idata, model\)"):
        bridge_sampling(fake)


# ---------------------------------------------------------------- too many dimensions


def test_covariance_noise_rule_refuses_before_sampling(monkeypatch):
    """A 302-parameter hierarchy with the default 4 x 1000 draws: d^2/4n = 11.4 nats of
    noise in the proposal (bridge was 2-9 nats off at 352-502 parameters): refused before
    the NUTS run, for bridge alone and in a cross-check (smc does not run first either).
    As written (``reparam=None``): with ``"auto"`` its 300 effects are integrated out and
    two dimensions are left."""
    from pymc_evidence.methods import bridge as bridge_method
    from pymc_evidence.testing import hierarchical_normal

    assert bridge_method.covariance_noise(302, 2000) > bridge_method.MAX_COVARIANCE_NOISE
    assert bridge_method.covariance_noise(152, 2000) < bridge_method.MAX_COVARIANCE_NOISE

    def no_sampling(*args, **kwargs):
        raise AssertionError("sampled before refusing")

    monkeypatch.setattr("pymc_evidence.problem.run_nuts", no_sampling)
    monkeypatch.setattr("pymc_evidence.methods.smc._run", no_sampling)
    model = hierarchical_normal(J=300).model
    for method in ("bridge", ["smc", "bridge"]):
        with pytest.raises(ValueError, match=r"302 dimensions.*method='smc'.*draws=1426"):
            pme.sample_evidence(model, method, random_seed=1, progressbar=False, reparam=None)


def test_covariance_noise_rule_warns_on_given_draws():
    """Draws the user brings are bridge-sampled, with a warning naming the reason."""
    from pymc_evidence.testing import hierarchical_normal

    model = hierarchical_normal(J=60).model  # 62 parameters, 4 x 20 draws fit: 12 nats
    with model:
        prior = compat.get_group(pm.sample_prior_predictive(draws=160, random_seed=1), "prior")
    posterior = xr.Dataset(
        {
            name: (("chain", "draw", *var.dims[2:]), var.values.reshape(4, 40, *var.shape[2:]))
            for name, var in prior.data_vars.items()
        }
    )
    idata = compat.new_idata({"posterior": posterior})
    with pytest.warns(EvidenceWarning, match="62 dimensions, fitted to 80 draws"):
        bridge_sampling(idata, model=model, random_seed=1)
