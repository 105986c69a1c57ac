"""A hierarchy's scalar group effects integrated out, group by group, by quadrature.

A random intercept ``b ~ N(μ, σ)`` of ``J`` groups enters a likelihood of ``n`` rows as
``b[g]``: given the hyperparameters ``θ`` the groups are independent, and

    p(y | θ) = ∏_j ∫ N(b_j; μ_j, σ_j) ∏_{i: g_i = j} p(y_i | b_j, θ) db_j,

``J`` one-dimensional integrals (:mod:`.group_quadrature`: adaptive Gauss-Hermite, lme4's
``nAGQ``; exact for a Gaussian likelihood). The evidence is unchanged, and the annealing
then runs over ``θ`` only: a few hyperparameters and coefficients instead of ``J + d``
dimensions, at ``O(n)`` cost a density call (in the joint space the default's cost grew
faster than ``J``, and its ADVI fit failed on a 1000-group centred Gaussian hierarchy:
:doc:`/hard_models`, "Group effects integrated out: hierarchies of hundreds to thousands of
groups").

:func:`integrate_group_effects` finds such a variable by the graph alone: a free ``Normal``
``b`` of at least :data:`MIN_GROUPS` elements whose only dependent term is one observed
variable ``y``, that term's log density depending on ``b`` through ``b[g]`` for a constant
index ``g`` (or through ``b`` itself, one row per group) and, from there, elementwise
(every op between the effect of a row and that row's log density is ``Elemwise``): the
likelihood may be any (Normal, Poisson, Bernoulli, binomial, negative binomial, Student-t,
...), with any link, offsets and other parameters. Centred (``N(μ, τ)``) and non-centred
(``N(0, 1)`` scaled in the likelihood) effects alike; of several groupings
(``(1|county) + (1|year)``) the largest is integrated, the others stay in the model. Two
effects of one grouping that enter the same rows (a random intercept and slope,
``(1 + x | g)``) are integrated together (:mod:`.group_pair_effects`), as are nested
groupings (counties in states: :mod:`.group_nested` for a Gaussian likelihood, two levels
of quadrature (:mod:`.group_nested_quadrature`) for others from :data:`MIN_NESTED_OUTER`
states) and the two
columns of a ``(J, 2)`` effect with a full covariance (``LKJCholeskyCov``;
:mod:`.group_matrix_effects`). Below
:data:`MIN_GROUPS` (5) the model keeps its form: a vector of a few elements is as likely
a set of coefficients as a grouping.

The node count and the Newton steps are chosen once, where the model is made
(:func:`choose_rule`): at the hyperparameters' posterior mode (the effects integrated by
Laplace's method for the search) and at points around it, four posterior scales away
(:func:`.group_rule.rule_points`), the fewest steps after which no group's mode moves
more than ``1e-6`` of its scale, and the fewest nodes of :data:`NODE_COUNTS` whose total
agrees with the next count's to :data:`NODE_TOLERANCE`. A Gaussian likelihood needs one
step and one node wherever it is checked: its points are around the initial point.

The posterior draws of ``b`` come back from each group's conditional given ``θ``
(:meth:`GroupEffectsOut.draw`): Gaussian draws where the likelihood is Gaussian in the
effect (exact), else inverse-CDF draws from the conditional density on a grid of
:data:`GRID` points over ±6 scales around the mode, log-linear between them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.graph.traversal import ancestors
from pytensor.tensor.random.basic import NormalRV
from scipy import special, stats

from .gaussian_latent import dependents
from .group_matrix_effects import find_matrix_effect
from .group_nested import find_nested, integrate_nested
from .group_nested_quadrature import integrate_nested_quadrature
from .group_pair_effects import find_pair, integrate_pair
from .group_quadrature import MAX_STEP, GroupRule, RowTerms, log_marginal, mode_and_scale
from .group_rows import length, row_terms
from .group_rule import (
    MAX_STEPS,
    NODE_TOLERANCE,
    prior_of,
    rule_points,
    select_rule,
    without_effects,
)
from .integrated import IntegratedOut

__all__ = [
    "GRID", "MIN_GROUPS", "MIN_NESTED_OUTER", "NODE_TOLERANCE", "GroupEffectsOut",
    "group_candidates", "integrate_group_effects",
]  # fmt: skip

#: Fewest groups integrated out. Until 2026-12-05 this was 100; below it the joint space was
#: kept, but on 8-30 groups integrating covers the truth better and costs less (eight
#: schools, bambi's 12-group ``(1|g)``, 30 Gaussian groups; measured in :doc:`/hard_models`,
#: "Group effects integrated out: hierarchies of hundreds to thousands of groups").
MIN_GROUPS = 5
#: Fewest outer groups (states) of a non-Gaussian nested grouping integrated by two levels
#: of quadrature (:mod:`.group_nested_quadrature`); below, the inner grouping alone is
#: integrated and the outer stays in the annealed space. Each density call of two levels
#: costs several times one level's; measured in :doc:`/hard_models`, "Nested groupings of
#: counts and binary outcomes", fewer annealed dimensions paid for it at 150 states and not
#: at 50.
MIN_NESTED_OUTER = 100
#: Node counts tried, each against the next.
NODE_COUNTS = (1, 3, 5, 7, 9, 11, 15, 21, 31)
#: Points of the grid of the non-Gaussian draws.
GRID = 32
#: Posterior draws whose grids are inverted together (their temporaries cache-sized).
DRAW_BLOCK = 8


@dataclass(frozen=True)
class GroupEffectsOut(IntegratedOut):
    """A model with a group effect integrated out, and how to draw it back.

    Attributes
    ----------
    model : pm.Model
        The copy (the effect fixed at zero by :func:`pymc.do`, plus the potential
        ``"integrated_group_effects"``).
    names : tuple of str
        The effect's name.
    shapes : tuple of tuple
        Its shape, ``((J,),)``.
    moments : tuple of TensorVariable
        On ``model``'s value variables: each group's mode and scale (``(J,)``) and, unless
        the likelihood is Gaussian in the effect, its log integrand on the grid
        (``(GRID, J)``, at ``mode + scale * z``, ``z`` from -6 to 6).
    rule : GroupRule
        The Newton steps and Gauss-Hermite nodes chosen.
    """

    rule: GroupRule
    #: Posterior draws whose tables are computed at once (batched: data-sized tables).
    draw_chunk = 256

    def draw(self, tables: list, rng: np.random.Generator) -> dict:
        """Draws of the effect from each group's conditional, one per row of the tables."""
        mode, scale = (np.asarray(t, dtype=float) for t in tables[:2])
        if len(tables) == 2:
            z = rng.standard_normal(mode.shape)
        else:
            z = _grid_draws(np.asarray(tables[2], dtype=float), rng)
        return {self.names[0]: mode + scale * z}


