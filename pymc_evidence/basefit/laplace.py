"""Modes of the posterior from many dispersed starts, each with its Laplace approximation.

Tempering paths and ADVI both see the posterior through a smooth lens: a narrow mode that
holds most of the evidence (a "spike", a phase transition of the tempered path) is invisible
to a path that starts from a broad base, and to an ADVI fit that starts broad. A
quasi-Newton ascent of ``log f`` from many starting points finds every mode whose basin a
start falls into, however narrow; the Hessian there gives a Gaussian (Laplace)
approximation of the mode and of its mass:

    log m_k = log f(x_k) + d/2 log(2 pi) - 1/2 log det(-H_k).

The modes serve twice: as components of a mixture base (the base then covers every mode
found, so the path never has to find one) and as a check of an estimate (a mode whose
mass alone exceeds the estimated evidence was missed by the method).
"""

from __future__ import annotations

import numpy as np
from scipy import optimize

from ..base.gaussian import GaussianBase
from ..base.stats import FitStats
from ..runtime.batched_logp import batched_logp
from ..runtime.space import ModelSpace
from .ascents import ascend_many

__all__ = ["Mode", "ascend", "ascend_into", "find_modes"]

#: Two ascents ending within this Mahalanobis distance (either mode's scale) are one mode.
_SAME_MODE = 3.0
#: An ascent's end whose Newton step is longer than this (in the Laplace Gaussian's scale)
#: is not taken for a mode.
_NEWTON_MAX = 1.0


class Mode(GaussianBase):
    """A Laplace approximation at a local maximum of ``log f``; ``log_zeta`` is its log mass
    ``log f(x) + d/2 log 2 pi + log |chol|`` and ``stats.log_f`` the density there."""


def _hessian(density, x: np.ndarray, step: float = 1e-5) -> tuple[np.ndarray, np.ndarray]:
    """Symmetrised central finite differences of the analytic gradient, and the gradient at
    ``x`` (the mean of the shifted ones, exact to the step squared): one batched call."""
    d = x.size
    steps = step * np.maximum(1.0, np.abs(x))
    shifts = np.diag(steps)
    grads = density(np.concatenate([x + shifts, x - shifts]))[1]
    h = (grads[:d] - grads[d:]) / (2 * steps[:, None])
    return 0.5 * (h + h.T), 0.5 * np.mean(grads[:d] + grads[d:], axis=0)


def ascend(logp_dlogp, x0: np.ndarray, maxiter: int):
    """``(x, log f(x))`` at the end of an L-BFGS ascent of ``logp_dlogp`` (``x -> (log f,
    grad)`` at one vector) from ``x0``; a non-finite value or gradient counts as a wall.
    For a one-point function (:mod:`~.component_starts`); many starts of a batched density
    climb together in :func:`~.ascents.ascend_many`."""

    def negative(x):
        logp, grad = logp_dlogp(x)
        if not np.isfinite(logp) or not np.all(np.isfinite(grad)):
            return np.inf, np.zeros_like(x)
        return -logp, -grad

    res = optimize.minimize(negative, x0, jac=True, method="L-BFGS-B", options={"maxiter": maxiter})
    return res.x, -float(res.fun)


def _laplace(space: ModelSpace, density, x: np.ndarray, log_f: float) -> Mode | None:
    """The Laplace approximation at ``x``, or None where ``-H`` is not positive definite or
    ``x`` is no mode: the Newton step to the stationary point is longer than
    :data:`_NEWTON_MAX` in the Gaussian's own scale (an ascent that stopped on a slope, e.g.
    where the density is too flat, in float64, to take another step)."""
    hessian, grad = _hessian(density, x)
    try:
        chol_prec = np.linalg.cholesky(-hessian)
        chol = np.linalg.inv(chol_prec).T  # cov = inv(P) = inv(L_P)^T inv(L_P)
        chol = np.linalg.cholesky(chol @ chol.T)  # fails when P is nearly singular
    except np.linalg.LinAlgError:
        return None
    newton = np.linalg.solve(chol_prec, grad)  # |L_P^-1 g|: the step's Mahalanobis length
    if not np.sqrt(newton @ newton) <= _NEWTON_MAX:
        return None
    d = x.size
    log_mass = float(log_f + 0.5 * d * np.log(2 * np.pi) + np.sum(np.log(np.diag(chol))))
    if not np.isfinite(log_mass):
        return None
    return Mode(
        x,
        chol,
        log_zeta=log_mass,
        kind="laplace",
        names=space.names,
        sizes=space.sizes,
        stats=FitStats(log_f=float(log_f)),
    )


