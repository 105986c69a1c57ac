"""``method="smc"`` and ``"arm"``: tempered resample-move SMC and its adaptive form.

Runs ``n_runs`` independent SMC runs (:func:`~pymc_evidence.engines.smc.run_resample_move`)
on the problem's batched density, each seeded by its own child of the method stream, and
combines them with :func:`~pymc_evidence.estimators.smc.smc_log_evidence`. ``posterior``
holds each run's final, equally weighted particles as one chain.

With ``schedule="pilot"`` (the default) a pilot run (stream ``"pilot"``) chooses the
temperatures adaptively first and every run follows them: a run that picks its own next
temperature from its own weights is biased low, since an unusually heavy particle shortens
the step that would have counted it in full.
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
from ._spec import MethodResult, MethodSpec

__all__ = [
    "ARM_SPEC",
    "FEW_MOVES",
    "FEW_MOVES_MAX_DIM",
    "HYPER_LEAPFROG",
    "LEAPFROG",
    "MOVES",
    "SMC_SPEC",
    "default_n_leapfrog",
    "default_n_particles",
    "default_n_moves",
]

#: HMC steps per stage at least (``n_moves=None``, the default): :data:`FEW_MOVES` up to
#: :data:`FEW_MOVES_MAX_DIM` dimensions, :data:`MOVES` above; more follow, five at a time,
#: while the weights have not forgotten the positions the stage began from (the
#: ``decorrelation`` rule). Up to that dimension the fewer moves made warm calls faster at
#: the same error and coverage; above it they let the errors of a long random walk and the
#: radon slopes grow and their coverage fall: there the weights' correlation passes the
#: check before the slow directions have moved (measured in :doc:`/performance`, "What a
#: user meets: the first call on a new model").
FEW_MOVES = 5
MOVES = 10
FEW_MOVES_MAX_DIM = 30


#: Leapfrog steps of an HMC move (``n_leapfrog=None``, the default): :data:`LEAPFROG`, or
#: :data:`HYPER_LEAPFROG` on the hyperparameters of a hierarchy whose group effects were
#: integrated out (:mod:`~pymc_evidence.transforms.group_effects`), a space of a few
#: dimensions holding one bump. There the tuned step is a large share of the particles'
#: spread, and ten leapfrogs run most of an orbit, at the price of every row's quadrature
#: per leapfrog; five reach as far as the moves need (the ``decorrelation`` rule adds
#: moves where they do not). Measured in :doc:`/performance`, "What a user meets: the
#: first call on a new model" (twentieth session).
LEAPFROG = 10
HYPER_LEAPFROG = 5

#: ``posterior_moves="auto"``: HMC steps of every particle at ``beta = 1`` after the last
#: reweighting; where a density call does more than :data:`LIGHT_ROWS` row evaluations
#: (:func:`density_work`) at most :data:`POSTERIOR_BUDGET` times the stages' own moves per
#: particle (a run that went from the base to the posterior in one step gets none: on a
#: very large regression the moves would cost many times its run; on a thousand-group
#: hierarchy, where each row is evaluated at every quadrature node, five cost as much as
#: the stages). On bambi's 12-group ``y ~ 1 + x + (1|g)`` they brought the group scale's
#: 5 % quantile from too high to close to its exact value (measured in
#: :doc:`/hard_models`, "The posterior's tails").
POSTERIOR_MOVES = 5
POSTERIOR_BUDGET = 0.4
LIGHT_ROWS = 5_000

#: Particles of a run (``n_particles=None``, the default): :data:`PARTICLES`, or
#: :data:`HYPER_PARTICLES` on an integrated hierarchy's hyperparameters, where every
#: particle's density call costs each group's quadrature and a few dimensions need no
#: more to place the stages and carry the weights;
#: the runs' spread still gives the se.
PARTICLES = 1000
HYPER_PARTICLES = 500


def default_n_leapfrog(hyperparameters: bool) -> int:
    """The leapfrog steps of a move: :data:`HYPER_LEAPFROG` on the hyperparameters of an
    integrated hierarchy, else :data:`LEAPFROG`.

    Examples
    --------
    >>> default_n_leapfrog(False), default_n_leapfrog(True)
    (10, 5)
    """
    return HYPER_LEAPFROG if hyperparameters else LEAPFROG


def default_n_particles(hyperparameters: bool) -> int:
    """The particles of a run: :data:`HYPER_PARTICLES` on the hyperparameters of an
    integrated hierarchy, else :data:`PARTICLES`.

    Examples
    --------
    >>> default_n_particles(False), default_n_particles(True)
    (1000, 500)
    """
    return HYPER_PARTICLES if hyperparameters else PARTICLES


def default_n_moves(ndim: int) -> int:
    """The least HMC steps per stage for a model of ``ndim`` dimensions.

    Examples
    --------
    >>> default_n_moves(5), default_n_moves(175)
    (5, 10)
    """
    return FEW_MOVES if int(ndim) <= FEW_MOVES_MAX_DIM else MOVES


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


def _attrs(settings: SMCSettings, method, n_particles, n_runs, base) -> dict:
    attrs = {
        "n_particles": int(n_particles),
        "n_runs": int(n_runs),
        "base_kind": str(base.kind),
        "arm": bool(method == "arm"),
        "se_kind": "spread over independent runs (delta method on mean Z)",
    }
    keys = ("target_ess", "resample_threshold", "resampling", "n_leapfrog", "n_moves")
    for key in (*keys, "posterior_moves"):
        attrs[key] = getattr(settings, key)
    if method == "arm":
        attrs.update(arm_threshold=settings.arm_threshold, max_expansions=settings.max_expansions)
    if isinstance(settings.schedule, str):
        attrs["schedule"] = settings.schedule
    else:
        attrs.update(schedule="fixed", schedule_betas=np.asarray(settings.schedule, float))
    return attrs


def _settings(options, method, ndim=None, hyper: bool = False, rows: int = 0) -> SMCSettings:
    """The engine's settings from the method's options; ``n_moves=None`` by ``ndim``
    (:data:`MOVES` where it is not known: the options' check before any model is seen),
    ``n_leapfrog=None`` by ``hyper`` (the space is an integrated hierarchy's
    hyperparameters), ``posterior_moves="auto"`` by the ``rows`` a density call evaluates
    (:func:`density_work`)."""
    values = {k: options[k] for k in _SETTING_NAMES}
    if values["n_moves"] is None:
        values["n_moves"] = MOVES if ndim is None else default_n_moves(ndim)
    if values["n_leapfrog"] is None:
        values["n_leapfrog"] = default_n_leapfrog(hyper)
    if isinstance(values["schedule"], str) and values["schedule"] == "pilot":
        values["schedule"] = "adaptive"  # the pilot's; the runs get its betas
    moves = options["posterior_moves"]
    auto = isinstance(moves, str) and moves == "auto"
    values["posterior_moves"] = POSTERIOR_MOVES if auto else _count(moves, "posterior_moves")
    light = rows <= LIGHT_ROWS or not auto
    values["posterior_budget"] = float("inf") if light else POSTERIOR_BUDGET
    return SMCSettings(arm=method == "arm", **values)


def density_work(problem) -> int:
    """Row evaluations of one density call: the observed values, each evaluated at every
    Newton step and quadrature point where a hierarchy's group effects are integrated out
    (``nodes ** k`` points for ``k`` effects a group)."""
    rows = observed_size(problem.source or problem.model)
    rule = getattr(problem.summed, "rule", None) if problem.hyperparameters_only else None
    if rule is None:
        return rows
    return rows * (rule.steps + rule.nodes ** len(problem.summed.names))


def observed_size(model) -> int:
    """How many observed values ``model`` holds (what each density call reads).

    >>> import pymc as pm
    >>> with pm.Model() as model:
    ...     _ = pm.Normal("y", 0.0, 1.0, observed=np.zeros((3, 2)))
    >>> observed_size(model)
    6
    """
    return int(sum(np.size(value) for value in find_observations(model).values()))


def _count(value, name: str) -> int:
    """A non-negative int option."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
        raise ValueError(f"{name} must be 'auto' or an int >= 0, got {value!r}")
    return int(value)


def _n_particles(options, hyper: bool) -> int:
    given = options["n_particles"]
    return default_n_particles(hyper) if given is None else int(given)


def _uses_pilot(options) -> bool:
    return isinstance(options["schedule"], str) and options["schedule"] == "pilot"


def _pilot_schedule(problem, density, settings, n_particles, callback):
    """One adaptive run (stream ``"pilot"``) whose betas every run then follows (its record).

    Choosing each run's next temperature from its own particles' weights makes ``Zhat``
    biased (an unusually heavy particle shortens the step that would have counted it in
    full); runs on a schedule fixed in advance are unbiased in ``Z``. On the 175-d radon
    varying slopes per-run schedules were biased low with poor coverage; the pilot's
    schedule with moves until decorrelation roughly halved the bias (measured in
    :doc:`/hard_models`, "The default over ten seeds").
    """
    rng = problem.rng("pilot")
    pilot = replace(settings, schedule="adaptive", arm=False)
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


def _run(problem, options, method) -> MethodResult:
    rows = density_work(problem)
    settings = _settings(options, method, problem.space.ndim, problem.hyperparameters_only, rows)
    n_particles = _n_particles(options, problem.hyperparameters_only)
    n_runs = int(options["n_runs"])
    density, counts = problem.density(), Counts()
    pilot = _uses_pilot(options)
    seeds = problem.seed_of("method").spawn(n_runs)
    with smc_progress(problem.sampling.progressbar, n_runs, pilot=pilot) as bar:
        if pilot:
            n_pilot = int(options["pilot_particles"] or max(n_particles // 4, 2))
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
    attrs = _attrs(settings, method, n_particles, n_runs, problem.base)
    if pilot:
        attrs.update(schedule="pilot", pilot_particles=n_pilot)
    return MethodResult(est, groups, layout, attrs)


def _check(options):
    if _n_particles(options, False) < 2 or int(options["n_runs"]) < 1:
        raise ValueError("n_particles must be >= 2 and n_runs >= 1")
    if options["pilot_particles"] is not None and int(options["pilot_particles"]) < 2:
        raise ValueError(f"pilot_particles must be >= 2, got {options['pilot_particles']}")
    _settings(options, "smc").checked_schedule()


_SETTING_NAMES = (
    "schedule",
    "target_ess",
    "resample_threshold",
    "resampling",
    "n_leapfrog",
    "n_moves",
    "arm_threshold",
    "max_expansions",
    "max_stages",
    "max_moves",
    "decorrelation",
)
_OPTIONS = {
    "n_particles": None,
    "n_runs": 4,
    "schedule": "pilot",
    "pilot_particles": None,
    "target_ess": 0.8,
    "resample_threshold": 0.5,
    "resampling": "systematic",
    "n_leapfrog": None,
    "n_moves": None,
    "arm_threshold": 0.7,
    "max_expansions": 3,
    "max_stages": 500,
    "max_moves": 50,
    "decorrelation": 0.1,
    "posterior_moves": "auto",
}


def _spec(name, description):
    def run(problem, options):
        return _run(problem, options, name)

    return MethodSpec(
        name=name,
        description=description,
        run=run,
        options=_OPTIONS,
        check=_check,
        distributes=True,
    )


SMC_SPEC = _spec(
    "smc",
    "tempered resample-move SMC (default) from the base, temperatures fixed by a pilot run, "
    "batched HMC moves",
)
ARM_SPEC = _spec("arm", "resample-move SMC with adaptive particle counts on hard steps (ARM)")
