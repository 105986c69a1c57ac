"""Nested groupings of a non-Gaussian likelihood integrated by two levels of quadrature
(:mod:`pymc_evidence.transforms.group_nested_quadrature`), against
:mod:`pymc_evidence.testing.glmm_nested`'s trapezoids (no code shared with the package)."""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest

import pymc_evidence as pme
from pymc_evidence.testing.glmm import log_lik_constant
from pymc_evidence.testing.glmm_nested import _States, nested_count_hierarchy
from pymc_evidence.transforms import group_effects
from pymc_evidence.transforms.group_effects import group_candidates, integrate_group_effects
from pymc_evidence.transforms.group_nested import find_nested
from pymc_evidence.transforms.group_nested_levels import (
    NestedRule,
    graph_ops,
    joint_mode,
    state_integrals,
)
from pymc_evidence.transforms.group_nested_quadrature import GroupNestedQuadratureOut
from tests._accuracy import assert_log_z


@pytest.fixture(autouse=True)
def _two_levels_from_five_states(monkeypatch):
    """The default takes two levels from :data:`MIN_NESTED_OUTER` states, far above these
    small models' 5-8: lowered here, so that the default's path is the one tested."""
    monkeypatch.setattr(group_effects, "MIN_NESTED_OUTER", 5)


#: (mu, tau_s, tau_c): near the data's (0.3, 0.5, 0.3) and far from them on both sides.
POINTS = [(0.3, 0.5, 0.3), (1.0, 0.1, 1.5), (-0.5, 2.0, 0.05)]


def _system(kind="poisson", three_level=False, exact=False):
    return nested_count_hierarchy(J=30, K=6, rows=3, kind=kind, seed=3,
                                  three_level=three_level, exact=exact)  # fmt: skip


def _truth(system, mu, tau_s, tau_c) -> float:
    """``log p(y | mu, tau_s, tau_c)`` by the trapezoids."""
    d = system.data
    states = _States(d["kind"], d["y"].astype(float), d["county"], d["state_of"], d["trials"],
                     0.005)  # fmt: skip
    lik = states.log_integrals(tau_c, np.array([mu]), np.array([tau_s]))
    return float(lik.sum()) + log_lik_constant(d["kind"], d["y"].astype(float), d["trials"])


def _likelihood(model):
    """The integrated model's likelihood (observed terms and potentials) at ``(mu, tau_s,
    tau_c)``."""
    total = model.compile_logp(vars=model.observed_RVs + model.potentials, mode="JAX")

    def at(mu, tau_s, tau_c):
        return float(total({"mu": mu, "tau_s_log__": np.log(tau_s), "tau_c_log__": np.log(tau_c)}))

    return at


@pytest.mark.parametrize("kind", ["poisson", "bernoulli"])
def test_integral_converges_to_the_trapezoids(kind):
    """Many nodes at both levels: the integral to 1e-5 at the data's hyperparameters and
    far from them (each level exact as its nodes grow)."""
    system = _system(kind)
    model = system.model
    _, _, terms = find_nested(model, group_candidates(model), 5)
    ops = graph_ops(terms)
    rule = NestedRule(20, 15, 12, 21)
    total = pt.sum(state_integrals(ops, rule, joint_mode(ops, rule.steps)[:2]))
    values = [model.rvs_to_values[model[name]] for name in ("mu", "tau_s", "tau_c")]
    fn = pytensor.function(values, total, on_unused_input="ignore", mode="JAX")
    for mu, tau_s, tau_c in POINTS:
        got = float(fn(mu, np.log(tau_s), np.log(tau_c)))
        assert abs(got - _truth(system, mu, tau_s, tau_c)) < 1e-5, (mu, tau_s, tau_c)


@pytest.mark.parametrize("kind, three_level", [("poisson", False), ("bernoulli", True)])
def test_chosen_rule_matches_the_trapezoids(kind, three_level):
    """The model the default builds: both effects gone, its likelihood within the rule's
    tolerance of the truth at every point."""
    system = _system(kind, three_level)
    out = integrate_group_effects(system.model)
    assert isinstance(out, GroupNestedQuadratureOut) and out.names == ("a", "b")
    assert sorted(rv.name for rv in out.model.free_RVs) == ["mu", "tau_c", "tau_s"]
    lik = _likelihood(out.model)
    for point in POINTS:
        assert abs(lik(*point) - _truth(system, *point)) < 0.01, point


