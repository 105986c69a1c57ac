"""The particle methods' batched density on PyTensor's JAX backend (``backend="jax"``).

jax is in the ``test`` extra, so these tests run in CI on both stacks; the importorskip only
spares users who run the suite without the ``jax`` extra.
"""

import importlib.util
import warnings

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op

import pymc_evidence as pme
from pymc_evidence.compat import get_group
from pymc_evidence.methods._runs import n_threads, n_workers
from pymc_evidence.runtime import model_space, runtime_of
from pymc_evidence.runtime._compile import (
    BACKENDS,
    compile_rows,
    is_jax_rows,
    resolve_backend,
)
from pymc_evidence.runtime.batched_logp import batched_logp
from pymc_evidence.runtime.jax_rows import JAX_MAX_ROWS, jax_started
from pymc_evidence.testing import beta_bernoulli, conjugate_regression
from tests._accuracy import assert_estimate, assert_log_z

jax = pytest.importorskip("jax")


def _outside_support():
    """A model whose unconstrained space holds points outside a parameter's support: the
    noise scale ``s`` has a Normal prior, so rows with ``s <= 0`` have log density -inf."""
    with pm.Model() as model:
        s = pm.TruncatedNormal("s", 1.0, 0.5, lower=-5.0)  # its support reaches s < 0
        mu = pm.Normal("mu", 0.0, 1.0, shape=2)
        pm.Normal("y", mu.sum(), s, observed=[0.3, -0.2, 0.5])
    return model


def _correlated():
    """A multivariate normal with an LKJ Cholesky factor: batched, its Cholesky and
    triangular solves are ``Blockwise`` ops, which JAX runs by ``jax.vmap``."""
    sd = pm.Exponential.dist(1.0, shape=3)
    with pm.Model() as model:
        chol, _, _ = pm.LKJCholeskyCov("c", n=3, eta=2.0, sd_dist=sd, compute_corr=True)
        mu = pm.Normal("mu", 0.0, 1.0, shape=3)
        y = np.random.default_rng(0).normal(size=(10, 3))
        pm.MvNormal("y", mu, chol=chol, observed=y)
    return model


def _matrix_last():
    """A matrix-shaped variable last in the flat vector, indexed by a data array: its
    gradient reshapes the slice ``x[1:9]``, whose length PyTensor bounds by the vector's
    (``min(9, len(x))``) unless that length is static; jax cannot trace such a shape."""
    with pm.Model() as model:
        w = pm.Dirichlet("w", np.ones(2))
        theta = pm.Beta("theta", 1.0, 1.0, shape=(2, 4))
        p = w[0] * theta[np.array([0, 1, 1])] + w[1] * 0.5
        pm.Bernoulli("y", p=p, observed=np.array([[1, 0, 1, 1], [0, 0, 1, 0], [1, 1, 1, 0]]))
    return model


_MODELS = {
    "matrix_last": _matrix_last,
    "correlated": _correlated,
    "regression": lambda: conjugate_regression(d=3).model,
    "beta_bernoulli": lambda: beta_bernoulli(n=10, heads=3).model,  # logit-transformed p
    "outside_support": _outside_support,
}


