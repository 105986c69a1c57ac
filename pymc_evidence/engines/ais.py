"""Forward and reverse annealed importance sampling on the geometric path (Habeck 2017).

The path runs from the normalized base ``q`` (``beta = 0``) to the model's joint density
``f`` (``beta = 1``): ``log pi_beta = beta * log f + (1 - beta) * log q``, so ``Z_0 = 1`` and
``Z_1 = Z`` is the evidence. With ``K + 1`` points ``0 = beta_0 < ... < beta_K = 1`` and
kernels ``T_k`` reversible for ``pi_{beta_k}`` (:func:`~pymc_evidence.engines.hmc_step`):

* forward: ``x_0 ~ q``; for ``k = 0..K-1``: (if ``k > 0``) ``x_k = T_k(x_{k-1})``, then
  ``log w += (beta_{k+1} - beta_k) * (log f - log q)(x_k)``;
* reverse: ``y ~ pi_1`` (posterior draws); for ``k = K-1 .. 0``:
  ``W_r += -(beta_{k+1} - beta_k) * (log f - log q)(y)``, then (if ``k > 0``) ``y = T_k(y)``.

Sign convention (the paper's, used by the BAR/Jarzynski estimators): the **work** of a path
is ``W = -log w`` in both directions, i.e. ``W_r`` is the same functional evaluated on the
reverse path. Then ``logmeanexp(-W_f)`` is the AIS estimate, ``-logmeanexp(W_r)`` the
reverse (RAISE) estimate, and ``-mean(W_f) <= log Z <= -mean(W_r)``.

Kernels must be identical in both directions: the forward run tunes its step size *between*
stages only and records it per stage in ``info.step_size``; pass them (and
``info.scale``) to :func:`run_reverse_ais`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..estimators.ladder import validate_ladder
from ..estimators.logspace import kish_ess, nan_as_zero_weight, weighted_var
from .counts import Counts
from .hmc import State, hmc_step, init_state
from .records import AISInfo, ReverseAISInfo
from .schedules import (
    adaptive_schedule,
    geometric_schedule,
    linear_schedule,
    sigmoidal_schedule,
)
from .settings import KernelSettings, kernel_scale
from .smc_kernel import DIVERGING_HALVE
from .stages import STAGE_FIELDS, StageInfo, anneal, counting, stack, total_counts

__all__ = [
    "AISKernel",
    "AISState",
    "adaptive_schedule",
    "geometric_schedule",
    "linear_schedule",
    "pilot_schedule",
    "run_forward_ais",
    "run_reverse_ais",
    "sigmoidal_schedule",
]

#: The default kernels (frozen, so one instance serves every call): scaled by the base, and
#: (for reverse runs, which have no base) by the identity.
_BASE_SCALE = KernelSettings()
_IDENTITY_SCALE = KernelSettings(scale=None)


def _increment(state, d_beta) -> np.ndarray:
    """``d_beta * (log f - log q)``; non-finite values (and nan) become ``-inf`` (weight 0)."""
    if d_beta == 0.0:
        return np.zeros_like(state.log_f)
    with np.errstate(invalid="ignore"):
        inc = d_beta * (state.log_f - state.log_q)
    return nan_as_zero_weight(inc)


def _move(state, beta, density, step_size, kernel: KernelSettings, rng, scale):
    """``kernel.n_steps`` HMC steps at ``beta``: the state, the mean acceptance, the
    diverging share, the steps' counts."""
    acc, div, met = [], [0.0], Counts()
    for _ in range(kernel.n_steps):
        state, info = hmc_step(state, beta, density, step_size, kernel.n_leapfrog, rng, scale=scale)
        acc.append(np.mean(info.acceptance))
        div.append(np.mean(info.diverging))
        met = met + info.counts
    return state, float(np.mean(acc)) if acc else np.nan, float(max(div)), met


def _fixed_steps(kernel: KernelSettings, betas: np.ndarray) -> np.ndarray | None:
    """The step size at each ``beta`` of a kernel that fixes them (None: tuned)."""
    if np.ndim(kernel.step_size) == 0:
        return None
    steps = np.broadcast_to(np.asarray(kernel.step_size, dtype=float), betas.shape)
    if np.any(~np.isfinite(steps[1:-1])):
        raise ValueError("step_size must be finite at every intermediate beta")
    return steps


