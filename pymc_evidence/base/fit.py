"""``fit_base``: the normalized base density every path starts from.

All ADVI restarts are fitted at once (:func:`~pymc_evidence.base.advi.run_advi`): one
compiled, vectorized evaluation of the model per Adam step for every restart and Monte
Carlo draw, then one batched evaluation of all fits' fresh importance-sampling estimates.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pymc as pm

from ..estimators.diagnostics import BaseFitWarning, warn_user
from ..estimators.logspace import logsumexp
from ..hygiene import check_model
from ..progress import progress_bar
from .advi import BaseFitError, batched_logp, evaluate_bases, run_advi
from .gaussian import GaussianBase, moment_match
from .laplace_first import laplace_first as laplace_first_base
from .mixture import MixtureBase
from .modes import add_missed_modes, mixture_of
from .prior import PriorBase, fit_starts, prior_draws
from .runtime import model_space
from .widen import widen_light_base

__all__ = [
    "BASE_METHODS",
    "COMBINE_METHODS",
    "DEFAULT_RESTARTS",
    "better_base",
    "fit_base",
    "prior_draws",
]

BASE_METHODS = ("advi", "fullrank_advi", "prior")
#: How distinct ADVI restarts are combined: one moment-matched Gaussian, or a mixture.
COMBINE_METHODS = ("moments", "mixture")
#: ADVI fits ``fit_base`` runs by default (all at once, vectorized): the model's initial
#: point and ``DEFAULT_RESTARTS - 1`` prior draws.
DEFAULT_RESTARTS = 8
#: ADVI fits after ``laplace_first="local"`` found one mode whose Laplace Gaussian is too
#: light: the posterior is one bump (a hierarchy's hyperparameters, its group effects
#: integrated out), so the other restarts would find the same fit at four times the cost
#: (``docs/performance.rst``).
LOCAL_RESTARTS = 2


def _relabel_once(update, label):
    """``update`` that also sets the bar's description to ``label`` at its first call."""
    pending = [label]

    def callback(done, total=None):
        update(done, total, description=pending.pop() if pending else None)

    return callback


def _fit_restarts(space, starts, fullrank, n_steps, learning_rate, n_eval, rng, progressbar):
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
        info = {
            "n_steps": result.n_steps,
            "restart": k,
            "elbo_trace_tail": _nanmean(tail[k]),
            **stats,
        }
        fits.append(_with_stats(base, stats, info))
    return fits, errors


def _nanmean(x) -> float:
    return float(np.nanmean(x)) if np.any(np.isfinite(x)) else float("nan")


def _with_stats(base, stats, info):
    return base.with_values(
        log_zeta=stats["log_is"], elbo=stats["elbo"], elbo_se=stats["elbo_se"], info=info
    )


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
    info = {**best.info, "log_zeta_fit": float(best.log_zeta), "n_pooled": len(members)}
    log_zeta = float(logsumexp(log_zetas) - np.log(len(members)))
    return best.with_values(log_zeta=log_zeta, info=info)


def _fit_info(fits) -> dict:
    return {
        "n_components": len(fits),
        "component_log_zeta": [float(f.log_zeta) for f in fits],
        "component_elbo": [float(f.elbo) for f in fits],
    }


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
        info=_fit_info(fits),
    )


def _combine_mixture(fits, space, n_eval, rng):
    """The fits as a mixture with weights proportional to their evidence estimates
    ``exp(log_zeta_k)``, its ``log_zeta`` re-estimated by importance sampling from it."""
    log_masses = np.array([f.log_zeta for f in fits])
    info = {**_fit_info(fits), "log_zeta_sum": float(logsumexp(log_masses))}
    return mixture_of(fits, log_masses, space, batched_logp(space), n_eval, rng, info)


def _combined(fits, space, combine, n_eval, rng):
    """One base from the successful fits: duplicates pooled, distinct ones combined."""
    if len(fits) == 1:
        return fits[0]
    distinct = [_pooled(best, members) for best, members in _distinct(fits, tol=0.5)]
    if len(distinct) == 1:
        return distinct[0]
    if combine == "mixture":
        return _combine_mixture(distinct, space, n_eval, rng)
    return _combine_moments(distinct, space)


