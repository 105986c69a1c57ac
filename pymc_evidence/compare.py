"""Bayes factors, posterior model probabilities and a model comparison table.

:func:`bf` and :func:`post_prob` carry the names of R's ``bridgesampling`` package.
Every function accepts results containers holding a ``log_evidence`` group
(``arviz.InferenceData`` or ``xarray.DataTree``), the group itself, or
:class:`~pymc_evidence.estimators.record.EvidenceEstimate` records. Standard errors of
different models are combined as independent (separate runs): ``se = sqrt(se_a**2 + se_b**2)``.
They cover Monte Carlo error only, not bias of an estimator.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import xarray as xr

from pymc_evidence.api.readers import log_evidence
from pymc_evidence.estimators.diagnostics import ConvergenceWarning, CrossCheckWarning
from pymc_evidence.estimators.logspace import normalize_log_weights
from pymc_evidence.estimators.record import EvidenceEstimate

from .compare_table import ComparisonTable
from .estimators.diagnostics import warn_user

__all__ = ["BayesFactor", "bayes_factor", "bf", "compare", "post_prob"]

LOG_Z_COLUMNS = (
    "rank log_z se method log_z_minus_best log_z_minus_best_se prior_prob post_prob "
    "post_prob_se warning".split()
)


class BayesFactor(NamedTuple):
    """Bayes factor of model ``a`` over model ``b``, kept as its log with a standard error.

    Attributes
    ----------
    log_bf : float
        ``log Z_a - log Z_b``.
    se : float
        Standard error of ``log_bf``, ``sqrt(se_a**2 + se_b**2)`` (independent runs).
    bf : float
        The Bayes factor itself, ``Z_a / Z_b = exp(log_bf)`` (``inf`` above ``exp(709)``).
    bf_se : float
        Delta-method standard error of ``bf``, ``bf * se``: a linearization, meaningful
        while ``se`` is well below 1. For larger errors read the interval
        ``exp(log_bf ± 2 se)`` instead, which is exact for a normal ``log_bf``.
    """

    log_bf: float
    se: float

    @property
    def bf(self) -> float:
        """The Bayes factor ``exp(log_bf)``."""
        with np.errstate(over="ignore"):
            return float(np.exp(self.log_bf))

    @property
    def bf_se(self) -> float:
        """Delta-method standard error of :attr:`bf`: ``bf * se``."""
        with np.errstate(over="ignore", invalid="ignore"):
            return float(self.bf * self.se)

    def __str__(self) -> str:
        return f"log BF = {self.log_bf:.3f} ± {self.se:.3f} (BF = {self.bf:.3g})"


def _estimates(models: Mapping[Any, Any]) -> dict[Any, EvidenceEstimate]:
    """Read every model's estimate; check log Z is finite; warn on mixed methods or bad SEs.

    The warnings point at the user's call (:func:`~pymc_evidence.record.warn_user`).
    """
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
        warn_user(
            f"Comparing estimates from different methods {methods}: each standard error covers "
            "only its own Monte Carlo error, not systematic differences between methods.",
            CrossCheckWarning,
        )
    bad = [name for name, est in estimates.items() if not np.isfinite(est.se)]
    if bad:
        warn_user(
            f"Standard error of log Z is not finite for {bad}; the derived uncertainties "
            "are not meaningful.",
            ConvergenceWarning,
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
        ``log_bf = log Z_a - log Z_b`` and ``se = sqrt(se_a**2 + se_b**2)``; ``.bf`` is
        the factor ``Z_a / Z_b`` itself. :func:`bf` is the same under R's name.

    Warns
    -----
    CrossCheckWarning
        If the two estimates come from different methods.
    ConvergenceWarning
        If a standard error is not finite.

    Examples
    --------
    >>> from pymc_evidence import EvidenceEstimate
    >>> a = EvidenceEstimate(log_z=-10.0, se=0.3, method="ct")
    >>> b = EvidenceEstimate(log_z=-12.0, se=0.4, method="ct")
    >>> print(bayes_factor(a, b))
    log BF = 2.000 ± 0.500 (BF = 7.39)
    """
    return _bayes_factor(a, b)


