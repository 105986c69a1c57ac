"""Linked importance sampling and bridged AIS / LIS (Neal 2005): estimators and engine.

Truth comes from exact enumeration (a 3-state space), from a 1-D Gaussian path whose
``log Z`` is a constant we choose, and from PyMC models with closed-form evidence.
"""

import itertools
from dataclasses import replace

import numpy as np
import pytest
from scipy.special import logit, logsumexp

from pymc_evidence.base import GaussianBase
from pymc_evidence.engines import (
    KernelSettings,
    LinkSettings,
    batched_log_densities,
    run_forward_ais,
    sigmoidal_schedule,
)
from pymc_evidence.engines.lis import interpolate_step_sizes, run_lis
from pymc_evidence.estimators.diagnostics import EvidenceWarning
from pymc_evidence.estimators.lis import (
    bridged_log_evidence,
    lis_log_evidence,
    lis_log_factors,
    log_bridge_ratios,
    reverse_lis_log_evidence,
)
from pymc_evidence.estimators.noneq import bar_log_evidence
from pymc_evidence.testing.models import beta_bernoulli, conjugate_regression
from tests._accuracy import assert_estimate, assert_log_z

# --------------------------------------------------------------------------------------------
# Exact enumeration on three states: E[r] = r for the estimator of eq. 9
# --------------------------------------------------------------------------------------------

Q = np.array([0.5, 0.3, 0.2])  # normalised base
U = np.array([0.4, -1.2, 2.0])  # log f - log q; Z = sum(Q * exp(U))
Z_EXACT = float(np.sum(Q * np.exp(U)))


def _kernel(beta):
    """Lazy Metropolis on 3 states, reversible for pi_beta ∝ Q exp(beta U)."""
    pi = Q * np.exp(beta * U)
    pi = pi / pi.sum()
    P = np.zeros((3, 3))
    for s, t in itertools.permutations(range(3), 2):
        P[s, t] = 0.25 * min(1.0, pi[t] / pi[s])
    P[np.diag_indices(3)] = 1.0 - P.sum(axis=1)
    return pi, P


def _paths(start, length, P):
    """All state sequences of ``length`` transitions from ``start`` with their probabilities."""
    out = []
    for seq in itertools.product(range(3), repeat=length):
        prob, prev = 1.0, start
        for s in seq:
            prob, prev = prob * P[prev, s], s
        out.append((prob, list(seq)))
    return out


def _grow(link, length, P):
    """Chains with the link at a uniform position grown both ways (T reversible: Tbar = T)."""
    out = []
    for mu in range(length + 1):
        for (pf, fwd), (pb, bwd) in itertools.product(
            _paths(link, length - mu, P), _paths(link, mu, P)
        ):
            out.append((pf * pb / (length + 1), [link, *fwd, *bwd]))
    return out


def _trajectories(betas, lengths):
    """Every LIS run as (probability without link choices, chains, link indices)."""
    kernels = [_kernel(b) for b in betas]
    runs = [
        (kernels[0][0][s] * prob, [chain], [])
        for s in range(3)
        for prob, chain in _grow(s, lengths[0], kernels[0][1])
    ]
    for j in range(1, len(betas)):
        runs = [
            (p * prob, [*chains, nxt], [*links, idx])
            for p, chains, links in runs
            for idx, link in enumerate(chains[-1])
            for prob, nxt in _grow(link, lengths[j], kernels[j][1])
        ]
    return runs


def _expected_r(betas, lengths, bridge="geometric", guesses=None, uniform_link=False):
    """E[r] of one LIS run over the whole extended space, by enumeration (vectorized)."""
    n = len(betas) - 1
    guesses = np.zeros(n) if guesses is None else guesses
    runs = _trajectories(betas, lengths)
    prob = np.array([r[0] for r in runs])
    log_num, log_den, log_sel = [], [], np.zeros(len(runs))
    for j in range(n):
        pair = [
            log_bridge_ratios(
                U[np.array([r[1][i] for r in runs])],
                betas[j],
                betas[j + 1],
                bridge=bridge,
                log_ratio_guess=guesses[j],
                log_size_ratio=np.log((lengths[j] + 1) / (lengths[j + 1] + 1)),
            )
            for i in (j, j + 1)
        ]
        log_num.append(pair[0][0])
        log_den.append(pair[1][1])
        idx = np.array([r[2][j] for r in runs])
        chosen = np.take_along_axis(log_num[-1], idx[:, None], axis=1)[:, 0]
        if uniform_link:
            log_sel -= np.log(lengths[j] + 1)
        else:
            log_sel += chosen - logsumexp(log_num[-1], axis=1)
    log_r = lis_log_factors(log_num, log_den).sum(axis=1)
    return float(np.sum(prob * np.exp(log_sel + log_r)))


