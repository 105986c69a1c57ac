"""A hierarchy's group effects integrated out by quadrature (transforms.group_effects).

Truths are computed here with numpy/scipy alone: each group's integral by
:func:`scipy.integrate.quad` or by :func:`pymc_evidence.testing.glmm.group_log_integrals`
(the trapezoidal rule on the prior's scale, no mode, no Gauss-Hermite rule), the Gaussian
hierarchy's marginal in closed form.
"""

import warnings

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy import integrate, special, stats

import pymc_evidence as pme
from pymc_evidence.methods.smc import default_n_particles
from pymc_evidence.testing.crossed import crossed_intercepts
from pymc_evidence.testing.glmm import count_hierarchy, group_log_integrals
from pymc_evidence.testing.glmm_crossed import crossed_count_hierarchy
from pymc_evidence.testing.hierarchical import hierarchical_normal
from pymc_evidence.transforms.group_effects import MIN_GROUPS, integrate_group_effects
from tests._accuracy import assert_log_z

#: (mu, tau, tolerance): the posterior's (the node count is chosen around it, its total
#: within NODE_TOLERANCE of the next count's: a fifth of that here; Laplace's method is
#: 0.15-0.45 nats off), narrow, and wide: five times the posterior's scale, far beyond the
#: points where the rule was chosen. There the 5-11 node rules are 0.005-0.07 nats off
#: over 120 groups, where each group's conditional is skewed; the evidence integrates the
#: posterior's region only
POINTS = [(0.3, 0.5, 1e-3), (-1.0, 0.05, 2e-4), (1.5, 2.5, 0.1)]


def _hyper_terms(mu, tau):
    """The hyperparameters' prior terms of :func:`count_hierarchy` in its value space."""
    return stats.norm.logpdf(mu) + stats.halfnorm.logpdf(tau) + np.log(tau)


def test_gaussian_hierarchy_is_integrated_in_closed_form():
    system = hierarchical_normal(J=150, seed=3, centered=True)
    out = integrate_group_effects(system.model)
    assert out.names == ("theta",) and [rv.name for rv in out.model.free_RVs] == ["tau", "mu"]
    assert out.rule.nodes == 1 and out.rule.steps == 1  # Laplace is exact for a Gaussian
    logp = out.model.compile_logp()
    y, sigma = system.data["y"], system.data["sigma"]
    for mu, tau in [(5.0, 4.0), (3.0, 0.5), (-2.0, 12.0)]:
        exact = stats.norm.logpdf(mu, 0, 5) + stats.halfnorm.logpdf(tau, scale=5) + np.log(tau)
        exact += stats.norm.logpdf(y, mu, np.sqrt(sigma**2 + tau**2)).sum()
        assert logp({"mu": mu, "tau_log__": np.log(tau)}) == pytest.approx(exact, abs=1e-8)


@pytest.mark.parametrize("centered", [True, False], ids=["centred", "non-centred"])
@pytest.mark.parametrize(
    "kind, n_rows",
    [("poisson", 3), ("bernoulli", 3), ("binomial", 3), ("poisson", 1), ("bernoulli", 1)],
)
def test_glmm_likelihoods_are_integrated(kind, n_rows, centered):
    """One row a group too (PyMC writes ``b[arange(J)]`` as the slice ``b[:J]``)."""
    system = count_hierarchy(J=120, rows=n_rows, kind=kind, centered=centered, seed=1, exact=False)
    out = integrate_group_effects(system.model)
    assert out.names == ("b" if centered else "z",)
    assert {rv.name for rv in out.model.free_RVs} == {"mu", "tau"}
    logp = out.model.compile_logp()
    y, group, trials = system.data["y"], system.data["group"], system.data["trials"]
    totals, rows = np.bincount(group, weights=y), np.bincount(group).astype(float)
    constant = stats.poisson.logpmf(y, 1.0).sum() + len(y) if kind == "poisson" else 0.0
    if kind == "binomial":
        constant = np.sum(special.gammaln(trials + 1) - special.gammaln(y + 1)
                          - special.gammaln(trials - y + 1))  # fmt: skip
    for mu, tau, tol in POINTS:
        inner = group_log_integrals(kind, mu, tau, totals, rows, trials).sum()
        exact = _hyper_terms(mu, tau) + inner + constant
        assert logp({"mu": mu, "tau_log__": np.log(tau)}) == pytest.approx(exact, abs=tol)


