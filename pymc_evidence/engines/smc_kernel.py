"""The moves of resample-move SMC: batched HMC whose step size and scale follow the particles.

:class:`Kernel` moves every particle of a stage by at least ``n_moves`` HMC steps at the
stage's ``beta`` and then, a block of :data:`MOVE_BLOCK` at a time up to ``max_moves``, until
the ranks of ``log f - log q`` (what the next weights are functions of) no longer correlate
with their values before the moves. The scale is set by the caller at each stage from the
weighted particles (:meth:`Kernel.scale_of`): up to ``dense_max_dim`` dimensions a Cholesky
factor of their covariance (:func:`dense_spread`: the moves run in whitened coordinates, so
that an intercept and the effects confounded with it move together), above that their
standard deviation per coordinate (:func:`spread`); the step size, in units of that scale,
is tuned towards ``target_accept`` between stages and blocks.

A step size carried over from the last stage can be far too large for the next one (the
target narrows as ``beta`` grows, a narrow mode or a strongly correlated posterior needs a
smaller step than the spread suggests), and a trajectory with such a step diverges. Before
the first move of a stage, :meth:`Kernel.settle` therefore runs trial trajectories from a
few particles (nothing is accepted, and only their density calls are counted)
and halves the step until none diverges, as NUTS picks a first step size (Hoffman & Gelman
2014, Algorithm 4); a move in which more than :data:`DIVERGING_HALVE` of the trajectories
still diverge halves it again. The scale, the step and the trial particles never depend on
a particle's own position at the move, so every move is ``pi_beta``-invariant.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy.stats import rankdata

from ..estimators.logspace import nan_as_zero_weight, normalize_log_weights
from .counts import Counts
from .hmc import State, hmc_step
from .settings import SMCSettings

__all__ = [
    "DENSE_ESS_PER_DIM",
    "DIVERGING_HALVE",
    "MAX_HALVINGS",
    "MIN_REFRESH",
    "MOVE_BLOCK",
    "TRIAL_PARTICLES",
    "UNMOVED_SHARE",
    "Kernel",
    "Moved",
    "Tuning",
    "concat",
    "dense_spread",
    "log_incr",
    "log_ratio",
    "spread",
    "take",
]

#: Moves beyond ``n_moves`` come in blocks of this many HMC steps.
MOVE_BLOCK = 5
#: A move in which more than this share of the trajectories diverged halves the step size
#: at once (an inherited step far too large for the new stage, or for a narrow mode).
DIVERGING_HALVE = 0.01
#: The final move at ``beta = 1`` (:meth:`Kernel.refresh`) stops once all but this share of
#: the particles have left the positions resampling gave them (and at least
#: :data:`MIN_REFRESH` HMC steps have run; at most ``n_moves``).
UNMOVED_SHARE = 0.01
MIN_REFRESH = 2
#: Fewest effective particles per dimension for :func:`dense_spread`'s correlations.
DENSE_ESS_PER_DIM = 5
#: Particles that run the trial trajectories of :meth:`Kernel.settle`, and the most halvings.
TRIAL_PARTICLES = 64
MAX_HALVINGS = 10


def log_ratio(state: State) -> np.ndarray:
    """``log f - log q``; NaN (e.g. ``-inf - -inf``) becomes ``-inf`` (weight zero)."""
    with np.errstate(invalid="ignore"):
        ratio = state.log_f - state.log_q
    return nan_as_zero_weight(ratio)


def log_incr(ratio: np.ndarray, d_beta: float) -> np.ndarray:
    """Incremental log weights ``d_beta * (log f - log q)`` (``-inf`` stays ``-inf``)."""
    if d_beta == 0.0:
        return np.zeros_like(ratio)
    return np.where(ratio == -np.inf, -np.inf, d_beta * ratio)


def _correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Rank correlation over the particles where both are finite (0 when one is flat); ranks,
    as a few particles stuck far out in a tail would hold a Pearson correlation up alone."""
    keep = np.isfinite(a) & np.isfinite(b)
    if np.sum(keep) < 3:
        return 0.0
    a, b = rankdata(a[keep]), rankdata(b[keep])
    a, b = a - a.mean(), b - b.mean()
    denominator = np.sqrt(np.sum(a**2) * np.sum(b**2))
    return float(np.sum(a * b) / denominator) if denominator > 0 else 0.0


