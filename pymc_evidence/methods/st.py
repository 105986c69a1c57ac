"""``method="st"``: simulated tempering with Rao-Blackwellized evidence (Carlson et al.).

Runs :class:`~pymc_evidence.SimulatedTempering` through ``pm.sample`` from the problem's
base; the trace is turned into the estimate by :mod:`pymc_evidence.results.st`.
"""

from __future__ import annotations

import inspect

from ..results.st import st_parts
from ..steps.simulated_tempering import SimulatedTempering
from ._nuts import refuse_many_modes, sample_step, with_base_weights_se
from ._spec import MethodResult, MethodSpec

__all__ = ["SPEC"]

#: Options of the step method that users may set through ``sample_evidence``.
_STEP_OPTIONS = {
    name: p.default
    for name, p in inspect.signature(SimulatedTempering.__init__).parameters.items()
    if p.kind is p.KEYWORD_ONLY
    and name not in ("base", "potentials", "random_seed", "model", "warn_tempered")
}
#: The step's target acceptance unless the call sets ``target_accept``.
TARGET_ACCEPT = 0.8


def run(problem, options: dict) -> MethodResult:
    """Fit the base, run :class:`~pymc_evidence.SimulatedTempering`, estimate."""
    sampling = problem.sampling
    problem.nuts_used.add("pymc")
    step = SimulatedTempering(
        base=problem.tempering_base,
        potentials=problem.potentials,
        model=problem.model,
        warn_tempered=False,  # the trace is read by st_parts below
        target_accept=sampling.target_accept or TARGET_ACCEPT,
        **{name: options[name] for name in _STEP_OPTIONS},
        **sampling.nuts_sampler_kwargs,
        **sampling.compile_kwargs,
    )
    raw = sample_step(problem, step, random_seed=problem.int_seed("nuts"))
    est, groups, layout, attrs = st_parts(raw, betas=step.betas, rng=problem.rng("resample"))
    return MethodResult(with_base_weights_se(est, problem.tempering_base), groups, layout, attrs)


SPEC = MethodSpec(
    name="st",
    description="simulated tempering on a ladder of temperatures, Rao-Blackwellized (RTS) evidence",
    run=run,
    options=_STEP_OPTIONS,
    nuts="step",
    ready=refuse_many_modes,
)
