"""The options of ``method="smc"`` and ``"arm"``, and their defaults that depend on the
problem.

:class:`SMCOptions` holds what the user asked for, checked once as it is made; the engine's
:class:`~pymc_evidence.engines.settings.SMCSettings` are made from it then (their check is
part of the options'), and :meth:`SMCOptions.run_settings` fills in what depends on the
problem for the run: the moves per stage by its dimension, the leapfrog steps on an
integrated hierarchy's hyperparameters, the posterior moves' budget by the work of a density
call.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..engines.settings import SMCSettings
from ._spec import MethodOptions

__all__ = [
    "FEW_MOVES",
    "FEW_MOVES_MAX_DIM",
    "HYPER_LEAPFROG",
    "HYPER_PARTICLES",
    "HYPER_TARGET_ESS",
    "LEAPFROG",
    "LIGHT_ROWS",
    "MOVES",
    "PARTICLES",
    "POSTERIOR_BUDGET",
    "POSTERIOR_MOVES",
    "SMCOptions",
    "TARGET_ESS",
    "default_move_weighted",
    "default_n_leapfrog",
    "default_n_moves",
    "default_n_particles",
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
#: first call on a new model" (the entry of 2026-12-04 on the Bernoulli hierarchy).
LEAPFROG = 10
HYPER_LEAPFROG = 5

#: ``posterior_moves="auto"``: HMC steps of every particle at ``beta = 1`` after the last
#: reweighting; where a density call does more than :data:`LIGHT_ROWS` row evaluations
#: (:func:`~pymc_evidence.methods.smc.density_work`) at most :data:`POSTERIOR_BUDGET` times the
#: stages' own moves per particle (a run that went from the base to the posterior in one step gets
#: none: on a very large regression the moves would cost many times its run; on a thousand-group
#: hierarchy, where each row is evaluated at every quadrature node, five cost as much as the
#: stages). On bambi's 12-group ``y ~ 1 + x + (1|g)`` they brought the group scale's 5 % quantile
#: from too high to close to its exact value (measured in :doc:`/hard_models`, "The posterior's
#: tails").
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

#: The conditional ESS each stage's reweighting aims at (``target_ess=None``, the default):
#: :data:`TARGET_ESS`, or :data:`HYPER_TARGET_ESS` on an integrated hierarchy's
#: hyperparameters. There a stage costs every row's quadrature at each of its moves'
#: leapfrogs, the space has a few to a few tens of dimensions and the base is a Laplace or
#: ADVI Gaussian of the one bump: fewer, longer steps along the path cost less at the same
#: error, and the runs' spread still gives the se (measured in :doc:`/performance`, "What
#: a user meets: the first call on a new model").
TARGET_ESS = 0.8
HYPER_TARGET_ESS = 0.5


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


def default_move_weighted(hyperparameters: bool, rows: int = 0) -> bool:
    """Whether a stage moves particles its last reweighting left weighted: not on the
    hyperparameters of an integrated hierarchy whose density call evaluates more than
    :data:`LIGHT_ROWS` rows (:func:`~pymc_evidence.methods.smc.density_work`). There each
    move costs every row's quadrature, and the base is a Gaussian of one bump whose
    weighted particles carry the next increment well: the runs move after each
    resampling and at ``beta = 1`` only, at about half the moves and a somewhat larger
    spread. Where calls are cheap the moves' lower spread costs little (measured in
    :doc:`/performance`, "Moves after resampling only").

    Examples
    --------
    >>> default_move_weighted(False), default_move_weighted(True, 12_000)
    (True, False)
    >>> default_move_weighted(True, 100)
    True
    """
    return not (hyperparameters and rows > LIGHT_ROWS)


def default_n_moves(ndim: int) -> int:
    """The least HMC steps per stage for a model of ``ndim`` dimensions.

    Examples
    --------
    >>> default_n_moves(5), default_n_moves(175)
    (5, 10)
    """
    return FEW_MOVES if int(ndim) <= FEW_MOVES_MAX_DIM else MOVES


def _count(value, name: str) -> int:
    """A non-negative int option."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
        raise ValueError(f"{name} must be 'auto' or an int >= 0, got {value!r}")
    return int(value)


