"""Linked importance sampling estimators (:mod:`pymc_evidence.estimators.lis`, Neal 2005):
exact enumeration on a 3-state space (E[r] = Z) and pure estimators on synthetic runs."""

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

from pymc_evidence.estimators.diagnostics import EvidenceWarning
from pymc_evidence.estimators.lis import (
    bridged_log_evidence,
    lis_log_evidence,
    lis_log_factors,
    log_bridge_ratios,
    reverse_lis_log_evidence,
)
from pymc_evidence.estimators.noneq import bar_log_evidence
from tests._accuracy import assert_log_z

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
