"""Tests for the hard analytic systems of :mod:`pymc_evidence.testing.hard`.

Every ``log_z`` is checked against a second computation that shares no code with the
factory (a different closed form, a different quadrature variable or rule, a dense-matrix
density instead of a structured one, or plain Monte Carlo over prior draws), and every PyMC
model's log density at a point is checked against a hand computation with :mod:`scipy.stats`.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, special, stats

from pymc_evidence.testing import (
    HARD_MODELS,
    bimodal_1d,
    centred_radon_intercepts,
    hierarchical_normal,
    hierarchical_normal_cauchy,
    noncentred_radon_intercepts,
    phase_transition,
    prior_conflict,
    ring,
    symmetric_mixture,
    unequal_modes,
)
from pymc_evidence.testing.radon_exact import (
    county_stats,
    radon_intercepts_log_lik,
    radon_pooled_log_z,
)
from tests._accuracy import assert_log_z


def _pymc_logp(model, values):
    """PyMC's joint log density (no Jacobian) at constrained ``values`` keyed by RV name."""
    point = {}
    for rv in model.free_RVs:
        x = np.asarray(values[rv.name], dtype=np.float64)
        transform = model.rvs_to_transforms.get(rv)
        if transform is not None:
            x = transform.forward(x, *rv.owner.inputs).eval()
        point[model.rvs_to_values[rv].name] = x
    return float(model.compile_logp(jacobian=False)(point))


def _trapz_log(log_f, grid):
    """``log`` of the trapezoid rule for ``exp(log_f)`` on ``grid``, shifted by the max."""
    lf = log_f(grid)
    m = float(np.max(lf))
    return m + math.log(integrate.trapezoid(np.exp(lf - m), grid))


def _mc_log_mean(log_w):
    """``log`` of a Monte Carlo mean of ``exp(log_w)`` and its (delta-method) standard error."""
    w = np.exp(log_w - log_w.max())
    return log_w.max() + math.log(w.mean()), w.std() / w.mean() / math.sqrt(w.size)


def test_registry_builds_every_model():
    for key, factory in HARD_MODELS.items():
        system = factory()
        assert system.name == key
        assert math.isfinite(system.log_z)
        assert all(v.name for v in system.model.free_RVs)


# ------------------------------------------------------------------------------------------
# hierarchical normal, HalfCauchy scale
# ------------------------------------------------------------------------------------------


def _dense_hier_log_lik(tau, y, sigma, mu_sd=5.0):
    """log N(y; 0, diag(sigma^2 + tau^2) + mu_sd^2 11^T) with dense batched linear algebra."""
    J = y.size
    cov = np.eye(J) * (sigma**2 + tau[:, None] ** 2)[:, None, :] + mu_sd**2
    _, logdet = np.linalg.slogdet(cov)
    quad = np.einsum("j,njk,k->n", y, np.linalg.inv(cov), y)
    return -0.5 * (J * math.log(2 * math.pi) + logdet + quad)


def test_hierarchical_cauchy_truth():
    s = hierarchical_normal_cauchy()
    y, sigma = s.data["y"], s.data["sigma"]
    assert np.allclose(y, hierarchical_normal().data["y"])  # the same data

    def log_f(t):  # integrate over log tau, HalfCauchy(5) prior + Jacobian
        tau = np.exp(t)
        return stats.halfcauchy.logpdf(tau, scale=5.0) + t + _dense_hier_log_lik(tau, y, sigma)

    assert s.log_z == pytest.approx(_trapz_log(log_f, np.linspace(-25, 40, 40001)), abs=1e-7)
    # plain Monte Carlo over 200k prior draws of tau (loose, independent of any quadrature)
    tau = stats.halfcauchy.rvs(scale=5.0, size=200_000, random_state=np.random.default_rng(1))
    est, se = _mc_log_mean(_dense_hier_log_lik(tau, y, sigma))
    assert abs(est - s.log_z) < 5 * se and se < 0.01
    assert hierarchical_normal_cauchy(centered=False).log_z == s.log_z