_KEYS = ("x", "log_f", "log_q", "grad_f", "grad_q")


def take(state: State, index) -> State:
    """The particles at ``index`` (resampling, trial subsets)."""
    return State(*(getattr(state, k)[index] for k in _KEYS))


def put(state: State, index, part: State) -> State:
    """``state`` with the particles at ``index`` replaced by those of ``part`` (a new state)."""

    def merged(key):
        values = getattr(state, key).copy()
        values[index] = getattr(part, key)
        return values

    return State(*(merged(k) for k in _KEYS))


def repeats(index: np.ndarray) -> np.ndarray:
    """Positions in a resampled set that repeat an earlier one's parent (the copies).

    >>> repeats(np.array([0, 0, 2, 3, 3, 3])).tolist()
    [1, 4, 5]
    """
    index = np.asarray(index)
    order = np.argsort(index, kind="stable")
    copy = np.zeros(index.size, dtype=bool)
    copy[order[1:]] = index[order[1:]] == index[order[:-1]]
    return np.flatnonzero(copy)


def repeated_rows(x: np.ndarray) -> np.ndarray:
    """Positions of the rows of ``x`` that equal an earlier row: the copies a resampling
    left, where its indices are gone (a reweighting that resampled at ``beta = 1``).

    >>> repeated_rows(np.array([[0.5, 1.0], [0.5, 1.0], [2.0, 0.0], [0.5, 1.0]])).tolist()
    [1, 3]
    """
    _, first = np.unique(x, axis=0, return_index=True)
    copy = np.ones(len(x), dtype=bool)
    copy[first] = False
    return np.flatnonzero(copy)


def concat(states) -> State:
    """The particles of several states, stacked (ARM's merged sets)."""
    return State(*(np.concatenate([getattr(s, k) for s in states]) for k in _KEYS))


def spread(x: np.ndarray, log_w: np.ndarray, previous: np.ndarray | None) -> np.ndarray:
    """Weighted standard deviation per coordinate (the previous scale where it is ~0)."""
    w = np.exp(normalize_log_weights(log_w))
    mean = w @ x
    std = np.sqrt(np.maximum(w @ (x - mean) ** 2, 0.0))
    fallback = np.ones(x.shape[1]) if previous is None else previous
    return np.where(std > 1e-10, std, fallback)


def dense_spread(x: np.ndarray, log_w: np.ndarray, previous: np.ndarray | None) -> np.ndarray:
    """A lower-triangular factor ``L`` of the particles' weighted covariance, ``L @ L.T``;
    the per-coordinate scale of :func:`spread` (as a diagonal ``L``) where the weights'
    Kish ESS is under :data:`DENSE_ESS_PER_DIM` per dimension, too few to estimate the
    correlations. The correlations are not shrunk: shrinking a correlation of 0.99 (an
    intercept and the mean of effects confounded with it) by a few percent leaves the
    moves as poorly scaled as none.

    >>> x = np.random.default_rng(0).multivariate_normal([0, 0], [[1, .9], [.9, 1]], 4000)
    >>> chol = dense_spread(x, np.zeros(4000), None)
    >>> np.round(chol @ chol.T, 1).tolist()
    [[1.0, 0.9], [0.9, 1.0]]
    """
    sd = spread(x, log_w, _diagonal(previous))
    w = np.exp(normalize_log_weights(log_w))
    if 1.0 / np.sum(w**2) < DENSE_ESS_PER_DIM * x.shape[1]:
        return np.diag(sd)
    centred = (x - w @ x) / sd
    corr = centred.T @ (centred * w[:, None])
    corr = corr / np.sqrt(np.outer(np.diag(corr), np.diag(corr))) + 1e-10 * np.eye(len(sd))
    try:
        return sd[:, None] * np.linalg.cholesky(corr)
    except np.linalg.LinAlgError:
        return np.diag(sd)


