"""Bases too narrow for the posterior, widened and given a defensive component.

ADVI minimizes ``KL(q || p)``, and a Laplace Gaussian matches a mode's curvature: both can be
narrower than the posterior they stand for, and a tempering path from a base lighter-tailed
than the posterior anneals towards mass its particles never held. The weights of the runs
become heavy-tailed, the estimate falls short, and the spread of the runs does not show it.

On a Poisson change point whose data barely show the switch (30 counts, the switchpoint
summed out) the posterior of the two log rates is a cross, one arm per end of the series,
each with the exponential tail of a rate left to its prior, and the full-rank fit covers
only the middle (a low importance-sampling ESS). The default (SMC) from the fit was low by
many se and its ±2 se intervals rarely covered the truth; from the best of the fit 1.5 and
2 times wider they covered it more often; from that widened Gaussian plus a defensive copy
twice as wide (weight 0.2) they covered it throughout (measured in :doc:`/hard_models`,
"Bases narrower than the posterior: widened, with a defensive component").

:func:`widest_better` tries a base whose ESS is below :data:`WIDEN_BELOW` of the draws at
each of :data:`WIDEN` times its standard deviations and keeps the one with the largest ESS
(a wider one only with an ESS of at least :data:`WIDEN_MIN_ESS` of the draws).
Where the base is too narrow, a wider one has the larger ESS; where it is not, or in many
dimensions (a 1.5 times wider Gaussian in 300 dimensions has almost no ESS at all), the base
stays as it was. :func:`widen_light_base` adds the defensive component to a widened
Gaussian: a base found too narrow once is likely too light in its tails as well, which its
ESS on a thousand draws cannot show.
"""

from __future__ import annotations

import numpy as np

from ..base.gaussian import GaussianBase
from ..base.mixture import MixtureBase
from .evaluation import BaseFitError, evaluate_bases, with_stats

__all__ = [
    "DEFENSIVE",
    "DEFENSIVE_WIDTH",
    "DEFEND_ALL_MAX_DIM",
    "WIDEN",
    "WIDEN_BELOW",
    "WIDEN_MIN_ESS",
    "defend",
    "defensive_widths",
    "widen_light_base",
    "widest_better",
]

#: A base whose importance-sampling ESS is below this share of the draws is also tried with
#: its standard deviations times each of :data:`WIDEN`.
WIDEN_BELOW = 0.5
WIDEN = (1.5, 2.0)
#: ... and a wider one is kept only with an ESS of at least this share of the draws: below,
#: an ESS is one or two heavy weights and comparing two of them is chance. The 300-group
#: hierarchy's fit, with an ESS of about one draw, was once widened on an ESS hardly larger;
#: in 302 dimensions that base was far worse than the fit, and the SMC runs took many more
#: stages and far longer (measured in :doc:`/performance`, "What a user meets: the first
#: call on a new model").
WIDEN_MIN_ESS = 0.01
#: Weight and relative width of the defensive component of a widened Gaussian.
DEFENSIVE = 0.2
DEFENSIVE_WIDTH = 2.0
#: Up to this many dimensions :func:`defend`'s component is wider along every coordinate.
DEFEND_ALL_MAX_DIM = 8


def scaled(base, factor):
    """``base`` with every standard deviation times ``factor`` (the same mean or means);
    an array ``factor`` (``(d,)``) scales each coordinate by its own."""
    factor = np.asarray(factor, dtype=float)
    rows = factor[:, None] if factor.ndim else factor
    if isinstance(base, MixtureBase):
        return base.with_values(chols=rows * base.chols)
    return base.with_values(chol=rows * base.chol)


def defensive_widths(space) -> np.ndarray:
    """How much wider than a base its defensive component is along each coordinate:
    :data:`DEFENSIVE_WIDTH` along every coordinate of a space of at most
    :data:`DEFEND_ALL_MAX_DIM` dimensions, else along the log-transformed ones only (a
    hierarchy's scales, whose tails the component is for). Twice as wide along the many
    centred group effects of a nested hierarchy put the component's draws far below the
    posterior, and SMC needed more stages than the narrower component (measured in
    :doc:`/hard_models`, "A dense scale for confounded coordinates").

    >>> import pymc as pm
    >>> from pymc_evidence.runtime import model_space
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu", 0.0, 1.0, shape=9)
    ...     tau = pm.HalfNormal("tau", 1.0)
    >>> defensive_widths(model_space(model)).tolist()
    [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 2.0]
    """
    if space.ndim <= DEFEND_ALL_MAX_DIM:
        return np.full(space.ndim, DEFENSIVE_WIDTH)
    model = space.model
    rvs = {model.rvs_to_values[rv].name: rv for rv in model.free_RVs}
    widths = []
    for name, size in zip(space.names, space.sizes, strict=True):
        transform = model.rvs_to_transforms.get(rvs[name])
        is_log = type(transform).__name__ == "LogTransform"
        widths.append(np.full(size, DEFENSIVE_WIDTH if is_log else 1.0))
    return np.concatenate(widths)


