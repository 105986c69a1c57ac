"""Linked importance sampling (Neal 2005) on the batched particle engine.

Every particle is one independent LIS run; all runs advance in lockstep, so each Markov
transition costs one batched density call per leapfrog step for all runs together. The path
is the geometric one of :mod:`.ais` (``log pi_beta = beta log f + (1 - beta) log q``,
``Z_0 = 1``, ``Z_1 = Z``) on a coarse schedule ``beta_0 = 0 < ... < beta_n = 1``.

One forward run (Neal's steps 1-4):

1. chain 0: ``K_0 + 1`` states of the base, either given (``x0`` of shape
   ``(run, K_0 + 1, d)``, independent draws: the kernel ``T_0`` is then independent
   sampling) or one draw per run (``x0`` of shape ``(run, d)``) planted at a uniformly
   random position and grown forward and backward with the kernel at ``beta_0``;
2. for each link ``j``: a link state is chosen from chain ``j`` with probability
   ``propto p_{j*j+1} / p_j`` (a one-item weighted reservoir, so chains are never stored),
   planted at a uniform position ``mu`` of chain ``j + 1`` and grown forward ``K - mu`` and
   backward ``mu`` transitions. The kernels (HMC with full momentum refresh, RWM) are
   reversible, so the backward kernel is the forward one. Both segments share one lockstep
   loop of ``K`` transitions: a run restarts from its link once its forward segment is done;
3. the estimate is Neal's eq. 9, :func:`~pymc_evidence.estimators.lis.lis_log_factors`.

A reverse run is the same procedure on the reversed schedule, started from posterior draws;
it estimates ``1 / Z``. For bridged LIS both directions must use the same kernels at every
``beta``: the same step sizes, and at each end the same kind of transition (e.g. forward
from ``x0`` of independent base draws with HMC at ``beta = 1``, reverse from single
posterior draws with HMC at ``beta = 1`` and ``end_sampler=base.sample`` at ``beta = 0``).
Step sizes are fixed per distribution (e.g. from an AIS pilot via
:func:`~.schedules.interpolate_step_sizes`) and never adapted inside a run.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np

from ..estimators.ladder import validate_ladder
from ..estimators.lis import lis_log_factors, log_bridge_ratios
from ..estimators.logspace import kish_ess, nan_as_zero_weight
from .counts import Counts
from .hmc import State, hmc_step, init_state, rwm_step
from .records import LISInfo
from .schedules import interpolate_step_sizes
from .settings import KernelSettings, LinkSettings, kernel_scale
from .stages import StageInfo, anneal, counting, stack, total_counts

__all__ = ["LISState", "interpolate_step_sizes", "run_lis"]


def _where(mask: np.ndarray, a: State, b: State) -> State:
    rows = mask[:, None]
    return State(
        np.where(rows, a.x, b.x),
        np.where(mask, a.log_f, b.log_f),
        np.where(mask, a.log_q, b.log_q),
        np.where(rows, a.grad_f, b.grad_f),
        np.where(rows, a.grad_q, b.grad_q),
    )


def _rows(state: State, n: int, k: int) -> State:
    """State ``k`` of every run from a state of shape (run * (K + 1), ...) ordered run-major."""

    def pick(a):
        return a.reshape(n, -1, *a.shape[1:])[:, k]

    fields = (state.x, state.log_f, state.log_q, state.grad_f, state.grad_q)
    return State(*(pick(a) for a in fields))


class _Chain:
    """Collects ``u = log f - log q`` of a chain's states and picks one state by weight.

    ``weight(u)`` gives the log selection weight of a state (``None``: uniform). Selection
    is a one-item weighted reservoir: state ``k`` replaces the pick with probability
    ``w_k / sum_{i <= k} w_i``, which leaves each state picked with probability ``propto w``.
    """

    def __init__(self, weight, rng):
        self.weight, self.rng = weight, rng
        self.u, self.pick, self.log_total, self.lw = [], None, None, []

    def observe(self, state: State):
        with np.errstate(invalid="ignore"):
            u = state.log_f - state.log_q
        u = nan_as_zero_weight(u)
        self.u.append(u)
        lw = np.zeros_like(u) if self.weight is None else self.weight(u)
        self.lw.append(lw)
        if self.pick is None:
            self.pick, self.log_total = state, lw
            return
        total = np.logaddexp(self.log_total, lw)
        with np.errstate(invalid="ignore"):
            log_p = np.where(np.isfinite(total), lw - total, -np.inf)
        take = np.log(self.rng.uniform(size=u.shape)) < log_p
        self.pick, self.log_total = _where(take, state, self.pick), total

    def link_ess(self) -> float:
        """Mean over runs of the Kish ESS of the selection weights (0 for an all-zero run)."""
        return float(np.mean(kish_ess(np.stack(self.lw, axis=1), axis=1)))


@dataclass(frozen=True)
class LISState:
    """A batch of LIS runs between chains: the starting draws (chain 0), each run's link
    state picked from the last chain (None before the first), the chains done, and the link
    factors' numerator and denominator terms (arrays of shape (run, K + 1)) so far."""

    start: np.ndarray
    link: State | None = None
    stage: int = 0
    done: bool = False
    num: tuple = ()
    den: tuple = ()