def _diagonal(scale: np.ndarray | None) -> np.ndarray | None:
    """The per-coordinate scale of a scale (its rows' norms for a factor ``L``)."""
    if scale is None or np.ndim(scale) == 1:
        return scale
    return np.sqrt(np.sum(np.asarray(scale) ** 2, axis=1))


@dataclass(frozen=True)
class Tuning:
    """What the moves adapt as a run goes: the HMC step size (in units of the scale) and the
    diagonal scale."""

    step_size: float
    scale: np.ndarray

    def tuned(self, acceptance, settings: SMCSettings) -> Tuning:
        """``step *= exp(step_gain * (mean acceptance - target_accept))``, clipped to e^±1."""
        if not acceptance:
            return self
        change = settings.step_gain * (float(np.mean(acceptance)) - settings.target_accept)
        return replace(self, step_size=self.step_size * float(np.exp(np.clip(change, -1.0, 1.0))))

    def halved(self) -> Tuning:
        return replace(self, step_size=self.step_size * 0.5)


@dataclass(frozen=True)
class Moved:
    """What a run of moves did: the acceptance of each HMC step (mean over particles), the
    steps' counts and the particle moves (particles times steps)."""

    acceptance: tuple = ()
    counts: Counts = Counts()
    particle_moves: int = 0

    def __add__(self, other: Moved) -> Moved:
        return Moved(
            self.acceptance + other.acceptance,
            self.counts + other.counts,
            self.particle_moves + other.particle_moves,
        )


