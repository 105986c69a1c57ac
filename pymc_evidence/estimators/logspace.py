"""Log-space helpers shared by every estimator and engine: means, weights, resampling.

Pure numpy; nothing here knows about PyMC or xarray. Sums of exponentials are taken with
:func:`logsumexp` (it shifts by the maximum, as :func:`scipy.special.logsumexp` does, at a
sixth of its cost on the small arrays of the annealing loops); the helpers below are the
combinations that the estimators and engines used to write out each on their own.

Non-finite rule: a log weight of ``-inf`` is a weight of zero. The weight-normalising and
resampling functions refuse ``NaN`` and an all-zero set (:func:`checked_log_weights`);
:func:`kish_ess` returns ``0`` wherever the ESS is undefined. :func:`emit_warnings` is
:mod:`pymc_evidence.record`'s, imported here so that its old import path keeps working.
"""

from __future__ import annotations

import math

import numpy as np

from ..record import emit_warnings

__all__ = [
    "RESAMPLING",
    "checked_log_weights",
    "nan_as_zero_weight",
    "emit_warnings",
    "kish_ess",
    "log_mean_exp",
    "logsumexp",
    "log_mean_exp_se",
    "normalize_log_weights",
    "resample_indices",
    "residual_resample",
    "systematic_resample",
    "weighted_var",
]


def nan_as_zero_weight(log_w) -> np.ndarray:
    """``log_w`` as floats with every ``NaN`` (``-inf - -inf``, ``0 * inf``) as ``-inf``.

    The one rule by which a log weight, log ratio or log increment that is undefined
    counts as a weight of zero, for the engines' increments and the LIS bridges alike.

    Examples
    --------
    >>> nan_as_zero_weight([0.5, np.nan, -np.inf]).tolist()
    [0.5, -inf, -inf]
    """
    log_w = np.asarray(log_w, dtype=float)
    return np.where(np.isnan(log_w), -np.inf, log_w)


def logsumexp(x, axis=None):
    """``log sum exp(x)`` over ``axis`` (all values when omitted), shifted by the maximum.

    The numbers of :func:`scipy.special.logsumexp` (``-inf`` for a slice of only ``-inf``,
    ``inf`` and ``NaN`` propagated) without its array-API dispatch, which costs several
    times this function's own work on 1000 values (measured in :doc:`/performance`, "What a
    user meets: the first call on a new model"): the SMC and annealing loops call it
    thousands of times per run. Written here because no library offers the cheap form.

    Examples
    --------
    >>> round(logsumexp(np.log([1.0, 3.0])), 6)  # log 4
    1.386294
    >>> logsumexp([[0.0, -np.inf], [-np.inf, -np.inf]], axis=1).tolist()
    [0.0, -inf]
    """
    x = np.asarray(x, dtype=float)
    shift = np.max(x, axis=axis, keepdims=True) if x.size else np.zeros((1,) * x.ndim)
    shift = np.where(np.isfinite(shift), shift, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(x - shift), axis=axis, keepdims=True)) + shift
    return float(out.reshape(())) if axis is None else np.squeeze(out, axis=axis)


def log_mean_exp(x, axis=None):
    """``log mean exp(x)``: ``logsumexp(x, axis) - log n``, ``n`` values averaged.

    Parameters
    ----------
    x : array_like
        Log values (``-inf`` is a zero; a slice of only ``-inf`` gives ``-inf``).
    axis : int or tuple of int, optional
        Axes to average over; all of them when omitted.

    Returns
    -------
    float or ndarray
        A float when ``axis`` is None, else an array without the averaged axes.

    Examples
    --------
    >>> round(log_mean_exp(np.log([1.0, 3.0])), 6)  # log 2
    0.693147
    >>> log_mean_exp(np.log([[1.0, 3.0], [2.0, 2.0]]), axis=1).round(6).tolist()
    [0.693147, 0.693147]
    """
    x = np.asarray(x, dtype=float)
    if axis is None:
        n = x.size
    else:
        n = math.prod(x.shape[a] for a in np.atleast_1d(axis))
    with np.errstate(divide="ignore"):
        out = logsumexp(x, axis=axis) - np.log(n)
    return float(out) if axis is None else out


def log_mean_exp_se(log_w) -> tuple[float, float]:
    """``log mean exp(log_w)`` and its delta-method se ``sd(w / mean w) / sqrt(n)``.

    The se of the log of an unbiased mean of the weights ``w`` (e.g. independent AIS, LIS
    or SMC runs); ``NaN`` for fewer than two values.

    Examples
    --------
    >>> value, se = log_mean_exp_se(np.log([0.5, 1.5]))
    >>> round(value, 12), round(se, 6)
    (0.0, 0.5)
    """
    lw = np.asarray(log_w, dtype=float).ravel()
    value = log_mean_exp(lw)
    if lw.size < 2:
        return value, float("nan")
    return value, float(np.std(np.exp(lw - value), ddof=1) / np.sqrt(lw.size))


