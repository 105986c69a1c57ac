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
stages only and records it per stage in ``info.step_sizes``; pass them (and
``info.scale``) to :func:`run_reverse_ais`.
"""

from __future__ import annotations

import numpy as np

from ..estimators.ladder import validate_ladder
from ..estimators.logspace import kish_ess, nan_as_zero_weight, weighted_var
from .counts import Counts
from .hmc import hmc_step, init_state
from .records import AISInfo, ReverseAISInfo
from .settings import KernelSettings, kernel_scale
from .smc_kernel import DIVERGING_HALVE

__all__ = [
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


def linear_schedule(n: int) -> np.ndarray:
    """``n`` equal stages: ``n + 1`` values of ``beta`` from 0 to 1."""
    return np.linspace(0.0, 1.0, int(n) + 1)


def geometric_schedule(n: int, beta_min: float = 1e-4) -> np.ndarray:
    """``n`` stages: ``0`` followed by ``n`` geometrically spaced values ``beta_min .. 1``.

    Examples
    --------
    >>> geometric_schedule(4, beta_min=1e-3).round(4).tolist()
    [0.0, 0.001, 0.01, 0.1, 1.0]
    """
    if not 0.0 < beta_min < 1.0:
        raise ValueError("beta_min must be in (0, 1)")
    return np.concatenate([[0.0], np.geomspace(beta_min, 1.0, int(n))])


def sigmoidal_schedule(n: int, scale: float = 4.0) -> np.ndarray:
    """``n`` stages with sigmoid spacing (Neal 2001; Grosse et al. 2015), dense near both ends.

    ``beta_t = (s(t) - s(0)) / (s(n) - s(0))`` with ``s(t) = sigmoid(scale * (2 t / n - 1))``.

    Examples
    --------
    >>> b = sigmoidal_schedule(10); float(b[0]), float(b[-1]), bool(abs(b[5] - 0.5) < 1e-12)
    (0.0, 1.0, True)
    """
    t = np.arange(int(n) + 1) / int(n)
    s = 1.0 / (1.0 + np.exp(-float(scale) * (2.0 * t - 1.0)))
    return (s - s[0]) / (s[-1] - s[0])


def adaptive_schedule(pilot_betas, path_var, n: int) -> np.ndarray:
    """``n`` stages of equal thermodynamic length, from a pilot run's path variances.

    The variance of a stage's log-weight increment is about ``d_beta**2 * Var_beta(u)``
    with ``u = log f - log q``; with ``d_beta`` proportional to ``1 / sd_beta(u)`` every stage
    contributes the same variance, which minimizes their sum for a given ``n`` (the
    thermodynamic length ``L = int sd_beta(u) d beta`` is split into ``n`` equal parts).

    Parameters
    ----------
    pilot_betas : array_like, shape (m + 1,)
        The pilot's schedule.
    path_var : array_like, shape (m + 1,)
        ``Var(u)`` at each pilot ``beta`` (e.g. :func:`run_forward_ais`'s ``info.path_var``);
        ``nan`` entries are interpolated from their neighbours.
    n : int
        Stages of the new schedule.

    Returns
    -------
    ndarray, shape (n + 1,)
        From 0 to 1, non-decreasing.

    Examples
    --------
    >>> b = np.linspace(0.0, 1.0, 101)
    >>> new = adaptive_schedule(b, 1.0 / (0.01 + b) ** 2, 10)  # sd(u) = 1 / (0.01 + beta)
    >>> bool(new[1] < 0.01 and new[-2] > 0.6)
    True
    """
    betas = validate_ladder(pilot_betas, strict=False)
    var = np.asarray(path_var, dtype=float)
    if var.shape != betas.shape:
        raise ValueError("path_var must have one value per pilot beta")
    ok = np.isfinite(var) & (var >= 0.0)
    if not ok.any():
        raise ValueError("the pilot run gave no finite path variance: cannot adapt the schedule")
    sd = np.sqrt(np.interp(betas, betas[ok], var[ok]))
    sd = sd + 1e-3 * max(float(np.mean(sd)), 1e-12)  # no stage of zero width
    length = np.concatenate([[0.0], np.cumsum(0.5 * (sd[1:] + sd[:-1]) * np.diff(betas))])
    new = np.interp(np.linspace(0.0, length[-1], int(n) + 1), length, betas)
    new[0], new[-1] = 0.0, 1.0
    return np.maximum.accumulate(new)


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
        divergence, the step kept growing into the leapfrog's stability limit: 3.9 % of a
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
    n_stages = betas.size - 1
    x = base.sample(int(n_particles), rng) if x0 is None else np.asarray(x0, dtype=float)
    scale = kernel_scale(kernel, base)
    state = init_state(x, density)
    met = Counts.of_state(state)
    log_w = np.zeros(state.x.shape[0])
    nan = np.full(n_stages + 1, np.nan)
    acceptance, step_sizes, mean_inc, ess, path_var = (nan.copy() for _ in range(5))
    ess[0] = state.x.shape[0]
    fixed = _fixed_steps(kernel, betas)
    eps = np.nan if fixed is not None else float(kernel.step_size)
    ceiling = np.inf  # below a step that diverged (see KernelSettings.target_accept)
    for t in range(1, n_stages + 1):
        with np.errstate(invalid="ignore"):
            path_var[t - 1] = weighted_var(state.log_f - state.log_q, log_w)
        inc = _increment(state, betas[t] - betas[t - 1])
        log_w = log_w + inc
        mean_inc[t] = float(np.mean(inc))
        ess[t] = kish_ess(log_w)
        if callback is not None:
            callback(t, n_stages)
        if t == n_stages:
            break
        eps = eps if fixed is None else float(fixed[t])
        step_sizes[t] = eps
        state, acceptance[t], diverged, step_met = _move(
            state, betas[t], density, eps, kernel, rng, scale
        )
        met = met + step_met
        if fixed is None and kernel.adapt_step_size:
            eps, ceiling, step_sizes[t] = _tuned(eps, ceiling, acceptance[t], diverged, kernel)
    with np.errstate(invalid="ignore"):
        path_var[n_stages] = weighted_var(state.log_f - state.log_q, log_w)
    info = AISInfo(
        betas=betas,
        acceptance=acceptance,
        step_sizes=step_sizes,
        mean_increment=mean_inc,
        ess=ess,
        path_var=path_var,
        log_weights=log_w,
        x=state.x,
        scale=scale,
        n_leapfrog=kernel.n_leapfrog,
        n_steps_per_stage=kernel.n_steps,
        n_density_calls=met.n_calls,
        counts=met,
    )
    return -log_w, info


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
    steps = np.interp(betas, pilot[1:-1], info.step_sizes[1:-1])
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
        ``info.step_sizes``) and its ``scale`` (its ``info.scale``; there is no base here to
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
    n_stages = betas.size - 1
    scale = kernel_scale(kernel)
    step_sizes = np.broadcast_to(np.asarray(kernel.step_size, dtype=float), betas.shape)
    if np.any(~np.isfinite(step_sizes[1:n_stages])):
        raise ValueError("step_sizes must be finite at every intermediate beta")
    state = init_state(x0, density)
    met = Counts.of_state(state)
    log_w = np.zeros(state.x.shape[0])
    acceptance, mean_inc = np.full(n_stages + 1, np.nan), np.full(n_stages + 1, np.nan)
    for k in range(n_stages - 1, -1, -1):
        inc = _increment(state, betas[k + 1] - betas[k])
        log_w = log_w + inc
        mean_inc[k + 1] = float(np.mean(inc))
        if k > 0:
            state, acceptance[k], _, step_met = _move(
                state, betas[k], density, step_sizes[k], kernel, rng, scale
            )
            met = met + step_met
        if callback is not None:
            callback(n_stages - k, n_stages)
    info = ReverseAISInfo(
        betas=betas,
        acceptance=acceptance,
        step_sizes=np.array(step_sizes),
        mean_increment=mean_inc,
        log_weights=log_w,
        x=state.x,
        n_density_calls=met.n_calls,
        counts=met,
    )
    return -log_w, info
