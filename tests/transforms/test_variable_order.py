"""The extended model must read the base in the source model's variable order.

``clone_model`` can list value variables in another order than the source model (here:
three scalars with a log-transformed scale); the tempered density must not depend on that.
"""

import numpy as np
import pymc as pm

import pymc_evidence as pme
from pymc_evidence.base import GaussianBase
from pymc_evidence.runtime import model_space


def _model():
    rng = np.random.default_rng(0)
    x = rng.normal(size=40)
    y = 1.0 + 0.5 * x + rng.normal(scale=0.7, size=40)
    with pm.Model() as model:
        alpha = pm.Normal("alpha", 0.0, 10.0)
        beta = pm.Normal("beta", 0.0, 10.0)
        sigma = pm.HalfNormal("sigma", 5.0)
        pm.Normal("y", alpha + beta * x, sigma, observed=y)
    return model


def test_delta_matches_independent_computation_whatever_the_clone_order():
    model = _model()
    space = model_space(model)
    mean = np.array([1.0, 0.5, np.log(0.7)])
    chol = np.diag([0.1, 0.2, 0.05])
    order = {name: i for i, name in enumerate(space.names)}
    perm = [order[n] for n in ("alpha", "beta", "sigma_log__")]
    base = GaussianBase(
        mean[np.argsort(perm)],
        chol,
        log_zeta=-50.0,
        kind="moments",
        names=space.names,
        sizes=space.sizes,
    )
    ext = pme.continuous_tempering(base, model=model)
    delta_fn = ext.compile_fn(
        ext["ct_delta"], inputs=[v for v in ext.value_vars if v.name != "ct_u"]
    )
    rng = np.random.default_rng(1)
    for x in base.sample(5, rng):
        point = space.unravel(x)
        expected = -50.0 + base.logp(x[None])[0] - space.logp_dlogp(x)[0]
        assert np.isclose(delta_fn(point), expected, rtol=0, atol=1e-8)
