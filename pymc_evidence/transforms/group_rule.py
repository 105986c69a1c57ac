"""How an integration of group effects is set in a model: the rule chosen at test points
around the hyperparameters' mode, and the copy with the effects fixed at zero.

Shared by :mod:`.group_effects` (one effect a group) and :mod:`.group_pair_effects` (two).
"""

from __future__ import annotations

import numpy as np
import pymc as pm
from pytensor.graph.traversal import ancestors
from scipy import optimize

from .discrete_values import to_new_values
from .group_quadrature import GroupRule
from .group_rows import shape_of

__all__ = [
    "MAX_SPREAD",
    "MAX_STEPS",
    "MIN_SPREAD",
    "NODE_TOLERANCE",
    "SPREAD",
    "prior_of",
    "rule_points",
    "select_rule",
    "without_effects",
]

#: Largest difference (nats, the whole likelihood) between a node count's integral and the
#: next count's at which the smaller count is taken.
NODE_TOLERANCE = 5e-3
#: How far the test points lie from the initial point (unconstrained units, every value)
#: where no mode is searched.
SPREAD = 0.5
#: Nearest and farthest a test point lies from the mode: four posterior scales, within
#: these bounds.
MIN_SPREAD, MAX_SPREAD = 0.25, 2.0
#: Most evaluations of the integrated density in the search for the centre.
CENTRE_EVALUATIONS = 200
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


def rule_points(model: pm.Model, inputs, log_density=None) -> list:
    """Where the rule is checked: a centre and four points around it (every value moved by
    its spread, together and in alternating signs), as argument lists of ``inputs``.

    With ``log_density`` (an argument list of ``inputs`` -> the hyperparameters' log
    posterior density, the effects integrated roughly) the centre is its mode, searched from
    the model's initial point, and each value's spread is four posterior scales there
    (from the curvature; between :data:`MIN_SPREAD` and :data:`MAX_SPREAD`): the rule must be
    exact where the posterior is, which may lie far from the initial point (a group scale's
    initial value of 1 against a posterior near half of it asked twice the nodes needed
    where the posterior is; measured in :doc:`/hard_models`, "Group effects integrated out:
    hierarchies of hundreds to thousands of groups").
    Without it, or where the search finds no finite density, the initial point and
    :data:`SPREAD`.

    Examples
    --------
    >>> import pymc as pm
    >>> with pm.Model() as m:
    ...     mu = pm.Normal("mu", 3.0, 1.0)
    >>> [float(p[0]) for p in rule_points(m, m.value_vars)]
    [3.0, 3.5, 2.5, 3.5, 2.5]
    """
    start = model.initial_point()
    values = [np.asarray(start[var.name], dtype=float) for var in inputs]
    sizes = [v.size for v in values]

    def unravel(x):
        if not sizes:  # nothing but the effects is free
            return []
        parts = np.split(np.asarray(x, dtype=float), np.cumsum(sizes)[:-1])
        pairs = zip(parts, values, inputs, strict=True)
        return [p.reshape(v.shape).astype(var.dtype) for p, v, var in pairs]

    x0 = np.concatenate([v.ravel() for v in values]) if values else np.zeros(0)
    centre, spread = x0, np.full(x0.shape, SPREAD)
    if log_density is not None and x0.size:
        centre, spread = _centre(lambda x: log_density(unravel(x)), x0)
    alternate = np.where(np.arange(x0.size) % 2 == 0, 1.0, -1.0)
    shifts = [0.0, spread, -spread, spread * alternate, -spread * alternate]
    return [unravel(centre + shift) for shift in shifts]


def _centre(log_density, x0: np.ndarray):
    """The mode of ``log_density`` near ``x0`` and four scales of its curvature along each
    coordinate (clipped to ``[MIN_SPREAD, MAX_SPREAD]``); ``x0`` and :data:`SPREAD` where no
    finite density is found."""

    def loss(x):
        with np.errstate(all="ignore"):
            value = float(log_density(x))
        return -value if np.isfinite(value) else np.inf

    fallback = x0, np.full(x0.shape, SPREAD)
    if not np.isfinite(loss(x0)):
        return fallback
    found = optimize.minimize(
        loss, x0, method="L-BFGS-B", bounds=[(v - 5.0, v + 5.0) for v in x0],
        options={"maxfun": CENTRE_EVALUATIONS},
    )  # fmt: skip
    mode = found.x if np.isfinite(found.fun) and found.fun <= loss(x0) else x0
    f0, h, curvature = loss(mode), 0.05, np.zeros(x0.size)
    for i in range(x0.size):
        step = np.zeros(x0.size)
        step[i] = h
        curvature[i] = (loss(mode + step) - 2 * f0 + loss(mode - step)) / h**2
    with np.errstate(all="ignore"):
        scale = np.where(curvature > 0, 1.0 / np.sqrt(curvature), np.inf)
    return mode, np.clip(np.nan_to_num(4.0 * scale, nan=MAX_SPREAD), MIN_SPREAD, MAX_SPREAD)


def prior_of(model: pm.Model, inputs):
    """The log prior density (Jacobians included) of the free variables whose values are
    ``inputs``, as a function of an argument list of ``inputs`` (other values at the
    initial point), in numpy."""
    from ..runtime._compile import compile_fn

    rvs = [model.values_to_rvs[v] for v in inputs if v in model.values_to_rvs]
    if not rvs:
        return lambda args: 0.0
    logp = model.logp(vars=rvs, jacobian=True)
    others = [v for v in model.value_vars if v in ancestors([logp]) and v not in inputs]
    fn = compile_fn([*inputs, *others], logp, jit=False)
    start = model.initial_point()
    fixed = [start[v.name] for v in others]
    return lambda args: float(fn(*args, *fixed))


def without_effects(model: pm.Model, effects, potential, graphs):
    """A copy of ``model`` with ``effects`` fixed at zero and ``potential`` added (both in
    ``model``'s value variables), and ``graphs`` on the copy's."""
    new = pm.do(
        model, {e.name: np.zeros(shape_of(e)) for e in effects}, make_interventions_shared=False
    )
    renamed = to_new_values(model, new, [potential, *graphs])
    with new:
        pm.Potential("integrated_group_effects", renamed[0])
    return new, renamed[1:]
