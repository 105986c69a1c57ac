"""Modes the fitted base misses, added to it as Laplace components.

A tempering path starts from the base and can only find the posterior mass the base, or
the path's moves, reach. When a narrow mode holds most of the evidence (a "spike": a
first-order phase transition on the tempering path, e.g. Skilling's example of a sharp peak
inside a broad bump), every tempered method started from a broad ADVI fit misses it and
reports the bump alone, with a tiny error bar. ADVI misses it too: its Monte Carlo
gradients average over the broad fit and never feel the spike.

A quasi-Newton ascent of ``log f`` from the model's initial point, from the fits' means
and from a few dozen prior draws does find such a mode when its basin holds one of those
points (a spike inside a bump: the ascent from the bump's centre climbs straight into it;
a narrow, lighter mode whose basin holds 16 % of the prior mass: some prior draws lie in
it, where the eight ADVI restarts all missed it one time in two). :func:`add_missed_modes` then asks
whether the base covers each mode found. The test is the importance weight at the mode:

    gap_k = log f(x_k) - log q(x_k) - log_zeta,

which is about 0 where ``q`` approximates the posterior (``f / q ~ Z``) and large where the
base has far too little density for the mode (the weight there is ``e^gap`` times the mean
weight). A missed mode whose own importance-sampling mass (draws from its Laplace
Gaussian) is a real share of the evidence and agrees with its Laplace mass (so it is a
Gaussian-like peak, not a funnel's neck or a boundary) becomes a mixture component, with
weight proportional to its mass; the fits keep theirs. Every method then starts from a base
that holds every mode found: the path no longer has to find them.

Nothing here can find a mode whose basin none of the starting points lies in: a spike far
off the bump (a basin of 1e-13 of the prior volume, say) is out of reach of any method that
does not search the whole space. See ``docs/hard_models.rst``.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..estimators.diagnostics import BaseFitWarning
from ..progress import progress_bar
from .advi import BaseFitError, evaluate_bases
from .batched_logp import batched_logp
from .gaussian import GaussianBase
from .laplace import Mode, ascend_into, find_modes
from .mixture import MixtureBase
from .prior import prior_draws
from .space import ModelSpace

__all__ = [
    "COVERAGE_GAP",
    "add_missed_modes",
    "log_mass_se",
    "mixture_of",
    "mode_starts",
    "search_modes",
    "unseen_share",
    "weights_se",
]

#: A mode is missed when the importance weight there is this many nats above the mean
#: weight (``e^3 = 20`` times); a base that approximates the posterior has a gap near 0.
COVERAGE_GAP = 3.0
#: A missed mode is added when it holds at least this share of the evidence.
MIN_SHARE = 0.01
#: ... and its importance-sampling mass is within this many nats of its Laplace mass.
MASS_AGREEMENT = 2.0
#: Prior draws that start ascents too, up to :data:`SMALL_DIM` dimensions (and above).
#: A mode whose basin holds 16 % of the prior mass (the lighter mode of a 5-D two-mode
#: mixture) is missed by all 32 with probability 0.004, by the eight ADVI restarts alone
#: with probability 0.3 (measured: one seed in two of the mixture lost the mode).
N_PRIOR_STARTS = 32
N_PRIOR_STARTS_LARGE = 8
SMALL_DIM = 30
#: While more than this share of the prior's mass lies in basins no start has reached
#: (:func:`unseen_share`), the search doubles its prior starts, up to
#: :data:`MAX_PRIOR_STARTS` (``4 * N_PRIOR_STARTS_LARGE`` above :data:`SMALL_DIM`)...
MAX_UNSEEN = 0.02
MAX_PRIOR_STARTS = 256
#: ... and warns when the share it ends with is above this.
WARN_UNSEEN = 0.05


def mode_starts(space: ModelSpace, base, rng=None) -> np.ndarray:
    """Where to start the ascents: the model's initial point, the base's component means
    and, with ``rng``, :data:`N_PRIOR_STARTS` prior draws (:data:`N_PRIOR_STARTS_LARGE`
    above :data:`SMALL_DIM` dimensions; none where the prior cannot be drawn from)."""
    means = base.means if isinstance(base, MixtureBase) else np.atleast_2d(base.mean)
    points = [space.initial_x()[None, :], means]
    if rng is not None:
        n = N_PRIOR_STARTS if space.ndim <= SMALL_DIM else N_PRIOR_STARTS_LARGE
        try:
            points.append(prior_draws(space, n, rng))
        except Exception:  # a model without a prior sampler: the other starts only
            pass
    return np.vstack(points)


def unseen_share(hits) -> float:
    """Good-Turing estimate of the share of the starts' distribution lying in basins none
    of them reached: the share of starts whose basin no other start reached.

    ``hits`` holds the mode each start climbed to (-1: the ascent failed; not counted).

    Examples
    --------
    >>> unseen_share([0, 0, 0, 0])   # every start in one basin
    0.0
    >>> unseen_share([0, 1, 2, 3])   # every start found a new basin: most are unseen
    1.0
    """
    hits = np.asarray(hits, dtype=int)
    hits = hits[hits >= 0]
    if hits.size == 0:
        return 0.0
    _, counts = np.unique(hits, return_counts=True)
    return float(np.sum(counts == 1) / hits.size)


def _offset(callback, done: int, n: int):
    """``callback`` of a batch of ``n`` ascents after ``done`` others (one bar for all)."""
    if callback is None:
        return None
    return lambda i, _total: callback(done + i, done + n)


def search_modes(space: ModelSpace, base, density, rng, *, callback=None):
    """Modes of the posterior from the initial point, the base's means and prior draws.

    The prior starts come in batches (:data:`N_PRIOR_STARTS`, then doubling) while the
    basins they reach say that much of the prior lies in basins none reached
    (:func:`unseen_share` above :data:`MAX_UNSEEN`): a posterior of many modes (an egg-box,
    label switching) gets the starts it needs, a one-mode posterior only the first batch.

    Returns
    -------
    modes : list of Mode
        Largest mass first.
    info : dict
        ``n_prior_starts``, ``n_modes_found`` and ``unseen_share`` (at the end).
    """
    kept: list[Mode] = []
    fixed = mode_starts(space, base)
    ascend_into(space, density, fixed, kept, callback=callback)
    n, cap = N_PRIOR_STARTS, MAX_PRIOR_STARTS
    if space.ndim > SMALL_DIM:
        n, cap = N_PRIOR_STARTS_LARGE, 4 * N_PRIOR_STARTS_LARGE
    hits, share = [], 0.0
    while n > 0:
        try:
            draws = prior_draws(space, n, rng)
        except Exception:  # a model without a prior sampler: the other starts only
            break
        done = len(fixed) + len(hits)
        hits.extend(ascend_into(space, density, draws, kept, callback=_offset(callback, done, n)))
        share = unseen_share(hits)
        n = min(len(hits), cap - len(hits)) if share > MAX_UNSEEN else 0
    info = {"n_prior_starts": len(hits), "n_modes_found": len(kept), "unseen_share": share}
    return sorted(kept, key=lambda m: -m.log_zeta), info


def coverage_gap(mode: Mode, base) -> float:
    """``log f(x) - log q(x) - log_zeta`` at the mode ``x`` (about 0 when covered)."""
    log_q = float(base.logp(mode.mean[None, :])[0])
    return float(mode.info["log_f"] - log_q - base.log_zeta)


def _components(base) -> tuple[list[GaussianBase], np.ndarray]:
    """The base's Gaussian components and their log masses (weight times ``zeta``)."""
    if isinstance(base, MixtureBase):
        return base.components(), base.log_weights + base.log_zeta
    return [base], np.array([base.log_zeta])