def checked_log_weights(log_w, name: str = "log_w") -> np.ndarray:
    """``log_w`` as a flat float array; ``ValueError`` if empty, with NaN or all ``-inf``."""
    lw = np.asarray(log_w, dtype=float).ravel()
    if lw.size == 0 or np.any(np.isnan(lw)):
        raise ValueError(f"{name} must be a non-empty array without NaN")
    if np.all(lw == -np.inf):
        raise ValueError(f"every weight in {name} is zero")
    return lw


def normalize_log_weights(log_w) -> np.ndarray:
    """Log weights shifted so that their exponentials sum to one (flattened).

    Examples
    --------
    >>> np.exp(normalize_log_weights([0.0, np.log(3.0)])).round(3).tolist()
    [0.25, 0.75]
    """
    lw = checked_log_weights(log_w)
    return lw - logsumexp(lw)


def kish_ess(log_weights, axis=None):
    """Kish effective sample size ``(sum w)^2 / sum w^2`` of importance weights.

    Parameters
    ----------
    log_weights : array_like
        Logs of unnormalised, non-negative weights (``-inf`` is a zero weight).
    axis : int, optional
        Axis holding the weights of one set; all values form one set when omitted.

    Returns
    -------
    float or ndarray
        Between 1 and the number of weights; ``0`` where it is undefined: no weight, every
        weight zero, or an infinite weight. A float when ``axis`` is None.

    Examples
    --------
    >>> round(kish_ess(np.zeros(10)), 6)
    10.0
    >>> round(kish_ess([0.0, 0.0, -np.inf, -np.inf]), 6)
    2.0
    >>> kish_ess([[0.0, 0.0], [-np.inf, -np.inf]], axis=1).tolist()
    [2.0, 0.0]
    """
    lw = np.asarray(log_weights, dtype=float)
    if axis is None:
        lw = lw.ravel()
    with np.errstate(divide="ignore", invalid="ignore"):
        log_ess = 2.0 * logsumexp(lw, axis=axis) - logsumexp(2.0 * lw, axis=axis)
    ess = np.where(np.isfinite(log_ess), np.exp(log_ess), 0.0)
    return float(ess) if axis is None else ess


def weighted_var(values, log_w) -> float:
    """Variance of ``values`` under the normalized weights ``exp(log_w)``; pairs with a
    non-finite value or weight are left out (NaN when fewer than two remain).

    Examples
    --------
    >>> weighted_var([0.0, 2.0, 100.0], [0.0, 0.0, -np.inf])
    1.0
    """
    values, log_w = np.asarray(values, dtype=float), np.asarray(log_w, dtype=float)
    ok = np.isfinite(values) & np.isfinite(log_w)
    if ok.sum() < 2:
        return np.nan
    w = np.exp(log_w[ok] - np.max(log_w[ok]))
    return float(np.average((values[ok] - np.average(values[ok], weights=w)) ** 2, weights=w))


def systematic_resample(log_w, n_out: int, rng: np.random.Generator) -> np.ndarray:
    """Indices of ``n_out`` particles by systematic resampling (one uniform draw).

    Examples
    --------
    >>> idx = systematic_resample(np.log([0.5, 0.25, 0.25]), 4, np.random.default_rng(0))
    >>> np.bincount(idx, minlength=3).tolist()
    [2, 1, 1]
    """
    w = np.exp(normalize_log_weights(log_w))
    positions = (rng.random() + np.arange(int(n_out))) / int(n_out)
    cumulative = np.cumsum(w)
    cumulative[-1] = 1.0
    return np.minimum(np.searchsorted(cumulative, positions, side="right"), w.size - 1)


def residual_resample(log_w, n_out: int, rng: np.random.Generator) -> np.ndarray:
    """Indices by residual resampling: ``floor(n_out w~_r)`` copies, the rest multinomial.

    Examples
    --------
    >>> idx = residual_resample(np.log([0.5, 0.3, 0.2]), 10, np.random.default_rng(0))
    >>> np.bincount(idx, minlength=3).tolist()
    [5, 3, 2]
    """
    w = np.exp(normalize_log_weights(log_w))
    expected = int(n_out) * w
    counts = np.floor(expected).astype(int)
    rest = int(n_out) - int(counts.sum())
    if rest > 0:
        residual = expected - counts
        counts += rng.multinomial(rest, residual / residual.sum())
    return np.repeat(np.arange(w.size), counts)


#: Resampling schemes :func:`resample_indices` knows.
RESAMPLING = {"systematic": systematic_resample, "residual": residual_resample}


def resample_indices(log_w, n_out: int, rng: np.random.Generator, method="systematic"):
    """Dispatch to :func:`systematic_resample` or :func:`residual_resample`.

    Examples
    --------
    >>> resample_indices([0.0, -np.inf], 3, np.random.default_rng(0), "residual").tolist()
    [0, 0, 0]
    """
    if method not in RESAMPLING:
        raise ValueError(f"resampling must be one of {tuple(RESAMPLING)}, got {method!r}")
    return RESAMPLING[method](log_w, n_out, rng)
