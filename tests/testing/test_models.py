"""Tests for the analytic test systems and the shipped radon data.

The exact ``log_z`` of every system is checked against an independent computation (numerical
quadrature of prior x likelihood written with :mod:`scipy.stats`, or a different closed form),
and the PyMC models' own log densities are checked against the same scipy expressions at
random points, Jacobians of PyMC's transforms included.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import integrate, special, stats

from pymc_evidence.datasets import load_radon, radon_models
from pymc_evidence.testing import (
    ALL_MODELS,
    AnalyticModel,
    beta_bernoulli,
    conjugate_regression,
    hierarchical_normal,
    mixture_likelihood,
    normalized_density,
    registry,
)
from pymc_evidence.testing.hierarchical import hierarchical_quantiles

# ------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------


def _log_quad_1d(log_f, lo, hi, n_grid=801):
    """``log of the integral of exp(log_f)`` over ``[lo, hi]``, shifted by the grid maximum.

    The interval is split at every local maximum found on a grid so that narrow or separated
    peaks are not missed by the adaptive rule.
    """
    grid = np.linspace(lo, hi, n_grid)
    vals = np.array([log_f(t) for t in grid])
    shift = float(np.max(vals))
    inner = vals[1:-1]
    peaks = grid[1:-1][(inner >= vals[:-2]) & (inner >= vals[2:])]
    breaks = np.unique(np.concatenate([[lo], peaks, [hi]]))
    total = 0.0
    for a, b in zip(breaks[:-1], breaks[1:], strict=True):
        total += integrate.quad(
            lambda t: math.exp(log_f(t) - shift), a, b, epsabs=1e-13, epsrel=1e-11, limit=400
        )[0]
    return shift + math.log(total)


def _log_dblquad(log_f, x_lim, y_lim, n_grid=201):
    """``log`` of the 2-D integral of ``exp(log_f(x, y))`` over a box, shifted by a grid max."""
    xs = np.linspace(*x_lim, n_grid)
    ys = np.linspace(*y_lim, n_grid)
    shift = max(log_f(x, y) for x in xs for y in ys)
    total, _ = integrate.dblquad(
        lambda y, x: math.exp(log_f(x, y) - shift),
        x_lim[0],
        x_lim[1],
        y_lim[0],
        y_lim[1],
        epsabs=1e-12,
        epsrel=1e-10,
    )
    return shift + math.log(total)


def _random_points(model, rng, n=4, scale=1.0):
    """Random points in PyMC's unconstrained space, jittered around the initial point."""
    ip = model.initial_point()
    return [{k: v + scale * rng.normal(size=np.shape(v)) for k, v in ip.items()} for _ in range(n)]


def _by_name(systems, name):
    return next(s for s in systems if s.name == name)


def _is_flat(rv):
    return "flat" in type(rv.owner.op).__name__.lower()


# ------------------------------------------------------------------------------------------
# scipy reference log densities, in PyMC's unconstrained parametrisation
# ------------------------------------------------------------------------------------------


def _ref_conjugate(system, pt):
    d = system.data
    w = pt["w"]
    return (
        stats.norm.logpdf(w, 0.0, d["prior_sigma"]).sum()
        + stats.norm.logpdf(d["y"], d["X"] @ w, d["sigma"]).sum()
    )


def _ref_beta_bernoulli(system, pt):
    d = system.data
    u = float(pt["p_logodds__"])
    p = special.expit(u)
    log_jac = -math.log1p(math.exp(-u)) - math.log1p(math.exp(u))  # log p + log(1 - p)
    return stats.beta.logpdf(p, d["a"], d["b"]) + log_jac + stats.bernoulli.logpmf(d["y"], p).sum()


def _ref_hierarchical(system, pt):
    d = system.data
    mu = float(pt["mu"])
    v = float(pt["tau_log__"])
    tau = math.exp(v)
    out = stats.norm.logpdf(mu, 0.0, d["mu_sigma"])
    out += stats.halfnorm.logpdf(tau, scale=d["tau_sigma"]) + v  # log-transform Jacobian
    if "theta" in pt:
        theta = pt["theta"]
        out += stats.norm.logpdf(theta, mu, tau).sum()
    else:
        eta = pt["eta"]
        theta = mu + tau * eta
        out += stats.norm.logpdf(eta).sum()
    return out + stats.norm.logpdf(d["y"], theta, d["sigma"]).sum()


