"""The Laplace Gaussian as the base, where it is one: no ADVI fit for Gaussian-like posteriors.

A regression, a logistic regression with many rows, a Gaussian-like time series: the
posterior has one mode and its Laplace approximation is nearly exact (20 000-row logistic
regression: importance-sampling ESS 0.997 of the draws). ADVI's thousands of steps buy
nothing there, and on many rows they are most of the cost of a call (the logistic
regression's base took 11.5 s of a 57 s call at 5000 rows, 2.7 s without it).

:func:`laplace_first` runs the mode search before any fit and accepts the Laplace Gaussian
of the mode when

1. every ascent (from the initial point and the prior draws) reached the same mode;
2. its importance-sampling ESS is at least :data:`LAPLACE_ESS` of the draws; and
3. short ADVI fits (:data:`CHECK_STEPS` Adam steps) from the same starts as the full fit
   all settle inside it: mean within :data:`CHECK_DISTANCE` of the mode in the Laplace
   Gaussian's own scale, no standard deviation more than :data:`CHECK_WIDTH` times its
   marginal one.

Checks 1 and 2 are local: a narrow spike at the centre of a broad bump (Skilling's phase
transition) passes both, and its Laplace Gaussian alone misses the bump's mass (0.105 nats
on :func:`~pymc_evidence.testing.phase_transition_centred`). ADVI started from prior draws
settles on the bump and fails check 3, and the full fit (which the mode search then
completes with the spike) is what the base becomes.
"""

from __future__ import annotations

import numpy as np

from ..progress import progress_bar
from .advi import BaseFitError, evaluate_bases, run_advi
from .batched_logp import batched_logp
from .mode_search import search_modes
from .space import ModelSpace

__all__ = ["CHECK_DISTANCE", "CHECK_STEPS", "CHECK_WIDTH", "LAPLACE_ESS", "laplace_first"]

#: The Laplace Gaussian's importance-sampling ESS must be at least this share of the draws.
LAPLACE_ESS = 0.9
#: Adam steps of the short ADVI fits of check 3, and how far inside the Laplace Gaussian
#: they must settle (Mahalanobis distance of the mean; ratio of standard deviations).
CHECK_STEPS = 400
CHECK_DISTANCE = 3.0
CHECK_WIDTH = 2.0


def _fits_inside(mode, result) -> bool:
    """Check 3: every successful short fit lies inside the Laplace Gaussian."""
    ok = [k for k, err in enumerate(result.errors) if err is None]
    if not ok:
        return False
    std = mode.std
    for k in ok:
        z = np.linalg.solve(mode.chol, result.means[k] - mode.mean)
        width = np.sqrt(np.sum(result.chols[k] ** 2, axis=1))
        if not np.isfinite(z).all() or np.sqrt(z @ z) > CHECK_DISTANCE:
            return False
        if np.any(width > CHECK_WIDTH * std):
            return False
    return True


def laplace_first(
    space: ModelSpace,
    starts: np.ndarray,
    rng: np.random.Generator,
    *,
    fullrank: bool = True,
    n_eval: int = 1000,
    progressbar: bool = False,
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

    Returns
    -------
    base : Mode or None
        ``kind "laplace"``, ``log_zeta`` its importance-sampling evidence and ``info`` its
        statistics; None when a check fails.
    found : tuple
        ``(modes, search)`` of the search, for
        :func:`~pymc_evidence.base.modes.add_missed_modes` (``found=``) after a full fit.
    """
    density = batched_logp(space)
    with progress_bar("Looking for the posterior's modes", 1, enabled=progressbar) as bar:
        modes, search = search_modes(space, None, density, rng, callback=bar)
    found = (modes, search)
    if len(modes) != 1:
        return None, found
    (stats,) = evaluate_bases(density, modes, n_eval, rng)
    if isinstance(stats, BaseFitError) or stats["is_ess"] < LAPLACE_ESS * n_eval:
        return None, found
    label = f"Checking the Laplace base: {len(starts)} short ADVI fits"
    with progress_bar(label, CHECK_STEPS, enabled=progressbar) as update:
        short = run_advi(
            density, starts, fullrank=fullrank, n_steps=CHECK_STEPS, rng=rng, callback=update
        )
    if not _fits_inside(modes[0], short):
        return None, found
    info = {**modes[0].info, **stats, **search, "laplace_mass": float(modes[0].log_zeta)}
    base = modes[0].with_values(
        log_zeta=stats["log_is"], elbo=stats["elbo"], elbo_se=stats["elbo_se"], info=info
    )
    return base, found