def log_mass_se(components, density, n: int, rng) -> np.ndarray:
    """The se of each component's importance-sampling log mass (``n`` fresh draws of each,
    delta method: ``sqrt((n / ESS - 1) / n)``); ``inf`` where the density was not finite."""
    out = []
    for stats in evaluate_bases(density, components, n, rng):
        if isinstance(stats, BaseFitError):
            out.append(np.inf)
        else:
            out.append(float(np.sqrt(max(n / stats["is_ess"] - 1.0, 0.0) / n)))
    return np.array(out)


def weights_se(log_weights, mass_se) -> float:
    """``sqrt(sum_k w_k Var(log w_k))`` for weights ``w_k = m_k / sum_j m_j`` from
    independent mass estimates with log-scale se ``mass_se``.

    A chain confined to component ``k`` of a mixture base estimates ``Z_k / w_k``: right only
    when ``w_k`` is that component's share of ``Z`` (a tempering chain rarely crosses from a
    spike to the bump around it), so the estimate is off by the error of ``log w_k``, whose
    variance is ``(1 - w_k)^2 v_k + sum_{j != k} w_j^2 v_j``. Averaged over where the chains
    sit (in proportion to the weights) this is the se returned.

    Examples
    --------
    >>> round(weights_se(np.log([0.1, 0.9]), np.array([0.01, 0.0])), 5)
    0.003
    """
    w = np.exp(np.asarray(log_weights, dtype=float))
    v = np.where(np.isfinite(mass_se), np.asarray(mass_se, dtype=float), 0.0) ** 2
    var_k = (1.0 - w) ** 2 * v + (np.sum(w**2 * v) - w**2 * v)
    return float(np.sqrt(np.sum(w * var_k)))