def widest_better(base, stat, density, n_eval: int, rng: np.random.Generator):
    """``(base, stat, 1.0)``, or a wider base, its statistics and its factor when that one's
    ESS is larger (and at least :data:`WIDEN_MIN_ESS` of ``n_eval``).

    Parameters
    ----------
    base : GaussianBase or MixtureBase
    stat : dict or BaseFitError
        ``base``'s importance-sampling statistics
        (:func:`~pymc_evidence.basefit.advi.evaluate_bases`).
    density : BatchedLogp
    n_eval : int
        Draws of each wider candidate.
    rng : numpy.random.Generator
        Drawn from only when the base's ESS is below :data:`WIDEN_BELOW` of ``n_eval``.
    """
    if isinstance(stat, BaseFitError) or stat["is_ess"] >= WIDEN_BELOW * n_eval:
        return base, stat, 1.0
    wider = [scaled(base, factor) for factor in WIDEN]
    best = (base, stat, 1.0)
    for cand, cand_stat, factor in zip(
        wider, evaluate_bases(density, wider, n_eval, rng), WIDEN, strict=True
    ):
        if isinstance(cand_stat, BaseFitError):
            continue
        if cand_stat["is_ess"] > max(best[1]["is_ess"], WIDEN_MIN_ESS * n_eval):
            best = (cand, cand_stat, factor)
    return best


def _defended(wide, density, n_eval, rng, widths=DEFENSIVE_WIDTH):
    """``(1 - DEFENSIVE) wide + DEFENSIVE (widths * wide)`` with its importance-sampling
    statistics (``widths`` a number or one per coordinate)."""
    mix = MixtureBase.from_components(
        [wide, scaled(wide, widths)],
        np.log([1.0 - DEFENSIVE, DEFENSIVE]),
        log_zeta=0.0,
        kind=wide.kind,
        names=wide.names,
        sizes=wide.sizes,
    )
    (stat,) = evaluate_bases(density, [mix], n_eval, rng)
    return mix, stat


def widen_light_base(base, density, n_eval: int, rng: np.random.Generator):
    """``(base, factor)``: a fitted base, widened ``factor`` times when a wider one has the
    larger importance-sampling ESS (``factor`` 1.0: ``base`` itself).

    ``base.stats.is_ess`` (set by the fit) decides whether wider bases are tried at all.
    A widened Gaussian also gets a defensive component: the base becomes the mixture of the
    widened Gaussian (weight ``1 -`` :data:`DEFENSIVE`) and a copy :data:`DEFENSIVE_WIDTH`
    times wider, which reaches into tails no Gaussian of the fit's shape has (a widened
    mixture is widened only). The result gets its own importance-sampling ``log_zeta``,
    ELBO and ESS and the fit's ``kind`` (the fit itself is what the NUTS-tempering methods
    start from: :attr:`~pymc_evidence.basefit.pipeline.BaseFit.fit`). Bases other than
    Gaussians and their mixtures (the prior) are returned as they are.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from pymc_evidence.runtime import model_space
    >>> from pymc_evidence.runtime.batched_logp import batched_logp
    >>> with pm.Model() as model:
    ...     x = pm.Normal("x", 0.0, 1.0)
    >>> from pymc_evidence.base import FitStats
    >>> narrow = GaussianBase(np.zeros(1), np.array([[0.5]]), 0.0, "advi",
    ...                       stats=FitStats(is_ess=10.0))
    >>> wide, factor = widen_light_base(narrow, batched_logp(model_space(model)), 1000,
    ...                                 np.random.default_rng(0))
    >>> factor, np.round(wide.chols.ravel(), 2), np.round(wide.weights, 2)
    (2.0, array([1., 2.]), array([0.8, 0.2]))
    """
    ess = base.stats.is_ess if isinstance(base, GaussianBase | MixtureBase) else None
    if ess is None or ess >= WIDEN_BELOW * n_eval:
        return base, 1.0
    wide, stat, factor = widest_better(base, {"is_ess": float(ess)}, density, n_eval, rng)
    if factor == 1.0:
        return base, 1.0
    if isinstance(wide, GaussianBase):
        wide, stat = _defended(wide, density, n_eval, rng)
    return with_stats(wide, stat, base.stats, base.info), factor


def defend(base, density, n_eval: int, rng: np.random.Generator, widths=DEFENSIVE_WIDTH):
    """A fitted Gaussian base with the defensive component of :func:`widen_light_base`,
    whatever its ESS; other bases are returned as they are (the pipeline does not defend a
    base it widened already: :func:`~pymc_evidence.basefit.pipeline.fit_record`). ``widths``: the
    component's width relative to the base, one number or one per coordinate
    (:func:`defensive_widths`).

    For posteriors known to have a tail the fit does not hold, which a thousand draws'
    ESS cannot show: the hyperparameters of a hierarchy whose group effects were
    integrated out (:mod:`~pymc_evidence.transforms.group_effects`), where ``log τ`` has
    the skewed tail of a scale (measured in :doc:`/hard_models`, "Group effects integrated
    out: hierarchies of hundreds to thousands of groups").

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from pymc_evidence.runtime import model_space
    >>> from pymc_evidence.runtime.batched_logp import batched_logp
    >>> with pm.Model() as model:
    ...     x = pm.Normal("x", 0.0, 1.0)
    >>> fit = GaussianBase(np.zeros(1), np.array([[1.0]]), 0.0, "advi")
    >>> out = defend(fit, batched_logp(model_space(model)), 1000, np.random.default_rng(0))
    >>> np.round(out.chols.ravel(), 2), np.round(out.weights, 2)
    (array([1., 2.]), array([0.8, 0.2]))
    """
    if not isinstance(base, GaussianBase):
        return base
    mix, stat = _defended(base, density, n_eval, rng, widths)
    if isinstance(stat, BaseFitError):
        return base
    return with_stats(mix, stat, base.stats, base.info)
