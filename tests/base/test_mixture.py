"""The mixture-of-Gaussians base and the one base interface every consumer uses.

The mixture's density is checked against scipy and by numerical integration, its sampler
against its own density (KS tests, moments), and each consumer of a base (batched particle
densities, the continuous-tempering transform, the tempered step methods, ``fit_base`` and
an end-to-end SMC run) against hand computations or exact log Z.
"""

import numpy as np
import pymc as pm
import pytest
from scipy import integrate, special, stats

import pymc_evidence as pme
from pymc_evidence.base import BaseDensity, FitStats, GaussianBase, MixtureBase, PriorBase
from pymc_evidence.base.gaussian import moment_match
from pymc_evidence.engines import batched_log_densities
from pymc_evidence.runtime import model_space
from pymc_evidence.steps.tempered import initial_potential, tempered_density
from pymc_evidence.testing import mixture_likelihood
from pymc_evidence.transforms import ct_spec, set_base
from tests._accuracy import assert_below, assert_log_z


def random_chols(rng, k, d):
    a = rng.normal(size=(k, d, d))
    return np.linalg.cholesky(a @ np.swapaxes(a, 1, 2) / d + 0.3 * np.eye(d))


def random_mixture(k, d, seed, **kwargs):
    rng = np.random.default_rng(seed)
    return MixtureBase(
        log_weights=rng.normal(size=k),
        means=2.0 * rng.normal(size=(k, d)),
        chols=random_chols(rng, k, d),
        log_zeta=kwargs.pop("log_zeta", 0.0),
        **kwargs,
    )


def scipy_logpdf(base, x):
    x = np.atleast_2d(x)
    terms = [
        lw + stats.multivariate_normal(m, c @ c.T).logpdf(x).reshape(len(x))
        for lw, m, c in zip(base.log_weights, base.means, base.chols, strict=True)
    ]
    return special.logsumexp(terms, axis=0)


def mixture_cdf_1d(weights, means, sds):
    parts = list(zip(weights, means, sds, strict=True))
    return lambda x: sum(w * stats.norm.cdf(x, m, s) for w, m, s in parts)


# ------------------------------------------------------------------------------------------
# The mixture itself
def test_construction_normalizes_and_validates():
    base = MixtureBase(np.log([2.0, 6.0]), np.zeros((2, 1)), np.ones((2, 1, 1)), log_zeta=1.0)
    np.testing.assert_allclose(base.weights, [0.25, 0.75])
    assert base.kind == "mixture" and base.n_components == 2 and base.ndim == 1
    assert base.with_values(log_zeta=-1.0).log_zeta == -1.0 and base.log_zeta == 1.0
    with pytest.raises(ValueError, match="components"):
        MixtureBase(np.zeros(3), np.zeros((2, 1)), np.ones((2, 1, 1)), log_zeta=0.0)
    with pytest.raises(ValueError, match="positive diagonal"):
        MixtureBase(np.zeros(2), np.zeros((2, 1)), -np.ones((2, 1, 1)), log_zeta=0.0)
    with pytest.raises(ValueError, match="non-finite"):
        MixtureBase(np.array([0.0, np.nan]), np.zeros((2, 1)), np.ones((2, 1, 1)), log_zeta=0.0)


def test_every_base_implements_the_interface():
    with pm.Model() as model:
        pm.Normal("mu", shape=2)
    bases = [
        GaussianBase(np.zeros(2), np.eye(2), 0.0, "moments"),
        random_mixture(3, 2, seed=0),
        PriorBase.for_model(model),
    ]
    rng = np.random.default_rng(0)
    for base in bases:
        assert isinstance(base, BaseDensity)
        x = base.sample(5, rng)
        mean, cov = base.moments()
        assert x.shape == (5, 2) and base.logp(x).shape == (5,)
        assert mean.shape == (2,) and cov.shape == (2, 2) and base.scale.shape == (2,)
        assert base.ndim == 2 and isinstance(base.kind, str) and isinstance(base.stats, FitStats)
        assert type(base.with_values(log_zeta=3.0)) is type(base)
        shared = base.make_shared()
        assert float(shared["log_zeta"].get_value()) == base.log_zeta
        base.with_values(log_zeta=3.0).assign(shared)
        assert float(shared["log_zeta"].get_value()) == 3.0