@pytest.mark.parametrize(
    "name",
    [
        "regression",
        "beta_bernoulli",
        "outside_support",
        pytest.param("correlated", marks=pytest.mark.heavy),
        "matrix_last",
    ],  # fmt: skip
)
def test_batched_logp_matches_default_backend(name):
    space = model_space(_MODELS[name]())
    rows = np.random.default_rng(0).normal(0.0, 2.0, size=(37, space.ndim))
    default, on_jax = batched_logp(space, backend="default"), batched_logp(space, backend="jax")
    assert on_jax is not default and on_jax.backend == "jax" and on_jax.vectorized
    # "auto": JAX, but the default linker for a triangular solve under jax < 0.11 (a GP
    # marginal's batched calls of 512+ rows hung there; the correlated prior has one)
    import jax

    old_jax = tuple(int(p) for p in jax.__version__.split(".")[:2]) < (0, 11)
    auto = "default" if old_jax and name == "correlated" else "jax"
    assert default.backend == "default" and batched_logp(space).backend == auto
    logp, grad = default(rows)
    logp_jax, grad_jax = on_jax(rows)
    assert type(logp_jax) is np.ndarray and logp_jax.dtype == np.float64
    assert logp_jax.shape == (37,) and grad_jax.shape == (37, space.ndim)
    finite = np.isfinite(logp)
    np.testing.assert_array_equal(np.isfinite(logp_jax), finite)
    if name == "outside_support":
        assert 0 < finite.sum() < len(rows)  # rows with s < 0 are -inf, the others not
        assert np.all(logp_jax[~finite] == -np.inf)
    np.testing.assert_allclose(logp_jax[finite], logp[finite], rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(grad_jax[finite], grad[finite], rtol=1e-7, atol=1e-8)
    for n in (1, 8, 33) if name != "correlated" else ():  # padded to 32, 32, 64, cut back
        np.testing.assert_allclose(on_jax(rows[:n])[0], logp_jax[:n], rtol=1e-12)
    rows_fn = on_jax._fn
    assert rows_fn.max_rows == JAX_MAX_ROWS  # no accelerator here: long calls in chunks
    rows_fn.max_rows = 16  # 37 rows: chunks of 16, 16 and 5 (padded to 32)
    try:
        chunked = on_jax(rows)
    finally:
        rows_fn.max_rows = JAX_MAX_ROWS
    np.testing.assert_allclose(chunked[0], logp_jax, rtol=1e-9)  # XLA sums per shape
    np.testing.assert_allclose(chunked[1], grad_jax, rtol=1e-7)


def test_heavy_rows_compile_two_shapes_and_fit_the_budget():
    """A density over a large data vector (here 40 000 rows, ~10 intermediates of that size
    a row): calls of any size run as calls of ``JAX_MIN_ROWS`` rows, in batches that fit
    ``ROW_BUDGET``, those of at most ``SMALL_CALL_ROWS`` rows as calls of that many, and
    agree with the default backend."""
    from pymc_evidence.runtime.jax_rows import (
        JAX_MIN_ROWS,
        ROW_BUDGET,
        SMALL_CALL_ROWS,
        row_chunk,
    )

    data = np.random.default_rng(2).normal(size=40_000)
    with pm.Model() as model:
        beta = pm.Normal("beta", 0.0, 1.0, shape=2)
        pm.Poisson("y", pt.exp(beta[0] + beta[1] * data), observed=(data > 0).astype(int))
    space = model_space(model)
    on_jax, default = batched_logp(space, backend="jax"), batched_logp(space, backend="default")
    rows_fn = on_jax._fn
    assert rows_fn.call_rows == JAX_MIN_ROWS
    from pymc_evidence.runtime.batched_logp import _point_graph

    chunk = row_chunk(_point_graph(space)[1])
    assert 1 <= chunk <= JAX_MIN_ROWS and chunk * data.size < ROW_BUDGET
    xs = np.random.default_rng(3).normal(0.0, 0.1, size=(70, 2))
    expected = default(xs)
    for sizes, shapes in (((40, 70), 1), ((1, SMALL_CALL_ROWS - 1, SMALL_CALL_ROWS), 2)):
        for n in sizes:
            logp, grad = on_jax(xs[:n])
            np.testing.assert_allclose(logp, expected[0][:n], rtol=1e-9)
            np.testing.assert_allclose(grad, expected[1][:n], rtol=1e-7)
        assert rows_fn.fn._cache_size() == shapes  # 40 and 70 rows: one shape; few: one more


def test_runtime_backend_sets_the_cached_function_and_keeps_runs_in_process():
    model = beta_bernoulli(n=10, heads=3).model
    space = model_space(model)
    runtime = runtime_of(model, backend="jax")  # as sample_evidence(backend="jax") sets it
    assert space.runtime is runtime and runtime.backend == "jax"
    assert batched_logp(space) is batched_logp(space, backend="jax")
    assert n_workers(4, 4, batched_logp(space)) == 1  # JAX's runs go in threads
    assert runtime_of(model, backend="auto").backend == "auto"
    assert batched_logp(space).backend == "jax"
    assert batched_logp(space, backend="default").backend == "default"
    batched_logp(space)(np.zeros((2, space.ndim)))  # jax has run in this process now
    assert jax_started()
    assert n_workers(4, 4) == 1  # a fork of a process that ran JAX deadlocks
    assert n_threads(4, 4, batched_logp(space)) == 4  # JAX runs threads at once
    assert n_threads(4, 4, batched_logp(space, backend="default")) == 1
    assert jax.config.jax_enable_x64


def test_smc_on_jax_matches_exact_and_default_backend():
    system = beta_bernoulli(n=20, heads=6)
    kwargs = dict(method="smc", n_particles=300, n_runs=3, random_seed=5, progressbar=False)
    on_jax = pme.sample_evidence(system.model, backend="jax", **kwargs)
    assert get_group(on_jax, "log_evidence").attrs["backend"] == "jax"
    est_jax = pme.log_evidence(on_jax)
    assert_log_z(est_jax, system.log_z, abs_tol=0.15, label="smc on jax")
    default = pme.sample_evidence(system.model, backend="default", **kwargs)
    assert get_group(default, "log_evidence").attrs["backend"] == "default"
    auto = pme.sample_evidence(system.model, **kwargs)  # JAX, with the runs in threads
    assert get_group(auto, "log_evidence").attrs["backend"] == "jax"
    assert pme.log_evidence(auto).log_z == est_jax.log_z  # the same function, bit for bit
    est = pme.log_evidence(default)
    combined = float(np.hypot(est.se, est_jax.se))
    assert_estimate(est_jax.log_z, est.log_z, combined, abs_tol=0.15, label="jax - default")
    by_mode = pme.sample_evidence(system.model, compile_kwargs={"mode": "JAX"}, **kwargs)
    assert pme.log_evidence(by_mode).log_z == pytest.approx(est_jax.log_z, abs=1e-9)


def test_backend_names_are_checked():
    assert resolve_backend(None, {"mode": "JAX"}) == "jax"
    assert resolve_backend(None, {"mode": "NUMBA"}) == "auto"
    with pytest.raises(ValueError, match="backend must be one of") as info:
        pme.sample_evidence(beta_bernoulli(n=5).model, backend="cuda", progressbar=False)
    assert all(name in str(info.value) for name in BACKENDS)


def test_missing_jax_is_an_import_error(monkeypatch):
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "jax" else find_spec(name, *a)
    )
    with pytest.raises(ImportError, match=r"pip install jax"):
        pme.sample_evidence(beta_bernoulli(n=5).model, backend="jax", progressbar=False)
    space = model_space(beta_bernoulli(n=5).model)  # "auto" without jax: the default linker
    assert batched_logp(space).backend == "default"


