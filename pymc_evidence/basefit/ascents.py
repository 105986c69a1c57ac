"""L-BFGS ascents of ``log f`` from many starts at once, each step one batched density call.

The mode search climbs from dozens of starts (the initial point, the base's means, prior
draws). scipy's L-BFGS-B climbs one start at a time with one call of the density per
evaluation: on the 3-component ``NormalMixture`` the ascents of a call made thousands of
one-point calls plus scipy's own work per evaluation, a sizeable share of a warm call
(measured in :doc:`/performance`, "What a user meets: the first call on a new model"). Here
every start takes its L-BFGS step together: the trial points of a line search
are one call of the batched density (in chunks of :data:`CHUNK` rows, the one shape ADVI
has compiled already), and a start leaves the batch once it has converged. This is
written here because scipy has no batched L-BFGS, and jax's would need the density as a
jax function (it is a PyTensor one on the default backend).

The iteration is textbook L-BFGS (Nocedal & Wright, algorithm 7.4, memory
:data:`MEMORY`) with a backtracking Armijo line search that also lengthens a step too short
for Wolfe's curvature condition; a pair whose curvature ``s . y`` is not positive is not
stored; a step that fails with pairs stored forgets them and tries the gradient. A start
stops as scipy's L-BFGS-B does: largest gradient component at most :data:`GTOL`, relative
decrease of ``-log f`` at most :data:`FTOL`, no step along the gradient that decreases it,
or ``maxiter`` iterations. A non-finite value or gradient is a wall (the step is
shortened). Where an ascent stopped on a slope is for the caller to judge
(:func:`~pymc_evidence.basefit.laplace.ascend_into` takes no end for a mode whose Newton step
is long).
"""

from __future__ import annotations

import numpy as np

from ..runtime.jax_rows import JAX_MIN_ROWS

__all__ = ["CHUNK", "FTOL", "GTOL", "MEMORY", "ascend_many"]

#: Curvature pairs kept per start.
MEMORY = 10
#: Stop when the largest component of the gradient is at most this (scipy's ``pgtol``) ...
GTOL = 1e-5
#: ... or ``-log f`` fell by at most this relative amount in a step (scipy's ``factr`` of
#: 1e7 times the machine epsilon).
FTOL = 1e7 * np.finfo(float).eps
#: Sufficient decrease of the Armijo rule, and the most shortenings of one step.
ARMIJO = 1e-4
MAX_SHORTENINGS = 40
#: A step is lengthened (by ``GROWTH``, at most ``MAX_LENGTHENINGS`` times) while the slope
#: at its end is still below ``WOLFE`` times the slope at its start.
WOLFE = 0.9
GROWTH = 4.0
MAX_LENGTHENINGS = 10
#: Most rows of one density call: a shape ADVI has compiled anyway.
CHUNK = JAX_MIN_ROWS


