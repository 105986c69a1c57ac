"""Evidence estimates computed by other tools: the results of ``pm.sample_smc``.

``pm.sample_smc`` is PyMC's only built-in estimate of the marginal likelihood. Every chain
is an independent SMC run, and PyMC records each run's running estimate of ``log Z`` in
``sample_stats.log_marginal_likelihood``, one value per tempering stage (NaN at the first).
The layout differs between stacks and run shapes:

* several chains with the same number of stages: an object array ``(chain, stage)``;
* several chains with different numbers of stages: an object array ``(chain,)`` whose
  elements are the chains' lists of stage values;
* one chain: a float array of the stage values, with dims ``(chain, draw)`` (PyMC 5) or a
  ``chain`` dim that actually counts stages (PyMC 6).

:func:`sample_smc_estimate` reads the last finite value of each chain and pools the runs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..compat import get_group, group_names
from ..estimators.diagnostics import ConvergenceWarning
from ..estimators.logspace import emit_warnings, log_mean_exp_se
from ..estimators.record import EvidenceEstimate

__all__ = ["SMC_METHOD", "is_sample_smc", "sample_smc_estimate", "sample_smc_log_z"]

#: ``method`` of the estimates read from ``pm.sample_smc`` results.
SMC_METHOD = "pm.sample_smc"
#: Fewer chains than this give a warning: the se is then itself too uncertain to rely on.
MIN_CHAINS_FOR_SE = 4
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


def _messages(n: int) -> list[str]:
    if n == 1:
        return [
            "pm.sample_smc ran one chain: the se of log Z comes from the spread of "
            "independent chains, so it is not available (nan); run pm.sample_smc with "
            f"chains >= {MIN_CHAINS_FOR_SE}"
        ]
    if n < MIN_CHAINS_FOR_SE:
        return [
            f"the se of the pm.sample_smc estimate comes from the spread of only {n} chains "
            f"and is itself very uncertain; run pm.sample_smc with chains >= "
            f"{MIN_CHAINS_FOR_SE} for a usable error bar"
        ]
    return []


def sample_smc_estimate(idata: Any) -> EvidenceEstimate:
    """The evidence estimate of a ``pm.sample_smc`` result, with a standard error.

    Each chain of ``pm.sample_smc`` is an independent SMC run whose ``Z`` estimate is
    unbiased, so the runs are pooled on the ``Z`` scale::

        log Z = logsumexp(log Z_i) - log n
        se    = sd(Z_i) / (sqrt(n) * mean(Z_i))      (delta method, sd with ddof=1)

    The se comes from the spread of the ``n`` chains only (PyMC gives no error bar per
    run): it is NaN for one chain, and rough for fewer than 4; both cases warn.

    Parameters
    ----------
    idata : arviz.InferenceData or xarray.DataTree
        From ``pm.sample_smc`` (PyMC 5 or 6).

    Returns
    -------
    EvidenceEstimate
        ``method="pm.sample_smc"``; ``per_chain_log_z`` holds the chains' final values
        (their own se is unknown: NaN); ``diagnostics["se_from_n_chains"]`` is ``n``, saying
        that the se is the spread of ``n`` chains.

    Warns
    -----
    ConvergenceWarning
        For fewer than 4 chains.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> from pymc_evidence import compat
    >>> stats = xr.Dataset({"log_marginal_likelihood": (("chain", "draw"),
    ...     np.array([[np.nan, -3.1], [np.nan, -2.9], [np.nan, -3.0], [np.nan, -3.05]],
    ...              dtype=object))})
    >>> print(sample_smc_estimate(compat.new_idata({"sample_stats": stats})))
    log Z = -3.010 ± 0.043 (pm.sample_smc, 4 chains)
    """
    log_z_chains = sample_smc_log_z(idata)
    n = log_z_chains.size
    log_z, se = log_mean_exp_se(log_z_chains)
    messages = emit_warnings(_messages(n), ConvergenceWarning)
    return EvidenceEstimate(
        log_z=float(log_z),
        se=float(se),
        method=SMC_METHOD,
        per_chain_log_z=log_z_chains,
        per_chain_se=np.full(n, np.nan),
        diagnostics={"se_from_n_chains": float(n)},
        warnings=messages,
    )