class _NoJax(Op):
    """An op with a Python implementation only (no JAX conversion)."""

    def make_node(self, x):
        x = pt.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, outputs):
        outputs[0][0] = 2.0 * inputs[0]


def test_op_without_jax_implementation_is_named():
    flat = pt.vector("x", dtype="float64")
    graph = [pt.sum(_NoJax()(flat) ** 2)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the op may not vectorize: one row at a time then
        vectorized, fn = compile_rows(flat, graph, what="a test", backend="default", ndim=2)
        assert np.allclose(fn(np.ones((3, 2))) if vectorized else fn(np.ones(2)), 8.0)
        with pytest.raises(NotImplementedError, match="_NoJax") as info:
            compile_rows(flat, graph, what="a test", backend="jax", ndim=2)
    assert "backend='default'" in str(info.value)
    vectorized, fn = compile_rows(flat, graph, what="a test", backend="auto", ndim=2)
    assert not is_jax_rows(fn)  # "auto": PyTensor's default linker runs it


def _indexed(n_rows):
    """Group intercepts gathered over ``n_rows`` observations (``a[group]``)."""
    rng = np.random.default_rng(1)
    group = rng.integers(0, 5, n_rows)
    with pm.Model() as model:
        a = pm.Normal("a", 0.0, 1.0, shape=5)
        pm.Normal("y", a[group], 1.0, observed=rng.normal(size=n_rows))
    return model


def test_auto_takes_the_default_linker_for_data_sized_gathers():
    from pymc_evidence.runtime.batched_logp import _point_graph
    from pymc_evidence.runtime.graph_traits import GATHER_MIN_SIZE, gathers_data

    big, small = _indexed(GATHER_MIN_SIZE), _indexed(GATHER_MIN_SIZE // 4)
    assert gathers_data(_point_graph(model_space(big))[1])  # the gradient's scatter too
    assert not gathers_data(_point_graph(model_space(small))[1])
    assert not gathers_data(_point_graph(model_space(_correlated()))[1])
    assert batched_logp(model_space(big)).backend == "default"
    assert batched_logp(model_space(big), backend="jax").backend == "jax"  # asked for: kept
    assert batched_logp(model_space(small)).backend == "jax"


@pytest.mark.heavy
def test_auto_keeps_jax_for_an_integrated_hierarchy_that_also_gathers():
    """A crossed ``(1|county) + (1|year)`` model: the counties integrated, the years'
    effects gathered over every row; the integral's graph stays on JAX."""
    from pymc_evidence.problem import EvidenceProblem
    from pymc_evidence.runtime.batched_logp import _point_graph
    from pymc_evidence.runtime.graph_traits import GATHER_MIN_SIZE, gathers_data
    from pymc_evidence.testing.crossed import crossed_intercepts

    system = crossed_intercepts(J=GATHER_MIN_SIZE // 2, K=4, rows=3, seed=2)
    assert gathers_data(_point_graph(model_space(system.model))[1])  # as written
    problem = EvidenceProblem.build(system.model, random_seed=1)
    assert problem.summed is not None and problem.summed.names == ("a",)
    assert not gathers_data(_point_graph(problem.space)[1])
    assert batched_logp(problem.space).backend == "jax"


def test_jax_started_only_once_jax_has_run():
    import subprocess
    import sys

    code = (
        "import jax, jax.numpy as jnp\n"
        "from pymc_evidence.runtime.jax_rows import JAX_MAX_ROWS, jax_started\n"
        "from pymc_evidence.methods._runs import n_workers\n"
        "print(jax_started(), n_workers(2, 4))\n"
        "jnp.ones(2).block_until_ready()\n"
        "print(jax_started(), n_workers(2, 4))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "2", "True", "1"]
