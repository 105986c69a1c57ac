"""Nested groupings integrated together (:mod:`pymc_evidence.transforms.group_nested`),
against dense Gaussian algebra computed here with scipy."""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy import stats

import pymc_evidence as pme
from pymc_evidence.testing.crossed import _stats, crossed_intercepts, crossed_log_z
from pymc_evidence.transforms.group_effects import GroupEffectsOut, integrate_group_effects
from pymc_evidence.transforms.group_nested import GroupNestedOut
from tests._accuracy import assert_log_z

#: (mu, sigma, tau_a, tau_b): the data's, and far from them on both sides.
POINTS = [(1.0, 1.0, 0.6, 0.4), (0.3, 0.5, 2.0, 0.1), (-1.0, 2.0, 0.05, 3.0)]


def _nested(J=30, K=6, centered=True):
    return crossed_intercepts(J=J, K=K, rows=3, seed=1, centered=centered, nested=True)


def _covariance(system, sigma, tau_a, tau_b):
    """The data's covariance given the scales: ``sigma² I + tau_a² Za Za' + tau_b² Zb Zb'``."""
    county, year = system.data["county"], system.data["year"]
    za, zb = np.eye(county.max() + 1)[county], np.eye(year.max() + 1)[year]
    eye = np.eye(len(county))
    return sigma**2 * eye + tau_a**2 * za @ za.T + tau_b**2 * zb @ zb.T, za, zb


def _point(mu, sigma, tau_a, tau_b) -> dict:
    """The hyperparameters' values in the model's value space."""
    point = {"mu": mu, "sigma_log__": np.log(sigma)}
    point.update(tau_a_log__=np.log(tau_a), tau_b_log__=np.log(tau_b))
    return point


def _values(names, *hyper):
    return [_point(*hyper)[name] for name in names]


@pytest.mark.parametrize("centered", [True, False], ids=["centred", "non-centred"])
def test_nested_effects_are_integrated_exactly(centered):
    system = _nested(centered=centered)
    out = integrate_group_effects(system.model)
    assert isinstance(out, GroupNestedOut)
    assert out.names == (("a", "b") if centered else ("za", "zb"))
    assert sorted(rv.name for rv in out.model.free_RVs) == ["mu", "sigma", "tau_a", "tau_b"]
    likelihood = out.model.compile_logp(vars=out.model.observed_RVs + out.model.potentials)
    y = system.data["y"]
    for mu, sigma, tau_a, tau_b in POINTS:
        cov = _covariance(system, sigma, tau_a, tau_b)[0]
        exact = stats.multivariate_normal(np.full(len(y), mu), cov).logpdf(y)
        assert likelihood(_point(mu, sigma, tau_a, tau_b)) == pytest.approx(exact, abs=1e-8)


def _three_levels(form: str, J=30, K=6):
    """Counties centred on their state, ``a ~ N(b[state], tau_a)``, and states on ``mu``
    (``form="centred"``), or ``a ~ N(mu + tau_b zb[state], tau_a)`` (``"outer non-centred"``),
    or ``a = b[state] + tau_a za`` (``"inner non-centred"``); the same data covariance as
    :func:`_nested`'s."""
    rng = np.random.default_rng(1)
    county, parent = np.repeat(np.arange(J), 3), rng.integers(0, K, J)
    y = 1.0 + rng.normal(0, 0.4, K)[parent][county] + rng.normal(0, 0.6, J)[county]
    y = y + rng.normal(size=county.size)
    with pm.Model() as model:
        mu, sigma = pm.Normal("mu", 0.0, 5.0), pm.HalfNormal("sigma", 1.0)
        tau_a, tau_b = pm.HalfNormal("tau_a", 1.0), pm.HalfNormal("tau_b", 1.0)
        if form == "centred":
            b = pm.Normal("b", mu, tau_b, shape=K)
            a = pm.Normal("a", b[parent], tau_a, shape=J)
        elif form == "inner non-centred":  # the state read through the county: b[parent][county]
            b = pm.Normal("b", mu, tau_b, shape=K)
            za = pm.Normal("za", 0.0, 1.0, shape=J)
            a = pm.Deterministic("a", b[parent] + tau_a * za)
        else:
            zb = pm.Normal("zb", 0.0, 1.0, shape=K)
            a = pm.Normal("a", mu + tau_b * zb[parent], tau_a, shape=J)
        pm.Normal("y", a[county], sigma, observed=y)
    return model, {"y": y, "county": county, "year": parent[county]}


@pytest.mark.parametrize("form", ["centred", "outer non-centred", "inner non-centred"])
def test_counties_centred_on_their_state_are_integrated_exactly(form):
    """The three-level form users write from the textbooks: the state effect enters the
    rows through the counties' prior mean (and the mean ``mu`` through the states')."""
    model, data = _three_levels(form)
    out = integrate_group_effects(model)
    assert isinstance(out, GroupNestedOut)
    names = {"centred": ("a", "b"), "outer non-centred": ("a", "zb")}
    assert out.names == names.get(form, ("za", "b"))
    assert sorted(rv.name for rv in out.model.free_RVs) == ["mu", "sigma", "tau_a", "tau_b"]
    likelihood = out.model.compile_logp(vars=out.model.observed_RVs + out.model.potentials)
    system = type("S", (), {"data": data})
    for mu, sigma, tau_a, tau_b in POINTS:
        cov = _covariance(system, sigma, tau_a, tau_b)[0]
        exact = stats.multivariate_normal(np.full(len(data["y"]), mu), cov).logpdf(data["y"])
        assert likelihood(_point(mu, sigma, tau_a, tau_b)) == pytest.approx(exact, abs=1e-8)