def _negative(density, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(-log f, -grad)`` at the rows of ``xs`` in chunks of :data:`CHUNK`; a row with a
    non-finite value or gradient gets ``(inf, 0)``."""
    values, grads = [], []
    for i in range(0, len(xs), CHUNK):
        logp, grad = density(xs[i : i + CHUNK])
        values.append(np.asarray(logp, dtype=float).reshape(-1))
        grads.append(np.asarray(grad, dtype=float).reshape(-1, xs.shape[1]))
    logp = np.concatenate(values) if values else np.zeros(0)
    grad = np.concatenate(grads) if grads else np.zeros((0, xs.shape[1]))
    bad = ~np.isfinite(logp) | ~np.all(np.isfinite(grad), axis=1)
    return np.where(bad, np.inf, -logp), np.where(bad[:, None], 0.0, -grad)


def _direction(g, s_mem, y_mem, rho):
    """The L-BFGS direction ``-H g`` of each row (two-loop recursion over the stored pairs,
    newest last; an empty slot has ``rho = 0`` and adds nothing)."""
    q = g.copy()
    m = rho.shape[1]
    alpha = np.zeros_like(rho)
    for j in reversed(range(m)):
        alpha[:, j] = rho[:, j] * np.sum(s_mem[:, j] * q, axis=1)
        q -= alpha[:, j, None] * y_mem[:, j]
    yy = np.sum(y_mem[:, -1] ** 2, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        gamma = np.where(rho[:, -1] > 0, 1.0 / (rho[:, -1] * yy), 1.0)
    r = gamma[:, None] * q
    for j in range(m):
        beta = rho[:, j] * np.sum(y_mem[:, j] * r, axis=1)
        r += s_mem[:, j] * (alpha[:, j] - beta)[:, None]
    return -r


def _line_search(density, x, f, p, slope, step):
    """Backtracking from ``step`` along ``p`` until the Armijo rule holds, all rows together.

    Returns the new points, values, gradients and which rows found a step."""
    x_new, f_new = x.copy(), f.copy()
    g_new = np.zeros_like(x)
    found = np.zeros(len(x), dtype=bool)
    pending, step = np.arange(len(x)), step.copy()
    for _ in range(MAX_SHORTENINGS):
        trial = x[pending] + step[pending, None] * p[pending]
        f_t, g_t = _negative(density, trial)
        t = step[pending]
        ok = f_t <= f[pending] + ARMIJO * t * slope[pending]
        done = pending[ok]
        x_new[done], f_new[done], g_new[done], found[done] = trial[ok], f_t[ok], g_t[ok], True
        pending, f_t, t = pending[~ok], f_t[~ok], t[~ok]
        if pending.size == 0:
            break
        # the minimum of the quadratic through f, the slope and f_t, kept in [0.1 t, 0.5 t]
        curve = f_t - f[pending] - slope[pending] * t
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            quadratic = -slope[pending] * t**2 / (2.0 * curve)
        quadratic = np.where(np.isfinite(quadratic), quadratic, 0.1 * t)
        step[pending] = np.clip(quadratic, 0.1 * t, 0.5 * t)
    _lengthen(density, (x, f, p, slope), (x_new, f_new, g_new), step, found)
    return x_new, f_new, g_new, found


def _lengthen(density, start, end, step, found):
    """Steps that the Armijo rule took but that end still descending nearly as steeply as
    they began (the curvature condition of Wolfe's rules fails: the step was far too short,
    as after a first step of ``1 / |g|``) are lengthened :data:`GROWTH`-fold while that
    lowers ``-log f`` further and the Armijo rule holds (``end`` updated in place)."""
    x, f, p, slope = start
    x_new, f_new, g_new = end
    grow = found & (np.sum(p * g_new, axis=1) < WOLFE * slope)
    for _ in range(MAX_LENGTHENINGS):
        rows = np.flatnonzero(grow)
        if rows.size == 0:
            return
        t = GROWTH * step[rows]
        trial = x[rows] + t[:, None] * p[rows]
        f_t, g_t = _negative(density, trial)
        ok = (f_t <= f[rows] + ARMIJO * t * slope[rows]) & (f_t < f_new[rows])
        done = rows[ok]
        x_new[done], f_new[done], g_new[done], step[done] = trial[ok], f_t[ok], g_t[ok], t[ok]
        grow[:] = False
        grow[done] = np.sum(p[done] * g_t[ok], axis=1) < WOLFE * slope[done]


def _remember(memory, rows, s, y):
    """Store the pairs ``(s, y)`` of ``rows`` whose curvature is positive, dropping the
    oldest (``memory``: the arrays of stored ``s``, ``y`` and ``1 / (s . y)``, updated in
    place)."""
    s_mem, y_mem, rho = memory
    sy = np.sum(s * y, axis=1)
    keep = sy > np.finfo(float).eps * np.sum(y * y, axis=1)
    rows, s, y, sy = rows[keep], s[keep], y[keep], sy[keep]
    s_mem[rows] = np.concatenate([s_mem[rows, 1:], s[:, None]], axis=1)
    y_mem[rows] = np.concatenate([y_mem[rows, 1:], y[:, None]], axis=1)
    rho[rows] = np.concatenate([rho[rows, 1:], (1.0 / sy)[:, None]], axis=1)


def ascend_many(density, starts, maxiter: int = 500, *, callback=None):
    """L-BFGS ascents of ``log f`` from every row of ``starts`` together.

    Parameters
    ----------
    density : callable
        ``xs (n, d) -> (log f (n,), grad log f (n, d))``.
    starts : ndarray, shape (k, d)
    maxiter : int
        Most iterations of each ascent.
    callback : callable, optional
        ``callback(done, k)`` after each iteration, ``done`` the ascents that have stopped.

    Returns
    -------
    x : ndarray, shape (k, d)
        Where each ascent stopped.
    log_f : ndarray, shape (k,)
        ``log f`` there; ``-inf`` for a start where ``log f`` or its gradient is not finite
        (not climbed).

    Examples
    --------
    >>> import numpy as np
    >>> def density(xs):   # two bumps, at -2 and +2
    ...     a, b = -0.5 * (xs + 2.0) ** 2, -0.5 * (xs - 2.0) ** 2
    ...     top = np.maximum(a, b)
    ...     logp = top + np.log(np.exp(a - top) + np.exp(b - top))
    ...     wa = np.exp(a - logp)
    ...     return logp[:, 0], -(xs + 2.0) * wa - (xs - 2.0) * (1 - wa)
    >>> x, log_f = ascend_many(density, np.array([[-5.0], [0.5], [4.0]]))
    >>> np.round(x[:, 0], 3).tolist()   # the modes solve x = 2 tanh(2 x): +-1.9987
    [-1.999, 1.999, 1.999]
    """
    x = np.array(starts, dtype=float, ndmin=2)
    k, d = x.shape
    f, g = _negative(density, x)
    active = np.isfinite(f)
    climbed = active.copy()
    memory = (np.zeros((k, MEMORY, d)), np.zeros((k, MEMORY, d)), np.zeros((k, MEMORY)))
    fresh = np.ones(k, dtype=bool)  # no pairs stored: the first step is scaled to 1 / |g|
    for _ in range(int(maxiter)):
        rows = np.flatnonzero(active)
        if rows.size == 0:
            break
        p, slope = _descent(g[rows], [m[rows] for m in memory])
        step = np.where(fresh[rows], np.minimum(1.0, 1.0 / np.sqrt(-slope)), 1.0)
        x_new, f_new, g_new, found = _line_search(density, x[rows], f[rows], p, slope, step)
        _remember(memory, rows[found], (x_new - x[rows])[found], (g_new - g[rows])[found])
        scale = np.maximum(np.maximum(np.abs(f[rows]), np.abs(f_new)), 1.0)
        small = found & (f[rows] - f_new <= FTOL * scale)
        moved = rows[found]
        x[moved], f[moved], g[moved] = x_new[found], f_new[found], g_new[found]
        small |= np.max(np.abs(g[rows]), axis=1) <= GTOL
        # a failed step with pairs stored: forget them and try the gradient; without, stop
        retry = rows[~found & ~fresh[rows]]
        for m in memory:
            m[retry] = 0.0
        active[rows[small | (~found & fresh[rows])]] = False
        fresh[rows] = ~found
        if callback is not None:
            callback(int(k - active.sum()), k)
    return x, np.where(climbed, -f, -np.inf)


def _descent(g, memory):
    """The L-BFGS direction of each row and its slope ``p . g``; the gradient's where the
    stored pairs give no descent direction."""
    p = _direction(g, *memory)
    slope = np.sum(p * g, axis=1)
    uphill = ~(slope < 0)
    p[uphill] = -g[uphill]
    slope[uphill] = -np.sum(g[uphill] ** 2, axis=1)
    return p, np.minimum(slope, -np.finfo(float).tiny)
