"""Tests of the nonequilibrium (AIS / reverse AIS / BAR / histogram) evidence estimators.

Synthetic works satisfying Crooks exactly: with ``dF = -log Z``,
``W_f ~ N(dF + s^2/2, s^2)`` and ``W_r ~ N(-dF + s^2/2, s^2)``, so
``E[exp(-W_f)] = Z`` and ``E[exp(-W_r)] = 1/Z``. Plus Habeck's Gaussian annealing toy.
"""

from __future__ import annotations

import doctest
import warnings

import numpy as np
import pytest

from pymc_evidence.estimators import noneq, noneq_histogram
from pymc_evidence.estimators.diagnostics import EvidenceWarning
from pymc_evidence.estimators.noneq import (
    ais_log_evidence,
    bar_log_evidence,
    reverse_ais_log_evidence,
)
from pymc_evidence.estimators.noneq_histogram import histogram_log_evidence
from tests._accuracy import assert_estimate, assert_log_z

LOG_Z = -3.0


def crooks_works(rng, s, n_f, n_r, log_z=LOG_Z, size=None):
    """Gaussian forward / reverse works obeying Crooks exactly (``size``: replicates)."""
    df = -log_z
    shape_f = (n_f,) if size is None else (size, n_f)
    shape_r = (n_r,) if size is None else (size, n_r)
    return rng.normal(df + s**2 / 2, s, shape_f), rng.normal(-df + s**2 / 2, s, shape_r)


def quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        return fn(*args, **kwargs)


def test_synthetic_works_satisfy_jarzynski():
    wf, wr = crooks_works(np.random.default_rng(0), 0.5, 200_000, 200_000)
    assert np.log(np.mean(np.exp(-wf))) == pytest.approx(LOG_Z, abs=0.01)
    assert -np.log(np.mean(np.exp(-wr))) == pytest.approx(LOG_Z, abs=0.01)


@pytest.mark.parametrize("s", [0.5, 1.0, 2.0, 3.0])
def test_bar_within_4_se(s):
    wf, wr = crooks_works(np.random.default_rng(1), s, 1000, 300)
    est = quiet(bar_log_evidence, wf, wr)
    assert est.method == "bar"
    assert 0 < est.se < 1
    assert_log_z(est, LOG_Z, abs_tol=0.1)
    assert est.diagnostics["converged"] == 1.0
    assert est.diagnostics["n_f"] == 1000 and est.diagnostics["n_r"] == 300
    assert 0 < est.diagnostics["overlap"] <= 1


@pytest.mark.parametrize("s", [0.5, 1.0])
def test_ais_and_rais_within_4_se_when_sigma_small(s):
    wf, wr = crooks_works(np.random.default_rng(2), s, 2000, 2000)
    ais, rais = ais_log_evidence(wf), reverse_ais_log_evidence(wr)
    assert (ais.method, rais.method) == ("ais", "rais")
    for est in (ais, rais):
        assert_log_z(est, LOG_Z, abs_tol=0.1)
        assert est.warnings == ()
        assert est.diagnostics["n_runs"] == 2000
        assert est.n_chains == 2000
    # lognormal weights: Kish ESS / n -> exp(-s^2)
    assert ais.diagnostics["ess"] / 2000 == pytest.approx(np.exp(-(s**2)), rel=0.2)


@pytest.mark.parametrize("s", [0.5, 1.0, 2.0, 3.0])
def test_bounds_bracket_truth(s):
    wf, wr = crooks_works(np.random.default_rng(3), s, 1000, 1000)
    lower = quiet(ais_log_evidence, wf).diagnostics["lower_bound"]
    upper = quiet(reverse_ais_log_evidence, wr).diagnostics["upper_bound"]
    assert lower == pytest.approx(LOG_Z - s**2 / 2, abs=5 * s / np.sqrt(1000))
    assert upper == pytest.approx(LOG_Z + s**2 / 2, abs=5 * s / np.sqrt(1000))
    assert lower < LOG_Z < upper
    bar = quiet(bar_log_evidence, wf, wr).diagnostics
    assert bar["lower_bound"] == lower and bar["upper_bound"] == upper
    assert bar["hysteresis"] == pytest.approx(upper - lower)


def test_ais_biased_low_rais_biased_high_at_sigma_2():
    wf, wr = crooks_works(np.random.default_rng(4), 2.0, 50, 50, size=200)
    ais = np.array([quiet(ais_log_evidence, w).log_z for w in wf]) - LOG_Z
    rais = np.array([quiet(reverse_ais_log_evidence, w).log_z for w in wr]) - LOG_Z
    sem = lambda x: x.std(ddof=1) / np.sqrt(x.size)  # noqa: E731
    assert ais.mean() < -3 * sem(ais)
    assert rais.mean() > 3 * sem(rais)


