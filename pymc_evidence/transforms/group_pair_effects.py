"""A random intercept and slope of one grouping found in a model and integrated out.

:func:`find_pair` looks among the group effects that :mod:`.group_effects` would integrate
one at a time for two that share their observed variable and their group index and
reach its rows jointly elementwise (bambi's ``(1 + x | g)``: ``1|g_offset`` and
``x|g_offset``); :func:`integrate_pair` puts their two-dimensional integral
(:mod:`.group_pairs`) in a copy of the model, with the rule chosen as for one effect.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.graph.traversal import ancestors

from .discrete_values import to_new_values
from .group_pairs import (
    PAIR_NODE_COUNTS,
    PROPOSALS,
    PairTerms,
    choose_pair_rule,
    pair_draws,
    pair_moments,
    pair_potential,
)
from .group_quadrature import GroupRule, RowTerms
from .group_rows import constant_in, effect_rows, shape_of
from .group_rule import MAX_STEPS, rule_points, select_rule, without_effects
from .integrated import IntegratedOut

__all__ = ["GroupPairOut", "find_pair", "integrate_pair", "pair_terms"]


@dataclass(frozen=True)
class GroupPairOut(IntegratedOut):
    """A model with two effects of one grouping integrated out, and how to draw them back.

    Attributes
    ----------
    model : pm.Model
        The copy (the effects fixed at zero, plus the potential
        ``"integrated_group_effects"``).
    names : tuple of str
        The two effects' names.
    shapes : tuple of tuple
        Their shapes, ``((J,), (J,))``.
    moments : tuple of TensorVariable
        On ``model``'s value variables: each group's modes and Cholesky factor.
    rule : GroupRule
        The Newton steps and Gauss-Hermite nodes (per dimension) chosen.
    proposal_size : int
        Standard normals each posterior draw takes (0: the likelihood is Gaussian in the
        effects and the draws are exact Gaussian ones).
    tables_of : callable
        ``tables_of(z)``: the graphs of a draw given ``z``, ``proposal_size`` standard normals.
    back : MatrixBack or None
        For one ``(J, 2)`` effect (:mod:`.group_matrix_effects`): how its draws come from the
        pair's, given the tables before the pair's (``back.count`` of them); None for two
        vector effects.
    """

    rule: GroupRule
    proposal_size: int
    tables_of: object
    back: object = None
    #: Posterior draws whose tables are computed at once.
    draw_chunk = 256

    def draw(self, tables: list, rng: np.random.Generator) -> dict:
        """Draws of both effects, one per row of the tables (:func:`.group_pairs.pair_draws`;
        the proposals, where there are some, are the tables' last entry)."""
        proposals, extra = None, []
        if self.back is not None:
            extra, tables = tables[: self.back.count], tables[self.back.count :]
        if self.proposal_size:
            n_groups = self.shapes[0][0]
            proposals = np.asarray(tables[-1]).reshape(-1, PROPOSALS, 2, n_groups)
        a, b = pair_draws(tables, proposals, rng)
        if self.back is not None:
            return {self.names[0]: self.back.assemble(extra, a, b)}
        return dict(zip(self.names, (a, b), strict=True))


def find_pair(model: pm.Model, candidates: list):
    """``(a, b, PairTerms)`` of two of ``candidates`` (``(effect, RowTerms, observed)``
    triples) that enter one observed variable through one group index, the largest
    grouping first; None when no two do."""
    ordered = sorted(candidates, key=lambda c: (-c[1].n_groups, c[0].name))
    for (a, ra, ya), (b, rb, yb) in combinations(ordered, 2):
        if ya is not yb or not np.array_equal(ra.group, rb.group):
            continue
        found = effect_rows(model, [a, b], ya)
        if found is None:
            continue
        logp, us, group, priors = found
        return a, b, pair_terms(logp, us, group, ra.n_groups, priors)
    return None


def pair_terms(logp, us, group, n_groups: int, priors) -> PairTerms:
    """The :class:`~.group_pairs.PairTerms` of rows ``logp`` elementwise in the two row
    effects ``us``, with the effects' prior ``(mean, sd)`` pairs ``priors``."""
    ga, gb = pt.grad(pt.sum(logp), list(us))
    hess = [*pt.grad(pt.sum(ga), list(us)), pt.grad(pt.sum(gb), us[1])]
    gaussian = constant_in(hess, us)
    rows = RowTerms(logp, us[0], group, n_groups, *priors[0], gaussian=gaussian)
    means, sds = zip(*priors, strict=True)
    return PairTerms(logp, tuple(us), rows, means, sds, gaussian)


def integrate_pair(model: pm.Model, effects, terms: PairTerms, back=None) -> GroupPairOut:
    """``model`` with ``effects`` integrated out (see the module's docstring): two vectors,
    the pair's effects, or one ``(J, 2)`` matrix whose draws ``back`` (a
    :class:`~.group_matrix_effects.MatrixBack`) makes from the pair's."""
    rule = choose_rule(model, terms)
    potential = pair_potential(terms, rule)
    extra = list(back.graphs) if back is not None else []
    graphs = [*extra, *pair_moments(terms, rule)]
    new, moments = without_effects(model, effects, potential, graphs)
    size = 0 if terms.gaussian else PROPOSALS * 2 * terms.rows.n_groups

    def tables_of(z):
        proposals = z.reshape((PROPOSALS, 2, terms.rows.n_groups))
        graphs = [*extra, *pair_moments(terms, rule, proposals)]
        return [*to_new_values(model, new, graphs), z]

    names = tuple(e.name for e in effects)
    shapes = tuple(shape_of(e) for e in effects)
    return GroupPairOut(new, names, shapes, tuple(moments), rule, size, tables_of, back)


def choose_rule(model: pm.Model, terms: PairTerms) -> GroupRule:
    """The Newton steps and nodes per dimension, chosen as
    :func:`.group_effects.choose_rule` chooses them for one effect, in numpy."""
    from ..runtime._compile import compile_fn

    ua, ub = terms.us
    derivatives = terms.derivatives(ua, ub)
    graphs = [terms.at(ua, ub), *derivatives]
    for m, s in zip(terms.means, terms.sds, strict=True):
        graphs += [m, s]
    inputs = [v for v in model.value_vars if v in ancestors(graphs)]
    fn = compile_fn([ua, ub, *inputs], graphs, jit=False)
    steps, values = [], []
    group, n_groups = terms.rows.group, terms.rows.n_groups
    for point in rule_points(model, inputs):
        size, total = choose_pair_rule(
            lambda e1, e2, p=point: fn(e1, e2, *p), group, n_groups, terms.gaussian, MAX_STEPS
        )
        if np.all(np.isfinite(total)):
            steps.append(size)
            values.append(total)
    return select_rule(steps, values, terms.gaussian, PAIR_NODE_COUNTS)
