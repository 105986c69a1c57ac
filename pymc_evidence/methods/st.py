"""``method="st"``: simulated tempering with Rao-Blackwellized evidence (Carlson et al.).

Runs :class:`~pymc_evidence.SimulatedTempering` through ``pm.sample`` from the problem's
base; the trace is turned into the estimate by :mod:`pymc_evidence.results.st`.
"""

from __future__ import annotations

import inspect

import pymc as pm

from ..results.st import st_parts
from ..steps.simulated_tempering import SimulatedTempering
from ._nuts import initvals_from_base
from ._spec import MethodResult, MethodSpec

__all__ = ["SPEC"]

#: Options of the step method that users may set through ``sample_evidence``.
_STEP_OPTIONS = {
    name: p.default
    for name, p in inspect.signature(SimulatedTempering.__init__).parameters.items()
    if p.kind is p.KEYWORD_ONLY and name not in ("base", "potentials", "random_seed", "model")
}
_STEP_OPTIONS["target_accept"] = 0.8


def run(problem, options: dict) -> MethodResult:
    """Fit the base, run :class:`~pymc_evidence.SimulatedTempering`, estimate."""
    base = problem.base
    step_options = {name: options[name] for name in _STEP_OPTIONS}
    step = SimulatedTempering(
        base=base, potentials=problem.potentials, model=problem.model, **step_options
    )
    seed = problem.int_seed("nuts")
    raw = pm.sample(
        **problem.sampling.as_dict(),
        step=step,
        initvals=initvals_from_base(problem, problem.sampling.chains, with_u=False),
        random_seed=seed,
        compute_convergence_checks=False,
        model=problem.model,
    )
    est, groups, layout, attrs = st_parts(raw, betas=step.betas, rng=problem.rng("resample"))
    return MethodResult(est, groups, layout, attrs)


SPEC = MethodSpec(
    name="st",
    description="simulated tempering on a ladder of temperatures, Rao-Blackwellized (RTS) evidence",
    run=run,
    options=_STEP_OPTIONS,
)
