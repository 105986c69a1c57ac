"""The estimate record every estimator returns.

One shape for every method: a point estimate of ``log Z`` with its standard error, the
per-chain (or per-run) values behind it, scalar diagnostics, and warnings. Pure Python and
numpy; nothing here knows about PyMC or xarray.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

__all__ = ["SE_FLOOR", "EvidenceEstimate", "with_se_floor"]

#: The smallest se a Monte Carlo estimate of ``sample_evidence`` reports, relative to
#: ``max(1, |log Z|)``: what the model's own log density holds. PyTensor keeps constants
#: such as a known noise scale of 0.5 in float32, and PyMC's compiled density (NUTS, the
#: tempering steps) then computes ``log 0.5`` to 2e-9 per row (up to 3e-8 for other
#: constants): 6e-8 on a 40-row regression whose ``log Z`` is -32.8.
SE_FLOOR = 1e-7


@dataclass(frozen=True)
class EvidenceEstimate:
    """A log marginal likelihood estimate with its uncertainty.

    Parameters
    ----------
    log_z : float
        Estimate of ``log Z = log p(y | model)``.
    se : float
        Standard error of ``log_z`` (Monte Carlo error, not posterior uncertainty).
    method : str
        Short name of the estimator, e.g. ``"ct"``.
    per_chain_log_z, per_chain_se : ndarray
        The estimate and its standard error from each chain (or independent run) alone.
    diagnostics : dict of str to float
        Scalar diagnostics (effective sample sizes, occupancies, ...).
    warnings : tuple of str
        Human-readable problems detected while estimating.

    Examples
    --------
    >>> est = EvidenceEstimate(log_z=-3.2, se=0.01, method="ct")
    >>> print(est)
    log Z = -3.200 ± 0.010 (ct)

    A cross-check (:func:`~pymc_evidence.estimators.pooling.cross_check`) prints each
    method's estimate after the pooled one:

    >>> both = EvidenceEstimate(-3.2, 0.01, "smc+bridge", np.array([-3.21, -3.2]),
    ...                         np.array([0.02, 0.012]))
    >>> print(both)
    log Z = -3.200 ± 0.010 (smc+bridge: smc -3.210 ± 0.020, bridge -3.200 ± 0.012)
    """

    log_z: float
    se: float
    method: str
    per_chain_log_z: np.ndarray = field(default_factory=lambda: np.empty(0))
    per_chain_se: np.ndarray = field(default_factory=lambda: np.empty(0))
    diagnostics: dict = field(default_factory=dict)
    warnings: tuple = ()

    @property
    def n_chains(self) -> int:
        """Number of chains or independent runs behind the estimate."""
        return int(np.size(self.per_chain_log_z))

    @property
    def per_method(self) -> dict[str, tuple[float, float]]:
        """A cross-check's estimates by method, ``{method: (log_z, se)}`` in the order run
        (empty for one method's estimate).

        >>> est = EvidenceEstimate(-3.0, 0.01, "smc+bridge", per_chain_log_z=[-3.0, -3.01],
        ...                        per_chain_se=[0.02, 0.01])
        >>> est.per_method
        {'smc': (-3.0, 0.02), 'bridge': (-3.01, 0.01)}
        """
        names = self.method.split("+")
        if len(names) < 2 or not len(names) == self.n_chains == np.size(self.per_chain_se):
            return {}
        pairs = zip(self.per_chain_log_z, self.per_chain_se, strict=True)
        return {n: (float(v), float(e)) for n, (v, e) in zip(names, pairs, strict=True)}

    def __str__(self) -> str:
        text = f"log Z = {self.log_z:.3f} ± {_se_text(self.se)} ({self.method}"
        if self.per_method:
            parts = self.per_method.items()
            text += ": " + ", ".join(f"{n} {v:.3f} ± {_se_text(e)}" for n, (v, e) in parts)
        elif self.n_chains:
            text += f", {self.n_chains} {_unit(self.method)}"
        if np.isfinite(self.diagnostics.get("posterior_ess", np.nan)):
            text += f"; posterior ESS {self.diagnostics['posterior_ess']:.0f}"
        text += ")"
        for message in self.warnings:
            text += f"\n  warning: {message}"
        return text


#: What the per-chain entries of each method's estimate are, for the printed estimate.
_UNITS = {"smc": "runs", "arm": "runs", "ais": "particles", "rais": "particles"}


def _unit(method: str) -> str:
    """``"runs"``, ``"particles"``, ``"methods"`` (a cross-check) or ``"chains"``."""
    return "methods" if "+" in method else _UNITS.get(method, "chains")


def _se_text(se: float) -> str:
    """The se to three decimals, or to two significant digits below 0.0005 (so that a
    small se does not print as 0.000)."""
    return f"{se:.2g}" if 0 < se < 5e-4 else f"{se:.3f}"


def with_se_floor(est: EvidenceEstimate) -> EvidenceEstimate:
    """``est`` with its se raised to :data:`SE_FLOOR` ``* max(1, |log Z|)`` where it is below.

    A base that is exactly the posterior (the Laplace Gaussian of a Gaussian model) makes
    every importance weight equal: the estimators then return an se of exactly 0 (their
    arithmetic is right), but the estimate itself is only as good as the model's log
    density and the floating-point sums behind it (see :data:`SE_FLOOR`), and an se of 0
    would claim more.

    Examples
    --------
    >>> with_se_floor(EvidenceEstimate(-3.7, 0.0, "bar")).se
    3.7e-07
    >>> with_se_floor(EvidenceEstimate(-3.7, 0.02, "bar")).se
    0.02
    """
    if not np.isfinite(est.log_z) or not np.isfinite(est.se):
        return est
    floor = SE_FLOOR * max(1.0, abs(float(est.log_z)))
    return est if est.se >= floor else replace(est, se=floor)