def _tuned(eps: float, ceiling: float, acceptance: float, diverged: float, kernel):
    """After a stage at step ``eps``: the next stage's step, the ceiling, and the step to
    record for this stage (halved after divergences: runs that follow a pilot use the half
    there; the ceiling is then 0.8 times the step that diverged)."""
    if diverged > DIVERGING_HALVE:
        return eps / 2, 0.8 * eps, eps / 2
    grown = eps * (1.1 if acceptance > kernel.target_accept else 0.9)
    return min(grown, ceiling), ceiling, eps


def _path_var(state: State, log_w: np.ndarray) -> float:
    """Weighted variance of ``log f - log q`` under particles that represent the stage."""
    with np.errstate(invalid="ignore"):
        return weighted_var(state.log_f - state.log_q, log_w)


@dataclass(frozen=True)
class AISState:
    """A batch of AIS runs between stages.

    Attributes
    ----------
    particles : State
    log_w : ndarray, shape (n,)
        Log importance weights accumulated so far.
    stage : int
        Stages done (index into the kernel's ``walk``).
    done : bool
        The run has reached the end of its walk.
    step_size, ceiling : float
        The next stage's step size and the cap on its growth (runs that tune their steps).
    """

    particles: State
    log_w: np.ndarray
    stage: int = 0
    done: bool = False
    step_size: float = np.nan
    ceiling: float = np.inf


@dataclass(frozen=True)
class AISKernel:
    """The fixed configuration of a batch of AIS runs, forward or reverse.

    A stage reweights by ``|beta_t - beta_{t-1}| (log f - log q)`` and then, except at the
    end of the walk, moves the particles by ``settings.n_steps`` HMC steps at ``beta_t``.

    Attributes
    ----------
    density : BatchedDensity
    walk : ndarray, shape (K + 1,)
        The temperatures in the order the runs visit them (reversed for reverse runs).
    sign : float
        ``1.0`` forward, ``-1.0`` reverse (the increments' ``d_beta`` is positive both ways).
    settings : KernelSettings
    scale : ndarray, shape (d,), or None
        Diagonal HMC scale.
    steps : ndarray, shape (K + 1,), or None
        Fixed step size at each ``walk[t]``; None tunes it between stages from
        ``settings.step_size``.
    """

    density: object
    walk: np.ndarray
    sign: float
    settings: KernelSettings
    scale: np.ndarray | None
    steps: np.ndarray | None

    def init(self, x: np.ndarray) -> tuple[AISState, StageInfo]:
        """The runs at ``walk[0]``: the particles evaluated, equal weights."""
        particles = init_state(x, self.density)
        log_w = np.zeros(particles.x.shape[0])
        eps = np.nan if self.steps is not None else float(self.settings.step_size)
        state = AISState(particles, log_w, 0, self.walk.size == 1, eps)
        values = {"mean_increment": np.nan, "ess": float(log_w.size)}
        values["path_var"] = _path_var(particles, log_w)
        return state, StageInfo(self.walk[0], counts=Counts.of_state(particles), values=values)

    def step(self, rng: np.random.Generator, state: AISState) -> tuple[AISState, StageInfo]:
        """Reweight to ``walk[t]``, then (before the last one) move there."""
        t, s = state.stage + 1, self.settings
        beta, last = self.walk[t], t == self.walk.size - 1
        inc = _increment(state.particles, self.sign * (beta - self.walk[t - 1]))
        log_w = state.log_w + inc
        values = {"mean_increment": float(np.mean(inc)), "ess": kish_ess(log_w)}
        particles, eps, ceiling = state.particles, state.step_size, state.ceiling
        acc, used, n_moves, met = np.nan, np.nan, 0, Counts()
        if not last:
            used = eps if self.steps is None else float(self.steps[t])
            particles, acc, diverged, met = _move(
                particles, beta, self.density, used, s, rng, self.scale
            )
            n_moves = s.n_steps
            if self.steps is None and s.adapt_step_size:
                eps, ceiling, used = _tuned(used, ceiling, acc, diverged, s)
        values["path_var"] = _path_var(particles, log_w)
        info = StageInfo(beta, acc, used, n_moves, met, values)
        return AISState(particles, log_w, t, last, eps, ceiling), info


