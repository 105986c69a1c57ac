"""Modes the posterior chains of bridge sampling missed, and their masses.

Bridge sampling can only see the mass its posterior draws sample. A narrow mode holding
most of the evidence inside a broad one (a spike in a bump) is never entered by NUTS chains
that start in the bump, and the estimate is the bump's mass alone, with a small se.

The base's mode search (:func:`~pymc_evidence.basefit.mode_search.search_modes`) runs with
each cluster's mean as a further start: quasi-Newton ascents of ``log f`` from the model's
initial point, the clusters' means and the modes of a mixture likelihood's components
(:mod:`~pymc_evidence.basefit.component_starts`) climb into such a mode when its basin holds
one of those points; ascents from prior draws, in batches while they keep reaching new
basins, also find a mirror mode that every chain missed (``y ~ N(theta^2, 1)`` with all
chains at ``theta > 0``; with a few prior draws bridge missed the narrow mode of
``testing.unequal_modes``, low by far more than its small se) and the many modes of an
egg-box. A search still finding new basins when it stops is reported. A mode
is *missed* when no posterior draw comes within Mahalanobis distance
``sqrt(chi2.ppf(0.999, d))`` of it in its own Laplace metric (a draw of the Laplace
Gaussian itself lies that close with probability 0.999). A missed mode whose
importance-sampling mass (draws from its Laplace Gaussian) is a real share of the evidence
and agrees with its Laplace mass is added to the estimate
(:func:`~pymc_evidence.basefit.modes.credible_modes`, the rules that add missed modes to a
base); its mass is estimated again from fresh draws, for an estimate independent of that
choice (the first where the fresh draws' ESS falls below the rule's), with the se of a
log-mean of importance weights, ``sqrt(1 / ESS - 1 / n)``, and the distance from its
Laplace mass in quadrature: no draw checked the mode, and a Gaussian's tail can miss the
density between modes without its ESS showing it.

A missed mode whose mass its Laplace Gaussian cannot measure (the rules drop it) is still
reported when its peak is as high as the highest posterior draw's density (within
:data:`PEAK_SLACK` nats) and the density dips between it and the nearest draw: two thin
Gaussian shells in 5-D whose four chains all sat in one shell gave an estimate far too low
with a small se and no warning; the ascents reached the other shell (its peak as high as
the draws'), but a shell is no Gaussian, and its mass stayed out of the estimate (measured
in :doc:`/hard_models`, "The other methods on separated modes"). A
:class:`~pymc_evidence.CrossCheckWarning` now says so.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy import linalg, stats

from ..basefit.advi import BaseFitError, evaluate_bases
from ..basefit.mode_search import WARN_UNSEEN, search_modes
from ..basefit.modes import MIN_ESS_SHARE, credible_modes
from ..estimators.bridge_modes import barrier_between
from ..estimators.diagnostics import CrossCheckWarning, tagged
from ..nuts import run_nuts
from ..runtime.batched_logp import batched_logp

__all__ = [
    "MIN_MORE_CHAINS",
    "NEAR_PROBABILITY",
    "N_EVAL",
    "PEAK_SLACK",
    "MissedModes",
    "chains_at",
    "missed_mode_masses",
    "missed_mode_messages",
    "visited",
]

#: A draw is near a mode when a draw of the mode's Laplace Gaussian would be as close with
#: this probability (``chi2.ppf(p, d)`` on the squared Mahalanobis distance).
NEAR_PROBABILITY = 0.999
#: Draws of each candidate mode's Laplace Gaussian for its importance-sampling mass.
N_EVAL = 2000
#: A missed mode that could not be measured is reported when its peak log density is at
#: most this many nats below the highest posterior draw's.
PEAK_SLACK = 1.0
#: Fewest NUTS chains started at such peaks (:func:`chains_at`): a cluster's se is the
#: spread of its chains.
MIN_MORE_CHAINS = 2


@dataclass(frozen=True)
class MissedModes:
    """The modes the chains missed: the log masses (and their se) of those added to the
    estimate, how many more reach as high as the draws but could not be measured, and the
    share of the prior the mode search's ascents never reached a basin of
    (:func:`~pymc_evidence.basefit.mode_search.unseen_share`)."""

    log_mass: np.ndarray
    se: np.ndarray
    n_unmeasured: int = 0
    unseen_share: float = 0.0
    peaks: np.ndarray | None = None  # (n_unmeasured, d): where those modes peak


def chains_at(problem, peaks: np.ndarray, target_accept: float, draws: int):
    """NUTS chains started at ``peaks`` (unconstrained points, highest first): one a peak,
    at least :data:`MIN_MORE_CHAINS`, at most the call's ``chains``; ``draws`` each after
    the call's tuning, seeded by stream ``"more_chains"``. Their draws let bridge sampling
    measure a region the first chains never entered (a shell no Laplace Gaussian
    measures)."""
    sampling = problem.sampling
    n = min(max(len(peaks), MIN_MORE_CHAINS), int(sampling.chains))
    starts = [problem.space.constrain(peaks[i % len(peaks)]) for i in range(n)]
    return run_nuts(
        problem.model,
        replace(sampling, chains=n, initvals=None),
        random_seed=problem.int_seed("more_chains"),
        target_accept=target_accept,
        draws=int(draws),
        initvals=starts,
    )


def visited(mode, flat: np.ndarray) -> bool:
    """Whether some draw lies within the mode's ``NEAR_PROBABILITY`` Laplace ellipsoid."""
    z = linalg.solve_triangular(mode.chol, (flat - mode.mean).T, lower=True)
    radius2 = stats.chi2.ppf(NEAR_PROBABILITY, flat.shape[-1])
    return bool(np.min(np.sum(z**2, axis=0)) <= radius2)


