"""Error measures of a marginal likelihood estimate on the ``Z`` scale, as in R's
``bridgesampling::error_measures``: relative mean-squared error, coefficient of variation
and the latter as a percentage."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from .schema import log_evidence

__all__ = ["ErrorMeasures", "error_measures"]

_BRIDGE_KEYS = ("re2_proposal", "re2_posterior")


class ErrorMeasures(NamedTuple):
    """Error of an estimate ``Zhat`` of the marginal likelihood ``Z``, relative to ``Z``.

    Attributes
    ----------
    re2 : float
        Relative mean-squared error ``E[(Zhat - Z)^2] / Z^2``.
    cv : float
        Coefficient of variation ``sqrt(re2)``.
    percentage : str
        ``cv`` as a percentage, e.g. ``"1.2%"``.
    source : str
        ``"bridge"`` when ``re2`` is the bridge estimator's own relative error,
        ``"se of log Z"`` when it is derived from the standard error of ``log Z``.
    """

    re2: float
    cv: float
    percentage: str
    source: str

    def __repr__(self) -> str:
        return (
            f"ErrorMeasures(re2={self.re2:.3g}, cv={self.cv:.3g}, "
            f"percentage={self.percentage!r}, source={self.source!r})"
        )


def _percentage(cv: float) -> str:
    if not math.isfinite(cv):
        return "nan%"
    pct = 100.0 * cv
    return f"{pct:.0f}%" if pct >= 10 else f"{pct:.2g}%"


def _bridge_re2(est) -> float | None:
    """The bridge estimator's own ``re2`` (Frühwirth-Schnatter 2004), or None."""
    diag = est.diagnostics
    if not all(key in diag for key in _BRIDGE_KEYS):
        return None
    if "run_sd" in diag and est.n_chains > 1:  # pooled repetitions, as combine_bridge_runs
        spread = diag["run_sd"] ** 2
        return float(diag["re2_posterior"] + max(diag["re2_proposal"], spread) / est.n_chains)
    return float(diag["re2_proposal"] + diag["re2_posterior"])


def error_measures(idata_or_estimate: Any) -> ErrorMeasures:
    """Relative mean-squared error and coefficient of variation of the ``Z`` estimate.

    The counterpart of R's ``bridgesampling::error_measures``.

    * For bridge sampling results (the estimate's diagnostics hold ``re2_proposal`` and
      ``re2_posterior``), ``re2`` is the bridge estimator's own approximate relative
      mean-squared error (Frühwirth-Schnatter 2004): ``re2_proposal + re2_posterior``, or
      for pooled repetitions ``re2_posterior + max(re2_proposal, run_sd^2) / R``.
    * For every other estimate, ``re2`` follows from the standard error ``se`` of
      ``log Z``: if ``log Zhat`` is normal with sd ``se``, ``Zhat`` is log-normal and
      ``Var(Zhat) / E[Zhat]^2 = exp(se^2) - 1``, so ``re2 = expm1(se^2)`` (about ``se^2``
      for small ``se``). For an unbiased ``Zhat`` that is the relative mean-squared error.

    ``cv = sqrt(re2)`` and ``percentage`` is ``cv`` written as a percentage. Like the
    standard error they come from, these cover Monte Carlo error only, not the bias of an
    estimator.

    Parameters
    ----------
    idata_or_estimate : InferenceData, DataTree, xarray.Dataset or EvidenceEstimate
        Results with a ``log_evidence`` group, the group itself or an estimate
        (:func:`pymc_evidence.error_measures` reads raw tempering traces and
        ``pm.sample_smc`` results too).

    Returns
    -------
    ErrorMeasures
        ``re2``, ``cv``, ``percentage`` and ``source``; NaN (and ``"nan%"``) when the
        standard error is not finite.

    Raises
    ------
    KeyError
        If ``idata_or_estimate`` holds no estimate.

    Examples
    --------
    >>> from pymc_evidence.record import EvidenceEstimate
    >>> error_measures(EvidenceEstimate(log_z=-12.3, se=0.05, method="ct"))
    ErrorMeasures(re2=0.0025, cv=0.05, percentage='5%', source='se of log Z')
    """
    est = log_evidence(idata_or_estimate)
    re2 = _bridge_re2(est)
    source = "se of log Z" if re2 is None else "bridge"
    if re2 is None:
        se = float(est.se)
        re2 = float(np.expm1(se * se)) if math.isfinite(se) else math.nan
    cv = math.sqrt(re2) if math.isfinite(re2) and re2 >= 0 else math.nan
    return ErrorMeasures(re2=re2, cv=cv, percentage=_percentage(cv), source=source)
