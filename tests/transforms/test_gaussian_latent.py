"""Gaussian latents of a Gaussian likelihood integrated out (transforms.gaussian_latent).

Truths are computed here with numpy/scipy alone: the marginal ``N(y; 0, A S A^T + D)`` of
each model, integrated over its remaining hyperparameter by 1-D quadrature.
"""

import warnings

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy import integrate, stats

import pymc_evidence as pme
from pymc_evidence.transforms.gaussian_latent import integrate_gaussian_latent
from tests._accuracy import assert_estimate, assert_log_z

X_GP = np.linspace(0.0, 4.0, 12)
Y_GP = np.sin(1.3 * X_GP) + np.random.default_rng(3).normal(0.0, 0.3, X_GP.size)
JITTER = 1e-6  # what pm.gp.Latent adds to the covariance before its Cholesky factor


def _gp_model():
    """``pm.gp.Latent`` (ExpQuad, lengthscale 1) with amplitude ``~ HalfNormal(1)``."""
    with pm.Model() as model:
        amp = pm.HalfNormal("amp", 1.0)
        gp = pm.gp.Latent(cov_func=amp**2 * pm.gp.cov.ExpQuad(1, ls=1.0))
        f = gp.prior("f", X=X_GP[:, None])
        pm.Normal("y", f, 0.3, observed=Y_GP)
    return model


def _gp_log_z():
    k0 = np.exp(-0.5 * (X_GP[:, None] - X_GP[None, :]) ** 2)

    def integrand(amp):
        cov = amp**2 * k0 + (JITTER + 0.09) * np.eye(X_GP.size)
        log_lik = stats.multivariate_normal(np.zeros(X_GP.size), cov).logpdf(Y_GP)
        return np.exp(log_lik + stats.halfnorm.logpdf(amp) + 20.0)

    value, _ = integrate.quad(integrand, 0.0, 8.0, epsabs=0, epsrel=1e-11, limit=200)
    return np.log(value) - 20.0


@pytest.fixture(scope="module")
def gp():
    return _gp_model(), _gp_log_z()


def test_gp_latent_is_integrated_exactly(gp):
    model, log_z = gp
    out = integrate_gaussian_latent(model)
    assert out.names == ("f_rotated_",) and [v.name for v in out.model.free_RVs] == ["amp"]
    # the copy's density at amp, against the marginal written here
    k0 = np.exp(-0.5 * (X_GP[:, None] - X_GP[None, :]) ** 2)
    logp = out.model.compile_logp()
    for amp in (0.4, 1.3):
        cov = amp**2 * k0 + (JITTER + 0.09) * np.eye(X_GP.size)
        exact = stats.multivariate_normal(np.zeros(X_GP.size), cov).logpdf(Y_GP)
        exact += stats.halfnorm.logpdf(amp) + np.log(amp)  # the log transform's Jacobian
        assert logp({"amp_log__": np.log(amp)}) == pytest.approx(exact, abs=1e-8)


def test_gp_marginal_factors_the_kernel_once(gp):
    """``f = chol(K) v`` with ``v ~ N(0, 1)``: the marginal's covariance is ``K + σ² I``
    itself, and the likelihood's term at ``v = 0`` (cancelled by the potential) folds away:
    the compiled density and gradient factor ``K + σ² I`` only, never ``K`` alone."""
    import pytensor
    from pytensor.graph.basic import Constant
    from pytensor.graph.traversal import ancestors

    from pymc_evidence.runtime.batched_logp import _point_graph
    from pymc_evidence.runtime.runtime import model_space

    out = integrate_gaussian_latent(gp[0])
    flat, graphs = _point_graph(model_space(out.model))
    fn = pytensor.function([flat], graphs)
    factored = [n.inputs[0] for n in fn.maker.fgraph.apply_nodes if "Cholesky" in str(n.op)]
    assert factored
    for matrix in factored:  # the noise variance 0.09 (+ jitter) is part of every one
        constants = [c.data for c in ancestors([matrix]) if isinstance(c, Constant)]
        assert any(np.any(np.abs(np.asarray(c) - 0.09) < 1e-5) for c in constants)


def test_gp_latent_evidence_and_posterior(gp):
    model, log_z = gp
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pme.sample_evidence(model, random_seed=1, progressbar=False)
    assert_log_z(pme.log_evidence(idata), log_z, abs_tol=0.03, se_max=0.03, label="gp.Latent")
    post = idata["posterior"]
    assert post["f_rotated_"].shape[-1] == X_GP.size and post["f"].shape[-1] == X_GP.size
    # f is recomputed from the drawn v: f = chol(amp^2 K0 + jitter I) v at every draw
    amp = post["amp"].values.ravel()
    v, f = (post[k].values.reshape(amp.size, -1) for k in ("f_rotated_", "f"))
    k0 = np.exp(-0.5 * (X_GP[:, None] - X_GP[None, :]) ** 2)
    for i in range(0, amp.size, 997):
        chol = np.linalg.cholesky(amp[i] ** 2 * k0 + JITTER * np.eye(X_GP.size))
        assert np.allclose(f[i], chol @ v[i], atol=1e-8)
    # and its posterior mean is the GP's, E[K (K + 0.09 I)^-1 y] over the amplitude's draws
    eye = np.eye(X_GP.size)
    cond = [(a**2 * k0 + JITTER * eye) @ np.linalg.solve(a**2 * k0 + (JITTER + 0.09) * eye, Y_GP)
            for a in amp[::10]]  # fmt: skip
    sd = f.std(axis=0) / np.sqrt(amp.size / 10.0)  # a conservative Monte Carlo error
    sd = sd + 2.5e-4  # and the conditional means' own spread over the thinned amplitudes
    assert_estimate(f.mean(axis=0), np.mean(cond, axis=0), sd, abs_tol=0.1, label="f mean")