def _ref_mixture(system, pt):
    d = system.data
    x = pt["x"]
    s = d["noise_sigma"]
    cov = s**2 * np.eye(x.size)
    lik = special.logsumexp(
        [
            math.log(d["weight"]) + stats.multivariate_normal.logpdf(d["y"], x + d["offset"], cov),
            math.log(1 - d["weight"])
            + stats.multivariate_normal.logpdf(d["y"], x - d["offset"], cov),
        ]
    )
    return stats.norm.logpdf(x, 0.0, d["prior_sigma"]).sum() + lik


def _ref_normalized(system, pt):
    d = system.data
    x = pt["x"]
    return (
        stats.norm.logpdf(x).sum()
        + stats.norm.logpdf(d["y"], x, d["noise_sigma"]).sum()
        + stats.norm.logpdf(d["z_value"], 0.0, d["z_sigma"])
    )


_REFERENCES = {
    "conjugate_regression": (_ref_conjugate, {"w"}),
    "beta_bernoulli": (_ref_beta_bernoulli, {"p_logodds__"}),
    "hierarchical_normal": (_ref_hierarchical, {"mu", "tau_log__", "theta"}),
    "hierarchical_normal_noncentered": (_ref_hierarchical, {"mu", "tau_log__", "eta"}),
    "mixture_likelihood": (_ref_mixture, {"x"}),
    "normalized_density": (_ref_normalized, {"x"}),
}


@pytest.fixture(scope="module")
def systems():
    return registry()


# ------------------------------------------------------------------------------------------
# registry and generic properties
# ------------------------------------------------------------------------------------------


def test_registry_contents(systems):
    names = [s.name for s in systems]
    assert names == list(ALL_MODELS)
    assert len(set(names)) == len(names)
    for s in systems:
        assert isinstance(s, AnalyticModel)
        assert np.isfinite(s.log_z) and isinstance(s.log_z, float)
        assert s.description
        assert s.model.free_RVs and s.model.observed_RVs
        assert not s.model.potentials
        assert not any(_is_flat(rv) for rv in s.model.free_RVs)
        with pytest.raises(dataclasses.FrozenInstanceError):
            s.log_z = 0.0  # type: ignore[misc]


def test_model_logp_matches_scipy(systems):
    """PyMC's logp (with Jacobians) equals scipy's prior + likelihood at random points."""
    rng = np.random.default_rng(1)
    for s in systems:
        ref, names = _REFERENCES[s.name]
        assert set(s.model.initial_point()) == names, s.name
        logp = s.model.compile_logp(jacobian=True)
        for pt in [s.model.initial_point(), *_random_points(s.model, rng)]:
            np.testing.assert_allclose(logp(pt), ref(s, pt), rtol=1e-10, atol=1e-10, err_msg=s.name)


def test_deterministic_in_seed():
    a, b = beta_bernoulli(seed=3), beta_bernoulli(seed=3)
    assert a.log_z == b.log_z
    np.testing.assert_array_equal(a.data["y"], b.data["y"])
    assert conjugate_regression(d=2, seed=0).log_z != conjugate_regression(d=2, seed=1).log_z


def test_invalid_arguments():
    with pytest.raises(ValueError):
        beta_bernoulli(n=5, heads=6)
    with pytest.raises(ValueError):
        mixture_likelihood(weight=1.5)
    with pytest.raises(ValueError):
        normalized_density(log_z=np.inf)


# ------------------------------------------------------------------------------------------
# exact log Z against independent computations
# ------------------------------------------------------------------------------------------


def test_conjugate_regression_quad_d1():
    s = conjugate_regression(d=1, n=7, seed=2, sigma=0.7, prior_sigma=1.3)
    d = s.data
    X, y = d["X"][:, 0], d["y"]

    def log_f(w):
        return stats.norm.logpdf(w, 0, 1.3) + stats.norm.logpdf(y, X * w, 0.7).sum()

    assert s.log_z == pytest.approx(_log_quad_1d(log_f, -15.0, 15.0), abs=1e-8)

    # the compiled PyMC density integrates to the same value
    logp = s.model.compile_logp()
    log_z_pymc = _log_quad_1d(lambda w: float(logp({"w": np.array([w])})), -15.0, 15.0)
    assert s.log_z == pytest.approx(log_z_pymc, abs=1e-8)


