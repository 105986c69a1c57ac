"""Temperature schedules of the geometric path: ``K + 1`` values of ``beta`` from 0 to 1.

Fixed shapes (:func:`linear_schedule`, :func:`geometric_schedule`, :func:`sigmoidal_schedule`)
and one of equal thermodynamic length from a pilot run (:func:`adaptive_schedule`), for the
AIS, LIS and SMC engines alike; and a pilot's step sizes carried to a new schedule
(:func:`interpolate_step_sizes`).
"""

from __future__ import annotations

import numpy as np

from ..estimators.ladder import validate_ladder

__all__ = [
    "adaptive_schedule",
    "geometric_schedule",
    "interpolate_step_sizes",
    "linear_schedule",
    "sigmoidal_schedule",
]


def linear_schedule(n: int) -> np.ndarray:
    """``n`` equal stages: ``n + 1`` values of ``beta`` from 0 to 1."""
    return np.linspace(0.0, 1.0, int(n) + 1)


def geometric_schedule(n: int, beta_min: float = 1e-4) -> np.ndarray:
    """``n`` stages: ``0`` followed by ``n`` geometrically spaced values ``beta_min .. 1``.

    Examples
    --------
    >>> geometric_schedule(4, beta_min=1e-3).round(4).tolist()
    [0.0, 0.001, 0.01, 0.1, 1.0]
    """
    if not 0.0 < beta_min < 1.0:
        raise ValueError("beta_min must be in (0, 1)")
    return np.concatenate([[0.0], np.geomspace(beta_min, 1.0, int(n))])


def sigmoidal_schedule(n: int, scale: float = 4.0) -> np.ndarray:
    """``n`` stages with sigmoid spacing (Neal 2001; Grosse et al. 2015), dense near both ends.

    ``beta_t = (s(t) - s(0)) / (s(n) - s(0))`` with ``s(t) = sigmoid(scale * (2 t / n - 1))``.

    Examples
    --------
    >>> b = sigmoidal_schedule(10); float(b[0]), float(b[-1]), bool(abs(b[5] - 0.5) < 1e-12)
    (0.0, 1.0, True)
    """
    t = np.arange(int(n) + 1) / int(n)
    s = 1.0 / (1.0 + np.exp(-float(scale) * (2.0 * t - 1.0)))
    return (s - s[0]) / (s[-1] - s[0])


def adaptive_schedule(pilot_betas, path_var, n: int) -> np.ndarray:
    """``n`` stages of equal thermodynamic length, from a pilot run's path variances.

    The variance of a stage's log-weight increment is about ``d_beta**2 * Var_beta(u)``
    with ``u = log f - log q``; with ``d_beta`` proportional to ``1 / sd_beta(u)`` every stage
    contributes the same variance, which minimizes their sum for a given ``n`` (the
    thermodynamic length ``L = int sd_beta(u) d beta`` is split into ``n`` equal parts).

    Parameters
    ----------
    pilot_betas : array_like, shape (m + 1,)
        The pilot's schedule.
    path_var : array_like, shape (m + 1,)
        ``Var(u)`` at each pilot ``beta`` (e.g. :func:`~.ais.run_forward_ais`'s ``info.path_var``);
        ``nan`` entries are interpolated from their neighbours.
    n : int
        Stages of the new schedule.

    Returns
    -------
    ndarray, shape (n + 1,)
        From 0 to 1, non-decreasing.

    Examples
    --------
    >>> b = np.linspace(0.0, 1.0, 101)
    >>> new = adaptive_schedule(b, 1.0 / (0.01 + b) ** 2, 10)  # sd(u) = 1 / (0.01 + beta)
    >>> bool(new[1] < 0.01 and new[-2] > 0.6)
    True
    """
    betas = validate_ladder(pilot_betas, strict=False)
    var = np.asarray(path_var, dtype=float)
    if var.shape != betas.shape:
        raise ValueError("path_var must have one value per pilot beta")
    ok = np.isfinite(var) & (var >= 0.0)
    if not ok.any():
        raise ValueError("the pilot run gave no finite path variance: cannot adapt the schedule")
    sd = np.sqrt(np.interp(betas, betas[ok], var[ok]))
    sd = sd + 1e-3 * max(float(np.mean(sd)), 1e-12)  # no stage of zero width
    length = np.concatenate([[0.0], np.cumsum(0.5 * (sd[1:] + sd[:-1]) * np.diff(betas))])
    new = np.interp(np.linspace(0.0, length[-1], int(n) + 1), length, betas)
    new[0], new[-1] = 0.0, 1.0
    return np.maximum.accumulate(new)


def interpolate_step_sizes(pilot_betas, pilot_step_sizes, betas) -> np.ndarray:
    """Step sizes for a new schedule from a pilot's per-stage ones (log-linear in beta).

    Parameters
    ----------
    pilot_betas, pilot_step_sizes : array_like, shape (S,)
        E.g. :func:`~.ais.run_forward_ais`'s ``info.beta`` and ``info.step_size``;
        ``nan`` entries (stages without moves) are skipped.
    betas : array_like, shape (n + 1,)

    Returns
    -------
    ndarray, shape (n + 1,)
        Interpolated in ``log step_size``; constant beyond the pilot's finite range.

    Examples
    --------
    >>> interpolate_step_sizes([0, 0.5, 1], [np.nan, 0.4, np.nan], [0, 1]).tolist()
    [0.4, 0.4]
    """
    pb, ps = np.asarray(pilot_betas, float), np.asarray(pilot_step_sizes, float)
    ok = np.isfinite(ps) & (ps > 0)
    if not np.any(ok):
        raise ValueError("the pilot has no finite positive step size")
    return np.exp(np.interp(np.asarray(betas, float), pb[ok], np.log(ps[ok])))
