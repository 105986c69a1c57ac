"""The Laplace Gaussian as the base, where it is one: no ADVI fit for Gaussian-like posteriors.

A regression, a logistic regression with many rows, a Gaussian-like time series: the
posterior has one mode and its Laplace approximation is nearly exact (on a 20 000-row
logistic regression its importance-sampling ESS is nearly all of the draws). ADVI's
thousands of steps buy nothing there, and on many rows they are most of the cost of a call.

:func:`laplace_first` runs the mode search before any fit and accepts the Laplace Gaussian
of the mode when

1. every ascent (from the initial point and the prior draws) reached the same mode;
2. its importance-sampling ESS is at least :data:`LAPLACE_ESS` of the draws; and
3. short ADVI fits (:data:`CHECK_STEPS` Adam steps, and as many again for a fit not yet
   there, up to :data:`CHECK_ROUNDS` rounds) from the same starts as the full fit all
   settle inside it: mean within
   :data:`CHECK_DISTANCE` of the mode in the Laplace Gaussian's own scale, no standard
   deviation more than :data:`CHECK_WIDTH` times its marginal one.

Checks 1 and 2 are local: a narrow spike at the centre of a broad bump (Skilling's phase
transition) passes both, and its Laplace Gaussian alone misses the bump's mass (0.105 nats
on :func:`~pymc_evidence.testing.phase_transition_centred`). ADVI started from prior draws
settles on the bump and fails check 3, and the full fit (which the mode search then
completes with the spike) is what the base becomes.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ..progress import progress_bar
from ..runtime.batched_logp import batched_logp
from ..runtime.space import ModelSpace
from .advi import BaseFitError, evaluate_bases, run_advi
from .evaluation import with_stats, with_weight_stats
from .mode_search import search_modes
from .recentre import RECENTRE_BELOW, recentred

__all__ = [
    "CHECK_DISTANCE",
    "CHECK_PATIENCE",
    "CHECK_ROUNDS",
    "CHECK_STEPS",
    "CHECK_WIDTH",
    "LAPLACE_ESS",
    "WHITE_RATE",
    "laplace_first",
]

#: The Laplace Gaussian's importance-sampling ESS must be at least this share of the draws.
LAPLACE_ESS = 0.9
#: Adam steps of a round of the short ADVI fits of check 3, and how far inside the Laplace
#: Gaussian they must settle (Mahalanobis distance of the mean; ratio of standard deviations).
CHECK_STEPS = 150
CHECK_DISTANCE = 3.0
CHECK_WIDTH = 2.0
#: Most rounds of :data:`CHECK_STEPS` steps; after :data:`CHECK_PATIENCE` rounds, only fits
#: within twice the bounds go on.
CHECK_ROUNDS = 6
CHECK_PATIENCE = 4
#: Adam's learning rate of the rounds in the Laplace Gaussian's whitened coordinates (a
#: step of a tenth of a posterior scale at most).
WHITE_RATE = 0.1


def _unsettled(mode, result, slack: float = 1.0) -> list[int] | None:
    """Check 3 on one round of short fits: the fits not (yet) inside the Laplace Gaussian.

    Returns the indices of the fits whose mean lies farther than ``slack`` times
    :data:`CHECK_DISTANCE` or whose width exceeds ``slack`` times :data:`CHECK_WIDTH` times
    the Laplace one; None when every fit failed.
    """
    ok = [k for k, err in enumerate(result.errors) if err is None]
    if not ok:
        return None
    out = []
    for k in ok:
        z = np.linalg.solve(mode.chol, result.means[k] - mode.mean)
        width = np.sqrt(np.sum(result.chols[k] ** 2, axis=1))
        far = not np.isfinite(z).all() or np.sqrt(z @ z) > slack * CHECK_DISTANCE
        if far or np.any(width > slack * CHECK_WIDTH * mode.std):
            out.append(k)
    return out


class _Whitened:
    """``density`` in the coordinates ``z`` of ``x = mean + chol @ z``, the Laplace
    Gaussian's own (there it is ``N(0, I)``), with ``log |chol|`` added so that an ELBO
    is the same in both spaces. Adam's steps are of a fixed size in the coordinates it
    sees: in these, a step moves a mean at most :data:`WHITE_RATE` of a posterior scale,
    whatever the number of rows (in the model's own, where many rows make the posterior
    narrow, it kicked a settled mean many posterior scales away)."""

    def __init__(self, density, mode):
        self.density, self.mean, self.chol = density, mode.mean, mode.chol
        self.log_det = float(np.sum(np.log(np.diag(mode.chol))))

    def __call__(self, zs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        logp, grad = self.density(self.mean + zs @ self.chol.T)
        return logp + self.log_det, grad @ self.chol

    def into(self, means: np.ndarray, chols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Fits' means and marginal widths in ``z``."""
        z_means = np.linalg.solve(self.chol, (means - self.mean).T).T
        z_chols = np.linalg.solve(self.chol, chols)
        return z_means, np.sqrt(np.sum(z_chols**2, axis=2))

    def back(self, fits):
        """Fits in ``z`` as fits in ``x`` (means, chols and errors)."""
        return SimpleNamespace(
            means=self.mean + fits.means @ self.chol.T,
            chols=self.chol @ fits.chols,
            errors=fits.errors,
        )


