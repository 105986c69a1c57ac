"""Evidence computed by other tools: reading the results of ``pm.sample_smc``.

``pm.sample_smc`` is PyMC's only built-in estimate of the marginal likelihood. Every chain
is an independent SMC run, and PyMC records each run's running estimate of ``log Z`` in
``sample_stats.log_marginal_likelihood``, one value per tempering stage (NaN at the first).
The layout differs between stacks and run shapes:

* several chains with the same number of stages: an object array ``(chain, stage)``;
* several chains with different numbers of stages: an object array ``(chain,)`` whose
  elements are the chains' lists of stage values;
* one chain: a float array of the stage values, with dims ``(chain, draw)`` (PyMC 5) or a
  ``chain`` dim that actually counts stages (PyMC 6).

:func:`sample_smc_log_z` reads the last finite value of each chain;
:func:`pymc_evidence.api.readers.sample_smc_estimate` pools the runs into an estimate.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..compat import get_group, group_names

__all__ = ["is_sample_smc", "sample_smc_log_z"]

_STAT = "log_marginal_likelihood"


def is_sample_smc(idata: Any) -> bool:
    """True for results whose ``sample_stats`` hold ``log_marginal_likelihood``.

    Examples
    --------
    >>> is_sample_smc(object())
    False
    """
    try:
        names = group_names(idata)
    except TypeError:
        return False
    return "sample_stats" in names and _STAT in get_group(idata, "sample_stats")


def _n_chains(idata, values: np.ndarray) -> int:
    if "posterior" in group_names(idata):
        return int(get_group(idata, "posterior").sizes.get("chain", 0)) or values.shape[0]
    return values.shape[0]


def _rows(values: np.ndarray, n_chains: int) -> list:
    """One sequence of stage values per chain."""
    if values.ndim == 0:
        return [values.ravel()]
    if n_chains == 1 and not np.ndim(values.flat[0]):
        return [values.ravel()]  # one chain: every value is one of its stages
    if values.shape[0] != n_chains:
        raise ValueError(
            f"sample_stats.{_STAT} has shape {values.shape}, which does not match the "
            f"{n_chains} chains of the posterior."
        )
    return list(values)


def sample_smc_log_z(idata: Any) -> np.ndarray:
    """The final ``log Z`` of every chain of a ``pm.sample_smc`` result.

    Parameters
    ----------
    idata : arviz.InferenceData or xarray.DataTree
        From ``pm.sample_smc``.

    Returns
    -------
    numpy.ndarray, shape (n_chains,)
        The last finite value of each chain's ``sample_stats.log_marginal_likelihood``.

    Raises
    ------
    KeyError
        If the results hold no ``sample_stats.log_marginal_likelihood``.
    ValueError
        If a chain has no finite value or the shapes do not match the posterior's chains.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> from pymc_evidence import compat
    >>> stats = xr.Dataset({"log_marginal_likelihood": (("chain", "draw"),
    ...                     np.array([[np.nan, -3.1], [np.nan, -2.9]], dtype=object))})
    >>> sample_smc_log_z(compat.new_idata({"sample_stats": stats}))
    array([-3.1, -2.9])
    """
    if not is_sample_smc(idata):
        raise KeyError(f"These results have no sample_stats.{_STAT} (not from pm.sample_smc).")
    values = np.asarray(get_group(idata, "sample_stats")[_STAT].values, dtype=object)
    out = []
    for i, row in enumerate(_rows(values, _n_chains(idata, values))):
        flat = np.asarray(list(np.ravel(np.asarray(row, dtype=object))), dtype=np.float64)
        finite = flat[np.isfinite(flat)]
        if not finite.size:
            raise ValueError(f"chain {i} of the pm.sample_smc result has no finite {_STAT}.")
        out.append(finite[-1])
    return np.array(out, dtype=np.float64)