@pytest.mark.parametrize(
    ("bridge", "guesses"), [("geometric", None), ("optimal", np.array([-0.7, 1.5]))]
)
def test_enumeration_forward_and_reverse_unbiased(bridge, guesses):
    """E[r_LIS] = Z and E[rbar_LIS] = 1/Z exactly, with short, poorly mixing chains."""
    betas, lengths = [0.0, 0.4, 1.0], [1, 2, 1]
    assert _expected_r(betas, lengths, bridge, guesses) == pytest.approx(Z_EXACT, rel=1e-12)
    reverse_guess = None if guesses is None else -guesses[::-1]
    reverse = _expected_r(betas[::-1], lengths[::-1], bridge, reverse_guess)
    assert reverse == pytest.approx(1.0 / Z_EXACT, rel=1e-12)


def test_enumeration_detects_wrong_link_selection():
    """Power check: choosing the link uniformly (not by bridge weight) is biased."""
    wrong = _expected_r([0.0, 0.4, 1.0], [1, 2, 1], uniform_link=True)
    assert abs(wrong / Z_EXACT - 1.0) > 1e-3


# --------------------------------------------------------------------------------------------
# Engine on a 1-D Gaussian path: q = N(0, 1), f = c N(m, s^2), so log Z = log c exactly
# --------------------------------------------------------------------------------------------

LOG_C, M_F, S_F = 1.3, 1.5, 0.8


class Gauss1D:
    """A stand-in for BatchedDensity: ``(log f, log q, grad f, grad q)`` per row."""

    n_calls = 0

    def __call__(self, x):
        self.n_calls += 1
        x = np.atleast_2d(x)[:, 0]
        z = (x - M_F) / S_F
        log_f = LOG_C - 0.5 * np.log(2 * np.pi * S_F**2) - 0.5 * z**2
        log_q = -0.5 * np.log(2 * np.pi) - 0.5 * x**2
        return log_f, log_q, (-z / S_F)[:, None], -x[:, None]


def _reverse(settings):
    """The same kernel and links, walked from the posterior back to the base."""
    kernel, links = settings
    return kernel, replace(links, direction="reverse")


def _mean_ratio(log_r, log_target):
    """Mean and se of r / r_true (the unbiased scale, not the log)."""
    r = np.exp(log_r - log_target)
    return r.mean(), r.std(ddof=1) / np.sqrt(r.size)


@pytest.mark.parametrize("kernel", ["hmc", "rwm"])
def test_engine_unbiased_with_poor_mixing(kernel):
    """Monte Carlo: E[r] = c forward and E[rbar] = 1/c reverse, chains far from equilibrium."""
    n, betas = 20_000, [0.0, 0.3, 0.7, 1.0]
    rng = np.random.default_rng(11)
    settings = (
        KernelSettings(step_size=1.5, n_leapfrog=1, scale=None, kind=kernel),
        LinkSettings(chain_length=3),
    )
    log_r, info = run_lis(Gauss1D(), betas, rng.normal(size=(n, 1)), rng, *settings)
    mean, se = _mean_ratio(log_r, LOG_C)
    assert_estimate(mean, 1.0, se, abs_tol=0.08, label="forward E[r] / c")
    assert se < 0.02
    assert np.mean(log_r) < LOG_C  # Jensen: the log of one run is biased low
    post = rng.normal(M_F, S_F, size=(n, 1))  # exact draws from pi_1 = f / c
    log_rbar, _ = run_lis(Gauss1D(), betas, post, rng, *_reverse(settings))
    mean, se = _mean_ratio(log_rbar, -LOG_C)
    assert_estimate(mean, 1.0, se, abs_tol=0.08, label="reverse E[rbar] c")
    assert se < 0.02
    assert info.acceptance.shape == (4,) and np.all(info.acceptance < 0.95)
    assert info.log_factors.shape == (n, 3)
    np.testing.assert_allclose(info.log_factors.sum(axis=1), log_r)


