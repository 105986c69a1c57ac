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
it, where the eight ADVI restarts often all missed it; measured in :doc:`/hard_models`,
"Modes of unequal mass and basin"). :func:`add_missed_modes` then asks
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

import numpy as np

from ..base.gaussian import GaussianBase
from ..base.mixture import MixtureBase
from ..base.stats import FitStats
from ..progress import progress_bar
from ..runtime.batched_logp import batched_logp
from ..runtime.space import ModelSpace
from .advi import BaseFitError, evaluate_bases
from .evaluation import with_stats
from .laplace import Mode, ascend_into, find_modes
from .mode_search import ModeSearch, mode_starts, search_modes, warn_unseen
from .widen import widest_better

__all__ = [
    "COVERAGE_GAP",
    "MIN_ESS_SHARE",
    "add_missed_modes",
    "laplace_if_better",
    "log_mass_se",
    "mixture_of",
    "search_missed",
    "weights_se",
    "with_missed_modes",
]

#: A mode is missed when the importance weight there is this many nats above the mean
#: weight (``e^3 = 20`` times); a base that approximates the posterior has a gap near 0.
COVERAGE_GAP = 3.0
#: A missed mode is added when it holds at least this share of the evidence.
MIN_SHARE = 0.01
#: ... and its importance-sampling mass is within this many nats of its Laplace mass, with
#: an ESS of at least this share of the draws.
MASS_AGREEMENT = 2.0
MIN_ESS_SHARE = 0.1


def coverage_gap(mode: Mode, base) -> float:
    """``log f(x) - log q(x) - log_zeta`` at the mode ``x`` (about 0 when covered)."""
    log_q = float(base.logp(mode.mean[None, :])[0])
    return float(mode.stats.log_f - log_q - base.log_zeta)


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


def mixture_of(
    components, log_masses, space, density, n_eval, rng, stats, *, info=None, component_log_zeta=()
) -> MixtureBase:
    """The components as a :class:`MixtureBase` with weights proportional to
    ``exp(log_masses)``; its ``log_zeta`` is the importance-sampling estimate with the
    mixture as the proposal (a sum of the masses double-counts where components overlap).

    Its ``stats`` are ``stats`` (a :class:`~pymc_evidence.base.stats.FitStats`) with its
    importance-sampling statistics and ``base_weights_se`` (:func:`weights_se` of the
    masses' se, from ``n_eval`` fresh draws of each component): what an estimate from chains
    that never cross between components may be off by; its ``info`` is ``info`` (provenance,
    default empty). ``component_log_zeta``: the mixture's
    :attr:`~pymc_evidence.base.mixture.MixtureBase.component_log_zeta` (where the components
    are distinct fits, their evidence estimates).
    """
    base = MixtureBase.from_components(
        components, log_masses, log_zeta=0.0, names=space.names, sizes=space.sizes,
        component_log_zeta=component_log_zeta,
    )  # fmt: skip
    (stat,) = evaluate_bases(density, [base], n_eval, rng)
    if isinstance(stat, BaseFitError):
        raise stat
    extra = weights_se(base.log_weights, log_mass_se(components, density, n_eval, rng))
    return with_stats(base, stat, stats.updated(base_weights_se=extra), info or {})


def _better_fits(modes, stats, density, n_eval, rng):
    """Each mode's Gaussian and its importance-sampling stats, widened where a wider one
    does better (:func:`~pymc_evidence.basefit.widen.widest_better`): a mode pressed against a
    bounded prior's edge has an exponential tail in the unconstrained coordinates, which the
    Laplace Gaussian's is far too light for (its ESS on the egg-box's edge modes was low;
    measured in :doc:`/hard_models`, "Many modes: the egg-box"), and a too-light component
    gives the paths started from the base heavy-tailed
    weights."""
    return [
        widest_better(mode, stat, density, n_eval, rng)[:2]
        for mode, stat in zip(modes, stats, strict=True)
    ]


def _credible(modes, base, density, n_eval, rng) -> list[Mode]:
    """The missed modes worth adding, each with its importance-sampling mass as
    ``log_zeta`` (the Laplace mass as ``stats.laplace_log_zeta``; and widened where its
    Laplace Gaussian is too narrow, see :func:`_better_fits`)."""
    kept = []
    stats = evaluate_bases(density, modes, n_eval, rng)
    for mode, stat in _better_fits(modes, stats, density, n_eval, rng):
        if isinstance(stat, BaseFitError):
            continue
        log_mass = stat["log_is"]
        share = 1.0 / (1.0 + np.exp(base.log_zeta - log_mass))
        if (
            share >= MIN_SHARE
            and abs(log_mass - mode.log_zeta) <= MASS_AGREEMENT
            and stat["is_ess"] >= MIN_ESS_SHARE * n_eval
        ):
            laplace = mode.stats.updated(laplace_log_zeta=float(mode.log_zeta))
            kept.append(mode.with_values(log_zeta=log_mass, stats=laplace))
    return kept


