"""Rewrites of log density graphs that PyTensor's own rewrites do not make.

PyMC writes a Bernoulli row with a logit link as ``switch(y, log(p), log(1 - p))`` with
``p = sigmoid(eta)``, which PyTensor's stabilizer turns into ``switch(y, -softplus(-eta),
-softplus(eta))``: two softplus (an ``exp`` and a ``log1p`` each) a row, and a gradient
through both branches. Since ``-softplus(-eta) = eta - softplus(eta)``, the row is
``switch(y, eta, 0) - softplus(eta)``: one softplus, whose derivatives are ``y - sigmoid``
and ``-sigmoid (1 - sigmoid)``. PyMC's parameter check ``0 <= p <= 1`` of the same row
costs a ``sigmoid`` more; ``sigmoid(eta) >= 0`` is ``eta >= -inf`` (false for NaN alone,
as before), ``sigmoid(eta) <= 1`` is ``eta <= inf``.

:func:`simplify_logp` applies PyTensor's ``canonicalize`` and ``stabilize`` passes and
then these rewrites, to a logistic regression's density and to a Bernoulli hierarchy's
rows whose effects :mod:`~pymc_evidence.transforms.group_quadrature` integrates (their
first two derivatives taken from the simplified rows); what each call saves is measured
in ``docs/performance.rst``.
"""

from __future__ import annotations

import numpy as np
import pytensor.scalar as ps
import pytensor.tensor as pt
from pytensor.graph.replace import clone_replace
from pytensor.graph.rewriting.basic import in2out, node_rewriter
from pytensor.graph.rewriting.utils import rewrite_graph
from pytensor.scalar.math import Sigmoid, Softplus
from pytensor.tensor.elemwise import Elemwise

__all__ = ["simplify_logp"]


def simplify_logp(graph):
    """A copy of ``graph`` after PyTensor's ``canonicalize`` and ``stabilize`` rewrites and
    the module's (``zero_grad`` and other view ops kept).

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> with pm.Model() as model:
    ...     b = pm.Normal("b", shape=2)
    ...     _ = pm.Bernoulli("y", logit_p=b, observed=[1, 0])
    >>> logp = model.logp(vars=[model["y"]], sum=False)[0]
    >>> new = simplify_logp(logp)
    >>> point = {"b": np.array([0.3, -2.0])}
    >>> bool(np.allclose(new.eval(point), logp.eval(point)))
    True
    """
    passes = {"include": ("canonicalize", "stabilize"), "exclude": ("local_view_op",)}
    graph = rewrite_graph(clone_replace(graph), **passes)  # the caller's graph stays as it was
    rewrites = in2out(local_logit_switch, local_sigmoid_bound)
    return rewrite_graph(graph, include=(), custom_rewrite=rewrites)


def _args_of(var, scalar_op):
    """The inputs of ``var``'s node when it is the ``Elemwise`` of ``scalar_op``, else None."""
    node = var.owner
    if node is not None and isinstance(node.op, Elemwise):
        if isinstance(node.op.scalar_op, scalar_op):
            return node.inputs
    return None


def _negation_of(var):
    """``x`` where ``var`` is ``-x`` (``neg(x)``, or ``-1 * x`` as ``canonicalize``
    writes it), else None."""
    neg = _args_of(var, ps.Neg)
    if neg is not None:
        return neg[0]
    factors = _args_of(var, ps.Mul)
    if factors is None or len(factors) != 2:
        return None
    for k, factor in enumerate(factors):
        try:
            if float(pt.get_underlying_scalar_constant_value(factor)) == -1.0:
                return factors[1 - k]
        except Exception:  # not a constant
            continue
    return None


def _neg_softplus_of(var):
    """``x`` where ``var`` is ``-softplus(x)``, or ``log1p(-sigmoid(x))`` (PyTensor 2's
    stabilizer leaves ``log(1 - p)`` so), else None."""
    neg = _negation_of(var)
    inner = None if neg is None else _args_of(neg, Softplus)
    if inner is not None:
        return inner[0]
    log1p = _args_of(var, ps.Log1p)
    sigmoid = None if log1p is None else _negation_of(log1p[0])
    inner = None if sigmoid is None else _args_of(sigmoid, Sigmoid)
    return None if inner is None else inner[0]


def _negated(a, b) -> bool:
    """Whether ``a`` is ``-b``."""
    return _negation_of(a) is b


@node_rewriter([Elemwise])
def local_logit_switch(fgraph, node):
    """``switch(c, -softplus(-x), -softplus(x))`` to ``switch(c, x, 0) - softplus(x)`` (and
    the branches the other way round to ``switch(c, 0, x) - softplus(x)``)."""
    if not isinstance(node.op.scalar_op, ps.Switch):
        return None
    cond, yes, no = node.inputs
    a, b = _neg_softplus_of(yes), _neg_softplus_of(no)
    if a is None or b is None:
        return None
    if _negated(a, b):  # yes = x - softplus(x), no = -softplus(x)
        out = pt.switch(cond, b, 0.0) - pt.softplus(b)
    elif _negated(b, a):
        out = pt.switch(cond, 0.0, a) - pt.softplus(a)
    else:
        return None
    old = node.outputs[0]
    if out.type.ndim != old.type.ndim:
        return None
    return [pt.cast(out, old.dtype)]


@node_rewriter([Elemwise])
def local_sigmoid_bound(fgraph, node):
    """``sigmoid(x) >= 0`` to ``x >= -inf`` and ``sigmoid(x) <= 1`` to ``x <= inf``."""
    scalar = node.op.scalar_op
    if not isinstance(scalar, ps.GE | ps.LE):
        return None
    left, right = node.inputs
    arg = _args_of(left, Sigmoid)
    if arg is None:
        return None
    try:
        bound = float(pt.get_underlying_scalar_constant_value(right))
    except Exception:  # not a constant
        return None
    if isinstance(scalar, ps.GE) and bound == 0.0:
        out = pt.ge(arg[0], -np.inf)
    elif isinstance(scalar, ps.LE) and bound == 1.0:
        out = pt.le(arg[0], np.inf)
    else:
        return None
    old = node.outputs[0]
    return [out] if out.type.ndim == old.type.ndim else None