def _match(mode: Mode, kept: list[Mode]) -> int:
    """The index of the mode of ``kept`` that ``mode`` is (-1 when it is new)."""
    for k, other in enumerate(kept):
        for a, b in ((mode, other), (other, mode)):
            z = np.linalg.solve(a.chol, b.mean - a.mean)
            if np.sqrt(z @ z) < _SAME_MODE:
                return k
    return -1


def ascend_into(space, density, starts, kept: list[Mode], *, maxiter=500, callback=None):
    """Ascents from ``starts`` (all together, :func:`~.ascents.ascend_many`); new modes are
    appended to ``kept`` (in place, unsorted), in the order of the starts.

    Returns the index in ``kept`` of the mode each start reached (-1: no finite ascent or no
    positive-definite ``-H``): how often each basin was hit, which says how much of the
    starts' distribution lies in basins no start has reached yet (see
    :func:`~pymc_evidence.basefit.mode_search.unseen_share`).
    """
    starts = np.asarray(starts, dtype=float).reshape(-1, space.ndim)
    ends, log_fs = ascend_many(density, starts, maxiter, callback=callback)
    hits = np.full(len(starts), -1)
    for i, (x, log_f) in enumerate(zip(ends, log_fs, strict=True)):
        mode = _laplace(space, density, x, float(log_f)) if np.isfinite(log_f) else None
        if mode is None:
            continue
        hits[i] = _match(mode, kept)
        if hits[i] < 0:
            kept.append(mode)
            hits[i] = len(kept) - 1
    if callback is not None:  # a bar that ends full
        callback(len(starts), len(starts))
    return hits


def find_modes(
    space: ModelSpace, starts: np.ndarray, *, maxiter: int = 500, density=None, callback=None
) -> list[Mode]:
    """Distinct local maxima of ``log f`` reached from ``starts``, largest mass first.

    Parameters
    ----------
    space : ModelSpace
        The model's raveled unconstrained space.
    starts : ndarray, shape (k, d)
        Starting points, e.g. prior draws and base draws.
    maxiter : int
        L-BFGS iterations per start.
    density : callable, optional
        ``xs (n, d) -> (log f (n,), grad (n, d))``; default the model's cached
        :func:`~pymc_evidence.runtime.batched_logp.batched_logp` (the function ADVI compiled,
        so mode finding compiles nothing new).
    callback : callable, optional
        ``callback(done, total)`` after each step of the ascents, ``done`` those that
        have stopped (a progress bar).

    Returns
    -------
    list of Mode
        One Laplace approximation per distinct mode with a positive-definite ``-H``.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from pymc_evidence.runtime import model_space
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu", 0.0, 1.0)
    ...     _ = pm.Normal("y", mu, 1.0, observed=np.array([1.0]))
    >>> modes = find_modes(model_space(model), np.array([[-3.0], [2.0]]))
    >>> len(modes), round(float(modes[0].mean[0]), 3)   # one mode, at y / 2
    (1, 0.5)
    >>> round(float(modes[0].log_zeta), 4)   # exact: log N(1; 0, 2) = -1.5155
    -1.5155
    """
    density = batched_logp(space) if density is None else density
    kept: list[Mode] = []
    starts = np.atleast_2d(np.asarray(starts, dtype=float))
    ascend_into(space, density, starts, kept, maxiter=maxiter, callback=callback)
    return sorted(kept, key=lambda m: -m.log_zeta)
