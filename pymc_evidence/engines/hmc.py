"""Metropolis kernels for a batch of particles on the geometric path (pure numpy).

Each particle ``i`` targets ``log pi_beta(x) = beta_i * log f(x) + (1 - beta_i) * log q(x)``
with its own (or a shared) ``beta``. The kernels are reversible with respect to that target
(full momentum refresh + Metropolis correction for HMC; symmetric proposal for RWM), so the
same kernel sequence run backwards is the time reversal that reverse AIS needs.

Non-finite rule: a proposal whose path log density or energy is not finite (``nan``,
``-inf``) is rejected; the particle stays where it was. Rejections of this kind are counted
in :attr:`Info.diverging`, and every step returns what it met as :attr:`Info.counts`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .counts import Counts
from .leapfrog import DenseStep, kick, leapfrogs, path_grad

__all__ = ["Info", "State", "hmc_step", "init_state", "rwm_step"]


@dataclass(frozen=True)
class State:
    """What the next step needs: positions and cached densities and gradients.

    Attributes
    ----------
    x : ndarray, shape (n, d)
    log_f, log_q : ndarray, shape (n,)
    grad_f, grad_q : ndarray, shape (n, d)
    """

    x: np.ndarray
    log_f: np.ndarray
    log_q: np.ndarray
    grad_f: np.ndarray
    grad_q: np.ndarray

    def log_path(self, beta) -> np.ndarray:
        """``beta * log f + (1 - beta) * log q`` per particle."""
        return beta * self.log_f + (1.0 - beta) * self.log_q

    def grad_path(self, beta) -> np.ndarray:
        """Gradient of :meth:`log_path`, shape (n, d)."""
        return path_grad(self.grad_f, self.grad_q, beta)


@dataclass(frozen=True)
class Info:
    """Diagnostics of one step.

    Attributes
    ----------
    acceptance : ndarray, shape (n,)
        Metropolis acceptance probability ``min(1, exp(-dH))`` per particle.
    accepted : ndarray of bool, shape (n,)
    energy_change : ndarray, shape (n,)
        ``H(proposal) - H(current)`` (``inf`` when the proposal is non-finite).
    diverging : ndarray of bool, shape (n,)
        Trajectories whose end point's log density or energy was not finite, or whose
        energy error exceeded :data:`DIVERGENCE_ENERGY` (as PyMC's NUTS counts them).
    counts : Counts
        The points the step evaluated (every leapfrog step's, or the RWM proposals) and
        their non-finite ones; for HMC also its trajectories and the diverging ones.
    """

    acceptance: np.ndarray
    accepted: np.ndarray
    energy_change: np.ndarray
    diverging: np.ndarray
    counts: Counts = Counts()


def init_state(x: np.ndarray, density) -> State:
    """Evaluate ``density`` (a :class:`~pymc_evidence.engines.BatchedDensity`) at ``x``."""
    x = np.atleast_2d(np.asarray(x, dtype=float)).copy()
    log_f, log_q, grad_f, grad_q = density(x)
    return State(x, log_f, log_q, grad_f, grad_q)


def _column(value, n):
    """Scalar or per-particle array as shape (n, 1) (or scalar)."""
    value = np.asarray(value, dtype=float)
    if value.ndim == 0:
        return value
    if value.shape != (n,):
        raise ValueError(f"expected a scalar or an array of shape ({n},), got {value.shape}")
    return value[:, None]


#: An energy error above this (PyMC's NUTS threshold) marks a diverging trajectory.
DIVERGENCE_ENERGY = 1000.0


def _metropolis(current: State, proposal: State, log_alpha, rng, counts) -> tuple[State, Info]:
    """Accept ``proposal`` row-wise with probability ``min(1, exp(log_alpha))``; ``counts``:
    the points evaluated on the way (``trajectories``: the step is HMC)."""
    with np.errstate(invalid="ignore"):
        diverging = ~np.isfinite(log_alpha) | (log_alpha < -DIVERGENCE_ENERGY)
    log_alpha = np.where(diverging, -np.inf, log_alpha)
    accepted = np.log(rng.uniform(size=log_alpha.shape)) < log_alpha
    with np.errstate(over="ignore"):
        acceptance = np.exp(np.minimum(log_alpha, 0.0))
    rows = accepted[:, None]
    state = State(
        x=np.where(rows, proposal.x, current.x),
        log_f=np.where(accepted, proposal.log_f, current.log_f),
        log_q=np.where(accepted, proposal.log_q, current.log_q),
        grad_f=np.where(rows, proposal.grad_f, current.grad_f),
        grad_q=np.where(rows, proposal.grad_q, current.grad_q),
    )
    if counts.n_trajectories:
        counts = counts + Counts(n_diverging=int(np.sum(diverging)))
    info = Info(acceptance, accepted, np.where(diverging, np.inf, -log_alpha), diverging, counts)
    return state, info


def hmc_step(
    state: State,
    beta,
    density,
    step_size,
    n_leapfrog: int,
    rng: np.random.Generator,
    scale=None,
    rows: int | None = None,
) -> tuple[State, Info]:
    """One Hamiltonian Monte Carlo step for every particle, at fixed ``beta``.

    Parameters
    ----------
    state : State
        Current particles (from :func:`init_state` or a previous step).
    beta : float or ndarray, shape (n,)
        Path position(s) in ``[0, 1]``.
    density : BatchedDensity
        From :func:`~pymc_evidence.engines.batched_log_densities`.
    step_size : float or ndarray, shape (n,)
        Leapfrog step size, in units of ``scale``.
    n_leapfrog : int
        Leapfrog steps per trajectory (one batched density call each).
    rng : numpy.random.Generator
    scale : ndarray, shape (d,) or (d, d), optional
        Per-coordinate scale: the mass matrix is ``diag(1 / scale**2)`` (e.g. the base's
        marginal standard deviations); or a lower-triangular ``L``, the inverse mass
        ``L @ L.T`` (e.g. a Cholesky factor of the particles' covariance). Identity mass
        when omitted.
    rows : int, optional
        Where ``state`` is a subset of a larger set of particles, that set's size: a fused
        trajectory (:func:`~pymc_evidence.engines.leapfrog.leapfrogs`) is compiled for it.

    Returns
    -------
    state : State
    info : Info

    Notes
    -----
    Momentum is fully refreshed from its Gaussian at every step and the end point is
    accepted with the Metropolis rule, so the kernel is reversible with respect to
    ``pi_beta``; ``step_size``, ``n_leapfrog`` and ``scale`` must not depend on the
    particles' current positions for this to hold.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from pymc_evidence.base import GaussianBase
    >>> from pymc_evidence.engines import batched_log_densities, init_state
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu", 0.0, 1.0)
    >>> base = GaussianBase(np.zeros(1), np.eye(1), log_zeta=0.0, kind="moments")
    >>> density = batched_log_densities(model, base)
    >>> rng = np.random.default_rng(0)
    >>> state = init_state(rng.normal(size=(100, 1)), density)
    >>> state, info = hmc_step(state, 1.0, density, 0.5, 5, rng)
    >>> info.acceptance.shape, info.counts.n_points, info.counts.n_trajectories
    ((100,), 500, 100)
    """
    n, d = state.x.shape
    eps = _column(step_size, n)
    if int(n_leapfrog) < 1:
        raise ValueError("n_leapfrog must be at least 1")
    beta = np.asarray(beta, dtype=float)
    s = np.ones(d) if scale is None else np.asarray(scale, dtype=float)
    step = DenseStep(eps, s) if s.ndim == 2 else eps * s
    p0 = rng.standard_normal((n, d))
    with np.errstate(invalid="ignore", over="ignore"):
        h0 = -state.log_path(beta) + 0.5 * np.sum(p0**2, 1)
        p = p0 + kick(step, state.grad_path(beta), 0.5)
        x, p, values, met = leapfrogs(density, state.x, p, beta, step, int(n_leapfrog), rows)
        proposal = State(x, *values)
        h1 = -proposal.log_path(beta) + 0.5 * np.sum(p**2, 1)
        log_alpha = h0 - h1
    return _metropolis(state, proposal, log_alpha, rng, met + Counts(n_trajectories=n))


def rwm_step(
    state: State,
    beta,
    density,
    step_size,
    rng: np.random.Generator,
    scale=None,
) -> tuple[State, Info]:
    """One random-walk Metropolis step for every particle (gradient-free fallback).

    Parameters
    ----------
    state : State
    beta : float or ndarray, shape (n,)
    density : BatchedDensity
    step_size : float or ndarray, shape (n,)
        Proposal standard deviation, in units of ``scale``.
    rng : numpy.random.Generator
    scale : ndarray, shape (d,), optional
        Per-coordinate proposal scale.

    Returns
    -------
    state : State
    info : Info
    """
    n, d = state.x.shape
    eps = _column(step_size, n)
    beta = np.asarray(beta, dtype=float)
    s = np.ones(d) if scale is None else np.asarray(scale, dtype=float)
    x = state.x + eps * s * rng.standard_normal((n, d))
    proposal = init_state(x, density)
    with np.errstate(invalid="ignore"):
        log_alpha = proposal.log_path(beta) - state.log_path(beta)
    return _metropolis(state, proposal, log_alpha, rng, Counts.of_state(proposal))
