"""Adaptive Gauss-Hermite quadrature of scalar group effects, as a PyTensor graph.

The integral that :mod:`~pymc_evidence.transforms.group_effects` puts in a model: for
groups ``j = 1..J`` with a Normal prior ``b_j ~ N(μ_j, σ_j)`` and rows ``i`` of group
``g_i = j`` whose log likelihood ``ℓ_i(b_j)`` depends on the group's effect alone,

    log ∫ N(b; μ_j, σ_j) ∏_{i: g_i = j} exp ℓ_i(b) db
        ≈ log(√2 s_j) + log Σ_k w_k exp(x_k² + h_j(m_j + √2 s_j x_k)),

with ``h_j`` the log integrand, ``m_j`` its mode (Newton's method from the prior mean,
each step at most :data:`MAX_STEP` long where the likelihood is not Gaussian in the
effect), ``s_j = (-h_j''(m_j))^{-1/2}`` and ``(x_k, w_k)`` the ``K``-point Gauss-Hermite
rule. This is lme4's ``nAGQ`` for GLMMs: exact for a Gaussian integrand at ``K = 1`` (the
Laplace approximation), and exact in the limit of many nodes for any smooth integrand.
The node count is chosen where the model is made
(:func:`~pymc_evidence.transforms.group_effects.choose_rule`).

The graph's gradient does not run through Newton's iterations: the mode enters as a
constant (:func:`pytensor.gradient.zero_grad`; at the mode ``∂Q/∂m`` vanishes for
``K = 1`` and is of the rule's error otherwise), the scale ``s_j`` and the integrand at
the nodes carry the dependence on the hyperparameters. Hamiltonian moves stay exact with an
approximate gradient (the leapfrog map preserves volume for any force); it only guides them.

Segment sums over groups are sums over a padded table of each group's rows
(:meth:`RowTerms.segment_sum`), so a density call costs ``O(n (T + K))`` for ``n`` rows,
``T`` Newton steps and ``K``
nodes, whatever ``J``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import zero_grad
from pytensor.graph.replace import graph_replace, vectorize_graph

from ..runtime.graph_traits import GROUP_INDEX

__all__ = [
    "MAX_STEP", "GroupRule", "RowTerms", "Segments", "log_marginal", "mode_and_scale", "newton",
]  # fmt: skip

#: Longest Newton step (in the effect's units) where the likelihood is not Gaussian in the
#: effect: a Poisson group of counts near 100 starts about 4.6 below its mode, where a full
#: step overshoots to ``exp(50)``; steps of one reach it in a few and then converge.
MAX_STEP = 1.0


@dataclass(frozen=True)
class Segments:
    """Rows in groups: each row's group index and the group count, with the gather of group
    values onto rows and the sum of rows into groups as PyTensor graphs.

    Examples
    --------
    >>> import numpy as np, pytensor.tensor as pt
    >>> seg = Segments(np.array([0, 0, 1]), 2)
    >>> seg.segment_sum(pt.as_tensor(np.array([1.0, 2.0, 3.0]))).eval()
    array([3., 3.])
    """

    group: np.ndarray
    n_groups: int

    def _constant(self, values):
        """An integer constant named :data:`~pymc_evidence.runtime.graph_traits.GROUP_INDEX`,
        which :func:`~pymc_evidence.runtime.graph_traits.gathers_data` passes: this graph runs
        on XLA, faster than on numba and compiled far sooner (measured in
        :doc:`/performance`, "What a user meets: the first call on a new model")."""
        return pt.constant(np.asarray(values, dtype=np.int64), name=GROUP_INDEX)

    def gather(self, groups):
        """Each row's value of ``(..., J)`` group values: ``(..., n)``."""
        return groups[..., self._constant(self.group)]

    def segment_sum(self, rows):
        """Sum ``(..., n)`` rows into ``(..., J)`` groups: the rows gathered into a
        ``(J, r)`` table (``r`` the largest group, shorter groups padded with zeros; a
        reshape where the groups are contiguous and equal) and summed along it. XLA's CPU
        backend runs a scatter-add, a segment sum or a cumulative sum one element at a
        time, far slower than the density itself (measured in :doc:`/performance`,
        "What a user meets: the first call on a new model");
        a gather and a sum run at the density's speed. Where padding would more than
        quadruple the rows (a few large groups among many small ones), the scatter-add
        stays."""
        lead = tuple(rows.shape[i] for i in range(rows.type.ndim - 1))
        table = _padded_table(self.group, self.n_groups)
        if table is None:
            zeros = pt.zeros((*lead, self.n_groups), dtype=rows.dtype)
            return pt.inc_subtensor(zeros[..., self._constant(self.group)], rows)
        if isinstance(table, int):
            return pt.sum(rows.reshape((*lead, self.n_groups, table)), axis=-1)
        padded = pt.concatenate([rows, pt.zeros((*lead, 1), dtype=rows.dtype)], axis=-1)
        return pt.sum(padded[..., self._constant(table)], axis=-1)