@dataclass(frozen=True)
class _Plan:
    """A batch of runs' fixed configuration, in path order (reversed for reverse runs): the
    kernel whose :meth:`step` makes one chain."""

    density: object
    kernel: KernelSettings
    scale: np.ndarray | None
    betas: np.ndarray  # in betas order
    direction: str
    path: np.ndarray
    lengths: np.ndarray
    eps: np.ndarray
    end_sampler: object
    bridges: tuple

    def step(self, rng: np.random.Generator, state: LISState) -> tuple[LISState, StageInfo]:
        """Chain ``j = state.stage``: its states, the link factors' terms it gives, its pick."""
        j, n_links = state.stage, self.path.size - 1
        selector = (lambda u, b=self.bridges[j]: b(u)[0]) if j < n_links else None
        chain = _Chain(selector, rng)
        acc, met = _chain(j, state.link, state.start, chain, self, rng)
        u = np.stack(chain.u, axis=1)
        num, den, values = state.num, state.den, {}
        if j > 0:
            den = (*den, self.bridges[j - 1](u)[1])
        if j < n_links:
            num = (*num, self.bridges[j](u)[0])
            values["link_ess"] = chain.link_ess()
        moved = bool(np.isfinite(acc))
        step_size = self.eps[j] if moved else np.nan
        n_moves = int(self.lengths[j]) * self.kernel.n_steps if moved else 0
        info = StageInfo(self.path[j], acc, step_size, n_moves, met, values)
        return LISState(state.start, chain.pick, j + 1, j == n_links, num, den), info


def _transition(state, j: int, plan: _Plan, rng):
    """One transition of chain ``j``: the state, its mean acceptance, its counts."""
    kernel, acc, met = plan.kernel, 0.0, Counts()
    beta, eps = plan.path[j], plan.eps[j]
    for _ in range(kernel.n_steps):
        if kernel.kind == "hmc":
            state, info = hmc_step(
                state, beta, plan.density, eps, kernel.n_leapfrog, rng, scale=plan.scale
            )
        else:
            state, info = rwm_step(state, beta, plan.density, eps, rng, scale=plan.scale)
        acc += info.acceptance.mean() / kernel.n_steps
        met = met + info.counts
    return state, acc, met


def _grow(link: State, j: int, chain: _Chain, plan: _Plan, rng) -> tuple[float, Counts]:
    """Plant ``link`` at a uniform position of chain ``j``, grow both ways; mean acceptance
    (nan if K = 0) and the transitions' counts."""
    length = plan.lengths[j]
    mu = rng.integers(0, length + 1, size=link.x.shape[0])
    chain.observe(link)
    state, acc, met = link, [], Counts()
    for t in range(length):
        restart = (length - mu) == t  # forward segment (length K - mu) done: go backward
        if t > 0 and np.any(restart):
            state = _where(restart, link, state)
        state, a, step_met = _transition(state, j, plan, rng)
        chain.observe(state)
        acc.append(a)
        met = met + step_met
    return (float(np.mean(acc)) if acc else np.nan), met


def _observe_all(x: np.ndarray, chain: _Chain, density, extra: State | None = None) -> Counts:
    """Independent draws ``x`` of shape (run, m, d) (plus an optional link) into ``chain``;
    the counts of their evaluation."""
    n, m, d = x.shape
    states = init_state(x.reshape(n * m, d), density)
    if extra is not None:
        chain.observe(extra)
    for k in range(m):
        chain.observe(_rows(states, n, k))
    return Counts.of_state(states)