def test_conjugate_regression_chib_identity(systems):
    """log Z = log p(y|w) + log p(w) - log p(w|y) at any w, with the Gaussian posterior."""
    s = _by_name(systems, "conjugate_regression")
    d = s.data
    X, y, sig, tau = d["X"], d["y"], d["sigma"], d["prior_sigma"]
    prec = X.T @ X / sig**2 + np.eye(X.shape[1]) / tau**2
    cov = np.linalg.inv(prec)
    mean = cov @ X.T @ y / sig**2
    rng = np.random.default_rng(5)
    for w in [mean, mean + rng.normal(size=mean.size), np.zeros_like(mean)]:
        log_joint = _ref_conjugate(s, {"w": w})
        log_post = stats.multivariate_normal.logpdf(w, mean, cov)
        assert s.log_z == pytest.approx(log_joint - log_post, abs=1e-9)


@pytest.mark.parametrize(
    ("kwargs", "expected_heads"),
    [({}, None), ({"n": 20, "heads": 5, "a": 2.0, "b": 3.0}, 5), ({"n": 30, "heads": 0}, 0)],
)
def test_beta_bernoulli_quad(kwargs, expected_heads):
    s = beta_bernoulli(**kwargs)
    d = s.data
    y = d["y"]
    h, n = int(y.sum()), y.size
    if expected_heads is not None:
        assert h == expected_heads
    a, b = d["a"], d["b"]
    quad = integrate.quad(
        lambda p: stats.beta.pdf(p, a, b) * p**h * (1 - p) ** (n - h),
        0,
        1,
        epsabs=0,
        epsrel=1e-12,
        points=[h / n] if 0 < h < n else None,
        limit=200,
    )[0]
    assert s.log_z == pytest.approx(math.log(quad), abs=1e-8)


def test_beta_bernoulli_pymc_density_integrates(systems):
    """exp(PyMC logp with the log-odds Jacobian) integrates to Z over the real line."""
    s = _by_name(systems, "beta_bernoulli")
    logp = s.model.compile_logp()
    log_z_pymc = _log_quad_1d(lambda u: float(logp({"p_logodds__": np.array(u)})), -30.0, 30.0)
    assert s.log_z == pytest.approx(log_z_pymc, abs=1e-8)


@pytest.mark.parametrize("J", [2, 8])
def test_hierarchical_normal_dblquad(J):
    """Integrate (mu, tau) numerically, theta_j ~ N(mu, tau^2) convolved with y_j's noise."""
    s = hierarchical_normal(J=J)
    d = s.data
    y, sigma = d["y"], d["sigma"]

    def log_f(mu, tau):
        return (
            stats.norm.logpdf(mu, 0.0, d["mu_sigma"])
            + stats.halfnorm.logpdf(tau, scale=d["tau_sigma"])
            + stats.norm.logpdf(y, mu, np.sqrt(sigma**2 + tau**2)).sum()
        )

    log_z = _log_dblquad(log_f, (-40.0, 40.0), (0.0, 40.0), n_grid=81)
    assert s.log_z == pytest.approx(log_z, abs=1e-6)


def _prior_draws(d, seed: int, m: int = 400_000):
    """``(mu, tau, theta, log_lik)``: ``m`` draws of the hierarchical normal's prior and
    each draw's log likelihood of the data ``d``."""
    rng = np.random.default_rng(seed)
    mu = rng.normal(0, d["mu_sigma"], m)
    tau = np.abs(rng.normal(0, d["tau_sigma"], m))
    theta = mu[:, None] + tau[:, None] * rng.normal(size=(m, d["y"].size))
    return mu, tau, theta, stats.norm.logpdf(d["y"], theta, d["sigma"]).sum(axis=1)


