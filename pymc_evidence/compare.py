"""Bayes factors, posterior model probabilities and a model comparison table.

Every function accepts results containers holding a ``log_evidence`` group
(``arviz.InferenceData`` or ``xarray.DataTree``), the group itself, or
:class:`~pymc_evidence.estimators.record.EvidenceEstimate` records. Standard errors of
different models are combined as independent (separate runs): ``se = sqrt(se_a**2 + se_b**2)``.
They cover Monte Carlo error only, not bias of an estimator.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from pymc_evidence.estimators.diagnostics import ConvergenceWarning, CrossCheckWarning
from pymc_evidence.estimators.logspace import normalize_log_weights
from pymc_evidence.estimators.record import EvidenceEstimate
from pymc_evidence.results.schema import log_evidence

__all__ = ["BayesFactor", "bayes_factor", "compare"]

_COLUMNS = [
    "log_z",
    "se",
    "method",
    "d_log_z",
    "d_log_z_se",
    "log_bf",
    "prior_prob",
    "post_prob",
    "post_prob_se",
]


class BayesFactor(NamedTuple):
    """Log Bayes factor ``log Z_a - log Z_b`` with its standard error."""

    log_bf: float
    se: float

    def __str__(self) -> str:
        return f"log BF = {self.log_bf:.3f} ± {self.se:.3f}"


def _estimates(models: Mapping[Any, Any]) -> dict[Any, EvidenceEstimate]:
    """Read every model's estimate; check log Z is finite; warn on mixed methods or bad SEs."""
    estimates = {}
    for name, obj in models.items():
        try:
            estimates[name] = log_evidence(obj)
        except TypeError as err:
            raise TypeError(
                f"Model {name!r}: expected InferenceData/DataTree with a 'log_evidence' group "
                f"or an EvidenceEstimate, got {type(obj).__name__}."
            ) from err
        if not np.isfinite(estimates[name].log_z):
            raise ValueError(f"Model {name!r} has a non-finite log Z ({estimates[name].log_z}).")
    methods = sorted({est.method for est in estimates.values()})
    if len(methods) > 1:
        warnings.warn(
            f"Comparing estimates from different methods {methods}: each standard error covers "
            "only its own Monte Carlo error, not systematic differences between methods.",
            CrossCheckWarning,
            stacklevel=3,
        )
    bad = [name for name, est in estimates.items() if not np.isfinite(est.se)]
    if bad:
        warnings.warn(
            f"Standard error of log Z is not finite for {bad}; the derived uncertainties "
            "are not meaningful.",
            ConvergenceWarning,
            stacklevel=3,
        )
    return estimates


def bayes_factor(a: Any, b: Any) -> BayesFactor:
    """Log Bayes factor of model ``a`` over model ``b``.

    Parameters
    ----------
    a, b : arviz.InferenceData, xarray.DataTree, xarray.Dataset or EvidenceEstimate
        Results with a ``log_evidence`` group, or estimates, from independent runs.

    Returns
    -------
    BayesFactor
        ``log_bf = log Z_a - log Z_b`` and ``se = sqrt(se_a**2 + se_b**2)``.

    Warns
    -----
    CrossCheckWarning
        If the two estimates come from different methods.
    ConvergenceWarning
        If a standard error is not finite.

    Examples
    --------
    >>> from pymc_evidence.estimators.record import EvidenceEstimate
    >>> a = EvidenceEstimate(log_z=-10.0, se=0.3, method="ct")
    >>> b = EvidenceEstimate(log_z=-12.0, se=0.4, method="ct")
    >>> print(bayes_factor(a, b))
    log BF = 2.000 ± 0.500
    """
    est_a, est_b = _estimates({"a": a, "b": b}).values()
    return BayesFactor(
        log_bf=float(est_a.log_z - est_b.log_z), se=float(np.hypot(est_a.se, est_b.se))
    )


def _log_prior(names: list, prior_probs: Mapping | Sequence | None) -> np.ndarray:
    """Log prior model probabilities in the order of ``names``, validated."""
    if prior_probs is None:
        return np.full(len(names), -np.log(len(names)))
    if isinstance(prior_probs, Mapping):
        unknown = [key for key in prior_probs if key not in names]
        missing = [name for name in names if name not in prior_probs]
        if unknown or missing:
            raise ValueError(
                f"prior_probs must have exactly the model names {names}; "
                f"unknown: {unknown}, missing: {missing}."
            )
        values = [prior_probs[name] for name in names]
    elif isinstance(prior_probs, str | bytes):
        raise TypeError("prior_probs must be a dict, a sequence of numbers or None.")
    else:
        values = list(prior_probs)
    try:
        probs = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"prior_probs must be numbers, got {values!r}.") from err
    if probs.shape != (len(names),):
        raise ValueError(f"prior_probs has {probs.size} values for {len(names)} models.")
    if not np.all(np.isfinite(probs)) or np.any(probs < 0):
        raise ValueError(f"prior_probs must be finite and non-negative, got {probs.tolist()}.")
    if not np.isclose(probs.sum(), 1.0, rtol=0.0, atol=1e-8):
        raise ValueError(f"prior_probs must sum to 1, they sum to {probs.sum()!r}.")
    with np.errstate(divide="ignore"):
        return np.log(probs)