def fit_base(
    method: str = "advi",
    *,
    restarts: int = DEFAULT_RESTARTS,
    n_steps: int | None = None,
    learning_rate: float = 0.05,
    n_eval: int = 1000,
    combine: str = "moments",
    random_seed=None,
    potentials: str | None = None,
    model: pm.Model | None = None,
    progressbar: bool = True,
    modes: bool = True,
    laplace: bool = False,
    laplace_first: bool | str = False,
    widen: bool = True,
    also_fullrank: bool = False,
) -> GaussianBase | MixtureBase | PriorBase:
    """Fit the normalized base density of a tempering path.

    Parameters
    ----------
    method : {"advi", "fullrank_advi", "prior"}
        Mean-field ADVI, full-rank ADVI, or the model's own prior (power-posterior path).
    restarts : int, default DEFAULT_RESTARTS (8)
        Number of ADVI fits, run together as one vectorized computation; the first starts
        at the model's initial point, the others at prior draws. Fits whose means lie
        within half a standard deviation of a better one are its duplicates: they are
        dropped, and the ``log_zeta`` of the fit kept is the mean of the importance-sampling
        estimates of the group (``info["n_pooled"]``), not the largest of them (which is
        biased upwards). The distinct fits are combined as ``combine`` says.
    n_steps : int, optional
        Most ADVI iterations (default 4000 mean-field, 6000 full-rank). The constant
        learning-rate phase (at most half of them) ends early once every fit's ELBO has
        stopped rising; ``info["n_steps"]`` records the iterations run.
    learning_rate : float
        Adam's initial learning rate.
    n_eval : int
        Draws used for the fresh Monte Carlo ELBO and the importance-sampling ``log Z``.
    combine : {"moments", "mixture"}
        How several distinct fits are combined. Both weight fit ``k`` by its
        importance-sampling evidence ``exp(log_zeta_k)`` (the posterior mass of its mode
        when the modes are well separated). ``"moments"``: one Gaussian moment-matched to
        that mixture (Graham & Storkey, eq. 25; ``kind="merged"``, ``log_zeta`` the sum
        of the fits' evidence). ``"mixture"``: the mixture itself, a
        :class:`~pymc_evidence.base.mixture.MixtureBase` whose ``log_zeta`` is re-estimated
        by importance sampling from it. A single distinct fit is returned as it is.
    random_seed : int or Generator, optional
    potentials : {None, "likelihood"}
        How to read ``pm.Potential`` terms (see :func:`pymc_evidence.check_model`).
    model : pm.Model, optional
        Taken from the context when omitted.
    progressbar : bool, default True
        Show a progress bar of the ADVI steps (PyMC's look; see
        :mod:`pymc_evidence.progress`). False prints nothing.
    modes : bool, default True
        Look for posterior modes the fitted base misses (L-BFGS from the model's initial
        point and the fits' means) and add each one that holds a real share of the
        evidence as a Laplace component of a mixture base
        (:func:`~pymc_evidence.base.modes.add_missed_modes`): a narrow peak holding most
        of the evidence inside a broad bump is then part of the base, where no tempering
        path would find it. A base that misses nothing is returned unchanged.
    laplace : bool, default False
        With ``modes``: also try the Laplace approximation at the highest mode as the base
        and keep it when its importance-sampling evidence beats the fit's (``base="auto"``
        does this above 30 dimensions, where it fits mean-field ADVI: on a correlated
        posterior the Laplace Gaussian keeps the correlations the mean-field fit drops).
    laplace_first : bool, default False
        With ``modes``: search for the modes before fitting, and when the posterior has one
        whose Laplace Gaussian is close to it (importance-sampling ESS at least
        :data:`~pymc_evidence.base.laplace_first.LAPLACE_ESS` of ``n_eval`` draws) return that
        Gaussian (``kind "laplace"``) without fitting ADVI (checks in
        :func:`~pymc_evidence.base.laplace_first.laplace_first`). ``base="auto"`` does
        this: on a regression, a logistic regression or a Gaussian-like time series the
        fit's thousands of steps buy nothing. ``"local"``: without the short ADVI fits of
        check 3 (``base="auto"`` on a hierarchy whose group effects were integrated out),
        and where its Laplace Gaussian is not kept, :data:`LOCAL_RESTARTS` ADVI fits.
    widen : bool, default True
        A fitted base whose importance-sampling ESS is below
        :data:`~pymc_evidence.base.widen.WIDEN_BELOW` of ``n_eval`` draws is also tried
        with wider standard deviations, and the one with the largest ESS is kept
        (``info["widened"]``; :func:`~pymc_evidence.base.widen.widen_light_base`): ADVI's
        fits are narrower than the posterior, and a path from a base lighter-tailed than
        the posterior falls short. False returns the fit as ADVI found it.
    also_fullrank : bool, default False
        With ``method="advi"``: also fit full-rank ADVI (failures are silent) and keep the
        better base (:func:`better_base`); ``base="auto"`` does so from 31 to 100 dimensions
        (a latent GP's hyperparameters and values are correlated: mean-field drops it).

    Returns
    -------
    GaussianBase, MixtureBase or PriorBase
        The base, with ``log_zeta`` set to the importance-sampling estimate of ``log Z``
        (at least as tight as the ELBO on average), and ``elbo``/``elbo_se`` recorded.

    Raises
    ------
    BaseFitError
        When no fit succeeds.

    Warns
    -----
    BaseFitWarning
        When the full-rank fit fails and mean-field ADVI is fitted instead.

    Examples
    --------
    >>> import numpy as np, pymc as pm, pymc_evidence as pme
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu", 0, 1)
    ...     y = pm.Normal("y", mu, 1, observed=[0.5])
    ...     base = pme.fit_base(random_seed=1, progressbar=False)
    >>> bool(abs(base.log_zeta - (-1.0 - 0.5 * np.log(2 * np.pi * 2) + 1.0 - 0.0625)) < 0.05)
    True
    """
    if method not in BASE_METHODS:
        raise ValueError(f"method must be one of {BASE_METHODS}, got {method!r}")
    if restarts < 1:
        raise ValueError(f"restarts must be at least 1, got {restarts}")
    if combine not in COMBINE_METHODS:
        raise ValueError(f"combine must be one of {COMBINE_METHODS}, got {combine!r}")
    space = model_space(model)
    check_model(space.model, potentials=potentials)
    rng = np.random.default_rng(random_seed)
    if method == "prior":
        return PriorBase.for_model(space.model)
    fullrank = method == "fullrank_advi"
    asked, n_steps = n_steps, n_steps or (6000 if fullrank else 4000)
    starts = fit_starts(space, restarts, rng, progressbar)
    found = None
    if modes and laplace_first:
        quick, found = laplace_first_base(
            space, starts, rng, fullrank=fullrank, n_eval=n_eval, progressbar=progressbar,
            settle=laplace_first != "local",
        )  # fmt: skip
        if quick is not None:
            return quick
        if laplace_first == "local":  # one bump: restarts look for nothing else
            starts = starts[:LOCAL_RESTARTS]
    fits, errors = _fit_restarts(
        space, starts, fullrank, n_steps, learning_rate, n_eval, rng, progressbar
    )
    if not fits and fullrank:
        message = f"full-rank ADVI failed ({errors[0]}); falling back to mean-field ADVI"
        warn_user(message, BaseFitWarning)
        return fit_base(
            "advi", restarts=restarts, learning_rate=learning_rate, n_eval=n_eval,
            combine=combine, random_seed=rng, potentials=potentials, model=space.model,
            progressbar=progressbar, modes=modes, laplace=laplace, widen=widen,
        )  # fmt: skip
    if not fits:
        raise BaseFitError(f"every ADVI fit failed: {errors}")
    finish = _Finish(space, combine, n_eval, modes, found, widen, progressbar)
    base = finish(fits, rng, laplace=laplace)
    if also_fullrank and not fullrank:
        steps = asked or 6000  # full-rank ADVI's default, unless the caller set n_steps
        full, _ = _fit_restarts(space, starts, True, steps, learning_rate, n_eval,
                                rng, progressbar)  # fmt: skip
        if full:
            base = better_base(base, finish(full, rng, laplace=False))
    return base


