"""The base fit as one pipeline: a :class:`~pymc_evidence.basefit.plan.BasePlan` in, a frozen
:class:`BaseFit` record out.

The steps, in order (each draws from the one generator of the fit, so their order is the
order of the random numbers):

1. starts: the model's initial point and prior draws (:func:`fit_starts`);
2. Laplace first: the mode search, and a one-mode posterior's Laplace Gaussian where it
   passes the checks (:func:`~pymc_evidence.basefit.laplace_first.laplace_first`);
3. ADVI from every start at once (:func:`~pymc_evidence.basefit.advi_fits.fit_restarts`);
4. combine: duplicates pooled, distinct fits merged or mixed
   (:func:`~pymc_evidence.basefit.advi_fits.combined`);
5. missed modes: the Laplace Gaussian of the highest mode where it beats the fit, and the
   modes the fit misses added as components (:mod:`~pymc_evidence.basefit.modes`);
6. widen: a fit too light for the posterior widened (:mod:`~pymc_evidence.basefit.widen`);
7. choose: with ``also_fullrank``, the same from full-rank ADVI, the better one kept.

:func:`fit_record` adds what a problem asks beyond the fit (stream by stream): the
defensive component of a hierarchy's hyperparameters, and the tempering methods' mixture
where the fit merged distinct fits.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..base.prior import PriorBase, prior_draws
from ..estimators.diagnostics import BaseFitWarning, warn_user
from ..progress import progress_bar
from ..runtime.space import ModelSpace
from .advi import BaseFitError, batched_logp
from .advi_fits import ELBO_SE_MAX, combined, fit_restarts
from .laplace_first import laplace_first
from .mode_search import ModeSearch
from .modes import laplace_if_better, search_missed, with_missed_modes
from .plan import LOCAL_RESTARTS, BasePlan
from .recentre import recentred
from .widen import defend, defensive_widths, widen_light_base

__all__ = ["BaseFit", "better_fit", "fit_plan", "fit_record", "fit_starts"]

#: Draws of the defensive component's importance-sampling evaluation.
DEFEND_DRAWS = 1000


def fit_starts(space, restarts: int, rng, progressbar: bool) -> np.ndarray:
    """The ADVI fits' starts (the model's initial point, then prior draws), with the batched
    density compiled (and cached) under a bar of its own: on a new model both compile, for
    seconds (the LKJ model's first call spent them before its first bar), and a terminal
    that shows nothing meanwhile looks hung."""
    with progress_bar("Preparing the model: prior draws", 2, enabled=progressbar) as bar:
        starts = [space.initial_x()]
        if restarts > 1:
            starts += list(prior_draws(space, restarts - 1, rng.integers(2**31)))
        if bar is not None:
            bar(1, description="Preparing the model: compiling its log density")
        batched_logp(space)
        if bar is not None:
            bar(2, description="Preparing the model")
    return np.array(starts)


@dataclass(frozen=True)
class BaseFit:
    """What a base fit made, and how.

    Attributes
    ----------
    base : BaseDensity
        The base the particle methods start from.
    fit : BaseDensity
        The base before widening and before the defensive component (``base`` itself where
        neither was added).
    tempering : BaseDensity, optional
        The base of ``ct``, ``gibbs_ct`` and ``st``: :attr:`fit`, or, where it merged
        distinct fits into one Gaussian, the same fits as a mixture (a tempering chain stuck
        in one mode estimates that mode's evidence over the base's mass there, which a
        mixture weighted by the fits' evidence gets right; ``docs/hard_models``). None
        where no tempering method asked.
    widened : float
        The factor :attr:`fit`'s standard deviations were widened by (1.0: not widened).
    defended : bool
        Whether :attr:`base` has the defensive component of
        :func:`~pymc_evidence.basefit.widen.defend`.
    replaced : BaseDensity, optional
        The ADVI fit that the Laplace Gaussian of its highest mode replaced, where it did
        (``BasePlan.laplace``: its importance-sampling evidence was larger).
    recentred : int
        The rounds by which :func:`~pymc_evidence.basefit.recentre.recentred` moved the fit's
        mean (0: not moved); :attr:`fit` is the moved Gaussian.
    merged : bool
        Whether :attr:`fit` is one Gaussian moment-matched to distinct fits (before any
        mode was added).
    added_modes : tuple of Mode
        The modes the fit missed, added to it as Laplace components (each with its
        importance-sampling mass as ``log_zeta``).
    other : BaseDensity, optional
        The full-rank (or mean-field) alternative that was fitted and not kept.
    search : ModeSearch, optional
        The record of the mode search run before the fit (None where none ran).

    Examples
    --------
    >>> from pymc_evidence.base import GaussianBase
    >>> import numpy as np
    >>> record = BaseFit.given(GaussianBase(np.zeros(1), np.eye(1), 0.0, "advi"))
    >>> record.base is record.fit is record.tempering, record.widened
    (True, 1.0)
    """

    base: object
    fit: object
    tempering: object | None = None
    widened: float = 1.0
    defended: bool = False
    recentred: int = 0
    replaced: object | None = None
    merged: bool = False
    added_modes: tuple = ()
    other: object | None = None
    search: ModeSearch | None = None

    @classmethod
    def given(cls, base) -> BaseFit:
        """The record of a base fitted elsewhere: it is every base of the call."""
        return cls(base=base, fit=base, tempering=base)


def fit_plan(space: ModelSpace, plan: BasePlan, rng: np.random.Generator, *, progressbar=False):
    """Run the steps of ``plan`` on ``space`` (every random number from ``rng``).

    Returns
    -------
    BaseFit
        Without :attr:`BaseFit.tempering` (see :func:`fit_record`).

    Examples
    --------
    >>> import pymc as pm
    >>> from pymc_evidence.runtime import model_space
    >>> with pm.Model() as model:
    ...     x = pm.Normal("x", 0.0, 1.0)
    >>> fit_plan(model_space(model), BasePlan("prior"), None).base.kind
    'prior'
    """
    if plan.method == "prior":
        return BaseFit.given(PriorBase.for_model(space.model))
    fullrank = plan.method == "fullrank_advi"
    starts = fit_starts(space, plan.restarts, rng, progressbar)
    found = None
    if plan.modes and plan.laplace_first:
        quick, found = laplace_first(
            space, starts, rng, fullrank=fullrank, n_eval=plan.n_eval,
            progressbar=progressbar, settle=plan.laplace_first != "local",
            recentre=plan.recentre_laplace,
        )  # fmt: skip
        if quick is not None:
            return BaseFit(quick, quick, search=found[1])
        if plan.laplace_first == "local":  # one bump: restarts look for nothing else
            starts = starts[:LOCAL_RESTARTS]
    fits, errors = fit_restarts(space, starts, fullrank, plan.n_steps_or_default,
                                plan.learning_rate, plan.n_eval, rng, progressbar)  # fmt: skip
    if not fits and fullrank:
        message = f"full-rank ADVI failed ({errors[0]}); falling back to mean-field ADVI"
        warn_user(message, BaseFitWarning)
        return fit_plan(space, plan.mean_field(), rng, progressbar=progressbar)
    if not fits:
        raise BaseFitError(f"every ADVI fit failed: {errors}")
    record = _finish(space, plan, fits, found, rng, laplace=plan.laplace, bar=progressbar)
    if plan.also_fullrank and not fullrank:
        steps = plan.n_steps or 6000  # full-rank ADVI's default, unless the plan sets one
        full, _ = fit_restarts(space, starts, True, steps, plan.learning_rate, plan.n_eval,
                               rng, progressbar)  # fmt: skip
        if full:
            other = _finish(space, plan, full, found, rng, laplace=False, bar=progressbar)
            record = better_fit(record, other)
    return record


def _finish(space, plan, fits, found, rng, *, laplace, bar) -> BaseFit:
    """Steps 4 to 6 on the successful ADVI fits of one kind."""
    base, replaced = combined(fits, space, plan.combine, plan.n_eval, rng), None
    if plan.modes:
        modes = search_missed(base, space, rng, found=found, progressbar=bar)
        if laplace:
            base, replaced = laplace_if_better(base, modes, batched_logp(space), plan.n_eval,
                                               rng)  # fmt: skip
        merged = base.kind == "merged"
        base, added = with_missed_modes(base, modes, space, rng, n_eval=plan.n_eval)
    else:
        merged, added = base.kind == "merged", ()
    record = BaseFit(base, base, merged=merged, added_modes=added, replaced=replaced,
                     search=None if found is None else found[1])  # fmt: skip
    if not plan.widen:
        return record
    wide, factor = widen_light_base(base, batched_logp(space), plan.n_eval, rng)
    return replace(record, base=wide, widened=factor)


def better_fit(record: BaseFit, other: BaseFit) -> BaseFit:
    """``other`` where it beats ``record`` on both the ELBO of the fit before any widening
    and the importance-sampling evidence ``log_zeta``, else ``record``; the one kept
    records the other's base as :attr:`BaseFit.other`.

    Both ``log_zeta`` are biased low by as much as the base misses of the posterior. A
    diverged fit has one huge weight (absurd ELBOs), so ``other``'s ELBO must be within
    :data:`~pymc_evidence.basefit.advi_fits.ELBO_SE_MAX` nats.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_evidence.base import GaussianBase
    >>> def fit(log_zeta, elbo):
    ...     return BaseFit.given(GaussianBase(np.zeros(1), np.eye(1), log_zeta, "advi",
    ...                                       elbo=elbo, elbo_se=0.1))
    >>> kept = better_fit(fit(-3.0, -3.5), fit(-2.0, -2.5))
    >>> kept.base.log_zeta, kept.other.log_zeta
    (-2.0, -3.0)
    """
    a, b = record.fit, other.fit
    better = (
        b.elbo_se < ELBO_SE_MAX and other.base.log_zeta > record.base.log_zeta
        and not b.elbo <= a.elbo
    )  # fmt: skip  # a NaN ELBO of ``record`` (a Laplace or mixture base) does not stop it
    keep, drop = (other, record) if better else (record, other)
    return replace(keep, other=drop.base)


def _defended(space, record: BaseFit, defensive_seed, recentre_seed) -> BaseFit:
    """``record`` with its fit recentred (where its ESS is low) and defended."""
    density, widths = batched_logp(space), defensive_widths(space)
    fit, rounds = record.base, 0
    if recentre_seed is not None:
        rng = np.random.default_rng(recentre_seed)
        fit, rounds = recentred(fit, density, DEFEND_DRAWS, rng)
    if rounds:
        record = replace(record, fit=fit, recentred=rounds)
    rng = np.random.default_rng(defensive_seed)
    base = defend(fit, density, DEFEND_DRAWS, rng, widths)
    return replace(record, base=base, defended=base is not fit)


def fit_record(space, plan: BasePlan, base_seed, defensive_seed, recentre_seed=None, *,
               progressbar=False):  # fmt: skip
    """The record of ``plan`` for a problem: :func:`fit_plan` from ``base_seed`` (a
    ``SeedSequence``); where the plan asks and the fit was not widened, the fit recentred
    (:func:`~pymc_evidence.basefit.recentre.recentred`, from ``recentre_seed``) and given the
    defensive component (from ``defensive_seed``); and the tempering base where the plan
    asks (where the fit merged distinct fits, the same fits again from ``base_seed`` as a
    mixture).

    Examples
    --------
    >>> import pymc as pm
    >>> from pymc_evidence.runtime import model_space
    >>> with pm.Model() as model:
    ...     x = pm.Normal("x", 0.0, 1.0)
    >>> seeds = np.random.SeedSequence(1).spawn(2)
    >>> fit_record(model_space(model), BasePlan("prior"), *seeds).tempering.kind
    'prior'
    """
    record = fit_plan(space, plan, np.random.default_rng(base_seed), progressbar=progressbar)
    if plan.defend and record.widened == 1.0:
        record = _defended(space, record, defensive_seed, recentre_seed)
    tempering = record.fit
    if plan.tempering and record.merged:
        mixture = replace(plan, combine="mixture")
        rng = np.random.default_rng(base_seed)
        tempering = fit_plan(space, mixture, rng, progressbar=progressbar).fit
    return replace(record, tempering=tempering)