@pytest.mark.parametrize("centered", [True, False])
def test_hierarchical_cauchy_logp(centered):
    s = hierarchical_normal_cauchy(centered=centered)
    y, sigma = s.data["y"], s.data["sigma"]
    mu, tau, eta = 1.3, 2.7, np.linspace(-1.0, 1.0, y.size)
    theta = mu + tau * eta
    hand = stats.norm.logpdf(mu, 0, 5) + stats.halfcauchy.logpdf(tau, scale=5)
    hand += stats.norm.logpdf(y, theta, sigma).sum()
    if centered:
        hand += stats.norm.logpdf(theta, mu, tau).sum()
        values = {"mu": mu, "tau": tau, "theta": theta}
    else:
        hand += stats.norm.logpdf(eta).sum()
        values = {"mu": mu, "tau": tau, "eta": eta}
    # PyMC's HalfCauchy logp adds pt.log(2) evaluated in float32: 1.9e-9 too high
    assert _pymc_logp(s.model, values) == pytest.approx(hand, abs=1e-8)


# ------------------------------------------------------------------------------------------
# 1-D bimodal
# ------------------------------------------------------------------------------------------


def test_bimodal_1d_truth_and_logp():
    s = bimodal_1d()
    y, sd = s.data["y"], s.data["prior_sd"]

    def log_f(t):
        return stats.norm.logpdf(t, 0, sd) + stats.norm.logpdf(y, t**2, 1)

    assert s.log_z == pytest.approx(_trapz_log(log_f, np.linspace(-40, 40, 400_001)), abs=1e-9)
    theta = np.random.default_rng(2).normal(0, sd, size=1_000_000)
    est, se = _mc_log_mean(stats.norm.logpdf(y, theta**2, 1))
    assert abs(est - s.log_z) < 5 * se and se < 0.01
    # two separated, mirror-image modes with a deep valley between them
    assert log_f(2.0) - log_f(0.0) > 7.0
    for t in (-2.1, 0.3):
        assert _pymc_logp(s.model, {"theta": t}) == pytest.approx(log_f(t), abs=1e-10)


# ------------------------------------------------------------------------------------------
# symmetric mixture
# ------------------------------------------------------------------------------------------


def test_symmetric_mixture_truth_and_logp():
    s = symmetric_mixture()
    y, a = s.data["y"], s.data["offset"]
    s0, sn = s.data["prior_sigma"], s.data["noise_sigma"]

    def log_factor(yi, shift):  # 1-D quadrature of N(x; 0, s0^2) N(yi; x + shift, sn^2)
        def f(x):
            return stats.norm.pdf(x, 0, s0) * stats.norm.pdf(yi, x + shift, sn)

        return math.log(integrate.quad(f, -np.inf, np.inf, epsrel=1e-12)[0])

    comps = [sum(map(log_factor, y, sign * a)) for sign in (1, -1)]
    assert comps[0] == pytest.approx(comps[1], abs=1e-9)  # equal posterior mode masses
    assert s.log_z == pytest.approx(math.log(0.5) + special.logsumexp(comps), abs=1e-9)

    x = np.array([0.5, -1.0, 2.0, 3.0, -0.2])
    lik = [stats.multivariate_normal(x + sign * a, sn**2 * np.eye(5)).logpdf(y) for sign in (1, -1)]
    hand = stats.norm.logpdf(x, 0, s0).sum() + math.log(0.5) + special.logsumexp(lik)
    assert _pymc_logp(s.model, {"x": x}) == pytest.approx(hand, abs=1e-9)


