"""How an integration of group effects is set in a model: the rule chosen at test points
around the initial point, and the copy with the effects fixed at zero.

Shared by :mod:`.group_effects` (one effect a group) and :mod:`.group_pair_effects` (two).
"""

from __future__ import annotations

import numpy as np
import pymc as pm

from .discrete_values import to_new_values
from .group_quadrature import GroupRule
from .group_rows import length

__all__ = ["MAX_STEPS", "NODE_TOLERANCE", "SPREAD", "select_rule", "rule_points", "without_effects"]

#: Largest difference (nats, the whole likelihood) between a node count's integral and the
#: next count's at which the smaller count is taken.
NODE_TOLERANCE = 5e-3
#: How far the rule's test points lie from the initial point (unconstrained units).
SPREAD = 0.5
#: Most Newton steps.
MAX_STEPS = 30


def select_rule(steps: list, values: list, gaussian: bool, counts: tuple) -> GroupRule:
    """The fewest Newton steps after which no step moves a mode by ``1e-6`` of its scale
    (two more, for points between the test points) and the fewest nodes whose total agrees
    with the next count's, at every test point (``steps``, ``values``: one row each)."""
    if not values:
        return GroupRule(MAX_STEPS, counts[-1])
    converged = np.flatnonzero(np.max(steps, axis=0) < 1e-6)
    n_steps = max(int(converged[0]), 1) if converged.size else MAX_STEPS
    agree = np.max(np.abs(np.diff(values, axis=1)), axis=0) <= NODE_TOLERANCE
    nodes = counts[int(np.argmax(agree))] if agree.any() else counts[-1]
    return GroupRule(1 if gaussian else min(n_steps + 2, MAX_STEPS), nodes)


def rule_points(model: pm.Model, inputs) -> list:
    """The model's initial point and four points around it (every value moved by
    :data:`SPREAD`, together and in alternating signs), as argument lists of ``inputs``."""
    start = model.initial_point()
    points = []
    for shift in (0.0, SPREAD, -SPREAD, "alt+", "alt-"):
        args = []
        for i, var in enumerate(inputs):
            value = np.asarray(start[var.name], dtype=float)
            if isinstance(shift, str):
                sign = 1.0 if (i % 2 == 0) == (shift == "alt+") else -1.0
                value = value + SPREAD * sign
            else:
                value = value + shift
            args.append(value.astype(var.dtype))
        points.append(args)
    return points


def without_effects(model: pm.Model, effects, potential, graphs):
    """A copy of ``model`` with ``effects`` fixed at zero and ``potential`` added (both in
    ``model``'s value variables), and ``graphs`` on the copy's."""
    new = pm.do(
        model, {e.name: np.zeros(length(e)) for e in effects}, make_interventions_shared=False
    )
    renamed = to_new_values(model, new, [potential, *graphs])
    with new:
        pm.Potential("integrated_group_effects", renamed[0])
    return new, renamed[1:]
