"""Nested groupings of any elementwise likelihood integrated out: two levels of adaptive
Gauss-Hermite quadrature.

A Poisson or Bernoulli ``(1|state) + (1|state:county)``: given the hyperparameters each
state ``k`` is independent of the others, with its counties ``c``:

    Z_k = ∫ N(b; μ_b, σ_b) ∏_{c in k} F_c(b) db,
    F_c(b) = ∫ N(a; μ_a, σ_a) ∏_{i in c} p(y_i | a, b) da.

Where the rows are quadratic in both effects :mod:`.group_nested` computes ``Z_k`` in one
Newton step; here the integrand is not Gaussian, and ``Z_k`` is computed as lme4's
``nAGQ`` computes one level, twice over:

1. the joint mode of ``(b_k, a_c)`` by damped Newton steps on the arrow-shaped Hessian
   (the Schur complement ``S_k`` onto the state, then each county);
2. ``K`` Gauss-Hermite nodes ``b_q = b̂ + √2 x_q / √S_k`` for the state;
3. at each ``b_q`` every county's conditional mode by Newton steps from the joint mode's
   linear prediction ``â_c - C_c / H_c (b_q - b̂)``, and ``K`` nodes around it for
   ``F_c(b_q)``.

Each level is exact as its nodes grow, and one node each is the joint Laplace
approximation. The node count and steps are chosen where the model is made, in numpy, by
the same algebra (:class:`NestedOps`: written once for numpy and PyTensor), as
:func:`.group_effects.choose_rule` chooses them for one level. The modes enter the
gradient as constants, as in :mod:`.group_quadrature`.

Posterior draws come from each state's conditional given the hyperparameters: the state
by an independence Metropolis chain through :data:`PROPOSALS` widened Laplace proposals
weighted by ``N(b) ∏ F_c(b)`` (its marginal, by the inner rule), then each county, given
the state drawn, by a chain through as many proposals around its conditional mode. Both
chains are one-dimensional; they are exact as the proposals grow. The state's chain runs in
the compiled graph, so that the counties' proposals are made at the state drawn only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytensor.tensor as pt
from pytensor.graph.traversal import ancestors

from .discrete_values import independence_chain, to_new_values
from .group_nested_levels import (
    NestedOps,
    NestedRule,
    draw_tables,
    graph_ops,
    joint_mode,
    numpy_ops,
    state_integrals,
)
from .group_rows import shape_of
from .group_rule import MAX_STEPS, prior_of, rule_points, select_rule, without_effects
from .integrated import IntegratedOut

__all__ = [
    "GroupNestedQuadratureOut", "choose_nested_rule", "integrate_nested_quadrature",
    "nested_totals",
]  # fmt: skip

#: Node counts tried at both levels, each against the next.
NODE_COUNTS = (1, 3, 5, 7, 9)
#: Proposals of each posterior draw's chains (the state's, then each county's).
PROPOSALS = 8
#: Newton steps of the counties' conditional modes where the rule is checked (from the
#: joint mode's linear prediction: Newton's method converges quadratically from there).
CHECK_STEPS = 12


def nested_totals(ops: NestedOps, inner_nodes=None):
    """At one point, in numpy: the joint Newton steps' and the inner steps' largest lengths
    (each of :data:`.group_rule.MAX_STEPS` or :data:`CHECK_STEPS`) and the total log
    integral at every count of :data:`NODE_COUNTS`, of the inner nodes with the most outer
    nodes, or (given ``inner_nodes``) of the outer nodes."""
    with np.errstate(all="ignore"):
        off_a, off_b, sizes = joint_mode(ops, MAX_STEPS)
        inner_sizes, totals, top = [], [], NODE_COUNTS[-1]
        for k in NODE_COUNTS:
            rule = NestedRule(0, top, CHECK_STEPS, k)
            if inner_nodes is not None:
                rule = NestedRule(0, k, CHECK_STEPS, inner_nodes)
            record = [] if k == top else None
            totals.append(np.sum(state_integrals(ops, rule, (off_a, off_b), record)))
            inner_sizes = record or inner_sizes
    return np.array([float(v) for v in sizes]), np.array(inner_sizes), np.asarray(totals)


def _laplace(terms, fn):
    """``point -> log`` likelihood with both effects integrated by the joint Laplace
    approximation, in numpy; Newton's method starts from the last call's mode."""
    last = {}

    def total(point):
        ops = numpy_ops(terms, fn, point)
        with np.errstate(all="ignore"):
            off_a, off_b, _ = joint_mode(ops, MAX_STEPS, last.get("mode"), tol=1e-8)
            last["mode"] = (off_a, off_b)
            return float(np.sum(state_integrals(ops, NestedRule(0, 1, 0, 1), (off_a, off_b))))

    return total


def choose_nested_rule(model, terms) -> NestedRule:
    """The fewest Newton steps and nodes of each level exact to
    :data:`.group_rule.NODE_TOLERANCE` at the hyperparameters' mode and around it, chosen
    as :func:`.group_effects.choose_rule` chooses one level's, in numpy: the inner nodes
    with the most outer nodes, then the outer nodes with those inner nodes."""
    from ..runtime._compile import compile_fn

    ops = graph_ops(terms)
    logp = ops.rows(terms.ua, terms.ub)
    graphs = [logp, *ops.derivs(terms.ua, terms.ub), *terms.prior_a, *terms.prior_b]
    inputs = [v for v in model.value_vars if v in ancestors(graphs)]
    fn = compile_fn([terms.ua, terms.ub, *inputs], graphs, jit=False)
    prior, laplace = prior_of(model, inputs), _laplace(terms, fn)
    points = rule_points(model, inputs, lambda p: prior(p) + laplace(p))
    found = [nested_totals(numpy_ops(terms, fn, p)) for p in points]
    kept = [i for i, f in enumerate(found) if np.all(np.isfinite(f[2]))]
    inner = select_rule([found[i][1] for i in kept], [found[i][2] for i in kept], False,
                        NODE_COUNTS)  # fmt: skip
    outer_totals = [nested_totals(numpy_ops(terms, fn, points[i]), inner.nodes)[2] for i in kept]
    outer = select_rule([found[i][0] for i in kept], outer_totals, False, NODE_COUNTS)
    return NestedRule(outer.steps, outer.nodes, inner.steps, inner.nodes)


@dataclass(frozen=True)
class GroupNestedQuadratureOut(IntegratedOut):
    """A model with nested group effects of a non-Gaussian likelihood integrated out, and
    how to draw them back.

    Attributes
    ----------
    model : pm.Model
        The copy (both effects fixed at zero, plus the potential
        ``"integrated_group_effects"``).
    names, shapes : tuple
        The inner and the outer effect's names and shapes, ``((J,), (K,))``.
    moments : tuple
        Empty: every draw takes proposals (:attr:`tables_of`).
    parent : numpy.ndarray
        ``(J,)`` each inner group's outer group.
    rule : NestedRule
        The Newton steps and the nodes of each level.
    proposal_size : int
        Standard normals each posterior draw takes.
    tables_of : callable
        ``tables_of(z)``: the graphs of a draw given ``z`` (:func:`draw_tables`, then
        the inner effect's shift ``(r, k)`` where it is centred on the outer).
    """

    parent: np.ndarray
    rule: NestedRule
    proposal_size: int
    tables_of: object
    #: Posterior draws whose tables are computed at once (each ``2 P J + K`` values, from
    #: every county's rows at the ``P`` state proposals and the inner nodes).
    draw_chunk = 64

    def draw(self, tables: list, rng: np.random.Generator) -> dict:
        """Draws of both effects, one per row of the tables: the states drawn in the
        graph, then each county's chain at its state."""
        b, a_p, log_wa = (np.asarray(t, dtype=float) for t in tables[:3])
        a = np.take_along_axis(a_p, independence_chain(log_wa, rng)[:, None], axis=1)[:, 0]
        if len(tables) == 5:  # a centred on b: a = a' + r + k b[parent]
            a = a + tables[3] + tables[4] * b[:, self.parent]
        return dict(zip(self.names, (a, b), strict=True))


def integrate_nested_quadrature(model, inner, outer, terms) -> GroupNestedQuadratureOut:
    """``model`` with the nested effects ``inner`` and ``outer`` of non-Gaussian rows
    integrated out (the module's docstring), found by :func:`.group_nested.find_nested`.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from pymc_evidence.transforms.group_effects import group_candidates
    >>> from pymc_evidence.transforms.group_nested import find_nested
    >>> county = np.repeat(np.arange(24), 2)
    >>> state_of = np.arange(24) % 6
    >>> with pm.Model() as model:
    ...     tau = pm.HalfNormal("tau", 1.0)
    ...     a = pm.Normal("a", 0.0, tau, shape=24)
    ...     b = pm.Normal("b", 0.0, 1.0, shape=6)
    ...     eta = a[county] + b[state_of[county]]
    ...     _ = pm.Bernoulli("y", logit_p=eta, observed=np.arange(48) % 2)
    >>> found = find_nested(model, group_candidates(model), 5)
    >>> out = integrate_nested_quadrature(model, *found)
    >>> out.names, [rv.name for rv in out.model.free_RVs]
    (('a', 'b'), ['tau'])
    """
    rule = choose_nested_rule(model, terms)
    ops = graph_ops(terms)
    total = pt.sum(state_integrals(ops, rule, joint_mode(ops, rule.steps)[:2]))
    new, _ = without_effects(model, [inner, outer], total - terms.at_zero(), [])
    n_b, n_a = terms.outer.n_groups, terms.inner.n_groups

    def tables_of(z):
        ends = np.cumsum(sizes)
        z_b = z[: ends[0]].reshape((PROPOSALS, n_b))
        u_b = z[ends[0] : ends[1]].reshape((PROPOSALS - 1, n_b))
        z_a = z[ends[1] :].reshape((PROPOSALS, n_a))
        log_u = pt.log(0.5 * pt.erfc(-u_b / np.sqrt(2.0)))  # standard normals to uniforms
        log_u = [log_u[t] for t in range(PROPOSALS - 1)]
        ops = graph_ops(terms)
        mode = joint_mode(ops, rule.steps)[:2]
        graphs = [*draw_tables(ops, rule, mode, z_b, log_u, z_a), *terms.shift]
        return to_new_values(model, new, graphs)

    sizes = [PROPOSALS * n_b, (PROPOSALS - 1) * n_b, PROPOSALS * n_a]
    size = int(sum(sizes))
    names, shapes = (inner.name, outer.name), (shape_of(inner), shape_of(outer))
    return GroupNestedQuadratureOut(
        new, names, shapes, (), terms.outer.group, rule, size, tables_of
    )
