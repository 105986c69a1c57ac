"""Temperature schedules ``0 = beta_0 <= ... <= beta_K = 1``: a default ladder and the one
check every schedule of the package goes through. Pure numpy."""

from __future__ import annotations

import numpy as np

__all__ = ["default_ladder", "validate_ladder"]


def default_ladder(n_levels: int = 32, power: float = 4.0) -> np.ndarray:
    """Power ladder ``beta_k = (k / (K - 1))**power`` (``K = n_levels >= 2``, ``power > 0``).

    Dense near ``beta = 0``, where ``E_beta[delta]`` changes fastest; ``power = 1`` is linear.

    Examples
    --------
    >>> default_ladder(3, 2.0).tolist()
    [0.0, 0.25, 1.0]
    """
    if int(n_levels) != n_levels or n_levels < 2:
        raise ValueError(f"n_levels must be an integer >= 2, got {n_levels}")
    if not (np.isfinite(power) and power > 0):
        raise ValueError(f"power must be positive and finite, got {power}")
    return np.linspace(0.0, 1.0, int(n_levels)) ** float(power)


def validate_ladder(betas, *, strict: bool = True, what: str = "betas") -> np.ndarray:
    """Return ``betas`` as floats after checking ``0 = beta_0 < ... < beta_{K-1} = 1``.

    The one check of a temperature schedule, for the RTS ladders, the LIS links, and the
    AIS and SMC schedules.

    Parameters
    ----------
    betas : array_like
        The schedule.
    strict : bool, default True
        Strictly increasing; ``False`` accepts repeated values (AIS and SMC schedules, where
        a repeated ``beta`` is a stage of moves with no reweighting).
    what : str, default "betas"
        The name used in the error message.

    Raises
    ------
    ValueError
        Unless it is 1-D with ``K >= 2``, finite, increasing (strictly where ``strict``),
        starts at exactly 0 and ends at exactly 1.

    Examples
    --------
    >>> validate_ladder([0, 0.5, 1]).tolist()
    [0.0, 0.5, 1.0]
    >>> validate_ladder([0, 0.5, 0.5, 1], strict=False).tolist()
    [0.0, 0.5, 0.5, 1.0]
    """
    b = np.asarray(betas, dtype=float)
    if b.ndim != 1 or b.size < 2:
        raise ValueError(f"{what} must be 1-D with at least 2 levels, got shape {b.shape}")
    if not np.all(np.isfinite(b)):
        raise ValueError(f"{what} must be finite")
    if b[0] != 0.0 or b[-1] != 1.0:
        raise ValueError(f"{what} must start at 0 and end at 1, got {b[0]} ... {b[-1]}")
    steps = np.diff(b)
    if np.any(steps <= 0) if strict else np.any(steps < 0):
        raise ValueError(f"{what} must be {'strictly increasing' if strict else 'non-decreasing'}")
    return b
