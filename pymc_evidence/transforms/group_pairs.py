"""Two group effects of one grouping integrated together: a random intercept and slope.

A formula such as bambi's ``y ~ x + (1 + x | g)`` gives each group two effects, an
intercept ``a_j`` and a slope ``b_j`` with independent Normal priors, that enter the same
rows (``... + a[g] + b[g] * x``). Given the hyperparameters the groups are independent, and
each group's integral is two-dimensional:

    log ∫∫ N(a; μ_a, σ_a) N(b; μ_b, σ_b) ∏_{i: g_i = j} exp ℓ_i(a, b) da db
        ≈ log 2 + log det L_j + log Σ_{k,l} w_k w_l exp(x_k² + x_l² + h_j(m_j + √2 L_j x_kl)),

the tensor-product Gauss-Hermite rule around each group's mode ``m_j`` (Newton's method in
two dimensions) with ``L_j`` the Cholesky factor of the inverse of the negative Hessian
there; one node is the two-dimensional Laplace approximation, exact for a Gaussian
likelihood. The rows' Hessians are made negative semidefinite row by row before they are
summed (their positive eigenvalue dropped, the 2 × 2 analogue of
:mod:`.group_quadrature`'s bound on a scalar's curvature), so every Newton step climbs.

The 2 × 2 algebra is written once for numpy and PyTensor alike (:class:`_Ops`): the same
Newton steps and rule run in the model's graph and, where the rule is chosen, in numpy.

Posterior draws of the two effects come back from each group's conditional given the
hyperparameters: exact Gaussian draws where the likelihood is Gaussian in the effects,
else :data:`PROPOSALS` steps of an independence Metropolis chain from a Gaussian of the
Laplace covariance widened by :data:`WIDTH` (its tails above the conditional's, so that the
weights are bounded and the chain forgets its start geometrically).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import zero_grad
from pytensor.graph.replace import graph_replace, vectorize_graph
from scipy import special

from .discrete_values import independence_chain
from .group_quadrature import MAX_STEP, GroupRule, RowTerms

__all__ = [
    "PAIR_NODE_COUNTS",
    "PROPOSALS",
    "PairTerms",
    "pair_log_marginal",
    "pair_moments",
    "pair_potential",
]

#: Node counts (per dimension) tried, each against the next.
PAIR_NODE_COUNTS = (1, 3, 5, 7, 9)
#: Independence Metropolis proposals of each posterior draw of a non-Gaussian pair.
PROPOSALS = 8
#: The proposals' scale, relative to the Laplace covariance's.
WIDTH = 1.25


@dataclass(frozen=True)
class PairTerms:
    """The rows' log likelihood as a function of each row's two group effects.

    Attributes
    ----------
    logp : TensorVariable
        ``(n,)`` log likelihood of the rows, elementwise in ``us``.
    us : tuple of TensorVariable
        Two ``(n,)`` dummy inputs: each row's group effects.
    rows : RowTerms
        The grouping (``group``, ``n_groups``, gathers and segment sums) and the first
        effect's prior.
    means, sds : tuple of TensorVariable
        Each effect's ``(J,)`` prior means and standard deviations.
    gaussian : bool
        True when ``logp`` is quadratic in ``us``.
    """

    logp: object
    us: tuple
    rows: RowTerms
    means: tuple
    sds: tuple
    gaussian: bool

    def at(self, e1, e2):
        """``logp`` at the effects (``(n,)`` or ``(K, n)`` each), NaN counted as ``-inf``."""
        replace = dict(zip(self.us, (e1, e2), strict=True))
        if e1.type.ndim == 1:
            out = graph_replace(self.logp, replace, strict=False)
        else:
            out = vectorize_graph(self.logp, replace=replace)
        return pt.switch(pt.isnan(out), -np.inf, out)

    def derivatives(self, e1, e2):
        """Each row's gradient ``(g_a, g_b)`` and Hessian ``(h_aa, h_ab, h_bb)`` at the
        effects ``(n,)``."""
        ua, ub = self.us
        ga, gb = pt.grad(pt.sum(self.logp), [ua, ub])
        haa, hab = pt.grad(pt.sum(ga), [ua, ub])
        hbb = pt.grad(pt.sum(gb), ub)
        return graph_replace([ga, gb, haa, hab, hbb], {ua: e1, ub: e2}, strict=False)

    def ops(self) -> _Ops:
        """The graph's operations for the shared algebra."""
        return _Ops(
            pt, self.rows.gather, self.rows.segment_sum, self.derivatives, self.at,
            self.means, self.sds, zero_grad, lambda v: pt.logsumexp(v, axis=0),
        )  # fmt: skip


