"""Nested groupings of a Gaussian likelihood integrated out together: counties in states.

bambi's ``(1|state) + (1|state:county)``: a county effect ``a`` and a state effect ``b``
enter the rows of one observed variable as ``a[county] + b[state]``, and every county lies
in one state. Given the hyperparameters ``θ`` the states are independent, each with its
counties:

    p(y | θ) = ∏_k ∫ N(b_k; μ_b, σ_b) ∏_{c in k} ∫ N(a_c; μ_a, σ_a)
                   ∏_{i in c} p(y_i | a_c, b_k) da_c db_k.

Integrating the counties alone (:mod:`.group_effects`) leaves the states in the annealed
space, one dimension each, with a funnel against their scale, and the annealing's cost
grows with them (measured in :doc:`/hard_models`, "Group effects integrated out:
hierarchies of hundreds to thousands of groups"). Where the rows' log density is quadratic in
both effects (a Gaussian likelihood, any link that is the identity), each state's integral
is a Gaussian one over ``1 + n_k`` effects whose negative Hessian is an arrow: the state's
curvature ``H_k``, each county's ``H_c`` and their coupling ``C_c``. One joint Newton step
from the prior means finds the mode exactly (the Schur complement ``S_k = H_k - Σ_c
C_c² / H_c`` gives the state's step, then each county's), and Laplace's formula is exact:

    log Z_k = h(mode) + (1 + n_k)/2 log 2π - ½ log S_k - ½ Σ_c log H_c.

The annealing then runs over ``θ`` alone, at ``O(n)`` a density call. The modes enter the
gradient as constants, as in :mod:`.group_quadrature` (at the mode ``∂h/∂mode`` vanishes).
Posterior draws are exact: ``b_k ~ N(m_k, S_k^{-1})``, then ``a_c | b_k ~ N(m_c - C_c /
H_c (b_k - m_k), H_c^{-1})``. Non-Gaussian likelihoods keep :mod:`.group_effects`' one
grouping.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import permutations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.gradient import zero_grad
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import ancestors
from pytensor.tensor.random.basic import NormalRV

from .group_quadrature import GroupRule, Segments
from .group_rows import (
    constant_in,
    effect_prior,
    effect_reads,
    effect_rows,
    elementwise_rows,
    index_lifted,
    length,
    shape_of,
)
from .group_rule import without_effects
from .integrated import IntegratedOut

__all__ = ["GroupNestedOut", "NestedTerms", "find_nested", "integrate_nested"]


@dataclass(frozen=True)
class NestedTerms:
    """The rows' log density as a function of each row's inner and outer effect.

    Attributes
    ----------
    logp : TensorVariable
        ``(n,)`` the rows' log density, elementwise and quadratic in ``ua`` and ``ub``.
    ua, ub : TensorVariable
        ``(n,)`` each row's inner and outer effect (dummy inputs of ``logp``).
    inner : Segments
        The rows in the inner groups (counties).
    outer_rows : Segments
        The rows in the outer groups (states).
    outer : Segments
        The inner groups in the outer ones (each county's state).
    prior_a, prior_b : tuple
        Each effect's prior ``(mean, sd)`` over its groups.
    zero : TensorVariable or None
        The rows' total log density at both effects zero (None: :meth:`at` zeros).
    shift : tuple
        ``()``, or for an inner effect centred on the outer one (``a ~ N(r + k b[parent],
        σ)``) the ``(J,)`` graphs ``(r, k)``: the integrated effect is then ``a - r - k
        b[parent]``, of prior mean zero.
    """

    logp: object
    ua: object
    ub: object
    inner: Segments
    outer_rows: Segments
    outer: Segments
    prior_a: tuple
    prior_b: tuple
    zero: object = None
    shift: tuple = ()

    def quadratic(self) -> bool:
        """True when every row's second derivatives are free of both effects."""
        ga, gb = pt.grad(pt.sum(self.logp), [self.ua, self.ub])
        hessian = [*pt.grad(pt.sum(ga), [self.ua, self.ub]), pt.grad(pt.sum(gb), self.ub)]
        return constant_in(hessian, [self.ua, self.ub])

    def at_zero(self):
        """The rows' total log density at both effects zero (what the copy keeps)."""
        if self.zero is not None:
            return self.zero
        zeros_a = pt.zeros(self.inner.n_groups, dtype="float64")
        return pt.sum(self.at(zeros_a, pt.zeros(self.outer.n_groups, dtype="float64")))

    def at(self, a, b):
        """The rows' log density at group effects ``a`` (``(J,)``) and ``b`` (``(K,)``)."""
        rows = {self.ua: self.inner.gather(a), self.ub: self.outer_rows.gather(b)}
        out = graph_replace(self.logp, rows, strict=False)
        return pt.switch(pt.isnan(out), -np.inf, out)

    def derivatives(self, a, b):
        """Each row's ``(d/da, d/db, d²/da², d²/da db, d²/db²)`` at group effects ``a, b``."""
        ga, gb = pt.grad(pt.sum(self.logp), [self.ua, self.ub])
        haa, hab = pt.grad(pt.sum(ga), [self.ua, self.ub])
        hbb = pt.grad(pt.sum(gb), self.ub)
        rows = {self.ua: self.inner.gather(a), self.ub: self.outer_rows.gather(b)}
        return graph_replace([ga, gb, haa, hab, hbb], rows, strict=False)


def find_nested(model: pm.Model, candidates: list, min_groups: int):
    """``(inner, outer, NestedTerms)`` of two of ``candidates`` (``(effect, RowTerms,
    observed)`` triples of :mod:`.group_effects`) that enter one observed variable, the
    outer's groups each holding whole inner groups, with rows quadratic in both (the
    largest inner grouping first), or of a candidate whose prior mean reads such an outer
    effect of at least ``min_groups`` elements (:func:`_centred_nested`); None when no two
    do."""
    ordered = sorted(candidates, key=lambda c: (-c[1].n_groups, c[0].name))
    for (a, ra, ya), (b, rb, yb) in permutations(ordered, 2):
        if ya is not yb or ra.n_groups <= rb.n_groups:
            continue
        parent = _parent(ra.group, rb.group, ra.n_groups)
        if parent is None:
            continue
        found = effect_rows(model, [a, b], ya, shared=False)
        if found is None:
            continue
        logp, (ua, ub), _, (prior_a, prior_b) = found
        inner, outer_rows = Segments(ra.group, ra.n_groups), Segments(rb.group, rb.n_groups)
        outer = Segments(parent, rb.n_groups)
        return a, b, NestedTerms(logp, ua, ub, inner, outer_rows, outer, prior_a, prior_b)
    for a, ra, _ in ordered:
        found = _centred_nested(model, a, ra, min_groups)
        if found is not None:
            return found
    return None


def _centred_nested(model: pm.Model, a, ra, min_groups: int):
    """``(a, b, NestedTerms)`` where the candidate ``a``'s prior mean is ``r + k b[parent]``
    (``r`` and ``k`` free of ``b``) for a free ``Normal`` vector ``b`` of at least
    ``min_groups`` elements that no other term reads, and ``a``'s rows are quadratic in
    ``a``; else None."""
    mean = model.replace_rvs_by_values([a.owner.op.dist_params(a.owner)[0]])[0]
    if model.rvs_to_values[a] in ancestors([ra.sd]):
        return None
    for b in model.free_RVs:
        if b is a or not isinstance(b.owner.op, NormalRV) or model.rvs_to_transforms.get(b):
            continue
        value = model.rvs_to_values[b]
        if b.type.ndim != 1 or length(b) < min_groups or value not in ancestors([mean]):
            continue
        if value in ancestors([ra.sd]) or _readers(model, value, b) != [a]:
            continue
        found = _affine(mean, value, ra.n_groups, length(b))
        if found is not None:
            return a, b, _shifted_terms(model, ra, b, *found)
    return None


def _readers(model: pm.Model, value, rv) -> list:
    """The random variables and potentials other than ``rv`` whose log density reads
    ``value``."""
    rvs = [r for r in model.basic_RVs if r is not rv]
    graphs = [model.logp([r]) for r in rvs]
    graphs += model.replace_rvs_by_values(list(model.potentials))
    terms = [*rvs, *model.potentials]
    return [t for t, g in zip(terms, graphs, strict=True) if value in ancestors([g])]


def _affine(mean, value, n_inner: int, n_outer: int):
    """``(parent, r, k)`` when ``mean`` (``(J,)``) is ``r + k value[parent]`` elementwise for
    a constant index ``parent`` and ``r``, ``k`` free of ``value``; else None."""
    mean = index_lifted(pt.broadcast_to(mean, (n_inner,)).astype("float64"), value)
    found = effect_reads(mean, value, n_inner, n_outer)
    if found is None:
        return None
    parent, reads = found
    v = pt.vector("outer_of_inner", dtype="float64", shape=(n_inner,))
    mean = graph_replace(mean, {r: v for r in reads}, strict=False)
    slope = pt.grad(pt.sum(mean), v)
    if value in ancestors([mean]) or elementwise_rows(mean, [v]) is None:
        return None  # a mean of other groups' values (a sum, a shift) is not r + k v
    if not constant_in([slope], [v]):
        return None
    zeros = pt.zeros(n_inner, dtype="float64")
    rest, slope = graph_replace([mean, slope], {v: zeros}, strict=False)
    return parent, rest, slope


def _shifted_terms(model: pm.Model, ra, b, parent, rest, slope) -> NestedTerms:
    """The :class:`NestedTerms` of rows ``ra`` whose effect is ``a' + r + k b[parent]``."""
    n, n_outer = len(ra.group), length(b)
    ua = pt.vector("u_row_inner", dtype="float64", shape=(n,))
    ub = pt.vector("u_row_outer", dtype="float64", shape=(n,))
    inner = Segments(ra.group, ra.n_groups)
    row = ua + inner.gather(rest) + inner.gather(slope) * ub
    logp = graph_replace(ra.logp, {ra.u: row}, strict=False)
    prior_a = (pt.zeros(ra.n_groups, dtype="float64"), ra.sd)
    outer_rows, outer = Segments(parent[ra.group], n_outer), Segments(parent, n_outer)
    prior_b = effect_prior(model, b, n_outer)
    zero = pt.sum(ra.at(pt.zeros(n, dtype="float64")))
    args = (logp, ua, ub, inner, outer_rows, outer, prior_a, prior_b)
    return NestedTerms(*args, zero=zero, shift=(rest, slope))


def _parent(inner: np.ndarray, outer: np.ndarray, n_inner: int) -> np.ndarray | None:
    """Each inner group's outer group when every inner group's rows share one (an inner
    group without rows is put in the first), else None."""
    parent = np.zeros(n_inner, dtype=np.int64)
    parent[inner] = outer
    return parent if np.array_equal(parent[inner], outer) else None


def _joint_step(terms: NestedTerms):
    """The joint Newton step from the prior means, exact for rows quadratic in the effects:
    the steps of ``a`` and ``b`` (as gradient constants) and the curvatures ``H_c``,
    ``C_c`` and ``S_k`` (module docstring)."""
    (mean_a, sd_a), (mean_b, sd_b) = terms.prior_a, terms.prior_b
    d1a, d1b, daa, dab, dbb = terms.derivatives(mean_a, mean_b)
    inner, outer = terms.inner, terms.outer
    grad_a, h_a = inner.segment_sum(d1a), 1.0 / sd_a**2 - inner.segment_sum(daa)
    cross = -inner.segment_sum(dab)
    grad_b = terms.outer_rows.segment_sum(d1b)
    h_b = 1.0 / sd_b**2 - terms.outer_rows.segment_sum(dbb)
    schur = h_b - outer.segment_sum(cross**2 / h_a)
    step_b = (grad_b - outer.segment_sum(cross * grad_a / h_a)) / schur
    step_a = (grad_a - cross * outer.gather(step_b)) / h_a
    return zero_grad(step_a), zero_grad(step_b), h_a, cross, schur


def _log_normal(offset, sd, count: int):
    """``log N(mean + offset; mean, sd)`` summed over ``count`` groups."""
    return pt.sum(-0.5 * (offset / sd) ** 2 - pt.log(sd)) - 0.5 * np.log(2 * np.pi) * count


def nested_log_marginal(terms: NestedTerms):
    """The log likelihood with both effects integrated out (a scalar; module docstring) and
    the draws' tables ``(m_a, 1/√H_c, C_c/H_c, m_b, 1/√S_k)``."""
    step_a, step_b, h_a, cross, schur = _joint_step(terms)
    (mean_a, sd_a), (mean_b, sd_b) = terms.prior_a, terms.prior_b
    mode_a, mode_b = mean_a + step_a, mean_b + step_b
    n_a, n_b = terms.inner.n_groups, terms.outer.n_groups
    log_h = pt.sum(terms.at(mode_a, mode_b)) + _log_normal(step_a, sd_a, n_a)
    log_h += _log_normal(step_b, sd_b, n_b)
    dims = n_a + n_b
    log_det = pt.sum(pt.log(h_a)) + pt.sum(pt.log(schur))
    total = log_h + 0.5 * dims * np.log(2 * np.pi) - 0.5 * log_det
    tables = [mode_a, 1.0 / pt.sqrt(h_a), cross / h_a, mode_b, 1.0 / pt.sqrt(schur)]
    return total, tables


@dataclass(frozen=True)
class GroupNestedOut(IntegratedOut):
    """A model with nested group effects integrated out, and how to draw them back.

    Attributes
    ----------
    model : pm.Model
        The copy (both effects fixed at zero, plus the potential
        ``"integrated_group_effects"``).
    names : tuple of str
        The inner and the outer effect's names.
    shapes : tuple of tuple
        Their shapes, ``((J,), (K,))``.
    moments : tuple of TensorVariable
        On ``model``'s value variables: the tables of :func:`nested_log_marginal`, then
        :attr:`NestedTerms.shift`'s ``(r, k)`` where the inner effect is centred on the
        outer.
    parent : numpy.ndarray
        ``(J,)`` each inner group's outer group.
    rule : GroupRule
        One Newton step, one node: exact for these rows.
    """

    parent: np.ndarray
    rule: GroupRule = GroupRule(steps=1, nodes=1)
    #: Posterior draws whose tables are computed at once.
    draw_chunk = 256

    def draw(self, tables: list, rng: np.random.Generator) -> dict:
        """Exact draws of both effects from their conditional given the hyperparameters,
        one per row of the tables (the outer effect first)."""
        tables = [np.asarray(t, dtype=float) for t in tables]
        mode_a, scale_a, slope, mode_b, scale_b = tables[:5]
        b = mode_b + scale_b * rng.standard_normal(mode_b.shape)
        shift = (b - mode_b)[:, self.parent]
        a = mode_a - slope * shift + scale_a * rng.standard_normal(mode_a.shape)
        if len(tables) == 7:  # a centred on b: a = a' + r + k b[parent]
            a = a + tables[5] + tables[6] * b[:, self.parent]
        return dict(zip(self.names, (a, b), strict=True))


def integrate_nested(model: pm.Model, inner, outer, terms: NestedTerms) -> GroupNestedOut:
    """``model`` with the nested effects ``inner`` and ``outer`` integrated out (the
    module's docstring), found by :func:`find_nested`.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from pymc_evidence.transforms.group_effects import integrate_group_effects
    >>> county = np.repeat(np.arange(40), 3)
    >>> state = np.repeat(np.arange(8), 5)[county]
    >>> with pm.Model() as model:
    ...     tau = pm.HalfNormal("tau", 1.0)
    ...     a = pm.Normal("a", 0.0, tau, shape=40)
    ...     b = pm.Normal("b", 0.0, 1.0, shape=8)
    ...     _ = pm.Normal("y", a[county] + b[state], 1.0, observed=np.zeros(120))
    >>> out = integrate_group_effects(model)
    >>> out.names, [rv.name for rv in out.model.free_RVs]
    (('a', 'b'), ['tau'])
    """
    total, tables = nested_log_marginal(terms)
    graphs = [*tables, *terms.shift]
    new, moments = without_effects(model, [inner, outer], total - terms.at_zero(), graphs)
    names = (inner.name, outer.name)
    shapes = (shape_of(inner), shape_of(outer))
    return GroupNestedOut(new, names, shapes, tuple(moments), terms.outer.group)