def run_forward_ais(
    density,
    base,
    betas,
    n_particles: int,
    rng: np.random.Generator,
    kernel: KernelSettings = _BASE_SCALE,
    *,
    x0: np.ndarray | None = None,
    callback=None,
) -> tuple[np.ndarray, AISInfo]:
    """Forward AIS from the base ``q`` to the model, with HMC kernels.

    Parameters
    ----------
    density : BatchedDensity
        From :func:`~pymc_evidence.engines.batched_log_densities` (same base).
    base : GaussianBase
        The base; particles start from ``base.sample``.
    betas : array_like, shape (K + 1,)
        Schedule from 0 to 1 (see :func:`sigmoidal_schedule`, :func:`geometric_schedule`).
    n_particles : int
    rng : numpy.random.Generator
    kernel : KernelSettings
        The HMC kernel: initial step size (an array fixes it at each ``beta`` and turns the
        tuning off), leapfrog steps, ``n_steps`` HMC steps at each intermediate ``beta``,
        the diagonal scale (``"base"``: the base's marginal standard deviations) and the
        tuning between stages (``target_accept``, ``adapt_step_size``; uncapped after a
        divergence, the step kept growing into the leapfrog's stability limit, and a
        regression's trajectories diverged).
    x0 : ndarray, shape (n_particles, d), optional
        Exact draws from the base, instead of ``base.sample`` (e.g. for a prior base).
    callback : callable, optional
        Called as ``callback(done, n_stages)`` after each stage (e.g. a progress bar).

    Returns
    -------
    works : ndarray, shape (n_particles,)
        Forward works ``W_f = -log w``; the AIS estimate is ``logmeanexp(-works)``.
    info : AISInfo
        Per-stage acceptance, step sizes, mean increments, ESS and path variances; final
        log weights and particles; the kernel settings (see
        :class:`~pymc_evidence.engines.records.AISInfo`).

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from pymc_evidence.base import GaussianBase
    >>> from pymc_evidence.engines import batched_log_densities, sigmoidal_schedule
    >>> from pymc_evidence.estimators.logspace import log_mean_exp
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu", 0.0, 1.0)
    ...     _ = pm.Normal("y", mu, 1.0, observed=np.array([0.5]))
    >>> base = GaussianBase(np.zeros(1), np.eye(1), log_zeta=0.0, kind="moments")
    >>> density = batched_log_densities(model, base)
    >>> works, info = run_forward_ais(density, base, sigmoidal_schedule(20), 200,
    ...                               np.random.default_rng(0))
    >>> exact = -0.5 * np.log(2 * np.pi * 2) - 0.25 * 0.5**2
    >>> bool(abs(log_mean_exp(-works) - exact) < 0.05)
    True
    """
    betas = validate_ladder(betas, strict=False)
    x = base.sample(int(n_particles), rng) if x0 is None else np.asarray(x0, dtype=float)
    scale, steps = kernel_scale(kernel, base), _fixed_steps(kernel, betas)
    ais = AISKernel(density, betas, 1.0, kernel, scale, steps)
    state, first = ais.init(x)
    state, infos = anneal(ais.step, state, rng, callback=counting(callback, betas.size - 1))
    stages, met = stack([first, *infos]), total_counts([first, *infos])
    info = AISInfo(
        **stages,
        log_weights=state.log_w,
        x=state.particles.x,
        scale=ais.scale,
        n_leapfrog=kernel.n_leapfrog,
        n_density_calls=met.n_calls,
        counts=met,
    )
    return -state.log_w, info