@dataclass(frozen=True)
class _Ops:
    """What the pair algebra needs, in numpy or in PyTensor: the array namespace, a gather
    of ``(..., J)`` group values to rows, a segment sum of rows, the rows' derivatives and
    log density at effects, the priors, the gradient stop and a logsumexp over axis 0."""

    xp: object
    gather: object
    segment_sum: object
    derivatives: object
    at: object
    means: tuple
    sds: tuple
    stop: object
    logsumexp: object


def _negative_part(a, b, c, xp):
    """The negative semidefinite part of each symmetric ``D = [[a, b], [b, c]]``, its
    positive eigenvalues set to zero, elementwise: ``D - Σ max(λ, 0) P_λ`` with the
    eigenprojections ``P_hi = (D - lo I) / (hi - lo)``, ``P_lo = (hi I - D) / (hi - lo)``.
    Continuous in the eigenvalues, so that a rank-one row Hessian (eigenvalue 0, rounded
    either way) is kept whatever the rounding: branches on the sign of ``hi`` were taken
    differently by XLA in the three entries of one row. ``max(λ, 0)`` is written
    ``(λ + |λ|) / 2``: PyTensor's gradient of ``maximum`` on JAX was wrong at the rank-one
    Hessians' ``hi ≈ 0`` (right on the C backend), and the annealing's moves suffered
    (measured in :doc:`/hard_models`, "Group effects integrated out: hierarchies of hundreds
    to thousands of groups")."""
    half = (a - c) / 2
    radius = xp.sqrt(xp.maximum(half**2 + b**2, 1e-300))  # no 0 under the root: its gradient
    hi, lo = (a + c) / 2 + radius, (a + c) / 2 - radius
    up_hi, up_lo = (hi + abs(hi)) / 2, (lo + abs(lo)) / 2  # max(λ, 0); see below
    spread = 2.0 * radius  # hi - lo
    apart = spread > 1e-12 * (abs(a) + abs(c))  # else D = t I: its negative part min(t, 0) I
    return (
        xp.where(apart, a - (up_hi * (a - lo) + up_lo * (hi - a)) / spread, xp.minimum(a, 0.0)),
        xp.where(apart, b - (up_hi - up_lo) * b / spread, 0.0 * b),
        xp.where(apart, c - (up_hi * (c - lo) + up_lo * (hi - c)) / spread, xp.minimum(c, 0.0)),
    )


def _curvature(ops: _Ops, offset, gaussian: bool):
    """Each group's gradient and negative Hessian ``(n11, n12, n22)`` of the log
    integrand at the prior means plus ``offset`` (the prior means for None). A Gaussian
    likelihood's row Hessians are negative semidefinite already: no negative part."""
    (m1, m2), (s1, s2) = ops.means, ops.sds
    p1, p2 = 1.0 / s1**2, 1.0 / s2**2
    if offset is None:  # never m + 0 (see group_quadrature.newton)
        ga, gb, haa, hab, hbb = ops.derivatives(ops.gather(m1), ops.gather(m2))
        grad = (ops.segment_sum(ga), ops.segment_sum(gb))
    else:
        o1, o2 = offset
        ga, gb, haa, hab, hbb = ops.derivatives(ops.gather(m1 + o1), ops.gather(m2 + o2))
        grad = (ops.segment_sum(ga) - o1 * p1, ops.segment_sum(gb) - o2 * p2)
    if not gaussian:
        haa, hab, hbb = _negative_part(haa, hab, hbb, ops.xp)
    hess = (p1 - ops.segment_sum(haa), -ops.segment_sum(hab), p2 - ops.segment_sum(hbb))
    return grad, hess


def _newton(ops: _Ops, steps: int, gaussian: bool):
    """The two effects' modes after ``steps`` Newton steps from the prior means (offsets
    from them, gradient-stopped), each step's largest length in scales and the negative
    Hessian the last step used."""
    offset, sizes = None, []
    for _ in range(steps):
        (g1, g2), hess = _curvature(ops, offset, gaussian)
        n11, n12, n22 = hess
        det = n11 * n22 - n12**2
        d1, d2 = (n22 * g1 - n12 * g2) / det, (n11 * g2 - n12 * g1) / det
        if not gaussian:
            longest = ops.xp.maximum(abs(d1), abs(d2))  # min(1, MAX_STEP / longest), whose
            shrink = MAX_STEP / ops.xp.maximum(longest, MAX_STEP)  # gradient is finite
            d1, d2 = d1 * shrink, d2 * shrink
        length = d1 * (n11 * d1 + n12 * d2) + d2 * (n12 * d1 + n22 * d2)
        sizes.append(ops.xp.max(ops.xp.sqrt(length)))
        offset = (d1, d2) if offset is None else (offset[0] + d1, offset[1] + d2)
        offset = tuple(ops.stop(o) for o in offset)
    return offset, sizes, hess


