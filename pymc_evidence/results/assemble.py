"""The one function that turns an estimate and its groups into the returned container.

Every method, and every function that reads a trace sampled by the user
(:func:`pymc_evidence.ct_evidence`, :func:`pymc_evidence.st_evidence`,
:func:`pymc_evidence.bridge_sampling`), ends here with a finished estimate (its warnings
emitted and added by :func:`~pymc_evidence.record.add_messages`): the ``log_evidence``
group is built by :func:`~pymc_evidence.results.schema.estimate_to_dataset`, and the
groups are put in one InferenceData (PyMC 5) or DataTree (PyMC 6) with ``posterior``
first. Nothing here computes an estimate.
"""

from __future__ import annotations

import numpy as np

from ..compat import get_group, group_names, new_idata, set_group
from .schema import GROUP, estimate_to_dataset

__all__ = [
    "COPIED_GROUPS",
    "assemble_results",
    "copied_groups",
    "divergences",
]

#: Groups of a PyMC trace that results carry over unchanged.
COPIED_GROUPS = ("observed_data", "constant_data")


def divergences(idata) -> dict:
    """``{"n_divergences": n}`` from a trace's ``sample_stats.diverging`` (else ``{}``)."""
    if idata is None or "sample_stats" not in group_names(idata):
        return {}
    stats = get_group(idata, "sample_stats")
    return (
        {"n_divergences": float(np.sum(stats["diverging"].values))} if "diverging" in stats else {}
    )


def copied_groups(idata, names=COPIED_GROUPS) -> dict:
    """The groups of ``idata`` (if any) that results carry over unchanged."""
    if idata is None:
        return {}
    available = group_names(idata)
    return {name: get_group(idata, name) for name in names if name in available}


def assemble_results(estimate, groups: dict, *, layout: dict | None = None, attrs=None, into=None):
    """The results container: ``groups`` plus the ``log_evidence`` group of ``estimate``.

    Parameters
    ----------
    estimate : EvidenceEstimate
    groups : dict of str to xarray.Dataset
        ``posterior`` (put first) and any other group.
    layout : dict, optional
        ``chain_dim``, ``chain_values``, ``stage_values``, ``stage_dim``, ``extra_dims`` for
        :func:`~pymc_evidence.results.estimate_to_dataset`.
    attrs : dict, optional
        Settings stored as attributes of the ``log_evidence`` group.
    into : InferenceData or DataTree, optional
        Results to add the group to instead: a copy of ``into`` (same type, every group
        kept, a previous ``log_evidence`` replaced) is returned and ``groups`` is ignored.

    Returns
    -------
    InferenceData or DataTree

    Examples
    --------
    >>> import xarray as xr
    >>> from pymc_evidence.record import EvidenceEstimate
    >>> idata = assemble_results(EvidenceEstimate(-1.0, 0.1, "demo"), {})
    >>> from pymc_evidence.compat import group_names
    >>> group_names(idata)
    ['log_evidence']
    """
    ds = estimate_to_dataset(estimate, attrs=dict(attrs or {}), **(layout or {}))
    if into is not None:
        out = into.copy()
        set_group(out, GROUP, ds)
        return out
    ordered = {name: groups[name] for name in ("posterior",) if name in groups}
    ordered.update({k: v for k, v in groups.items() if k not in ordered and k != GROUP})
    ordered[GROUP] = ds
    return new_idata(ordered)