def test_logp_matches_scipy_and_components():
    base = random_mixture(3, 4, seed=1)
    x = np.random.default_rng(2).normal(size=(9, 4)) * 3
    np.testing.assert_allclose(base.logp(x), scipy_logpdf(base, x), rtol=1e-10)
    comps = base.components()
    by_parts = special.logsumexp(
        [lw + c.logp(x) for lw, c in zip(base.log_weights, comps, strict=True)], axis=0
    )
    np.testing.assert_allclose(base.logp(x), by_parts, rtol=1e-12)
    resp = base.responsibilities(x)
    assert resp.shape == (9, 3)
    np.testing.assert_allclose(resp.sum(axis=1), 1.0)


def test_logp_is_normalized_1d():
    base = MixtureBase(
        np.log([0.2, 0.5, 0.3]),
        np.array([[-3.0], [0.5], [4.0]]),
        np.array([0.5, 1.0, 2.0]).reshape(3, 1, 1),
        log_zeta=0.0,
    )
    total, err = integrate.quad(lambda t: np.exp(base.logp([[t]])[0]), -30, 30, limit=200)
    assert total == pytest.approx(1.0, abs=1e-8)


def test_logp_is_normalized_2d():
    base = random_mixture(3, 2, seed=3)
    grid = np.linspace(-16.0, 16.0, 641)
    xx, yy = np.meshgrid(grid, grid, indexing="ij")
    dens = np.exp(base.logp(np.column_stack([xx.ravel(), yy.ravel()]))).reshape(xx.shape)
    total = integrate.trapezoid(integrate.trapezoid(dens, grid, axis=1), grid)
    assert total == pytest.approx(1.0, abs=1e-6)


def test_sample_matches_logp_1d_ks():
    w, m, s = np.array([0.2, 0.5, 0.3]), np.array([-3.0, 0.5, 4.0]), np.array([0.5, 1.0, 2.0])
    base = MixtureBase(np.log(w), m[:, None], s.reshape(3, 1, 1), log_zeta=0.0)
    x = base.sample(20_000, np.random.default_rng(4))
    assert stats.kstest(x[:, 0], mixture_cdf_1d(w, m, s)).pvalue > 1e-3
    # and the KS test has power: a wrong weight is rejected
    assert stats.kstest(x[:, 0], mixture_cdf_1d([0.3, 0.4, 0.3], m, s)).pvalue < 1e-6


def test_sample_matches_logp_3d():
    base = random_mixture(3, 3, seed=5)
    n = 40_000
    x = base.sample(n, np.random.default_rng(6))
    mean, cov = base.moments()
    se = np.sqrt(np.diag(cov) / n)
    np.testing.assert_array_less(np.abs(x.mean(axis=0) - mean), 4.5 * se)
    np.testing.assert_allclose(np.cov(x.T), cov, atol=0.04 * np.max(np.diag(cov)))
    # a random projection has the right (one-dimensional mixture) distribution
    v = np.array([0.3, -0.8, 0.5])
    covs = np.einsum("kij,klj->kil", base.chols, base.chols)
    sds = np.sqrt(np.einsum("i,kij,j->k", v, covs, v))
    assert stats.kstest(x @ v, mixture_cdf_1d(base.weights, base.means @ v, sds)).pvalue > 1e-3
    # same seed, same draws
    np.testing.assert_array_equal(
        base.sample(10, np.random.default_rng(7)), base.sample(10, np.random.default_rng(7))
    )


def test_moments_are_moment_matched():
    base = random_mixture(4, 3, seed=8)
    covs = np.einsum("kij,klj->kil", base.chols, base.chols)
    mean, cov = moment_match(base.log_weights, base.means, covs)
    got_mean, got_cov = base.moments()
    np.testing.assert_allclose(got_mean, mean, rtol=1e-12)
    np.testing.assert_allclose(got_cov, cov, rtol=1e-12)
    np.testing.assert_allclose(base.scale, np.sqrt(np.diag(cov)), rtol=1e-12)


