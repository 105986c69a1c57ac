"""Tests for the non-centred reparametrisation transform (pymc_evidence.transforms.reparam).

Truths are derived independently of the code: densities are written by hand with scipy.stats
and the change of variables ``x = mu + sigma * z`` (log Jacobian ``sum log sigma``), and log Z
is the exact value of the analytic test model.
"""

import warnings

import numpy as np
import pymc as pm
import pytest
from scipy import stats

import pymc_evidence as pme
from pymc_evidence.testing import hierarchical_normal
from pymc_evidence.transforms import noncentrable, reparam_info, reparametrize
from tests._accuracy import assert_log_z


def _names(vars_):
    return sorted(v.name for v in vars_)


def _det_fn(model, names):
    """Deterministics ``names`` as a function of a point in the value space."""
    outs = model.replace_rvs_by_values([model[n] for n in names])
    return model.compile_fn(outs, inputs=model.value_vars, on_unused_input="ignore")


def _dims(model, name):
    return tuple(model.named_vars_to_dims.get(name) or ())


def _hier_hand_logp(data, mu, tau, theta):
    """Log density of the centred model in PyMC's space (mu, log tau, theta), by hand."""
    return (
        stats.norm.logpdf(mu, 0.0, data["mu_sigma"])
        + stats.halfnorm.logpdf(tau, scale=data["tau_sigma"])
        + np.log(tau)  # Jacobian of tau = exp(tau_log__)
        + stats.norm.logpdf(theta, mu, tau).sum()
        + stats.norm.logpdf(data["y"], theta, data["sigma"]).sum()
    )


def test_hierarchical_normal_is_rewritten_with_the_jacobian():
    case = hierarchical_normal(J=8, centered=True)
    old_free = _names(case.model.free_RVs)
    assert noncentrable(case.model) == ("theta",)
    new = reparametrize(case.model)
    assert new is not case.model
    assert _names(case.model.free_RVs) == old_free  # input untouched
    assert _names(new.free_RVs) == ["mu", "tau", "theta_z"]
    assert [d.name for d in new.deterministics] == ["theta"]
    assert _dims(new, "theta_z") == ("school",) == _dims(new, "theta")
    assert _names(new.observed_RVs) == ["y"]
    assert reparam_info(new)["rewritten"] == {"theta": "theta_z"}

    rng = np.random.default_rng(3)
    mu, tau, z = 1.3, 2.7, rng.normal(size=8)
    theta = mu + tau * z
    new_lp = new.compile_logp()({"mu": mu, "tau_log__": np.log(tau), "theta_z": z})
    old_lp = case.model.compile_logp()({"mu": mu, "tau_log__": np.log(tau), "theta": theta})
    hand_old = _hier_hand_logp(case.data, mu, tau, theta)
    assert np.isclose(old_lp, hand_old)
    assert np.isclose(new_lp, hand_old + 8 * np.log(tau))
    # and written directly in the new coordinates
    hand_new = (
        stats.norm.logpdf(mu, 0.0, case.data["mu_sigma"])
        + stats.halfnorm.logpdf(tau, scale=case.data["tau_sigma"])
        + np.log(tau)
        + stats.norm.logpdf(z).sum()
        + stats.norm.logpdf(case.data["y"], theta, case.data["sigma"]).sum()
    )
    assert np.isclose(new_lp, hand_new)
    [got] = _det_fn(new, ["theta"])({"mu": mu, "tau_log__": np.log(tau), "theta_z": z})
    assert np.allclose(got, theta)


def test_log_z_is_unchanged_by_smc():
    case = hierarchical_normal(J=8, centered=True)
    new = reparametrize(case.model)
    idata = pme.sample_evidence(model=new, method="smc", random_seed=1, progressbar=False)
    est = pme.log_evidence(idata)
    assert_log_z(est, case.log_z, abs_tol=0.15, label="reparametrized funnel, smc")


