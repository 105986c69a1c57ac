"""The algebra of two levels of adaptive Gauss-Hermite quadrature over nested groupings,
written once for numpy and PyTensor (:class:`NestedOps`).

Part of :mod:`.group_nested_quadrature` (its docstring gives the formulas): the joint mode
by damped Newton steps on the arrow-shaped Hessian, each state's integral by nodes around
it, each county's at every state node by nodes around its conditional mode, and the
proposals of the posterior draws. The model's graph runs it through :func:`graph_ops`; the
rule's check, in numpy, through :func:`numpy_ops`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import zero_grad
from pytensor.graph.replace import vectorize_graph
from scipy import special

from .group_quadrature import MAX_STEP, GroupRule

__all__ = [
    "WIDTH", "NestedOps", "NestedRule", "arrow", "draw_tables", "graph_ops", "joint_mode",
    "numpy_ops", "state_integrals",
]  # fmt: skip

#: The draws' proposals' scale, relative to Laplace's.
WIDTH = 1.25
LOG_2PI = float(np.log(2 * np.pi))


@dataclass(frozen=True)
class NestedRule(GroupRule):
    """The joint Newton steps and the outer effect's nodes (:class:`GroupRule`'s fields),
    and the inner effect's Newton steps (from the joint mode's linear prediction) and
    nodes."""

    inner_steps: int = 1
    inner_nodes: int = 1

    @property
    def work(self) -> int:
        """Row evaluations of one integral: the joint steps, then at each outer node the
        inner steps, curvature and nodes."""
        return self.steps + self.nodes * (self.inner_steps + 1 + self.inner_nodes)


@dataclass(frozen=True)
class NestedOps:
    """What the two-level algebra needs, in numpy or in PyTensor: the array namespace, the
    gradient stop, a logsumexp over axis 0, the rows' log density and derivatives
    ``(d/da, d/db, d²/da², d²/da db, d²/db²)`` at row effects (any leading dimensions), the
    gathers of county and state values onto rows and of state values onto counties, the
    matching segment sums, and the two priors ``(mean, sd)``."""

    xp: object
    stop: object
    logsumexp: object
    rows: object
    derivs: object
    gather_a: object
    gather_b: object
    gather_parent: object
    sum_a: object
    sum_b: object
    sum_parent: object
    prior_a: tuple
    prior_b: tuple


def _log_n(dev, sd, xp):
    """``log N(mean + dev; mean, sd)`` elementwise."""
    return -0.5 * (dev / sd) ** 2 - xp.log(sd) - 0.5 * LOG_2PI


def arrow(ops: NestedOps, off_a, off_b):
    """The log integrand's gradient ``(g_a, g_b)`` and negative Hessian ``(H_c, C_c,
    S_k)`` (the Schur complement onto the state) at the prior means plus the offsets; each
    row's diagonal curvature bounded as in :mod:`.group_quadrature`."""
    xp, (ma, sa), (mb, sb) = ops.xp, ops.prior_a, ops.prior_b
    a, b = (ma, mb) if off_a is None else (ma + off_a, mb + off_b)
    d1a, d1b, daa, dab, dbb = ops.derivs(ops.gather_a(a), ops.gather_b(b))
    grad_a, grad_b = ops.sum_a(d1a), ops.sum_b(d1b)
    if off_a is not None:  # never ``mean + zeros`` (see :func:`.group_quadrature.newton`)
        grad_a, grad_b = grad_a - off_a / sa**2, grad_b - off_b / sb**2
    h_a = 1.0 / sa**2 - ops.sum_a(xp.minimum(daa, 0.0))
    h_b = 1.0 / sb**2 - ops.sum_b(xp.minimum(dbb, 0.0))
    cross = -ops.sum_a(dab)
    schur = xp.maximum(h_b - ops.sum_parent(cross**2 / h_a), 1e-3 * h_b)
    return grad_a, grad_b, h_a, cross, schur


def joint_mode(ops: NestedOps, steps: int, start=None, tol: float = 0.0):
    """The joint mode's offsets from the prior means after ``steps`` damped Newton steps
    (from ``start``, else the means; in numpy, stopping once no step exceeds ``tol``
    scales) and each step's largest length in scales."""
    xp = ops.xp
    off_a, off_b = start if start is not None else (None, None)
    sizes = []
    for _ in range(steps):
        grad_a, grad_b, h_a, cross, schur = arrow(ops, off_a, off_b)
        step_b = (grad_b - ops.sum_parent(cross * grad_a / h_a)) / schur
        step_a = (grad_a - cross * ops.gather_parent(step_b)) / h_a
        step_a, step_b = xp.clip(step_a, -MAX_STEP, MAX_STEP), xp.clip(step_b, -MAX_STEP, MAX_STEP)
        size_a, size_b = abs(step_a) * xp.sqrt(h_a), abs(step_b) * xp.sqrt(schur)
        sizes.append(xp.maximum(xp.max(size_a), xp.max(size_b)))
        if off_a is not None:
            step_a, step_b = off_a + step_a, off_b + step_b
        off_a, off_b = ops.stop(step_a), ops.stop(step_b)
        if tol and float(sizes[-1]) < tol:
            break
    return off_a, off_b, sizes


