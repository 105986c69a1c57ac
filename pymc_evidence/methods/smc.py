"""``method="smc"`` and ``"arm"``: tempered resample-move SMC and its adaptive form.

Runs ``n_runs`` independent SMC runs (:func:`~pymc_evidence.engines.smc.run_resample_move`)
on the problem's batched density, each seeded by its own child of the method stream, and
combines them with :func:`~pymc_evidence.estimators.smc.smc_log_evidence`. ``posterior``
holds each run's final, equally weighted particles as one chain.

With ``schedule="pilot"`` (the default) a pilot run (stream ``"pilot"``) chooses the
temperatures adaptively first and every run follows them: a run that picks its own next
temperature from its own weights is biased low, since an unusually heavy particle shortens
the step that would have counted it in full.

The options are :class:`~pymc_evidence.methods.smc_options.SMCOptions` (the same for both
methods); the engine's settings made from them once, as they are checked, are completed for
the problem by :meth:`~pymc_evidence.methods.smc_options.SMCOptions.run_settings`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from pymc.backends.arviz import find_observations
from threadpoolctl import threadpool_limits

from ..engines.counts import Counts
from ..engines.smc import STAGE_KEYS, SMCSettings, run_resample_move
from ..estimators.mcse import ess_mean
from ..estimators.smc import smc_log_evidence
from ..progress import smc_progress
from ._particles import run_checks
from ._remote import remote_job, submit_runs
from ._runs import map_runs
from ._spec import SMC_RUNS, MethodResult, MethodSpec
from .smc_options import (
    FEW_MOVES,
    FEW_MOVES_MAX_DIM,
    HYPER_LEAPFROG,
    LEAPFROG,
    MOVES,
    SMCOptions,
    default_n_leapfrog,
    default_n_moves,
    default_n_particles,
)

__all__ = [
    "ARM_SPEC",
    "FEW_MOVES",
    "FEW_MOVES_MAX_DIM",
    "HYPER_LEAPFROG",
    "LEAPFROG",
    "MOVES",
    "SMC_SPEC",
    "SMCOptions",
    "default_n_leapfrog",
    "default_n_particles",
    "default_n_moves",
]


def posterior_ess(x: np.ndarray) -> float:
    """The smallest effective sample size over the coordinates of the runs' final draws
    ``x`` (runs, particles, d): each run a chain, the copies resampling left beside each
    other counted as correlated, the runs' disagreement through the spread of their means
    (:func:`~pymc_evidence.estimators.mcse.ess_mean`).

    >>> x = np.random.default_rng(0).normal(size=(4, 250, 2))
    >>> bool(posterior_ess(np.repeat(x, 2, axis=1)) < 0.6 * 2000)  # each draw twice
    True
    """
    return float(min(ess_mean(x[:, :, k]) for k in range(x.shape[2])))


def _estimate(method, runs, counts):
    """The pooled estimate of the runs and the per-run values of the ``log_evidence`` group;
    ``counts``: what the runs and their pilot met."""
    log_z = np.array([lz for lz, _ in runs])
    infos = [info for _, info in runs]
    moves = np.array([info.n_particle_moves for info in infos], dtype=float)
    n_stages = np.array([info.n_stages for info in infos], dtype=float)
    diagnostics = {
        "mean_n_stages": float(np.mean(n_stages)),
        "n_particle_moves": float(np.sum(moves)),
        "mean_particles_per_stage": float(
            np.mean([np.mean(info.n_particles[1:]) for info in infos])
        ),
        "n_density_calls": float(sum(info.n_density_calls for info in infos)),
        "posterior_ess": posterior_ess(np.stack([info.x for info in infos])),
    }
    proxy = np.array([info.variance_proxy for info in infos])
    est = smc_log_evidence(log_z, proxy, method=method, diagnostics=diagnostics)
    after = sum((info.posterior_counts for info in infos), Counts())
    est = run_checks(est, counts, posterior_counts=after)
    layout = {
        "chain_dim": "run",
        "chain_values": {"variance_proxy": proxy, "n_stages": n_stages, "n_particle_moves": moves},
        "stage_values": {key: [getattr(info, key) for info in infos] for key in STAGE_KEYS},
    }
    return est, layout


def density_work(problem) -> int:
    """Row evaluations of one density call: the observed values, each evaluated at every
    Newton step and quadrature point where a hierarchy's group effects are integrated out
    (``nodes ** k`` points for ``k`` effects a group)."""
    rows = observed_size(problem.source or problem.model)
    rule = getattr(problem.summed, "rule", None) if problem.hyperparameters_only else None
    if rule is None:
        return rows
    work = getattr(rule, "work", None)  # two levels of quadrature: their own count
    return rows * (
        work if work is not None else rule.steps + rule.nodes ** len(problem.summed.names)
    )


def observed_size(model) -> int:
    """How many observed values ``model`` holds (what each density call reads).

    >>> import pymc as pm
    >>> with pm.Model() as model:
    ...     _ = pm.Normal("y", 0.0, 1.0, observed=np.zeros((3, 2)))
    >>> observed_size(model)
    6
    """
    return int(sum(np.size(value) for value in find_observations(model).values()))


def _pilot_schedule(problem, density, settings, n_particles, callback):
    """One adaptive run (stream ``"pilot"``) whose betas every run then follows (its record).

    Choosing each run's next temperature from its own particles' weights makes ``Zhat``
    biased (an unusually heavy particle shortens the step that would have counted it in
    full); runs on a schedule fixed in advance are unbiased in ``Z``. On the 175-d radon
    varying slopes per-run schedules were biased low with poor coverage; the pilot's
    schedule with moves until decorrelation roughly halved the bias (measured in
    :doc:`/hard_models`, "The default over ten seeds"). The pilot moves at every stage
    whatever ``move_weighted`` says, so that the schedule is the one the moves give; a
    pilot that left weighted particles in place chose fewer stages, and the runs on its
    schedule spread further (measured in :doc:`/performance`, "Moves after
    resampling only").
    """
    rng = problem.rng("pilot")
    pilot = replace(settings, schedule="adaptive", arm=False, move_weighted=True)
    x0 = problem.base_draws(n_particles, rng)
    with threadpool_limits(limits=1):  # as the runs in worker processes
        _, info = run_resample_move(density, x0, rng, pilot, callback=callback, finish=False)
    return info


@dataclass(frozen=True)
class _Run:
    """One run from fresh base draws: ``_Run(...)(problem, density, seed, callback)``
    (a value, so that it pickles to an executor's worker)."""

    settings: SMCSettings
    n_particles: int

    def __call__(self, problem, density, seed, callback):
        rng = np.random.default_rng(seed)
        x0 = problem.base_draws(self.n_particles, rng)
        return run_resample_move(density, x0, rng, self.settings, callback=callback)


def _run(problem, options: SMCOptions, method: str, arm: bool) -> MethodResult:
    hyper = problem.hyperparameters_only
    settings = options.run_settings(arm, problem.space.ndim, hyper, density_work(problem))
    n_particles, n_runs = options.particles(hyper), options.n_runs
    density, counts = problem.density(), Counts()
    n_pilot = options.pilot_size(n_particles) if options.uses_pilot else None
    seeds = problem.seed_of("method").spawn(n_runs)
    with smc_progress(problem.sampling.progressbar, n_runs, pilot=n_pilot is not None) as bar:
        if n_pilot is not None:
            info = _pilot_schedule(problem, density, settings, n_pilot, bar.callback_for(-1))
            settings = replace(settings, schedule=np.asarray(info.beta, dtype=float))
            counts = info.counts  # the checks count the pilot with the runs
            bar.done(-1)

        job, executor = _Run(settings, n_particles), problem.sampling.executor
        if executor is not None:
            runs = submit_runs(remote_job(problem, job), seeds, executor, on_done=bar.done)
        else:
            runs = map_runs(
                lambda index, seed, callback: job(problem, density, seed, callback),
                seeds,
                density,
                cores=problem.sampling.cores,
                callback_for=bar.callback_for,
                on_done=bar.done,
            )
    counts = sum((info.counts for _, info in runs), counts)
    est, layout = _estimate(method, runs, counts)
    x = np.stack([info.x for _, info in runs])
    groups = {"posterior": problem.posterior_dataset(x)}
    attrs = options.to_attrs(settings, n_particles, problem.base.kind, n_pilot)
    return MethodResult(est, groups, layout, attrs)


def _spec(name, description, *, arm: bool):
    """The spec of ``name``: ARM's expansions of hard steps where ``arm``."""

    def run(problem, options):
        return _run(problem, options, name, arm)

    return MethodSpec(
        name=name,
        description=description,
        run=run,
        options=SMCOptions,
        distributes=True,
        family=SMC_RUNS,
        sizes="n_particles (particles per run) and n_runs (independent runs, their spread is "
        "the se)",
    )


SMC_SPEC = _spec(
    "smc",
    "tempered resample-move SMC (default) from the base, temperatures fixed by a pilot run, "
    "batched HMC moves",
    arm=False,
)
ARM_SPEC = _spec(
    "arm", "resample-move SMC with adaptive particle counts on hard steps (ARM)", arm=True
)
