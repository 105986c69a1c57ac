"""The plan of a base fit: what :mod:`~pymc_evidence.basefit.pipeline` does, as one frozen value.

:class:`BasePlan` holds every switch of the pipeline (the fit's kind and sizes, and which of
its steps run); :func:`auto_plan` is the policy behind ``base="auto"`` and
:func:`plan_for` turns what a call names (``base=`` and ``base_kwargs``) into a plan. The
policy reads the model's shape from its caller (dimension, centred scales, whether its
group effects were integrated out), so it depends on nothing above the base layer.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from ..estimators.diagnostics import BaseFitWarning, warn_user

__all__ = [
    "BASE_CHOICES",
    "BASE_METHODS",
    "COMBINE_METHODS",
    "DEFAULT_RESTARTS",
    "FULLRANK_MAX_DIM",
    "FULLRANK_TRY_MAX_DIM",
    "LOCAL_RESTARTS",
    "BasePlan",
    "ModelShape",
    "auto_plan",
    "plan_for",
    "warn_fitted_funnel",
]

BASE_METHODS = ("advi", "fullrank_advi", "prior")
#: How distinct ADVI restarts are combined: one moment-matched Gaussian, or a mixture.
COMBINE_METHODS = ("moments", "mixture")
#: ADVI fits run by default (all at once, vectorized): the model's initial point and
#: ``DEFAULT_RESTARTS - 1`` prior draws.
DEFAULT_RESTARTS = 8
#: ADVI fits after ``laplace_first="local"`` found one mode whose Laplace Gaussian is too
#: light: the posterior is one bump (a hierarchy's hyperparameters, its group effects
#: integrated out), so the other restarts would find the same fit (``docs/performance.rst``).
LOCAL_RESTARTS = 2
#: What ``base=`` may name; ``"auto"``: full-rank ADVI up to :data:`FULLRANK_MAX_DIM`
#: dimensions, mean-field or the Laplace Gaussian above (``docs/methods``).
BASE_CHOICES = ("auto", "advi", "fullrank_advi", "prior")
FULLRANK_MAX_DIM = 30
#: Up to here ``"auto"`` also fits full-rank ADVI above :data:`FULLRANK_MAX_DIM` and keeps
#: the better base.
FULLRANK_TRY_MAX_DIM = 100
#: The ``base_kwargs`` a call may pass (the knobs of :func:`~pymc_evidence.fit_base` that
#: are not the call's own).
PLAN_KEYWORDS = ("restarts", "n_steps", "combine", "learning_rate", "n_eval", "modes", "widen")
_log = logging.getLogger("pymc_evidence")


@dataclass(frozen=True)
class BasePlan:
    """Every switch of a base fit (:func:`~pymc_evidence.basefit.pipeline.fit_plan`).

    Attributes
    ----------
    method : {"advi", "fullrank_advi", "prior"}
        Mean-field ADVI, full-rank ADVI, or the model's own prior.
    restarts : int
        ADVI fits, run together; the first starts at the model's initial point.
    n_steps : int, optional
        Most ADVI iterations (default 4000 mean-field, 6000 full-rank).
    learning_rate : float
        Adam's initial learning rate.
    n_eval : int
        Draws of every importance-sampling evaluation.
    combine : {"moments", "mixture"}
        How distinct fits are combined: one moment-matched Gaussian, or their mixture.
    modes : bool
        Look for modes the fit misses and add them as Laplace components.
    laplace : bool
        With ``modes``: keep the Laplace Gaussian of the highest covered mode where its
        importance-sampling evidence beats the fit's.
    laplace_first : {False, True, "local"}
        With ``modes``: search the modes before fitting and keep a one-mode posterior's
        Laplace Gaussian when it passes the checks (``"local"``: without the short fits,
        and :data:`LOCAL_RESTARTS` fits where it does not pass).
    widen : bool
        Widen a fit whose importance-sampling ESS is low.
    also_fullrank : bool
        With ``method="advi"``: also fit full-rank ADVI and keep the better base.
    recentre_laplace : bool
        Where the Laplace Gaussian fails the ESS check of ``laplace_first``, move it to the
        weighted mean of its draws and accept it there at a lower ESS
        (:func:`~pymc_evidence.basefit.laplace_first.laplace_first`'s ``recentre``).
    defend : bool
        Give the fitted Gaussian a defensive component whatever its ESS, after moving it to
        the weighted mean of its draws where its ESS is low (a hierarchy whose group effects
        were integrated out; streams ``"recentre"`` and ``"defensive"``).
    tempering : bool
        Where the fit merged distinct fits into one Gaussian, also fit them as a mixture
        (the same draws again) for the tempering methods.

    Examples
    --------
    >>> BasePlan("fullrank_advi", restarts=2).n_steps_or_default
    6000
    """

    method: str = "advi"
    restarts: int = DEFAULT_RESTARTS
    n_steps: int | None = None
    learning_rate: float = 0.05
    n_eval: int = 1000
    combine: str = "moments"
    modes: bool = True
    laplace: bool = False
    laplace_first: bool | str = False
    widen: bool = True
    also_fullrank: bool = False
    recentre_laplace: bool = False
    defend: bool = False
    tempering: bool = False

    def __post_init__(self):
        if self.method not in BASE_METHODS:
            raise ValueError(f"method must be one of {BASE_METHODS}, got {self.method!r}")
        if self.restarts < 1:
            raise ValueError(f"restarts must be at least 1, got {self.restarts}")
        if self.combine not in COMBINE_METHODS:
            raise ValueError(f"combine must be one of {COMBINE_METHODS}, got {self.combine!r}")

    @property
    def n_steps_or_default(self) -> int:
        """The ADVI iterations of this plan's fit (its kind's default when not set)."""
        return self.n_steps or (6000 if self.method == "fullrank_advi" else 4000)

    def mean_field(self) -> BasePlan:
        """The plan of the mean-field fit that stands in for a failed full-rank one: the
        same fit otherwise, at the default length, without the search first."""
        return replace(self, method="advi", n_steps=None, laplace_first=False,
                       also_fullrank=False)  # fmt: skip


@dataclass(frozen=True)
class ModelShape:
    """What the base policy reads of a model.

    Attributes
    ----------
    ndim : int
        Dimension of the unconstrained space.
    funnels : tuple of str
        Centred scales the model keeps (read only up to :data:`FULLRANK_MAX_DIM`).
    one_bump : bool
        True where a hierarchy's group effects were integrated out (one bump is left).
    """

    ndim: int
    funnels: tuple[str, ...] = ()
    one_bump: bool = False


def auto_plan(shape: ModelShape, *, progressbar: bool = False, **given) -> BasePlan:
    """``base="auto"``: up to :data:`FULLRANK_MAX_DIM` dimensions, the prior where the
    model keeps a funnel (a centred scale), else full-rank ADVI; above, the best of
    mean-field ADVI, the Laplace Gaussian and (up to :data:`FULLRANK_TRY_MAX_DIM`) full-rank
    ADVI. The mode search runs first: a one-mode posterior that its Laplace Gaussian fits
    is not fitted (above :data:`FULLRANK_MAX_DIM`, an integrated hierarchy's also where its
    Laplace Gaussian, moved to the weighted mean of its draws, fits it). Funnels are a
    small-model matter: few data per group reach into the neck, which no fitted base
    covers; large centred models are usually data-rich.
    ``given``: the call's ``base_kwargs``.

    Examples
    --------
    >>> auto_plan(ModelShape(3)).method, auto_plan(ModelShape(50)).also_fullrank
    ('fullrank_advi', True)
    >>> auto_plan(ModelShape(50, one_bump=True)).recentre_laplace
    True
    """
    if shape.funnels:
        _log.log(
            logging.INFO if progressbar else logging.DEBUG,
            "base='auto': annealing from the prior (centred scales: %s)",
            ", ".join(shape.funnels),
        )
        return BasePlan("prior", **given)
    if shape.ndim <= FULLRANK_MAX_DIM:
        local = "local" if shape.one_bump else True  # one bump: see laplace_first
        return BasePlan("fullrank_advi", laplace_first=local, **given)
    also = shape.ndim <= FULLRANK_TRY_MAX_DIM
    if shape.one_bump:  # see laplace_first's recentre
        given = {"laplace_first": "local", "recentre_laplace": True, **given}
    given = {"laplace_first": True, **given}
    return BasePlan("advi", laplace=True, also_fullrank=also, **given)


def plan_for(spec: str, shape: ModelShape, given: dict, *, tempering=False, progressbar=False):
    """The plan of a base named ``spec`` (:data:`BASE_CHOICES`) with the call's
    ``base_kwargs`` ``given``, on a model of ``shape``; a hierarchy whose group effects were
    integrated out gets the defensive component, and a fit named by string a warning where
    the model keeps a funnel (:func:`warn_fitted_funnel`). ``tempering``: a tempering method
    asks for its base (a mixture where the fit merges distinct fits, unless ``given``
    names ``combine``).

    Examples
    --------
    >>> plan_for("advi", ModelShape(3), {"restarts": 2}).restarts
    2
    """
    unknown = sorted(set(given) - set(PLAN_KEYWORDS))
    if unknown:
        raise TypeError(f"base_kwargs {unknown} are not accepted; they may be {PLAN_KEYWORDS}")
    given = {**given, "defend": shape.one_bump, "tempering": tempering and "combine" not in given}
    if spec == "auto":
        return auto_plan(shape, progressbar=progressbar, **given)
    if spec != "prior":
        warn_fitted_funnel(shape, f"base={spec!r}")
    return BasePlan(spec, **given)


def warn_fitted_funnel(shape: ModelShape, what: str) -> None:
    """Warn when a small model keeps a funnel (a centred scale) and the base is a fit: the
    tempered paths start in the funnel's mouth and their kernels do not reach the neck
    (``docs/hard_models``), which no per-run diagnostic shows reliably."""
    if shape.funnels:
        warn_user(
            f"the model keeps centred scales ({', '.join(shape.funnels)}) and the base is a "
            f"fit ({what}): tempering from it rarely reaches the funnel's neck, so the "
            "estimate can be low by more than its se; keep reparam='auto' with a base "
            "named by string, or use base='prior'",
            BaseFitWarning,
        )