def test_hierarchical_normal_monte_carlo():
    """Brute-force Monte Carlo over the prior of (mu, tau, theta), no marginalisation."""
    s = hierarchical_normal(J=3, seed=4)
    m = 400_000
    *_, log_lik = _prior_draws(s.data, 123, m)
    shift = log_lik.max()
    w = np.exp(log_lik - shift)
    est = shift + math.log(w.mean())
    se = w.std(ddof=1) / math.sqrt(m) / w.mean()  # delta method on the log scale
    assert abs(est - s.log_z) < 5 * se + 1e-12


def test_hierarchical_quantiles_against_prior_monte_carlo():
    """Each exact quantile of tau, mu and theta_j against the likelihood-weighted prior
    draws' CDF there (no marginalisation): within 4 of its binomial se."""
    s = hierarchical_normal(J=3, seed=4)
    d = s.data
    probs = [0.05, 0.5, 0.95, 0.99]
    exact = hierarchical_quantiles(d["y"], d["sigma"], probs)
    mu, tau, theta, log_lik = _prior_draws(d, 7)
    w = np.exp(log_lik - log_lik.max())
    ess = w.sum() ** 2 / np.sum(w**2)
    pairs = [(tau, exact["tau"]), (mu, exact["mu"])]
    pairs += [(theta[:, j], exact["theta"][j]) for j in range(d["y"].size)]
    for draws, quantiles in pairs:
        cdf = np.array([np.sum(w * (draws <= q)) / w.sum() for q in quantiles])
        se = np.sqrt(np.multiply(probs, np.subtract(1, probs)) / ess)
        assert np.all(np.abs(cdf - probs) < 4 * se), (cdf, probs, se)


@pytest.mark.parametrize("nested", [False, True], ids=["crossed", "nested (arrow)"])
def test_crossed_log_lik_against_the_dense_covariance(nested):
    """Woodbury and the Schur complement onto (mu, years) against scipy's density of the
    dense ``sigma^2 I + U D U'`` at two points (``tau_b`` an array: both at once); nested
    groupings take the arrow-shaped complement."""
    from pymc_evidence.testing.crossed import MU_SD, _stats, crossed_intercepts, crossed_log_lik

    system = crossed_intercepts(J=12, K=3, rows=3, nested=nested)
    y, county, year = (system.data[k] for k in ("y", "county", "year"))
    s = _stats(y, county, year, 12, 3)
    assert (s["parent"] is not None) == nested
    U = np.column_stack([np.ones(y.size), np.eye(12)[county], np.eye(3)[year]])
    for log_sigma, log_ta in ((0.1, -0.5), (-0.3, 0.2)):
        log_tb = np.array([-1.0, 0.5])
        mine = crossed_log_lik(s, log_sigma, log_ta, log_tb)
        for value, lb in zip(mine, log_tb, strict=True):
            scales = np.r_[MU_SD**2, np.full(12, np.exp(2 * log_ta)), np.full(3, np.exp(2 * lb))]
            cov = np.exp(2 * log_sigma) * np.eye(y.size) + U @ np.diag(scales) @ U.T
            assert value == pytest.approx(stats.multivariate_normal(cov=cov).logpdf(y), abs=1e-9)


def test_hierarchical_parametrisations_agree():
    a = hierarchical_normal(J=5, seed=7, centered=True)
    b = hierarchical_normal(J=5, seed=7, centered=False)
    assert a.log_z == b.log_z
    np.testing.assert_array_equal(a.data["y"], b.data["y"])
    assert {v.name for v in a.model.free_RVs} == {"mu", "tau", "theta"}
    assert {v.name for v in b.model.free_RVs} == {"mu", "tau", "eta"}
    assert "theta" in {v.name for v in b.model.deterministics}


def _ref_mixture_log_lik_point(d, x):
    s = d["noise_sigma"]
    return special.logsumexp(
        [
            math.log(d["weight"]) + stats.norm.logpdf(d["y"], x + d["offset"], s).sum(),
            math.log(1 - d["weight"]) + stats.norm.logpdf(d["y"], x - d["offset"], s).sum(),
        ]
    )


def test_mixture_likelihood_quad_d1():
    s = mixture_likelihood(d=1, separation=10.0, seed=3, weight=0.3)
    d = s.data

    def log_f(x):
        return stats.norm.logpdf(x, 0, d["prior_sigma"]) + _ref_mixture_log_lik_point(
            d, np.array([x])
        )

    assert s.log_z == pytest.approx(_log_quad_1d(log_f, -40.0, 40.0), abs=1e-8)

    logp = s.model.compile_logp()
    log_z_pymc = _log_quad_1d(lambda x: float(logp({"x": np.array([x])})), -40.0, 40.0)
    assert s.log_z == pytest.approx(log_z_pymc, abs=1e-8)