@dataclass(frozen=True)
class RowTerms:
    """The rows' log likelihood as a function of each row's group effect.

    Attributes
    ----------
    logp : TensorVariable
        ``(n,)`` log likelihood of the rows, elementwise in ``u``.
    u : TensorVariable
        ``(n,)`` the effect of each row's group (a dummy input of ``logp``).
    group : numpy.ndarray
        ``(n,)`` each row's group index in ``0..J-1``.
    n_groups : int
        ``J``.
    mean, sd : TensorVariable
        ``(J,)`` the effects' prior means and standard deviations.
    gaussian : bool
        True when ``logp`` is quadratic in ``u`` (Newton's first step is exact).
    """

    logp: object
    u: object
    group: np.ndarray
    n_groups: int
    mean: object
    sd: object
    gaussian: bool

    def at(self, u):
        """``logp`` at the effects ``u`` (``(n,)`` or ``(K, n)``), NaN counted as ``-inf``."""
        if u.type.ndim == 1:
            out = graph_replace(self.logp, {self.u: u}, strict=False)
        else:
            out = vectorize_graph(self.logp, replace={self.u: u})
        return pt.switch(pt.isnan(out), -np.inf, out)

    def derivatives(self, u):
        """First and second derivatives of each row's ``logp`` at ``u`` (``(n,)``)."""
        d1 = pt.grad(pt.sum(self.logp), self.u)
        d2 = pt.grad(pt.sum(d1), self.u)
        return graph_replace([d1, d2], {self.u: u}, strict=False)

    def gather(self, groups):
        """:meth:`Segments.gather` of the rows' groups."""
        return Segments(self.group, self.n_groups).gather(groups)

    def segment_sum(self, rows):
        """:meth:`Segments.segment_sum` of the rows' groups."""
        return Segments(self.group, self.n_groups).segment_sum(rows)


def _padded_table(group: np.ndarray, n_groups: int):
    """The ``(J, r)`` row indices of each group, padded with ``n`` (the appended zero); the
    group size ``r`` alone where the groups are contiguous and of one size; None where the
    table would hold more than four times the rows."""
    counts = np.bincount(group, minlength=n_groups)
    size, n = int(counts.max(initial=0)), len(group)
    if n_groups * size > 4 * n:
        return None
    if np.all(counts == size) and np.array_equal(group, np.repeat(np.arange(n_groups), size)):
        return size
    order = np.argsort(group, kind="stable")
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    slot = np.arange(n) - starts[group[order]]
    table = np.full((n_groups, size), n, dtype=np.int64)
    table[group[order], slot] = order
    return table


@dataclass(frozen=True)
class GroupRule:
    """How the integral is computed: Newton steps and Gauss-Hermite nodes."""

    steps: int
    nodes: int


def _curvature(terms: RowTerms, offset):
    """``(h', -h'')`` of every group's log integrand at ``mean + offset`` (at the prior
    mean for None; ``-h''`` bounded below by the prior's precision: a likelihood that is
    not log-concave adds no negative curvature)."""
    effect = terms.mean if offset is None else terms.mean + offset
    d1, d2 = terms.derivatives(terms.gather(effect))
    precision = 1.0 / terms.sd**2
    grad = terms.segment_sum(d1)
    if offset is not None:
        grad = grad - offset * precision
    curv = precision - terms.segment_sum(pt.minimum(d2, 0.0))
    return grad, curv


def newton(terms: RowTerms, steps: int):
    """Every group's mode after ``steps`` Newton steps from the prior mean, as its offset
    from that mean (a constant of the gradient: written as ``zero_grad(offset)``, never
    ``zero_grad(mean) - mean`` or ``mean + zeros``, on which PyTensor 2's canonicalizer
    does not end), and the largest step of each iteration in units of the scale there."""
    offset, sizes = None, []
    for _ in range(steps):
        grad, curv = _curvature(terms, offset)
        step = grad / curv
        if not terms.gaussian:
            step = pt.clip(step, -MAX_STEP, MAX_STEP)
        sizes.append(pt.max(pt.abs(step) * pt.sqrt(curv)))
        offset = zero_grad(step if offset is None else offset + step)
    return offset, sizes


def mode_and_scale(terms: RowTerms, steps: int, offset=None):
    """Each group's mode after ``steps`` Newton steps (or at ``offset``), as its offset from
    the prior mean, and the scale ``s = (-h'')^{-1/2}`` there (``(J,)`` each)."""
    if offset is None:
        offset, _ = newton(terms, steps)
    _, curv = _curvature(terms, offset)
    return offset, 1.0 / pt.sqrt(curv)


def log_marginal(terms: RowTerms, rule: GroupRule, at=None):
    """``(J,)`` the log integral of every group (the module's formula), at the mode offsets
    and scales ``at`` when given (else after ``rule.steps`` Newton steps). The rows' effects
    are gathered once (``m[g] + √2 x_k s[g]``), so that the gradient scatters ``s`` once."""
    offset, scale = mode_and_scale(terms, rule.steps) if at is None else at
    x, w = np.polynomial.hermite.hermgauss(rule.nodes)
    nodes = np.sqrt(2.0) * x[:, None]
    mode = terms.gather(terms.mean + offset)[None, :]
    if rule.nodes == 1:  # Laplace: the one node is 0 (PyTensor 2 loops on 0 / sqrt(c))
        shifts, rows = offset[None, :], terms.at(mode)
    else:  # (K, J): effects less the prior mean
        shifts = offset[None, :] + nodes * scale[None, :]
        rows = terms.at(mode + nodes * terms.gather(scale)[None, :])
    z = shifts / terms.sd
    prior = -0.5 * z**2 - pt.log(terms.sd) - 0.5 * np.log(2 * np.pi)
    log_h = terms.segment_sum(rows) + prior + (np.log(w) + x**2)[:, None]
    return pt.log(np.sqrt(2.0) * scale) + pt.logsumexp(log_h, axis=0)
