"""Progress bars for the package's long loops, in the look of PyMC's own.

One rich progress display per long piece of work (the ADVI fits of a base, an annealing run,
the SMC runs): a description, the bar, ``completed/total``, the elapsed and the estimated
remaining time, drawn in PyMC's colours. The loops themselves never see rich: they call a
plain ``callback(done, total)`` (the engines' ``callback`` argument), which is ``None`` when
the bar is off, so ``progressbar=False`` costs one ``is not None`` test per stage and prints
nothing at all.

Rendering is rich's: a live bar on a terminal; on anything else (a pipe, a CI log) the bar's
final state printed once when the work ends; in Jupyter a live bar through ``ipywidgets``,
or, without it, the final state printed once (rather than rich's warning on every refresh).
Updates are throttled (:data:`MIN_INTERVAL`), so even a callback per Adam step is cheap.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from time import perf_counter

__all__ = [
    "MIN_INTERVAL",
    "THEME_STYLES",
    "SMCBars",
    "progress_bar",
    "progress_bars",
    "smc_progress",
]

#: Seconds between two updates pushed to the display (the last one is always pushed).
MIN_INTERVAL = 0.1
#: Rich theme styles of PyMC's progress bars (``pymc.progress_bar.default_progress_theme``).
THEME_STYLES = {
    "bar.complete": "#1764f4",
    "bar.finished": "#1764f4",
    "bar.pulse": "grey23",
    "progress.remaining": "none",
    "progress.elapsed": "none",
}


def _has_ipywidgets() -> bool:
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        return False
    return True


def _console(file=None):
    """A themed console on ``file`` (default: standard output, as PyMC's sampling bars)."""
    from rich.console import Console
    from rich.theme import Theme

    console = Console(file=file, theme=Theme(THEME_STYLES))
    if console.is_jupyter and not _has_ipywidgets():
        # rich draws live bars in Jupyter through ipywidgets only: print the final state
        console = Console(file=file, theme=Theme(THEME_STYLES), force_jupyter=False)
    return console


def _columns(count_format: str | None, remaining: bool) -> list:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = [
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn() if count_format is None else TextColumn(count_format),
        TimeElapsedColumn(),
    ]
    if remaining:
        columns.append(TimeRemainingColumn())
    return columns


class _Bar:
    """The callback of one bar: keeps the latest state, pushes it to the display at most
    every ``interval`` seconds (and on :meth:`flush`)."""

    __slots__ = ("_completed", "_description", "_display", "_interval", "_last", "_task", "_total")

    def __init__(self, display, task, interval):
        self._display, self._task, self._interval = display, task, interval
        self._last = -float("inf")
        self._completed = self._total = self._description = None

    def __call__(self, completed, total=None, description=None):
        """Record ``completed`` (and a new ``total`` or ``description``); drawn soon."""
        self._completed = completed
        if total is not None:
            self._total = total
        if description is not None:
            self._description = description
        now = perf_counter()
        if now - self._last >= self._interval:
            self._last = now
            self.flush()

    def flush(self):
        """Push the latest recorded state to the display."""
        fields = {
            "completed": self._completed,
            "total": self._total,
            "description": self._description,
        }
        fields = {key: value for key, value in fields.items() if value is not None}
        if fields:
            self._display.update(self._task, **fields)
        self._completed = self._total = self._description = None


@contextmanager
def progress_bars(
    descriptions: Sequence[str],
    totals: Sequence[float | None] | None = None,
    *,
    enabled: bool = True,
    count_format: str | None = None,
    remaining: bool = True,
    console=None,
    interval: float = MIN_INTERVAL,
) -> Iterator[list]:
    """Several progress bars shown together; yields one update callback per bar.

    Parameters
    ----------
    descriptions : sequence of str
        The label of each bar.
    totals : sequence of float or None, optional
        Each bar's total (None: set by the first update, a pulsing bar until then).
    enabled : bool, default True
        False shows nothing and yields ``None`` for every callback: loops that take an
        optional ``callback`` then do no work for the bar at all.
    count_format : str, optional
        Rich format of the count column (fields ``task.completed``, ``task.total``);
        default ``completed/total`` (``completed/?`` while the total is unknown).
    remaining : bool, default True
        Show rich's estimate of the remaining time.
    console : rich.console.Console, optional
        Where to draw; default a console on standard output in PyMC's colours.
    interval : float
        Least seconds between two redraws of a bar's state.

    Yields
    ------
    list of callable or None
        ``update(completed, total=None, description=None)`` per bar.

    Examples
    --------
    >>> with progress_bars(["forward", "reverse"], [10, 10], enabled=False) as updates:
    ...     updates
    [None, None]
    """
    if totals is None:
        totals = [None] * len(descriptions)
    if len(totals) != len(descriptions):
        raise ValueError(f"{len(descriptions)} descriptions but {len(totals)} totals")
    if not enabled:
        yield [None] * len(descriptions)
        return
    from rich.progress import Progress

    display = Progress(*_columns(count_format, remaining), console=console or _console())
    with display:
        bars = [
            _Bar(display, display.add_task(text, total=total), float(interval))
            for text, total in zip(descriptions, totals, strict=True)
        ]
        try:
            yield bars
        finally:
            for bar in bars:
                bar.flush()


@contextmanager
def progress_bar(
    description: str, total: float | None = None, *, enabled: bool = True, **kwargs
) -> Iterator:
    """One progress bar; yields its update callback (``None`` when not ``enabled``).

    Keywords as :func:`progress_bars`. A loop calls ``update(done, total)`` after each step;
    the bar shows ``description``, the bar, ``done/total``, elapsed and remaining time.

    Examples
    --------
    >>> from io import StringIO
    >>> from rich.console import Console
    >>> out = StringIO()
    >>> with progress_bar("AIS", 5, console=Console(file=out, width=60)) as update:
    ...     for stage in range(1, 6):
    ...         update(stage)
    >>> "AIS" in out.getvalue() and "5/5" in out.getvalue()
    True
    """
    with progress_bars([description], [total], enabled=enabled, **kwargs) as (update,):
        yield update


class SMCBars:
    """The bars of :func:`smc_progress`, one per SMC run (run ``-1``: the pilot run)."""

    def __init__(self, bars: list, labels: list[str], offset: int = 0):
        self._bars, self._labels, self._offset = bars, labels, offset

    def callback_for(self, run: int):
        """The engine callback ``callback(beta, stage)`` of run ``run`` (None: no bar)."""
        bar, label = self._bars[run + self._offset], self._labels[run + self._offset]
        if bar is None:
            return None

        def update(beta, stage):
            bar(beta, description=f"{label}, stage {stage}")

        return update

    def done(self, run: int) -> None:
        """Show run ``run`` as finished (e.g. one that ran in a worker process)."""
        bar = self._bars[run + self._offset]
        if bar is not None:
            bar(1.0)
            bar.flush()


@contextmanager
def smc_progress(
    enabled: bool, n_runs: int, *, pilot: bool = False, console=None
) -> Iterator[SMCBars]:
    """SMC's bars, one per run, in ``beta`` from 0 to 1; yields an :class:`SMCBars`.

    Its ``callback_for(run)`` is the engine callback of run ``run``, called as
    ``callback(beta, stage)`` (:func:`~pymc_evidence.engines.smc.run_resample_move`), and
    ``None`` when not ``enabled``; ``done(run)`` fills the bar of a finished run. The bars
    show ``SMC run r, stage s``, the bar, ``beta`` and the elapsed time; with ``pilot`` a
    first bar, run ``-1``, shows the pilot run that sets the schedule.

    Examples
    --------
    >>> with smc_progress(False, 2, pilot=True) as bars:
    ...     bars.callback_for(-1) is None
    True
    """
    labels = ["SMC pilot"] * bool(pilot) + [f"SMC run {r}" for r in range(int(n_runs))]
    with progress_bars(
        labels,
        [1.0] * len(labels),
        enabled=enabled,
        count_format="beta {task.completed:.3f}",
        remaining=False,
        console=console,
    ) as bars:
        yield SMCBars(bars, labels, int(bool(pilot)))