def test_mixture_likelihood_dblquad_default(systems):
    s = _by_name(systems, "mixture_likelihood")
    d = s.data
    y, a, s0, sn, w = d["y"], d["offset"], d["prior_sigma"], d["noise_sigma"], d["weight"]
    assert y.size == 2

    def lnorm(x, m, sd):  # hand-written, scalar: scipy.stats is too slow inside dblquad
        return -0.5 * ((x - m) / sd) ** 2 - math.log(sd) - 0.5 * math.log(2 * math.pi)

    def log_f(x1, x2):
        lp = lnorm(x1, 0, s0) + lnorm(x2, 0, s0)
        plus = lnorm(y[0], x1 + a[0], sn) + lnorm(y[1], x2 + a[1], sn)
        minus = lnorm(y[0], x1 - a[0], sn) + lnorm(y[1], x2 - a[1], sn)
        hi = max(plus, minus)
        return lp + hi + math.log(w * math.exp(plus - hi) + (1 - w) * math.exp(minus - hi))

    # the integrand is negligible more than ~10 likelihood widths from the two modes
    box = [
        (min(y[i] - a[i], y[i] + a[i]) - 10.0, max(y[i] - a[i], y[i] + a[i]) + 10.0) for i in (0, 1)
    ]
    log_z = _log_dblquad(log_f, box[0], box[1], n_grid=101)
    assert s.log_z == pytest.approx(log_z, abs=1e-6)


def test_mixture_posterior_is_bimodal(systems):
    s = _by_name(systems, "mixture_likelihood")
    logp = s.model.compile_logp()
    d = s.data
    shrink = d["prior_sigma"] ** 2 / (d["prior_sigma"] ** 2 + d["noise_sigma"] ** 2)
    m_plus, m_minus = shrink * (d["y"] - d["offset"]), shrink * (d["y"] + d["offset"])
    mid = 0.5 * (m_plus + m_minus)
    lp_modes = [float(logp({"x": m})) for m in (m_plus, m_minus)]
    assert float(logp({"x": mid})) < min(lp_modes) - 5.0


@pytest.mark.parametrize("target", [-3.7, 0.0, 25.0, -800.0])
def test_normalized_density_quad(target):
    s = normalized_density(log_z=target, d=3, seed=1)
    assert s.log_z == target
    d = s.data
    total = stats.norm.logpdf(d["z_value"], 0.0, d["z_sigma"])
    for yi in d["y"]:
        total += _log_quad_1d(
            lambda x, yi=yi: stats.norm.logpdf(x) + stats.norm.logpdf(yi, x, d["noise_sigma"]),
            -12.0,
            12.0,
            n_grid=401,
        )
    assert total == pytest.approx(target, abs=1e-8)


def test_normalized_density_pymc_density_integrates():
    s = normalized_density(log_z=1.25, d=1)
    logp = s.model.compile_logp()
    log_z_pymc = _log_quad_1d(lambda x: float(logp({"x": np.array([x])})), -12.0, 12.0)
    assert log_z_pymc == pytest.approx(1.25, abs=1e-8)


# ------------------------------------------------------------------------------------------
# radon
# ------------------------------------------------------------------------------------------


def test_load_radon():
    df = load_radon()
    assert len(df) == 919
    assert list(df.columns) == ["county", "floor", "log_radon", "log_uranium", "county_idx"]
    counties = df.attrs["counties"]
    assert len(counties) == 85 == df["county"].nunique()
    assert df["county_idx"].min() == 0 and df["county_idx"].max() == 84
    assert all(counties[i] == c for i, c in zip(df["county_idx"], df["county"], strict=True))
    assert set(df["floor"].unique()) <= {0, 1}
    assert not df.isna().any().any()