def _plan(density, betas, kernel: KernelSettings, links: LinkSettings, end_sampler):
    betas, direction = validate_ladder(betas), links.direction
    lengths = np.broadcast_to(np.asarray(links.chain_length), betas.shape).astype(int)
    if np.any(lengths < 0):
        raise ValueError("chain_length must be >= 0")
    eps = np.broadcast_to(np.asarray(kernel.step_size, dtype=float), betas.shape)
    guess = np.broadcast_to(np.asarray(links.log_ratio_guess, dtype=float), (betas.size - 1,))
    order = slice(None) if direction == "forward" else slice(None, None, -1)
    sign = 1.0 if direction == "forward" else -1.0
    path, lengths, guesses = betas[order], lengths[order], sign * guess[order]
    bridges = tuple(
        _bridge(path[j], path[j + 1], links.bridge, guesses[j], lengths[j], lengths[j + 1])
        for j in range(path.size - 1)
    )
    return _Plan(
        density=density,
        kernel=kernel,
        scale=kernel_scale(kernel),
        betas=betas,
        direction=direction,
        path=path,
        lengths=lengths,
        eps=eps[order],
        end_sampler=end_sampler,
        bridges=bridges,
    )


def _start_x0(x0, n_states: int) -> np.ndarray:
    x0 = np.asarray(x0, dtype=float)
    if x0.ndim not in (2, 3) or x0.shape[0] < 1:
        raise ValueError(f"x0 must have shape (run, d) or (run, K + 1, d), got {x0.shape}")
    if x0.ndim == 3 and x0.shape[1] != n_states:
        raise ValueError(f"x0 holds {x0.shape[1]} states per run, the first chain {n_states}")
    return x0


def _chain(j: int, link, x0, chain: _Chain, plan: _Plan, rng) -> tuple[float, Counts]:
    """Fill ``chain`` with the states of distribution ``j``; mean acceptance (nan: none)
    and the counts of its evaluations and transitions."""
    density, last = plan.density, plan.path.size - 1
    if j == 0 and x0.ndim == 3:
        return np.nan, _observe_all(x0, chain, density)
    start = Counts()
    if j == 0:
        link = init_state(x0, density)
        start = Counts.of_state(link)
    elif j == last and plan.end_sampler is not None:
        n, d = link.x.shape
        draws = np.asarray(plan.end_sampler(n * plan.lengths[j], rng), dtype=float)
        shaped = draws.reshape(n, plan.lengths[j], d)
        return np.nan, _observe_all(shaped, chain, density, extra=link)
    acc, met = _grow(link, j, chain, plan, rng)
    return acc, start + met


