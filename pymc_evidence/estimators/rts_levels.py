"""Temperature ladders and level conditionals ``q(k | x)`` of simulated tempering.

The building blocks shared by the RTS estimators (:mod:`.rts`, :mod:`.rts_ti`,
:mod:`.rts_counts`): ladder construction and checks, ``log q(k | x)`` (Carlson et al. 2016,
eq. 7), input validation of stored conditionals, the occupancies ``c_k`` and the common
construction of the estimate record. Pure numpy/scipy.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from .diagnostics import evidence_messages
from .ladder import default_ladder, validate_ladder
from .logspace import emit_warnings, log_mean_exp, normalize_log_weights
from .record import EvidenceEstimate

__all__ = ["default_ladder", "validate_ladder", "level_log_conditionals"]

#: Rows of ``log_cond`` must have ``|logsumexp| <`` this.
_NORM_TOL = 1e-6


def as_vector(x, n: int, name: str) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if x.shape != (n,) or not np.all(np.isfinite(x)):
        raise ValueError(f"{name} must be finite and shaped ({n},), got {x.shape}")
    return x


def level_log_r(log_r, n: int) -> np.ndarray:
    """Normalised ``log r`` of length ``n`` (uniform if ``None``)."""
    lr = np.zeros(n) if log_r is None else as_vector(log_r, n, "log_r")
    return normalize_log_weights(lr)


def level_setup(betas, log_zhat, log_r):
    b = validate_ladder(betas)
    return b, as_vector(log_zhat, b.size, "log_zhat"), level_log_r(log_r, b.size)


def level_log_conditionals(delta, betas, log_zhat, log_r=None) -> np.ndarray:
    """``log q(k | x) = logsoftmax_k(beta_k delta + log r_k - log Zhat_k)`` (eq. 7).

    Parameters
    ----------
    delta : array_like, any shape ``S``
        ``log f(x) - log q(x)`` per draw. ``-inf`` puts all mass on level 0 and ``+inf`` on
        level ``K-1`` (the limits); ``nan`` gives ``nan`` rows.
    betas, log_zhat, log_r : array_like, shape (K,)
        Ladder; current guesses of ``log Z_k``; log prior over levels (uniform if ``None``).

    Returns
    -------
    ndarray, shape ``S + (K,)``

    Examples
    --------
    >>> lq = level_log_conditionals([0.0, 2.0], [0.0, 1.0], [0.0, 0.0])
    >>> np.exp(lq).round(3).tolist()
    [[0.5, 0.5], [0.119, 0.881]]
    """
    b, lz, lr = level_setup(betas, log_zhat, log_r)
    d = np.asarray(delta, dtype=float)[..., None]
    with np.errstate(invalid="ignore"):
        logits = np.where(b == 0.0, 0.0, b * d) + lr - lz
        out = logits - special.logsumexp(logits, axis=-1, keepdims=True)
    top = np.where(np.arange(b.size) == b.size - 1, 0.0, -np.inf)
    out = np.where(d == np.inf, top, out)
    return np.where(np.isnan(d), np.nan, out)


def check_log_cond(log_cond, n: int) -> np.ndarray:
    """``log_cond`` as ``(chain, draw, K)`` log-probability rows; ``ValueError`` otherwise."""
    lc = np.asarray(log_cond, dtype=float)
    if lc.ndim == 2:
        lc = lc[None]
    if lc.ndim != 3 or lc.shape[-1] != n or lc.shape[1] == 0:
        raise ValueError(f"log_cond must be shaped (chain, draw, {n}), got {lc.shape}")
    if np.any(np.isnan(lc) | (lc == np.inf)):
        raise ValueError("log_cond has nan or +inf values")
    if np.max(np.abs(special.logsumexp(lc, axis=-1))) > _NORM_TOL:
        raise ValueError("log_cond rows must be log-probabilities (see level_log_conditionals)")
    return lc


def level_log_c(lc: np.ndarray) -> np.ndarray:
    """``log c_k``: log of the mean of ``q(k | x)`` over all chains and draws."""
    return log_mean_exp(lc, axis=(0, 1))


def level_kish(lc: np.ndarray) -> np.ndarray:
    """Kish ESS of the weights ``q(k | x)`` of each level (as :func:`~.logspace.kish_ess`)."""
    top = level_log_c(lc)
    with np.errstate(invalid="ignore"):
        ess = np.exp(2 * top - level_log_c(2 * lc) + np.log(lc.shape[0] * lc.shape[1]))
    return np.where(top == -np.inf, 0.0, ess)


def chain_max_z(value, per_chain, per_chain_se) -> float:
    if per_chain.size < 2:
        return float("nan")
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.max(np.abs(per_chain - value)) / np.sqrt(np.mean(per_chain_se**2)))


def level_record(value, se, method, per_chain, per_chain_se, diag, messages) -> EvidenceEstimate:
    """Add the shared messages, emit every message under its category, build the record."""
    messages = emit_warnings(messages + evidence_messages(diag, se))
    return EvidenceEstimate(float(value), se, method, per_chain, per_chain_se, diag, messages)
