"""Tempered resample-move SMC and adaptive resample-move (ARM) on the geometric path.

The path runs from the normalized base ``q`` (``beta = 0``, ``Z_0 = 1``) to the model's
joint density ``f`` (``beta = 1``, ``Z_1 = Z``): ``log pi_beta = beta log f + (1 - beta)
log q``. One run (:func:`run_resample_move`) keeps ``R`` weighted particles targeting
``pi_{beta_n}`` and, per stage,

1. moves every particle by at least ``n_moves`` batched HMC steps at ``beta_n`` (none at
   ``beta_0 = 0``: exact base draws; with ``move_weighted=False``, none where the last
   reweighting left the particles weighted), then more, up to ``max_moves``, while the ranks of
   ``log f - log q`` (what the weights are functions of) still correlate with their values
   before the moves by more than ``decorrelation``;
2. picks ``beta_{n+1}``: the next value of a fixed schedule, or by bisection so that the
   conditional ESS fraction is ``target_ess`` (Zhou, Johansen & Aston 2016);
3. reweights by ``W = exp((beta_{n+1} - beta_n)(log f - log q))`` and adds
   ``log sum w~ W`` to ``log Zhat`` (eq. 5 of Fraccaro, Paquet & Winther);
4. resamples back to ``R`` particles when ``ESS / R_n < resample_threshold``.

**ARM** (Algorithm 2 of the paper): when the ESS per particle ``gamma = CESS / R_n`` of a
step is below ``arm_threshold``, copies of the moved set are moved ``n_moves`` more steps by
the same ``pi_{beta_n}``-invariant kernel (continuing their chains), merged with weights by
counts (Proposition 1, :func:`~pymc_evidence.estimators.smc.merge_log_weights`), and
``gamma`` is recomputed, up to ``max_expansions`` times. The initially moved set is kept
(so ``R <= R_n <= (max_expansions + 1) R``); an expanded set is always resampled back to
``R``. ``gamma`` is the conditional ESS per particle: it equals the paper's ESS per particle
whenever the incoming weights are equal, and otherwise leaves out the degeneracy inherited
from earlier stages, so that only the difficulty of the current step triggers expansion.

When each helps: on a run's own adaptive schedule every step has ``CESS / R = target_ess``
(0.8 > ``arm_threshold`` 0.7), so ARM equals plain SMC; on a fixed schedule it spends extra
particles where ``Delta beta * sqrt(Var(log f - log q))`` is large.

Kernel tuning (:mod:`pymc_evidence.engines.smc_kernel`): the HMC scale is the weighted
standard deviation of the particles at the start of the stage; the step size is settled
before the stage's first move (halved while trial trajectories diverge) and multiplied by
``exp(step_gain * (acceptance - target_accept))`` after each stage and between the extra
blocks of moves. Adapting kernels
to the particle population is standard practice in SMC; it makes ``Zhat`` slightly biased at
finite ``R``. An adaptive schedule does the same, more strongly in many dimensions, so the
methods layer fixes the schedule from a pilot run by default (:mod:`pymc_evidence.methods.smc`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..estimators.logspace import (
    kish_ess,
    normalize_log_weights,
    resample_indices,
)
from ..estimators.smc import (
    conditional_ess,
    increment_variance,
    log_increment,
    merge_log_weights,
    next_beta,
)
from .counts import Counts
from .hmc import State, init_state
from .records import REWEIGHT_KEYS, STAGE_KEYS, SMCRunInfo
from .settings import SMCSettings
from .smc_kernel import (
    MOVE_BLOCK,
    Kernel,
    Moved,
    Tuning,
    concat,
    log_incr,
    log_ratio,
    put,
    repeated_rows,
    repeats,
    take,
)
from .stages import STAGE_FIELDS, StageInfo, anneal, stack, total_counts

__all__ = [
    "MOVE_BLOCK",
    "STAGE_KEYS",
    "ResampleMove",
    "SMCSettings",
    "SMCState",
    "run_resample_move",
]


@dataclass(frozen=True)
class SMCState:
    """One SMC run between stages.

    Attributes
    ----------
    particles : State
    log_w : ndarray, shape (R,)
        Normalized log weights.
    beta : float
        The temperature the particles are weighted for.
    tuning : Tuning
        The moves' step size and scale.
    stage : int
        Reweighting stages done.
    done : bool
    particle_moves : int
        Particle moves (particles times HMC steps) the stages made.
    """

    particles: State
    log_w: np.ndarray
    beta: float
    tuning: Tuning
    stage: int = 0
    done: bool = False
    particle_moves: int = 0


@dataclass(frozen=True)
class ResampleMove:
    """One SMC (or ARM) run's fixed configuration: the moves, the settings, the fixed
    schedule (None: adaptive) and whether the run ends with the moves at ``beta = 1``.

    A stage moves the particles at the current ``beta`` (none at 0: exact base draws),
    chooses the next ``beta``, reweights (expanding the set for ARM) and resamples; its
    :class:`~.stages.StageInfo` holds the ``beta`` it reached, the reweighting's numbers
    (:data:`~.records.REWEIGHT_KEYS`) and its moves, which ran at the ``beta`` it started
    from. The last step (``finish``) resamples at ``beta = 1`` and moves the copies apart.
    """

    moves: Kernel
    schedule: np.ndarray | None
    finish: bool = True

    def init(self, x0: np.ndarray) -> tuple[SMCState, StageInfo]:
        """The base draws evaluated, equal weights, the first scale from their spread."""
        s = self.moves.settings
        particles = init_state(x0, self.moves.density)
        n = particles.x.shape[0]
        if n < 2:
            raise ValueError(f"need at least 2 particles, got {n}")
        log_w = np.full(n, -np.log(n))
        tuning = Tuning(float(s.step_size), self.moves.scale_of(particles.x, log_w, None))
        start = (0.0, np.nan, np.nan, n, np.nan, np.nan, n, 0, 0)
        values = dict(zip(REWEIGHT_KEYS[1:], start[1:], strict=True))
        first = StageInfo(0.0, counts=Counts.of_state(particles), values=values)
        return SMCState(particles, log_w, 0.0, tuning), first

    def step(self, rng: np.random.Generator, state: SMCState) -> tuple[SMCState, StageInfo]:
        """One stage from ``state.beta`` (or, at ``beta = 1``, the finishing moves)."""
        if state.beta >= 1.0:
            return self._finish(rng, state)
        s, k, beta = self.moves.settings, state.stage, state.beta
        if k + 1 > s.max_stages:
            raise RuntimeError(
                f"the adaptive schedule needed more than {s.max_stages} stages (beta = "
                f"{beta:.3g}); raise max_stages, lower target_ess or use a better base"
            )
        particles, tuning, moved = state.particles, state.tuning, Moved()
        step_size = tuning.step_size
        # at beta = 0 the particles are exact base draws; weighted ones are distinct draws
        if k > 0 and (s.move_weighted or np.ptp(state.log_w) == 0):
            particles, tuning, moved = self.moves.move(rng, particles, beta, tuning)
        if self.schedule is not None:
            new_beta = float(self.schedule[k + 1])
        else:
            new_beta = next_beta(beta, log_ratio(particles), state.log_w, s.target_ess)
        particles, log_w, values, tuning, moved = _reweight(
            self.moves, rng, particles, state.log_w, (beta, new_beta), tuning, moved
        )
        tuning = replace(tuning, scale=self.moves.scale_of(particles.x, log_w, tuning.scale))
        tuning = tuning.tuned(moved.acceptance, s)
        acc = float(np.mean(moved.acceptance)) if moved.acceptance else np.nan
        values["particle_moves"] = moved.particle_moves
        info = StageInfo(new_beta, acc, step_size, len(moved.acceptance), moved.counts, values)
        done = new_beta >= 1.0 and not self.finish
        total = state.particle_moves + moved.particle_moves
        return SMCState(particles, log_w, new_beta, tuning, k + 1, done, total), info

    def _finish(self, rng, state: SMCState) -> tuple[SMCState, StageInfo]:
        """At ``beta = 1``: resample to equal weights (if needed), then move the copies
        resampling made, here or at the last reweighting, until they have moved apart
        (:meth:`~.smc_kernel.Kernel.refresh`); a particle drawn once keeps its place (it
        already follows the posterior), so distinct particles of equal weights move
        nothing. Then ``posterior_moves`` steps of every particle, within the budget
        (:meth:`~.settings.SMCSettings.posterior_steps`): the particles a stage weighted
        follow the posterior in expectation, but its tails, where a few particles carry
        large weights, are short of draws."""
        particles, log_w, tuning = state.particles, state.log_w, state.tuning
        n, moved = log_w.size, Moved()
        if np.ptp(log_w) > 0:
            index = resample_indices(log_w, n, rng, self.moves.settings.resampling)
            particles = take(particles, index)
            scale = self.moves.scale_of(particles.x, np.zeros(n), tuning.scale)
            tuning = replace(tuning, scale=scale)
            copies = repeats(index)
        else:  # a reweighting that resampled left its copies on their parents
            copies = repeated_rows(particles.x)
        step_size = tuning.step_size
        if copies.size:
            part, tuning, moved = self.moves.refresh(
                rng, take(particles, copies), 1.0, tuning, rows=n
            )
            particles = put(particles, copies, part)
        extra = self.moves.settings.posterior_steps(state.particle_moves, n)
        if extra:
            particles, tuning, more = self.moves.steps(rng, particles, 1.0, tuning, extra)
            moved = moved + more
        acc = float(np.mean(moved.acceptance)) if moved.acceptance else np.nan
        values = {"particle_moves": moved.particle_moves}
        info = StageInfo(1.0, acc, step_size, len(moved.acceptance), moved.counts, values)
        log_w = np.full(n, -np.log(n))
        return SMCState(particles, log_w, 1.0, tuning, state.stage, True), info


def _expand(moves: Kernel, rng, state, log_w, betas, gamma, carry):
    """ARM's generate loop: merged state, log weights and log increments, expansions,
    gamma, and ``carry`` (the tuning, the moves) with the expansions'."""
    s, (beta, new_beta), (tuning, moved) = moves.settings, betas, carry
    d_beta = new_beta - beta
    ratio = log_ratio(state)
    states, weights, incrs = [state], [log_w], [log_incr(ratio, d_beta)]
    current, i = state, 0
    while gamma < s.arm_threshold and i < s.max_expansions:
        # continue the chains of the base set
        current, tuning, more = moves.move(rng, current, beta, tuning)
        moved = moved + more
        states.append(current)
        weights.append(log_w)  # a copy keeps the weights of the set it was made from
        incrs.append(log_incr(log_ratio(current), d_beta))
        merged = np.concatenate(merge_log_weights(weights))
        gamma = conditional_ess(merged, np.concatenate(incrs)) / merged.size
        i += 1
    merged = np.concatenate(merge_log_weights(weights))
    return concat(states), merged, np.concatenate(incrs), i, gamma, (tuning, moved)


