"""Tests of the particle engines: batched densities, HMC kernel, forward and reverse AIS."""

import numpy as np
import pymc as pm
import pytest
from scipy.special import logsumexp

import pymc_evidence as pme
from pymc_evidence.base import GaussianBase
from pymc_evidence.engines import (
    Counts,
    KernelSettings,
    batched_log_densities,
    hmc_step,
    init_state,
    run_forward_ais,
    run_reverse_ais,
    rwm_step,
    sigmoidal_schedule,
)
from pymc_evidence.runtime.runtime import model_space
from pymc_evidence.testing.models import conjugate_regression
from tests._accuracy import assert_above, assert_below, assert_log_z


def _logmeanexp(a):
    return float(logsumexp(a) - np.log(len(a)))


def _exact_posterior(case):
    """Mean and covariance of the Gaussian posterior of ``w`` (raveled space = w)."""
    X, y = case.data["X"], case.data["y"]
    s2, t2 = case.data["sigma"] ** 2, case.data["prior_sigma"] ** 2
    cov = np.linalg.inv(X.T @ X / s2 + np.eye(X.shape[1]) / t2)
    return cov @ X.T @ y / s2, cov


@pytest.fixture(scope="module")
def regression():
    case = conjugate_regression(d=5)
    mean, cov = _exact_posterior(case)
    base = GaussianBase.from_moments(
        np.zeros(5), 2.0 * np.eye(5), log_zeta=0.0, names=("w",), sizes=(5,)
    )
    return case, mean, cov, base, batched_log_densities(case.model, base)


@pytest.fixture(scope="module")
def halfnormal_model():
    with pm.Model() as model:
        s = pm.HalfNormal("s", 2.0)
        mu = pm.Normal("mu", 0.0, 1.0, shape=2)
        pm.Normal("y", mu[0] + mu[1], s, observed=np.array([0.3, -1.2, 2.0]))
    return model


