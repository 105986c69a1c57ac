"""The fixed configuration of the annealing engines, as frozen values built once per run.

:func:`~pymc_evidence.engines.ais.run_forward_ais`, :func:`~.ais.run_reverse_ais`,
:func:`~.ais.pilot_schedule` and :func:`~.lis.run_lis` take their kernel as one
:class:`KernelSettings`; LIS adds its links as a :class:`LinkSettings`. Nothing here changes
during a run: a step size adapted between forward AIS stages is recorded in the run's
info, never written back.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..estimators.ladder import validate_ladder
from ..estimators.logspace import RESAMPLING

__all__ = ["KERNELS", "KernelSettings", "LinkSettings", "SMCSettings", "kernel_scale"]

KERNELS = ("hmc", "rwm")
#: Most dimensions at which SMC's moves use a dense inverse mass (``dense_max_dim``): the
#: particles, hundreds to a thousand, estimate a covariance of this size well, and a
#: leapfrog's two ``(n, d) @ (d, d)`` products stay small beside a density call.
DENSE_MAX_DIM = 32


@dataclass(frozen=True)
class KernelSettings:
    """One Markov kernel along the path, the same at every run and (but for the forward AIS
    tuning) at every stage.

    Parameters
    ----------
    step_size : float or ndarray of shape (K + 1,)
        Step size in units of ``scale``; an array fixes it at each ``beta`` (e.g. from a
        pilot run) and turns forward AIS's tuning off.
    n_leapfrog : int
        Leapfrog steps per HMC trajectory.
    n_steps : int
        Kernel steps per stage (AIS) or per transition (LIS); a power of a reversible
        kernel is reversible.
    scale : {"base"} or ndarray of shape (d,) or None
        Diagonal kernel scale (HMC inverse mass ``scale**2``, RWM proposal scale);
        ``"base"`` is the base's marginal standard deviations and needs the base (forward
        AIS and its pilot); None is the identity.
    kind : {"hmc", "rwm"}
        HMC with full momentum refresh, or random-walk Metropolis (LIS only).
    target_accept : float
        Forward AIS only: between stages (never inside one) the step size is multiplied by
        1.1 when the stage's mean acceptance exceeded this, by 0.9 otherwise; halved after
        divergences, then capped at 0.8 times the step that diverged.
    adapt_step_size : bool
        Forward AIS only: turn that tuning off (constant step size).

    Examples
    --------
    >>> KernelSettings(n_leapfrog=5).n_steps
    1
    >>> KernelSettings(kind="nuts")
    Traceback (most recent call last):
    ...
    ValueError: kind must be one of ('hmc', 'rwm'), got 'nuts'
    """

    step_size: float | np.ndarray = 0.5
    n_leapfrog: int = 10
    n_steps: int = 1
    scale: str | np.ndarray | None = "base"
    kind: str = "hmc"
    target_accept: float = 0.65
    adapt_step_size: bool = True

    def __post_init__(self):
        if self.kind not in KERNELS:
            raise ValueError(f"kind must be one of {KERNELS}, got {self.kind!r}")
        if isinstance(self.scale, str) and self.scale != "base":
            raise ValueError(f"scale must be 'base', an array or None, got {self.scale!r}")
        object.__setattr__(self, "n_leapfrog", int(self.n_leapfrog))
        object.__setattr__(self, "n_steps", int(self.n_steps))


def kernel_scale(kernel: KernelSettings, base=None):
    """The kernel's diagonal scale: ``base.scale`` for ``"base"`` (an error without a base)."""
    if not isinstance(kernel.scale, str):
        return kernel.scale
    if base is None:
        raise ValueError(
            "scale='base' needs the base; pass an array (e.g. the forward run's info.scale) or None"
        )
    return base.scale  # the base's per-coordinate spread (see BaseDensity.scale)


@dataclass(frozen=True)
class LinkSettings:
    """The links of linked importance sampling (:func:`~.lis.run_lis`).

    Parameters
    ----------
    chain_length : int or array_like of int, shape (n + 1,)
        ``K``: transitions per chain, so each chain has ``K + 1`` states (index = ``betas``).
    bridge : {"geometric", "optimal"}
        Low-level bridge (:func:`~pymc_evidence.estimators.lis.log_bridge_ratios`).
    log_ratio_guess : float or array_like, shape (n,)
        For ``bridge="optimal"``: fixed guesses of ``log(Z_{k+1} / Z_k)`` (``betas`` order,
        forward sign), e.g. a pilot AIS run's per-stage increments; not from this run.
    direction : {"forward", "reverse"}
        Forward runs (from base draws) estimate ``Z``; reverse runs (from posterior draws,
        the schedule walked from 1 to 0) estimate ``1 / Z``.

    Examples
    --------
    >>> LinkSettings(chain_length=10, direction="up")
    Traceback (most recent call last):
    ...
    ValueError: direction must be 'forward' or 'reverse', got 'up'
    """

    chain_length: int | np.ndarray
    bridge: str = "geometric"
    log_ratio_guess: float | np.ndarray = 0.0
    direction: str = "forward"

    def __post_init__(self):
        if self.direction not in ("forward", "reverse"):
            raise ValueError(f"direction must be 'forward' or 'reverse', got {self.direction!r}")