def _reweight(moves: Kernel, rng, state, log_w, betas, tuning, moved):
    """Steps 3-4 (with ARM's expansion): the state, the normalized log weights, the
    reweighting's numbers, the tuning and the moves."""
    s, n, (beta, new_beta) = moves.settings, log_w.size, betas
    ratio = log_ratio(state)
    incr = log_incr(ratio, new_beta - beta)
    gamma = conditional_ess(log_w, incr) / n
    n_exp = 0
    if s.arm and gamma < s.arm_threshold and s.max_expansions > 0:
        state, log_w, incr, n_exp, gamma, (tuning, moved) = _expand(
            moves, rng, state, log_w, betas, gamma, (tuning, moved)
        )
    if not np.any(np.isfinite(log_w + incr)):
        raise RuntimeError(f"every particle has weight zero at beta = {new_beta:.6g}")
    cess, var = conditional_ess(log_w, incr), increment_variance(log_w, incr)
    increment = log_increment(log_w, incr)
    log_w = normalize_log_weights(log_w + incr)
    ess = kish_ess(log_w)
    resampled = log_w.size > n or ess < s.resample_threshold * log_w.size
    row = (increment, var, ess, cess, gamma, log_w.size, n_exp, resampled)
    values = {key: float(value) for key, value in zip(REWEIGHT_KEYS[1:], row, strict=True)}
    if resampled:
        state = take(state, resample_indices(log_w, n, rng, s.resampling))
        log_w = np.full(n, -np.log(n))
    return state, log_w, values, tuning, moved


