"""``fit_base``: the normalized base density every path starts from.

The public face of the base pipeline (:mod:`~pymc_evidence.basefit.pipeline`): the user's
knobs make a :class:`~pymc_evidence.basefit.plan.BasePlan`, the pipeline runs it, and the base
it chose is returned. ``sample_evidence``'s ``base="auto"`` runs the same pipeline with a
plan of its own (:func:`~pymc_evidence.basefit.plan.auto_plan`).
"""

from __future__ import annotations

import numpy as np
import pymc as pm

from ..base.gaussian import GaussianBase
from ..base.mixture import MixtureBase
from ..base.prior import PriorBase, prior_draws
from ..hygiene import check_model
from ..runtime.runtime import model_space
from .pipeline import fit_plan
from .plan import BASE_METHODS, COMBINE_METHODS, DEFAULT_RESTARTS, BasePlan

__all__ = [
    "BASE_METHODS",
    "COMBINE_METHODS",
    "DEFAULT_RESTARTS",
    "fit_base",
    "prior_draws",
]


def fit_base(
    method: str = "advi",
    *,
    restarts: int = DEFAULT_RESTARTS,
    n_steps: int | None = None,
    combine: str = "moments",
    random_seed=None,
    potentials: str | None = None,
    model: pm.Model | None = None,
    progressbar: bool = True,
) -> GaussianBase | MixtureBase | PriorBase:
    """Fit the normalized base density of a tempering path.

    The fit runs every step of the base pipeline (:mod:`~pymc_evidence.basefit.pipeline`):
    ADVI from every start at once, the distinct fits combined, the posterior modes the fit
    misses added as Laplace components of a mixture (a narrow peak holding most of the
    evidence inside a broad bump is then part of the base, where no tempering path would
    find it), and a fit whose importance-sampling ESS is low widened, with a defensive
    component (ADVI's fits are narrower than the posterior, and a path from a base
    lighter-tailed than the posterior falls short). To switch a step off, or set Adam's
    learning rate or the evaluation draws, run a :class:`~pymc_evidence.basefit.plan.BasePlan`
    through :func:`~pymc_evidence.basefit.pipeline.fit_plan`; it also returns the record of
    what was done (the fit before widening, the widening factor, the alternative not kept).

    Parameters
    ----------
    method : {"advi", "fullrank_advi", "prior"}
        Mean-field ADVI, full-rank ADVI, or the model's own prior (power-posterior path).
    restarts : int, default DEFAULT_RESTARTS (8)
        Number of ADVI fits, run together as one vectorized computation; the first starts
        at the model's initial point, the others at prior draws. Fits whose means lie
        within half a standard deviation of a better one are its duplicates: they are
        dropped, and the ``log_zeta`` of the fit kept is the mean of the importance-sampling
        estimates of the group, not the largest of them (which is
        biased upwards). The distinct fits are combined as ``combine`` says.
    n_steps : int, optional
        Most ADVI iterations (default 4000 mean-field, 6000 full-rank). The constant
        learning-rate phase (at most half of them) ends early once every fit's ELBO has
        stopped rising.
    combine : {"moments", "mixture"}, default "moments"
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
    plan = BasePlan(method, restarts=restarts, n_steps=n_steps, combine=combine)
    space = model_space(model)
    check_model(space.model, potentials=potentials)
    rng = np.random.default_rng(random_seed)
    return fit_plan(space, plan, rng, progressbar=progressbar).base
