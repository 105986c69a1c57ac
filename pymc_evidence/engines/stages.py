"""What one stage of an annealing engine reports, and the one driver that runs the stages.

Every annealing family (forward and reverse AIS, LIS, resample-move SMC / ARM) is shaped as
blackjax shapes its samplers: a kernel built once from the run's fixed configuration, an
``init`` that makes the first state from the starting positions, and a step
``step(rng, state) -> (state, StageInfo)`` that takes the run one temperature further.
:func:`anneal` calls the step until the state says the run is done and returns the
:class:`StageInfo` of every stage; :func:`stack` turns them into per-stage arrays, one
vocabulary for every engine:

``beta``
    The temperature the stage reached.
``acceptance``, ``step_size``, ``n_moves``
    Mean acceptance, step size and kernel steps per particle of the stage's moves at
    ``beta`` (``nan``, ``nan`` and 0 where the stage moved nothing).
``counts``
    The :class:`~.counts.Counts` of the stage's evaluations and moves (summed by
    :func:`total_counts`).

What is particular to one engine (AIS's ``ess`` and ``path_var``, SMC's ``cess`` and
``gamma``, LIS's ``link_ess``) travels in :attr:`StageInfo.values` under the record's name
for it, and :func:`stack` gives it an array of its own.

The states are immutable values; a run's random generator is the only thing a step
changes (numpy's generators are not split as JAX keys are).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from .counts import Counts

__all__ = ["STAGE_FIELDS", "StageInfo", "anneal", "counting", "stack", "total_counts"]

#: The per-stage fields every engine's record has, in this order.
STAGE_FIELDS = ("beta", "acceptance", "step_size", "n_moves")


@dataclass(frozen=True)
class StageInfo:
    """What one stage met.

    Attributes
    ----------
    beta : float
        The temperature the stage reached.
    acceptance : float
        Mean acceptance of the stage's moves (``nan``: none).
    step_size : float
        Their step size (``nan``: none).
    n_moves : int
        Kernel steps per particle.
    counts : Counts
        The stage's evaluations and moves.
    values : Mapping[str, float]
        Per-stage numbers particular to the engine, by their record names.

    Examples
    --------
    >>> first = StageInfo(0.0, values={"ess": 100.0})
    >>> last = StageInfo(1.0, 0.8, 0.3, 2, Counts(n_calls=6), {"ess": 90.0})
    >>> arrays = stack([first, last])
    >>> arrays["beta"].tolist(), arrays["n_moves"].tolist(), arrays["ess"].tolist()
    ([0.0, 1.0], [0.0, 2.0], [100.0, 90.0])
    >>> total_counts([first, last]).n_calls
    6
    """

    beta: float
    acceptance: float = np.nan
    step_size: float = np.nan
    n_moves: int = 0
    counts: Counts = Counts()
    values: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "values", MappingProxyType(dict(self.values)))


def anneal(step: Callable, state, rng: np.random.Generator, *, callback=None):
    """Run ``step`` from ``state`` until ``state.done``.

    Parameters
    ----------
    step : callable
        ``step(rng, state) -> (state, StageInfo)``: the engine's kernel.
    state
        The first state (its ``done`` attribute ends the loop).
    rng : numpy.random.Generator
    callback : callable, optional
        Called as ``callback(state, info)`` after each stage (e.g. a progress bar).

    Returns
    -------
    state
        The last state.
    infos : list of StageInfo
        One per stage, in the order they ran.
    """
    infos = []
    while not state.done:
        state, info = step(rng, state)
        infos.append(info)
        if callback is not None:
            callback(state, info)
    return state, infos


def counting(callback, total: int):
    """An :func:`anneal` callback that calls ``callback(done, total)`` with the stages the
    state has done (``state.stage``): a progress bar's update; None stays None."""
    if callback is None:
        return None
    return lambda state, info: callback(state.stage, total)


def stack(infos) -> dict[str, np.ndarray]:
    """The stages' fields as arrays (``float``), :data:`STAGE_FIELDS` first, then the
    engine's own values in the order the first stage that has them names them; a stage
    without one of them gets ``nan`` there."""
    infos = list(infos)
    out = {key: np.array([float(getattr(i, key)) for i in infos]) for key in STAGE_FIELDS}
    names = dict.fromkeys(name for info in infos for name in info.values)
    for name in names:
        out[name] = np.array([float(info.values.get(name, np.nan)) for info in infos])
    return out


def total_counts(infos) -> Counts:
    """The sum of the stages' :class:`~.counts.Counts`."""
    return sum((info.counts for info in infos), Counts())
