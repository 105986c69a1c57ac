"""Nested groupings of a Gaussian likelihood integrated out together: counties in states.

bambi's ``(1|state) + (1|state:county)``: a county effect ``a`` and a state effect ``b``
enter the rows of one observed variable as ``a[county] + b[state]``, and every county lies
in one state. Given the hyperparameters ``θ`` the states are independent, each with its
counties:

    p(y | θ) = ∏_k ∫ N(b_k; μ_b, σ_b) ∏_{c in k} ∫ N(a_c; μ_a, σ_a)
                   ∏_{i in c} p(y_i | a_c, b_k) da_c db_k.

Integrating the counties alone (:mod:`.group_effects`) leaves the states in the annealed
space, one dimension each, with a funnel against their scale: 54 dimensions for 1 000
counties in 50 states, and ``smc`` cost twice a plain ``pm.sample`` there (measured in
:doc:`/performance`, "Twenty-ninth session"). Where the rows' log density is quadratic in
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

from .group_pair_effects import constant_in
from .group_quadrature import GroupRule, Segments
from .group_rows import effect_rows, shape_of
from .group_rule import without_effects

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
    """

    logp: object
    ua: object
    ub: object
    inner: Segments
    outer_rows: Segments
    outer: Segments
    prior_a: tuple
    prior_b: tuple

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


def find_nested(model: pm.Model, candidates: list):
    """``(inner, outer, NestedTerms)`` of two of ``candidates`` (``(effect, RowTerms,
    observed)`` triples of :mod:`.group_effects`) that enter one observed variable, the
    outer's groups each holding whole inner groups, with rows quadratic in both (the
    largest inner grouping first); None when no two do."""
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
        hessian = pt.grad(pt.sum(pt.grad(pt.sum(logp), ua)), [ua, ub])
        hessian.append(pt.grad(pt.sum(pt.grad(pt.sum(logp), ub)), ub))
        if not constant_in(hessian, [ua, ub]):
            continue
        inner, outer_rows = Segments(ra.group, ra.n_groups), Segments(rb.group, rb.n_groups)
        outer = Segments(parent, rb.n_groups)
        terms = NestedTerms(logp, ua, ub, inner, outer_rows, outer, prior_a, prior_b)
        return a, b, terms
    return None


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
class GroupNestedOut:
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
        On ``model``'s value variables: the tables of :func:`nested_log_marginal`.
    parent : numpy.ndarray
        ``(J,)`` each inner group's outer group.
    rule : GroupRule
        One Newton step, one node: exact for these rows.
    """

    model: pm.Model
    names: tuple
    shapes: tuple
    moments: tuple
    parent: np.ndarray
    rule: GroupRule = GroupRule(steps=1, nodes=1)
    #: Posterior draws whose tables are computed at once.
    draw_chunk = 256

    @property
    def tables(self) -> tuple:
        """The graphs :meth:`draw` needs at each posterior draw."""
        return self.moments

    def draw(self, tables: list, rng: np.random.Generator) -> dict:
        """Exact draws of both effects from their conditional given the hyperparameters,
        one per row of the tables (the outer effect first)."""
        mode_a, scale_a, slope, mode_b, scale_b = (np.asarray(t, dtype=float) for t in tables)
        b = mode_b + scale_b * rng.standard_normal(mode_b.shape)
        shift = (b - mode_b)[:, self.parent]
        a = mode_a - slope * shift + scale_a * rng.standard_normal(mode_a.shape)
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
    zeros_a = pt.zeros(terms.inner.n_groups, dtype="float64")
    at_zero = pt.sum(terms.at(zeros_a, pt.zeros(terms.outer.n_groups, dtype="float64")))
    new, moments = without_effects(model, [inner, outer], total - at_zero, tables)
    names = (inner.name, outer.name)
    shapes = (shape_of(inner), shape_of(outer))
    return GroupNestedOut(new, names, shapes, tuple(moments), terms.outer.group)
