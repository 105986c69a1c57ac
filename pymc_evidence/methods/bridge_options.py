"""The options of ``method="bridge"`` (:mod:`~pymc_evidence.methods.bridge`) and of
:func:`pymc_evidence.bridge_sampling`: a frozen value, checked once as it is made."""

from __future__ import annotations

from dataclasses import dataclass

from ._spec import MethodOptions
from .bridge_proposals import PROPOSALS

__all__ = ["BridgeOptions"]


@dataclass(frozen=True)
class BridgeOptions(MethodOptions):
    """The options of ``bridge`` (and of :func:`pymc_evidence.bridge_sampling`), checked
    as they are made.

    Attributes
    ----------
    posterior : InferenceData or DataTree, optional
        The draws to bridge-sample (None: the problem's NUTS run).
    repetitions : int
        Independent sets of proposal draws, their estimates pooled.
    proposal : str
        One of :data:`~pymc_evidence.methods.bridge_proposals.PROPOSALS`.
    n_proposal : int, optional
        Proposal draws per repetition (None: as many as the iteration's posterior draws).
    maxiter, tol
        Of the Meng-Wong iteration.

    Examples
    --------
    >>> BridgeOptions(repetitions=2).to_attrs(n_proposal=500)["repetitions"]
    2
    >>> BridgeOptions(tol=0.0)
    Traceback (most recent call last):
    ...
    ValueError: need maxiter >= 1 and tol > 0, got 1000, 0.0
    """

    posterior: object = None
    repetitions: int = 1
    proposal: str = "normal"
    n_proposal: int | None = None
    maxiter: int = 1000
    tol: float = 1e-10

    INTS = ("repetitions", "n_proposal", "maxiter")

    def check(self) -> None:
        """The proposal's name, the counts and the tolerance."""
        if self.proposal not in PROPOSALS:
            choices = ", ".join(f"{k!r} ({v})" for k, v in PROPOSALS.items())
            raise ValueError(f"unknown proposal {self.proposal!r}; choose one of: {choices}")
        if int(self.repetitions) < 1:
            raise ValueError(f"repetitions must be at least 1, got {self.repetitions}")
        if self.n_proposal is not None and int(self.n_proposal) < 2:
            raise ValueError(f"n_proposal must be at least 2, got {self.n_proposal}")
        if int(self.maxiter) < 1 or not self.tol > 0:
            raise ValueError(f"need maxiter >= 1 and tol > 0, got {self.maxiter}, {self.tol}")

    def to_attrs(self, n_proposal: int) -> dict:
        """The settings, with the ``n_proposal`` drawn per repetition."""
        return {
            "proposal": self.proposal,
            "repetitions": self.repetitions,
            "n_proposal": int(n_proposal),
            "maxiter": self.maxiter,
            "tol": float(self.tol),
            "split": "first half of each chain fits the proposal, second half iterates",
        }