# ------------------------------------------------------------------------------------------
# Consumers: batched densities, the CT transform, the tempered steps
@pytest.fixture(scope="module")
def small_model():
    """s ~ HalfNormal(2) (log-transformed), mu ~ N(0, 1) (2,), y ~ N(mu0 + mu1, s)."""
    with pm.Model() as model:
        s = pm.HalfNormal("s", np.float64(2.0))
        mu = pm.Normal("mu", np.float64(0.0), np.float64(1.0), shape=2)
        pm.Normal("y", mu[0] + mu[1], s, observed=np.array([0.3, -1.2, 2.0]))
    return model


def log_f_small(x):
    s_log, mu = x[0], x[1:]
    s = np.exp(s_log)
    return (
        stats.halfnorm.logpdf(s, scale=2.0)
        + s_log
        + stats.norm.logpdf(mu).sum()
        + stats.norm.logpdf([0.3, -1.2, 2.0], mu.sum(), s).sum()
    )


def layout_mixture(model, k, seed, log_zeta=0.0):
    space = model_space(model)
    return random_mixture(
        k, space.ndim, seed, log_zeta=log_zeta, names=space.names, sizes=space.sizes
    )


def test_batched_density_of_a_mixture(small_model):
    base = layout_mixture(small_model, 3, seed=9)
    density = batched_log_densities(small_model, base)
    assert density.vectorized
    x = np.random.default_rng(10).normal(size=(6, 3))
    log_f, log_q, grad_f, grad_q = density(x)
    np.testing.assert_allclose(log_q, scipy_logpdf(base, x), rtol=1e-10)
    np.testing.assert_allclose(log_f, [log_f_small(row) for row in x], rtol=1e-10)
    eps = 1e-6
    numeric = np.stack(
        [(base.logp(x + eps * e) - base.logp(x - eps * e)) / (2 * eps) for e in np.eye(3)], axis=1
    )
    np.testing.assert_allclose(grad_q, numeric, rtol=1e-5, atol=1e-7)


def test_ct_model_of_a_mixture_has_the_right_potential(small_model):
    base = layout_mixture(small_model, 3, seed=11, log_zeta=-4.0)
    ext = pme.continuous_tempering(base, model=small_model)
    logp = ext.compile_logp()
    outs = ext.replace_rvs_by_values([ext["ct_delta"], ext["ct_log_zeta"]])
    det = ext.compile_fn(outs, inputs=ext.value_vars, on_unused_input="ignore")
    for x, u in [(np.array([0.2, -0.5, 1.1]), 0.7), (np.array([-1.0, 2.0, 0.3]), -1.5)]:
        point = {"s_log__": x[0], "mu": x[1:], "ct_u": u}
        beta = special.expit(u)
        log_q = scipy_logpdf(base, x[None])[0]
        log_u = np.log(special.expit(u)) + np.log(special.expit(-u))
        expected = beta * (log_f_small(x) - (-4.0)) + (1 - beta) * log_q + log_u
        assert logp(point) == pytest.approx(expected, rel=1e-9)
        delta, log_zeta = det(point)
        assert delta == pytest.approx(-4.0 + log_q - log_f_small(x), rel=1e-9)
        assert log_zeta == pytest.approx(-4.0)


def test_set_base_needs_the_same_structure(small_model):
    base = layout_mixture(small_model, 3, seed=12)
    ext = pme.continuous_tempering(base, model=small_model)
    logp = ext.compile_logp()
    point = {"s_log__": 0.1, "mu": np.array([0.4, -0.2]), "ct_u": 0.0}
    before = logp(point)
    other = layout_mixture(small_model, 3, seed=13, log_zeta=1.0)
    set_base(ext, other)  # same K: values move, the compiled function sees them
    x = np.array([0.1, 0.4, -0.2])
    expected = 0.5 * (log_f_small(x) - 1.0) + 0.5 * scipy_logpdf(other, x[None])[0]
    assert logp(point) == pytest.approx(expected + 2 * np.log(0.5), rel=1e-9)
    assert logp(point) != pytest.approx(before) and ct_spec(ext).base is other
    with pytest.raises(ValueError, match="structure"):
        set_base(ext, layout_mixture(small_model, 2, seed=14))
    space = model_space(small_model)
    gauss = GaussianBase(
        np.zeros(3), np.eye(3), 0.0, "moments", names=space.names, sizes=space.sizes
    )
    with pytest.raises(TypeError, match="MixtureBase"):
        set_base(ext, gauss)
    assert ct_spec(ext).base is other  # a refused base changes nothing
    assert logp(point) == pytest.approx(expected + 2 * np.log(0.5), rel=1e-9)