def test_conditional_draws_match_the_exact_posterior():
    """Given the loadings' scale, ``v | y`` is Gaussian: the draws' mean and covariance
    against the closed form averaged over the draws of the scale (mean of the conditional
    means; covariance = mean conditional covariance + covariance of the conditional
    means)."""
    rng = np.random.default_rng(0)
    a = rng.normal(size=(5, 3))
    y = rng.normal(size=5)
    with pm.Model() as model:
        scale = pm.HalfNormal("scale", 1.0)
        v = pm.Normal("v", 0.5, 2.0, shape=3)
        pm.Normal("y", scale * pt.dot(a, v), 0.7, observed=y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pme.sample_evidence(model, random_seed=2, progressbar=False)
    post = idata["posterior"]
    draws = post["v"].values.reshape(-1, 3)
    means, covs = [], []
    for s in post["scale"].values.ravel():
        cov = np.linalg.inv(np.eye(3) / 4.0 + s**2 * a.T @ a / 0.49)
        means.append(cov @ (np.full(3, 0.5) / 4.0 + s * a.T @ y / 0.49))
        covs.append(cov)
    mean, means = np.mean(means, axis=0), np.array(means)
    total = np.mean(covs, axis=0) + np.cov(means.T)
    n = len(draws)
    assert_estimate(draws.mean(0), mean, np.sqrt(np.diag(total) / n), abs_tol=0.1)
    assert np.allclose(np.cov(draws.T), total, atol=0.1 * np.max(np.diag(total)))


def test_two_latents_together_through_woodbury():
    """Intercept and slopes whose loadings a free scale multiplies are integrated jointly
    (30 rows, 5 latents: Woodbury's 5 x 5 factor); with unit loadings the model is left
    as written (a regression: only its noise scale varies)."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(30, 4))
    y = x @ np.array([1.0, 0.0, -0.5, 0.3]) + 0.2 + rng.normal(0.0, 0.5, 30)

    def regression(scaled):
        with pm.Model() as model:
            alpha = pm.Normal("alpha", 0.0, 2.0)
            beta = pm.Normal("beta", 0.0, 1.0, shape=4)
            s = pm.HalfNormal("s", 1.0) if scaled else 1.0
            pm.Normal("y", s * (alpha + pt.dot(x, beta)), 0.5, observed=y)
        return model

    assert integrate_gaussian_latent(regression(False)) is None
    out = integrate_gaussian_latent(regression(True))
    assert out.names == ("alpha", "beta") and [v.name for v in out.model.free_RVs] == ["s"]
    logp = out.model.compile_logp()
    for s in (0.3, 0.8):
        cov = s**2 * (4.0 + x @ x.T) + 0.25 * np.eye(30)
        exact = stats.multivariate_normal(np.zeros(30), cov).logpdf(y)
        exact += stats.halfnorm.logpdf(s) + np.log(s)
        # Woodbury's difference of two quadratic forms loses ~1e-6 here (below the 3.5e-6
        # floor that SE_FLOOR puts on any se of this log Z)
        assert logp({"s_log__": np.log(s)}) == pytest.approx(exact, abs=1e-5)


@pytest.mark.parametrize("kind", ["poisson", "nonlinear", "two_likelihoods", "fixed", "large"])
def test_not_integrated(kind):
    y = np.array([1.0, 0.0, 2.0])
    with pm.Model() as model:
        s = pm.HalfNormal("s", 1.0)
        v = pm.Normal("v", 0.0, 1.0, shape=3)
        if kind == "poisson":  # not a Normal likelihood
            pm.Poisson("y", pm.math.exp(s * v), observed=y)
        elif kind == "nonlinear":
            pm.Normal("y", v**2, s, observed=y)
        elif kind == "two_likelihoods":
            pm.Normal("y", v, s, observed=y)
            pm.Normal("y2", v.sum(), 1.0, observed=1.0)
        elif kind == "fixed":  # fixed loadings, a varying noise scale: left as written
            pm.Normal("y", v + 1.0, s, observed=y)
        else:  # 300 groups of one observation: a factor of order 300 per evaluation
            w = pm.Normal("w", 0.0, 1.0, shape=300)
            pm.Normal("z", s * w, 1.0, observed=np.zeros(300))
    assert integrate_gaussian_latent(model) is None