def test_bar_se_calibrated():
    wf, wr = crooks_works(np.random.default_rng(5), 1.5, 200, 100, size=200)
    ests = [bar_log_evidence(f, r) for f, r in zip(wf, wr, strict=True)]
    z = np.array([(e.log_z - LOG_Z) / e.se for e in ests])
    coverage = np.mean(np.abs(z) < 2)
    assert 0.9 <= coverage <= 0.99
    # the se also matches the spread of the estimates
    spread = np.std([e.log_z for e in ests], ddof=1)
    assert np.mean([e.se for e in ests]) == pytest.approx(spread, rel=0.2)


@pytest.mark.parametrize("c", [-7.5, 0.3, 1e4])
def test_bar_shift_invariance(c):
    wf, wr = crooks_works(np.random.default_rng(6), 2.0, 300, 150)
    base = quiet(bar_log_evidence, wf, wr)
    shifted = quiet(bar_log_evidence, wf - c, wr + c)  # log Z -> log Z + c
    assert shifted.log_z - base.log_z == pytest.approx(c, abs=1e-8 * max(1, abs(c)))
    assert shifted.se == pytest.approx(base.se, rel=1e-6)
    hist = quiet(histogram_log_evidence, wf - c, wr + c)
    assert hist.log_z - base.log_z == pytest.approx(c, abs=1e-6 * max(1, abs(c)))


def test_bar_swap_roles_negates():
    wf, wr = crooks_works(np.random.default_rng(7), 1.5, 400, 120)
    est = bar_log_evidence(wf, wr)
    swapped = bar_log_evidence(wr, wf)  # a run from the target to the base: log Z -> -log Z
    assert swapped.log_z == pytest.approx(-est.log_z, abs=1e-9)
    assert swapped.se == pytest.approx(est.se, rel=1e-9)
    assert swapped.diagnostics["overlap"] == pytest.approx(est.diagnostics["overlap"], rel=1e-9)


def test_bar_permutation_invariant():
    rng = np.random.default_rng(8)
    wf, wr = crooks_works(rng, 1.0, 100, 80)
    a = bar_log_evidence(wf, wr).log_z
    b = bar_log_evidence(rng.permutation(wf), rng.permutation(wr)).log_z
    assert a == pytest.approx(b, abs=1e-10)


@pytest.mark.parametrize(
    ("n_f", "n_r", "abs_tol"), [(50, 2000, 0.1), (2000, 50, 0.1), (7, 3, 1.0)]
)  # ten works in all: an se of 0.26
def test_bar_unequal_counts(n_f, n_r, abs_tol):
    wf, wr = crooks_works(np.random.default_rng(9), 1.0, n_f, n_r)
    est = quiet(bar_log_evidence, wf, wr)
    assert_log_z(est, LOG_Z, abs_tol=abs_tol)
    hist = quiet(histogram_log_evidence, wf, wr)
    assert hist.log_z == pytest.approx(est.log_z, abs=1e-7)


def test_bar_matches_fixed_point_of_habeck_algorithm_1():
    # equal counts: Z <- Z * LHS / RHS with LHS = sum 1/(1 + Z e^{W_f}), RHS = sum
    # 1/(1 + Z^-1 e^{W_r}) (paper eq. 14 with W_r -> -W_r for our sign)
    wf, wr = crooks_works(np.random.default_rng(10), 1.0, 500, 500)
    log_z = np.log(np.mean(np.exp(-wf)))
    for _ in range(2000):
        lhs = np.sum(1 / (1 + np.exp(log_z + wf)))
        rhs = np.sum(1 / (1 + np.exp(-log_z + wr)))
        log_z += np.log(lhs / rhs)
    assert bar_log_evidence(wf, wr).log_z == pytest.approx(log_z, abs=1e-9)


def test_bar_variance_not_above_ais_or_rais():
    wf, wr = crooks_works(np.random.default_rng(11), 2.0, 100, 100, size=200)
    bar = [quiet(bar_log_evidence, f, r).log_z for f, r in zip(wf, wr, strict=True)]
    ais = [quiet(ais_log_evidence, f).log_z for f in wf]
    rais = [quiet(reverse_ais_log_evidence, r).log_z for r in wr]
    var_bar = np.var(bar, ddof=1)
    assert var_bar <= min(np.var(ais, ddof=1), np.var(rais, ddof=1))
    mse = lambda x: np.mean((np.asarray(x) - LOG_Z) ** 2)  # noqa: E731
    assert mse(bar) <= min(mse(ais), mse(rais))