def _check_against_single_point(model, base, rng):
    space = model_space(model)
    density = batched_log_densities(model, base)
    assert density.vectorized
    x = rng.normal(size=(7, space.ndim))
    log_f, log_q, grad_f, grad_q = density(x)
    for i, row in enumerate(x):
        lf, gf = space.logp_dlogp(row)  # PyMC's, whose constants such as 0.5 are float32
        np.testing.assert_allclose(log_f[i], lf, rtol=0, atol=1e-8)  # computed in float32
        np.testing.assert_allclose(grad_f[i], gf, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(log_q, base.logp(x), rtol=1e-10)
    prec = np.linalg.inv(base.cov)
    np.testing.assert_allclose(grad_q, -(x - base.mean) @ prec, rtol=1e-8, atol=1e-10)


def test_batched_matches_single_point_regression(regression):
    case, _, _, _, _ = regression
    rng = np.random.default_rng(1)
    base = GaussianBase.from_moments(
        rng.normal(size=5),
        np.diag(rng.uniform(0.5, 2, 5)),
        log_zeta=0.0,
        names=("w",),
        sizes=(5,),
    )
    _check_against_single_point(case.model, base, rng)


def test_batched_matches_single_point_halfnormal(halfnormal_model):
    rng = np.random.default_rng(2)
    a = rng.normal(size=(3, 3))
    base = GaussianBase.from_moments(rng.normal(size=3), a @ a.T + np.eye(3), log_zeta=0.0)
    _check_against_single_point(halfnormal_model, base, rng)


def test_batched_cache_and_loop_fallback(halfnormal_model):
    base = GaussianBase(np.zeros(3), np.eye(3), log_zeta=0.0, kind="moments")
    fast = batched_log_densities(halfnormal_model, base)
    assert batched_log_densities(halfnormal_model, base) is fast
    slow = batched_log_densities(halfnormal_model, base, vectorize=False)
    assert not slow.vectorized
    x = np.random.default_rng(3).normal(size=(4, 3))
    for a, b in zip(fast(x), slow(x), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10)


def test_vectorize_failure_warns_and_loops(halfnormal_model, monkeypatch):
    import pymc_evidence.runtime._compile as _compile_module

    def broken(*args, **kwargs):
        raise NotImplementedError("no batched form")

    monkeypatch.setattr(_compile_module, "vectorize_graph", broken)
    base = GaussianBase(np.ones(3), np.eye(3), log_zeta=0.0, kind="moments")
    model = halfnormal_model.copy()  # nothing compiled for it yet
    with pytest.warns(pme.ModelWarning, match="one point at a time"):  # JAX batches without
        density = batched_log_densities(model, base, backend="default")  # vectorize_graph
    assert not density.vectorized
    log_f, _, grad_f, _ = density(np.zeros((2, 3)))
    assert log_f.shape == (2,) and grad_f.shape == (2, 3)


@pytest.mark.parametrize("kernel", ["hmc", "rwm"])
def test_kernel_leaves_gaussian_invariant(regression, kernel):
    """Start at exact draws of the (Gaussian) target at beta = 0.5, step, compare moments."""
    case, mean, cov, base, density = regression
    beta = 0.5
    prec = 0.5 * np.linalg.inv(cov) + 0.5 * np.linalg.inv(base.cov)
    tcov = np.linalg.inv(prec)
    tmean = tcov @ (0.5 * np.linalg.inv(cov) @ mean + 0.5 * np.linalg.inv(base.cov) @ base.mean)
    rng = np.random.default_rng(5)
    n = 4000
    state = init_state(rng.multivariate_normal(tmean, tcov, size=n), density)
    scale = np.sqrt(np.diag(tcov))
    accept = []
    for _ in range(10):
        if kernel == "hmc":
            state, info = hmc_step(state, beta, density, 0.6, 4, rng, scale=scale)
        else:
            state, info = rwm_step(state, np.full(n, beta), density, 0.8, rng, scale=scale)
        accept.append(info.acceptance.mean())
    assert 0.2 < np.mean(accept) < 1.0
    sd = np.sqrt(np.diag(tcov))
    z_mean = (state.x.mean(0) - tmean) / (sd / np.sqrt(n))
    assert np.all(np.abs(z_mean) < 4.5)
    rel_var = state.x.var(0) / np.diag(tcov) - 1.0
    assert np.all(np.abs(rel_var) < 4.5 * np.sqrt(2.0 / n))


@pytest.fixture(scope="module")
def advi_regression():
    case = conjugate_regression(d=5)
    base = pme.fit_base(model=case.model, random_seed=0)
    return case, base, batched_log_densities(case.model, base)


def test_forward_ais_conjugate_regression(advi_regression):
    case, base, density = advi_regression
    betas = sigmoidal_schedule(100)
    works, info = run_forward_ais(density, base, betas, 200, np.random.default_rng(6))
    w = np.exp(-works - np.max(-works))
    se = np.std(w) / np.mean(w) / np.sqrt(len(w))
    estimate = _logmeanexp(-works)
    assert_log_z((estimate, se), case.log_z, abs_tol=0.1, label="forward AIS engine")
    se_works = np.std(works) / np.sqrt(len(works))
    assert_below(-np.mean(works), case.log_z, se_works, label="mean forward work (Jensen)")
    assert np.all(np.isfinite(info.acceptance[1:-1]))
    assert np.nanmean(info.acceptance) > 0.3
    assert info.ess.shape == betas.shape and info.ess[-1] > 50


def test_reverse_ais_from_exact_posterior(advi_regression):
    case, base, density = advi_regression
    mean, cov = _exact_posterior(case)
    rng = np.random.default_rng(7)
    betas = sigmoidal_schedule(100)
    _, fwd = run_forward_ais(density, base, betas, 200, rng)
    x0 = rng.multivariate_normal(mean, cov, size=200)
    kernel = KernelSettings(step_size=fwd.step_size, scale=fwd.scale)
    works_r, info = run_reverse_ais(density, betas, x0, rng, kernel)
    assert np.all(np.isfinite(info.acceptance[1:-1]))
    estimate = -_logmeanexp(works_r)
    w = np.exp(works_r - np.max(works_r))
    se = np.std(w) / np.mean(w) / np.sqrt(len(w))
    assert_log_z((estimate, se), case.log_z, abs_tol=0.1, label="reverse AIS engine")
    upper = -np.mean(works_r)
    se_works = np.std(works_r) / np.sqrt(len(works_r))
    assert_above(upper, case.log_z, se_works, slack=0.02, label="mean reverse work (Jensen)")


def test_reverse_single_stage_is_harmonic_mean(regression):
    """With K = 1 the reverse work is -(log f - log q) at the start: no kernel is applied."""
    case, mean, cov, base, density = regression
    x0 = np.random.default_rng(8).multivariate_normal(mean, cov, size=10)
    works_r, info = run_reverse_ais(density, [0.0, 1.0], x0, np.random.default_rng(0))
    log_f, log_q, _, _ = density(x0)
    np.testing.assert_allclose(works_r, -(log_f - log_q))
    np.testing.assert_array_equal(info.x, x0)


def test_adaptive_schedule_equal_thermodynamic_length():
    """sd(u) = 1 / (c + beta) has length log((c + beta) / c): equal parts are geometric."""
    from pymc_evidence.engines import adaptive_schedule

    c, n = 0.01, 8
    pilot = np.linspace(0.0, 1.0, 4001)
    new = adaptive_schedule(pilot, 1.0 / (c + pilot) ** 2, n)
    exact = c * ((1.0 + 1.0 / c) ** (np.arange(n + 1) / n) - 1.0)
    np.testing.assert_allclose(new, exact, rtol=2e-3, atol=1e-4)


def test_adaptive_schedule_needs_finite_variances():
    from pymc_evidence.engines import adaptive_schedule

    with pytest.raises(ValueError, match="no finite path variance"):
        adaptive_schedule(np.linspace(0, 1, 5), np.full(5, np.nan), 4)


def test_steps_and_runs_return_what_they_met():
    """Non-finite points and diverging trajectories flow as values: from each step's
    ``info.counts`` to the run's record, with nothing counted on the shared density."""
    with pm.Model() as model:
        pm.Normal("mu", 0.0, 1.0)
    base = GaussianBase(np.zeros(1), np.eye(1), log_zeta=0.0, kind="moments")
    density = batched_log_densities(model, base)
    state = init_state(np.array([[0.0], [1e200], [1.0], [2.0]]), density)  # 1e200**2: -inf
    assert Counts.of_state(state) == Counts(n_calls=1, n_points=4, n_nonfinite=1)
    rng = np.random.default_rng(0)
    state = init_state(rng.normal(size=(50, 1)), density)
    _, info = hmc_step(state, 1.0, density, 50.0, 3, rng)  # a step far too large
    assert info.counts.n_points == 150 and info.counts.n_trajectories == 50
    assert info.counts.n_calls == 3
    assert info.counts.n_diverging == int(np.sum(info.diverging)) > 0
    _, run = run_forward_ais(density, base, sigmoidal_schedule(5), 50, rng)
    assert run.counts.n_points == 50 + 4 * 50 * 10  # the start, four stages of 10 leapfrogs
    assert run.counts.n_trajectories == 4 * 50 and run.n_density_calls == 1 + 4 * 10
    assert not {"n_calls", "n_diverging", "counts"} & set(dir(density))


@pytest.mark.parametrize("kind", ["full", "mixture"])
def test_closed_form_base_matches_its_graph(halfnormal_model, kind):
    """Gaussian and mixture bases give ``log q`` and its gradient in closed form; they equal
    what the base's own graph computes (the path taken by bases without ``logp_grad``)."""
    from pymc_evidence.base import MixtureBase
    from pymc_evidence.engines.batched import _compile

    rng = np.random.default_rng(1)
    a = rng.normal(size=(3, 3))
    gauss = GaussianBase(np.ones(3), a @ a.T + np.eye(3), log_zeta=0.0, kind="moments")
    other = GaussianBase(-np.ones(3), 0.5 * np.eye(3), log_zeta=0.0, kind="moments")
    base = gauss
    if kind == "mixture":
        base = MixtureBase.from_components([gauss, other], np.log([0.3, 0.7]), log_zeta=0.0)
    space = model_space(halfnormal_model)
    _, graph_fn = _compile(halfnormal_model, base, space, base.make_shared(), True)
    x = rng.normal(size=(5, 3))
    closed = batched_log_densities(halfnormal_model, base)(x)
    for got, want in zip(closed, graph_fn(x), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-10)
