"""The model's raveled unconstrained space: layout, transforms and Jacobians, the batched
log density, the initial point, and the no-JIT compilation."""

import numpy as np
import pymc as pm
import pytest
from scipy import special, stats

from pymc_evidence.runtime import model_space
from pymc_evidence.runtime.batched_logp import batched_logp


# ------------------------------------------------------------------------------------------
# ModelSpace
@pytest.fixture(scope="module")
def constrained_model():
    with pm.Model() as model:
        s = pm.HalfNormal("s", np.float64(2.0))
        p = pm.Beta("p", np.float64(2.0), np.float64(3.0), shape=2)
        mu = pm.Normal("mu", np.float64(0.0), np.float64(1.0), shape=(2, 2))
        pm.Normal("y", mu.sum() * p.sum(), s, observed=np.array([0.3, 1.2]))
    return model


def test_space_layout(constrained_model):
    space = model_space(constrained_model)
    assert space is model_space(constrained_model)  # cached
    assert space.names == ("s_log__", "p_logodds__", "mu")
    assert space.sizes == (1, 2, 4) and space.ndim == 7
    assert space.shapes == ((), (2,), (2, 2))


def test_unconstrain_is_log_and_logit(constrained_model):
    space = model_space(constrained_model)
    rng = np.random.default_rng(0)
    s = rng.uniform(0.1, 3.0, size=(2, 5))
    p = rng.uniform(0.05, 0.95, size=(2, 5, 2))
    mu = rng.normal(size=(2, 5, 2, 2))
    x = space.unconstrain({"s": s, "p": p, "mu": mu})
    assert x.shape == (2, 5, 7)
    np.testing.assert_allclose(x[..., 0], np.log(s), rtol=1e-12)
    np.testing.assert_allclose(x[..., 1:3], special.logit(p), rtol=1e-10)
    np.testing.assert_allclose(x[..., 3:], mu.reshape(2, 5, 4), rtol=1e-12)
    # and back
    back = space.constrain(x[1, 3])
    assert back["s"] == pytest.approx(s[1, 3], rel=1e-12)
    np.testing.assert_allclose(back["p"], p[1, 3], rtol=1e-10)
    np.testing.assert_allclose(back["mu"], mu[1, 3], rtol=1e-12)
    # ravel / unravel of value points
    point = space.unravel(x[0, 0])
    assert set(point) == set(space.names) and point["mu"].shape == (2, 2)
    np.testing.assert_array_equal(space.ravel(point), x[0, 0])


def test_space_logp_includes_jacobians(constrained_model):
    space = model_space(constrained_model)
    x = np.array([np.log(1.3), special.logit(0.3), special.logit(0.6), 0.1, -0.2, 0.5, 0.3])
    s, p, mu = 1.3, np.array([0.3, 0.6]), x[3:]
    expected = (
        stats.halfnorm.logpdf(s, scale=2.0)
        + np.log(s)
        + stats.beta.logpdf(p, 2, 3).sum()
        + np.log(p * (1 - p)).sum()
        + stats.norm.logpdf(mu).sum()
        + stats.norm.logpdf([0.3, 1.2], mu.sum() * p.sum(), s).sum()
    )
    logp, grad = space.logp_dlogp(x)
    assert logp == pytest.approx(expected, rel=1e-10)
    # gradient by central differences
    eps = 1e-6
    numeric = [
        (space.logp_dlogp(x + eps * e)[0] - space.logp_dlogp(x - eps * e)[0]) / (2 * eps)
        for e in np.eye(7)
    ]
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(space.logp_many(np.stack([x, x])), [expected, expected], rtol=1e-10)


# ------------------------------------------------------------------------------------------
# The batched log density: every row in one call, a failing row alone rejected
def test_batched_logp_matches_the_single_point_function(constrained_model):
    space = model_space(constrained_model)
    x = np.random.default_rng(5).normal(size=(6, space.ndim))
    density = batched_logp(space)
    assert density.vectorized and density is batched_logp(space)  # compiled once, cached
    logp, grad = density(x)
    assert logp.shape == (6,) and grad.shape == (6, space.ndim)
    for row, lp, g in zip(x, logp, grad, strict=True):
        ref_lp, ref_g = space.logp_dlogp(row)
        assert lp == pytest.approx(ref_lp, rel=1e-10)
        np.testing.assert_allclose(g, ref_g, rtol=1e-8, atol=1e-10)
    loop_logp, loop_grad = batched_logp(space, vectorize=False)(x)
    assert not batched_logp(space, vectorize=False).vectorized
    np.testing.assert_allclose(loop_logp, logp, rtol=1e-10)
    np.testing.assert_allclose(loop_grad, grad, rtol=1e-8, atol=1e-10)