def missed_mode_masses(space, x, clusters, log_z: float, rng, log_f) -> MissedModes:
    """The modes that no draw of ``x`` came near: the masses of those that count.

    Parameters
    ----------
    space : ModelSpace
        The model's raveled unconstrained space.
    x : ndarray, shape (chain, draw, d)
        The posterior draws (unconstrained).
    clusters : list of array of int
        Chains of each cluster; the mode search starts from their means too.
    log_z : float
        The bridge estimate from the draws (the share of a mode is ``m / (Z + m)``).
    rng : numpy.random.Generator
        Used only when a missed mode is found.
    log_f : callable
        The model's log density at rows of unconstrained points
        (:meth:`~pymc_evidence.problem.EvidenceProblem.log_f`), for the peaks' heights.

    Returns
    -------
    MissedModes
        One ``log_mass`` and ``se`` per missed mode that holds at least 1 % of the
        evidence (empty when none): its importance-sampling log mass and the se of that
        log; ``n_unmeasured``: missed modes left out whose peak is within
        :data:`PEAK_SLACK` of the draws' highest density.
    """
    density = batched_logp(space)
    means = [x[idx].reshape(-1, x.shape[-1]).mean(axis=0) for idx in clusters]
    modes, search = search_modes(space, None, density, rng, starts=np.array(means))
    flat = x.reshape(-1, x.shape[-1])
    missed = [mode for mode in modes if not visited(mode, flat)]
    kept = credible_modes(missed, log_z, space, rng, n_eval=N_EVAL) if missed else []
    peaks = _high_peaks(log_f, _distinct(missed, kept), flat)
    share = search.unseen_share
    if not kept:
        return MissedModes(np.empty(0), np.empty(0), len(peaks), share, peaks)
    log_mass, se = [], []
    again = evaluate_bases(density, kept, N_EVAL, rng)
    for mode, fresh in zip(kept, again, strict=True):
        if isinstance(fresh, BaseFitError) or fresh["is_ess"] < MIN_ESS_SHARE * N_EVAL:
            # rare: keep the first mass, with the se of the lowest ESS that kept it;
            # a fresh ESS of 1 (a corner mode of the egg-box whose Gaussian reached another
            # mode's peak) put the estimate far too high
            fresh = {"log_is": float(mode.log_zeta), "is_ess": MIN_ESS_SHARE * N_EVAL}
        log_mass.append(fresh["log_is"])
        se.append(_mass_se(fresh, mode))
    return MissedModes(np.array(log_mass), np.array(se), len(peaks), share, peaks)


