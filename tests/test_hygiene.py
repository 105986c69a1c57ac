"""Model hygiene: models whose log Z is undefined (or not what PyMC's logp says) are refused.

Every refusal is checked through :func:`pymc_evidence.check_model` and through the public
entry points, which must refuse *before* any base fitting or sampling starts.
"""

import numpy as np
import pymc as pm
import pytest
from scipy import stats

import pymc_evidence as pme
from pymc_evidence import ModelHygieneError, PriorBase, check_model
from pymc_evidence.runtime import model_space
from tests._accuracy import assert_log_z

Y = np.array([0.4, -0.3, 1.1])

# Small CT settings for the few end-to-end runs of this file.
SMALL = dict(
    method="ct",
    draws=300,
    tune=300,
    chains=2,
    cores=1,
    progressbar=False,
    adapt_rounds=0,
    base_kwargs={"restarts": 1, "n_steps": 1000},
)


@pytest.fixture
def no_sampling(monkeypatch):
    """Make any attempt to fit or sample through ``sample_evidence`` fail loudly."""

    def boom(*args, **kwargs):
        raise AssertionError("sample_evidence started fitting/sampling an invalid model")

    monkeypatch.setattr(pm, "sample", boom)
    monkeypatch.setattr("pymc_evidence.problem.fit_record", boom)


def flat_model():
    with pm.Model() as model:
        mu = pm.Flat("mu_flat")
        pm.Normal("y", mu, 1.0, observed=Y)
    return model


def halfflat_model():
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        s = pm.HalfFlat("s_halfflat")
        pm.Normal("y", mu, s, observed=Y)
    return model


def discrete_model():
    with pm.Model() as model:
        k = pm.Poisson("k_count", 3.0)
        pm.Normal("y", k, 1.0, observed=Y)
    return model


def potential_model():
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Potential("my_lik", pm.logp(pm.Normal.dist(mu, 1.0), Y).sum())
    return model


def total_size_model():
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y_batch", mu, 1.0, observed=Y, total_size=300)
    return model


# ------------------------------------------------------------------------------------------
# check_model
@pytest.mark.parametrize(
    ("factory", "name", "op"),
    [(flat_model, "mu_flat", "Flat"), (halfflat_model, "s_halfflat", "HalfFlat")],
)
def test_improper_prior_is_refused_by_name(factory, name, op):
    with pytest.raises(ModelHygieneError, match=name) as info:
        check_model(factory())
    assert "improper" in str(info.value)
    assert op in str(info.value)


def test_discrete_free_variable_is_refused():
    with pytest.raises(ModelHygieneError, match="discrete") as info:
        check_model(discrete_model())
    assert "k_count" in str(info.value)


def test_potential_is_refused_unless_declared_likelihood():
    model = potential_model()
    with pytest.raises(ModelHygieneError, match="my_lik") as info:
        check_model(model)
    # the prior-penalty case has its route too (a difference of two evidences)
    assert "without its observed variables" in str(info.value)
    check_model(model, potentials="likelihood")  # accepted


def test_potentials_prior_is_not_implemented():
    with pytest.raises(NotImplementedError):
        check_model(potential_model(), potentials="prior")


@pytest.mark.parametrize("value", ["likelyhood", "data", 1])
def test_potentials_bad_value_is_a_value_error(value):
    with pytest.raises(ValueError, match="potentials") as info:
        check_model(potential_model(), potentials=value)
    # a usage error, not a statement about the model
    assert not isinstance(info.value, ModelHygieneError)


def test_total_size_is_refused():
    with pytest.raises(ModelHygieneError, match="total_size") as info:
        check_model(total_size_model())
    assert "y_batch" in str(info.value)


def test_clean_models_pass():
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        s = pm.HalfNormal("s", 1.0)
        p = pm.Beta("p", 2.0, 2.0)
        pm.Normal("y", mu, s, observed=Y)
        pm.Bernoulli("b", p, observed=[0, 1, 1])  # discrete *observed* data are fine
    assert check_model(model) is None


# ------------------------------------------------------------------------------------------
# The public entry points refuse before any work
@pytest.mark.parametrize(
    ("factory", "match"),
    [
        (flat_model, "mu_flat"),
        (halfflat_model, "s_halfflat"),
        (discrete_model, "discrete"),
        (potential_model, "my_lik"),
        (total_size_model, "total_size"),
    ],
)
@pytest.mark.parametrize("method", ["ct", "gibbs_ct"])
def test_sample_evidence_refuses_before_sampling(no_sampling, factory, match, method):
    with factory(), pytest.raises(ModelHygieneError, match=match):
        pme.sample_evidence(method=method, draws=10, tune=10, chains=1, progressbar=False)


def test_sample_evidence_potential_options_before_sampling(no_sampling):
    model = potential_model()
    with pytest.raises(NotImplementedError):
        pme.sample_evidence(model, potentials="prior", progressbar=False)
    with pytest.raises(ValueError, match="potentials"):
        pme.sample_evidence(model, potentials="bogus", progressbar=False)


def test_transform_and_step_refuse_potential():
    model = potential_model()
    space = model_space(model)
    base = PriorBase(names=space.names, sizes=space.sizes)
    with pytest.raises(ModelHygieneError, match="my_lik"):
        pme.continuous_tempering(base, model=model)
    with pytest.raises(ModelHygieneError, match="my_lik"):
        pme.GibbsContinuousTempering(base=base, model=model)


# ------------------------------------------------------------------------------------------
# What the opt-ins and edge cases must compute
def test_potential_as_likelihood_gives_the_likelihood_evidence():
    """A Normal likelihood written as a Potential: log Z = log N(y; 0, I + 11^T)."""
    truth = stats.multivariate_normal(np.zeros(3), np.eye(3) + np.ones((3, 3))).logpdf(Y)
    with potential_model():
        idata = pme.sample_evidence(potentials="likelihood", random_seed=11, **SMALL)
    est = pme.log_evidence(idata)
    assert_log_z(est, truth, abs_tol=0.1, label="Potential as likelihood")


def test_model_without_data_has_log_z_zero():
    """No observed data: the 'evidence' is the prior's total mass, exactly 1; said, not
    sampled (tests/api/test_exact.py has the other models that need no sampling)."""
    with pm.Model(), pytest.warns(pme.ModelWarning, match="no observed variables"):
        pm.Normal("mu", 0.0, 2.0)
        pm.HalfNormal("s", 1.0)
        idata = pme.sample_evidence(random_seed=5, **SMALL)
    est = pme.log_evidence(idata)
    assert (est.log_z, est.se, est.method) == (0.0, 0.0, "exact")