def laplace_if_better(base, modes, density, n_eval, rng):
    """``(base, None)``, or ``(laplace, base)``: the Laplace Gaussian of the highest mode
    ``base`` covers and the fit it replaces, when that one's importance-sampling evidence is
    larger (a better proposal: IS from a proposal that is too narrow, as mean-field ADVI is
    on correlated posteriors, is biased low)."""
    covered = [m for m in modes if coverage_gap(m, base) <= COVERAGE_GAP]
    if not covered:
        return base, None
    (stats,) = evaluate_bases(density, covered[:1], n_eval, rng)
    if isinstance(stats, BaseFitError) or not stats["log_is"] > base.log_zeta:
        return base, None
    return with_stats(covered[0], stats, FitStats()), base


def _search(base, space, density, rng, starts, found, bar):
    """The modes for :func:`add_missed_modes` and the search's record."""
    if found is not None:  # the search ran before the fit: add ascents from its means
        kept, extra = list(found[0]), mode_starts(space, base)[1:]
        ascend_into(space, density, extra, kept, callback=bar)
        if bar is not None and not len(extra):
            bar(1, 1)  # nothing more to climb: the bar ends full
        return sorted(kept, key=lambda m: -m.log_zeta), found[1]
    if starts is None:
        return search_modes(space, base, density, rng, callback=bar)
    return find_modes(space, starts, density=density, callback=bar), ModeSearch()


def add_missed_modes(
    base,
    space: ModelSpace,
    rng,
    *,
    starts=None,
    found=None,
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
        Starting points of the ascents; default: those of
        :func:`~pymc_evidence.basefit.mode_search.search_modes`.
    found : tuple, optional
        ``(modes, search)`` of a search run before the fit
        (:func:`~pymc_evidence.basefit.laplace_first.laplace_first`): only the ascents from the
        base's means are added to it.
    n_eval : int
        Draws for each candidate's and the new mixture's importance-sampling mass.
    laplace : bool, default False
        Also try the Laplace Gaussian of the highest mode the base covers as the base
        itself, and keep it when its importance-sampling evidence is larger (``kind
        "laplace"``; :attr:`~pymc_evidence.basefit.pipeline.BaseFit.replaced` in the
        pipeline's record). Meant for mean-field fits of large
        models, whose correlations they miss.
    progressbar : bool, default False
        Show a bar of the ascents ("Looking for modes the base misses").

    Returns
    -------
    GaussianBase or MixtureBase
        ``base`` itself when it covers every mode found; otherwise a ``MixtureBase`` of
        it and the modes added (:func:`with_missed_modes` also returns those).

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from pymc_evidence.base import GaussianBase
    >>> from pymc_evidence.runtime import model_space
    >>> with pm.Model() as model:   # a spike (sd 0.01) holding 90 % of Z inside a bump
    ...     x = pm.Flat("x")
    ...     w = np.array([0.1, 0.9])
    ...     comps = [pm.Normal.dist(x, 1.0), pm.Normal.dist(x, 0.01)]
    ...     _ = pm.Mixture("y", w=w, comp_dists=comps, observed=0.0)
    >>> bump = GaussianBase(np.array([0.0]), np.array([[1.0]]), np.log(0.1), "moments")
    >>> base = add_missed_modes(bump, model_space(model), np.random.default_rng(0))
    >>> len(base.components()), round(float(base.log_zeta), 2)
    (2, 0.0)
    """
    density = batched_logp(space)
    modes = search_missed(base, space, rng, starts=starts, found=found, progressbar=progressbar)
    if laplace:
        base, _ = laplace_if_better(base, modes, density, n_eval, rng)
    return with_missed_modes(base, modes, space, rng, n_eval=n_eval)[0]


def search_missed(base, space: ModelSpace, rng, *, starts=None, found=None, progressbar=False):
    """The modes :func:`add_missed_modes` checks ``base`` against, highest first (the
    search warns where it saw too little of the prior)."""
    density = batched_logp(space)
    with progress_bar("Looking for modes the base misses", 1, enabled=progressbar) as bar:
        modes, search = _search(base, space, density, rng, starts, found, bar)
    warn_unseen(search)
    return modes


def with_missed_modes(base, modes, space: ModelSpace, rng, *, n_eval: int = 1000):
    """``(base, added)``: ``base``, or the mixture of it and those of ``modes`` it misses
    that are worth adding (the last step of :func:`add_missed_modes`), and the modes added
    (each with its importance-sampling mass as ``log_zeta``; ``()`` where none)."""
    missed = [m for m in modes if coverage_gap(m, base) > COVERAGE_GAP]
    if not missed:
        return base, ()
    density = batched_logp(space)
    kept = _credible(missed, base, density, n_eval, rng)
    if not kept:
        return base, ()
    components, log_masses = _components(base)
    mixture = mixture_of(
        components + kept,
        np.concatenate([log_masses, [m.log_zeta for m in kept]]),
        space,
        density,
        n_eval,
        rng,
        base.stats,
        info=base.info,
    )
    return mixture, tuple(kept)


def credible_modes(modes, log_z: float, space: ModelSpace, rng, *, n_eval: int = 1000):
    """Those of ``modes`` (found missing from an estimate of ``log Z``) worth adding to it:
    by the rules of :func:`add_missed_modes` (at least ``MIN_SHARE`` of ``Z + mass``, a
    Gaussian-like peak), each with its importance-sampling mass as ``log_zeta``."""
    holder = GaussianBase(np.zeros(space.ndim), np.eye(space.ndim), float(log_z), "moments")
    return _credible(modes, holder, batched_logp(space), n_eval, rng)