def _progress(callback):
    """An :func:`~.stages.anneal` callback that calls ``callback(beta, stage)`` after each
    reweighting stage."""
    if callback is None:
        return None

    def update(state: SMCState, info: StageInfo) -> None:
        if "log_increment" in info.values:
            callback(state.beta, state.stage)

    return update


def _record(first: StageInfo, infos: list, finished: bool) -> dict[str, np.ndarray]:
    """Per-stage arrays of :data:`~.records.STAGE_KEYS`: a stage's moves ran at the ``beta``
    it started from, so the move fields are shifted by one to the ``beta`` they ran at (the
    last: the finishing moves at ``beta = 1``, ``nan`` without them)."""
    reweights = infos[:-1] if finished else infos
    moves = infos if finished else [*infos, StageInfo(np.nan)]
    stages = stack([first, *reweights])
    shifted = stack(moves)
    out = {key: stages[key] for key in REWEIGHT_KEYS}
    for key in STAGE_FIELDS[1:]:
        out[key] = shifted[key]
    if not finished:
        out["n_moves"][-1] = np.nan
    return out


def run_resample_move(
    density,
    x0: np.ndarray,
    rng: np.random.Generator,
    settings: SMCSettings | None = None,
    *,
    callback=None,
    finish: bool = True,
) -> tuple[float, SMCRunInfo]:
    """One run of tempered resample-move SMC (or ARM) from the base to the model.

    Parameters
    ----------
    density : BatchedDensity
        From :func:`~pymc_evidence.engines.batched_log_densities`.
    x0 : ndarray, shape (R, d)
        Exact draws from the base (see :meth:`pymc_evidence.problem.EvidenceProblem.base_draws`).
    rng : numpy.random.Generator
    settings : SMCSettings, optional
        Defaults: adaptive schedule, plain SMC (no ARM).
    callback : callable, optional
        Called as ``callback(beta, stage)`` after every stage (e.g. a progress bar).
    finish : bool, default True
        Resample to equal weights and move once more at ``beta = 1``. False stops at the
        last reweighting (``info.x`` then holds weighted particles, and the last entries
        of ``step_size``, ``acceptance`` and ``n_moves`` are NaN): a pilot run that only
        sets the schedule needs nothing more.

    Returns
    -------
    log_z : float
        ``log Zhat`` of this run, the sum of the per-stage increments.
    info : SMCRunInfo
        Per-stage arrays (``beta``, increments, ESS, CESS, ``gamma``, particle counts,
        expansions, resampling, acceptance, step size), the run's totals and its final
        equally weighted particles (see :class:`~pymc_evidence.engines.records.SMCRunInfo`).

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from pymc_evidence.base import GaussianBase
    >>> from pymc_evidence.engines import batched_log_densities
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu", 0.0, 1.0)
    ...     _ = pm.Normal("y", mu, 1.0, observed=np.array([0.5]))
    >>> base = GaussianBase(np.zeros(1), np.eye(1), log_zeta=0.0, kind="moments")
    >>> density = batched_log_densities(model, base)
    >>> rng = np.random.default_rng(0)
    >>> log_z, info = run_resample_move(density, base.sample(500, rng), rng)
    >>> exact = -0.5 * np.log(2 * np.pi * 2) - 0.25 * 0.5**2
    >>> bool(abs(log_z - exact) < 0.05), float(info.beta[-1])
    (True, 1.0)
    """
    s = settings or SMCSettings()
    smc = ResampleMove(Kernel(density, s), s.checked_schedule(), finish)
    state, first = smc.init(x0)
    state, infos = anneal(smc.step, state, rng, callback=_progress(callback))
    stages = _record(first, infos, finish)
    met = total_counts([first, *infos])
    stages_met = total_counts([first, *infos[:-1]]) if finish else met
    info = SMCRunInfo(
        **stages,
        n_stages=len(stages["beta"]) - 1,
        variance_proxy=float(np.nansum(stages["increment_var"][1:])),
        n_particle_moves=int(sum(i.values["particle_moves"] for i in infos)),
        n_density_calls=met.n_calls,
        x=state.particles.x,
        counts=stages_met,
        posterior_counts=infos[-1].counts if finish else Counts(),
    )
    return float(np.nansum(info.log_increment)), info