def _fits_settle(density, mode, starts, rng, *, fullrank, progressbar) -> bool:
    """Check 3: short ADVI fits from ``starts`` all settle inside the Laplace Gaussian.

    A fit still outside after :data:`CHECK_STEPS` steps goes on for another round from where
    it stopped (its mean and marginal widths), with a fresh Adam state, in the Laplace
    Gaussian's whitened coordinates (:class:`_Whitened`; the first round, from prior
    draws far away, runs in the model's own). On many rows a fit started at the default
    width 0.1 far from the mode meets gradients of the size of the row count on its way,
    which Adam's second moment remembers for hundreds of steps, so its widths shrink to
    the posterior's only slowly within one round; a new round forgets them. From a far
    prior draw a mean may take rounds to arrive (AR(1)). A fit on a broad component
    (Skilling's bump) stays there: the ELBO, and so where a fit settles, is the same in
    both coordinates. After :data:`CHECK_PATIENCE` rounds only fits within twice the
    bounds go on. Measured in :doc:`/hard_models`, "Gaussian-like posteriors: the Laplace
    base first".
    """
    label = f"Checking the Laplace base: {len(starts)} short ADVI fits"
    white = _Whitened(density, mode)
    scale, target = 0.1, density
    for done in range(1, CHECK_ROUNDS + 1):
        with progress_bar(label, CHECK_STEPS, enabled=progressbar) as update:
            fits = run_advi(
                target,
                starts,
                fullrank=fullrank,
                n_steps=CHECK_STEPS,
                init_scale=scale,
                **({} if target is density else {"learning_rate": WHITE_RATE}),
                rng=rng,
                callback=update,
            )
        fits = fits if target is density else white.back(fits)
        out = _unsettled(mode, fits)
        if out is None:
            return False
        if not out:
            return True
        if done >= CHECK_PATIENCE and _unsettled(mode, fits, slack=2.0):
            return False  # a fit that far after these rounds is not on its way
        starts, scale = white.into(fits.means[out], fits.chols[out])
        target = white
        label = f"Checking the Laplace base: {len(out)} fits go on"
    return False


def _moved(mode, stat: dict, density, n_eval: int, rng):
    """The Laplace Gaussian (``stat`` its importance-sampling statistics) moved to its
    draws' weighted mean (:func:`~pymc_evidence.basefit.recentre.recentred`, judged by draws
    of its own) where that one's ESS reaches
    :data:`~pymc_evidence.basefit.recentre.RECENTRE_BELOW` of the draws; None otherwise."""
    judged = mode.with_values(stats=with_weight_stats(mode.stats, stat))
    moved, rounds = recentred(judged, density, n_eval, rng)
    if rounds == 0 or moved.stats.is_ess < RECENTRE_BELOW * n_eval:
        return None
    return moved


def laplace_first(
    space: ModelSpace,
    starts: np.ndarray,
    rng: np.random.Generator,
    *,
    fullrank: bool = True,
    n_eval: int = 1000,
    progressbar: bool = False,
    settle: bool = True,
    recentre: bool = False,
):
    """The Laplace Gaussian of a one-mode posterior as the base, when it passes the checks.

    Parameters
    ----------
    space : ModelSpace
    starts : ndarray, shape (R, d)
        The ADVI fit's starts (the model's initial point and prior draws); the short fits
        of check 3 start there too.
    rng : numpy.random.Generator
        The search's prior starts, the importance-sampling draws and the short fits.
    fullrank : bool
        The kind of the short fits (that of the fit they stand for).
    n_eval : int
        Importance-sampling draws of check 2.
    progressbar : bool
    settle : bool, default True
        Run check 3. Without it, checks 1 and 2 decide, and the mode search takes few
        prior starts (:func:`~pymc_evidence.basefit.mode_search.search_modes`'
        ``one_bump``): for posteriors whose shape is known to be one bump (the
        hyperparameters of a hierarchy with its group effects integrated out, whose density
        costs a quadrature over every row: there the short fits were most of the base's
        cost).
    recentre : bool, default False
        Where check 2 fails, move the Laplace Gaussian to the importance-weighted mean of
        its draws (:func:`~pymc_evidence.basefit.recentre.recentred`) and accept it there
        at :data:`~pymc_evidence.basefit.recentre.RECENTRE_BELOW` of the draws: for one
        bump in tens of dimensions, whose joint mode is off the posterior's centre (the
        states of a nested hierarchy beside their scale), where the ADVI fits that would
        follow cost most of the call and end below the moved Gaussian.

    Returns
    -------
    base : Mode or None
        ``kind "laplace"``, ``log_zeta`` its importance-sampling evidence and ``stats`` its
        statistics; None when a check fails.
    found : tuple
        ``(modes, search)`` of the search, for
        :func:`~pymc_evidence.basefit.modes.add_missed_modes` (``found=``) after a full fit.
    """
    density = batched_logp(space)
    with progress_bar("Looking for the posterior's modes", 1, enabled=progressbar) as bar:
        modes, search = search_modes(space, None, density, rng, callback=bar, one_bump=not settle)
    found = (modes, search)
    if len(modes) != 1:
        return None, found
    (stats,) = evaluate_bases(density, modes, n_eval, rng)
    if isinstance(stats, BaseFitError):
        return None, found
    if stats["is_ess"] >= LAPLACE_ESS * n_eval:
        mode = with_stats(modes[0], stats)
    else:
        mode = _moved(modes[0], stats, density, n_eval, rng) if recentre else None
        if mode is None:
            return None, found
    if settle and not _fits_settle(
        density, mode, starts, rng, fullrank=fullrank, progressbar=progressbar
    ):
        return None, found
    laplace = mode.stats.updated(laplace_mass=float(modes[0].log_zeta))
    return mode.with_values(stats=laplace), found