def _inner(ops: NestedOps, b, off, steps: int, sizes=None):
    """Every county's conditional mode given the state values ``b`` (``(..., K)``), after
    ``steps`` damped Newton steps from the offsets ``off`` (``(..., J)``), and ``H_c``
    there (each step's largest length in scales appended to ``sizes``)."""
    xp, (ma, sa) = ops.xp, ops.prior_a
    ub = ops.gather_b(b)
    for k in range(steps + 1):
        d1a, _, daa, _, _ = ops.derivs(ops.gather_a(ma + off), ub)
        h = 1.0 / sa**2 - ops.sum_a(xp.minimum(daa, 0.0))
        if k == steps:
            return off, h
        step = xp.clip((ops.sum_a(d1a) - off / sa**2) / h, -MAX_STEP, MAX_STEP)
        if sizes is not None:
            sizes.append(float(np.max(abs(step) * np.sqrt(h))))
        off = ops.stop(off + step)


def _nodes(centre, scale, x):
    """``centre + √2 x scale`` over a leading axis of the nodes ``x`` (``centre`` alone for
    one node: PyTensor loops on ``0 * scale``'s rewrites)."""
    if len(x) == 1:
        return centre[None]
    shape = (len(x),) + (1,) * centre.ndim
    return centre[None] + np.sqrt(2.0) * x.reshape(shape) * scale[None]


def _log_f(ops: NestedOps, b, off, h, nodes: int):
    """``log F_c(b)`` (``(..., J)``) by ``nodes`` Gauss-Hermite nodes around the
    conditional modes ``off`` (offsets) of curvature ``h``."""
    xp, (ma, sa) = ops.xp, ops.prior_a
    x, w = np.polynomial.hermite.hermgauss(nodes)
    scale = 1.0 / xp.sqrt(h)
    dev = _nodes(off, scale, x)
    rows = ops.rows(ops.gather_a(ma + dev), ops.gather_b(b)[None])
    log_h = ops.sum_a(rows) + _log_n(dev, sa, xp)
    log_h = log_h + (np.log(w) + x**2).reshape((-1,) + (1,) * off.ndim)
    return xp.log(np.sqrt(2.0) * scale) + ops.logsumexp(log_h)


def state_integrals(ops: NestedOps, rule: NestedRule, mode, sizes=None):
    """``(K,)`` each state's log integral (the module's formula) at the joint ``mode``
    (offsets); the inner Newton steps' lengths appended to ``sizes``."""
    xp, (mb, sb) = ops.xp, ops.prior_b
    off_a, off_b = mode
    _, _, h_a, cross, schur = arrow(ops, off_a, off_b)
    x, w = np.polynomial.hermite.hermgauss(rule.nodes)
    scale = 1.0 / xp.sqrt(schur)
    dev_b = _nodes(off_b, scale, x)  # (Q, K)
    start = ops.stop(off_a[None] - cross / h_a * ops.gather_parent(dev_b - off_b[None]))
    off, h = _inner(ops, mb + dev_b, start, rule.inner_steps, sizes)
    log_f = _log_f(ops, mb + dev_b, off, h, rule.inner_nodes)  # (Q, J)
    log_g = ops.sum_parent(log_f) + _log_n(dev_b, sb, xp) + (np.log(w) + x**2)[:, None]
    return xp.log(np.sqrt(2.0) * scale) + ops.logsumexp(log_g)


def draw_tables(ops: NestedOps, rule: NestedRule, mode, z_b, log_u, z_a) -> list:
    """What the draws need given standard normals ``z_b`` (``(P, K)``) and ``z_a`` (``(P,
    J)``) and ``P - 1`` log uniforms ``log_u`` (each ``(K,)``): the states drawn (``(K,)``, by
    :func:`_state_chain` through ``P`` proposals), and at them the county proposals and
    their log weights (``(P, J)``)."""
    xp, (ma, sa), (mb, sb) = ops.xp, ops.prior_a, ops.prior_b
    off_a, off_b = mode
    _, _, h_a, cross, schur = arrow(ops, off_a, off_b)
    dev_b = off_b[None] + WIDTH * z_b / xp.sqrt(schur)[None]
    start = ops.stop(off_a[None] - cross / h_a * ops.gather_parent(dev_b - off_b[None]))
    off, h = _inner(ops, mb + dev_b, start, rule.inner_steps)
    log_f = _log_f(ops, mb + dev_b, off, h, rule.inner_nodes)
    log_wb = ops.sum_parent(log_f) + _log_n(dev_b, sb, xp) + 0.5 * z_b**2
    dev_b, off, h = _state_chain(ops, log_wb, log_u, dev_b, off, h)
    dev_a = off[None] + WIDTH * z_a / xp.sqrt(h)[None]
    rows = ops.rows(ops.gather_a(ma + dev_a), ops.gather_b(mb + dev_b)[None])
    log_wa = ops.sum_a(rows) + _log_n(dev_a, sa, xp) + 0.5 * z_a**2
    return [mb + dev_b, ma + dev_a, log_wa]


