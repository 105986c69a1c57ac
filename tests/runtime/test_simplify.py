"""Log density rewrites PyTensor lacks (runtime.simplify): the same values and derivatives,
fewer transcendental ops. Truths from scipy's logistic functions, not the rewritten graph."""

import numpy as np
import pymc as pm
import pytensor.scalar as ps
import pytensor.tensor as pt
from pytensor.graph.rewriting.utils import rewrite_graph
from pytensor.graph.traversal import ancestors
from pytensor.scalar.math import Sigmoid, Softplus
from pytensor.tensor.elemwise import Elemwise
from scipy import special

from pymc_evidence.runtime.simplify import simplify_logp


def _count(graph, scalar_op) -> int:
    """How many ``scalar_op`` elementwise nodes the graph holds."""
    nodes = {v.owner for v in ancestors([graph]) if v.owner is not None}
    return sum(
        isinstance(node.op, Elemwise) and isinstance(node.op.scalar_op, scalar_op) for node in nodes
    )


def _bernoulli_rows(y, eta_value):
    with pm.Model() as model:
        eta = pm.Data("eta", eta_value)
        b = pm.Normal("b")
        _ = pm.Bernoulli("y", logit_p=eta + b, observed=y)
    return model


def test_bernoulli_logit_rows_have_one_softplus_and_the_same_derivatives():
    rng = np.random.default_rng(3)
    eta = np.concatenate([rng.normal(0.0, 3.0, size=40), [-40.0, 40.0, -700.0, 700.0]])
    y = rng.integers(0, 2, size=eta.size)
    model = _bernoulli_rows(y, eta)
    b = model.rvs_to_values[model["b"]]
    logp = model.logp(vars=[model["y"]], sum=False)[0]
    new = simplify_logp(logp)
    point = {b: 0.0}
    expected = y * -np.logaddexp(0.0, -eta) + (1 - y) * -np.logaddexp(0.0, eta)
    np.testing.assert_allclose(new.eval(point), expected, rtol=1e-12, atol=1e-12)
    d1 = pt.grad(pt.sum(new), b)
    d2 = pt.grad(d1, b)
    p = special.expit(eta)
    np.testing.assert_allclose(d1.eval(point), np.sum(y - p), rtol=1e-10)
    np.testing.assert_allclose(d2.eval(point), -np.sum(p * (1 - p)), rtol=1e-10)
    stable = rewrite_graph(logp, include=("canonicalize", "stabilize"))
    # PyTensor 3 writes log(1 - p) as -softplus(eta), PyTensor 2 as log1p(-sigmoid(eta))
    assert _count(stable, Softplus) + _count(stable, ps.Log1p) == 2
    assert (_count(new, Softplus), _count(new, ps.Log1p)) == (1, 0)
    assert _count(new, Sigmoid) == 0  # the check 0 <= p <= 1 no longer needs p


def test_mirrored_switch_and_nan_rows():
    x = pt.vector("x")
    c = np.array([1, 0, 1, 0], dtype=bool)
    graph = pt.switch(c, -pt.softplus(x), -pt.softplus(-x))  # the branches the other way
    new = simplify_logp(graph)
    values = np.array([0.5, -2.0, 30.0, np.nan])
    with np.errstate(invalid="ignore"):
        expected = np.where(c, -np.logaddexp(0.0, values), -np.logaddexp(0.0, -values))
    np.testing.assert_allclose(new.eval({x: values}), expected, rtol=1e-12)  # NaN stays NaN
    assert _count(new, Softplus) == 1
    check = simplify_logp(pt.ge(pt.sigmoid(x), 0.0) & pt.le(pt.sigmoid(x), 1.0))
    assert check.eval({x: values}).tolist() == [True, True, True, False]
    assert _count(check, Sigmoid) == 0