def run_lis(
    density,
    betas,
    x0: np.ndarray,
    rng: np.random.Generator,
    kernel: KernelSettings,
    links: LinkSettings,
    *,
    end_sampler=None,
    callback=None,
) -> tuple[np.ndarray, LISInfo]:
    """Independent linked importance sampling runs, one per particle, in lockstep.

    Parameters
    ----------
    density : BatchedDensity
        From :func:`~pymc_evidence.engines.batched_log_densities` (or any callable with the
        same ``(log_f, log_q, grad_f, grad_q)`` output).
    betas : array_like, shape (n + 1,)
        Strictly increasing schedule from 0 to 1; LIS wants a *coarse* one (adjacent
        distributions just overlapping, e.g. 5-30 values) and long chains.
    x0 : ndarray, shape (run, d) or (run, K + 1, d)
        Exact draws from the start distribution: the base (forward) or the posterior
        (reverse). One per run is planted in chain 0 and grown with the kernel; ``K + 1`` per
        run are taken as independent draws forming chain 0.
    rng : numpy.random.Generator
    kernel : KernelSettings
        HMC or RWM; its ``step_size`` (a float, or one per ``betas[k]``: see
        :func:`~.schedules.interpolate_step_sizes`) is fixed for the whole run and must be
        finite where the kernel is used; ``n_steps`` kernel steps make one transition;
        ``scale`` is an array or None (no base here to take ``"base"`` from).
    links : LinkSettings
        Chain lengths ``K`` (each chain has ``K + 1`` states), the low-level bridge and the
        direction: forward runs estimate ``Z``; reverse runs (``x0`` posterior draws,
        schedule walked from 1 to 0) estimate ``1 / Z``.
    end_sampler : callable, optional
        ``end_sampler(m, rng) -> (m, d)`` exact draws of the *last* distribution (the base
        for reverse runs): its chain is then the link plus ``K`` independent draws.
    callback : callable, optional
        Called as ``callback(done, n + 1)`` after each of the ``n + 1`` chains (e.g. a
        progress bar).

    Returns
    -------
    log_r : ndarray, shape (run,)
        Per-run log estimate of ``log Z`` (forward) or ``log(1 / Z)`` (reverse); ``-inf``
        for a run whose estimate is exactly zero. Combine with
        :func:`~pymc_evidence.estimators.lis.lis_log_evidence`,
        :func:`~pymc_evidence.estimators.lis.reverse_lis_log_evidence` or
        :func:`~pymc_evidence.estimators.lis.bridged_log_evidence`.
    info : LISInfo
        Per-temperature acceptance and step sizes, per-link log ratios and link ESS, each
        run's log factors, a state of each run's last chain and the settings, all in
        ``betas`` order (see :class:`~pymc_evidence.engines.records.LISInfo`).

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from pymc_evidence.base import GaussianBase
    >>> from pymc_evidence.engines import KernelSettings, LinkSettings, batched_log_densities
    >>> from pymc_evidence.estimators.lis import lis_log_evidence
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu", 0.0, 1.0)
    ...     _ = pm.Normal("y", mu, 1.0, observed=np.array([0.5]))
    >>> base = GaussianBase(np.zeros(1), np.eye(1), log_zeta=0.0, kind="moments")
    >>> density = batched_log_densities(model, base)
    >>> rng = np.random.default_rng(0)
    >>> kernel = KernelSettings(step_size=1.0, n_leapfrog=3, scale=None)
    >>> log_r, info = run_lis(density, [0.0, 0.5, 1.0], base.sample(100, rng), rng,
    ...                       kernel, LinkSettings(chain_length=10))
    >>> exact = -0.5 * np.log(2 * np.pi * 2) - 0.25 * 0.5**2
    >>> bool(abs(lis_log_evidence(log_r).log_z - exact) < 0.05)
    True
    """
    plan = _plan(density, betas, kernel, links, end_sampler)
    path, lengths, eps = plan.path, plan.lengths, plan.eps
    x0 = _start_x0(x0, lengths[0] + 1)
    moves = np.ones(path.size, bool)
    moves[0], moves[-1] = x0.ndim == 2, end_sampler is None
    bad = moves & (lengths > 0) & ~(np.isfinite(eps) & (eps > 0))
    if np.any(bad):
        raise ValueError(f"step_sizes must be finite and positive at betas {path[bad]}")
    state, infos = anneal(plan.step, LISState(x0), rng, callback=counting(callback, path.size))
    log_factors = lis_log_factors(list(state.num), list(state.den))
    info = _info(log_factors, state.link, plan, stack(infos), total_counts(infos))
    return log_factors.sum(axis=1), info


def _bridge(beta_from, beta_to, bridge, guess, k_from, k_to):
    """``u -> (log p_*/p_from, log p_*/p_to)`` for one link."""
    return partial(
        log_bridge_ratios,
        beta_from=beta_from,
        beta_to=beta_to,
        bridge=bridge,
        log_ratio_guess=float(guess),
        log_size_ratio=float(np.log((k_from + 1.0) / (k_to + 1.0))),
    )


def _info(log_factors, last, plan: _Plan, stages: dict, met: Counts) -> LISInfo:
    """Diagnostics in ``betas`` order (the run's arrays are in path order)."""
    direction = plan.direction
    flip = slice(None) if direction == "forward" else slice(None, None, -1)
    sign = 1.0 if direction == "forward" else -1.0
    factors = log_factors[:, flip]
    ok = np.isfinite(factors)
    count = ok.sum(axis=0)
    total = np.where(ok, factors, 0.0).sum(axis=0)
    link_log_ratio = np.where(count > 0, sign * total / np.maximum(count, 1), np.nan)
    return LISInfo(
        beta=plan.betas,
        direction=direction,
        acceptance=stages["acceptance"][flip],
        step_size=stages["step_size"][flip],
        n_moves=stages["n_moves"][flip],
        link_log_ratio=link_log_ratio,
        link_ess=stages["link_ess"][:-1][flip],
        log_factors=factors,
        x=last.x,
        n_zero_runs=int(np.sum(~np.isfinite(log_factors.sum(axis=1)))),
        chain_length=np.array(plan.lengths[flip]),
        kernel=plan.kernel.kind,
        n_leapfrog=plan.kernel.n_leapfrog,
        n_steps=plan.kernel.n_steps,
        scale=plan.scale,
        n_density_calls=met.n_calls,
        counts=met,
    )
