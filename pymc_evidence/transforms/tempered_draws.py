"""The warning that a tempered trace is not a posterior sample.

``pm.sample`` on a model built by :func:`~pymc_evidence.continuous_tempering`, or with the
step methods :class:`~pymc_evidence.GibbsContinuousTempering` and
:class:`~pymc_evidence.SimulatedTempering`, returns draws of a tempered target (the inverse
temperature runs from the base to the posterior), yet its ``posterior`` group looks like any
other: ``az.summary`` summarises it without complaint. PyMC gives step methods no hook at
the end of sampling and the trace no mark a step could set, so the warning is emitted where
the user builds the tempered model or step, before sampling, and names the function that
turns the trace into the evidence and posterior draws.
"""

from __future__ import annotations

from ..estimators.diagnostics import EvidenceWarning, warn_user

__all__ = ["tempered_draws_message", "warn_tempered_draws"]


def tempered_draws_message(what: str, reader: str) -> str:
    """The text of the warning: ``what`` is sampled, ``reader`` reads the trace.

    Examples
    --------
    >>> tempered_draws_message("X", "pme.ct_evidence(trace)")[:52]
    'X: the trace that pm.sample returns holds tempered d'
    """
    return (
        f"{what}: the trace that pm.sample returns holds tempered draws (inverse "
        "temperature between 0, the base, and 1, the posterior), not posterior draws, so "
        "its posterior group, az.summary and az.plot_trace describe the tempered target. "
        f"Pass the trace to {reader} for log Z and importance-resampled posterior draws "
        "(its .posterior); warn_tempered=False silences this warning"
    )


def warn_tempered_draws(what: str, reader: str) -> None:
    """Emit :func:`tempered_draws_message` as an :class:`~pymc_evidence.EvidenceWarning`,
    pointed at the user's line."""
    warn_user(tempered_draws_message(what, reader), EvidenceWarning)