def _post_prob_se(post: np.ndarray, se: np.ndarray) -> np.ndarray:
    """Delta-method SE of softmax probabilities under independent log Z errors.

    ``var(p_i) = p_i**2 * (sum_j p_j**2 se_j**2 + (1 - 2 p_i) se_i**2)``; models with zero
    posterior probability contribute nothing whatever their standard error.
    """
    with np.errstate(invalid="ignore"):
        terms = np.where(post > 0, (post * se) ** 2, 0.0)
        own = np.where(post > 0, (1.0 - 2.0 * post) * se**2, 0.0)
        var = post**2 * (terms.sum() + own)
    return np.sqrt(np.clip(var, 0.0, None))


def compare(
    models: Mapping[Any, Any], prior_probs: Mapping | Sequence | None = None
) -> pd.DataFrame:
    """Compare models by their marginal likelihoods.

    Parameters
    ----------
    models : dict
        Model name to results with a ``log_evidence`` group (``InferenceData`` or
        ``DataTree``), the group itself, or an ``EvidenceEstimate``. Runs are assumed
        independent.
    prior_probs : dict or sequence of float, optional
        Prior model probabilities: a dict keyed by every model name, or a sequence in the
        order of ``models``. Non-negative, summing to 1. Default: uniform.

    Returns
    -------
    pandas.DataFrame
        Indexed by model name (index name ``"model"``), sorted best to worst by ``log_z``,
        with columns

        - ``log_z``, ``se``, ``method``: the estimates;
        - ``d_log_z``: best ``log_z`` minus this one (>= 0), ``d_log_z_se`` its standard
          error (0 for the best model);
        - ``log_bf``: log Bayes factor of this model over the best (<= 0);
        - ``prior_prob``, ``post_prob``: prior and posterior model probabilities;
        - ``post_prob_se``: delta-method standard error of ``post_prob`` (a linearization:
          reliable only while the log Z errors are well below 1).

    Raises
    ------
    TypeError
        If ``models`` is not a mapping or a value holds no estimate.
    ValueError
        If ``models`` is empty, a ``log_z`` is not finite, or ``prior_probs`` is invalid.

    Warns
    -----
    CrossCheckWarning
        If the estimates come from different methods.
    ConvergenceWarning
        If a standard error is not finite.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_evidence.estimators.record import EvidenceEstimate
    >>> table = compare({"a": EvidenceEstimate(0.0, 0.01, "ct"),
    ...                  "b": EvidenceEstimate(np.log(3.0), 0.01, "ct")})
    >>> table[["d_log_z", "post_prob"]].round(3)  # doctest: +NORMALIZE_WHITESPACE
           d_log_z  post_prob
    model
    b        0.000       0.75
    a        1.099       0.25
    """
    if not isinstance(models, Mapping):
        raise TypeError(f"models must be a dict of name to results, got {type(models).__name__}.")
    if not models:
        raise ValueError("models is empty; pass at least one model.")
    names = list(models)
    log_prior = _log_prior(names, prior_probs)
    estimates = _estimates(models)
    log_z = np.array([estimates[name].log_z for name in names], dtype=np.float64)
    se = np.array([estimates[name].se for name in names], dtype=np.float64)
    log_post = log_z + log_prior
    post = np.exp(normalize_log_weights(log_post))
    best = int(np.argmax(log_z))
    d_log_z = log_z[best] - log_z
    d_se = np.hypot(se[best], se)
    d_se[best] = 0.0
    table = pd.DataFrame(
        {
            "log_z": log_z,
            "se": se,
            "method": [estimates[name].method for name in names],
            "d_log_z": d_log_z,
            "d_log_z_se": d_se,
            "log_bf": log_z - log_z[best],
            "prior_prob": np.exp(log_prior),
            "post_prob": post,
            "post_prob_se": _post_prob_se(post, se),
        },
        index=pd.Index(names, name="model"),
    )
    return table.sort_values("log_z", ascending=False, kind="stable")[_COLUMNS]
