"""Automatic differentiation variational inference (ADVI) on a model's raveled space
(:class:`~pymc_evidence.runtime.ModelSpace`).

A small, self-contained implementation (Kucukelbir et al. 2017) that fits every restart at
once: the parameters of ``R`` Gaussians are one ``(R, n_params)`` array, and each Adam step
evaluates the model's log density and gradient at all ``R x n_mc`` Monte Carlo points in one
compiled, vectorized call (:func:`batched_logp`, compiled once per model and cached).
Reparameterization gradients with Adam, a decaying learning rate and Polyak averaging of the
last iterates; each result is evaluated by a fresh Monte Carlo estimate of the ELBO and of
the importance-sampling estimate of ``log Z`` (:func:`evaluate_bases`, batched too).
Where the density runs on JAX, a fit of :data:`FUSED_MIN_STEPS` steps or more runs its
steps in jitted blocks (:mod:`~pymc_evidence.basefit.advi_jax`), the same arithmetic without
Python between the steps.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ..runtime.batched_logp import BatchedLogp, batched_logp
from .advi_jax import BLOCK, fused_block
from .advi_steps import Adam, Schedule
from .evaluation import BaseFitError, evaluate_bases

__all__ = ["BaseFitError", "batched_logp", "evaluate_bases", "run_advi"]

_LOG_2PI = float(np.log(2.0 * np.pi))


@functools.cache
def _strict_lower(d: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.tril_indices(d, -1)``, computed once per ``d`` (ADVI asks twice per step)."""
    return np.tril_indices(d, -1)


