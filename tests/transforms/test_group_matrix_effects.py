"""A ``(J, 2)`` group effect with a full covariance (``LKJCholeskyCov``) integrated out
(transforms.group_matrix_effects).

Truths here use numpy/scipy alone: the Gaussian likelihood given the covariance as one dense
multivariate normal per group, a Poisson group's integral by a brute-force grid over the
two standard-normal coordinates, the conditional draws' moments by the Gaussian
conditioning formula.
"""

import warnings

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy import integrate, special, stats

import pymc_evidence as pme
from pymc_evidence.testing.lkj_slopes import _log_f, lkj_slope_hierarchy, slope_log_lik
from pymc_evidence.transforms.group_effects import integrate_group_effects
from tests._accuracy import assert_log_z

#: Packed Cholesky values (log L00, L10, log L11) and the covariance they give.
PACKED = np.array([np.log(0.6), 0.3, np.log(0.4)])
CHOL = np.array([[0.6, 0.0], [0.3, 0.4]])


def _dense_log_lik(y, x, group, cov, mu, beta):
    """``log p(y | Σ, mu, beta)`` as one multivariate normal per group."""
    total = 0.0
    for j in np.unique(group):
        xs = x[group == j]
        design = np.stack([np.ones_like(xs), xs], axis=1)
        dense = np.eye(len(xs)) + design @ cov @ design.T
        total += stats.multivariate_normal(mu + beta * xs, dense).logpdf(y[group == j])
    return total


def test_slope_log_lik_against_one_dense_covariance():
    """The benchmark truth's Woodbury algebra, ``mu`` and ``beta`` integrated, against the
    whole data set's covariance written out."""
    rng = np.random.default_rng(5)
    J, r = 4, 3
    x, y = rng.standard_normal((J, r)), rng.standard_normal((J, r))
    cov = CHOL @ CHOL.T
    fixed = np.stack([np.ones(J * r), x.ravel()], axis=1)
    blocks = np.zeros((J * r, J * r))
    for j in range(J):
        design = np.stack([np.ones(r), x[j]], axis=1)
        blocks[j * r : (j + 1) * r, j * r : (j + 1) * r] = design @ cov @ design.T
    dense = np.eye(J * r) + fixed @ fixed.T + blocks
    exact = stats.multivariate_normal(np.zeros(J * r), dense).logpdf(y.ravel())
    assert np.isclose(slope_log_lik(y, x, cov), exact, rtol=0, atol=1e-10)


def test_outer_prior_is_a_normalized_density():
    """The truth's prior over ``(log s_a, log s_b, atanh ρ)`` (no data: zero rows) integrates
    to one, so its LKJ constant and Jacobians are right."""
    log_f = _log_f(np.zeros((1, 0)), np.zeros((1, 0)), eta=2.0)
    scale = integrate.quad(lambda t: np.exp(log_f(np.array([t, 0.0, 0.0]))), -40, 5)[0]
    rho = integrate.quad(lambda t: np.exp(log_f(np.array([0.0, 0.0, t]))), -15, 15)[0]
    at_zero = np.exp(log_f(np.zeros(3)))
    assert np.isclose(scale * scale * rho / at_zero**2, 1.0, rtol=1e-7)


@pytest.mark.parametrize("centered", [False, True])
def test_matrix_effect_is_integrated_exactly(centered):
    system = lkj_slope_hierarchy(J=100, rows=4, seed=3, centered=centered, exact=False)
    out = integrate_group_effects(system.model)
    assert out.names == ("e" if centered else "z",) and out.rule.nodes == 1
    model = out.model
    assert "chol_cholesky-cov-packed__" in {v.name for v in model.value_vars}
    total = model.compile_logp(vars=model.observed_RVs + model.potentials)
    point = {"mu": 0.2, "beta": -0.1, "chol_cholesky-cov-packed__": PACKED}
    data = system.data
    exact = _dense_log_lik(data["y"], data["x"], data["group"], CHOL @ CHOL.T, 0.2, -0.1)
    assert np.isclose(total(point), exact, rtol=0, atol=1e-8)
    assert np.all(np.isfinite(model.compile_dlogp()(point)))