def bf(a: Any, b: Any) -> BayesFactor:
    """Bayes factor of model ``a`` over model ``b``, as R's ``bridgesampling::bf``.

    :func:`bayes_factor` under R's name, with the same arguments, warnings and result:
    ``.bf`` is the factor ``Z_a / Z_b``, ``.log_bf`` its log, ``.se`` the standard error of
    the log and ``.bf_se`` the delta-method standard error of the factor.

    Examples
    --------
    >>> from pymc_evidence import EvidenceEstimate
    >>> result = bf(EvidenceEstimate(-3.0, 0.1, "smc"), EvidenceEstimate(-4.0, 0.2, "smc"))
    >>> print(result)
    log BF = 1.000 ± 0.224 (BF = 2.72)
    >>> round(result.bf, 4), round(result.bf_se, 4)
    (2.7183, 0.6078)
    """
    return _bayes_factor(a, b)


def _bayes_factor(a: Any, b: Any) -> BayesFactor:
    """:func:`bayes_factor` and :func:`bf`; warnings point at their caller."""
    est_a, est_b = _estimates({"a": a, "b": b}).values()
    return BayesFactor(
        log_bf=float(est_a.log_z - est_b.log_z), se=float(np.hypot(est_a.se, est_b.se))
    )


def log_prior_probs(names: list, prior_probs: Mapping | Sequence | None) -> np.ndarray:
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
    ComparisonTable
        A :class:`pandas.DataFrame` that prints rounded, with a sentence naming the
        favoured model (:class:`~pymc_evidence.compare_table.ComparisonTable`). Indexed by
        model name (index name ``"model"``), sorted best to worst by ``log_z``, with columns

        - ``rank``: 0 for the best model, 1 for the next, ...;
        - ``log_z``, ``se``, ``method``: the estimates;
        - ``log_z_minus_best``: this model's ``log_z`` minus the best one's (<= 0, 0 for
          the best): the log Bayes factor of this model over the best;
        - ``log_z_minus_best_se``: its standard error (0 for the best model);
        - ``prior_prob``, ``post_prob``: prior and posterior model probabilities;
        - ``post_prob_se``: delta-method standard error of ``post_prob`` (a linearization:
          reliable only while the log Z errors are well below 1);
        - ``warning``: True where the estimate came with warnings (``est.warnings``).

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
    >>> table[["log_z_minus_best", "post_prob"]].round(3)  # doctest: +NORMALIZE_WHITESPACE
           log_z_minus_best  post_prob
    model
    b                 0.000       0.75
    a                -1.099       0.25
    """
    probs = _probabilities(models, prior_probs)
    best = int(np.argmax(probs.log_z))
    d_se = np.hypot(probs.se[best], probs.se)
    d_se[best] = 0.0
    table = pd.DataFrame(
        {
            "log_z": probs.log_z,
            "se": probs.se,
            "method": [probs.estimates[name].method for name in probs.names],
            "log_z_minus_best": probs.log_z - probs.log_z[best],
            "log_z_minus_best_se": d_se,
            "prior_prob": np.exp(probs.log_prior),
            "post_prob": probs.post,
            "post_prob_se": probs.post_se,
            "warning": [bool(probs.estimates[name].warnings) for name in probs.names],
        },
        index=pd.Index(probs.names, name="model"),
    )
    table = table.sort_values("log_z", ascending=False, kind="stable")
    table.insert(0, "rank", np.arange(len(table)))
    return ComparisonTable(table[list(LOG_Z_COLUMNS)])


class _Probabilities(NamedTuple):
    """Every model's estimate, prior and posterior probability, in the order given."""

    names: list
    estimates: dict
    log_z: np.ndarray
    se: np.ndarray
    log_prior: np.ndarray
    post: np.ndarray
    post_se: np.ndarray


