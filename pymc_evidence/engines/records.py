"""Info records of the particle engines: what one run of AIS, reverse AIS, LIS or SMC reports.

Frozen dataclasses (the ``Info`` half of blackjax's ``State``/``Info`` pair, one per run):
a consumer reads ``info.step_size``. Every engine names its per-stage arrays alike (``beta``,
``acceptance``, ``step_size``, ``n_moves``: :data:`~.stages.STAGE_FIELDS`, stacked from the
stages' :class:`~.stages.StageInfo` by :func:`~.stages.stack`). Arrays are not copied, so
treat them as read-only; records compare by identity (``eq=False``), since their fields are arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .counts import Counts

__all__ = ["AISInfo", "LISInfo", "ReverseAISInfo", "REWEIGHT_KEYS", "SMCRunInfo", "STAGE_KEYS"]


@dataclass(frozen=True, eq=False)
class AISInfo:
    """What one forward AIS run (:func:`~.ais.run_forward_ais`) reports.

    Per-stage arrays have length ``K + 1``: index ``t`` is the stage that ends at
    ``beta[t]``, ``nan`` where undefined.

    Attributes
    ----------
    beta : ndarray, shape (K + 1,)
        The schedule, from 0 to 1.
    acceptance : ndarray, shape (K + 1,)
        Mean acceptance of the HMC moves at ``beta[t]``.
    step_size : ndarray, shape (K + 1,)
        HMC step size used at ``beta[t]``; pass it to :func:`~.ais.run_reverse_ais`.
    n_moves : ndarray, shape (K + 1,)
        HMC steps per particle at ``beta[t]`` (0 at both ends).
    mean_increment : ndarray, shape (K + 1,)
        Mean log-weight increment ``(beta_t - beta_{t-1}) (log f - log q)``.
    ess : ndarray, shape (K + 1,)
        Kish ESS of the weights accumulated up to ``beta[t]``.
    path_var : ndarray, shape (K + 1,)
        Weighted variance of ``log f - log q`` under the particles that represent
        ``pi_{beta[t]}`` (see :func:`~.schedules.adaptive_schedule`).
    log_weights : ndarray, shape (n,)
        Final log importance weights, ``-works``.
    x : ndarray, shape (n, d)
        Final particles.
    scale : ndarray, shape (d,), or None
        Diagonal kernel scale; pass it to :func:`~.ais.run_reverse_ais`.
    n_leapfrog : int
        Leapfrog steps per HMC trajectory.
    n_density_calls : int
        Batched density calls of the run.
    counts : Counts
        The points and trajectories the run's evaluations and moves met.
    """

    beta: np.ndarray
    acceptance: np.ndarray
    step_size: np.ndarray
    n_moves: np.ndarray
    mean_increment: np.ndarray
    ess: np.ndarray
    path_var: np.ndarray
    log_weights: np.ndarray
    x: np.ndarray
    scale: np.ndarray | None
    n_leapfrog: int
    n_density_calls: int
    counts: Counts = Counts()


@dataclass(frozen=True, eq=False)
class ReverseAISInfo:
    """What one reverse AIS run (:func:`~.ais.run_reverse_ais`) reports.

    Attributes
    ----------
    beta : ndarray, shape (K + 1,)
        The forward schedule (the run walks it from 1 down to 0).
    acceptance : ndarray, shape (K + 1,)
        Index ``k``: mean acceptance of the kernel at ``beta[k]`` (``nan`` at the ends).
    step_size : ndarray, shape (K + 1,)
        Index ``k``: step size of the kernel at ``beta[k]`` (``nan`` at the ends).
    n_moves : ndarray, shape (K + 1,)
        Index ``k``: HMC steps per particle at ``beta[k]`` (0 at the ends).
    mean_increment : ndarray, shape (K + 1,)
        Index ``k + 1``: mean log-weight increment ``(beta_{k+1} - beta_k)(log f - log q)``.
    log_weights : ndarray, shape (n,)
        ``-works``.
    x : ndarray, shape (n, d)
        Final particles (at the base end).
    n_density_calls : int
        Batched density calls of the run.
    counts : Counts
        The points and trajectories the run's evaluations and moves met.
    """

    beta: np.ndarray
    acceptance: np.ndarray
    step_size: np.ndarray
    n_moves: np.ndarray
    mean_increment: np.ndarray
    log_weights: np.ndarray
    x: np.ndarray
    n_density_calls: int
    counts: Counts = Counts()


@dataclass(frozen=True, eq=False)
class LISInfo:
    """What one batch of linked importance sampling runs (:func:`~.lis.run_lis`) reports.

    Arrays are in ``beta`` order whatever the direction; link ``k`` joins ``beta[k]``
    and ``beta[k + 1]``.

    Attributes
    ----------
    beta : ndarray, shape (n + 1,)
        The schedule, from 0 to 1.
    direction : {"forward", "reverse"}
    acceptance : ndarray, shape (n + 1,)
        Mean acceptance of the kernel at ``beta[k]`` (``nan`` where no kernel ran).
    step_size : ndarray, shape (n + 1,)
        Step size of the kernel at ``beta[k]`` (``nan`` where no kernel ran).
    n_moves : ndarray, shape (n + 1,)
        Kernel steps per run in the chain at ``beta[k]`` (0 where no kernel ran).
    link_log_ratio : ndarray, shape (n,)
        Mean over runs of the log factor of link ``k``, forward sign: an estimate of
        ``log Z_{k+1} / Z_k``.
    link_ess : ndarray, shape (n,)
        Mean Kish ESS, out of ``K + 1``, of the link-selection weights.
    log_factors : ndarray, shape (run, n)
        Each run's log factors, in its own sign; rows sum to ``log_r``.
    x : ndarray, shape (run, d)
        A uniformly chosen state of each run's last chain.
    n_zero_runs : int
        Runs whose estimate is exactly zero.
    chain_length : ndarray of int, shape (n + 1,)
        ``K``: transitions per chain.
    kernel : {"hmc", "rwm"}
    n_leapfrog : int
        Leapfrog steps of one HMC trajectory.
    n_steps : int
        Kernel steps per transition.
    scale : ndarray, shape (d,), or None
        Diagonal kernel scale.
    n_density_calls : int
        Batched density calls of the run.
    counts : Counts
        The points and trajectories the run's evaluations and moves met.
    """

    beta: np.ndarray
    direction: str
    acceptance: np.ndarray
    step_size: np.ndarray
    n_moves: np.ndarray
    link_log_ratio: np.ndarray
    link_ess: np.ndarray
    log_factors: np.ndarray
    x: np.ndarray
    n_zero_runs: int
    chain_length: np.ndarray
    kernel: str
    n_leapfrog: int
    n_steps: int
    scale: np.ndarray | None
    n_density_calls: int
    counts: Counts = Counts()


#: The per-stage fields of :class:`SMCRunInfo`, in order.
STAGE_KEYS = (
    "beta",
    "log_increment",
    "increment_var",
    "ess",
    "cess",
    "gamma",
    "n_particles",
    "n_expansions",
    "resampled",
    "acceptance",
    "step_size",
    "n_moves",
)
#: The fields a stage's reweighting sets (the rest, from ``acceptance``, its moves).
REWEIGHT_KEYS = STAGE_KEYS[:9]


@dataclass(frozen=True, eq=False)
class SMCRunInfo:
    """What one resample-move SMC / ARM run (:func:`~.smc.run_resample_move`) reports.

    Per-stage arrays (the fields named in :data:`STAGE_KEYS`) have length ``S + 1``:
    index ``t`` belongs to ``beta[t]``, index 0 is the start.

    Attributes
    ----------
    beta : ndarray, shape (S + 1,)
        The schedule the run took, from 0 to 1.
    log_increment : ndarray, shape (S + 1,)
        Estimate of ``log Z_t / Z_{t-1}`` of the step that ends at ``beta[t]``.
    increment_var : ndarray, shape (S + 1,)
        Its delta-method variance for independent particles
        (:func:`~pymc_evidence.estimators.smc.increment_variance`).
    ess : ndarray, shape (S + 1,)
        Kish ESS after reweighting.
    cess : ndarray, shape (S + 1,)
        Conditional ESS of the step.
    gamma : ndarray, shape (S + 1,)
        ESS per particle that drove ARM.
    n_particles : ndarray, shape (S + 1,)
        ``R_n``, ARM expansions included.
    n_expansions : ndarray, shape (S + 1,)
        ARM expansions of the step.
    resampled : ndarray, shape (S + 1,)
        1.0 where the step ended with resampling, else 0.0.
    acceptance : ndarray, shape (S + 1,)
        Mean acceptance of the HMC moves at ``beta[t]`` (the last index: the final moves
        at ``beta = 1``).
    step_size : ndarray, shape (S + 1,)
        HMC step size of those moves.
    n_moves : ndarray, shape (S + 1,)
        HMC steps per particle at ``beta[t]`` (ARM expansions included; 0 at the start).
    n_stages : int
        ``S``.
    variance_proxy : float
        The i.i.d. variance proxy of ``log Zhat``
        (the sum of ``increment_var``).
    n_particle_moves : int
        Particles times HMC steps.
    n_density_calls : int
        Batched density calls of the run.
    x : ndarray, shape (R, d)
        Final, equally weighted particles.
    counts : Counts
        The points and trajectories the stages' evaluations and moves met, up to the last
        reweighting (step-size trials left out): what ``log Zhat`` depends on.
    posterior_counts : Counts
        Those of the moves at ``beta = 1`` after the last reweighting (``finish``), which
        shape the draws and not ``log Zhat``.
    """

    beta: np.ndarray
    log_increment: np.ndarray
    increment_var: np.ndarray
    ess: np.ndarray
    cess: np.ndarray
    gamma: np.ndarray
    n_particles: np.ndarray
    n_expansions: np.ndarray
    resampled: np.ndarray
    acceptance: np.ndarray
    step_size: np.ndarray
    n_moves: np.ndarray
    n_stages: int
    variance_proxy: float
    n_particle_moves: int
    n_density_calls: int
    x: np.ndarray
    counts: Counts = Counts()
    posterior_counts: Counts = Counts()