def _grid_draws(log_h: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Standardized draws ``(n, J)`` from densities given on :func:`_grid` (``(n, G, J)``),
    log-linear between the points: the exact CDF of each piece, inverted.

    The draws go :data:`DRAW_BLOCK` at a time, so that each block's ``(G, J)`` temporaries
    stay in the CPU's cache (the whole ``(n, G, J)`` at once spent its time in memory
    traffic); the uniforms are drawn first, so the draws do not depend on the block size.
    """
    log_h = np.asarray(log_h, dtype=float)
    u = rng.uniform(size=(len(log_h), 1, log_h.shape[2]))
    blocks = range(0, len(log_h), DRAW_BLOCK)
    parts = [_grid_block(log_h[i : i + DRAW_BLOCK], u[i : i + DRAW_BLOCK]) for i in blocks]
    return np.concatenate(parts) if parts else np.zeros(log_h.shape[::2])


def _grid_block(log_h: np.ndarray, u: np.ndarray) -> np.ndarray:
    """:func:`_grid_draws` of a block, given its uniforms ``u`` (``(n, 1, J)``)."""
    z = _grid()
    dz = z[1] - z[0]
    log_h = np.where(np.isnan(log_h), -np.inf, log_h)
    log_h -= np.max(log_h, axis=1, keepdims=True)
    e = np.exp(log_h)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        d = np.diff(log_h, axis=1)  # each piece's log ratio of its ends
        mass = np.diff(e, axis=1)
        mass *= dz / d  # the integral of exp(left + d t / dz) over the piece
    flat = np.abs(d) < 1e-8
    mass[flat] = (e[:, :-1] * dz)[flat]
    mass[~(mass > 0)] = 0.0  # NaN where an end is -inf, and rounding
    cdf = np.cumsum(mass, axis=1)
    target = u * cdf[:, -1:, :]
    piece = np.minimum((cdf < target).sum(axis=1), len(z) - 2)[:, None, :]

    def pick(a):
        return np.take_along_axis(a, piece, axis=1)[:, 0]

    rest = target[:, 0] - pick(cdf) + pick(mass)
    a, k = pick(log_h), pick(d) / dz
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        step = np.where(np.abs(k * dz) < 1e-8, rest / np.exp(a), np.log1p(rest * k / np.exp(a)) / k)
    return z[piece[:, 0]] + np.clip(np.nan_to_num(step), 0.0, dz)


def _grid() -> np.ndarray:
    """The standardized points of the draws' grid."""
    return np.linspace(-6.0, 6.0, GRID)


