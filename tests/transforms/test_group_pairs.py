"""A random intercept and slope of one grouping integrated together (transforms.group_pairs):
the integrated density against closed forms and brute-force quadrature."""

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import special, stats

from pymc_evidence.testing.slopes import slope_hierarchy
from pymc_evidence.transforms import group_pairs as gp
from pymc_evidence.transforms.group_effects import group_candidates, integrate_group_effects
from pymc_evidence.transforms.group_pair_effects import find_pair


def test_gaussian_pair_is_exact():
    system = slope_hierarchy(J=100, rows=4, seed=3, exact=False)
    out = integrate_group_effects(system.model)
    assert out.names == ("za", "zb") and out.rule.nodes == 1
    y, x, g = system.data["y"], system.data["x"], system.data["group"]
    total = out.model.compile_logp(vars=out.model.observed_RVs + out.model.potentials)
    point = {"mu": 0.2, "beta": -0.1, "sa_log__": np.log(0.6), "sb_log__": np.log(0.4)}
    exact = 0.0
    for j in range(100):
        xs = x[g == j]
        cov = np.eye(4) + 0.36 + 0.16 * np.outer(xs, xs)
        exact += stats.multivariate_normal(0.2 - 0.1 * xs, cov).logpdf(y[g == j])
    assert np.isclose(total(point), exact, rtol=0, atol=1e-8)
    assert np.all(np.isfinite(out.model.compile_dlogp()(point)))


@pytest.mark.heavy
def test_gaussian_pair_gradient_on_jax_matches_finite_differences():
    """The rank-one row Hessians' negative part: PyTensor's gradient of ``maximum`` at their
    zero eigenvalue was wrong on JAX (``∂/∂ log sa`` off by 0.15-2.8 at these points)."""
    from pymc_evidence.runtime import model_space
    from pymc_evidence.runtime.batched_logp import batched_logp

    out = integrate_group_effects(slope_hierarchy(J=150, rows=4, seed=1, exact=False).model)
    space = model_space(out.model)
    assert [v.name for v in out.model.value_vars] == ["sb_log__", "sa_log__", "beta", "mu"]
    scales = [(0.3, 0.3), (0.3, 0.7), (0.6, 1.0), (0.6, 2.0)]
    points = np.array([[np.log(s_b), np.log(s_a), 0.1, 0.2] for s_b, s_a in scales])
    for backend in ("jax", "default"):
        density = batched_logp(space, backend=backend)
        grad = density(points)[1]
        h = 1e-5 * np.eye(4)
        fd = np.stack([(density(points + e)[0] - density(points - e)[0]) / 2e-5 for e in h], axis=1)
        np.testing.assert_allclose(grad, fd, rtol=0, atol=2e-3, err_msg=backend)


@pytest.mark.heavy
def test_poisson_pair_converges_to_brute_force():
    rng = np.random.default_rng(0)
    J, r, sa, sb = 100, 4, 0.5, 0.3
    g, x = np.repeat(np.arange(J), r), rng.normal(size=J * r)
    y = rng.poisson(np.exp(0.3 + 0.5 * rng.normal(size=J)[g] + 0.2 * x))
    with pm.Model() as model:
        mu, beta = pm.Normal("mu", 0, 1), pm.Normal("beta", 0, 1)
        za, zb = pm.Normal("za", 0, 1, shape=J), pm.Normal("zb", 0, 1, shape=J)
        pm.Poisson("y", pt.exp(mu + sa * za[g] + (beta + sb * zb[g]) * x), observed=y)
    _, _, terms = find_pair(model, group_candidates(model))
    assert not terms.gaussian
    values = [model.rvs_to_values[v] for v in model.free_RVs]
    outs = [gp.pair_log_marginal(terms, gp.GroupRule(30, k)) for k in (1, 7)]
    fn = pytensor.function(values, outs, on_unused_input="ignore", mode="JAX")
    laplace, seven = fn(0.3, 0.2, np.zeros(J), np.zeros(J))
    t = np.linspace(-7, 7, 401)
    a, b = np.meshgrid(t, t, indexing="ij")
    brute = np.empty(J)
    for j in range(J):
        eta = 0.3 + sa * a[..., None] + (0.2 + sb * b[..., None]) * x[g == j]
        ll = np.sum(y[g == j] * eta - np.exp(eta) - special.gammaln(y[g == j] + 1), axis=-1)
        prior = stats.norm.logpdf(a) + stats.norm.logpdf(b)
        brute[j] = special.logsumexp(ll + prior) + 2 * np.log(t[1] - t[0])
    assert np.max(np.abs(seven - brute)) < 1e-4
    assert np.max(np.abs(laplace - brute)) > 10 * np.max(np.abs(seven - brute))