def test_student_t_with_free_location_and_scale():
    with pm.Model(coords={"g": ["a", "b", "c"]}) as m:
        loc = pm.Normal("loc", 0.0, 1.0)
        scale = pm.HalfNormal("scale", 1.0)
        pm.StudentT("b", nu=4.0, mu=loc, sigma=scale, dims="g")
    new = reparametrize(m)
    assert reparam_info(new)["distributions"] == {"b": "t"}
    assert _names(new.free_RVs) == ["b_z", "loc", "scale"]
    assert _dims(new, "b_z") == ("g",) == _dims(new, "b")
    loc_v, s, z = -0.4, 1.7, np.array([0.3, -1.2, 2.5])
    lp = new.compile_logp()({"loc": loc_v, "scale_log__": np.log(s), "b_z": z})
    hand = (
        stats.norm.logpdf(loc_v)
        + stats.halfnorm.logpdf(s)
        + np.log(s)
        + stats.t.logpdf(z, df=4.0).sum()
    )
    assert np.isclose(lp, hand)
    old = m.compile_logp()({"loc": loc_v, "scale_log__": np.log(s), "b": loc_v + s * z})
    assert np.isclose(lp, old + 3 * np.log(s))


def test_chain_of_two_levels():
    with pm.Model() as m:
        a = pm.Normal("a", 0.0, 2.0)
        s = pm.Exponential("s", 1.0)
        b = pm.Normal("b", mu=a, sigma=s, shape=2)
        pm.Normal("c", mu=b, sigma=pm.math.exp(a))  # shape (2,) taken from its parameters
    assert noncentrable(m) == ("b", "c")
    new = reparametrize(m)
    assert _names(new.free_RVs) == ["a", "b_z", "c_z", "s"]
    assert _names(new.deterministics) == ["b", "c"]
    a_v, s_v, bz, cz = 0.5, 0.8, np.array([0.1, -0.7]), np.array([1.1, 0.4])
    point = {"a": a_v, "s_log__": np.log(s_v), "b_z": bz, "c_z": cz}
    b_v = a_v + s_v * bz
    c_v = b_v + np.exp(a_v) * cz
    got_b, got_c = _det_fn(new, ["b", "c"])(point)
    assert np.allclose(got_b, b_v) and np.allclose(got_c, c_v)
    hand = (
        stats.norm.logpdf(a_v, 0, 2)
        + stats.expon.logpdf(s_v)
        + np.log(s_v)
        + stats.norm.logpdf(bz).sum()
        + stats.norm.logpdf(cz).sum()
    )
    assert np.isclose(new.compile_logp()(point), hand)


def test_coords_data_deterministics_and_observed_survive():
    x = np.linspace(-1.0, 1.0, 4)
    with pm.Model(coords={"obs": np.arange(4), "grp": ["u", "v"]}) as m:
        xd = pm.Data("x", x, dims="obs")
        mu = pm.Normal("mu", 0.0, 1.0)
        tau = pm.HalfNormal("tau", 1.0)
        alpha = pm.Normal("alpha", mu=mu, sigma=tau, dims="grp")
        pm.Deterministic("alpha_mean", alpha.mean())
        pm.Normal("y", mu=alpha[0] + xd * alpha[1], sigma=1.0, observed=x, dims="obs")
    new = reparametrize(m)
    assert reparam_info(new)["rewritten"] == {"alpha": "alpha_z"}
    assert _names(new.observed_RVs) == ["y"]  # observed, mu depends on free RVs: kept
    assert "y_z" not in new.named_vars
    assert _names(new.deterministics) == ["alpha", "alpha_mean"]
    assert [d.name for d in new.data_vars] == ["x"]
    assert list(new.coords["grp"]) == ["u", "v"] and len(new.coords["obs"]) == 4
    assert _dims(new, "y") == ("obs",) and _dims(new, "x") == ("obs",)
    with new:
        pm.set_data({"x": 2 * x})
    assert np.allclose(new["x"].get_value(), 2 * x)
    assert np.allclose(m["x"].get_value(), x)  # the input's data container is untouched


def test_nothing_to_rewrite_returns_the_model():
    with pm.Model() as m:
        d = pm.Data("d", np.array([1.0, 2.0]))
        a = pm.Normal("a", mu=d, sigma=2.0 * d)  # depends on data only
        pm.Normal("y", mu=a, sigma=1.0, observed=[0.5, 0.1])
    assert noncentrable(m) == ()
    assert reparametrize(m) is m
    assert reparam_info(m) == {}
    with m:
        assert reparametrize() is m  # model from the context