def _quad_group(log_lik, mu, tau):
    """``log ∫ N(b; mu, tau) exp(log_lik(b)) db`` by adaptive quadrature."""
    grid = np.linspace(mu - 12 * tau, mu + 12 * tau, 4001)
    shift = np.max(stats.norm.logpdf(grid, mu, tau) + log_lik(grid))

    def f(b):
        return np.exp(stats.norm.logpdf(b, mu, tau) + log_lik(b) - shift)

    return shift + np.log(integrate.quad(f, mu - 12 * tau, mu + 12 * tau, limit=200)[0])


@pytest.mark.heavy
def test_unequal_shuffled_groups_with_a_covariate_and_a_crossed_grouping():
    """Rows in random order, groups of 1-5 rows (one empty), a slope, and a second grouping
    of 4 levels: the 110-level effect is integrated, the 4-level one stays in the model."""
    rng = np.random.default_rng(5)
    n_groups, n_years = 110, 4
    group = rng.integers(0, n_groups - 1, size=330)  # the last group has no rows
    year = rng.integers(0, n_years, size=330)
    x = rng.normal(size=330)
    y = rng.poisson(np.exp(0.2 + 0.4 * x + rng.normal(0, 0.5, n_groups)[group]))
    with pm.Model() as model:
        beta = pm.Normal("beta", 0.0, 1.0)
        tau = pm.HalfNormal("tau", 1.0)
        b = pm.Normal("b", 0.0, tau, shape=n_groups)
        c = pm.Normal("c", 0.0, 0.3, shape=n_years)
        pm.Poisson("y", pt.exp(beta * x + b[group] + c[year]), observed=y)
    out = integrate_group_effects(model)
    assert out.names == ("b",) and {rv.name for rv in out.model.free_RVs} == {"beta", "tau", "c"}
    logp = out.model.compile_logp()
    beta_v, tau_v, c_v = 0.35, 0.6, np.array([0.1, -0.2, 0.0, 0.3])
    eta = beta_v * x + c_v[year]
    exact = stats.norm.logpdf(beta_v) + stats.halfnorm.logpdf(tau_v) + np.log(tau_v)
    exact += stats.norm.logpdf(c_v, 0.0, 0.3).sum()
    for j in range(n_groups):
        mine = group == j
        exact += _quad_group(
            lambda v, m=mine: np.sum(stats.poisson.logpmf(y[m, None], np.exp(eta[m, None] + v)),
                                     axis=0) if np.ndim(v) else
            np.sum(stats.poisson.logpmf(y[m], np.exp(eta[m] + v))),
            0.0, tau_v,
        )  # fmt: skip
    point = {"beta": beta_v, "tau_log__": np.log(tau_v), "c": c_v}
    assert logp(point) == pytest.approx(exact, abs=2e-3)


