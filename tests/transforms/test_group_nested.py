"""Nested groupings integrated together (:mod:`pymc_evidence.transforms.group_nested`),
against dense Gaussian algebra computed here with scipy."""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytest
from scipy import stats

import pymc_evidence as pme
from pymc_evidence.testing.crossed import crossed_intercepts
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


def _values(names, mu, sigma, tau_a, tau_b):
    point = {"mu": mu, "sigma_log__": np.log(sigma)}
    point.update(tau_a_log__=np.log(tau_a), tau_b_log__=np.log(tau_b))
    return [point[name] for name in names]


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
        point = {"mu": mu, "sigma_log__": np.log(sigma)}
        point.update(tau_a_log__=np.log(tau_a), tau_b_log__=np.log(tau_b))
        assert likelihood(point) == pytest.approx(exact, abs=1e-8)


def test_nested_draws_follow_the_joint_conditional():
    """At fixed hyperparameters, the draws' mean and covariance of ``(a, b)`` against the
    exact Gaussian conditional (dense precision ``Z'Z / sigma² + D^-1``)."""
    system = _nested(J=15, K=5)
    out = integrate_group_effects(system.model)
    space = pme.base.model_space(out.model)
    mu, sigma, tau_a, tau_b = POINTS[0]
    n = 8000
    x = np.tile(_values(space.names, mu, sigma, tau_a, tau_b), (n, 1))
    tables = space.batched_rows_function("t", lambda: list(out.tables))(x)
    draws = out.draw(tables, np.random.default_rng(0))
    joint = np.hstack([draws["a"], draws["b"]])
    _, za, zb = _covariance(system, sigma, tau_a, tau_b)
    z = np.hstack([za, zb])
    prior = np.r_[np.full(za.shape[1], tau_a**-2), np.full(zb.shape[1], tau_b**-2)]
    cov = np.linalg.inv(z.T @ z / sigma**2 + np.diag(prior))
    mean = cov @ z.T @ (system.data["y"] - mu) / sigma**2
    sd = np.sqrt(np.diag(cov))
    assert np.all(np.abs(joint.mean(0) - mean) < 4 * sd / np.sqrt(n))
    # each variance within 4 of its sampling sd (a variance's sd is sd² √(2 / n))
    assert np.all(np.abs(joint.var(0) / sd**2 - 1) < 4 * np.sqrt(2 / n))
    # the state-county covariance is the coupling: a's draws are not independent of b's
    outer = out.parent[0]
    coupled = np.cov(draws["a"][:, 0], draws["b"][:, outer])[0, 1]
    assert coupled == pytest.approx(
        cov[0, za.shape[1] + outer], abs=4 * sd[0] * sd[15 + outer] * np.sqrt(2 / n)
    )


def test_poisson_nested_effects_keep_one_grouping():
    """A likelihood that is not Gaussian in the effects: the inner grouping alone."""
    county = np.repeat(np.arange(20), 3)
    state = np.repeat(np.arange(5), 4)[county]
    with pm.Model() as model:
        a = pm.Normal("a", 0.0, 0.5, shape=20)
        b = pm.Normal("b", 0.0, 0.5, shape=5)
        pm.Poisson("y", pm.math.exp(a[county] + b[state]), observed=np.ones(60, dtype=int))
    out = integrate_group_effects(model)
    assert isinstance(out, GroupEffectsOut) and out.names == ("a",)


@pytest.mark.parametrize("centered", [True, False], ids=["centred", "non-centred"])
def test_default_evidence_of_nested_intercepts(centered):
    system = _nested(centered=centered)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pme.sample_evidence(system.model, random_seed=1, progressbar=False)
    est = pme.log_evidence(idata)
    assert_log_z(est, system.log_z, abs_tol=0.1, se_max=0.05, label=f"nested {centered}")
    post = idata["posterior"]
    assert post["a"].shape[-1] == 30 and post["b"].shape[-1] == 6
    assert np.isfinite(post["a"].values).all() and np.isfinite(post["b"].values).all()