#: :func:`better_base` trusts an ELBO known to within this many nats (its Monte Carlo se).
ELBO_SE_MAX = 10.0


def better_base(fit, other):
    """``other`` where it beats ``fit`` on both the ELBO of the fit before any widening and
    the importance-sampling evidence ``log_zeta``, else ``fit``; the kept base's
    ``info["other_log_zeta"]`` records the one not kept.

    Both ``log_zeta`` are biased low by as much as the base misses of the posterior. A
    diverged fit has one huge weight (89-d radon intercepts: absurd ELBOs, in :doc:`/hard_models`,
    "Large models: the Laplace base"), so ``other``'s ELBO must be within :data:`ELBO_SE_MAX` nats.
    """
    a, b = (base.info.get("unwidened", base) for base in (fit, other))
    better = (
        b.elbo_se < ELBO_SE_MAX and other.log_zeta > fit.log_zeta and not b.elbo <= a.elbo
    )  # a NaN ELBO of ``fit`` (a Laplace or mixture base) does not stop a better ``other``
    keep, drop = (other, fit) if better else (fit, other)
    info = {**keep.info, "other_log_zeta": float(drop.log_zeta), "other_kind": drop.kind}
    return keep.with_values(info=info)


@dataclass(frozen=True)
class _Finish:
    """What ``fit_base`` does with the successful ADVI fits of one kind: duplicates
    pooled and distinct fits combined, missed modes added, a too-light base widened."""

    space: object
    combine: str
    n_eval: int
    modes: bool
    found: object
    widen: bool
    progressbar: bool

    def __call__(self, fits, rng, *, laplace):
        base = _combined(fits, self.space, self.combine, self.n_eval, rng)
        if self.modes:
            base = add_missed_modes(
                base, self.space, rng, found=self.found, n_eval=self.n_eval, laplace=laplace,
                progressbar=self.progressbar,
            )  # fmt: skip
        if not self.widen:
            return base
        return widen_light_base(base, batched_logp(self.space), self.n_eval, rng)
