"""A cross-check's methods side by side: :func:`compare_methods`.

``pme.sample_evidence(method=["smc", "bridge"])`` returns one combined estimate (the
methods' inverse-variance mean, :func:`~pymc_evidence.estimators.pooling.cross_check`) and
keeps each method's estimate (:attr:`~pymc_evidence.EvidenceEstimate.per_method`). This
module lays them out as :func:`~pymc_evidence.compare` lays out models: one row per method,
a rank, each estimate's difference from the combined one with its se, a warning column, the
log Z columns printed to the precision of their se.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from .api.readers import log_evidence
from .compare_table import ComparisonTable
from .estimators.pooling import CROSS_CHECK_Z, cross_check
from .estimators.record import EvidenceEstimate

__all__ = ["METHOD_COLUMNS", "compare_methods"]

#: The columns of :func:`compare_methods`' table, in order.
METHOD_COLUMNS = "rank log_z se log_z_minus_combined log_z_minus_combined_se warning".split()


def compare_methods(result: Any) -> ComparisonTable:
    """The estimates of one model by several methods, as a comparison table.

    Parameters
    ----------
    result : arviz.InferenceData, xarray.DataTree, xarray.Dataset, EvidenceEstimate or dict
        A cross-check: the result of ``pme.sample_evidence(method=["smc", "bridge"])`` (any
        two or more methods), its ``log_evidence`` group or its estimate. Or a dict of label
        to results of the *same* model from separate runs, one method each; they are then
        combined as ``sample_evidence`` combines a cross-check.

    Returns
    -------
    ComparisonTable
        A :class:`pandas.DataFrame` that prints rounded, with a sentence saying whether
        the methods agree. Indexed by method (index name ``"method"``), nearest the
        combined estimate first, with columns

        - ``rank``: 0 for the method nearest the combined estimate, 1 for the next, ...;
        - ``log_z``, ``se``: each method's estimate;
        - ``log_z_minus_combined``: this method's ``log_z`` minus the combined one;
        - ``log_z_minus_combined_se``: its standard error, ``sqrt(se**2 - 1 / sum_j
          se_j**-2)``: smaller than ``sqrt(se**2 + se_combined**2)`` because the combined
          estimate holds this method's own (the independent parts only; the Birge
          widening of the combined se is not part of it);
        - ``warning``: True where this method's estimate differs from another's by more
          than three combined standard errors (the cross-check's ``CrossCheckWarning``)
          or, for separate runs, came with warnings of its own.

        The combined estimate is in ``table.attrs["combined"]`` (``method``, ``log_z``,
        ``se``, ``n_warnings``).

    Raises
    ------
    ValueError
        If the result holds one method's estimate (no cross-check), a dict holds fewer
        than two results, or an estimate of a dict has no finite value and positive se.
    KeyError, TypeError
        As :func:`~pymc_evidence.log_evidence`: no ``log_evidence`` group, or no results.

    See Also
    --------
    pymc_evidence.compare : the same table for several models.

    Examples
    --------
    >>> from pymc_evidence import EvidenceEstimate
    >>> from pymc_evidence.estimators.pooling import cross_check
    >>> est = cross_check([EvidenceEstimate(-3.21, 0.02, "smc"),
    ...                    EvidenceEstimate(-3.20, 0.012, "bridge")])
    >>> print(compare_methods(est))  # doctest: +NORMALIZE_WHITESPACE
            rank   log_z     se log_z_minus_combined log_z_minus_combined_se  warning
    method
    bridge     0  -3.200  0.012                0.003                   0.006    False
    smc        1  -3.210  0.020               -0.007                   0.017    False
    Combined (smc+bridge): log Z -3.203 ± 0.010. 'bridge' and 'smc' differ by 0.010 ± 0.023
    (0.4 combined se), within their errors. log_z_minus_combined is each method's log Z
    minus the combined one.

    From a run (not run here):

    >>> idata = pme.sample_evidence(model, method=["smc", "bridge"])  # doctest: +SKIP
    >>> pme.compare_methods(idata)  # doctest: +SKIP
    """
    combined, estimates = _read(result)
    names = list(estimates)
    log_z = np.array([estimates[name].log_z for name in names], dtype=np.float64)
    se = np.array([estimates[name].se for name in names], dtype=np.float64)
    diff = log_z - combined.log_z
    # cov(log_z_i, combined) = 1 / sum_j w_j for the inverse-variance mean (w_j = se_j**-2)
    diff_se = np.sqrt(np.clip(se**2 - 1.0 / np.sum(se**-2.0), 0.0, None))
    table = pd.DataFrame(
        {
            "log_z": log_z,
            "se": se,
            "log_z_minus_combined": diff,
            "log_z_minus_combined_se": diff_se,
            "warning": _flags(log_z, se, [bool(estimates[n].warnings) for n in names]),
        },
        index=pd.Index(names, name="method"),
    )
    table = table.iloc[np.argsort(np.abs(diff), kind="stable")]
    table.insert(0, "rank", np.arange(len(table)))
    table = ComparisonTable(table[METHOD_COLUMNS])
    table.attrs["combined"] = {
        "method": combined.method,
        "log_z": float(combined.log_z),
        "se": float(combined.se),
        "n_warnings": len(combined.warnings),
    }
    return table


def _read(result: Any) -> tuple[EvidenceEstimate, dict[Any, EvidenceEstimate]]:
    """The combined estimate and each method's, by label."""
    runs = not isinstance(result, xr.Dataset) and not hasattr(result, "groups")  # no DataTree
    if isinstance(result, Mapping) and runs:
        if len(result) < 2:
            raise ValueError(f"compare_methods needs two results or more, got {len(result)}.")
        estimates = {label: log_evidence(obj) for label, obj in result.items()}
        return cross_check(list(estimates.values())), estimates
    combined = log_evidence(result)
    per_method = combined.per_method
    if not per_method:
        raise ValueError(
            f"this result holds one estimate (method {combined.method!r}), not a cross-check; "
            "run pme.sample_evidence(method=['smc', 'bridge']), or pass a dict of separate "
            "runs, {'smc': idata_smc, 'bridge': idata_bridge}."
        )
    estimates = {name: EvidenceEstimate(v, e, name) for name, (v, e) in per_method.items()}
    return combined, estimates


def _flags(log_z: np.ndarray, se: np.ndarray, own: list[bool]) -> list[bool]:
    """True for a method that disagrees with another by more than ``CROSS_CHECK_Z`` combined
    se (as :func:`~pymc_evidence.estimators.pooling.cross_check` warns), or has warnings."""
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.abs(log_z[:, None] - log_z) / np.hypot(se[:, None], se)
    far = np.any(z > CROSS_CHECK_Z, axis=1)
    return [bool(a or b) for a, b in zip(far, own, strict=True)]