def _moments(ops: _Ops, steps: int, gaussian: bool, offset=None):
    """``(o1, o2, l11, l21, l22)``: the modes' offsets and the Cholesky factor of the
    inverse negative Hessian there (a Gaussian likelihood's Hessian is the same at every
    point: the Newton step's is reused, and the rows are not differentiated twice)."""
    hess = None
    if offset is None:
        offset, _, hess = _newton(ops, steps, gaussian)
    if hess is None or not gaussian:
        _, hess = _curvature(ops, offset, gaussian)
    n11, n12, n22 = hess
    det = n11 * n22 - n12**2
    return (*offset, ops.xp.sqrt(n22 / det), -n12 / ops.xp.sqrt(det * n22), 1.0 / ops.xp.sqrt(n22))


def _log_h(ops: _Ops, moments, z1, z2):
    """Each group's log integrand ``(K, J)`` at the standardized points ``z`` (``(K, 1)``
    or ``(K, J)``; None: the modes)."""
    o1, o2, l11, l21, l22 = moments
    (m1, m2), (s1, s2) = ops.means, ops.sds
    if z1 is None:  # the mode (PyTensor 2 loops on 0 / sqrt(c): see group_quadrature)
        shifts = (o1[None], o2[None])
        rows = ops.at(ops.gather(m1 + o1), ops.gather(m2 + o2))[None]
    else:
        shifts = (o1 + z1 * l11, o2 + z1 * l21 + z2 * l22)
        e1 = ops.gather(m1 + o1)[None] + ops.gather(z1 * l11)
        e2 = ops.gather(m2 + o2)[None] + ops.gather(z1 * l21 + z2 * l22)
        rows = ops.at(e1, e2)
    prior = sum(
        -0.5 * (d / s) ** 2 - ops.xp.log(s) - 0.5 * np.log(2 * np.pi)
        for d, s in zip(shifts, (s1, s2), strict=True)
    )
    return ops.segment_sum(rows) + prior


def _quadrature(ops: _Ops, moments, nodes: int):
    """``(J,)`` each group's log integral by the ``nodes``² product rule."""
    x, w = np.polynomial.hermite.hermgauss(nodes)
    xa, xb = np.repeat(x, nodes), np.tile(x, nodes)
    weights = (np.log(w)[:, None] + np.log(w)[None, :]).ravel() + xa**2 + xb**2
    if nodes == 1:
        log_h = _log_h(ops, moments, None, None)
    else:
        log_h = _log_h(ops, moments, np.sqrt(2.0) * xa[:, None], np.sqrt(2.0) * xb[:, None])
    _, _, l11, _, l22 = moments
    return np.log(2.0) + ops.xp.log(l11) + ops.xp.log(l22) + ops.logsumexp(log_h + weights[:, None])


def pair_log_marginal(terms: PairTerms, rule: GroupRule):
    """``(J,)`` the log integral of every group's pair of effects (the module's formula)."""
    ops = terms.ops()
    return _quadrature(ops, _moments(ops, rule.steps, terms.gaussian), rule.nodes)