def mixture_of(components, log_masses, space, density, n_eval, rng, info) -> MixtureBase:
    """The components as a :class:`MixtureBase` with weights proportional to
    ``exp(log_masses)``; its ``log_zeta`` is the importance-sampling estimate with the
    mixture as the proposal (a sum of the masses double-counts where components overlap).

    ``info`` records ``base_weights_se`` (:func:`weights_se` of the masses' se, from ``n_eval``
    fresh draws of each component): what an estimate from chains that never cross between
    components may be off by.
    """
    base = MixtureBase.from_components(
        components, log_masses, log_zeta=0.0, names=space.names, sizes=space.sizes
    )
    (stats,) = evaluate_bases(density, [base], n_eval, rng)
    if isinstance(stats, BaseFitError):
        raise stats
    extra = weights_se(base.log_weights, log_mass_se(components, density, n_eval, rng))
    return base.with_values(
        log_zeta=stats["log_is"], elbo=stats["elbo"], elbo_se=stats["elbo_se"],
        info={**info, **stats, "base_weights_se": extra},
    )  # fmt: skip


def _credible(modes, base, density, n_eval, rng) -> list[Mode]:
    """The missed modes worth adding, each with its importance-sampling mass as
    ``log_zeta``."""
    kept = []
    for mode, stats in zip(modes, evaluate_bases(density, modes, n_eval, rng), strict=True):
        if isinstance(stats, BaseFitError):
            continue
        log_mass = stats["log_is"]
        share = 1.0 / (1.0 + np.exp(base.log_zeta - log_mass))
        if (
            share >= MIN_SHARE
            and abs(log_mass - mode.log_zeta) <= MASS_AGREEMENT
            and stats["is_ess"] >= 0.1 * n_eval
        ):
            kept.append(mode.with_values(log_zeta=log_mass))
    return kept


def _laplace_if_better(base, modes, density, n_eval, rng):
    """``base``, or the Laplace Gaussian of the highest mode it covers when that one's
    importance-sampling evidence is larger (a better proposal: IS from a proposal that is
    too narrow, as mean-field ADVI is on correlated posteriors, is biased low)."""
    covered = [m for m in modes if coverage_gap(m, base) <= COVERAGE_GAP]
    if not covered:
        return base
    (stats,) = evaluate_bases(density, covered[:1], n_eval, rng)
    if isinstance(stats, BaseFitError) or not stats["log_is"] > base.log_zeta:
        return base
    info = {**stats, "replaced_kind": base.kind, "replaced_log_zeta": float(base.log_zeta)}
    return covered[0].with_values(
        log_zeta=stats["log_is"], elbo=stats["elbo"], elbo_se=stats["elbo_se"], info=info
    )


def _warn_unseen(search: dict) -> None:
    """A :class:`BaseFitWarning` when the search ended still finding new basins."""
    share = search.get("unseen_share", 0.0)
    if share > WARN_UNSEEN:
        warnings.warn(
            f"the mode search climbed to {search['n_modes_found']} distinct modes from "
            f"{search['n_prior_starts']} prior draws and was still finding new ones: about "
            f"{share:.0%} of the prior's mass lies in basins it never reached. Modes there are "
            "missing from the base, and an estimate started from it can miss their evidence "
            "without its se showing it. Cross-check with base='prior' (method='smc').",
            BaseFitWarning,
            stacklevel=2,
        )