def test_engine_independent_end_chains_unbiased():
    """x0 of K+1 iid draws (T_0 = independent sampling) and an end_sampler keep E[r] exact."""
    n, k, betas = 20_000, 2, [0.0, 0.5, 1.0]
    rng = np.random.default_rng(12)
    settings = (
        KernelSettings(step_size=[0.5, 1.2, 0.6], n_leapfrog=2, scale=None),
        LinkSettings(chain_length=k),
    )
    x0 = rng.normal(size=(n, k + 1, 1))
    log_r, info = run_lis(Gauss1D(), betas, x0, rng, *settings)
    mean, se = _mean_ratio(log_r, LOG_C)
    assert_estimate(mean, 1.0, se, abs_tol=0.1, label="forward E[r] / c")
    assert np.isnan(info.acceptance[0]) and np.isfinite(info.acceptance[1:]).all()

    def base_sampler(m, gen):
        return gen.normal(size=(m, 1))

    post = rng.normal(M_F, S_F, size=(n, 1))
    log_rbar, info_r = run_lis(
        Gauss1D(), betas, post, rng, *_reverse(settings), end_sampler=base_sampler
    )
    mean, se = _mean_ratio(log_rbar, -LOG_C)
    assert_estimate(mean, 1.0, se, abs_tol=0.1, label="reverse E[rbar] c")
    assert np.isnan(info_r.acceptance[0]) and np.isfinite(info_r.acceptance[1:]).all()
    # Link diagnostics: betas order, forward sign (estimates of log Z_{k+1}/Z_k) both ways.
    assert info.link_log_ratio.sum() == pytest.approx(np.mean(log_r))
    assert info_r.link_log_ratio.sum() == pytest.approx(-np.mean(log_rbar))
    assert info.link_log_ratio.sum() < LOG_C < info_r.link_log_ratio.sum()


def test_engine_without_transitions_is_simple_importance_sampling():
    """K = 0 and one link: r = f / q at the start draw, exactly."""
    x0 = np.linspace(-2, 2, 7)[:, None]
    kernel, links = KernelSettings(step_size=np.nan, scale=None), LinkSettings(chain_length=0)
    log_r, info = run_lis(Gauss1D(), [0.0, 1.0], x0, np.random.default_rng(0), kernel, links)
    log_f, log_q, _, _ = Gauss1D()(x0)
    np.testing.assert_allclose(log_r, log_f - log_q, rtol=1e-12)
    assert info.n_density_calls == 1


def test_engine_argument_checks():
    x0, rng = np.zeros((4, 1)), np.random.default_rng(0)
    kernel, one = KernelSettings(step_size=1.0, scale=None), LinkSettings(chain_length=1)
    with pytest.raises(ValueError, match="start"):
        run_lis(Gauss1D(), [0.2, 1.0], x0, rng, kernel, one)
    with pytest.raises(ValueError, match="direction"):
        LinkSettings(chain_length=1, direction="up")
    with pytest.raises(ValueError, match="step_sizes"):
        gap = KernelSettings(step_size=[1, np.nan, 1], scale=None)
        run_lis(Gauss1D(), [0.0, 0.5, 1.0], x0, rng, gap, one)
    with pytest.raises(ValueError, match="states per run"):
        run_lis(Gauss1D(), [0.0, 1.0], np.zeros((4, 2, 1)), rng, kernel, LinkSettings(3))
    with pytest.raises(ValueError, match="kind"):
        KernelSettings(step_size=1.0, kind="nuts")
    with pytest.raises(ValueError, match="needs the base"):
        run_lis(Gauss1D(), [0.0, 1.0], x0, rng, KernelSettings(step_size=1.0), one)


def test_interpolate_step_sizes_skips_nan():
    eps = interpolate_step_sizes([0.0, 0.25, 0.75, 1.0], [np.nan, 0.2, 0.8, np.nan], [0, 0.5, 1])
    np.testing.assert_allclose(eps, [0.2, 0.4, 0.8])  # geometric mean in the middle


# --------------------------------------------------------------------------------------------
# Pure estimators
# --------------------------------------------------------------------------------------------


def test_bridge_ratios_and_factors():
    to_from, to_to = log_bridge_ratios(np.array([1.0, -2.0]), 0.8, 0.2)
    np.testing.assert_allclose(to_from, [-0.3, 0.6])  # d = -0.6, signed
    np.testing.assert_allclose(to_to, [0.3, -0.6])
    # nan (f undefined) counts as f = 0: a base state with zero bridge weight.
    assert log_bridge_ratios([np.nan], 0.0, 0.5)[0][0] == -np.inf
    # The optimal bridge with any guess: p*/p_from / (p*/p_to) = p_to / p_from.
    a, b = log_bridge_ratios(np.array([0.7, -3.0]), 0.1, 0.6, bridge="optimal", log_ratio_guess=2)
    np.testing.assert_allclose(a - b, 0.5 * np.array([0.7, -3.0]))
    # A chain with no state in the bridge's support gives a zero estimate, not an error.
    factors = lis_log_factors([np.array([[-np.inf, -np.inf], [0.0, 0.0]])], [np.zeros((2, 3))])
    assert factors[0, 0] == -np.inf and factors[1, 0] == 0.0
    with pytest.raises(ValueError, match="zero denominator"):
        lis_log_factors([np.zeros((1, 2))], [np.full((1, 2), -np.inf)])
    with pytest.raises(ValueError, match="bridge"):
        log_bridge_ratios([0.0], 0.0, 1.0, bridge="harmonic")