def _mass_se(fresh: dict, mode) -> float:
    """The se of a missed mode's log mass: the importance-sampling se ``sqrt(1 / ESS -
    1 / n)`` and, in quadrature, how far its Laplace mass is from it.

    No draw visited the mode, so its mass rests on a Gaussian alone; where the density
    between modes is not negligible (an egg-box's modes meet at saddles 13 % as high as
    their peaks), the Gaussian's tail misses some of it without its ESS showing it, and a
    mode whose Laplace and importance-sampling masses differ is one such: on the egg-box
    bridge was slightly low by several of its se before (measured in :doc:`/hard_models`,
    "The other methods on separated modes")."""
    is_se = np.sqrt(max(1.0 / fresh["is_ess"] - 1.0 / N_EVAL, 0.0))
    laplace = mode.stats.laplace_log_zeta
    laplace = fresh["log_is"] if laplace is None else laplace
    return float(np.hypot(is_se, fresh["log_is"] - laplace))


def _same(a, b) -> bool:
    """Two ascents' end points within one standard deviation of each other (in either's
    Laplace metric): one mode."""
    return any(
        np.sum(linalg.solve_triangular(m.chol, a.mean - b.mean, lower=True) ** 2) < 1.0
        for m in (a, b)
    )


def _distinct(missed, kept) -> list:
    """The missed modes that are none of ``kept`` (nor an earlier one of themselves): each
    mode once, however many ascents reached it."""
    out = list(kept)
    for mode in missed:
        if not any(_same(mode, m) for m in out):
            out.append(mode)
    return out[len(kept) :]


def _high_peaks(log_f, modes, flat: np.ndarray) -> np.ndarray:
    """Those of ``modes`` (their means, ``(k, d)``, highest first) that peak within
    :data:`PEAK_SLACK` of the draws' highest log f *and* lie beyond a barrier from the
    nearest draw (:func:`~pymc_evidence.estimators.bridge_modes.barrier_between`;
    distances in units of the draws' standard deviations). A hierarchy's ascent into its
    funnel's neck ends higher than any draw, but nothing dips on the way there (the radon
    intercepts and slopes were flagged without this)."""
    if not modes:
        return np.empty((0, flat.shape[-1]))
    points = np.array([m.mean for m in modes])
    peaks = log_f(points)
    high = np.flatnonzero(peaks >= np.nanmax(log_f(flat)) - PEAK_SLACK)
    high = high[np.argsort(-peaks[high], kind="stable")]
    sd = flat.std(axis=0)
    scale = np.where(sd > 0, sd, 1.0)
    beyond = []
    for i in high:
        nearest = flat[np.argmin(np.sum(((flat - points[i]) / scale) ** 2, axis=1))]
        if barrier_between(points[i], nearest, log_f):
            beyond.append(i)
    return points[beyond].reshape(len(beyond), flat.shape[-1])


def missed_mode_messages(missed: MissedModes, log_z: float) -> list:
    """A :class:`~pymc_evidence.CrossCheckWarning` text per missed mode added to ``log_z``
    (the total), and one for the missed modes that could not be measured."""
    messages = []
    for m in np.asarray(missed.log_mass, dtype=float):
        share = 100.0 * float(np.exp(m - log_z))
        messages.append(
            f"the posterior chains missed a mode holding {share:.3g} % of the evidence (no "
            "draw came near a local maximum of the density found by optimization); its mass "
            "was added from its Laplace approximation (importance sampling, log mass "
            f"{m:.4g}). method='smc' starts from a base that holds every mode found"
        )
    if missed.unseen_share > WARN_UNSEEN:
        messages.append(
            f"the search for modes the chains missed was still finding new ones when it "
            f"stopped: about {missed.unseen_share:.0%} of the prior's mass lies in basins "
            "it never reached, and modes there are missing from the estimate without its "
            "se showing it. Use method='smc', whose base holds every mode its search found"
        )
    if missed.n_unmeasured:
        messages.append(
            f"the posterior chains missed {missed.n_unmeasured} region(s) where the density "
            "rises as high as anywhere they went (local maxima found by optimization that "
            "no draw came near), and no Laplace approximation measures their mass: it is "
            "not in the estimate, which can be low by far more than its se. Use "
            "method='smc', or more chains (chains=) so that every region holds one"
        )
    return tagged(messages, CrossCheckWarning)
