"""Rao-Blackwellized simulated tempering (RTS) evidence estimators (Carlson et al. 2016).

Levels ``k = 0..K-1`` carry ``f_k(x) = f(x)**beta_k q(x)**(1 - beta_k)`` with ``q`` a
*normalised* base, ``beta_0 = 0`` and ``beta_{K-1} = 1``, so ``Z_0 = 1`` and ``Z_{K-1} = Z``.
A simulated-tempering sampler targets ``q(x, k) ∝ f_k(x) r_k / Zhat_k`` (``r`` a prior over
levels, ``Zhat`` the current guesses) and records ``delta(x) = log f(x) - log q(x)`` per draw.
Everything here depends on ``x`` only through ``delta``:

* ``log q(k | x) = logsoftmax_k(beta_k delta + log r_k - log Zhat_k)`` (eq. 7);
* ``c_k = mean over draws of q(k | x)`` estimates the level occupancy ``q(k)`` (eq. 9);
* ``log Z_k = log Zhat_k - log Zhat_0 + log r_0 - log r_k + log c_k - log c_0`` (eq. 12).

``log_r`` arguments may be unnormalised; they are normalised internally (``r`` sums to 1).
The draws must come from a run with ``Zhat`` *frozen*; adaptation alternates short runs and
:func:`rts_update` until :func:`adaptation_converged`. Pure numpy/scipy.

This module holds the RTS estimate and the adaptation of ``Zhat``; the ladder and
:func:`level_log_conditionals` live in :mod:`.rts_levels`, thermodynamic integration in
:mod:`.rts_ti` and the count-based tools in :mod:`.rts_counts`. All are re-exported here.
"""

from __future__ import annotations

import numpy as np

from .diagnostics import WeightWarning, tagged
from .logspace import kish_ess
from .mcse import chain_agreement_pvalue, ess_mean, log_ratio_of_means, ratio_influence
from .record import EvidenceEstimate
from .rts_counts import naive_count_log_evidence, round_trips
from .rts_levels import (
    as_vector,
    chain_max_z,
    check_log_cond,
    default_ladder,
    level_log_c,
    level_log_conditionals,
    level_log_r,
    level_record,
    level_setup,
    validate_ladder,
)
from .rts_ti import rb_thermodynamic_integration

__all__ = [
    "default_ladder",
    "validate_ladder",
    "level_log_conditionals",
    "rts_log_evidence",
    "rts_level_estimates",
    "rts_update",
    "adaptation_converged",
    "rb_thermodynamic_integration",
    "naive_count_log_evidence",
    "round_trips",
]

#: A level is "barely visited" when ``c_k < r_k / RARE_LEVEL_FACTOR``.
RARE_LEVEL_FACTOR = 20.0
#: Occupancy is "far from r" when ``max_k |c_k - r_k| > FAR_FROM_R / K`` (5x the paper's
#: adaptation rule ``0.1 / K``): ``Zhat`` was not adapted, so the error bar is less reliable.
FAR_FROM_R = 0.5
#: Floor applied to ``c`` in :func:`rts_update` (the smallest normal double).
C_FLOOR = float(np.finfo(float).tiny)


def rts_level_estimates(log_cond, betas, log_zhat, log_r=None):
    """RTS estimates of ``log Z_k`` at every level (eq. 12) and the occupancies ``c``.

    Arguments as in :func:`rts_log_evidence`. Returns ``log_z``, shape (K,), with
    ``log_z[0] = 0`` and ``log_z[-1]`` the evidence, and ``c``, shape (K,), summing to 1.

    Examples
    --------
    >>> lq = level_log_conditionals([0.0, 2.0], [0.0, 1.0], [0.0, 0.0])
    >>> log_z, c = rts_level_estimates(lq, [0.0, 1.0], [0.0, 0.0])
    >>> round(float(log_z[1]), 4), c.round(4).tolist()  # log(0.6904 / 0.3096)
    (0.802, [0.3096, 0.6904])
    """
    b, lz, lr = level_setup(betas, log_zhat, log_r)
    log_c = level_log_c(check_log_cond(log_cond, b.size))
    return lz - lz[0] + lr[0] - lr + log_c - log_c[0], np.exp(log_c)