def test_radon_models():
    models = radon_models()
    assert set(models) == {"pooled", "unpooled", "varying_intercept", "varying_intercept_slope"}
    for name, model in models.items():
        assert len(model.coords["county"]) == 85, name
        assert not any(_is_flat(rv) for rv in model.free_RVs), name
        value = model.compile_logp()(model.initial_point())
        assert np.isfinite(value), name
    assert models["unpooled"]["alpha"].shape.eval()[0] == 85


def test_radon_models_subset():
    df = load_radon().iloc[:100].reset_index(drop=True)
    df.attrs = {}
    model = radon_models(df)["pooled"]
    assert len(model.coords["obs_id"]) == 100
    assert len(model.coords["county"]) == df["county"].nunique()


def test_egg_box_truth_by_gauss_legendre_per_period():
    """The Simpson truth against a Gauss-Legendre product rule on each half-period cell."""
    from pymc_evidence.testing import egg_box

    system = egg_box()
    u, w = np.polynomial.legendre.leggauss(60)
    half = np.pi  # cos(x/2) changes monotonicity every pi
    nodes = np.concatenate([k * half + half / 2 * (u + 1) for k in range(10)])
    weights = np.tile(w * half / 2, 10)
    c = np.cos(nodes / 2)
    log_f = (2 + np.outer(c, c)) ** 5
    log_z = special.logsumexp(log_f, b=np.outer(weights, weights)) - 2 * np.log(10 * np.pi)
    assert system.log_z == pytest.approx(log_z, abs=1e-8)


def test_gaussian_shells_truth_by_importance_sampling():
    """One shell's mass by draws on the shell (uniform direction, Gaussian radius)."""
    from pymc_evidence.testing import gaussian_shells

    system = gaussian_shells()
    d, n, r0, w = 5, 200_000, 2.0, 0.1
    rng = np.random.default_rng(0)
    r = np.abs(rng.normal(r0, w, n))
    log_area = np.log(2) + d / 2 * np.log(np.pi) - special.gammaln(d / 2)
    # proposal density on R^d: N(r; r0, w) / (area r^(d-1)); likelihood N(r; r0, w)
    log_w = log_area + (d - 1) * np.log(r)
    log_mass = special.logsumexp(log_w) - np.log(n)
    truth = np.log(2) + log_mass - d * np.log(12.0)
    assert system.log_z == pytest.approx(truth, abs=2e-3)  # the draws' se is 3e-4


@pytest.mark.heavy
def test_bambi_random_intercept_truth_against_dense_covariance():
    """:func:`random_intercept_truth` (group blocks, Woodbury, composite rule with the
    ``tau`` axis closed at zero) against the dense covariance ``sigma² I + tau² Z Zᵀ + X S
    Xᵀ`` with :mod:`scipy.stats`, integrated by scipy's ``dblquad`` over ``(sigma, tau)``:
    unequal groups, a predictor far from zero."""
    from pymc_evidence.testing.bambi_truth import random_intercept_truth

    rng = np.random.default_rng(4)
    g = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2, 3, 4, 4])
    x = rng.normal(size=g.size) + 1.5
    y = 0.5 + x + rng.normal(0.0, 0.6, 5)[g] + 0.8 * rng.normal(size=g.size)
    priors = {"Intercept": [0.7, 2.0], "x": [0.0, 1.5], "sigma": [4.0, 1.2],
              "1|g_sigma": [0.0, 1.5]}  # fmt: skip
    X = np.stack([np.ones_like(x), x - x.mean()], 1)
    Z = np.eye(5)[g]
    mean = X @ [0.7, 0.0]

    def density(tau, sig):
        cov = sig**2 * np.eye(g.size) + tau**2 * Z @ Z.T + X @ np.diag([4.0, 2.25]) @ X.T
        log_p = stats.multivariate_normal.logpdf(y, mean, cov, allow_singular=True)
        log_p += stats.halfnorm.logpdf(tau, scale=1.5) + np.log(2.0)
        return np.exp(log_p + stats.t.logpdf(sig, df=4.0, scale=1.2) + 20.0)

    # sigma from 1e-4: below it the density is below 1e-30 of its peak
    value, _ = integrate.dblquad(density, 1e-4, 30.0, 0.0, 30.0, epsabs=0, epsrel=1e-9)
    exact = math.log(value) - 20.0
    assert random_intercept_truth(y, x, g, priors).log_z == pytest.approx(exact, abs=1e-6)
