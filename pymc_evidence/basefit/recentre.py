"""A fitted Gaussian base moved to the importance-weighted mean of its own draws.

A Laplace Gaussian sits at the joint mode of the posterior. Where a hierarchy's group effects
stay in the model beside their scale (the states of ``(1|state) + (1|state:county)`` once the
counties are integrated out), the joint mode is not the centre of the posterior: it shrinks
the effects towards their mean and puts their scale ``τ`` below its marginal mode, by more
than a posterior sd when the effects are only moderately pinned by the data, and in tens of
dimensions the base's importance weights then degenerate although its covariance has the
right shape. One step of adaptive importance sampling mends the location: draws from the
base, weighted towards the posterior, give a new mean, and the Gaussian of the same
covariance there is kept where its own draws have the larger importance-sampling ESS
(Cappé et al. 2004, population Monte Carlo, with one Gaussian and the covariance held).

The covariance stays as fitted: with a few dozen effective draws in tens of dimensions a
weighted covariance would be noise, while the mean's error is a fraction of a posterior sd.
"""

from __future__ import annotations

import numpy as np

from ..base.gaussian import GaussianBase
from .evaluation import BaseFitError, weight_stats, with_stats

__all__ = ["RECENTRE_BELOW", "RECENTRE_ROUNDS", "STEP_ESS", "recentred"]

#: A base whose importance-sampling ESS is below this share of its draws is recentred.
RECENTRE_BELOW = 0.3
#: Recentring steps; each costs one batched density call of ``n_eval`` draws.
RECENTRE_ROUNDS = 4
#: The weights that place the next mean are tempered (``w ** a``, ``a <= 1``) until their
#: ESS is at least this share of the draws: a step towards the weighted mean rather than
#: onto it where a few draws hold most of the weight.
STEP_ESS = 0.2


def _ess(log_w: np.ndarray) -> float:
    w = np.exp(log_w - np.max(log_w))
    return float(w.sum() ** 2 / np.sum(w**2))


def _next_mean(x: np.ndarray, log_w: np.ndarray) -> np.ndarray | None:
    """The mean of draws ``x`` under their importance weights tempered to an ESS of
    :data:`STEP_ESS` of the draws (bisection on the power); None without two finite
    weights."""
    finite = np.isfinite(log_w)
    if finite.sum() < 2:
        return None
    x, log_w = x[finite], log_w[finite]
    lo, hi = 0.0, 1.0
    if _ess(log_w) < STEP_ESS * len(log_w):
        for _ in range(30):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if _ess(mid * log_w) >= STEP_ESS * len(log_w) else (lo, mid)
    power = hi if _ess(hi * log_w) >= STEP_ESS * len(log_w) else lo
    w = np.exp(power * (log_w - np.max(log_w)))
    return (w / w.sum()) @ x


def recentred(base, density, n_eval: int, rng: np.random.Generator, rounds=RECENTRE_ROUNDS):
    """``(base, 0)``, or a Gaussian of its covariance at the weighted mean of its draws and
    the rounds that moved it, when that one's importance-sampling ESS is larger.

    Bases other than a Gaussian, and a Gaussian whose ESS (``stats.is_ess``, set by its
    fit) is at least :data:`RECENTRE_BELOW` of ``n_eval``, are returned as they are and draw
    nothing from ``rng``. Otherwise each round draws ``n_eval`` points from the latest
    Gaussian, judges it by their importance weights and moves the mean towards their
    weighted mean (:data:`STEP_ESS`); the Gaussian of the largest ESS is kept, with its own
    ``log_zeta``, ELBO and statistics.

    Parameters
    ----------
    base : GaussianBase or other base
    density : BatchedLogp
        The model's batched log density (its first output is used).
    n_eval : int
        Draws a round.
    rng : numpy.random.Generator
    rounds : int
        Most rounds.

    Returns
    -------
    (base, int)
        The kept base and the rounds that moved it.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from pymc_evidence.runtime import model_space
    >>> from pymc_evidence.runtime.batched_logp import batched_logp
    >>> with pm.Model() as model:
    ...     x = pm.Normal("x", 1.0, 0.5, shape=3)
    >>> from pymc_evidence.base import FitStats
    >>> off = GaussianBase(np.zeros(3), 0.5 * np.eye(3), 0.0, "laplace",
    ...                    stats=FitStats(is_ess=1.0))
    >>> out, rounds = recentred(off, batched_logp(model_space(model)), 1000,
    ...                         np.random.default_rng(0))
    >>> rounds, bool(np.allclose(out.mean, 1.0, atol=0.1))
    (4, True)
    """
    ess = base.stats.is_ess if isinstance(base, GaussianBase) else None
    if ess is None or ess >= RECENTRE_BELOW * n_eval:
        return base, 0
    best, best_ess, cand, moved = base, float(ess), base, 0
    for k in range(rounds + 1):
        x = cand.sample(n_eval, rng)
        log_w = density(x)[0] - cand.logp(x)
        if k > 0:
            try:
                stat = weight_stats(log_w)
            except BaseFitError:
                break
            if stat["is_ess"] > best_ess:
                best_ess, moved = stat["is_ess"], k
                best = with_stats(cand, stat, base.stats, base.info)
        mean = _next_mean(x, log_w)
        if mean is None or k == rounds:
            break
        cand = cand.with_values(mean=mean)
    return best, moved
