"""Automatic differentiation variational inference (ADVI) on a :class:`ModelSpace`.

A small, self-contained implementation (Kucukelbir et al. 2017) that fits every restart at
once: the parameters of ``R`` Gaussians are one ``(R, n_params)`` array, and each Adam step
evaluates the model's log density and gradient at all ``R x n_mc`` Monte Carlo points in one
compiled, vectorized call (:func:`batched_logp`, compiled once per model and cached).
Reparameterization gradients with Adam, a decaying learning rate and Polyak averaging of the
last iterates; each result is evaluated by a fresh Monte Carlo estimate of the ELBO and of
the importance-sampling estimate of ``log Z`` (:func:`evaluate_bases`, batched too).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ..estimators.logspace import logsumexp
from .batched_logp import BatchedLogp, batched_logp

__all__ = ["BaseFitError", "batched_logp", "evaluate_bases", "run_advi"]

_LOG_2PI = float(np.log(2.0 * np.pi))


class BaseFitError(RuntimeError):
    """ADVI did not produce a usable base density."""


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


class _Adam:
    """Adam ascent on parameter rows, each row with its own step count."""

    def __init__(self, shape, lr, b1=0.9, b2=0.999, eps=1e-8):
        self.m, self.v, self.t = np.zeros(shape), np.zeros(shape), np.zeros(shape[0])
        self.lr, self.b1, self.b2, self.eps = lr, b1, b2, eps

    def ascend(self, params, grad, lr_scale, rows):
        """Update ``params[rows]`` in place with the gradient rows ``grad`` (one per row);
        ``rows`` is an index array, or ``slice(None)`` for all rows (faster)."""
        t = self.t[rows] + 1.0
        m = self.b1 * self.m[rows] + (1 - self.b1) * grad
        v = self.b2 * self.v[rows] + (1 - self.b2) * grad * grad
        self.t[rows], self.m[rows], self.v[rows] = t, m, v
        step = (self.lr * lr_scale / (1 - self.b1**t))[:, None] * m
        params[rows] += step / (np.sqrt(v / (1 - self.b2**t)[:, None]) + self.eps)


#: The shortest decay, as a fraction of ``n_steps`` (a 60-d mean-field fit whose decay
#: was as short as a 600-step constant phase came out visibly wider).
_MIN_DECAY = 0.25


class _Schedule:
    """Learning-rate scale and Polyak window: a constant rate until ``decay_start`` (half
    the steps, or earlier with ``early_stop`` once the ELBO has plateaued, see
    :meth:`check`), then a cosine decay to 5% over as many steps as the constant phase
    took (between a quarter and half of the steps); the iterates of the last 40% of the
    decay are averaged.

    An easy model plateaus after a few hundred steps and needs no 2500-step decay to settle
    (the decay averages the Monte Carlo noise down): a one-parameter model took 3125 steps
    of 5000 before, 1875 now.
    """

    def __init__(self, n_steps: int, early_stop: bool):
        self.n_steps, self.early_stop = n_steps, early_stop
        self.decay_start = self.n_decay = n_steps / 2
        self.window = max(25, n_steps // 16)

    @property
    def end(self) -> int:
        """Number of steps run."""
        return int(np.ceil(self.decay_start + self.n_decay))

    def in_tail(self, step: int) -> bool:
        """Whether the iterate after ``step`` joins the Polyak average."""
        return step >= int(self.end - 0.4 * self.n_decay)

    def lr_scale(self, step: int) -> float:
        """Multiplier of the initial learning rate at ``step``."""
        if step < self.decay_start:
            return 1.0
        return 0.05 + 0.95 * 0.5 * (1 + np.cos(np.pi * (step - self.decay_start) / self.n_decay))

    def check(self, traces: np.ndarray, active: np.ndarray, step: int) -> None:
        """End the constant phase after ``step`` when no active fit's ELBO rises any more:
        the mean noisy ELBO of its last window exceeds that of the window before by less
        than two standard errors of the difference."""
        w, done = self.window, step + 1
        if not self.early_stop or done % w or done < 2 * w or done >= self.decay_start:
            return
        last, var_last = _mean_and_var(traces[active, done - w : done])
        prev, var_prev = _mean_and_var(traces[active, done - 2 * w : done - w])
        if last.size and np.all(last - prev < 2.0 * np.sqrt(var_last + var_prev)):
            self.decay_start = done
            self.n_decay = max(done, self.n_steps * _MIN_DECAY)


def _mean_and_var(x):
    """Row means of ``x`` over its finite entries, and their squared standard errors."""
    n = np.sum(np.isfinite(x), axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.nansum(x, axis=1) / n
        return mean, np.nansum((x - mean[:, None]) ** 2, axis=1) / n**2


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
    full-rank fits of 20 Poisson intercepts that had reached an ELBO of -213 wandered to
    ELBOs of -1e52 to -1e299. Such a step is skipped, as a non-finite one is. The reference
    is the median of the last complete window of :data:`COLLAPSE_WINDOW` steps, computed
    once a window (a median every step cost 0.1 ms, half a second a fit).
    """

    def __init__(self, n_fits: int):
        self.reference = np.full(n_fits, -np.inf)

    def __call__(self, logps: np.ndarray, traces: np.ndarray, idx, step: int) -> np.ndarray:
        if step >= COLLAPSE_WINDOW and step % COLLAPSE_WINDOW == 0:
            recent = traces[:, step - COLLAPSE_WINDOW : step]
            has = np.any(np.isfinite(recent), axis=1)
            self.reference[:] = -np.inf
            self.reference[has] = np.nanmedian(recent[has], axis=1)
        with np.errstate(invalid="ignore"):
            return np.mean(logps, axis=1) < self.reference[idx] - COLLAPSE_DROP