def test_unequal_modes_truth_and_logp():
    s = unequal_modes()
    c, (s1, s2), s0, w = s.data["offset"], s.data["sigmas"], s.data["prior_sigma"], s.data["weight"]

    def log_factor(centre, sd):  # 1-D quadrature of N(x; 0, s0^2) N(x; centre, sd^2)
        def f(x):
            return stats.norm.pdf(x, 0, s0) * stats.norm.pdf(x, centre, sd)

        parts = (
            integrate.quad(f, a, b, epsrel=1e-12)[0]
            for a, b in ((-np.inf, centre), (centre, np.inf))
        )
        return math.log(sum(parts))

    comps = [math.log(w) + 5 * log_factor(c, s1), math.log1p(-w) + 5 * log_factor(-c, s2)]
    assert s.log_z == pytest.approx(special.logsumexp(comps), abs=1e-9)
    assert s.data["narrow_share"] == pytest.approx(math.exp(comps[0] - s.log_z), abs=1e-9)

    x = np.array([0.5, -1.0, 2.0, 1.5, -0.2])
    lik = [
        math.log(w) + stats.multivariate_normal(np.full(5, c), s1**2 * np.eye(5)).logpdf(x),
        math.log1p(-w) + stats.multivariate_normal(np.full(5, -c), s2**2 * np.eye(5)).logpdf(x),
    ]
    hand = stats.norm.logpdf(x, 0, s0).sum() + special.logsumexp(lik)
    assert _pymc_logp(s.model, {"x": x}) == pytest.approx(hand, abs=1e-9)


# ------------------------------------------------------------------------------------------
# phase transition
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs", [{}, {"offset": 0.0, "half_width": 0.5}], ids=["off_centre", "centred"]
)
def test_phase_transition_truth_and_logp(kwargs):
    s = phase_transition(**kwargs)
    d, h, c = 10, s.data["half_width"], s.data["offset"]
    v, u, m = s.data["bump_sigma"], s.data["spike_sigma"], s.data["spike_mass"]

    def box_mass(centre, sd):  # 1-D quadrature of the Gaussian over the box side
        val = integrate.quad(
            lambda t: stats.norm.pdf(t, centre, sd), -h, h, points=[centre], epsrel=1e-13
        )
        return val[0]

    z = ((1 - m) * box_mass(0.0, v) ** d + m * box_mass(c, u) ** d) / (2 * h) ** d
    assert s.log_z == pytest.approx(math.log(z), abs=1e-10)
    assert s.data["spike_share"] == pytest.approx(m * box_mass(c, u) ** d / z / (2 * h) ** d)

    def log_lik(x):
        return np.logaddexp(
            math.log1p(-m) + stats.norm.logpdf(x, 0, v).sum(-1),
            math.log(m) + stats.norm.logpdf(x, c, u).sum(-1),
        )

    bump_peak = math.log1p(-m) + stats.norm.logpdf(np.zeros(d), 0, v).sum()
    if c != 0.0:  # hard to find: the bump is 20 nats down at the spike, the spike invisible
        assert bump_peak - (math.log1p(-m) + stats.norm.logpdf(np.full(d, c), 0, v).sum()) > 19
        assert math.log(m) + stats.norm.logpdf(np.zeros(d), c, u).sum() < bump_peak - 1000
    else:  # Skilling's form: the spike towers 25 nats above the bump at the same centre
        assert math.log(m) + stats.norm.logpdf(np.zeros(d), 0, u).sum() > bump_peak + 25
    rng = np.random.default_rng(3)
    for x in (np.full(d, c) + u * rng.normal(size=d), v * rng.normal(size=d)):
        hand = log_lik(x) - d * math.log(2 * h)
        assert _pymc_logp(s.model, {"x": x}) == pytest.approx(hand, abs=1e-8)


# ------------------------------------------------------------------------------------------
# prior conflict
# ------------------------------------------------------------------------------------------