#: The options that go to :class:`~pymc_evidence.engines.settings.SMCSettings` as they are.
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
    "move_weighted",
)
#: Attributes of the ``log_evidence`` group read from the run's settings.
_SETTING_ATTRS = (
    "target_ess",
    "resample_threshold",
    "resampling",
    "n_leapfrog",
    "n_moves",
    "move_weighted",
    "posterior_moves",
)


@dataclass(frozen=True)
class SMCOptions(MethodOptions):
    """The options of ``smc`` and ``arm`` (``docs/methods.rst``, "Each method's options"),
    checked as they are made.

    Attributes
    ----------
    n_particles : int, optional
        Particles of a run; None: :func:`default_n_particles`.
    n_runs : int
        Independent runs; their spread gives the se.
    schedule : {"pilot", "adaptive"} or array_like
        ``"pilot"``: one pilot run picks the temperatures and every run follows them;
        ``"adaptive"``: each run picks its own; or a fixed schedule from 0 to 1.
    pilot_particles : int, optional
        The pilot run's particles; None: a quarter of ``n_particles`` (at least 2).
    n_leapfrog, n_moves : int, optional
        None: :func:`default_n_leapfrog`, :func:`default_n_moves`.
    target_ess : float, optional
        None: :data:`TARGET_ESS`, or :data:`HYPER_TARGET_ESS` on an integrated
        hierarchy's hyperparameters.
    move_weighted : bool, optional
        Move the particles at a stage whose last reweighting did not resample; None: not
        on an integrated hierarchy's hyperparameters whose density calls are heavy
        (:func:`default_move_weighted`).
    posterior_moves : "auto" or int
        HMC steps of every particle at ``beta = 1``; ``"auto"``: :data:`POSTERIOR_MOVES`,
        within :data:`POSTERIOR_BUDGET` of the stages' moves on heavy density calls.
    resample_threshold, resampling, arm_threshold, max_expansions, max_stages, max_moves,
    decorrelation
        As in :class:`~pymc_evidence.engines.settings.SMCSettings`.
    settings : SMCSettings
        Not an option: the engine's settings made from these as they are checked, with
        ``n_moves``, ``n_leapfrog`` and ``target_ess`` at :data:`MOVES`, :data:`LEAPFROG`
        and :data:`TARGET_ESS` where not given
        (:meth:`run_settings` sets them for the problem).

    Examples
    --------
    >>> options = SMCOptions(n_runs=2, schedule=[0.0, 0.5, 1.0])
    >>> options.run_settings(arm=False, ndim=3).n_moves, options.particles(True)
    (5, 500)
    >>> SMCOptions(posterior_moves=-1)
    Traceback (most recent call last):
    ...
    ValueError: posterior_moves must be 'auto' or an int >= 0, got -1
    """

    n_particles: int | None = None
    n_runs: int = 4
    schedule: object = "pilot"
    pilot_particles: int | None = None
    target_ess: float | None = None
    resample_threshold: float = 0.5
    resampling: str = "systematic"
    n_leapfrog: int | None = None
    n_moves: int | None = None
    arm_threshold: float = 0.7
    max_expansions: int = 3
    max_stages: int = 500
    max_moves: int = 50
    decorrelation: float = 0.1
    move_weighted: bool | None = None
    posterior_moves: int | str = "auto"
    settings: SMCSettings = field(init=False, repr=False, compare=False)

    INTS = ("n_particles", "n_runs", "pilot_particles")

    def check(self) -> None:
        """Counts first, then the engine's settings, made here once (their check is
        :meth:`SMCSettings.checked_schedule`)."""
        if self.particles(False) < 2 or int(self.n_runs) < 1:
            raise ValueError("n_particles must be >= 2 and n_runs >= 1")
        if self.pilot_particles is not None and int(self.pilot_particles) < 2:
            raise ValueError(f"pilot_particles must be >= 2, got {self.pilot_particles}")
        values = {name: getattr(self, name) for name in _SETTING_NAMES}
        if values["n_moves"] is None:
            values["n_moves"] = MOVES  # not known before the model is: see run_settings
        if values["n_leapfrog"] is None:
            values["n_leapfrog"] = default_n_leapfrog(False)
        if values["target_ess"] is None:
            values["target_ess"] = TARGET_ESS
        if values["move_weighted"] is None:
            values["move_weighted"] = default_move_weighted(False)
        elif not isinstance(values["move_weighted"], bool | np.bool_):
            raise ValueError(f"move_weighted must be a bool, got {self.move_weighted!r}")
        if self.uses_pilot:
            values["schedule"] = "adaptive"  # the pilot's; the runs get its betas
        auto = self.auto_posterior_moves
        moves = POSTERIOR_MOVES if auto else _count(self.posterior_moves, "posterior_moves")
        settings = SMCSettings(posterior_moves=moves, **values)
        settings.checked_schedule()
        object.__setattr__(self, "settings", settings)

    @property
    def uses_pilot(self) -> bool:
        """Whether a pilot run fixes the schedule (``schedule="pilot"``)."""
        return isinstance(self.schedule, str) and self.schedule == "pilot"

    @property
    def auto_posterior_moves(self) -> bool:
        """Whether ``posterior_moves="auto"``."""
        return isinstance(self.posterior_moves, str) and self.posterior_moves == "auto"

    def particles(self, hyperparameters: bool) -> int:
        """The particles of a run (:func:`default_n_particles` where not given)."""
        given = self.n_particles
        return default_n_particles(hyperparameters) if given is None else int(given)

    def pilot_size(self, n_particles: int) -> int:
        """The pilot run's particles for runs of ``n_particles``."""
        return int(self.pilot_particles or max(n_particles // 4, 2))

    def run_settings(self, arm: bool, ndim: int, hyper: bool = False, rows: int = 0):
        """:attr:`settings` for a run: ARM's expansions where ``arm``, ``n_moves=None`` by
        ``ndim``, ``n_leapfrog=None`` and ``target_ess=None`` by ``hyper`` (the space is an
        integrated hierarchy's hyperparameters), the budget of ``posterior_moves="auto"``
        by the ``rows`` a density call evaluates
        (:func:`~pymc_evidence.methods.smc.density_work`), ``move_weighted=None`` by both."""
        settings = self.settings
        light = rows <= LIGHT_ROWS or not self.auto_posterior_moves
        return replace(
            settings,
            arm=bool(arm),
            n_moves=default_n_moves(ndim) if self.n_moves is None else settings.n_moves,
            n_leapfrog=default_n_leapfrog(hyper)
            if self.n_leapfrog is None
            else settings.n_leapfrog,
            target_ess=HYPER_TARGET_ESS
            if hyper and self.target_ess is None
            else settings.target_ess,
            posterior_budget=float("inf") if light else POSTERIOR_BUDGET,
            move_weighted=default_move_weighted(hyper, rows)
            if self.move_weighted is None
            else bool(settings.move_weighted),
        )

    def to_attrs(self, settings, n_particles: int, base_kind: str, n_pilot=None) -> dict:
        """The ``log_evidence`` attributes of a call whose runs had ``settings`` (the
        pilot's schedule in place of ``"pilot"``) and ``n_particles``, from a base of
        ``base_kind``; ``n_pilot``: the pilot's particles, where a pilot ran."""
        attrs = {
            "n_particles": int(n_particles),
            "n_runs": int(self.n_runs),
            "base_kind": str(base_kind),
            "arm": bool(settings.arm),
            "se_kind": "spread over independent runs (delta method on mean Z)",
        }
        attrs.update({key: getattr(settings, key) for key in _SETTING_ATTRS})
        if settings.arm:
            attrs.update(
                arm_threshold=settings.arm_threshold, max_expansions=settings.max_expansions
            )
        if isinstance(settings.schedule, str):
            attrs["schedule"] = settings.schedule
        else:
            attrs.update(schedule="fixed", schedule_betas=np.asarray(settings.schedule, float))
        if n_pilot is not None:
            attrs.update(schedule="pilot", pilot_particles=n_pilot)
        return attrs