def add_missed_modes(
    base,
    space: ModelSpace,
    rng,
    *,
    starts=None,
    n_eval: int = 1000,
    laplace: bool = False,
    progressbar: bool = False,
):
    """``base``, or a mixture of it and the Laplace approximations of the modes it misses.

    Parameters
    ----------
    base : GaussianBase or MixtureBase
        A fitted base with ``log_zeta`` its importance-sampling evidence.
    space : ModelSpace
    rng : numpy.random.Generator
        Draws the prior starts of the ascents and, when a missed mode is found, the
        importance-sampling draws (a base that misses nothing is returned unchanged).
    starts : ndarray, shape (k, d), optional
        Starting points of the ascents; default :func:`mode_starts`.
    n_eval : int
        Draws for each candidate's and the new mixture's importance-sampling mass.
    laplace : bool, default False
        Also try the Laplace Gaussian of the highest mode the base covers as the base
        itself, and keep it when its importance-sampling evidence is larger (``kind
        "laplace"``, ``info["replaced_kind"]``). Meant for mean-field fits of large
        models, whose correlations they miss.
    progressbar : bool, default False
        Show a bar of the ascents ("Looking for modes the base misses").

    Returns
    -------
    GaussianBase or MixtureBase
        ``base`` itself when it covers every mode found; otherwise a ``MixtureBase`` whose
        ``info`` records ``n_added_modes``, ``added_mode_log_mass`` and
        ``added_mode_gap``.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from pymc_evidence.base import GaussianBase, model_space
    >>> with pm.Model() as model:   # a spike (sd 0.01) holding 90 % of Z inside a bump
    ...     x = pm.Flat("x")
    ...     w = np.array([0.1, 0.9])
    ...     comps = [pm.Normal.dist(x, 1.0), pm.Normal.dist(x, 0.01)]
    ...     _ = pm.Mixture("y", w=w, comp_dists=comps, observed=0.0)
    >>> bump = GaussianBase(np.array([0.0]), np.array([[1.0]]), np.log(0.1), "moments")
    >>> base = add_missed_modes(bump, model_space(model), np.random.default_rng(0))
    >>> base.info["n_added_modes"], round(float(base.log_zeta), 2)
    (1, 0.0)
    """
    density = batched_logp(space)
    with progress_bar("Looking for modes the base misses", 1, enabled=progressbar) as bar:
        if starts is None:
            modes, search = search_modes(space, base, density, rng, callback=bar)
        else:
            modes, search = find_modes(space, starts, density=density, callback=bar), {}
    _warn_unseen(search)
    if laplace:
        base = _laplace_if_better(base, modes, density, n_eval, rng)
    missed = [m for m in modes if coverage_gap(m, base) > COVERAGE_GAP]
    if not missed:
        return base
    kept = _credible(missed, base, density, n_eval, rng)
    if not kept:
        return base
    components, log_masses = _components(base)
    info = {
        **base.info,
        "base_kind": base.kind,
        "n_added_modes": len(kept),
        "added_mode_log_mass": [float(m.log_zeta) for m in kept],
        "added_mode_gap": [coverage_gap(m, base) for m in kept],
    }
    return mixture_of(
        components + kept,
        np.concatenate([log_masses, [m.log_zeta for m in kept]]),
        space,
        density,
        n_eval,
        rng,
        info,
    )


def credible_modes(modes, log_z: float, space: ModelSpace, rng, *, n_eval: int = 1000):
    """Those of ``modes`` (found missing from an estimate of ``log Z``) worth adding to it:
    by the rules of :func:`add_missed_modes` (at least ``MIN_SHARE`` of ``Z + mass``, a
    Gaussian-like peak), each with its importance-sampling mass as ``log_zeta``."""
    holder = GaussianBase(np.zeros(space.ndim), np.eye(space.ndim), float(log_z), "moments")
    return _credible(modes, holder, batched_logp(space), n_eval, rng)