def rts_log_evidence(log_cond, betas, log_zhat, log_r=None, *, method="st") -> EvidenceEstimate:
    """RTS estimate of ``log Z = log Z_{K-1} / Z_0`` (eq. 12) with an MCMC-aware error bar.

    ``log c_{K-1} - log c_0`` is :func:`~.mcse.log_ratio_of_means` of ``q(K-1 | x)`` and
    ``q(0 | x)``: a delta-method se (eq. 16) whose variances include the autocorrelation
    (:func:`~.mcse.mcse_mean`, multi-chain); the same per chain. ``log_zhat[0]`` need not be 0.

    Diagnostics (floats): ``n_chains``, ``n_draws``, ``n_levels``; ``c_max_abs_dev``
    (``max |c_k - r_k|``), ``c_min``, ``c_min_ratio`` (``min c_k / r_k``), ``c_end_0``,
    ``c_end_last``; ``mean_beta`` (``sum c_k beta_k``); ``ess_end_0``, ``ess_end_last``
    (Kish ESS of the end-level weights ``q(k | x)``); ``ess`` (ESS of the influence series);
    ``chain_disagreement`` (p-value, :func:`~.mcse.chain_agreement_pvalue`; ``nan`` for one
    chain) and ``chain_max_z``.

    Warnings (returned and emitted as :class:`~.diagnostics.EvidenceWarning`): levels with
    ``c_k < r_k / 20`` ("barely visited": the error bar needs many draws there, and for an end
    level the estimate is unreliable); ``max |c - r| > 0.5 / K`` (``Zhat`` not adapted: still
    consistent, but the sampler mixes poorly over levels and the se is less trustworthy); and
    those of :func:`~.diagnostics.evidence_messages` (chain disagreement, non-finite se).

    Parameters
    ----------
    log_cond : array_like, shape (chain, draw, K) or (draw, K)
        :func:`level_log_conditionals` at each draw of a frozen-``Zhat`` run.
    betas, log_zhat, log_r : array_like, shape (K,)
        As used to compute ``log_cond``.
    method : str, default "st"

    Returns
    -------
    EvidenceEstimate

    Examples
    --------
    >>> lq = level_log_conditionals(np.full((2, 50), 2.0), [0.0, 1.0], [0.0, 1.5])
    >>> est = rts_log_evidence(lq, [0.0, 1.0], [0.0, 1.5])  # f = e^2 q: log Z = 2
    >>> round(est.log_z, 12), est.se
    (2.0, 0.0)
    """
    b, lz, lr = level_setup(betas, log_zhat, log_r)
    lc = check_log_cond(log_cond, b.size)
    value, se, per_chain, per_chain_se = log_ratio_of_means(lc[..., -1], lc[..., 0])
    shift = lz[-1] - lz[0] + lr[0] - lr[-1]
    c, r = np.exp(level_log_c(lc)), np.exp(lr)
    infl = ratio_influence(lc[..., -1], lc[..., 0])
    diag = {
        "n_chains": float(lc.shape[0]),
        "n_draws": float(lc.shape[0] * lc.shape[1]),
        "n_levels": float(b.size),
        "c_max_abs_dev": float(np.max(np.abs(c - r))),
        "c_min": float(c.min()),
        "c_min_ratio": float(np.min(c / r)),
        "c_end_0": float(c[0]),
        "c_end_last": float(c[-1]),
        "mean_beta": float(c @ b),
        "ess_end_0": kish_ess(lc[..., 0]),
        "ess_end_last": kish_ess(lc[..., -1]),
        "ess": ess_mean(infl),
        "chain_disagreement": chain_agreement_pvalue(infl),
        "chain_max_z": chain_max_z(value, per_chain, per_chain_se),
    }
    messages = []
    rare = np.flatnonzero(c < r / RARE_LEVEL_FACTOR)
    if rare.size:
        listed = ", ".join(f"{k} (beta={b[k]:.3g}, c/r={c[k] / r[k]:.2g})" for k in rare[:8])
        messages.append(
            f"{rare.size} level(s) barely visited (c_k < r_k/{RARE_LEVEL_FACTOR:g}): {listed}"
            f"{' ...' if rare.size > 8 else ''}; log_zhat is far from log Z there: adapt it"
        )
    if diag["c_max_abs_dev"] > FAR_FROM_R / b.size:
        messages.append(
            f"level occupancy far from r: max |c_k - r_k| = {diag['c_max_abs_dev']:.3g} > "
            f"{FAR_FROM_R:g}/K; the estimate is consistent but log_zhat was not adapted, so "
            "mixing over levels is poor and the se less reliable"
        )
    messages = tagged(messages, WeightWarning)
    return level_record(shift + value, se, method, shift + per_chain, per_chain_se, diag, messages)


def rts_update(log_zhat, c, log_r=None, damping: float = 1.0) -> np.ndarray:
    """Adaptation step ``log Zhat_k += damping [(log c_k - log r_k) - (log c_0 - log r_0)]``.

    The result is pinned to ``log Zhat_0 = 0``. ``damping = 1`` is eq. 12 (equal to
    :func:`rts_level_estimates`); ``0 < damping < 1`` is the partial update of eq. 24.
    ``c`` is clipped below at ``C_FLOOR`` (smallest normal double, ``log = -708``) so an
    underflowed Rao-Blackwellized ``c_k = 0`` gives a large but finite step that cannot
    overshoot. Count-based ``c`` with empty levels needs pseudo-counts instead.

    Examples
    --------
    >>> rts_update([0.0, 1.0], [0.25, 0.75]).round(4).tolist()  # 1 + log 3
    [0.0, 2.0986]
    """
    n = np.size(log_zhat)
    lz, lr = as_vector(log_zhat, n, "log_zhat"), level_log_r(log_r, n)
    c = np.asarray(c, dtype=float)
    if c.shape != (n,) or not np.all(np.isfinite(c) & (c >= 0)):
        raise ValueError(f"c must be finite, non-negative and shaped ({n},)")
    step = np.log(np.maximum(c, C_FLOOR)) - lr
    return lz - lz[0] + float(damping) * (step - step[0])


def adaptation_converged(c, log_r=None, tol: float = 0.1) -> bool:
    """The paper's stopping rule ``max_k |c_k - r_k| < tol / K``.

    Examples
    --------
    >>> adaptation_converged([0.26, 0.24, 0.25, 0.25]), adaptation_converged([0.3, 0.2, 0.25, 0.25])
    (True, False)
    """
    c = np.asarray(c, dtype=float)
    r = np.exp(level_log_r(log_r, c.size))
    return bool(np.max(np.abs(c - r)) < tol / c.size)
