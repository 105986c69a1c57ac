"""Statistics of the visited level indices of a simulated-tempering run.

The non-Rao-Blackwellized (count-based) evidence estimate, for tests and comparisons, and
the number of ``0 -> K-1 -> 0`` round trips, a mixing diagnostic. Pure numpy.
"""

from __future__ import annotations

import numpy as np

from .mcse import log_ratio_of_means
from .record import EvidenceEstimate
from .rts_levels import level_setup

__all__ = ["naive_count_log_evidence", "round_trips"]


def _check_levels(levels, n_levels: int) -> np.ndarray:
    lv = np.asarray(levels)
    lv = lv[None] if lv.ndim == 1 else lv
    if lv.ndim != 2 or lv.size == 0 or not np.issubdtype(lv.dtype, np.integer):
        raise ValueError(f"levels must be a non-empty integer array (chain, draw), got {lv.shape}")
    if lv.min() < 0 or lv.max() >= n_levels:
        raise ValueError(f"levels must lie in 0..{n_levels - 1}")
    return lv


def naive_count_log_evidence(levels, betas, log_zhat, log_r=None) -> EvidenceEstimate:
    """Non-Rao-Blackwellized eq. 12, with ``c_k`` the fraction of draws at level ``k``.

    **For tests and comparisons only**: noisier than :func:`rts_log_evidence`, and infinite
    when an end level is never visited. No warnings are issued.

    Examples
    --------
    >>> est = naive_count_log_evidence([[0, 1, 1, 0, 1, 1]], [0.0, 1.0], [0.0, 0.0])
    >>> round(est.log_z, 4)  # log 2
    0.6931
    """
    b, lz, lr = level_setup(betas, log_zhat, log_r)
    lv = _check_levels(levels, b.size)
    with np.errstate(divide="ignore"):
        log_last, log_0 = np.log(lv == b.size - 1), np.log(lv == 0)
    value, se, per_chain, per_chain_se = log_ratio_of_means(log_last, log_0)
    shift = lz[-1] - lz[0] + lr[0] - lr[-1]
    diag = {"n_chains": float(lv.shape[0]), "n_draws": float(lv.size)}
    diag |= {"c_end_0": float(np.mean(lv == 0)), "c_end_last": float(np.mean(lv == b.size - 1))}
    est = shift + per_chain
    return EvidenceEstimate(float(shift + value), se, "st_counts", est, per_chain_se, diag)


def round_trips(levels, n_levels: int) -> np.ndarray:
    """Completed ``0 -> K-1 -> 0`` level round trips per chain.

    A trip starts at a visit of level 0, needs a later visit of ``K-1`` and ends at the next
    visit of 0 (which starts the next trip); draws before the first visit of 0 are ignored.

    ``levels`` is an integer array shaped ``(chain, draw)`` (1-D: one chain); returns an int
    array shaped ``(chain,)``.

    Examples
    --------
    >>> round_trips([[0, 1, 2, 1, 0, 2, 0], [2, 0, 1, 2, 1, 1, 1]], 3).tolist()
    [2, 0]
    """
    if int(n_levels) != n_levels or n_levels < 2:
        raise ValueError(f"n_levels must be an integer >= 2, got {n_levels}")
    lv = _check_levels(levels, int(n_levels))
    out = np.zeros(lv.shape[0], dtype=int)
    for i, chain in enumerate(lv):
        ends = chain[(chain == 0) | (chain == n_levels - 1)]
        if ends.size == 0:
            continue
        ends = ends[np.concatenate([[True], ends[1:] != ends[:-1]])]  # alternating 0 / K-1
        first = np.flatnonzero(ends == 0)
        out[i] = (ends.size - first[0] - 1) // 2 if first.size else 0
    return out
