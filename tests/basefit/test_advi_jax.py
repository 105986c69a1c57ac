"""ADVI in jitted blocks (:mod:`pymc_evidence.basefit.advi_jax`) against its numpy steps.

The blocks must give the fits the numpy steps give from the same generator: the same means
and Cholesky factors, the same noisy ELBO trace, the same early stop, and the same fits
dropped with the same message where their draws meet non-finite densities.
"""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import pymc_evidence.basefit.advi as advi
from pymc_evidence.runtime import model_space
from pymc_evidence.runtime.batched_logp import batched_logp

pytest.importorskip("jax")


def _model():
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0, shape=2)
        s = pm.HalfNormal("s", 1.0)
        pm.Normal("y", mu[0] - mu[1], s, observed=[0.3, -0.2, 0.5, 1.1, 0.4])
    return model


def _walled():
    """Log density -inf beyond ``mu > 1``: fits started out there meet only non-finite
    values and are dropped; the others go on."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Potential("wall", pt.switch(mu > 1.0, -np.inf, 0.0))
        pm.Normal("y", mu, 1.0, observed=[0.2, -0.4])
    return model


def _both(model, starts, fullrank, monkeypatch, **kwargs):
    density = batched_logp(model_space(model), backend="jax")
    assert density.jax_rows is not None
    out = []
    for min_steps in (10**9, advi.FUSED_MIN_STEPS):  # numpy steps, then jitted blocks
        monkeypatch.setattr(advi, "FUSED_MIN_STEPS", min_steps)
        rng = np.random.default_rng(5)
        out.append((advi.run_advi(density, starts, fullrank=fullrank, rng=rng, **kwargs), rng))
    return out


@pytest.mark.parametrize("fullrank", [False, True])
def test_blocks_match_numpy_steps(fullrank, monkeypatch):
    starts = np.random.default_rng(0).normal(size=(4, 3))
    (plain, rng_plain), (fused, rng_fused) = _both(_model(), starts, fullrank, monkeypatch)
    assert plain.n_steps == fused.n_steps < 5000  # stopped early, at the same step
    np.testing.assert_allclose(fused.means, plain.means, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fused.chols, plain.chols, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fused.traces, plain.traces, rtol=1e-9, atol=1e-9)
    assert fused.errors == plain.errors == [None] * 4
    assert rng_plain.random() == rng_fused.random()  # the same draws were taken


def test_dropped_fits_match(monkeypatch):
    starts = np.array([[0.0], [3.0], [-0.5]])  # the second starts beyond the wall
    (plain, _), (fused, _) = _both(_walled(), starts, False, monkeypatch, n_steps=1200)
    assert plain.errors[1] is not None and "non-finite" in plain.errors[1]
    assert fused.errors == plain.errors
    keep = [0, 2]
    np.testing.assert_allclose(fused.means[keep], plain.means[keep], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fused.traces, plain.traces, rtol=1e-9, atol=1e-9)


def test_short_fits_and_default_backend_stay_numpy():
    model = _model()
    run = advi._Run.start(np.zeros((2, 3)), False, 0.1, 0.05, 400, True)
    on_jax = batched_logp(model_space(model), backend="jax")
    assert advi._jax_block(on_jax, run, 0.05) is None
    run = advi._Run.start(np.zeros((2, 3)), False, 0.1, 0.05, 5000, True)
    default = batched_logp(model_space(model), backend="default")
    assert advi._jax_block(default, run, 0.05) is None