def test_lis_log_evidence_values_and_zero_runs():
    r = np.array([0.5, 1.5, 1.0, 1.0, 0.5, 1.5])
    est = lis_log_evidence(np.log(r))
    assert est.method == "lis" and est.log_z == pytest.approx(0.0, abs=1e-14)
    assert est.se == pytest.approx(np.std(r, ddof=1) / np.sqrt(6)) and not est.warnings
    with pytest.warns(EvidenceWarning, match="zero estimate"):
        est = lis_log_evidence([0.0, -np.inf, *np.zeros(8)])
    assert est.log_z == pytest.approx(np.log(0.9)) and est.diagnostics["n_zero_runs"] == 1
    assert len(est.warnings) == 1
    with pytest.raises(ValueError, match="every run"):
        lis_log_evidence([-np.inf, -np.inf])
    with pytest.raises(ValueError, match="nan"):
        lis_log_evidence([0.0, np.nan])
    rev = reverse_lis_log_evidence(np.log(r) - 2.0)
    assert rev.log_z == pytest.approx(2.0) and rev.method == "reverse_lis"


def test_degenerate_run_weights_warn():
    log_r = np.zeros(50)
    log_r[0] = 20.0
    with pytest.warns(EvidenceWarning, match="Kish ESS"):
        est = lis_log_evidence(log_r)
    assert est.diagnostics["ess"] < 1.01 and est.warnings


def _lognormal_runs(rng, log_z, sd, n_f, n_r):
    """Unbiased log-normal run estimates: E[r] = Z, E[rbar] = 1/Z (Crooks-consistent)."""
    fwd = rng.normal(log_z - sd**2 / 2, sd, n_f)
    rev = rng.normal(-log_z - sd**2 / 2, sd, n_r)
    return fwd, rev


def test_estimators_recover_truth_on_lognormal_runs():
    rng = np.random.default_rng(3)
    fwd, rev = _lognormal_runs(rng, -4.0, 1.0, 3000, 1000)
    bridged = bridged_log_evidence(fwd, rev)
    for est in (lis_log_evidence(fwd), reverse_lis_log_evidence(rev), bridged):
        assert_log_z(est, -4.0, abs_tol=0.1, label=est.method)
    assert bridged.se < lis_log_evidence(fwd).se  # the bridge uses both directions


def _neal_iterated_bridge(fwd, rev, n_iter=5000):
    """Neal's (2005) optimal top-level bridge, iterated directly (independent of BAR's code)."""
    ratio, log_r = fwd.size / rev.size, 0.0
    for _ in range(n_iter):
        num = np.mean(1.0 / (np.exp(log_r) * ratio / np.exp(fwd) + 1.0))
        den = np.mean(1.0 / (np.exp(log_r) * ratio + np.exp(-rev)))
        log_r = np.log(num) - np.log(den)
    return log_r


def test_bridged_is_neal_fixed_point_and_invariant():
    rng = np.random.default_rng(4)
    fwd, rev = _lognormal_runs(rng, 1.0, 1.5, 60, 40)
    est = bridged_log_evidence(fwd, rev, method="bridged_ais")
    assert est.method == "bridged_ais"
    assert est.log_z == pytest.approx(_neal_iterated_bridge(fwd, rev), abs=1e-8)
    # Direction swap: forward runs of the reversed problem are the reverse runs here.
    assert bridged_log_evidence(rev, fwd).log_z == pytest.approx(-est.log_z, abs=1e-8)
    # Rescaling Z by e^c multiplies every r by e^c and every rbar by e^-c.
    shifted = bridged_log_evidence(fwd + 3.0, rev - 3.0)
    assert shifted.log_z == pytest.approx(est.log_z + 3.0, abs=1e-8)
    assert bridged_log_evidence(fwd[::-1], rev[::-1]).log_z == pytest.approx(est.log_z, abs=1e-10)
    # Same numbers as BAR on works W_f = -log r, physical W_r = -log rbar.
    assert bar_log_evidence(-fwd, -rev).log_z == pytest.approx(est.log_z, abs=1e-12)
    assert est.diagnostics["log_z_forward"] == pytest.approx(lis_log_evidence(fwd).log_z)
    with pytest.raises(ValueError, match="zero-estimate"):
        bridged_log_evidence(np.append(fwd, -np.inf), rev)