def test_fixed_priors_only():
    """No hyperparameter at all: the rule is checked at the one point there is."""
    county = np.repeat(np.arange(20), 3)
    state_of = np.repeat(np.arange(5), 4)
    y = np.random.default_rng(2).poisson(1.5, 60)
    with pm.Model() as model:
        a = pm.Normal("a", 0.0, 0.5, shape=20)
        b = pm.Normal("b", 0.0, 0.7, shape=5)
        pm.Poisson("y", pm.math.exp(a[county] + b[state_of[county]]), observed=y)
    out = integrate_group_effects(model)
    assert isinstance(out, GroupNestedQuadratureOut)
    states = _States("poisson", y.astype(float), county, state_of, 1, 0.005)
    want = float(states.log_integrals(0.5, np.array([0.0]), np.array([0.7])).sum())
    want += log_lik_constant("poisson", y.astype(float), 1)
    total = out.model.compile_logp(vars=out.model.observed_RVs + out.model.potentials)
    assert abs(float(total({})) - want) < 0.01


def test_few_states_keep_one_level(monkeypatch):
    """Below :data:`MIN_NESTED_OUTER` states the counties alone are integrated."""
    system = _system("poisson")
    monkeypatch.setattr(group_effects, "MIN_NESTED_OUTER", 7)
    out = integrate_group_effects(system.model)
    assert not isinstance(out, GroupNestedQuadratureOut) and out.names == ("a",)


def test_draws_follow_the_states_conditional():
    """At fixed hyperparameters, the drawn states' means and sds against the trapezoids'
    conditional moments of ``x = mu + b``."""
    system = _system("poisson")
    out = integrate_group_effects(system.model)
    z = pt.vector("z", shape=(out.proposal_size,))
    values = out.model.value_vars
    fn = pytensor.function([*values, z], out.tables_of(z), on_unused_input="ignore", mode="JAX")
    mu, tau_s, tau_c = POINTS[0]
    rng = np.random.default_rng(5)
    point = {"mu": mu, "tau_s_log__": np.log(tau_s), "tau_c_log__": np.log(tau_c)}
    args = [point[v.name] for v in values]
    rows = [fn(*args, rng.standard_normal(out.proposal_size)) for _ in range(3000)]
    tables = [np.stack([r[k] for r in rows]) for k in range(len(rows[0]))]
    draws = out.draw(tables, rng)
    d = system.data
    states = _States("poisson", d["y"].astype(float), d["county"], d["state_of"], 1, 0.005)
    log_g, _ = states.table(tau_c)
    log_p = log_g - 0.5 * ((states.x[:, None] - mu) / tau_s) ** 2
    p = np.exp(log_p - log_p.max(axis=0))
    p /= p.sum(axis=0)
    mean = p.T @ states.x - mu
    sd = np.sqrt(p.T @ states.x**2 - (mean + mu) ** 2)
    b = draws["b"]
    assert np.all(np.abs(b.mean(0) - mean) < 4 * sd / np.sqrt(len(b)) + 0.01)
    assert np.all(np.abs(b.std(0) / sd - 1) < 0.1)
    a = draws["a"]
    assert a.shape == (3000, 30) and np.isfinite(a).all()
    for c in range(6):  # county c lies in state c: its moments over both effects
        mean_c, sd_c = _county_moments(d, c, states.x, p[:, c], tau_c)
        assert abs(a[:, c].mean() - mean_c) < 4 * sd_c / np.sqrt(len(a)) + 0.01
        assert abs(a[:, c].std() / sd_c - 1) < 0.1


def _county_moments(data, c, x, p_x, tau_c):
    """The mean and sd of the Poisson county ``c``'s effect given the hyperparameters, by
    trapezoids: its moments given the state's level ``x`` (on a grid of the effect),
    averaged over ``x``'s conditional weights ``p_x``."""
    keep = p_x > 1e-12
    x, p_x = x[keep], p_x[keep] / p_x[keep].sum()
    y = data["y"][data["county"] == c].astype(float)
    grid = np.linspace(-6 * tau_c, 6 * tau_c, 1201)
    eta = x[:, None] + grid[None, :]
    log_q = -0.5 * (grid / tau_c) ** 2 + y.sum() * eta - len(y) * np.exp(eta)
    q = np.exp(log_q - log_q.max(axis=1, keepdims=True))
    q /= q.sum(axis=1, keepdims=True)
    mean = p_x @ (q @ grid)
    return mean, np.sqrt(p_x @ (q @ grid**2) - mean**2)


@pytest.mark.parametrize(
    "kind, three_level",
    [("poisson", False), pytest.param("bernoulli", True, marks=pytest.mark.heavy)],
)
def test_default_evidence_of_nested_counts(kind, three_level):
    """The default's log Z against the trapezoids' (nested quadrature over the three
    hyperparameters), and the effects drawn back."""
    system = nested_count_hierarchy(J=40, K=8, rows=3, kind=kind, seed=4,
                                    three_level=three_level)  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pme.sample_evidence(system.model, random_seed=1, progressbar=False)
    est = pme.log_evidence(idata)
    assert_log_z(est, system.log_z, abs_tol=0.1, se_max=0.06, label=f"nested {kind}")
    post = idata["posterior"]
    assert post["a"].shape[-1] == 40 and post["b"].shape[-1] == 8
    assert np.isfinite(post["a"].values).all() and np.isfinite(post["b"].values).all()