@dataclass(frozen=True)
class Kernel:
    """The HMC moves of one SMC run, built once from its fixed configuration; what they adapt
    travels as a :class:`Tuning` value, what they did as a :class:`Moved` value."""

    density: object
    settings: SMCSettings

    def scale_of(self, x: np.ndarray, log_w: np.ndarray, previous) -> np.ndarray:
        """The moves' scale from the weighted particles: :func:`dense_spread` up to
        ``settings.dense_max_dim`` dimensions, :func:`spread` above."""
        if x.shape[1] <= self.settings.dense_max_dim:
            return dense_spread(x, log_w, previous)
        return spread(x, log_w, _diagonal(previous))

    def move(self, rng, state: State, beta: float, tuning: Tuning):
        """``n_moves`` HMC steps, then more (up to ``max_moves``) while the particles'
        ``log f - log q`` still correlates with its value before the moves: the state, the
        tuning after them and the :class:`Moved`."""
        s, acc, start = self.settings, [], log_ratio(state)
        tuning, met = self.settle(rng, state, beta, tuning)
        while len(acc) < s.max_moves:
            state, tuning, step_met = self._step(rng, state, beta, tuning, acc)
            met = met + step_met
            if len(acc) >= s.n_moves and (len(acc) - s.n_moves) % MOVE_BLOCK == 0:
                if _correlation(start, log_ratio(state)) <= s.decorrelation:
                    break
                tuning = tuning.tuned(acc[-MOVE_BLOCK:], s)  # a long stage adapts as it goes
        return state, tuning, Moved(tuple(acc), met, state.x.shape[0] * len(acc))

    def steps(self, rng, state: State, beta: float, tuning: Tuning, n_steps: int):
        """``n_steps`` HMC steps of every particle, the step size tuned after each and
        settled before each (the scale may have changed since the last move, as when a
        run's last stage kept a few particles far in a tail; and a run that reached the
        posterior in one step starts from a step no stage has tuned, which the tuning
        after every accepted step can raise past stability): the state, the tuning and the
        :class:`Moved` (the posterior's rejuvenation)."""
        acc, met = [], Counts()
        for _ in range(n_steps):
            tuning, trials = self.settle(rng, state, beta, tuning)
            state, tuning, step_met = self._step(rng, state, beta, tuning, acc)
            met, tuning = met + trials + step_met, tuning.tuned(acc[-1:], self.settings)
        return state, tuning, Moved(tuple(acc), met, state.x.shape[0] * len(acc))

    def _step(self, rng, state: State, beta: float, tuning: Tuning, acc: list, rows=None):
        """One HMC step of every particle; its acceptance appended to ``acc``, the step
        size halved when more than :data:`DIVERGING_HALVE` of the trajectories diverged
        (``rows``: see :func:`~pymc_evidence.engines.hmc.hmc_step`)."""
        state, info = hmc_step(
            state, beta, self.density, tuning.step_size, self.settings.n_leapfrog, rng,
            tuning.scale, rows,
        )  # fmt: skip
        acc.append(float(np.mean(info.acceptance)))
        if np.mean(info.diverging) > DIVERGING_HALVE:
            tuning = tuning.halved()
        return state, tuning, info.counts

    def refresh(self, rng, state: State, beta: float, tuning: Tuning, rows=None):
        """HMC steps until the particles have left the positions they started from: the
        state, the tuning and the :class:`Moved`.

        The last move of a run, given the copies resampling made (the particles already
        follow ``pi_beta``, weighted then resampled, so the move only has to break the
        copies up). It stops when at most :data:`UNMOVED_SHARE` of them still sit where
        they started, after at least :data:`MIN_REFRESH` steps, at most ``n_moves``. A base
        close to the posterior (one importance-sampling step, no intermediate stage) then
        costs two or three steps of a few copies, where ``n_moves`` steps of every particle
        cost ten times the whole set: a 20 000-row logistic regression spent most of its
        time in that move (measured in :doc:`/hard_models`, "Gaussian-like posteriors: the
        Laplace base first"). ``rows``, the run's number of particles: the copies' fused
        trajectories are padded to the whole set where that at most doubles them
        (:data:`~pymc_evidence.engines.leapfrog.SUBSET_PAD_MAX`), so that the number of
        copies rarely compiles a size of its own (each size was a new compilation, in warm
        calls too; measured in :doc:`/performance`, "What a user meets: the first call on a
        new model").
        """
        s, acc, start = self.settings, [], state.x
        moved = np.zeros(start.shape[0], dtype=bool)
        tuning, met = self.settle(rng, state, beta, tuning)
        while len(acc) < max(s.n_moves, MIN_REFRESH):
            state, tuning, step_met = self._step(rng, state, beta, tuning, acc, rows)
            met = met + step_met
            moved |= np.any(state.x != start, axis=1)
            if len(acc) >= MIN_REFRESH and np.mean(~moved) <= UNMOVED_SHARE:
                break
        return state, tuning, Moved(tuple(acc), met, state.x.shape[0] * len(acc))

    def settle(self, rng, state: State, beta: float, tuning: Tuning) -> tuple[Tuning, Counts]:
        """Halve the step size while a trial trajectory from one of
        :data:`TRIAL_PARTICLES` particles (drawn at random) diverges. The trials move
        nothing; only their density calls (a cost) are counted."""
        n, met = state.x.shape[0], Counts()
        trial = take(state, rng.choice(n, size=min(n, TRIAL_PARTICLES), replace=False))
        for _ in range(MAX_HALVINGS):
            _, info = hmc_step(
                trial, beta, self.density, tuning.step_size, self.settings.n_leapfrog, rng,
                tuning.scale,
            )  # fmt: skip
            met = met + Counts(n_calls=info.counts.n_calls)
            if not np.any(info.diverging):
                break
            tuning = tuning.halved()
        return tuning, met