def pair_potential(terms: PairTerms, rule: GroupRule):
    """The log integral of every group's pair less the rows' log likelihood at zero
    effects (what the model with the effects fixed at zero lacks), summed over groups.

    Where the likelihood is Gaussian in the effects each row's log density is its
    second-order expansion around the prior means ``m``: ``c + g·o + ½ oᵀ H o`` at
    ``m + o``. The group's integral is then ``c + ½ Gᵀ N⁻¹ G - ½ log det N - log s_a s_b``
    (``G``, ``H`` the rows' sums, ``N = diag(s⁻²) - H``) and its rows at zero effects
    ``c - G·m + ½ mᵀ H m``: ``c`` cancels, and one pass over the rows (their gradients and
    Hessians at ``m``) gives the potential exactly, with no Newton step or second pass.
    """
    if not terms.gaussian:
        n = len(terms.rows.group)
        zero = pt.zeros(n, dtype="float64")
        return pt.sum(pair_log_marginal(terms, rule)) - pt.sum(terms.at(zero, zero))
    ops = terms.ops()
    (m1, m2), (s1, s2) = ops.means, ops.sds
    ga, gb, haa, hab, hbb = ops.derivatives(ops.gather(m1), ops.gather(m2))
    g1, g2 = ops.segment_sum(ga), ops.segment_sum(gb)
    h11, h12, h22 = ops.segment_sum(haa), ops.segment_sum(hab), ops.segment_sum(hbb)
    n11, n12, n22 = 1.0 / s1**2 - h11, -h12, 1.0 / s2**2 - h22
    det = n11 * n22 - n12**2
    quad = (n22 * g1**2 - 2.0 * n12 * g1 * g2 + n11 * g2**2) / det  # Gᵀ N⁻¹ G
    at_zero = -(g1 * m1 + g2 * m2) + 0.5 * (h11 * m1**2 + 2.0 * h12 * m1 * m2 + h22 * m2**2)
    return pt.sum(0.5 * quad - 0.5 * pt.log(det) - pt.log(s1 * s2) - at_zero)


def pair_moments(terms: PairTerms, rule: GroupRule, proposals=None) -> list:
    """The graphs a posterior draw needs: each group's modes and Cholesky factor
    (``(J,)`` each) and, given ``proposals`` (``(PROPOSALS, 2, J)`` standard normals), the
    log integrand at each widened proposal (``(PROPOSALS, J)``)."""
    ops = terms.ops()
    moments = _moments(ops, rule.steps, terms.gaussian)
    (m1, m2), (o1, o2) = terms.means, moments[:2]
    out = [m1 + o1, m2 + o2, *moments[2:]]
    if proposals is not None:
        z = WIDTH * proposals
        out.append(_log_h(ops, moments, z[:, 0, :], z[:, 1, :]))
    return out


def pair_draws(tables: list, proposals, rng: np.random.Generator) -> tuple:
    """Draws ``(n, J)`` of both effects from :func:`pair_moments`'s tables (with a leading
    draw dimension): exact Gaussian draws without proposals, else the last state of an
    independence Metropolis chain through the proposals (``(n, PROPOSALS, 2, J)``)."""
    m1, m2, l11, l21, l22 = (np.asarray(t, dtype=float) for t in tables[:5])
    if proposals is None:
        z = rng.standard_normal((2, *m1.shape))
    else:
        log_h = np.where(np.isnan(tables[5]), -np.inf, np.asarray(tables[5], dtype=float))
        log_w = log_h + 0.5 * np.sum(proposals**2, axis=2)  # the widened proposals' density
        state = independence_chain(log_w, rng)
        index = state[:, None, None, :].repeat(2, axis=2)
        z = WIDTH * np.moveaxis(np.take_along_axis(proposals, index, axis=1)[:, 0], 1, 0)
    return m1 + l11 * z[0], m2 + l21 * z[0] + l22 * z[1]


def choose_pair_rule(rows_at, group: np.ndarray, n_groups: int, gaussian: bool, max_steps: int):
    """``(sizes, totals)`` at one point, in numpy: each Newton step's largest length (of
    ``max_steps``) and the total log integral at every count of :data:`PAIR_NODE_COUNTS`,
    given ``rows_at(e1, e2) -> (logp, ga, gb, haa, hab, hbb, m1, s1, m2, s2)``."""
    *_, m1, s1, m2, s2 = rows_at(np.zeros(len(group)), np.zeros(len(group)))

    def segment(v):
        return np.bincount(group, weights=v, minlength=n_groups)

    def at(e1, e2):
        if e1.ndim == 1:
            return rows_at(e1, e2)[0]
        return np.array([rows_at(a, b)[0] for a, b in zip(e1, e2, strict=True)])

    ops = _Ops(
        np, lambda v: v[..., group], lambda v: np.apply_along_axis(segment, -1, v),
        lambda e1, e2: rows_at(e1, e2)[1:6], at, (m1, m2), (s1, s2), lambda v: v,
        lambda v: special.logsumexp(v, axis=0),
    )  # fmt: skip
    with np.errstate(all="ignore"):
        offset, sizes, _ = _newton(ops, max_steps, gaussian)
        moments = _moments(ops, max_steps, gaussian, offset)
        totals = [np.sum(_quadrature(ops, moments, k)) for k in PAIR_NODE_COUNTS]
    return np.asarray(sizes), np.asarray(totals)
