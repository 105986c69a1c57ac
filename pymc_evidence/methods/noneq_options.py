"""The options of ``method="ais"``, ``"rais"`` and ``"bar"``
(:mod:`~pymc_evidence.methods.noneq`): frozen values, checked once as they are made."""

from __future__ import annotations

from dataclasses import dataclass

from ._spec import MethodOptions

__all__ = ["SCHEDULES", "AISOptions", "AnnealOptions", "ReverseAISOptions"]

SCHEDULES = ("adaptive", "sigmoidal", "geometric", "linear")


@dataclass(frozen=True)
class AnnealOptions(MethodOptions):
    """The options that ``ais``, ``rais`` and ``bar`` share, checked as they are made.

    Attributes
    ----------
    n_particles : int
        Runs (particles) per direction.
    n_stages : int
        Stages of the schedule; ``ais`` and ``bar`` anneal once more with more, at most
        ``max_stages``, where the works spread too widely
        (:func:`~pymc_evidence.methods.noneq.more_stages`).
    max_stages : int
    n_leapfrog : int
        Leapfrog steps of an HMC move.
    schedule : {"sigmoidal", "geometric", "linear", "adaptive"} or array_like
        A schedule of :data:`SCHEDULES` (``"adaptive"``: chosen by a pilot run, kernels
        frozen) or the betas.

    Examples
    --------
    >>> AnnealOptions(n_stages=50.0).to_attrs()
    {'n_particles': 256, 'n_stages': 50, 'max_stages': 3200, 'n_leapfrog': 10,
     'schedule': 'sigmoidal'}
    >>> AnnealOptions(schedule="cosine")
    Traceback (most recent call last):
    ...
    ValueError: schedule must be one of ('adaptive', ...) or an array, got 'cosine'
    """

    n_particles: int = 256
    n_stages: int = 200
    max_stages: int = 3200
    n_leapfrog: int = 10
    schedule: object = "sigmoidal"

    INTS = ATTRS = ("n_particles", "n_stages", "max_stages", "n_leapfrog")

    def check(self) -> None:
        """The counts and the schedule's name."""
        if int(self.n_particles) < 2 or int(self.n_stages) < 1:
            raise ValueError("n_particles must be >= 2 and n_stages >= 1")
        if int(self.max_stages) < 1:
            raise ValueError(f"max_stages must be >= 1, got {self.max_stages}")
        schedule = self.schedule
        if isinstance(schedule, str) and schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES} or an array, got {schedule!r}")

    @property
    def schedule_name(self) -> str:
        """The schedule's name, ``"custom"`` for given betas."""
        return self.schedule if isinstance(self.schedule, str) else "custom"

    def to_attrs(self) -> dict:
        """The counts and the schedule's name."""
        return {**super().to_attrs(), "schedule": self.schedule_name}


@dataclass(frozen=True)
class AISOptions(AnnealOptions):
    """The options of ``ais``: :class:`AnnealOptions` and ``max_particles``, the most
    particles of its last run where the works still spread too widely
    (:func:`~pymc_evidence.methods.noneq.more_particles`).

    Examples
    --------
    >>> AISOptions(max_particles=1)
    Traceback (most recent call last):
    ...
    ValueError: max_particles must be >= 2, got 1
    """

    max_particles: int = 1024

    INTS = (*AnnealOptions.INTS, "max_particles")

    def check(self) -> None:
        """:meth:`AnnealOptions.check` and ``max_particles``."""
        super().check()
        if int(self.max_particles) < 2:
            raise ValueError(f"max_particles must be >= 2, got {self.max_particles}")


@dataclass(frozen=True)
class ReverseAISOptions(AnnealOptions):
    """The options of ``rais`` and ``bar``: :class:`AnnealOptions` and ``posterior``, an
    InferenceData or DataTree whose draws start the reverse runs (None: the problem's NUTS
    run).

    Examples
    --------
    >>> ReverseAISOptions().given_draws is None
    True
    """

    posterior: object = None
