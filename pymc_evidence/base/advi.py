"""Automatic differentiation variational inference (ADVI) on a :class:`ModelSpace`.

A small, self-contained implementation (Kucukelbir et al. 2017) that reuses the model's one
compiled ``logp_dlogp`` function for every step and every restart, instead of recompiling a
variational graph per fit. Reparameterization gradients with Adam, a decaying learning rate
and Polyak averaging of the last iterates; the result is evaluated by a fresh Monte Carlo
estimate of the ELBO and of the importance-sampling estimate of ``log Z``.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from .gaussian import GaussianBase
from .space import ModelSpace

__all__ = ["BaseFitError", "run_advi", "evaluate_base"]

_LOG_2PI = float(np.log(2.0 * np.pi))


class BaseFitError(RuntimeError):
    """ADVI did not produce a usable base density."""


class _Adam:
    def __init__(self, size, lr, b1=0.9, b2=0.999, eps=1e-8):
        self.m = np.zeros(size)
        self.v = np.zeros(size)
        self.lr, self.b1, self.b2, self.eps, self.t = lr, b1, b2, eps, 0

    def ascend(self, params, grad, lr_scale):
        self.t += 1
        self.m = self.b1 * self.m + (1 - self.b1) * grad
        self.v = self.b2 * self.v + (1 - self.b2) * grad**2
        m_hat = self.m / (1 - self.b1**self.t)
        v_hat = self.v / (1 - self.b2**self.t)
        return params + self.lr * lr_scale * m_hat / (np.sqrt(v_hat) + self.eps)


def _unpack(params, d, fullrank):
    mean = params[:d]
    log_diag = params[d : 2 * d]
    chol = np.diag(np.exp(log_diag))
    if fullrank:
        chol[np.tril_indices(d, -1)] = params[2 * d :]
    return mean, log_diag, chol


def _elbo_gradient(space, params, d, fullrank, n_mc, rng):
    mean, log_diag, chol = _unpack(params, d, fullrank)
    eps = rng.standard_normal((n_mc, d))
    xs = mean + eps @ chol.T
    logps, grads = np.empty(n_mc), np.empty((n_mc, d))
    for i, x in enumerate(xs):
        logps[i], grads[i] = space.logp_dlogp(x)
    if not (np.all(np.isfinite(logps)) and np.all(np.isfinite(grads))):
        return None, None
    cross = grads.T @ eps / n_mc
    grad = np.empty_like(params)
    grad[:d] = grads.mean(axis=0)
    grad[d : 2 * d] = np.diag(cross) * np.exp(log_diag) + 1.0
    if fullrank:
        grad[2 * d :] = cross[np.tril_indices(d, -1)]
    elbo = logps.mean() + np.sum(log_diag) + 0.5 * d * (1.0 + _LOG_2PI)
    return elbo, grad


def run_advi(
    space: ModelSpace,
    x0: np.ndarray,
    *,
    fullrank: bool = False,
    n_steps: int = 5000,
    learning_rate: float = 0.05,
    n_mc: int = 4,
    init_scale: float = 0.1,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fit a Gaussian by maximizing the ELBO from the start point ``x0``.

    Returns
    -------
    mean, chol : ndarray
        The fitted Gaussian (Polyak average of the last 20% of iterates).
    trace : ndarray
        Noisy ELBO at each step (NaN where the step was skipped).

    Raises
    ------
    BaseFitError
        When more than 10% of the steps meet a non-finite density or gradient, or the
        result is not finite.
    """
    d = space.ndim
    n_params = 2 * d + (d * (d - 1) // 2 if fullrank else 0)
    params = np.zeros(n_params)
    params[:d] = x0
    params[d : 2 * d] = np.log(init_scale)
    adam = _Adam(n_params, learning_rate)
    trace = np.full(n_steps, np.nan)
    tail_start = int(0.8 * n_steps)
    tail_sum, n_tail, n_bad = np.zeros(n_params), 0, 0
    for step in range(n_steps):
        elbo, grad = _elbo_gradient(space, params, d, fullrank, n_mc, rng)
        if elbo is None:
            n_bad += 1
            if n_bad > max(10, 0.1 * n_steps):
                raise BaseFitError(
                    f"ADVI met non-finite log densities or gradients in {n_bad} of {step + 1} "
                    "steps; the model may be badly scaled or the start point poor."
                )
            continue
        trace[step] = elbo
        frac = step / n_steps
        lr_scale = 1.0 if frac < 0.5 else 0.05 + 0.95 * 0.5 * (1 + np.cos(np.pi * (2 * frac - 1)))
        params = adam.ascend(params, grad, lr_scale)
        if step >= tail_start:
            tail_sum += params
            n_tail += 1
    params = tail_sum / max(n_tail, 1) if n_tail else params
    mean, _, chol = _unpack(params, d, fullrank)
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(chol))):
        raise BaseFitError("ADVI produced non-finite parameters")
    return mean, chol, trace


def evaluate_base(space: ModelSpace, base: GaussianBase, n: int, rng: np.random.Generator):
    """Fresh Monte Carlo ELBO and importance-sampling ``log Z`` estimate of a Gaussian base.

    Returns
    -------
    dict
        ``elbo``, ``elbo_se``, ``log_is`` (log-mean-exp of the importance weights, a
        consistent but downward-biased estimate of ``log Z``), ``is_ess`` (Kish effective
        sample size of the weights) and ``n_nonfinite`` (draws where the model density was
        not finite, counted as weight zero).
    """
    xs = base.sample(n, rng)
    log_w = space.logp_many(xs) - base.logp(xs)
    n_nonfinite = int(np.sum(~np.isfinite(log_w)))
    log_w = np.where(np.isfinite(log_w), log_w, -np.inf)
    finite = log_w[np.isfinite(log_w)]
    if finite.size < 2:
        raise BaseFitError("the model density is not finite at draws from the base")
    log_is = float(logsumexp(log_w) - np.log(n))
    w = np.exp(log_w - np.max(log_w))
    return {
        "elbo": float(np.mean(finite)),
        "elbo_se": float(np.std(finite, ddof=1) / np.sqrt(finite.size)),
        "log_is": log_is,
        "is_ess": float(w.sum() ** 2 / np.sum(w**2)),
        "n_nonfinite": n_nonfinite,
    }