def test_histogram_equals_bar():
    wf, wr = crooks_works(np.random.default_rng(12), 2.5, 600, 900)
    bar = quiet(bar_log_evidence, wf, wr)
    hist = quiet(histogram_log_evidence, wf, wr)
    assert hist.method == "histogram"
    assert hist.diagnostics["converged"] == 1.0
    assert hist.log_z == pytest.approx(bar.log_z, abs=1e-7)
    assert hist.se == pytest.approx(bar.se, rel=1e-5)


def test_overlap_perfect_and_poor():
    # identical (zero-variance) works at -dF: perfect overlap, zero se
    est = bar_log_evidence(np.full(10, 3.0), np.full(10, -3.0))
    assert est.log_z == pytest.approx(-3.0, abs=1e-9)
    assert est.diagnostics["overlap"] == pytest.approx(1.0)
    assert est.se == pytest.approx(0.0, abs=1e-6)
    # work distributions far apart (huge hysteresis): warned
    rng = np.random.default_rng(13)
    with pytest.warns(EvidenceWarning, match="barely overlap"):
        poor = bar_log_evidence(rng.normal(60.0, 1.0, 100), rng.normal(60.0, 1.0, 100))
    assert poor.diagnostics["overlap"] < noneq.OVERLAP_MIN
    assert any("overlap" in m for m in poor.warnings)


def test_ess_warnings():
    wf, wr = crooks_works(np.random.default_rng(14), 5.0, 100, 100)
    with pytest.warns(EvidenceWarning, match="Kish ESS"):
        ais = ais_log_evidence(wf)
    with pytest.warns(EvidenceWarning, match="Kish ESS"):
        rais = reverse_ais_log_evidence(wr)
    assert ais.warnings and rais.warnings
    assert ais.diagnostics["ess"] < 10 and rais.diagnostics["ess"] < 10


