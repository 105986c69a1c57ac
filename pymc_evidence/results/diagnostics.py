"""ArviZ diagnostics of the pieces behind an estimate, on both stacks.

* :func:`pareto_khat`: the Pareto shape ``k̂`` of PSIS (Vehtari et al. 2024) for a set of
  importance weights, through ``arviz_stats`` (ArviZ 1.x) or ``arviz.psislw`` (ArviZ 0.x);
  :func:`pareto_check` turns it into a diagnostic and, above 0.7, a warning text.
* :func:`nuts_messages`: rank-normalized R-hat and bulk ESS of an internal NUTS run, with
  PyMC's own thresholds.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import xarray as xr

from ..compat import get_group
from ..record import ConvergenceWarning, WarningMessage, WeightWarning

__all__ = [
    "ESS_PER_CHAIN_MIN",
    "MIN_CONVERGENCE_DRAWS",
    "PARETO_K_MAX",
    "RHAT_MAX",
    "nuts_messages",
    "pareto_check",
    "pareto_khat",
]

#: Above this ``k̂`` the importance weights are too heavy-tailed to trust (Vehtari et al.).
PARETO_K_MAX = 0.7
#: Fewer finite weights than this give ``k̂ = nan``: PSIS fits the largest ``n / 5`` of
#: them (``3 sqrt(n)`` beyond 225) and needs at least 5 in the tail.
MIN_PARETO_WEIGHTS = 25
#: PyMC's convergence thresholds (``pymc.stats.convergence.run_convergence_checks``).
RHAT_MAX = 1.01
ESS_PER_CHAIN_MIN = 100.0
MIN_CONVERGENCE_DRAWS = 100


def _psis_khat(log_weights: np.ndarray) -> float:
    """``k̂`` of PSIS from whichever ArviZ is installed (``r_eff = 1``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            from arviz_stats.base.array import array_stats
        except ImportError:  # ArviZ 0.x (PyMC 5 stack)
            import arviz as az

            return float(np.asarray(az.psislw(log_weights, reff=1.0)[1]))
        # arviz_stats' psislw takes log-likelihood-like values and negates them
        return float(np.asarray(array_stats.psislw(-log_weights, r_eff=1.0)[1]))


def pareto_khat(log_weights) -> float:
    """Pareto ``k̂`` of a set of importance weights, by ArviZ's PSIS.

    ``k̂ < 0.5``: the weights have finite variance; ``0.5 <= k̂ <= 0.7``: finite mean but
    slow convergence; ``k̂ > 0.7``: too heavy-tailed for the estimate to be trusted.

    Parameters
    ----------
    log_weights : array_like
        Log importance weights (any shape, flattened; unnormalized is fine). ``-inf``
        entries (zero weights) are dropped.

    Returns
    -------
    float
        NaN with fewer than 25 finite weights, with NaN or ``+inf`` weights, or when the
        largest weights are all equal (nothing to fit).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> bool(pareto_khat(rng.normal(0.0, 0.3, 1000)) < 0.5)
    True
    >>> bool(pareto_khat(np.log(np.abs(rng.standard_cauchy(1000)))) > 0.7)
    True
    """
    lw = np.asarray(log_weights, dtype=np.float64).ravel()
    if np.any(np.isnan(lw)) or np.any(lw == np.inf):
        return math.nan
    lw = lw[np.isfinite(lw)]
    if lw.size < MIN_PARETO_WEIGHTS or np.ptp(lw) == 0:
        return math.nan
    try:
        khat = _psis_khat(lw - lw.max())
    except ValueError:  # e.g. "All tail values are the same"
        return math.nan
    return khat if math.isfinite(khat) else math.nan


def pareto_check(
    log_weights, *, what: str, key: str = "pareto_k", hint: str = ""
) -> tuple[dict, list[str]]:
    """``({key: k̂}, messages)`` for one set of importance weights.

    Parameters
    ----------
    log_weights : array_like
        As in :func:`pareto_khat`.
    what : str
        Names the weights in the warning, e.g. ``"CT's w1 weights"``.
    key : str, default "pareto_k"
        Name of the diagnostic.
    hint : str, optional
        What to do about it, appended to the warning.

    Returns
    -------
    tuple of (dict, list of WarningMessage)
        The diagnostic (NaN when ``k̂`` cannot be computed) and, when ``k̂ > 0.7``, a
        warning text of category :class:`~pymc_evidence.WeightWarning`.

    Examples
    --------
    >>> import numpy as np
    >>> diag, messages = pareto_check(np.zeros(10), what="demo weights")
    >>> diag, messages
    ({'pareto_k': nan}, [])
    """
    khat = pareto_khat(log_weights)
    messages = []
    if khat > PARETO_K_MAX:
        text = (
            f"Pareto k-hat of {what} is {khat:.2f} > {PARETO_K_MAX}: the importance weights "
            "are too heavy-tailed (a few draws carry most of the weight), so the estimate "
            "and its se may be unreliable" + (f"; {hint}" if hint else "")
        )
        messages.append(WarningMessage(text, WeightWarning))
    return {key: khat}, messages


def _posterior(idata: Any) -> xr.Dataset:
    return idata if isinstance(idata, xr.Dataset) else get_group(idata, "posterior")


def _worst(values: dict[str, float], reverse: bool, fmt: str, n: int = 3) -> str:
    ranked = sorted(values.items(), key=lambda kv: kv[1], reverse=reverse)[:n]
    return ", ".join(f"{name} {value:{fmt}}" for name, value in ranked)


def _per_variable(posterior: xr.Dataset) -> tuple[dict[str, float], dict[str, float]]:
    """Worst (largest) R-hat and worst (smallest) bulk ESS of each variable."""
    import arviz as az

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rhat = az.rhat(posterior, method="rank")
        ess = az.ess(posterior, method="bulk")
    worst_rhat, worst_ess = {}, {}
    for name in posterior.data_vars:
        r, e = np.asarray(rhat[name].values, float), np.asarray(ess[name].values, float)
        if np.any(np.isfinite(r)):
            worst_rhat[str(name)] = float(np.nanmax(r))
        if np.any(np.isfinite(e)):
            worst_ess[str(name)] = float(np.nanmin(e))
    return worst_rhat, worst_ess


def nuts_messages(idata: Any, *, what: str) -> list[WarningMessage]:
    """Warning texts when a NUTS run has not converged, by PyMC's own rules.

    The rules of ``pymc.stats.convergence.run_convergence_checks``, with ArviZ's
    rank-normalized split R-hat and bulk ESS over every variable of ``posterior``
    (the worst element of each vector variable; constant variables are skipped):

    * R-hat above 1.01 for some variable;
    * bulk ESS below 100 per chain (``min ESS / n_chains < 100``) for some variable.

    Like PyMC, runs with fewer than 100 draws per chain are not checked (too short for
    reliable R-hat and ESS). Unlike PyMC, a single chain is checked too: split R-hat
    still compares its two halves.

    Parameters
    ----------
    idata : InferenceData, DataTree or xarray.Dataset
        The run, or its ``posterior`` group.
    what : str
        Names the run in the messages, e.g. ``"the internal NUTS run that starts reverse
        AIS"``.

    Returns
    -------
    list of WarningMessage
        Up to two messages, naming the (at most three) worst variables; their category is
        :class:`~pymc_evidence.ConvergenceWarning`.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> rng = np.random.default_rng(0)
    >>> stuck = rng.normal(size=(4, 200)) + np.arange(4)[:, None]  # chains at 0, 1, 2, 3
    >>> post = xr.Dataset({"mu": (("chain", "draw"), stuck)})
    >>> for message in nuts_messages(post, what="the demo run"):
    ...     print(message[:48])
    the demo run has not converged: R-hat (rank-norm
    the demo run has too few effective draws: bulk E
    """
    posterior = _posterior(idata)
    n_chains, n_draws = int(posterior.sizes["chain"]), int(posterior.sizes["draw"])
    if n_draws < MIN_CONVERGENCE_DRAWS or not posterior.data_vars:
        return []
    rhat, ess = _per_variable(posterior)
    bad_rhat = {k: v for k, v in rhat.items() if v > RHAT_MAX}
    bad_ess = {k: v for k, v in ess.items() if v / n_chains < ESS_PER_CHAIN_MIN}
    messages = []
    if bad_rhat:
        messages.append(
            f"{what} has not converged: R-hat (rank-normalized) is above {RHAT_MAX} for "
            f"{len(bad_rhat)} of {len(rhat)} variables (worst: {_worst(bad_rhat, True, '.3f')}); "
            "its chains disagree, so its draws may not represent the posterior"
        )
    if bad_ess:
        messages.append(
            f"{what} has too few effective draws: bulk ESS is below {ESS_PER_CHAIN_MIN:.0f} "
            f"per chain ({n_chains} chains) for {len(bad_ess)} of {len(ess)} variables "
            f"(worst total ESS: {_worst(bad_ess, False, '.0f')}); R-hat and ESS are then "
            "unreliable, so run it longer"
        )
    return [WarningMessage(m, ConvergenceWarning) for m in messages]
