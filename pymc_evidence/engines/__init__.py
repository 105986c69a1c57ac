"""Particle engines: batched log densities over particles, HMC/RWM kernels, and the
annealing families (forward and reverse AIS, LIS, resample-move SMC / ARM).

Pure ``step`` functions with small ``State`` / ``Info`` records (blackjax style); the random
generator is always passed explicitly. Each annealing family is a kernel built once from its
fixed configuration with ``step(rng, state) -> (state, StageInfo)``, run by the one driver
:func:`~.stages.anneal`; its per-run record stacks the stages (:mod:`.stages`).
"""

from .ais import AISKernel, AISState, pilot_schedule, run_forward_ais, run_reverse_ais
from .batched import BatchedDensity, batched_log_densities
from .counts import Counts
from .hmc import Info, State, hmc_step, init_state, rwm_step
from .lis import LISState, interpolate_step_sizes, run_lis
from .records import AISInfo, LISInfo, ReverseAISInfo, SMCRunInfo
from .schedules import (
    adaptive_schedule,
    geometric_schedule,
    linear_schedule,
    sigmoidal_schedule,
)
from .settings import KernelSettings, LinkSettings, SMCSettings
from .stages import StageInfo, anneal, stack

__all__ = [
    "AISInfo",
    "AISKernel",
    "AISState",
    "BatchedDensity",
    "Counts",
    "Info",
    "KernelSettings",
    "LISInfo",
    "LISState",
    "LinkSettings",
    "ReverseAISInfo",
    "SMCRunInfo",
    "SMCSettings",
    "StageInfo",
    "State",
    "adaptive_schedule",
    "anneal",
    "batched_log_densities",
    "geometric_schedule",
    "hmc_step",
    "init_state",
    "interpolate_step_sizes",
    "linear_schedule",
    "pilot_schedule",
    "run_forward_ais",
    "run_lis",
    "run_reverse_ais",
    "rwm_step",
    "sigmoidal_schedule",
    "stack",
]
