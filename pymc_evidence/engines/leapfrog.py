"""The leapfrog steps of an HMC trajectory for every particle: numpy, or one fused jax call.

An HMC step of the particle engines (:func:`~pymc_evidence.engines.hmc_step`) runs
``n_leapfrog`` leapfrog steps, each one batched evaluation of ``log f``, ``log q`` and their
gradients. In numpy, each step is a call of the compiled density, a call of the base's closed
form and a few array operations, and on small models their fixed costs are most of the time
(measured in :doc:`/performance`, "What a user meets: the first call on a new model"). Where
the model's density runs on JAX
(:class:`~pymc_evidence.runtime.jax_rows.JaxRows`) and the base has a jax form of its own
(``jax_logp_grad``: Gaussian and mixture bases), :func:`leapfrogs` runs the whole trajectory
as one jitted ``jax.lax.fori_loop``: one call, no Python between the steps, and the GIL free
for the other runs' threads. This is written here, not taken from blackjax, because every
particle has its own temperature ``beta_i`` on the geometric path and its own step size, and
the density's two parts and their gradients must come back separately.

The jitted trajectory is compiled once per density (its row count padded to a power of two
as :class:`~pymc_evidence.runtime.jax_rows.JaxRows` pads; the number of steps is an argument,
not a constant), and only for at least :data:`FUSED_MIN_ROWS` particles: the 64 trial
trajectories of a step-size search stay on the numpy path, which compiles nothing new.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..runtime.jax_rows import pad_rows, padded_size
from .counts import Counts

__all__ = [
    "FUSED_MIN_ROWS",
    "DenseStep",
    "MIXTURE_FORM_MAX_DIM",
    "MIXTURE_MIN_COMPONENTS",
    "PILOT_ROWS",
    "SUBSET_PAD_MAX",
    "fused_trajectory",
    "drift",
    "kick",
    "leapfrogs",
    "path_grad",
    "subset_rows",
]

#: Fewest particles whose trajectories run fused (fewer run on the numpy path). SMC's
#: pilot run has 250 particles: fused from 128 rows, the 3-component mixture's warm call
#: was faster than from 256 (the pilot's stages run alone, one after another, so their
#: per-step cost is all on the critical path); from 64 rows (the step-size search's trial
#: trajectories too) no faster, and its first call slower.
FUSED_MIN_ROWS = 128

#: Up to this dimension a trajectory evaluates every base in the mixture form, padded to at
#: least :data:`MIXTURE_MIN_COMPONENTS` components (a Gaussian base as a mixture of one; the
#: count a power of two), so that a model's bases of different kinds and sizes share one
#: compilation: a warm call whose base changed kind or size compiled its trajectories again
#: (a large share of a warm call on the 3-component mixture, whose bases' component counts
#: vary by seed). The padding costs nothing at run time: the mixture's loop runs over the real
#: components only (:func:`~pymc_evidence.base.mixture.mixture_logp_grad_jax`), so a mixture
#: base of any dimension is padded the same way. Above this dimension a Gaussian base keeps
#: its own form (a mean-field one is elementwise, where the mixture form multiplies ``d x d``
#: matrices).
MIXTURE_FORM_MAX_DIM = 16
MIXTURE_MIN_COMPONENTS = 8

#: A subset of a set of particles (``rows`` of :func:`leapfrogs`) runs padded to the set's
#: rows when that at most doubles its own padded rows, so that the copies an SMC run moves
#: apart at its end share the compilations of its 250 and 1000 particles (256 and 1024
#: rows) whatever their number. Padding more would cost more than a compilation: padding
#: the 20 000-row logistic regression's few copies to 1024 rows made its warm call several
#: times slower (measured in :doc:`/performance`, "What a user meets: the first call on a
#: new model").
SUBSET_PAD_MAX = 2
#: ... and to the rows of SMC's pilot run (250 particles of the default 1000, padded to 256)
#: on the same terms: 65 to 127 copies would otherwise run on the numpy path, whose density
#: calls compile a 128-row shape nothing else uses (a large share of a warm call of the
#: 3-component mixture; measured in :doc:`/performance`, "What a user meets: the first call
#: on a new model").
PILOT_ROWS = 256


@dataclass(frozen=True)
class DenseStep:
    """A leapfrog step under a dense inverse mass ``chol @ chol.T``: step sizes ``eps``
    (scalar or ``(n, 1)``) and the lower-triangular ``chol`` (``(d, d)``).

    In the whitened coordinates ``z = chol^-1 x`` it is the plain step: a drift moves
    ``x`` by ``eps * chol @ p``, a kick moves ``p`` by ``eps * chol.T @ grad`` (rows:
    ``p @ chol.T`` and ``grad @ chol``). A diagonal inverse mass is an array ``eps * s``
    instead, applied elementwise (:func:`drift`, :func:`kick`).

    >>> step = DenseStep(0.5, np.array([[2.0, 0.0], [1.0, 1.0]]))
    >>> drift(step, np.array([[1.0, 0.0]])).tolist(), kick(step, np.array([[0.0, 1.0]])).tolist()
    ([[1.0, 0.5]], [[0.5, 0.5]])
    """

    eps: np.ndarray | float
    chol: np.ndarray


def drift(step, p: np.ndarray) -> np.ndarray:
    """How far a leapfrog step moves the positions, given momenta ``p`` (``(n, d)``)."""
    return step.eps * (p @ step.chol.T) if isinstance(step, DenseStep) else step * p


def kick(step, grad: np.ndarray, coef: float = 1.0) -> np.ndarray:
    """How far ``coef`` (1, or 0.5 for a half step) of a leapfrog step moves the momenta,
    given the gradients ``grad``."""
    if isinstance(step, DenseStep):
        return (coef * step.eps) * (grad @ step.chol)
    return (coef * step) * grad


def path_grad(grad_f, grad_q, beta):
    """Gradient of the geometric path, ``beta`` scalar or per particle."""
    beta = np.asarray(beta, dtype=float)
    if beta.ndim == 1:
        beta = beta[:, None]
    return beta * grad_f + (1.0 - beta) * grad_q


def leapfrogs(density, x, p, beta, eps_s, n_leapfrog: int, rows: int | None = None):
    """``n_leapfrog`` leapfrog steps from ``(x, p)``, ``p`` already moved by the first half step.

    Parameters
    ----------
    density : BatchedDensity
        Or any callable returning ``(log_f, log_q, grad_f, grad_q)`` at the rows of a matrix.
    x, p : ndarray, shape (n, d)
    beta : float or ndarray, shape (n,)
    eps_s : ndarray, shape (d,) or (n, d), or DenseStep
        Step size times the per-coordinate scale, or a step under a dense inverse mass.
    n_leapfrog : int
    rows : int, optional
        The size of the set these particles were taken from (a run's copies to move apart
        are a subset of its particles): a fused trajectory is padded to that many rows
        where this at most doubles its rows (:data:`SUBSET_PAD_MAX`), so that a subset
        reuses the compilation made for the whole set. The numbers do not depend on it
        beyond floating-point rounding.

    Returns
    -------
    x, p : ndarray, shape (n, d)
        The end point, ``p`` after the last half step.
    values : tuple
        ``(log_f, log_q, grad_f, grad_q)`` at the end point.
    counts : Counts
        The calls (``n_leapfrog``), the points evaluated (``n * n_leapfrog``) and the
        non-finite ones among them.
    """
    fused = getattr(density, "fused_trajectory", None)
    n = x.shape[0]
    rows = subset_rows(n, rows)
    run = fused(rows) if fused is not None else None
    if run is not None:
        return run(x, p, beta, eps_s, n_leapfrog, rows)
    met = Counts()
    for i in range(int(n_leapfrog)):
        x = x + drift(eps_s, p)
        values = density(x)
        met = met + Counts.of_values(values[0], values[1])
        grad = path_grad(values[2], values[3], beta)
        p = p + kick(eps_s, grad, 0.5 if i == n_leapfrog - 1 else 1.0)
    return x, p, values, met


def subset_rows(n: int, rows: int | None) -> int:
    """The rows that ``n`` particles taken from a set of ``rows`` run padded to: the
    smallest of :data:`PILOT_ROWS` and ``rows`` that holds them within
    :data:`SUBSET_PAD_MAX` times their own padded rows, else ``n``.

    Examples
    --------
    >>> subset_rows(86, 1000), subset_rows(300, 1000), subset_rows(40, 1000)
    (256, 1000, 40)
    >>> subset_rows(86, None)   # not a subset
    86
    """
    if rows is None:
        return n
    limit = SUBSET_PAD_MAX * padded_size(n)
    fits = [
        size for size in sorted({PILOT_ROWS, int(rows)}) if n <= size and padded_size(size) <= limit
    ]
    return fits[0] if fits else n


def fused_trajectory(rows, base):
    """A function running every leapfrog step of a trajectory in one jitted jax call.

    Parameters
    ----------
    rows : JaxRows
        The model's ``(log f, grad log f)`` on JAX.
    base : BaseDensity
        A base with ``jax_logp_grad()`` (Gaussian and mixture bases).

    Returns
    -------
    callable
        ``run(x, p, beta, eps_s, n_leapfrog, at_least=None) -> (x, p, (log_f, log_q,
        grad_f, grad_q), counts)``, the results of the numpy path of :func:`leapfrogs`,
        padded to at least ``at_least`` rows.

    Notes
    -----
    The jitted function is kept on ``rows`` (which lives as long as the model's compiled
    density), one per kind of base: the base's parameters are its arguments, so the next
    call's newly fitted base of the same kind and shape reuses its compilation.
    """
    base_fn, base_params = _jax_base(base)

    def jitted(dense: bool):
        if (base_fn, dense) not in rows.fused:
            rows.fused[base_fn, dense] = _jitted_trajectory(rows.batched, base_fn, dense)
        return rows.fused[base_fn, dense]

    def run(x, p, beta, eps_s, n_leapfrog, at_least=None):
        n, d = x.shape
        size = padded_size(max(n, at_least or 0))
        beta = np.broadcast_to(np.asarray(beta, dtype=np.float64), (n,))
        pad = lambda a: pad_rows(np.ascontiguousarray(a), size)  # noqa: E731
        dense = isinstance(eps_s, DenseStep)
        if dense:
            eps = np.broadcast_to(np.asarray(eps_s.eps, dtype=np.float64), (n, 1))
            step = (pad(eps), np.asarray(eps_s.chol, dtype=np.float64))
        else:
            step = pad(np.broadcast_to(np.asarray(eps_s, dtype=np.float64), (n, d)))
        args = [pad(x), pad(p), pad(beta), step]
        out = jitted(dense)(*args, int(n_leapfrog), n, base_params, *rows.shared_values())
        x, p, *values = (np.asarray(o, dtype=np.float64)[:n] for o in out[:6])
        steps = int(n_leapfrog)
        met = Counts(n_calls=steps, n_points=n * steps, n_nonfinite=int(out[6]))
        return x, p, tuple(values), met

    return run


def _jax_base(base):
    """The base's jax ``(function, parameters)`` for a trajectory: a mixture padded to
    :data:`MIXTURE_MIN_COMPONENTS`, and so a Gaussian up to :data:`MIXTURE_FORM_MAX_DIM`
    dimensions (as a mixture of one); a larger Gaussian in its own form."""
    from ..base.gaussian import GaussianBase
    from ..base.mixture import MixtureBase

    if isinstance(base, GaussianBase) and base.ndim <= MIXTURE_FORM_MAX_DIM:
        base = MixtureBase.from_components([base], np.zeros(1), log_zeta=base.log_zeta)
    if isinstance(base, MixtureBase):
        return base.jax_logp_grad(min_components=MIXTURE_MIN_COMPONENTS)
    return base.jax_logp_grad()


def _jitted_trajectory(model_fn, base_fn, dense: bool = False):
    """``jax.jit`` of the trajectory of :func:`fused_trajectory`, given the model's batched
    ``(log f, grad)`` and the base's jax ``(log q, grad)`` of ``(x, parameters)``; ``dense``:
    its step is ``(eps (n, 1), chol)`` (:class:`DenseStep`), else ``eps * s`` (``(n, d)``)."""
    import jax
    import jax.numpy as jnp

    def trajectory(x, p, beta, step, n_leapfrog, n_real, base_params, *shared):
        b = beta[:, None]
        real = jnp.arange(x.shape[0]) < n_real
        if dense:
            eps, chol = step
            move, push = (lambda v: eps * (v @ chol.T)), (lambda c, v: (c * eps) * (v @ chol))
        else:
            move, push = (lambda v: step * v), (lambda c, v: (c * step) * v)

        def body(i, carry):
            x, p, _, _, _, _, bad = carry
            x = x + move(p)
            log_f, grad_f = model_fn(x, *shared)
            log_q, grad_q = base_fn(x, base_params)
            coef = jnp.where(i == n_leapfrog - 1, 0.5, 1.0)
            p = p + push(coef, b * grad_f + (1.0 - b) * grad_q)
            finite = jnp.isfinite(log_f) & jnp.isfinite(log_q)
            bad = bad + jnp.sum(real & ~finite, dtype=jnp.int32)
            return x, p, log_f, log_q, grad_f, grad_q, bad

        zero = jnp.zeros(x.shape[0])
        start = (x, p, zero, zero, jnp.zeros_like(x), jnp.zeros_like(x), jnp.int32(0))
        return jax.lax.fori_loop(0, n_leapfrog, body, start)

    return jax.jit(trajectory)