def test_batched_logp_rejects_rows_one_by_one():
    """A parameter check (sigma > 0) failing at one row gives -inf at that row only: a
    vectorized check would reject the whole batch."""
    with pm.Model() as model:
        s = pm.Normal("s", 1.0, 1.0)
        pm.Normal("y", 0.0, s, observed=np.array([0.3, 0.5]))
    logp, grad = batched_logp(model_space(model))(np.array([[1.0], [-1.0], [2.0]]))
    assert np.isneginf(logp[1]) and np.all(np.isfinite(logp[[0, 2]]))
    expected = stats.norm.logpdf([1.0, 2.0], 1.0, 1.0) + [
        stats.norm.logpdf([0.3, 0.5], 0.0, s).sum() for s in (1.0, 2.0)
    ]
    np.testing.assert_allclose(logp[[0, 2]], expected, rtol=1e-10)
    assert np.all(np.isfinite(grad[[0, 2]]))


def test_initial_point_function_compiled_once_and_follows_data_and_initvals():
    """The space keeps the compiled initial-point function: the same function across calls,
    while ``pm.set_data`` and a new initial value are still seen."""
    with pm.Model() as model:
        level = pm.Data("level", 1.0)
        x = pm.Normal("x", mu=level)
    space = model_space(model)
    assert space.initial_x().tolist() == [1.0]
    fn = space._initial_point[1]
    pm.set_data({"level": 3.0}, model=model)
    assert space.initial_x().tolist() == [3.0] and space._initial_point[1] is fn
    model.set_initval(x, 5.0)
    assert space.initial_x().tolist() == [5.0] and space._initial_point[1] is not fn


def test_initial_point_is_pymcs_without_compiling_c(monkeypatch):
    """The space's initial point is ``model.initial_point()`` (transformed values, a user's
    initial value included) on a model whose PyMC initial-point function compiles C (the
    ``Scan`` behind ``LKJCholeskyCov``: 3-7 s of a first call), built without any C."""
    from pytensor.link.c.basic import CLinker

    with pm.Model() as model:
        sd = pm.Exponential.dist(1.0, shape=3)
        pm.LKJCholeskyCov("chol", n=3, eta=2.0, sd_dist=sd, compute_corr=False)
        pm.HalfNormal("s", initval=2.5)
        pm.Uniform("u", -1.0, 3.0, shape=2)
    expected = model.initial_point()

    def no_c(*args, **kwargs):
        raise AssertionError("the initial point compiled C")

    monkeypatch.setattr(CLinker, "make_thunk", no_c)
    point = model_space(model).initial_point()
    assert list(point) == list(expected)
    for name, value in expected.items():
        np.testing.assert_array_equal(point[name], value)
    assert point["s_log__"] == pytest.approx(np.log(2.5))


def test_no_jit_clip_runs_as_numpy_with_the_values_of_clip():
    """``compile_fn(jit=False)`` rewrites ``clip`` (which PyTensor's Python linker runs
    element by element) to switches: the values of ``clip``, NaN and ``lo > hi`` included."""
    import pytensor.tensor as pt

    from pymc_evidence.runtime._compile import compile_fn

    x, lo, hi = pt.vector("x"), pt.scalar("lo"), pt.scalar("hi")
    fn = compile_fn([x, lo, hi], pt.clip(x, lo, hi), jit=False)
    assert "Clip" not in str([node.op for node in fn.maker.fgraph.apply_nodes])
    values = np.array([-1.0, 0.5, 3.0, np.nan, np.inf, -np.inf])
    for a, b in [(0.0, 1.0), (2.0, 1.0), (np.nan, 1.0)]:
        expected = [a if v < a else (b if v > b else v) for v in values]  # Clip.impl's rule
        np.testing.assert_array_equal(fn(values, a, b), expected)