def test_bounded_and_transformed_variables_are_not_rewritten():
    ordered = pm.distributions.transforms.ordered
    with pm.Model() as m:
        mu = pm.Normal("mu", 0.0, 1.0)
        s = pm.HalfNormal("s", 1.0)
        pm.Normal("ord", mu=mu, sigma=s, shape=3, transform=ordered, initval=None)
        pm.TruncatedNormal("trunc", mu=mu, sigma=s, lower=0.0)
        pm.HalfNormal("half", sigma=s)
        pm.Normal("free", mu=mu, sigma=s)
    assert noncentrable(m) == ("free",)
    new = reparametrize(m)
    assert set(reparam_info(new)["rewritten"]) == {"free"}
    assert {"ord", "trunc", "half", "free_z"} <= {v.name for v in new.free_RVs}


def test_name_clash_and_unprovable_scale():
    with pm.Model() as m:
        a = pm.Normal("a", 0.0, 1.0)
        pm.Normal("b_z", 0.0, 1.0)  # takes the obvious name
        pm.Normal("b", mu=a, sigma=1.0)
        pm.Normal("c", mu=0.0, sigma=a)  # the scale can be negative: left alone
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        new = reparametrize(m)
    assert any("'c' is not rewritten" in str(w.message) for w in caught)
    info = reparam_info(new)
    assert info["rewritten"] == {"b": "b_z_1"} and set(info["skipped"]) == {"c"}
    assert {"a", "b_z", "b_z_1", "c"} == {v.name for v in new.free_RVs}


def test_custom_initial_values_are_kept_where_the_variable_is():
    """PyMC's ``fgraph_from_model`` refuses initial values; the copy sets them aside and
    puts them back on the variables that are not rewritten (``b`` becomes ``b_z``)."""
    with pm.Model() as m:
        a = pm.Normal("a", 0.0, 1.0, initval=0.5)
        pm.Normal("b", mu=a, sigma=1.0, initval=2.0)
    new = reparametrize(m)
    point = new.initial_point()
    assert point["a"] == 0.5 and point["b_z"] == 0.0
    assert m.rvs_to_initial_values[m["a"]] == 0.5  # the model is as it was


def test_a_funnel_kept_as_written_anneals_from_the_prior():
    """reparam=None keeps the centred eight-schools funnel; base="auto" then anneals from
    the prior (the ADVI base never covers the neck: smc was -0.33 nats, 11 se, low)."""
    from pymc_evidence.basefit.plan import auto_plan
    from pymc_evidence.problem import EvidenceProblem
    from pymc_evidence.transforms import centred_scales

    system = hierarchical_normal(centered=True)
    assert centred_scales(system.model) == ("theta",)
    problem = EvidenceProblem.build(system.model, random_seed=1, reparam=None)
    assert auto_plan(problem.shape).method == "prior"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = pme.sample_evidence(system.model, random_seed=1, reparam=None, progressbar=False)
    assert_log_z(pme.log_evidence(result), system.log_z, abs_tol=0.1, label="smc, funnel")


def test_a_potential_on_a_rewritten_value_variable_follows_it():
    """A potential built on the model's value variables (as the integrations make them):
    after ``b`` becomes ``tau * b_z``, the potential reads ``b``'s new expression, and the
    log density differs only by the Jacobian ``tau^K``."""
    with pm.Model() as model:
        tau = pm.HalfNormal("tau", 1.0)
        b = pm.Normal("b", 0.0, tau, shape=3)
        pm.Potential("on_values", -0.5 * ((model.rvs_to_values[b] - 1.0) ** 2).sum())
    new = reparametrize(model)
    z = np.array([0.3, -1.2, 0.8])
    log_tau = np.log(0.7)
    mine = new.compile_logp()({"tau_log__": log_tau, "b_z": z})
    theirs = model.compile_logp()({"tau_log__": log_tau, "b": 0.7 * z})
    assert mine == pytest.approx(theirs + 3 * log_tau)