def test_poisson_matrix_effect_converges_to_brute_force():
    """A correlated non-centred effect ``z @ Lᵀ`` of constant ``L`` in Poisson rows: the
    integrated rows' total against each group's integral on a fine grid."""
    rng = np.random.default_rng(0)
    J, r = 100, 4
    g, x = np.repeat(np.arange(J), r), rng.normal(size=J * r)
    y = rng.poisson(np.exp(0.3 + 0.5 * rng.normal(size=J)[g] + 0.2 * x))
    with pm.Model() as model:
        mu, beta = pm.Normal("mu", 0, 1), pm.Normal("beta", 0, 1)
        z = pm.Normal("z", 0, 1, shape=(J, 2))
        eff = z @ CHOL.T
        pm.Poisson("y", pt.exp(mu + eff[g, 0] + (beta + eff[g, 1]) * x), observed=y)
    out = integrate_group_effects(model)
    assert out is not None and out.names == ("z",)
    total = out.model.compile_logp(vars=out.model.observed_RVs + out.model.potentials,
                                   mode="JAX")  # fmt: skip
    t = np.linspace(-7, 7, 401)
    a, b = np.meshgrid(t, t, indexing="ij")
    e0, e1 = CHOL[0, 0] * a, CHOL[1, 0] * a + CHOL[1, 1] * b
    brute = 0.0
    for j in range(J):
        eta = 0.3 + e0[..., None] + (0.2 + e1[..., None]) * x[g == j]
        ll = np.sum(y[g == j] * eta - np.exp(eta) - special.gammaln(y[g == j] + 1), axis=-1)
        prior = stats.norm.logpdf(a) + stats.norm.logpdf(b)
        brute += special.logsumexp(ll + prior) + 2 * np.log(t[1] - t[0])
    assert abs(total({"mu": 0.3, "beta": 0.2}) - brute) < 1e-3


def test_conditional_draws_follow_each_groups_gaussian_posterior():
    """At fixed hyperparameters the centred effect's draws have each group's conditional
    mean and covariance, ``K Xᵀ (y - X b)`` and ``K = (Σ⁻¹ + XᵀX)⁻¹``."""
    system = lkj_slope_hierarchy(J=100, rows=4, seed=3, centered=True, exact=False)
    out = integrate_group_effects(system.model)
    space = pme.base.model_space(out.model)
    point = {"mu": 0.2, "beta": -0.1, "chol_cholesky-cov-packed__": PACKED}
    row = np.concatenate([np.ravel(point[name]) for name in space.names])
    x = np.tile(row, (4000, 1))
    tables = space.batched_rows_function("t", lambda: list(out.tables))(x)
    draws = out.draw(tables, np.random.default_rng(0))["e"]
    assert draws.shape == (4000, 100, 2)
    y, xs, group = system.data["y"], system.data["x"], system.data["group"]
    precision = np.linalg.inv(CHOL @ CHOL.T)
    for j in (0, 1, 2):
        design = np.stack([np.ones(4), xs[group == j]], axis=1)
        k = np.linalg.inv(precision + design.T @ design)
        mean = k @ design.T @ (y[group == j] - design @ [0.2, -0.1])
        sample = draws[:, j]
        se = np.sqrt(np.diag(k) / len(sample))
        assert np.all(np.abs(sample.mean(0) - mean) < 4 * se), (j, sample.mean(0), mean)
        np.testing.assert_allclose(np.cov(sample.T), k, rtol=0, atol=0.1 * np.max(np.diag(k)))


@pytest.mark.parametrize(
    "centered",
    [pytest.param(False, marks=pytest.mark.heavy), pytest.param(True, marks=pytest.mark.slow)],
)
def test_default_evidence_of_an_lkj_slope_hierarchy(centered):
    system = lkj_slope_hierarchy(J=120, rows=4, seed=2, centered=centered)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pme.sample_evidence(system.model, random_seed=1, progressbar=False)
    assert_log_z(pme.log_evidence(idata), system.log_z, abs_tol=0.15, se_max=0.1, label="lkj")
    post = idata["posterior"]
    assert post["e"].dims[-2:] == ("group", "effect")
    assert np.isfinite(post["e"].values).all() and np.isfinite(post["chol_corr"].values).all()