def _state_chain(ops: NestedOps, log_w, log_u, dev_b, off, h):
    """Each state's independence Metropolis chain through its ``P`` proposals ``dev_b``
    (``(P, K)``) of log weights ``log_w`` (a NaN weight counts as zero), given ``P - 1`` log
    uniforms ``log_u`` (each ``(K,)``): the state drawn, and its counties' conditional modes and
    curvatures (``(P, J)`` ``off`` and ``h`` taken at it). As
    :func:`.discrete_values.independence_chain`, written in the graph so that the
    counties' proposals are made at the state drawn only, not at all ``P``."""
    xp = ops.xp
    log_w = xp.where(xp.isnan(log_w), -np.inf, log_w)
    weight, picked = log_w[0], [dev_b[0], off[0], h[0]]
    for t in range(1, len(log_u) + 1):
        accept = log_u[t - 1] < log_w[t] - weight  # -inf - -inf is NaN: never accepted
        weight = xp.where(accept, log_w[t], weight)
        by_county = ops.gather_parent(accept)
        picked = [
            xp.where(accept, dev_b[t], picked[0]),
            xp.where(by_county, off[t], picked[1]),
            xp.where(by_county, h[t], picked[2]),
        ]
    return picked


def graph_ops(terms) -> NestedOps:
    """:class:`NestedOps` of the model's graph for :class:`.group_nested.NestedTerms`."""
    ga, gb = pt.grad(pt.sum(terms.logp), [terms.ua, terms.ub])
    haa, hab = pt.grad(pt.sum(ga), [terms.ua, terms.ub])
    derivs = [ga, gb, haa, hab, pt.grad(pt.sum(gb), terms.ub)]

    def at(graphs, ua, ub):
        ua, ub = pt.broadcast_arrays(ua, ub)
        return vectorize_graph(graphs, replace={terms.ua: ua, terms.ub: ub})

    def rows(ua, ub):
        out = at(terms.logp, ua, ub)
        return pt.switch(pt.isnan(out), -np.inf, out)

    return NestedOps(
        pt, zero_grad, lambda v: pt.logsumexp(v, axis=0), rows,
        lambda ua, ub: at(derivs, ua, ub), terms.inner.gather, terms.outer_rows.gather,
        terms.outer.gather, terms.inner.segment_sum, terms.outer_rows.segment_sum,
        terms.outer.segment_sum, terms.prior_a, terms.prior_b,
    )  # fmt: skip


def numpy_ops(terms, fn, point) -> NestedOps:
    """:class:`NestedOps` in numpy of ``fn(ua, ub, *point) -> (logp, 5 derivatives, priors)``
    (rows ``(n,)``; leading dimensions looped)."""
    n = len(terms.inner.group)
    zero = np.zeros(n)
    _, *_, ma, sa, mb, sb = fn(zero, zero, *point)

    def looped(ua, ub, which):
        ua, ub = np.broadcast_arrays(ua, ub)
        flat = [fn(a, b, *point) for a, b in zip(ua.reshape(-1, n), ub.reshape(-1, n), strict=True)]
        return [np.array([f[k] for f in flat]).reshape(ua.shape) for k in which]

    return NestedOps(
        np, lambda v: v, lambda v: special.logsumexp(v, axis=0),
        lambda ua, ub: looped(ua, ub, [0])[0], lambda ua, ub: looped(ua, ub, range(1, 6)),
        lambda v: v[..., terms.inner.group], lambda v: v[..., terms.outer_rows.group],
        lambda v: v[..., terms.outer.group], _summer(terms.inner), _summer(terms.outer_rows),
        _summer(terms.outer), (np.asarray(ma), np.asarray(sa)), (np.asarray(mb), np.asarray(sb)),
    )  # fmt: skip


def _summer(seg):
    """A numpy segment sum of ``(..., n)`` rows into ``seg``'s groups."""

    def total(v):
        flat = np.reshape(v, (-1, np.shape(v)[-1]))
        out = np.stack([np.bincount(seg.group, r, seg.n_groups) for r in flat])
        return out.reshape(np.shape(v)[:-1] + (seg.n_groups,))

    return total