def _posterior(y, z, mean, cov, sigma):
    """The Gaussian posterior ``(mean, cov)`` of ``x ~ N(mean, cov)`` given ``y ~ N(z x,
    sigma² I)``."""
    precision = np.linalg.inv(cov) + z.T @ z / sigma**2
    post_cov = np.linalg.inv(precision)
    return post_cov @ (np.linalg.solve(cov, mean) + z.T @ y / sigma**2), post_cov


@pytest.mark.parametrize("form", ["additive", "centred"])
def test_nested_draws_follow_the_joint_conditional(form):
    """At fixed hyperparameters, the draws' mean and covariance of ``(a, b)`` against the
    exact Gaussian conditional (dense algebra): ``a[county] + b[state]`` with both centred
    on zero and ``mu`` in the rows, or ``a ~ N(b[state], tau_a)``, ``b ~ N(mu, tau_b)``."""
    J, K = 15, 5
    if form == "additive":
        system = _nested(J=J, K=K)
        model, data = system.model, system.data
    else:
        model, data = _three_levels("centred", J=J, K=K)
    out = integrate_group_effects(model)
    space = pme.base.model_space(out.model)
    mu, sigma, tau_a, tau_b = POINTS[0]
    n = 8000
    x = np.tile(_values(space.names, mu, sigma, tau_a, tau_b), (n, 1))
    tables = space.batched_rows_function("t", lambda: list(out.tables))(x)
    draws = out.draw(tables, np.random.default_rng(0))
    joint = np.hstack([draws["a"], draws["b"]])
    za, zb = np.eye(J)[data["county"]], np.eye(K)[data["year"]]
    parent = out.parent
    p = np.eye(K)[parent]
    if form == "additive":
        cov = np.diag(np.r_[np.full(J, tau_a**2), np.full(K, tau_b**2)])
        mean, loads, y = np.zeros(J + K), np.hstack([za, zb]), data["y"] - mu
    else:
        cov = np.block([[tau_a**2 * np.eye(J) + tau_b**2 * p @ p.T, tau_b**2 * p],
                        [tau_b**2 * p.T, tau_b**2 * np.eye(K)]])  # fmt: skip
        mean, loads, y = np.full(J + K, mu), np.hstack([za, 0 * zb]), data["y"]
    mean, cov = _posterior(y, loads, mean, cov, sigma)
    sd = np.sqrt(np.diag(cov))
    assert np.all(np.abs(joint.mean(0) - mean) < 4 * sd / np.sqrt(n))
    # each variance within 4 of its sampling sd (a variance's sd is sd² √(2 / n))
    assert np.all(np.abs(joint.var(0) / sd**2 - 1) < 4 * np.sqrt(2 / n))
    # the state-county covariance is the coupling: a's draws are not independent of b's
    coupled = np.cov(draws["a"][:, 0], draws["b"][:, parent[0]])[0, 1]
    bound = 4 * sd[0] * sd[J + parent[0]] * np.sqrt(2 / n)
    assert coupled == pytest.approx(cov[0, J + parent[0]], abs=bound)


def test_a_mean_that_mixes_states_is_not_nested():
    """``a ~ N(roll(b[state]), 1)``: each county's mean reads another county's state, so the
    counties are not independent given the hyperparameters; ``a`` alone is integrated."""
    county = np.repeat(np.arange(30), 3)
    state = np.random.default_rng(1).integers(0, 6, 30)
    with pm.Model() as model:
        b = pm.Normal("b", 0.0, pm.HalfNormal("tau_b", 1.0), shape=6)
        a = pm.Normal("a", pt.roll(b[state], 1), 1.0, shape=30)
        pm.Normal("y", a[county], 1.0, observed=np.zeros(90))
    out = integrate_group_effects(model)
    assert isinstance(out, GroupEffectsOut) and out.names == ("a",)


@pytest.mark.parametrize(
    "form",
    [
        "centred",
        pytest.param("non-centred", marks=pytest.mark.heavy),
        pytest.param("three levels", marks=pytest.mark.heavy),
    ],
)
def test_default_evidence_of_nested_intercepts(form):
    """The truth: :func:`crossed_intercepts`' Woodbury algebra over the three scales (the
    three-level form has the same data covariance and ``mu``'s prior)."""
    if form == "three levels":
        model, data = _three_levels("centred")
        s = _stats(data["y"], data["county"], data["year"], 30, 6)
        log_z = crossed_log_z(s)
    else:
        system = _nested(centered=form == "centred")
        model, log_z = system.model, system.log_z
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pme.sample_evidence(model, random_seed=1, progressbar=False)
    est = pme.log_evidence(idata)
    assert_log_z(est, log_z, abs_tol=0.1, se_max=0.05, label=f"nested {form}")
    post = idata["posterior"]
    assert post["a"].shape[-1] == 30 and post["b"].shape[-1] == 6  # drawn back
    assert np.isfinite(post["a"].values).all() and np.isfinite(post["b"].values).all()