def test_tempered_steps_take_a_mixture(small_model):
    base = layout_mixture(small_model, 2, seed=15, log_zeta=-3.0)
    density = tempered_density(small_model, base)
    x = np.array([0.3, -0.1, 0.8])
    expected = log_f_small(x) - scipy_logpdf(base, x[None])[0]
    assert float(density.log_ratio(x)) == pytest.approx(expected, rel=1e-9)
    other = layout_mixture(small_model, 2, seed=16)
    density.set_base(other)
    expected = log_f_small(x) - scipy_logpdf(other, x[None])[0]
    assert float(density.log_ratio(x)) == pytest.approx(expected, rel=1e-9)
    with pytest.raises(ValueError, match="structure"):
        density.set_base(layout_mixture(small_model, 3, seed=17))
    potential = initial_potential(base, {})["potential"]
    assert potential is not None
    with small_model:
        step = pme.GibbsContinuousTempering(base=base)
        idata = pm.sample(
            draws=30,
            tune=30,
            chains=1,
            step=step,
            random_seed=1,
            progressbar=False,
            compute_convergence_checks=False,
        )
    assert np.all(np.isfinite(idata.sample_stats["ct_delta"].values))


# ------------------------------------------------------------------------------------------
# fit_base(combine=...) and an end-to-end evidence run on a bimodal posterior
@pytest.fixture(scope="module")
def bimodal():
    return mixture_likelihood(d=2)


@pytest.fixture(scope="module")
def mixture_fit(bimodal):
    """Seed 2 finds both modes with 4 restarts (see test_base.test_restarts_merge_both_modes)."""
    with bimodal.model:
        return pme.fit_base("advi", restarts=4, n_steps=1000, random_seed=2, combine="mixture")


def exact_mode_weights(case):
    y, a = case.data["y"], case.data["offset"]
    s0, s, w = case.data["prior_sigma"], case.data["noise_sigma"], case.data["weight"]
    sd = np.sqrt(s0**2 + s**2)
    log_terms = np.array(
        [
            np.log(w) + stats.norm.logpdf(y, a, sd).sum(),
            np.log1p(-w) + stats.norm.logpdf(y, -a, sd).sum(),
        ]
    )
    return np.exp(log_terms - special.logsumexp(log_terms))


def test_fit_base_mixture_keeps_the_modes(bimodal, mixture_fit):
    base = mixture_fit
    assert isinstance(base, MixtureBase) and base.kind == "mixture"
    assert base.n_components == 2 and base.names == ("x",) and base.sizes == (2,)
    # weights exp(log_zeta_k) are the modes' posterior masses
    np.testing.assert_allclose(
        np.sort(base.weights), np.sort(exact_mode_weights(bimodal)), atol=0.03
    )
    # importance sampling from the mixture itself: log zeta close to log Z, ESS near n
    assert abs(base.log_zeta - bimodal.log_z) < 0.03
    assert base.stats.is_ess > 0.8 * 1000
    assert_below(base.elbo, bimodal.log_z, base.elbo_se, label="ELBO below log Z")
    # the fits' evidence estimates, to which the weights are proportional
    log_zeta_sum = base.stats.log_zeta_sum
    np.testing.assert_allclose(base.component_log_zeta, base.log_weights + log_zeta_sum)


def test_fit_base_combine_checks(bimodal):
    with bimodal.model, pytest.raises(ValueError, match="combine"):
        pme.fit_base("advi", combine="average")


def test_smc_with_a_mixture_base(bimodal, mixture_fit):
    idata = pme.sample_evidence(
        model=bimodal.model, method="smc", base=mixture_fit, random_seed=1, progressbar=False
    )
    assert_log_z(pme.log_evidence(idata), bimodal.log_z, abs_tol=0.15, label="smc, mixture base")
