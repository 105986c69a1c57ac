"""Particle engines: batched log densities over particles, HMC/RWM kernels and AIS.

Pure ``step`` functions with small ``State`` / ``Info`` records (blackjax style); the random
generator is always passed explicitly.
"""

from .ais import (
    adaptive_schedule,
    geometric_schedule,
    linear_schedule,
    pilot_schedule,
    run_forward_ais,
    run_reverse_ais,
    sigmoidal_schedule,
)
from .batched import BatchedDensity, batched_log_densities
from .counts import Counts
from .hmc import Info, State, hmc_step, init_state, rwm_step
from .lis import interpolate_step_sizes, run_lis
from .records import AISInfo, LISInfo, ReverseAISInfo, SMCRunInfo
from .settings import KernelSettings, LinkSettings, SMCSettings

__all__ = [
    "AISInfo",
    "BatchedDensity",
    "Counts",
    "Info",
    "KernelSettings",
    "LISInfo",
    "LinkSettings",
    "ReverseAISInfo",
    "SMCRunInfo",
    "SMCSettings",
    "State",
    "adaptive_schedule",
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
]