def pilot_schedule(
    density,
    base,
    x0: np.ndarray,
    n_stages: int,
    rng: np.random.Generator,
    *,
    n_pilot_stages: int | None = None,
    kernel: KernelSettings = _BASE_SCALE,
    callback=None,
) -> tuple[np.ndarray, np.ndarray, AISInfo]:
    """Choose a schedule and per-stage step sizes with a pilot forward run; freeze both.

    The pilot anneals the particles ``x0`` along a sigmoidal schedule of
    ``n_pilot_stages`` stages (default ``max(20, n_stages // 4)``), tuning its HMC step size
    between stages. Its path variances give :func:`adaptive_schedule`; its step sizes,
    interpolated in ``beta``, become the fixed kernels of the main runs, so that forward and
    reverse runs use exactly the same kernels and no tuning happens inside a run.
    ``kernel`` and ``callback`` are the pilot run's (see :func:`run_forward_ais`).

    Returns
    -------
    betas : ndarray, shape (n_stages + 1,)
    step_sizes : ndarray, shape (n_stages + 1,)
        ``nan`` at both ends (no kernel there).
    info : AISInfo
        The pilot's :func:`run_forward_ais` info.
    """
    m = int(n_pilot_stages) if n_pilot_stages else max(20, int(n_stages) // 4)
    pilot = sigmoidal_schedule(m)
    _, info = run_forward_ais(
        density, base, pilot, x0.shape[0], rng, kernel, x0=x0, callback=callback
    )
    betas = adaptive_schedule(pilot, info.path_var, n_stages)
    steps = np.interp(betas, pilot[1:-1], info.step_size[1:-1])
    steps[0] = steps[-1] = np.nan
    return betas, steps, info


def run_reverse_ais(
    density,
    betas,
    x0: np.ndarray,
    rng: np.random.Generator,
    kernel: KernelSettings = _IDENTITY_SCALE,
    *,
    callback=None,
) -> tuple[np.ndarray, ReverseAISInfo]:
    """Reverse AIS: start at draws from the target and anneal back to the base.

    Parameters
    ----------
    density : BatchedDensity
    betas : array_like, shape (K + 1,)
        The forward schedule (from 0 to 1); it is traversed from 1 down to 0.
    x0 : ndarray, shape (n, d)
        Exact (or well-mixed) draws from the model's posterior, raveled unconstrained.
    rng : numpy.random.Generator
    kernel : KernelSettings
        The forward run's kernel with its ``step_size`` at each ``betas[k]`` (its
        ``info.step_size``) and its ``scale`` (its ``info.scale``; there is no base here to
        take ``"base"`` from), so that the kernels are the same in both directions.
    callback : callable, optional
        Called as ``callback(done, n_stages)`` after each stage (e.g. a progress bar).

    Returns
    -------
    works : ndarray, shape (n,)
        Reverse works in the paper's convention, ``W_r = sum_k -(beta_{k+1} - beta_k)
        (log f - log q)(y_k)``; ``-logmeanexp(works)`` estimates ``log Z`` (biased high)
        and ``-mean(works)`` is an upper bound on it in expectation.
    info : ReverseAISInfo
        Per-stage acceptance, step sizes and mean increments; log weights (``-works``) and
        final particles (see :class:`~pymc_evidence.engines.records.ReverseAISInfo`).
    """
    betas = validate_ladder(betas, strict=False)
    step_sizes = np.broadcast_to(np.asarray(kernel.step_size, dtype=float), betas.shape)
    if np.any(~np.isfinite(step_sizes[1:-1])):
        raise ValueError("step_sizes must be finite at every intermediate beta")
    ais = AISKernel(density, betas[::-1], -1.0, kernel, kernel_scale(kernel), step_sizes[::-1])
    state, first = ais.init(x0)
    state, infos = anneal(ais.step, state, rng, callback=counting(callback, betas.size - 1))
    walked = stack([first, *infos])  # in walk order, from beta = 1
    met = total_counts([first, *infos])
    # a stage's increment belongs to the link it crossed, recorded at its upper end
    mean_inc = np.concatenate([[np.nan], walked["mean_increment"][:0:-1]])
    info = ReverseAISInfo(
        **{key: walked[key][::-1] for key in STAGE_FIELDS},
        mean_increment=mean_inc,
        log_weights=state.log_w,
        x=state.particles.x,
        n_density_calls=met.n_calls,
        counts=met,
    )
    return -state.log_w, info
