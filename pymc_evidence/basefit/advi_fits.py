"""The ADVI steps of the base pipeline: every restart fitted at once, then combined.

All ADVI restarts are fitted at once (:func:`~pymc_evidence.basefit.advi.run_advi`): one
compiled, vectorized evaluation of the model per Adam step for every restart and Monte
Carlo draw, then one batched evaluation of all fits' fresh importance-sampling estimates.
Fits within half a standard deviation of a better one are its duplicates (their
``log_zeta`` pooled); distinct fits are combined into one Gaussian or a mixture.
"""

from __future__ import annotations

import numpy as np

from ..base.gaussian import GaussianBase, moment_match
from ..base.stats import FitStats
from ..estimators.logspace import logsumexp
from ..progress import progress_bar
from .advi import BaseFitError, batched_logp, evaluate_bases, run_advi
from .evaluation import with_stats
from .modes import mixture_of

__all__ = ["ELBO_SE_MAX", "combined", "fit_restarts"]

#: A fit is kept, and a full-rank alternative trusted, only with an ELBO known to within this
#: many nats (its Monte Carlo se).
ELBO_SE_MAX = 10.0


def _relabel_once(update, label):
    """``update`` that also sets the bar's description to ``label`` at its first call."""
    pending = [label]

    def callback(done, total=None):
        update(done, total, description=pending.pop() if pending else None)

    return callback


def fit_restarts(space, starts, fullrank, n_steps, learning_rate, n_eval, rng, progressbar):
    """ADVI from every start at once, each fit evaluated by fresh Monte Carlo draws.

    Returns the successful fits (in start order) and the errors of the failed ones.
    """
    density = batched_logp(space)
    label = f"{'Full-rank ADVI' if fullrank else 'ADVI'} base, {len(starts)} restarts"
    first = f"{label}: compiling the model's log density"  # until the first step is done
    with progress_bar(first, n_steps, enabled=progressbar) as update:
        result = run_advi(
            density,
            starts,
            fullrank=fullrank,
            n_steps=n_steps,
            learning_rate=learning_rate,
            rng=rng,
            callback=None if update is None else _relabel_once(update, label),
        )
    kind = "fullrank_advi" if fullrank else "advi"
    ok = [k for k, err in enumerate(result.errors) if err is None]
    errors = [f"restart {k}: {err}" for k, err in enumerate(result.errors) if err is not None]
    bases = [
        GaussianBase(
            result.means[k], result.chols[k], 0.0, kind, names=space.names, sizes=space.sizes
        )
        for k in ok
    ]
    fits = []
    tail = result.traces[:, int(0.9 * result.n_steps) :]
    for k, base, stats in zip(ok, bases, evaluate_bases(density, bases, n_eval, rng), strict=True):
        if isinstance(stats, BaseFitError) or not np.isfinite(stats["elbo"]):
            errors.append(f"restart {k}: {stats if isinstance(stats, BaseFitError) else 'ELBO'}")
            continue
        if not stats["elbo_se"] < ELBO_SE_MAX:  # diverged: weights spread over hundreds of nats
            errors.append(
                f"restart {k}: diverged (ELBO {stats['elbo']:.3g} ± {stats['elbo_se']:.3g})"
            )
            continue
        record = FitStats(elbo_trace_tail=_nanmean(tail[k]))
        fits.append(with_stats(base, stats, record, {"n_steps": result.n_steps, "restart": k}))
    return fits, errors


def _nanmean(x) -> float:
    return float(np.nanmean(x)) if np.any(np.isfinite(x)) else float("nan")


def _distinct(fits, tol):
    """Group fits whose means are within ``tol`` standard deviations of a better fit.

    Returns ``(best, members)`` pairs, best first; ``members`` includes ``best``.
    """
    groups = []
    for fit in sorted(fits, key=lambda b: -b.log_zeta):
        for best, members in groups:
            if np.max(np.abs(fit.mean - best.mean) / np.sqrt(fit.std**2 + best.std**2)) < tol:
                members.append(fit)
                break
        else:
            groups.append((fit, [fit]))
    return groups


def _pooled(best, members):
    """``best`` with ``log_zeta`` pooled over the importance weights of all its duplicates.

    Every member's estimate is unbiased for the same mass (in linear space), so their mean
    is too, with a fraction of the variance; and it does not depend on which member was
    the best, whereas the largest of several noisy estimates is biased upwards.
    """
    log_zetas = np.array([m.log_zeta for m in members])
    if len(members) == 1:
        return best
    stats = best.stats.updated(log_zeta_fit=float(best.log_zeta), n_pooled=len(members))
    log_zeta = float(logsumexp(log_zetas) - np.log(len(members)))
    return best.with_values(log_zeta=log_zeta, stats=stats)


def _fit_stats(fits, **more) -> FitStats:
    """The statistics of a base combined from ``fits``: their number and ELBOs."""
    return FitStats(n_components=len(fits), component_elbo=[f.elbo for f in fits], **more)


def _combine_moments(fits, space):
    """One Gaussian moment-matched to the evidence-weighted mixture of the fits (eq. 25)."""
    log_weights = np.array([f.log_zeta for f in fits])
    mean, cov = moment_match(log_weights, [f.mean for f in fits], [f.cov for f in fits])
    return GaussianBase.from_moments(
        mean,
        cov,
        log_zeta=float(logsumexp(log_weights)),
        kind="merged",
        names=space.names,
        sizes=space.sizes,
        elbo=float(max(f.elbo for f in fits)),
        stats=_fit_stats(fits),
        component_log_zeta=log_weights,
    )


def _combine_mixture(fits, space, n_eval, rng):
    """The fits as a mixture with weights proportional to their evidence estimates
    ``exp(log_zeta_k)``, its ``log_zeta`` re-estimated by importance sampling from it."""
    log_masses = np.array([f.log_zeta for f in fits])
    stats = _fit_stats(fits, log_zeta_sum=float(logsumexp(log_masses)))
    density = batched_logp(space)
    return mixture_of(
        fits, log_masses, space, density, n_eval, rng, stats, component_log_zeta=log_masses
    )


def combined(fits, space, combine, n_eval, rng):
    """One base from the successful fits: duplicates pooled, distinct ones combined."""
    if len(fits) == 1:
        return fits[0]
    distinct = [_pooled(best, members) for best, members in _distinct(fits, tol=0.5)]
    if len(distinct) == 1:
        return distinct[0]
    if combine == "mixture":
        return _combine_mixture(distinct, space, n_eval, rng)
    return _combine_moments(distinct, space)
