"""What the kernels met, as values: density calls, evaluated points and the non-finite ones,
trajectories and the diverging ones.

Every HMC or RWM step returns its :class:`Counts` in its :class:`~.hmc.Info`; an engine adds
those of the steps and starting evaluations of a run into the run's record (``info.counts``);
a method adds the records of the runs its estimate uses, and the shares go into the
estimate's diagnostics (``nonfinite_fraction``, ``diverging_fraction``). Nothing is counted on
the density, which runs, threads, worker processes and calls share: trial trajectories that
are not part of a run (:meth:`~.smc_kernel.Kernel.settle`) add their calls (a cost) and
nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Counts"]


@dataclass(frozen=True)
class Counts:
    """Points and trajectories met by a step, a run or a set of runs.

    Attributes
    ----------
    n_calls : int
        Batched density calls (the cost: a leapfrog step, a starting evaluation).
    n_points, n_nonfinite : int
        Points where the density was evaluated, and how many of them had a non-finite
        ``log f`` or ``log q``.
    n_trajectories, n_diverging : int
        HMC trajectories, and how many diverged (energy error above 1000 or non-finite).

    Examples
    --------
    >>> step = Counts.of_values(np.array([0.0, -np.inf]), np.zeros(2))
    >>> total = step + Counts(n_trajectories=2, n_diverging=1)
    >>> total.nonfinite_fraction, total.diverging_fraction
    (0.5, 0.5)
    >>> sum([total, total], Counts()).n_points, total.n_calls
    (4, 1)
    """

    n_calls: int = 0
    n_points: int = 0
    n_nonfinite: int = 0
    n_trajectories: int = 0
    n_diverging: int = 0

    @classmethod
    def of_values(cls, log_f: np.ndarray, log_q: np.ndarray) -> Counts:
        """One batched evaluation (``log f`` and ``log q`` per row): its call and points."""
        bad = ~(np.isfinite(log_f) & np.isfinite(log_q))
        return cls(n_calls=1, n_points=int(np.size(bad)), n_nonfinite=int(np.sum(bad)))

    @classmethod
    def of_state(cls, state) -> Counts:
        """The points of a :class:`~.hmc.State` just evaluated (:func:`~.hmc.init_state`)."""
        return cls.of_values(state.log_f, state.log_q)

    def __add__(self, other: Counts) -> Counts:
        if not isinstance(other, Counts):
            return NotImplemented
        return Counts(
            self.n_calls + other.n_calls,
            self.n_points + other.n_points,
            self.n_nonfinite + other.n_nonfinite,
            self.n_trajectories + other.n_trajectories,
            self.n_diverging + other.n_diverging,
        )

    @property
    def nonfinite_fraction(self) -> float:
        """Share of the points whose log density was not finite (0 when there were none)."""
        return self.n_nonfinite / self.n_points if self.n_points else 0.0

    @property
    def diverging_fraction(self) -> float:
        """Share of the HMC trajectories that diverged (0 when there were none)."""
        return self.n_diverging / self.n_trajectories if self.n_trajectories else 0.0
