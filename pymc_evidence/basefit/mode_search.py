"""Where the base's modes are looked for: ascents from the initial point, the base's means
and prior draws, as many as the basins they reach call for.

Used by :func:`~pymc_evidence.basefit.modes.add_missed_modes`. The prior starts come in
batches while their ascents keep reaching basins no other start reached: the share of
starts whose basin was reached once only is the Good-Turing estimate of the prior mass in
basins none has reached yet (:func:`unseen_share`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..base.mixture import MixtureBase
from ..base.prior import prior_draws
from ..estimators.diagnostics import BaseFitWarning, warn_user
from ..runtime.space import ModelSpace
from .component_starts import component_starts
from .laplace import Mode, ascend_into

__all__ = [
    "MAX_PRIOR_STARTS",
    "MAX_UNSEEN",
    "N_PRIOR_STARTS",
    "N_PRIOR_STARTS_LARGE",
    "ONE_BUMP_STARTS",
    "SMALL_DIM",
    "WARN_UNSEEN",
    "ModeSearch",
    "keep_searching",
    "mode_starts",
    "search_modes",
    "unseen_share",
    "warn_unseen",
]

#: Prior draws that start ascents too, up to :data:`SMALL_DIM` dimensions (and above).
#: A mode whose basin holds 16 % of the prior mass (the lighter mode of a 5-D two-mode
#: mixture) is missed by all 32 with probability 0.004, by the eight ADVI restarts alone
#: with probability 0.3 (in practice the mixture often lost the mode: measured in
#: :doc:`/hard_models`, "Modes of unequal mass and basin").
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
#: Prior draws that start ascents on a posterior known to be one bump (``one_bump``: the
#: hyperparameters of a hierarchy whose group effects were integrated out), in one batch:
#: there the search confirms the mode, and each ascent costs every row's quadrature at
#: each of its line search's steps (the 32 starts were most of a crossed 300-county
#: model's base fit; measured in :doc:`/performance`).
ONE_BUMP_STARTS = 4


@dataclass(frozen=True)
class ModeSearch:
    """What one run of :func:`search_modes` saw.

    Attributes
    ----------
    n_prior_starts : int
        The prior draws its ascents started from (0 where none were drawn).
    n_modes_found : int
        The distinct modes it kept.
    unseen_share : float
        The share of the prior's mass in basins no prior start reached, at the end
        (:func:`unseen_share`).

    Examples
    --------
    >>> ModeSearch(32, 1, 0.0).unseen_share
    0.0
    """

    n_prior_starts: int = 0
    n_modes_found: int = 0
    unseen_share: float = 0.0


def mode_starts(space: ModelSpace, base) -> np.ndarray:
    """The ascents' fixed starts: the model's initial point and the base's component means
    (none when ``base`` is None; :func:`search_modes` adds the prior draws)."""
    if base is None:
        return space.initial_x()[None, :]
    means = base.means if isinstance(base, MixtureBase) else np.atleast_2d(base.mean)
    return np.vstack([space.initial_x()[None, :], means])


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


def keep_searching(hits, batch, known: int | None) -> bool:
    """Whether the search needs another batch of prior starts: the starts so far (``hits``)
    leave more than :data:`MAX_UNSEEN` of the prior in basins none reached, or the last
    ``batch`` reached a basin none of the ``known`` ones before it was (the Good-Turing
    share alone is noisy: one singleton in 64 starts reads 1.6 % while a basin as large as
    any other is still missing). ``known`` is None for the first batch: the fixed starts'
    modes are no sample of the prior, and a first batch that finds a mode they missed (the
    second of two Gaussian shells) says nothing about basins still unseen.

    Examples
    --------
    >>> keep_searching([0, 0, 1, 1], [1, 1], known=2)   # the batch found nothing new
    False
    >>> keep_searching([0, 0, 1, 1], [1, 1], known=1)   # it found basin 1
    True
    >>> keep_searching([0, 0, 1, 1], [0, 0, 1, 1], known=None)   # the first batch
    False
    """
    found_new = known is not None and bool(np.any(np.asarray(batch, dtype=int) >= known))
    return unseen_share(hits) > MAX_UNSEEN or found_new


def _offset(callback, done: int, n: int):
    """``callback`` of a batch of ``n`` ascents after ``done`` others (one bar for all)."""
    if callback is None:
        return None
    return lambda i, _total: callback(done + i, done + n)


def search_modes(
    space: ModelSpace, base, density, rng, *, starts=None, callback=None, one_bump=False
):
    """Modes of the posterior from the initial point, the base's means (and ``starts``, an
    array of further points, e.g. the means of posterior chains), the modes of a mixture
    likelihood's components (:mod:`~pymc_evidence.basefit.component_starts`) and prior draws.

    The prior starts come in batches (:data:`N_PRIOR_STARTS`, then doubling) while the
    basins they reach say that much of the prior lies in basins none reached
    (:func:`unseen_share` above :data:`MAX_UNSEEN`) or the last batch reached a basin no
    earlier start had: a posterior of many modes (an egg-box, label switching) gets the
    starts it needs, a one-mode posterior only the first batch; ``one_bump``, a posterior
    known to hold one bump, :data:`ONE_BUMP_STARTS` in one batch. (On the egg-box a search
    that stopped on the unseen share alone, while its last batch still reached new basins,
    missed modes and evidence far beyond the se: measured in :doc:`/hard_models`, "The
    other methods on separated modes".)

    Returns
    -------
    modes : list of Mode
        Largest mass first.
    search : ModeSearch
        The starts drawn, the modes kept and the unseen share at the end.
    """
    kept: list[Mode] = []
    fixed = mode_starts(space, base)
    more = np.empty((0, space.ndim)) if starts is None else np.atleast_2d(starts)
    fixed = np.vstack([fixed, more, component_starts(space, fixed[0])])
    ascend_into(space, density, fixed, kept, callback=callback)
    n, cap = N_PRIOR_STARTS, MAX_PRIOR_STARTS
    if space.ndim > SMALL_DIM:
        n, cap = N_PRIOR_STARTS_LARGE, 4 * N_PRIOR_STARTS_LARGE
    if one_bump:
        n, cap = ONE_BUMP_STARTS, ONE_BUMP_STARTS
    hits, share = [], 0.0
    while n > 0:
        try:
            draws = prior_draws(space, n, rng)
        except Exception:  # a model without a prior sampler: the other starts only
            break
        done, known = len(fixed) + len(hits), (len(kept) if hits else None)
        batch = ascend_into(space, density, draws, kept, callback=_offset(callback, done, n))
        hits.extend(batch)
        share = unseen_share(hits)
        n = min(len(hits), cap - len(hits)) if keep_searching(hits, batch, known) else 0
    search = ModeSearch(len(hits), len(kept), float(share))
    return sorted(kept, key=lambda m: -m.log_zeta), search


def warn_unseen(search: ModeSearch) -> None:
    """A :class:`BaseFitWarning` when the search ended still finding new basins."""
    share = search.unseen_share
    if share > WARN_UNSEEN:
        warn_user(
            f"the mode search climbed to {search.n_modes_found} distinct modes from "
            f"{search.n_prior_starts} prior draws and was still finding new ones: about "
            f"{share:.0%} of the prior's mass lies in basins it never reached. Modes there are "
            "missing from the base, and an estimate started from it can miss their evidence "
            "without its se showing it. Cross-check with base='prior' (method='smc').",
            BaseFitWarning,
        )