def _probabilities(models: Any, prior_probs: Mapping | Sequence | None) -> _Probabilities:
    """The one computation behind :func:`compare` and :func:`post_prob`.

    Warnings point at the caller of those two.
    """
    one = isinstance(models, xr.Dataset) or hasattr(models, "groups")  # one model's results
    if one or not isinstance(models, Mapping):
        raise TypeError(
            f"models must be a dict of name to results, got {type(models).__name__}; "
            "one result's methods (a cross-check) go to pme.compare_methods."
        )
    if not models:
        raise ValueError("models is empty; pass at least one model.")
    names = list(models)
    log_prior = log_prior_probs(names, prior_probs)
    estimates = _estimates(models)
    log_z = np.array([estimates[name].log_z for name in names], dtype=np.float64)
    se = np.array([estimates[name].se for name in names], dtype=np.float64)
    post = np.exp(normalize_log_weights(log_z + log_prior))
    return _Probabilities(names, estimates, log_z, se, log_prior, post, _post_prob_se(post, se))


def post_prob(
    *results: Any,
    prior_probs: Mapping | Sequence | None = None,
    model_names: Sequence | None = None,
) -> pd.DataFrame:
    """Posterior model probabilities, as R's ``bridgesampling::post_prob``.

    The ``prior_prob``, ``post_prob`` and ``post_prob_se`` columns of :func:`compare`, in
    the order the models were given.

    Parameters
    ----------
    *results : arviz.InferenceData, xarray.DataTree, xarray.Dataset or EvidenceEstimate
        One result per model (independent runs), each with a ``log_evidence`` group, or
        their estimates; or a single dict of model name to result; or a single list.
    prior_probs : dict or sequence of float, optional
        Prior model probabilities, as in :func:`compare`. Default: uniform.
    model_names : sequence, optional
        Names for results passed one by one (default ``0, 1, ...``); a dict names its
        models itself.

    Returns
    -------
    pandas.DataFrame
        Indexed by model name (index name ``"model"``), in the order given, with columns
        ``prior_prob``, ``post_prob`` (summing to 1) and ``post_prob_se`` (delta-method
        standard error, reliable only while the log Z errors are well below 1).

    Raises
    ------
    TypeError, ValueError
        As :func:`compare`; also for no result, ``model_names`` with a dict, or
        ``model_names`` that do not name each result once.

    Warns
    -----
    CrossCheckWarning, ConvergenceWarning
        As :func:`compare`.

    Examples
    --------
    >>> from pymc_evidence import EvidenceEstimate
    >>> a = EvidenceEstimate(-3.0, 0.1, "smc")
    >>> b = EvidenceEstimate(-4.0, 0.2, "smc")
    >>> post_prob(a, b)["post_prob"].round(4).tolist()  # e / (1 + e), 1 / (1 + e)
    [0.7311, 0.2689]
    >>> post_prob({"a": a, "b": b}, prior_probs=[0.25, 0.75]).round(3)
    ... # doctest: +NORMALIZE_WHITESPACE
           prior_prob  post_prob  post_prob_se
    model
    a            0.25      0.475         0.056
    b            0.75      0.525         0.056
    """
    models = _named(results, model_names)
    probs = _probabilities(models, prior_probs)
    values = (np.exp(probs.log_prior), probs.post, probs.post_se)
    columns = dict(zip(("prior_prob", "post_prob", "post_prob_se"), values, strict=True))
    return pd.DataFrame(columns, index=pd.Index(probs.names, name="model"))


def _named(results: tuple, model_names: Sequence | None) -> Mapping:
    """:func:`post_prob`'s arguments as a dict of model name to result (one model's
    ``Dataset``, ``DataTree`` or ``InferenceData`` is a mapping too, not a dict of models)."""
    one = results[0] if len(results) == 1 else None
    if isinstance(one, Mapping) and not isinstance(one, xr.Dataset) and not hasattr(one, "groups"):
        if model_names is not None:
            raise TypeError("model_names is for results passed one by one; a dict names them.")
        return one
    if isinstance(one, list | tuple):
        results = tuple(one)
    if not results:
        raise ValueError("no results given; pass at least one model's result.")
    names = list(range(len(results))) if model_names is None else list(model_names)
    if len(names) != len(results) or len(set(names)) != len(names):
        raise ValueError(
            f"model_names must name each of the {len(results)} results once, got {names!r}."
        )
    return dict(zip(names, results, strict=True))