@dataclass(frozen=True)
class SMCSettings:
    """Settings of one resample-move SMC run.

    Parameters
    ----------
    schedule : "adaptive" or array_like
        ``"adaptive"`` (bisection on the conditional ESS) or a fixed non-decreasing
        schedule from 0 to 1.
    target_ess : float
        Conditional ESS fraction the adaptive schedule aims at per step.
    resample_threshold : float
        Resample when the ESS of the weights divided by ``R_n`` falls below this.
    resampling : {"systematic", "residual"}
    step_size : float
        Initial HMC step size, in units of the particles' standard deviations.
    n_leapfrog : int
        Leapfrog steps per HMC trajectory.
    n_moves : int
        Fewest HMC steps per stage (and per ARM expansion).
    max_moves : int
        Most HMC steps per stage: after ``n_moves``, steps continue (checked every
        :data:`~pymc_evidence.engines.smc_kernel.MOVE_BLOCK`) until the rank correlation
        over particles of ``log f - log q`` before and after the moves is at most
        ``decorrelation``; between blocks the step size is tuned as between stages.
        ``max_moves = n_moves`` moves a fixed number of steps.
    decorrelation : float
        See ``max_moves``.
    move_weighted : bool
        Move the particles at a stage whose last reweighting did not resample. False moves
        only after a resampling (and at ``beta = 1``): weighted particles are still distinct
        draws of the current target, so a move there only lowers the next increment's
        variance, at a whole stage of density calls; the estimate stays consistent either way.
    target_accept : float
        Acceptance rate the between-stage step-size tuning aims at.
    step_gain : float
        Gain of that tuning, ``log eps += step_gain * (acceptance - target_accept)``.
    arm : bool
        Expand hard steps (ARM); False gives plain resample-move SMC.
    arm_threshold : float
        ``gamma_thr``: expand while the ESS per particle is below this.
    max_expansions : int
        ``i_max``: at most this many extra sets of ``R`` particles per stage.
    max_stages : int
        Error if the adaptive schedule needs more stages than this.
    posterior_moves : int
        HMC steps of every particle at ``beta = 1`` after the copies are moved apart, for
        the posterior's tails (the evidence needs none): at most this many, and at most
        ``posterior_budget`` times the particle moves the stages made, over the particles.
    posterior_budget : float
        See ``posterior_moves`` (``inf``: exactly ``posterior_moves``).
    dense_max_dim : int
        Up to this many dimensions the moves' inverse mass is the particles' weighted
        covariance (:func:`~.smc_kernel.dense_spread`), above it their per-coordinate
        variances: a posterior whose coordinates correlate (an intercept and the group
        effects it is confounded with) decorrelates in a few moves instead of many.
    """

    schedule: object = "adaptive"
    target_ess: float = 0.8
    resample_threshold: float = 0.5
    resampling: str = "systematic"
    step_size: float = 0.5
    n_leapfrog: int = 10
    n_moves: int = 10
    max_moves: int = 50
    decorrelation: float = 0.1
    move_weighted: bool = True
    target_accept: float = 0.65
    step_gain: float = 1.5
    arm: bool = False
    arm_threshold: float = 0.7
    max_expansions: int = 3
    max_stages: int = 500
    posterior_moves: int = 0
    posterior_budget: float = float("inf")
    dense_max_dim: int = DENSE_MAX_DIM

    def posterior_steps(self, stage_moves: int, n_particles: int) -> int:
        """The full HMC steps at ``beta = 1``, given the stages' particle moves.

        >>> SMCSettings(posterior_moves=5, posterior_budget=1.0).posterior_steps(3000, 1000)
        3
        """
        if self.posterior_budget == float("inf"):
            return self.posterior_moves
        return min(self.posterior_moves, int(self.posterior_budget * stage_moves / n_particles))

    def checked_schedule(self) -> np.ndarray | None:
        """Validate the settings; the fixed schedule as an array (None when adaptive)."""
        if self.resampling not in RESAMPLING:
            raise ValueError(f"resampling must be one of {tuple(RESAMPLING)}")
        for name, upper in (("target_ess", 1.0), ("target_accept", 1.0)):
            if not 0.0 < getattr(self, name) < upper:
                raise ValueError(f"{name} must be in (0, 1), got {getattr(self, name)}")
        for name in ("resample_threshold", "arm_threshold"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")
        if self.n_leapfrog < 1 or self.n_moves < 1 or self.max_expansions < 0:
            raise ValueError("n_leapfrog and n_moves must be >= 1, max_expansions >= 0")
        if self.max_moves < self.n_moves or not 0.0 <= self.decorrelation <= 1.0:
            raise ValueError("max_moves must be >= n_moves and decorrelation in [0, 1]")
        if self.dense_max_dim < 0:
            raise ValueError(f"dense_max_dim must be >= 0, got {self.dense_max_dim}")
        if self.step_size <= 0 or self.posterior_moves < 0 or self.posterior_budget < 0:
            raise ValueError("step_size must be positive, posterior_moves and _budget >= 0")
        if isinstance(self.schedule, str):
            if self.schedule != "adaptive":
                raise ValueError(f"schedule must be 'adaptive' or an array, got {self.schedule!r}")
            return None
        return validate_ladder(self.schedule, strict=False, what="a fixed schedule")