def _record_failures(bad, n_bad, errors, active, step, max_bad):
    """Count non-finite steps of the restarts ``bad``; drop those over the limit."""
    n_bad[bad] += 1
    for r in bad[n_bad[bad] > max_bad]:
        active[r] = False
        errors[r] = (
            f"ADVI met non-finite log densities or gradients in {n_bad[r]} of {step + 1} "
            "steps; the model may be badly scaled or the start point poor."
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
        Called as ``callback(done, total)`` after every step: steps done and the steps the
        run will take (it shrinks when the constant-rate phase stops early); e.g. the update
        of a :func:`~pymc_evidence.progress.progress_bar`.

    Returns
    -------
    AdviResult
        A fit fails (and the others go on) when more than ``max(10, 10%)`` of its steps
        meet a non-finite density or gradient, or its result is not finite.
    """
    starts = np.atleast_2d(np.asarray(starts, dtype=float))
    n_fits, d = starts.shape
    params = _init_params(starts, fullrank, init_scale)
    adam = _Adam(params.shape, learning_rate)
    traces = np.full((n_fits, n_steps), np.nan)
    schedule, max_bad = _Schedule(n_steps, early_stop), max(10, 0.1 * n_steps)
    tail_sum, n_tail = np.zeros_like(params), np.zeros(n_fits)
    n_bad, active, errors = np.zeros(n_fits, dtype=int), np.ones(n_fits, bool), [None] * n_fits
    collapsed = _Collapse(n_fits)
    step = 0
    while step < schedule.end:
        eps = rng.standard_normal((n_fits, n_mc, d))
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        logps, grads, ok = _evaluate(density, params, eps, idx, fullrank)
        ok &= ~collapsed(logps, traces, idx, step)
        if not ok.all():
            _record_failures(idx[~ok], n_bad, errors, active, step, max_bad)
            idx, logps, grads = idx[ok], logps[ok], grads[ok]
        rows = slice(None) if idx.size == n_fits else idx
        elbo, grad = _elbo_gradients(params[rows], eps[rows], logps, grads, d, fullrank)
        traces[rows, step] = elbo
        adam.ascend(params, grad, schedule.lr_scale(step), rows)
        if schedule.in_tail(step):
            tail_sum[rows] += params[rows]
            n_tail[rows] += 1
        schedule.check(traces, active, step)
        step += 1
        if callback is not None:
            callback(step, schedule.end)
    done = n_tail > 0
    params[done] = tail_sum[done] / n_tail[done, None]
    means, chols = unpack(params, d, fullrank)
    finite = np.isfinite(means).all(axis=1) & np.isfinite(chols).all(axis=(1, 2))
    for r in np.flatnonzero(active & ~finite):
        errors[r] = "ADVI produced non-finite parameters"
    return AdviResult(means, chols, traces[:, : schedule.end], errors, schedule.end)


# ------------------------------------------------------------------------------------------
# Fresh Monte Carlo evaluation
def _weight_stats(log_w: np.ndarray) -> dict:
    n = log_w.size
    n_nonfinite = int(np.sum(~np.isfinite(log_w)))
    log_w = np.where(np.isfinite(log_w), log_w, -np.inf)
    finite = log_w[np.isfinite(log_w)]
    if finite.size < 2:
        raise BaseFitError("the model density is not finite at draws from the base")
    w = np.exp(log_w - np.max(log_w))
    return {
        "elbo": float(np.mean(finite)),
        "elbo_se": float(np.std(finite, ddof=1) / np.sqrt(finite.size)),
        "log_is": float(logsumexp(log_w) - np.log(n)),
        "is_ess": float(w.sum() ** 2 / np.sum(w**2)),
        "n_nonfinite": n_nonfinite,
    }


def evaluate_bases(density: BatchedLogp, bases, n: int, rng: np.random.Generator) -> list:
    """Fresh Monte Carlo ELBO and importance-sampling ``log Z`` of several bases at once.

    ``n`` draws of each base (drawn in order from ``rng``) are evaluated by the model in one
    batched call.

    Returns
    -------
    list of dict or BaseFitError
        Per base: ``elbo``, ``elbo_se``, ``log_is`` (log-mean-exp of the importance
        weights, a consistent but downward-biased estimate of ``log Z``), ``is_ess`` (Kish
        effective sample size) and ``n_nonfinite`` (draws where the model density was not
        finite, counted as weight zero); or the error when fewer than two were finite.
    """
    draws = [base.sample(n, rng) for base in bases]
    if not draws:
        return []
    log_f = density(np.concatenate(draws))[0].reshape(len(draws), n)
    out = []
    for base, x, lf in zip(bases, draws, log_f, strict=True):
        try:
            out.append(_weight_stats(lf - base.logp(x)))
        except BaseFitError as err:
            out.append(err)
    return out