def integrate_group_effects(model: pm.Model) -> GroupEffectsOut | None:
    """``model`` with its largest qualifying group effect integrated out (see the module's
    docstring), or None when none qualifies.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from scipy import stats
    >>> g = np.repeat(np.arange(100), 2)
    >>> y = np.random.default_rng(1).normal(size=200)
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu", 0.0, 1.0)
    ...     b = pm.Normal("b", mu, 0.5, shape=100)
    ...     _ = pm.Normal("y", b[g], 1.0, observed=y)
    >>> out = integrate_group_effects(model)
    >>> out.names, [rv.name for rv in out.model.free_RVs], out.rule.nodes
    (('b',), ['mu'], 1)
    >>> pair = y.reshape(100, 2)  # each group: y ~ N(mu, I + 0.25 11^T)
    >>> exact = stats.multivariate_normal(np.zeros(2), np.eye(2) + 0.25).logpdf(pair).sum()
    >>> total = out.model.compile_logp(vars=out.model.observed_RVs + out.model.potentials)
    >>> bool(np.isclose(total({"mu": 0.0}), exact))
    True
    """
    found = group_candidates(model)
    matrix = find_matrix_effect(model, MIN_GROUPS)
    if matrix is not None and all(c[1].n_groups <= matrix[1].rows.n_groups for c in found):
        return integrate_pair(model, matrix[:1], matrix[1], matrix[2])
    pair = find_pair(model, found)
    if pair is not None:
        return integrate_pair(model, pair[:2], pair[2])
    nested = find_nested(model, found, MIN_GROUPS)
    if nested is not None and nested[2].quadratic():
        return integrate_nested(model, *nested)
    if nested is not None and nested[2].outer.n_groups >= MIN_NESTED_OUTER:
        return integrate_nested_quadrature(model, *nested)
    if not found:
        return None
    effect, terms = max(found, key=lambda item: (item[1].n_groups, item[0].name))[:2]
    rule = choose_rule(model, terms)
    integral = log_marginal(terms, rule)
    n = len(terms.group)
    at_zero = pt.sum(terms.at(pt.zeros(n, dtype="float64")))
    offset, scale = mode_and_scale(terms, rule.steps)
    mode = terms.mean + offset
    moments = [mode, scale]
    if not terms.gaussian:
        effects = mode[None, :] + _grid()[:, None] * scale[None, :]
        prior = -0.5 * ((offset[None, :] + _grid()[:, None] * scale[None, :]) / terms.sd) ** 2
        moments.append(terms.segment_sum(terms.at(terms.gather(effects))) + prior)
    new, renamed = without_effects(model, [effect], pt.sum(integral) - at_zero, moments)
    shape = (int(terms.n_groups),)
    return GroupEffectsOut(new, (effect.name,), (shape,), tuple(renamed), rule)


def group_candidates(model: pm.Model) -> list:
    """``(effect, RowTerms, observed)`` of every free ``Normal`` vector that qualifies."""
    found = []
    for rv in model.free_RVs:
        if not isinstance(rv.owner.op, NormalRV) or model.rvs_to_transforms.get(rv):
            continue
        if rv.type.ndim != 1 or length(rv) < MIN_GROUPS:
            continue
        terms = dependents(model, rv)
        if len(terms) != 1 or terms[0] not in model.observed_RVs:
            continue
        rows = row_terms(model, rv, terms[0])
        if rows is not None:
            found.append((rv, rows, terms[0]))
    return found