def test_prior_conflict_truth_and_logp():
    s = prior_conflict()
    y, cov = s.data["y"], s.data["cov"]
    d = y.size
    # Chib's identity with the posterior in precision form: p(y) = p(x) p(y|x) / p(x|y)
    prec = np.eye(d) + np.linalg.inv(cov)
    mean = np.linalg.solve(prec, np.linalg.solve(cov, y))
    lik = stats.multivariate_normal(mean, cov).logpdf(y)
    post = stats.multivariate_normal(mean, np.linalg.inv(prec)).logpdf(mean)
    assert s.log_z == pytest.approx(stats.norm.logpdf(mean).sum() + lik - post, abs=1e-9)
    assert np.linalg.norm(mean) > 5.0  # the posterior sits far out in the prior's tail
    x = y - 0.1
    hand = stats.norm.logpdf(x).sum() + stats.multivariate_normal(x, cov).logpdf(y)
    assert _pymc_logp(s.model, {"x": x}) == pytest.approx(hand, abs=1e-9)


# ------------------------------------------------------------------------------------------
# ring
# ------------------------------------------------------------------------------------------


def test_ring_truth_and_logp():
    s = ring()
    d, k, r0 = 5, s.data["sharpness"], s.data["radius"]
    const = -0.5 * math.log(math.pi / k)  # log of N(r0^2; mu, 1/(2k)) at mu = r0^2

    def log_f(r):  # radial integral: sphere area * r^(d-1) * N(r) * L(r)
        log_area = math.log(2) + 0.5 * d * math.log(math.pi) - special.gammaln(0.5 * d)
        return (
            log_area + (d - 1) * np.log(r) - 0.5 * d * math.log(2 * math.pi) - 0.5 * r**2
            - k * (r**2 - r0**2) ** 2 + const
        )  # fmt: skip

    quad = integrate.quad(lambda r: math.exp(log_f(r)), 0, 10, points=[r0], epsrel=1e-12)[0]
    assert s.log_z == pytest.approx(math.log(quad), abs=1e-9)
    x = np.random.default_rng(4).normal(size=(1_000_000, d))
    est, se = _mc_log_mean(-k * (np.sum(x**2, 1) - r0**2) ** 2 + const)
    assert abs(est - s.log_z) < 5 * se and se < 0.02
    x = np.array([0.3, -0.5, 0.1, 0.6, -0.2])
    hand = stats.norm.logpdf(x).sum() + stats.norm.logpdf(r0**2, x @ x, math.sqrt(0.5 / k))
    assert _pymc_logp(s.model, {"x": x}) == pytest.approx(hand, abs=1e-10)


# ------------------------------------------------------------------------------------------
# radon varying intercepts
# ------------------------------------------------------------------------------------------

#: by ``benchmarks/radon_reference.py`` (dense Cholesky / Woodbury over all 87 coefficients,
#: 2-D Simpson on a fixed box): shares no code with ``radon_exact``.
RADON_VI_REFERENCE = -1062.666101


def test_radon_integrand_matches_dense_gaussian(radon):
    idx, x, y = radon["idx"], radon["x"], radon["y"]
    stats_c = county_stats(idx, x, y)
    counties = np.zeros((y.size, radon["k"]))
    counties[np.arange(y.size), idx] = 1.0
    for a, s in ((0.32, 0.76), (0.05, 1.3), (1.5, 0.5)):
        cov = s**2 * np.eye(y.size) + a**2 * counties @ counties.T
        cov += 100.0 * (1.0 + np.outer(x, x))  # mu_alpha and beta, prior sd 10
        dense = stats.multivariate_normal(np.zeros(y.size), cov).logpdf(y)
        assert float(radon_intercepts_log_lik(stats_c, a, s)) == pytest.approx(dense, abs=1e-8)


@pytest.mark.heavy
def test_radon_truth(radon):
    s_c, s_n = centred_radon_intercepts(), noncentred_radon_intercepts()
    assert s_c.log_z == s_n.log_z
    assert s_c.log_z == pytest.approx(RADON_VI_REFERENCE, abs=2e-6)
    # adaptive 2-D quadrature directly over (sigma_alpha, sigma_y), no log coordinates
    stats_c = county_stats(radon["idx"], radon["x"], radon["y"])

    def f(sy, sa):
        lf = radon_intercepts_log_lik(stats_c, sa, sy) + stats.halfnorm.logpdf(sa, scale=1.0)
        return math.exp(float(lf + stats.halfnorm.logpdf(sy, scale=5.0)) + 1062.0)

    val = integrate.dblquad(f, 0.0, 1.5, 0.55, 1.1, epsabs=0, epsrel=1e-9)[0]
    assert s_c.log_z == pytest.approx(math.log(val) - 1062.0, abs=1e-6)