# --------------------------------------------------------------------------------------------
# PyMC models with exact log Z
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def regression():
    """Conjugate regression d=5 with a mean-field (ADVI-like), shifted Gaussian base."""
    case = conjugate_regression(d=5)
    X, y = case.data["X"], case.data["y"]
    precision = X.T @ X / case.data["sigma"] ** 2 + np.eye(5) / case.data["prior_sigma"] ** 2
    cov = np.linalg.inv(precision)
    mean = cov @ X.T @ y / case.data["sigma"] ** 2
    base = GaussianBase.from_moments(
        mean + 0.5 * np.sqrt(np.diag(cov)),
        np.diag(1.0 / np.diag(precision)),
        log_zeta=0.0,
        names=("w",),
        sizes=(5,),
    )
    density = batched_log_densities(case.model, base)
    rng = np.random.default_rng(21)
    _, pilot = run_forward_ais(
        density, base, sigmoidal_schedule(30), 32, rng, KernelSettings(n_leapfrog=5)
    )
    return case, mean, cov, base, density, pilot


def test_regression_forward_reverse_bridged(regression):
    case, mean, cov, base, density, pilot = regression
    rng = np.random.default_rng(22)
    n, k, betas = 64, 20, np.linspace(0.0, 1.0, 6)
    steps = interpolate_step_sizes(pilot.beta, pilot.step_size, betas)
    settings = (
        KernelSettings(step_size=steps, n_leapfrog=5, scale=pilot.scale),
        LinkSettings(chain_length=k),
    )
    x0 = base.sample(n * (k + 1), rng).reshape(n, k + 1, 5)
    log_r, info = run_lis(density, betas, x0, rng, *settings)
    post = rng.multivariate_normal(mean, cov, size=n)
    log_rbar, info_r = run_lis(
        density, betas, post, rng, *_reverse(settings), end_sampler=base.sample
    )
    forward, reverse = lis_log_evidence(log_r), reverse_lis_log_evidence(log_rbar)
    bridged = bridged_log_evidence(log_r, log_rbar)
    for est in (forward, reverse, bridged):
        assert_log_z(est, case.log_z, abs_tol=0.1, se_max=0.1)
    # Stochastic bounds (generous MC allowance): E[log r] <= log Z <= -E[log rbar].
    assert forward.diagnostics["mean_log_r"] <= case.log_z + 0.1
    assert -reverse.diagnostics["mean_log_r"] >= case.log_z - 0.1
    assert np.nansum(info.link_log_ratio) == pytest.approx(case.log_z, abs=0.5)
    assert info.n_density_calls == 1 + 5 * k * 5  # iid chain 0, five HMC chains
    assert np.all(info.link_ess > 1.0) and np.all(info_r.acceptance[1:] > 0.2)


def test_beta_bernoulli_bridged():
    case = beta_bernoulli()
    heads, flips = int(case.data["y"].sum()), case.data["y"].size
    a, b = case.data["a"] + heads, case.data["b"] + flips - heads
    var = (a + b) / (a * b)  # variance of the posterior log-odds, Laplace approximation
    base = GaussianBase.from_moments(
        np.array([logit(a / (a + b)) + 0.3]), np.array([[1.5 * var]]), log_zeta=0.0,
        names=("p_logodds__",), sizes=(1,),
    )  # fmt: skip
    density = batched_log_densities(case.model, base)
    rng = np.random.default_rng(31)
    n, k, betas = 64, 10, np.linspace(0.0, 1.0, 4)
    settings = (
        KernelSettings(step_size=1.0, n_leapfrog=3, scale=base.std),
        LinkSettings(chain_length=k),
    )
    x0 = base.sample(n * (k + 1), rng).reshape(n, k + 1, 1)
    log_r, _ = run_lis(density, betas, x0, rng, *settings)
    post = logit(rng.beta(a, b, size=(n, 1)))
    log_rbar, _ = run_lis(density, betas, post, rng, *_reverse(settings), end_sampler=base.sample)
    assert_log_z(bridged_log_evidence(log_r, log_rbar), case.log_z, abs_tol=0.1, se_max=0.05)
    assert_log_z(lis_log_evidence(log_r), case.log_z, abs_tol=0.1, se_max=0.05)