def test_large_works_no_overflow():
    wf, wr = crooks_works(np.random.default_rng(15), 1.0, 200, 200, log_z=-1.3e4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning (overflow) and no EvidenceWarning
        ests = [
            ais_log_evidence(wf),
            reverse_ais_log_evidence(wr),
            bar_log_evidence(wf, wr),
            histogram_log_evidence(wf, wr),
        ]
    for est in ests:
        assert np.isfinite(est.log_z) and np.isfinite(est.se)
        assert_log_z(est, -1.3e4, abs_tol=0.5, label=est.method)


@pytest.mark.parametrize("bad", [[1.0], [[1.0, 2.0]], [1.0, np.nan], [np.inf, 1.0]])
def test_invalid_works_rejected(bad):
    with pytest.raises(ValueError):
        ais_log_evidence(bad)
    with pytest.raises(ValueError):
        bar_log_evidence([1.0, 2.0], bad)


def test_unbracketable_root_raises(monkeypatch):
    monkeypatch.setattr(noneq.special, "expit", lambda x: np.full_like(x, np.nan))
    with pytest.raises(RuntimeError, match="not bracketed"):
        bar_log_evidence([1.0, 2.0], [0.0, 1.0])


# Habeck's Gaussian annealing toy (repo settings, K = 10, constant-KL schedule).
TOY_BETA = np.array(
    [0, 0.003017, 0.007471, 0.014328, 0.025395, 0.044198, 0.077862, 0.141047, 0.263989,
     0.508515, 1.0]
)  # fmt: skip


def toy_setup():
    prec = (1 - TOY_BETA) / 10.0**2 + TOY_BETA / 1.0**2
    var = 1 / prec
    mu = var * (1 - TOY_BETA) * 20.0 / 10.0**2
    tau = ((1 - TOY_BETA) * 0.9 + TOY_BETA * 0.995) ** 5
    return mu, var, tau


def toy_exact_mean_works():
    """Exact mean forward / reverse work from the Gaussian marginal recursion."""
    mu, var, tau = toy_setup()
    k_max = TOY_BETA.size - 1

    def energy_gap(m, v, k):  # E[E_{k+1}(x) - E_k(x)], x ~ N(m, v)
        return (v + (m - mu[k + 1]) ** 2) / (2 * var[k + 1]) - (v + (m - mu[k]) ** 2) / (2 * var[k])

    m, v, w_f = mu[0], var[0], 0.0
    for k in range(k_max):
        if k > 0:
            m, v = (1 - tau[k]) * mu[k] + tau[k] * m, (1 - tau[k] ** 2) * var[k] + tau[k] ** 2 * v
        w_f += energy_gap(m, v, k)
    m, v, w_r = mu[k_max], var[k_max], 0.0
    for k in range(k_max - 1, -1, -1):
        w_r -= energy_gap(m, v, k)
        if k > 0:
            m, v = (1 - tau[k]) * mu[k] + tau[k] * m, (1 - tau[k] ** 2) * var[k] + tau[k] ** 2 * v
    return w_f, w_r


def toy_works(rng, n):
    mu, var, tau = toy_setup()
    k_max = TOY_BETA.size - 1

    def energy(k, x):
        return (x - mu[k]) ** 2 / (2 * var[k])

    def kernel(k, x):
        return rng.normal((1 - tau[k]) * mu[k] + tau[k] * x, np.sqrt((1 - tau[k] ** 2) * var[k]))

    x, w_f = rng.normal(mu[0], np.sqrt(var[0]), n), np.zeros(n)
    for k in range(k_max):
        x = kernel(k, x) if k > 0 else x
        w_f += energy(k + 1, x) - energy(k, x)
    y, w_r = rng.normal(mu[k_max], np.sqrt(var[k_max]), n), np.zeros(n)
    for k in range(k_max - 1, -1, -1):
        w_r += energy(k, y) - energy(k + 1, y)  # physical reverse work
        y = kernel(k, y) if k > 0 else y
    return w_f, w_r


def test_gaussian_toy_exact_mean_work_and_bar():
    exact_f, exact_r = toy_exact_mean_works()
    assert exact_f == pytest.approx(11.9308, abs=1e-4)  # digest's value
    assert -exact_f < -np.log(10) < exact_r
    wf, wr = toy_works(np.random.default_rng(16), 20_000)
    for w, exact in ((wf, exact_f), (wr, exact_r)):
        assert_estimate(w.mean(), exact, w.std() / np.sqrt(w.size), abs_tol=0.1, label="mean work")
    est = quiet(bar_log_evidence, wf[:2000], wr[:2000])
    assert_log_z(est, -np.log(10), abs_tol=0.1)
    assert est.diagnostics["lower_bound"] < -np.log(10) < est.diagnostics["upper_bound"]


def test_docstring_examples():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        result = doctest.testmod(noneq, extraglobs={"np": np}, optionflags=doctest.ELLIPSIS)
        other = doctest.testmod(noneq_histogram, extraglobs={"np": np})
    assert result.attempted >= 5 and result.failed == 0
    assert other.attempted >= 2 and other.failed == 0


def test_forward_works_that_are_not_finite_count_as_weight_zero():
    """A forward run from a base draw where the model's density is not finite has work
    ``+inf`` (or NaN): weight zero, with a warning; the estimate is the mean over all runs."""
    with pytest.warns(EvidenceWarning, match="2 of 4 forward runs"):
        est = ais_log_evidence([1.0, np.inf, np.nan, 1.0])
    assert est.log_z == pytest.approx(np.log(0.5) - 1.0)
    assert est.diagnostics["n_zero_weight"] == 2.0
    with pytest.raises(ValueError, match="3 not finite"):
        ais_log_evidence([1.0, np.inf, np.nan, np.inf])
    with pytest.raises(ValueError, match="1 not finite"):
        bar_log_evidence([1.0, 2.0, np.inf], [0.5, 1.0])


def test_crossing_messages_silent_on_crooks_works():
    """Consistent forward/reverse works: no crossing warning over 20 seeds (z = 4)."""
    for seed in range(20):
        wf, wr = crooks_works(np.random.default_rng(seed), 1.0, 300, 300)
        assert noneq.crossing_messages(wf, wr) == []


def test_crossing_messages_flags_reverse_starts_off_posterior():
    """Reverse works from a shifted start (as from a sampler that missed mass) cross."""
    rng = np.random.default_rng(3)
    wf, wr = crooks_works(rng, 1.0, 300, 300)
    messages = noneq.crossing_messages(wf, wr - 2.0)  # reverse estimate 2 nats too low
    assert len(messages) == 1 and "above reverse AIS" in messages[0]


def test_nonfinite_fraction_message():
    from pymc_evidence.estimators.diagnostics import evidence_messages

    assert evidence_messages({"nonfinite_fraction": 0.005}, 0.1) == []
    (message,) = evidence_messages({"nonfinite_fraction": 0.2}, 0.1)
    assert message.startswith("20.0% of the log densities")
