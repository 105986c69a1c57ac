"""``method="ais"``, ``"rais"``, ``"bar"``: forward AIS, reverse AIS and BAR (Habeck 2017).

All particles move together through the problem's batched density. The forward run tunes
its HMC step size between stages; the reverse run reuses exactly those kernels in reverse
order, as the fluctuation theorems behind BAR require. Every particle is an independent
run, so standard errors come from the spread over particles.

Their options are :class:`~pymc_evidence.methods.noneq_options.AISOptions` (``ais``) and
:class:`~pymc_evidence.methods.noneq_options.ReverseAISOptions` (``rais``, ``bar``); what
else sets the three apart (reverse runs, the reruns with more stages or particles) is each
spec's ``_Variant``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import numpy as np

from ..engines.ais import (
    geometric_schedule,
    linear_schedule,
    run_forward_ais,
    run_reverse_ais,
    sigmoidal_schedule,
)
from ..engines.counts import Counts
from ..engines.settings import KernelSettings
from ..estimators.noneq import works_log_evidence
from ..progress import progress_bar
from ..results.diagnostics import PARETO_K_MAX, pareto_khat
from ._nuts import refuse_modes_beyond_chains
from ._particles import (
    particle_result,
    pilot_run,
    reverse_start,
    run_checks,
    with_chain_spread,
)
from ._spec import ANNEALING, MethodResult, MethodSpec
from .noneq_options import SCHEDULES, AISOptions, AnnealOptions, ReverseAISOptions

__all__ = [
    "AIS_SPEC",
    "AISOptions",
    "AnnealOptions",
    "BAR_SPEC",
    "HEAVY_PARTICLE_FACTOR",
    "MAX_PARTICLE_FACTOR",
    "MAX_STAGE_FACTOR",
    "RAIS_SPEC",
    "ReverseAISOptions",
    "SCHEDULES",
    "WORK_SD_MAX",
    "more_particles",
    "more_stages",
]

_MAKERS = {"sigmoidal": sigmoidal_schedule, "geometric": geometric_schedule}
_MAKERS["linear"] = linear_schedule
#: Most sd (nats) of the forward works over runs before the runs are repeated with more
#: stages (:func:`more_stages`): ``exp(1.5^2) = 9.5`` runs see the weights' mean, far
#: fewer than the 256 of the default.
WORK_SD_MAX = 1.5
#: Most stages a rerun multiplies the stages by.
MAX_STAGE_FACTOR = 16.0
#: Most particles a rerun of ``ais`` multiplies the particles by (:func:`more_particles`).
MAX_PARTICLE_FACTOR = 16.0
#: ... and at least this many times where the works' weights are heavy-tailed.
HEAVY_PARTICLE_FACTOR = 4.0


@dataclass(frozen=True)
class _Variant:
    """How ``ais``, ``rais`` and ``bar`` run besides their options (which works enter the
    estimate is their spec's :attr:`~pymc_evidence.methods._spec.MethodSpec.works`):
    whether reverse runs start from posterior draws, whether the runs are repeated with
    more stages (:func:`more_stages`) and then with more particles (:func:`more_particles`)
    where the works spread too widely."""

    reverse: bool
    more_stages: bool
    more_particles: bool


def _schedule(problem, density, options, rng):
    """``(betas, step_sizes, name, counts)``; ``step_sizes`` None means tuned during the
    forward run; ``counts``: the pilot run's (none without one)."""
    schedule, n_stages = options.schedule, options.n_stages
    if not isinstance(schedule, str):
        return np.asarray(schedule, dtype=float), None, "custom", Counts()
    if schedule == "adaptive":
        n_pilot = max(64, options.n_particles // 4)
        betas, steps, pilot = pilot_run(
            problem,
            density,
            n_pilot,
            n_stages,
            rng,
            "AIS pilot",
            kernel=KernelSettings(n_leapfrog=options.n_leapfrog),
        )
        return betas, steps, schedule, pilot.counts
    return _MAKERS[schedule](n_stages), None, schedule, Counts()


def _stage_values(prefix, info) -> dict:
    out = {
        f"{prefix}_acceptance": info.acceptance,
        f"{prefix}_step_sizes": info.step_size,  # the results schema's name
        f"{prefix}_mean_increment": info.mean_increment,
    }
    if getattr(info, "ess", None) is not None:
        out[f"{prefix}_ess"] = info.ess
    return out


def _forward(problem, density, options, rng, label="AIS forward"):
    """One set of forward runs: ``(betas, schedule name, work, info)`` and the counts of the
    runs and their pilot."""
    n = options.n_particles
    betas, steps, schedule_name, counts = _schedule(problem, density, options, rng)
    x0 = problem.base_draws(n, rng)
    kernel = KernelSettings(n_leapfrog=options.n_leapfrog)
    kernel = kernel if steps is None else replace(kernel, step_size=steps)
    with progress_bar(label, len(betas) - 1, enabled=problem.sampling.progressbar) as update:
        work_f, info_f = run_forward_ais(
            density, problem.base, betas, n, rng, kernel, x0=x0, callback=update
        )
    return (betas, schedule_name, work_f, info_f), counts + info_f.counts


def more_stages(spread: float, n_stages: int, max_stages: int) -> int | None:
    """The stages to anneal again with where the works spread too widely, or None.

    The log-mean-exp of works whose sd over runs is ``s`` sits about ``s^2 / 2`` low until
    the runs number ``exp(s^2)`` (the weights are then too heavy-tailed for the runs to see
    their mean), and its se misses that. Near the quasi-static limit the works' variance
    falls as ``1 / n_stages``, so ``n_stages (s / WORK_SD_MAX)^2`` stages (at least twice,
    at most :data:`MAX_STAGE_FACTOR` times and ``max_stages``) bring it to
    :data:`WORK_SD_MAX`. At the defaults a 61-d latent random walk's works spread more
    widely and ``ais`` was low; with the stages raised it was close, while hierarchies,
    regressions, mixtures, LKJ and latent GPs spread less and are not rerun (measured in
    :doc:`/methods`, "Forward AIS (``ais``)").

    Parameters
    ----------
    spread : float
        The sd of the works the estimate rests on (forward for ``ais``, the larger of
        forward and reverse for ``bar``).
    n_stages, max_stages : int
        The stages just run, and the most to run.

    Examples
    --------
    >>> more_stages(3.0, 200, 3200), more_stages(1.0, 200, 3200), more_stages(9.0, 200, 1000)
    (800, None, 1000)
    """
    if not spread > WORK_SD_MAX or n_stages >= max_stages:  # nan: left to the checks
        return None
    factor = min(max((spread / WORK_SD_MAX) ** 2, 2.0), MAX_STAGE_FACTOR)
    return min(int(np.ceil(n_stages * factor)), int(max_stages))


def more_particles(
    spread: float, n_particles: int, max_particles: int, khat: float = float("nan")
) -> int | None:
    """The particles for a last ``ais`` run where the works still spread too widely after
    the stages were raised (:func:`more_stages`), or None.

    A spread that more stages do not narrow comes from the base weighing separated modes
    otherwise than the posterior does, not from annealing too fast: the weights stay heavy
    tailed, and their mean needs about ``exp(s^2)`` runs. ``n exp(s^2 - WORK_SD_MAX^2)``
    particles (at least twice, at most :data:`MAX_PARTICLE_FACTOR` times and
    ``max_particles``) bring the runs to what ``WORK_SD_MAX`` asks of ``n``: on the two
    Gaussian shells (seven modes in the base) the works still spread too widely after the
    stages were raised, and ``ais`` was low until the particles were raised (measured in
    :doc:`/methods`, "Forward AIS (``ais``)"). Works within ``WORK_SD_MAX`` whose
    weights are still heavy-tailed (Pareto ``khat`` above
    :data:`~pymc_evidence.results.diagnostics.PARETO_K_MAX`: a few runs carry the mean) get
    :data:`HEAVY_PARTICLE_FACTOR` times the particles.

    Examples
    --------
    >>> [more_particles(spread, 256, 1024) for spread in (2.2, 1.6, 1.0)]
    [1024, 512, None]
    >>> more_particles(1.0, 256, 4096, khat=1.3)
    1024
    """
    heavy = khat > PARETO_K_MAX  # nan: not heavy
    if not (spread > WORK_SD_MAX or heavy) or n_particles >= max_particles:
        return None  # a nan spread is left to the checks
    least = HEAVY_PARTICLE_FACTOR if heavy else 2.0
    factor = min(max(np.exp(spread**2 - WORK_SD_MAX**2), least), MAX_PARTICLE_FACTOR)
    return min(int(np.ceil(n_particles * factor)), int(max_particles))


def _reverse(problem, density, betas, info_f, start, options, rng):
    """Reverse runs from ``start`` through the forward runs' kernels: physical works, info."""
    show = problem.sampling.progressbar
    with progress_bar("AIS reverse", len(betas) - 1, enabled=show) as update:
        work_r, info_r = run_reverse_ais(
            density,
            betas,
            start.x,
            rng,
            KernelSettings(
                step_size=info_f.step_size,
                n_leapfrog=options.n_leapfrog,
                scale=info_f.scale,
            ),
            callback=update,
        )
    return -work_r, info_r  # the engine's reverse work is -log w; estimators take physical


def _anneal(problem, density, options, rng, variant: _Variant, start_of):
    """Forward runs (and reverse runs, from ``start_of()``, where ``variant.reverse``),
    annealed once again with more stages where the works spread too widely
    (:func:`more_stages`) and ``variant.more_stages``, and once more with more particles
    where they still do (:func:`more_particles`) and ``variant.more_particles``. ``rais``
    is left as asked: on the 61-d latent random walk its error followed its NUTS starts,
    not its stages (measured in :doc:`/methods`, "Forward AIS (``ais``)"). Returns the
    options used, the counts of the runs that are kept (and their pilot), ``(betas,
    schedule, work_f, info_f)`` and ``(physical_r, info_r)`` (None, None without reverse
    runs)."""

    def once(opts):
        forward, counts = _forward(problem, density, opts, rng)
        if not variant.reverse:
            return forward, (None, None), counts
        reverse = _reverse(problem, density, forward[0], forward[3], start_of(), opts, rng)
        return forward, reverse, counts + reverse[1].counts

    forward, reverse, counts = once(options)
    if not variant.more_stages:  # rais: its error follows its NUTS starts (see above)
        return options, counts, forward, reverse
    works = [forward[2], reverse[0]] if variant.reverse else [forward[2]]
    spread = max(float(np.std(w)) for w in works)
    raised = more_stages(spread, options.n_stages, options.max_stages)
    if raised is not None:  # once more at most: the cost stays bounded where modes keep it wide
        options = replace(options, n_stages=raised)
        forward, reverse, counts = once(options)  # the checks count the runs kept
    if variant.more_particles and raised is not None:  # still wide after more stages
        wider = more_particles(
            float(np.std(forward[2])), options.n_particles, options.max_particles,
            khat=pareto_khat(-np.asarray(forward[2], float)),
        )  # fmt: skip
        if wider is not None:  # once
            options = replace(options, n_particles=wider)
            forward, reverse, counts = once(options)
    return options, counts, forward, reverse


def _run(problem, options: AnnealOptions, variant: _Variant, spec: MethodSpec) -> MethodResult:
    rng = problem.rng("method")
    density = problem.density()
    n = options.n_particles
    start_of = functools.cache(lambda: reverse_start(problem, options.given_draws, n, rng))
    options, counts, forward, (physical_r, info_r) = _anneal(
        problem, density, options, rng, variant, start_of
    )
    betas, schedule_name, work_f, info_f = forward
    stage = {"beta": betas, **_stage_values("forward", info_f)}
    start = None
    if variant.reverse:
        start = start_of()
        stage.update(_stage_values("reverse", info_r))
    used = {"forward": work_f, "reverse": physical_r}
    used = {direction: used[direction] for direction in spec.works}  # the method's works

    def estimate(keep=slice(None)):  # the estimate of the reverse runs ``keep`` and all others
        given = {d: w[keep] if d == "reverse" else w for d, w in used.items()}
        return works_log_evidence(given.get("forward"), given.get("reverse"))

    est, spread = with_chain_spread(estimate(), start, lambda keep: estimate(keep).log_z)
    est = run_checks(
        est,
        counts,
        weights={direction: -np.asarray(w, float) for direction, w in used.items()},
        work_f=work_f,
        physical_r=physical_r,
        n_div=None if start is None else start.n_divergences,
        messages=() if start is None else (*start.messages, *spread),
    )
    return particle_result(
        problem,
        est,
        start,
        runs={"work_forward": work_f, "work_reverse": physical_r},
        stage=stage,
        forward=(info_f.x, -work_f),
        attrs=options.to_attrs(),
    )


def _spec(name, description, options, *, works, more_stages, more_particles=False, sizes=""):
    reverse = "reverse" in works
    variant = _Variant(reverse, more_stages, more_particles)

    def run(problem, opts):
        return _run(problem, opts, variant, spec)

    spec = MethodSpec(
        name=name,
        description=description,
        run=run,
        options=options,
        nuts="any" if reverse else "none",  # reverse runs start from NUTS draws
        ready=refuse_modes_beyond_chains if reverse else None,
        sizes=sizes,
        family=ANNEALING,
        works=works,
    )
    return spec


AIS_SPEC = _spec(
    "ais",
    "forward annealed importance sampling from the base (a stochastic lower bound)",
    AISOptions,
    works=("forward",),
    more_stages=True,
    more_particles=True,
    sizes="n_particles (annealing runs moved together) and n_stages",
)
RAIS_SPEC = _spec(
    "rais",
    "reverse AIS from posterior draws to the base (a stochastic upper bound)",
    ReverseAISOptions,
    works=("reverse",),
    more_stages=False,
)
BAR_SPEC = _spec(
    "bar",
    "forward and reverse AIS combined by Bennett's acceptance ratio",
    ReverseAISOptions,
    works=("forward", "reverse"),
    more_stages=True,
)