def _init_params(starts, fullrank, init_scale):
    n_fits, d = starts.shape
    params = np.zeros((n_fits, 2 * d + (d * (d - 1) // 2 if fullrank else 0)))
    params[:, :d] = starts
    params[:, d : 2 * d] = np.log(init_scale)
    return params


def unpack(params: np.ndarray, d: int, fullrank: bool) -> tuple[np.ndarray, np.ndarray]:
    """Means ``(R, d)`` and lower Cholesky factors ``(R, d, d)`` of parameter rows."""
    params = np.atleast_2d(params)
    chols = np.zeros((len(params), d, d))
    diag = np.arange(d)
    chols[:, diag, diag] = np.exp(params[:, d : 2 * d])
    if fullrank:
        rows, cols = _strict_lower(d)
        chols[:, rows, cols] = params[:, 2 * d :]
    return params[:, :d], chols


def _draw_points(params, eps, d, fullrank):
    """Reparameterized points ``mean + chol @ eps``, shape ``(R, n_mc, d)``."""
    mean = params[:, None, :d]
    if not fullrank:
        return mean + eps * np.exp(params[:, None, d : 2 * d])
    _, chols = unpack(params, d, fullrank)
    return mean + eps @ np.swapaxes(chols, 1, 2)


def _evaluate(density, params, eps, idx, fullrank):
    """Model log densities ``(r, n_mc)`` and gradients ``(r, n_mc, d)`` at the Monte Carlo
    points of the fits ``idx`` (one batched call), and which fits met only finite values."""
    n_mc, d = eps.shape[1:]
    rows = slice(None) if idx.size == len(params) else idx
    logps, grads = density(_draw_points(params[rows], eps[rows], d, fullrank).reshape(-1, d))
    logps, grads = logps.reshape(idx.size, n_mc), grads.reshape(idx.size, n_mc, d)
    return logps, grads, np.isfinite(logps.sum(axis=1) + grads.sum(axis=(1, 2)))


def _elbo_gradients(params, eps, logps, grads, d, fullrank):
    """Noisy ELBO ``(R,)`` and its reparameterization gradient ``(R, n_params)``."""
    n_mc = eps.shape[1]
    grad = np.empty_like(params)
    grad[:, :d] = grads.sum(axis=1) / n_mc
    scale = np.exp(params[:, d : 2 * d])
    if fullrank:
        cross = np.swapaxes(grads, 1, 2) @ eps / n_mc
        grad[:, d : 2 * d] = np.diagonal(cross, axis1=1, axis2=2) * scale + 1.0
        rows, cols = _strict_lower(d)
        grad[:, 2 * d :] = cross[:, rows, cols]
    else:
        grad[:, d : 2 * d] = (grads * eps).sum(axis=1) * (scale / n_mc) + 1.0
    elbo = logps.sum(axis=1) / n_mc + params[:, d : 2 * d].sum(axis=1) + 0.5 * d * (1.0 + _LOG_2PI)
    return elbo, grad


@dataclass
class AdviResult:
    """ADVI fits from ``R`` start points.

    Attributes
    ----------
    means : ndarray, shape (R, d)
    chols : ndarray, shape (R, d, d)
        The fitted Gaussians (Polyak average of the last 20% of iterates).
    traces : ndarray, shape (R, n_steps)
        Noisy ELBO at each step (NaN where the step was skipped).
    errors : list of str or None
        Why a fit failed (its mean and Cholesky rows are then meaningless), else None.
    n_steps : int
        Adam steps run (fewer than asked when the constant-rate phase stopped early).
    """

    means: np.ndarray
    chols: np.ndarray
    traces: np.ndarray
    errors: list
    n_steps: int


#: A step whose Monte Carlo ``E_q[log f]`` falls more than this many nats below the fit's
#: median noisy ELBO of its last window of :data:`COLLAPSE_WINDOW` steps is skipped (and
#: counted as a bad step). See :class:`_Collapse`.
COLLAPSE_DROP = 1000.0
COLLAPSE_WINDOW = 50


class _Collapse:
    """Fits whose draws this step landed far out in a tail (see :data:`COLLAPSE_DROP`).

    On a log-link model one draw in a tail (``exp(b)`` of a wide ``b``) gives a log density
    of -1e50 and a gradient to match; Adam's moments keep it for hundreds of steps, and
    full-rank fits of 20 Poisson intercepts that had converged wandered to absurdly low
    ELBOs. Such a step is skipped, as a non-finite one is. The reference is the median of
    the last complete window of :data:`COLLAPSE_WINDOW` steps, computed once a window (a
    median every step added up over a fit's many steps).
    """

    def __init__(self, n_fits: int):
        self.reference = np.full(n_fits, -np.inf)

    def update(self, traces: np.ndarray, step: int) -> None:
        """Renew the reference before ``step`` when a window has just been completed."""
        if step >= COLLAPSE_WINDOW and step % COLLAPSE_WINDOW == 0:
            recent = traces[:, step - COLLAPSE_WINDOW : step]
            has = np.any(np.isfinite(recent), axis=1)
            self.reference[:] = -np.inf
            self.reference[has] = np.nanmedian(recent[has], axis=1)

    def __call__(self, logps: np.ndarray, traces: np.ndarray, idx, step: int) -> np.ndarray:
        self.update(traces, step)
        with np.errstate(invalid="ignore"):
            return np.mean(logps, axis=1) < self.reference[idx] - COLLAPSE_DROP


def _record_failures(bad, n_bad, errors, active, step, max_bad):
    """Count non-finite steps of the restarts ``bad``; drop those over the limit."""
    n_bad[bad] += 1
    for r in bad[n_bad[bad] > max_bad]:
        active[r] = False
        errors[r] = _failure_message(n_bad[r], step + 1)


def _failure_message(n_bad: int, n_steps: int) -> str:
    return (
        f"ADVI met non-finite log densities or gradients in {n_bad} of {n_steps} steps; "
        "the model may be badly scaled or the start point poor."
    )


def run_advi(
    density: BatchedLogp,
    starts: np.ndarray,
    *,
    fullrank: bool = False,
    n_steps: int = 5000,
    learning_rate: float = 0.05,
    n_mc: int = 4,
    init_scale: float | np.ndarray = 0.1,
    rng: np.random.Generator,
    early_stop: bool = True,
    callback=None,
) -> AdviResult:
    """Fit one Gaussian per start point by maximizing the ELBO, all restarts at once.

    Parameters
    ----------
    density : BatchedLogp
        From :func:`batched_logp`; called once per step at all ``R x n_mc`` points.
    starts : ndarray, shape (R, d)
        Initial means; the initial standard deviations are ``init_scale`` (a number, or an
        array of shape ``(d,)`` or ``(R, d)``: per coordinate, or per fit and coordinate).
    rng : Generator
        Each step draws ``(R, n_mc, d)`` standard normals, so a seed fixes every fit.
    early_stop : bool, default True
        Start the learning-rate decay once the constant-rate phase has plateaued (every
        fit's noisy ELBO, averaged over windows of ``n_steps / 16`` steps, no longer rises
        by two standard errors), not after ``n_steps / 2`` steps; the decay keeps its length.
    callback : callable, optional
        Called as ``callback(done, total)`` after every step (every block of at most
        :data:`~pymc_evidence.basefit.advi_jax.BLOCK` steps where the density runs on JAX,
        see :mod:`~pymc_evidence.basefit.advi_jax`): steps done and the steps the run will
        take (it shrinks when the constant-rate phase stops early); e.g. the update of a
        :func:`~pymc_evidence.progress.progress_bar`.

    Returns
    -------
    AdviResult
        A fit fails (and the others go on) when more than ``max(10, 10%)`` of its steps
        meet a non-finite density or gradient, or its result is not finite.
    """
    starts = np.atleast_2d(np.asarray(starts, dtype=float))
    run = _Run.start(starts, fullrank, init_scale, learning_rate, n_steps, early_stop)
    block = _jax_block(density, run, learning_rate)
    step = 0
    while step < run.schedule.end:
        if block is None:
            if not _numpy_step(run, density, rng, step, n_mc):
                break
            step += 1
        else:
            if not run.active.any():
                break
            step = _fused_steps(run, block, density, rng, step, n_mc)
        run.schedule.check(run.traces, run.active, step - 1)
        if callback is not None:
            callback(step, run.schedule.end)
    return run.result()


@dataclass
class _Run:
    """The state of a set of ADVI fits between steps."""

    params: np.ndarray
    adam: Adam
    traces: np.ndarray
    schedule: Schedule
    collapsed: _Collapse
    d: int
    fullrank: bool
    max_bad: float
    n_bad: np.ndarray
    active: np.ndarray
    errors: list
    tail_sum: np.ndarray
    n_tail: np.ndarray

    @classmethod
    def start(cls, starts, fullrank, init_scale, learning_rate, n_steps, early_stop) -> _Run:
        n_fits = len(starts)
        params = _init_params(starts, fullrank, init_scale)
        return cls(
            params, Adam(params.shape, learning_rate), np.full((n_fits, n_steps), np.nan),
            Schedule(n_steps, early_stop), _Collapse(n_fits), starts.shape[1], fullrank,
            max(10, 0.1 * n_steps), np.zeros(n_fits, dtype=int), np.ones(n_fits, bool),
            [None] * n_fits, np.zeros_like(params), np.zeros(n_fits),
        )  # fmt: skip

    def result(self) -> AdviResult:
        """Polyak averages of the tails (the last iterate where a fit has none)."""
        params, done = self.params, self.n_tail > 0
        params[done] = self.tail_sum[done] / self.n_tail[done, None]
        means, chols = unpack(params, self.d, self.fullrank)
        finite = np.isfinite(means).all(axis=1) & np.isfinite(chols).all(axis=(1, 2))
        for r in np.flatnonzero(self.active & ~finite):
            self.errors[r] = "ADVI produced non-finite parameters"
        end = self.schedule.end
        return AdviResult(means, chols, self.traces[:, :end], self.errors, end)


#: Fits of at least this many steps run in jitted blocks where the density is on JAX
#: (:mod:`~pymc_evidence.basefit.advi_jax`); the short checks of a Laplace base (400 steps)
#: stay in numpy, whose block would be one more compilation for little.
FUSED_MIN_STEPS = 1000


def _jax_block(density, run: _Run, learning_rate: float):
    """The jitted block of steps for ``density``, or None (numpy steps): a density not on
    JAX, a short fit, or a learning rate per fit."""
    rows = getattr(density, "jax_rows", None)
    if rows is None or run.traces.shape[1] < FUSED_MIN_STEPS or np.ndim(learning_rate):
        return None
    return fused_block(rows, run.d, run.fullrank, learning_rate, COLLAPSE_DROP)


def _fused_steps(run: _Run, block, density, rng, step: int, n_mc: int) -> int:
    """Steps from ``step`` to the next place where a window ends (the collapse
    reference's, the plateau test's) or the fit does, in one jitted call; the step reached."""
    schedule, n_fits, d = run.schedule, run.params.shape[0], run.d
    stop = min(
        (step // COLLAPSE_WINDOW + 1) * COLLAPSE_WINDOW,
        (step // schedule.window + 1) * schedule.window,
        schedule.end,
    )
    n = stop - step
    eps = np.zeros((BLOCK, n_fits, n_mc, d))
    eps[:n] = rng.standard_normal((n, n_fits, n_mc, d))
    run.collapsed.update(run.traces, step)
    sched = (float(schedule.decay_start), float(schedule.n_decay), schedule.tail_from)
    carry = (run.params, run.adam.m, run.adam.v, run.adam.t, run.n_bad, run.active,
             np.zeros(n_fits, dtype=int), run.tail_sum, run.n_tail)  # fmt: skip
    out = block(carry, eps, n, step, sched, run.collapsed.reference, float(run.max_bad),
                *density.jax_rows.shared_values())  # fmt: skip
    out = [np.array(o) for o in out]
    run.params, run.adam.m, run.adam.v, run.adam.t, run.n_bad = out[:5]
    dead = run.active & ~out[5]
    run.active, run.tail_sum, run.n_tail = out[5], out[7], out[8]
    run.traces[:, step:stop] = out[9][:n].T
    for r in np.flatnonzero(dead):
        run.errors[r] = _failure_message(run.n_bad[r], out[6][r])
    return stop


def _numpy_step(run: _Run, density, rng, step: int, n_mc: int) -> bool:
    """One Adam step of every active fit (False, after drawing, when none is left)."""
    n_fits, d = run.params.shape[0], run.d
    eps = rng.standard_normal((n_fits, n_mc, d))
    idx = np.flatnonzero(run.active)
    if idx.size == 0:
        return False
    logps, grads, ok = _evaluate(density, run.params, eps, idx, run.fullrank)
    ok &= ~run.collapsed(logps, run.traces, idx, step)
    if not ok.all():
        _record_failures(idx[~ok], run.n_bad, run.errors, run.active, step, run.max_bad)
        idx, logps, grads = idx[ok], logps[ok], grads[ok]
    rows = slice(None) if idx.size == n_fits else idx
    elbo, grad = _elbo_gradients(run.params[rows], eps[rows], logps, grads, d, run.fullrank)
    run.traces[rows, step] = elbo
    run.adam.ascend(run.params, grad, run.schedule.lr_scale(step), rows)
    if run.schedule.in_tail(step):
        run.tail_sum[rows] += run.params[rows]
        run.n_tail[rows] += 1
    return True
