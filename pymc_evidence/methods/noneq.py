"""``method="ais"``, ``"rais"``, ``"bar"``: forward AIS, reverse AIS and BAR (Habeck 2017).

All particles move together through the problem's batched density. The forward run tunes
its HMC step size between stages; the reverse run reuses exactly those kernels in reverse
order, as the fluctuation theorems behind BAR require. Every particle is an independent
run, so standard errors come from the spread over particles.
"""

from __future__ import annotations

import numpy as np

from ..engines.ais import (
    geometric_schedule,
    linear_schedule,
    run_forward_ais,
    run_reverse_ais,
    sigmoidal_schedule,
)
from ..estimators.noneq import works_log_evidence
from ..progress import progress_bar
from ._particles import (
    particle_result,
    pilot_run,
    reverse_start,
    run_checks,
    with_chain_spread,
)
from ._spec import MethodResult, MethodSpec

__all__ = ["AIS_SPEC", "BAR_SPEC", "RAIS_SPEC", "SCHEDULES"]

SCHEDULES = ("adaptive", "sigmoidal", "geometric", "linear")
_MAKERS = {"sigmoidal": sigmoidal_schedule, "geometric": geometric_schedule}
_MAKERS["linear"] = linear_schedule


def _schedule(problem, density, options, rng):
    """``(betas, step_sizes, name)``; ``step_sizes`` None means tuned during the forward run."""
    schedule, n_stages = options["schedule"], int(options["n_stages"])
    if not isinstance(schedule, str):
        return np.asarray(schedule, dtype=float), None, "custom"
    if schedule == "adaptive":
        n_pilot = max(64, int(options["n_particles"]) // 4)
        betas, steps, _ = pilot_run(
            problem, density, n_pilot, n_stages, rng, "AIS pilot", n_leapfrog=options["n_leapfrog"]
        )
        return betas, steps, schedule
    return _MAKERS[schedule](n_stages), None, schedule


def _stage_values(prefix, info) -> dict:
    out = {
        f"{prefix}_{k}": getattr(info, k) for k in ("acceptance", "step_sizes", "mean_increment")
    }
    if getattr(info, "ess", None) is not None:
        out[f"{prefix}_ess"] = info.ess
    return out


def _run(problem, options, method) -> MethodResult:
    rng = problem.rng("method")
    density = problem.density()
    n, n_leapfrog = int(options["n_particles"]), int(options["n_leapfrog"])
    betas, steps, schedule_name = _schedule(problem, density, options, rng)
    x0 = problem.base_draws(n, rng)
    counts = density.counts()
    kernel = {"n_leapfrog": n_leapfrog, "x0": x0, **({} if steps is None else {"step_size": steps})}
    show = problem.sampling.progressbar
    with progress_bar("AIS forward", len(betas) - 1, enabled=show) as update:
        work_f, info_f = run_forward_ais(
            density, problem.base, betas, n, rng, **kernel, callback=update
        )
    stage = {"beta": betas, **_stage_values("forward", info_f)}
    physical_r = start = None
    if method in ("rais", "bar"):
        start = reverse_start(problem, options["posterior"], n, rng)
        with progress_bar("AIS reverse", len(betas) - 1, enabled=show) as update:
            work_r, info_r = run_reverse_ais(
                density,
                betas,
                start.x,
                rng,
                step_sizes=info_f.step_sizes,
                n_leapfrog=n_leapfrog,
                scale=info_f.scale,
                callback=update,
            )
        stage.update(_stage_values("reverse", info_r))
        physical_r = -work_r  # the engine's reverse work is -log w; estimators take physical
    est = works_log_evidence(method, work_f=work_f, work_r=physical_r)
    est, spread = with_chain_spread(
        est, start, lambda keep: works_log_evidence(method, work_f, physical_r[keep]).log_z
    )
    est = run_checks(
        est,
        density,
        counts,
        work_f=work_f,
        physical_r=physical_r,
        n_div=None if start is None else start.n_divergences,
        messages=() if start is None else (*start.messages, *spread),
    )
    attrs = {"n_particles": n, "n_stages": int(options["n_stages"]), "n_leapfrog": n_leapfrog}
    return particle_result(
        problem,
        est,
        start,
        runs={"work_forward": work_f, "work_reverse": physical_r},
        stage=stage,
        forward=(info_f.x, -work_f),
        attrs={**attrs, "schedule": schedule_name},
    )


def _check(options):
    if int(options["n_particles"]) < 2 or int(options["n_stages"]) < 1:
        raise ValueError("n_particles must be >= 2 and n_stages >= 1")
    schedule = options["schedule"]
    if isinstance(schedule, str) and schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES} or an array, got {schedule!r}")


_OPTIONS = {
    "n_particles": 256,
    "n_stages": 200,
    "n_leapfrog": 10,
    "schedule": "sigmoidal",
}
_REVERSE = {**_OPTIONS, "posterior": None}


def _spec(name, description, options):
    def run(problem, opts):
        return _run(problem, opts, name)

    nuts = "none" if name == "ais" else "any"  # rais/bar start from NUTS draws
    return MethodSpec(
        name=name, description=description, run=run, options=options, check=_check, nuts=nuts
    )


AIS_SPEC = _spec(
    "ais", "forward annealed importance sampling from the base (a stochastic lower bound)", _OPTIONS
)
RAIS_SPEC = _spec(
    "rais", "reverse AIS from posterior draws to the base (a stochastic upper bound)", _REVERSE
)
BAR_SPEC = _spec("bar", "forward and reverse AIS combined by Bennett's acceptance ratio", _REVERSE)