def test_radon_logp(radon):
    s_c, s_n = centred_radon_intercepts(), noncentred_radon_intercepts()
    idx, x, y, k = radon["idx"], radon["x"], radon["y"], radon["k"]
    mu_a, sa, beta, sy = 1.4, 0.3, -0.6, 0.75
    z = np.random.default_rng(5).normal(size=k)
    alpha = mu_a + sa * z
    common = (
        stats.norm.logpdf(mu_a, 0, 10) + stats.halfnorm.logpdf(sa, scale=1)
        + stats.norm.logpdf(beta, 0, 10) + stats.halfnorm.logpdf(sy, scale=5)
        + stats.norm.logpdf(y, alpha[idx] + beta * x, sy).sum()
    )  # fmt: skip
    centred = {"mu_alpha": mu_a, "sigma_alpha": sa, "alpha": alpha, "beta": beta, "sigma_y": sy}
    hand_c = common + stats.norm.logpdf(alpha, mu_a, sa).sum()
    assert _pymc_logp(s_c.model, centred) == pytest.approx(hand_c, abs=1e-8)
    noncentred = {**centred, "z_alpha": z}
    del noncentred["alpha"]
    hand_n = common + stats.norm.logpdf(z).sum()
    assert _pymc_logp(s_n.model, noncentred) == pytest.approx(hand_n, abs=1e-8)


def test_radon_pooled_truth(radon):
    """Two independent computations: the 2 x 2 Woodbury step + adaptive quadrature of
    ``radon_pooled_log_z``, against the dense N(0, s^2 I + 100 A A^T) density (n x n
    Cholesky) integrated over log sigma_y by Simpson's rule (no shared code)."""
    x, y = radon["x"], radon["y"]
    outer = 100.0 * (1.0 + np.outer(x, x))

    def dense(s):
        chol = np.linalg.cholesky(s**2 * np.eye(y.size) + outer)
        v = np.linalg.solve(chol, y)
        return -0.5 * (y.size * math.log(2 * math.pi) + 2 * np.log(np.diag(chol)).sum() + v @ v)

    t = np.linspace(math.log(0.66), math.log(0.96), 61)  # log sigma_y; posterior sd ~0.02
    lf = np.array([dense(s) + stats.halfnorm.logpdf(s, scale=5.0) + math.log(s) for s in np.exp(t)])
    assert max(lf[0], lf[-1]) < lf.max() - 25  # the grid holds all the mass
    simpson = integrate.simpson(np.exp(lf - lf.max()), x=t)
    assert radon_pooled_log_z() == pytest.approx(lf.max() + math.log(simpson), abs=1e-6)


@pytest.mark.slow
def test_radon_log_bayes_factor_in_both_forms():
    """The default method's log Bayes factor of varying intercepts over complete pooling,
    with the intercepts written centred and non-centred, against the exact value."""
    import warnings

    import pymc_evidence as pme
    from pymc_evidence.datasets import radon_models

    exact = RADON_VI_REFERENCE - radon_pooled_log_z()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pooled = pme.log_evidence(pme.sample_evidence(radon_models()["pooled"], random_seed=1))
        for system in (centred_radon_intercepts(), noncentred_radon_intercepts()):
            est = pme.log_evidence(pme.sample_evidence(system.model, random_seed=1))
            bf = (est.log_z - pooled.log_z, math.hypot(est.se, pooled.se))
            assert_log_z(bf, exact, abs_tol=0.1, label=f"radon log BF, {system.name}")