@pytest.mark.parametrize("kind", ["few", "summed", "two_likelihoods", "potential", "scale"])
def test_not_integrated(kind):
    n = MIN_GROUPS - 1 if kind == "few" else 2 * MIN_GROUPS  # even: "scale" reshapes
    y = np.zeros(n)
    with pm.Model() as model:
        s = pm.HalfNormal("s", 1.0)
        b = pm.Normal("b", 0.0, s, shape=n)
        if kind == "summed":  # every row sees every effect
            pm.Normal("y", b + b.sum(), 1.0, observed=y)
        elif kind == "two_likelihoods":
            pm.Normal("y", b, 1.0, observed=y)
            pm.Normal("y2", b.sum(), 1.0, observed=0.0)
        elif kind == "potential":
            pm.Normal("y", b, 1.0, observed=y)
            pm.Potential("pen", -(b**2).sum())
        elif kind == "scale":  # through a reshape: rows do not stay apart
            pm.Normal("y", b.reshape((2, n // 2)).sum(0).repeat(2), 1.0, observed=y)
        else:
            pm.Normal("y", b, 1.0, observed=y)
    assert integrate_group_effects(model) is None


def test_conditional_draws_follow_each_groups_posterior():
    """At fixed hyperparameters, the draws of three Poisson groups' effects against their
    exact conditional CDF (by quadrature) at its 10 %, 50 % and 90 % points."""
    system = count_hierarchy(J=MIN_GROUPS, rows=2, kind="poisson", seed=2, exact=False)
    out = integrate_group_effects(system.model)
    space = pme.base.model_space(out.model)
    mu, tau = 0.3, 0.5
    x = np.tile([[np.log(tau), mu] if space.names[0] == "tau_log__" else [mu, np.log(tau)]],
                (4000, 1))  # fmt: skip
    tables = space.batched_rows_function("t", lambda: list(out.tables))(x)
    draws = out.draw(tables, np.random.default_rng(0))["b"]
    y, group = system.data["y"], system.data["group"]
    for j in (0, 1, 2):
        counts = y[group == j]
        grid = np.linspace(mu - 8 * tau, mu + 8 * tau, 20001)
        log_h = stats.norm.logpdf(grid, mu, tau) + np.sum(
            counts[:, None] * grid - np.exp(grid), axis=0
        )
        cdf = np.cumsum(np.exp(log_h - log_h.max()))
        cdf /= cdf[-1]
        for q in (0.1, 0.5, 0.9):
            exact = grid[np.searchsorted(cdf, q)]
            frac = np.mean(draws[:, j] <= exact)
            assert abs(frac - q) < 4 * np.sqrt(q * (1 - q) / len(draws)) + 0.01, (j, q, frac)


@pytest.mark.parametrize(
    "kind",
    ["poisson", pytest.param("bernoulli", marks=pytest.mark.slow)],  # 136 s
)
def test_default_evidence_of_a_glmm(kind):
    system = count_hierarchy(J=150, rows=3, kind=kind, seed=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pme.sample_evidence(system.model, random_seed=1, progressbar=False)
    assert_log_z(pme.log_evidence(idata), system.log_z, abs_tol=0.1, se_max=0.1, label=kind)
    post = idata["posterior"]
    draws = (4, default_n_particles(hyperparameters=True), 150)  # runs, particles, groups
    assert post["b"].shape == draws and post["b"].dims[-1] == "group"
    # the group effects' posterior mean against the groups' data: shrunk toward mu
    assert np.isfinite(post["b"].values).all()


@pytest.mark.parametrize("centered", [pytest.param(True, marks=pytest.mark.heavy), False])
def test_default_evidence_of_crossed_intercepts(centered):
    """``(1|county) + (1|year)`` with a scale each: the counties are integrated, the years
    stay, and written centred they are made non-centred (their value variable, read by the
    integral's potential, follows: before, the call failed with ``MissingInputError``)."""
    system = crossed_intercepts(J=30, K=6, rows=3, seed=1, centered=centered)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pme.sample_evidence(system.model, random_seed=1, progressbar=False)
    est = pme.log_evidence(idata)
    assert_log_z(est, system.log_z, abs_tol=0.15, se_max=0.1, label=f"crossed {centered}")
    assert idata["posterior"]["b"].shape[-1] == 6 and idata["posterior"]["a"].shape[-1] == 30


def test_default_evidence_of_a_centred_gaussian_hierarchy():
    system = hierarchical_normal(J=1000, seed=3, centered=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pme.sample_evidence(system.model, random_seed=3, progressbar=False)
    est = pme.log_evidence(idata)
    assert_log_z(est, system.log_z, abs_tol=0.05, se_max=0.05, label="1000 groups")


def test_rule_points_are_centred_on_the_mode_with_its_scales():
    """Around the mode of the given density, four of its scales away along each value
    (within MIN_SPREAD and MAX_SPREAD), alternating signs too; the initial point and SPREAD
    without one."""
    from pymc_evidence.transforms.group_rule import MAX_SPREAD, MIN_SPREAD, SPREAD, rule_points

    with pm.Model() as model:
        pm.Normal("a", 0.0, 1.0)
        pm.Normal("b", 0.0, 1.0, shape=2)
    inputs = model.value_vars
    mode, sd = np.array([1.0, -2.0, 0.5]), np.array([0.1, 5.0, 0.01])

    def log_density(args):
        x = np.concatenate([np.atleast_1d(a) for a in args])
        return float(stats.norm.logpdf(x, mode, sd).sum())

    points = [
        np.concatenate([np.atleast_1d(a) for a in p])
        for p in rule_points(model, inputs, log_density)
    ]
    spread = np.array([0.4, MAX_SPREAD, MIN_SPREAD])
    expected = [
        mode,
        mode + spread,
        mode - spread,
        mode + spread * [1, -1, 1],
        mode - spread * [1, -1, 1],
    ]
    np.testing.assert_allclose(points, expected, atol=2e-3)
    plain = [np.concatenate([np.atleast_1d(a) for a in p]) for p in rule_points(model, inputs)]
    np.testing.assert_allclose(plain[1], np.full(3, SPREAD))


@pytest.mark.heavy
def test_default_evidence_of_crossed_counts():
    """Poisson ``(1|county) + (1|year)``: the counties integrated out, the years' effects
    annealed with the hyperparameters; against a trapezoid per county and importance
    sampling over the rest (:mod:`pymc_evidence.testing.glmm_crossed`)."""
    system = crossed_count_hierarchy(J=20, T=4, kind="poisson", seed=2)
    idata = pme.sample_evidence(model=system.model, random_seed=1, progressbar=False)
    assert idata["log_evidence"].attrs["integrated"] == "a"
    assert_log_z(pme.log_evidence(idata), system.log_z, abs_tol=0.15, se_max=0.15)