def choose_rule(model: pm.Model, terms: RowTerms) -> GroupRule:
    """The fewest Newton steps and Gauss-Hermite nodes that are exact to the module's
    tolerances at the hyperparameters' mode and at points around it (two steps more than
    the points needed, for the posterior's other hyperparameters).

    The check runs in numpy on one compiled function of the rows (their log density and its
    first two derivatives in the effect), the same steps and rule as
    :mod:`.group_quadrature`'s graph; the mode is that of the hyperparameters' prior times
    the Laplace approximation of the integral (:func:`.group_rule.rule_points`)."""
    from ..runtime._compile import compile_fn

    d1, d2 = terms.derivatives(terms.u)
    graphs = [terms.at(terms.u), d1, d2, terms.mean, terms.sd]
    inputs = [v for v in model.value_vars if v in ancestors(graphs)]
    fn = compile_fn([terms.u, *inputs], graphs, jit=False)
    density = None
    if not terms.gaussian:
        prior, laplace = prior_of(model, inputs), _laplace(terms, lambda u, p: fn(u, *p))
        density = lambda p: prior(p) + laplace(p)  # noqa: E731
    steps, values = [], []
    for point in rule_points(model, inputs, density):
        size, total = _check_rule(terms, lambda u, p=point: fn(u, *p))
        if np.all(np.isfinite(total)):
            steps.append(size)
            values.append(total)
    return select_rule(steps, values, terms.gaussian, NODE_COUNTS)


def _newton_step(terms: RowTerms, b, d1, d2, mean, sd):
    """Every group's (clipped) Newton step from ``b`` and ``-h''`` there, given the rows'
    derivatives at ``b``."""
    precision = 1.0 / sd**2
    curv = precision - np.bincount(terms.group, np.minimum(d2, 0.0), terms.n_groups)
    step = (np.bincount(terms.group, d1, terms.n_groups) - (b - mean) * precision) / curv
    return (step if terms.gaussian else np.clip(step, -MAX_STEP, MAX_STEP)), curv


def _laplace(terms: RowTerms, rows):
    """``args -> log`` likelihood with every group's effect integrated by Laplace's method,
    given ``rows(u, args) -> (logp, d1, d2, mean, sd)``; Newton's method starts from the
    last call's modes (the search for the centre calls it at nearby points)."""
    last = {}

    def total(args):
        *_, mean, sd = rows(np.zeros(len(terms.group)), args)
        b = last.get("b", np.asarray(mean, dtype=float))
        for _ in range(MAX_STEPS):
            logp, d1, d2, *_ = rows(b[terms.group], args)
            step, curv = _newton_step(terms, b, d1, d2, mean, sd)
            if np.max(np.abs(step) * np.sqrt(curv)) < 1e-8:
                break
            b = b + step
        last["b"] = b
        h = np.bincount(terms.group, logp, terms.n_groups) + stats.norm.logpdf(b, mean, sd)
        return float(np.sum(h + 0.5 * np.log(2 * np.pi) - 0.5 * np.log(curv)))

    return total


def _check_rule(terms: RowTerms, rows):
    """Newton's steps (largest of each, in scales) and the total log integral at every
    count of :data:`NODE_COUNTS`, given ``rows(u) -> (logp, d1, d2, mean, sd)``."""
    group, n_groups = terms.group, terms.n_groups

    def segment(v):
        return np.bincount(group, weights=v, minlength=n_groups)

    *_, mean, sd = rows(np.zeros(len(group)))
    b, sizes = np.array(mean, dtype=float), []
    for _ in range(MAX_STEPS):
        _, d1, d2, *_ = rows(b[group])
        step, curv = _newton_step(terms, b, d1, d2, mean, sd)
        sizes.append(np.max(np.abs(step) * np.sqrt(curv)))
        b = b + step
    scale = 1.0 / np.sqrt(_newton_step(terms, b, *rows(b[group])[1:])[1])
    totals = []
    for k in NODE_COUNTS:
        x, w = np.polynomial.hermite.hermgauss(k)
        effects = b + np.sqrt(2.0) * x[:, None] * scale
        log_h = np.array([segment(rows(e[group])[0]) for e in effects])
        log_h += stats.norm.logpdf(effects, mean, sd) + (np.log(w) + x**2)[:, None]
        totals.append(np.sum(np.log(np.sqrt(2.0) * scale) + special.logsumexp(log_h, axis=0)))
    return np.asarray(sizes), np.asarray(totals)
