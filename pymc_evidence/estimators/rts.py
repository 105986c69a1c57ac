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
"""

from __future__ import annotations

import numpy as np
from scipy import special

from .diagnostics import ESS_W1_MIN, evidence_messages
from .logspace import emit_warnings, kish_ess, log_mean_exp, normalize_log_weights
from .mcse import (
    _as_chains,
    chain_agreement_pvalue,
    ess_mean,
    log_ratio_of_means,
    mcse_mean,
    ratio_influence,
)
from .record import EvidenceEstimate

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
#: Rows of ``log_cond`` must have ``|logsumexp| <`` this.
_NORM_TOL = 1e-6


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


def validate_ladder(betas) -> np.ndarray:
    """Return ``betas`` as floats after checking ``0 = beta_0 < ... < beta_{K-1} = 1``.

    Raises ``ValueError`` unless it is 1-D with ``K >= 2``, finite, strictly increasing,
    starts at exactly 0 and ends at exactly 1.

    Examples
    --------
    >>> validate_ladder([0, 0.5, 1]).tolist()
    [0.0, 0.5, 1.0]
    """
    b = np.asarray(betas, dtype=float)
    if b.ndim != 1 or b.size < 2:
        raise ValueError(f"betas must be 1-D with at least 2 levels, got shape {b.shape}")
    if not np.all(np.isfinite(b)):
        raise ValueError("betas must be finite")
    if b[0] != 0.0 or b[-1] != 1.0:
        raise ValueError(f"betas must start at 0 and end at 1, got {b[0]} ... {b[-1]}")
    if np.any(np.diff(b) <= 0):
        raise ValueError("betas must be strictly increasing")
    return b


def _vector(x, n: int, name: str) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if x.shape != (n,) or not np.all(np.isfinite(x)):
        raise ValueError(f"{name} must be finite and shaped ({n},), got {x.shape}")
    return x


def _log_r(log_r, n: int) -> np.ndarray:
    """Normalised ``log r`` of length ``n`` (uniform if ``None``)."""
    lr = np.zeros(n) if log_r is None else _vector(log_r, n, "log_r")
    return normalize_log_weights(lr)


def _setup(betas, log_zhat, log_r):
    b = validate_ladder(betas)
    return b, _vector(log_zhat, b.size, "log_zhat"), _log_r(log_r, b.size)


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
    b, lz, lr = _setup(betas, log_zhat, log_r)
    d = np.asarray(delta, dtype=float)[..., None]
    with np.errstate(invalid="ignore"):
        logits = np.where(b == 0.0, 0.0, b * d) + lr - lz
        out = logits - special.logsumexp(logits, axis=-1, keepdims=True)
    top = np.where(np.arange(b.size) == b.size - 1, 0.0, -np.inf)
    out = np.where(d == np.inf, top, out)
    return np.where(np.isnan(d), np.nan, out)


def _check_log_cond(log_cond, n: int) -> np.ndarray:
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


def _log_c(lc: np.ndarray) -> np.ndarray:
    """``log c_k``: log of the mean of ``q(k | x)`` over all chains and draws."""
    return log_mean_exp(lc, axis=(0, 1))


def _level_kish(lc: np.ndarray) -> np.ndarray:
    """Kish ESS of the weights ``q(k | x)`` of each level (as :func:`~.logspace.kish_ess`)."""
    top = _log_c(lc)
    with np.errstate(invalid="ignore"):
        ess = np.exp(2 * top - _log_c(2 * lc) + np.log(lc.shape[0] * lc.shape[1]))
    return np.where(top == -np.inf, 0.0, ess)


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
    b, lz, lr = _setup(betas, log_zhat, log_r)
    log_c = _log_c(_check_log_cond(log_cond, b.size))
    return lz - lz[0] + lr[0] - lr + log_c - log_c[0], np.exp(log_c)


def _chain_max_z(value, per_chain, per_chain_se) -> float:
    if per_chain.size < 2:
        return float("nan")
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.max(np.abs(per_chain - value)) / np.sqrt(np.mean(per_chain_se**2)))


def _record(value, se, method, per_chain, per_chain_se, diag, messages) -> EvidenceEstimate:
    """Add the shared messages, emit every message as an EvidenceWarning, build the record."""
    messages = emit_warnings(messages + evidence_messages(diag, se), stacklevel=4)
    return EvidenceEstimate(float(value), se, method, per_chain, per_chain_se, diag, messages)


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
    b, lz, lr = _setup(betas, log_zhat, log_r)
    lc = _check_log_cond(log_cond, b.size)
    value, se, per_chain, per_chain_se = log_ratio_of_means(lc[..., -1], lc[..., 0])
    shift = lz[-1] - lz[0] + lr[0] - lr[-1]
    c, r = np.exp(_log_c(lc)), np.exp(lr)
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
        "chain_max_z": _chain_max_z(value, per_chain, per_chain_se),
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
    return _record(shift + value, se, method, shift + per_chain, per_chain_se, diag, messages)


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
    lz, lr = _vector(log_zhat, n, "log_zhat"), _log_r(log_r, n)
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
    r = np.exp(_log_r(log_r, c.size))
    return bool(np.max(np.abs(c - r)) < tol / c.size)


def _ti(d: np.ndarray, lc: np.ndarray, weights: np.ndarray):
    """Trapezoid TI-RB value, influence series, slopes ``mu`` and variances ``v`` per level."""
    with np.errstate(invalid="ignore"):
        w = np.exp(lc - _log_c(lc))  # q(k|x) / c_k, mean 1 per level
        centre = d.mean()
        dc = (d - centre)[..., None]
        mu = np.mean(w * dc, axis=(0, 1)) / np.mean(w, axis=(0, 1))
        v = np.mean(w * (dc - mu) ** 2, axis=(0, 1)) / np.mean(w, axis=(0, 1))
        psi = np.sum(weights * w * (dc - mu), axis=-1)
    return float(weights @ mu + centre), psi, mu + centre, v


def rb_thermodynamic_integration(delta, log_cond, betas) -> EvidenceEstimate:
    """Rao-Blackwellized thermodynamic integration (TI-RB, eq. 21) over the ladder.

    ``E_{beta_k}[delta]`` is estimated from *all* draws weighted by ``q(k | x) / c_k``
    (self-normalised), then ``log Z = int_0^1 E_beta[delta] dbeta`` by the trapezoid rule.
    The se is the delta method: to first order the estimate minus its limit is the mean of
    ``psi(x) = sum_k a_k (q(k|x)/c_k)(delta - mu_k)`` (``a_k`` trapezoid weights), whose
    autocorrelation-aware error is :func:`~.mcse.mcse_mean`. It ignores the ``O(1/ESS)``
    ratio bias and, importantly, the **discretisation bias**, which RTS does not have:
    ``log Z - trapezoid ≈ -sum_k h_k**3 mu''/12``. As ``mu(beta) = E_beta[delta]`` is
    non-decreasing, ``|log Z - trapezoid| <= sum_k h_k (mu_{k+1} - mu_k) / 2``
    (``discretisation_bound``, from the estimated ``mu``); Friel et al. (2014) estimate
    ``log Z - trapezoid ≈ -sum_k h_k**2 (v_{k+1} - v_k) / 12``, ``v_k = Var_k[delta] = mu'``
    (``trapezoid_correction``, reported only; a warning is issued when it exceeds the se).

    Diagnostics: ``n_chains``, ``n_draws``, ``discretisation_bound``,
    ``trapezoid_correction``, ``level_ess_min`` (smallest Kish ESS of ``q(k|x)``; warned below
    50), ``chain_disagreement``, ``chain_max_z``.

    Parameters
    ----------
    delta : array_like, shape (chain, draw)
        Finite ``log f(x) - log q(x)``.
    log_cond : array_like, shape (chain, draw, K)
    betas : array_like, shape (K,)

    Returns
    -------
    EvidenceEstimate
        ``method = "st_ti"``.

    Examples
    --------
    >>> lq = level_log_conditionals(np.full((1, 100), 2.0), [0.0, 0.5, 1.0], [0.0, 1.0, 2.0])
    >>> rb_thermodynamic_integration(np.full((1, 100), 2.0), lq, [0.0, 0.5, 1.0]).log_z
    2.0
    """
    b = validate_ladder(betas)
    lc = _check_log_cond(log_cond, b.size)
    d = _as_chains(delta, "delta")
    if d.shape != lc.shape[:2] or not np.all(np.isfinite(d)):
        raise ValueError(f"delta must be finite and shaped {lc.shape[:2]}, got {d.shape}")
    h = np.diff(b)
    weights = np.concatenate([h, [0.0]]) / 2 + np.concatenate([[0.0], h]) / 2
    value, psi, mu, v = _ti(d, lc, weights)
    se = mcse_mean(psi)
    chains = [_ti(d[i : i + 1], lc[i : i + 1], weights) for i in range(d.shape[0])]
    per_chain = np.array([ch[0] for ch in chains])
    per_chain_se = np.array([mcse_mean(ch[1]) for ch in chains])
    diag = {
        "n_chains": float(d.shape[0]),
        "n_draws": float(d.size),
        "discretisation_bound": float(np.sum(h * np.abs(np.diff(mu))) / 2),
        "trapezoid_correction": float(-np.sum(h**2 * np.diff(v)) / 12),
        "level_ess_min": float(np.min(_level_kish(lc))),
        "chain_disagreement": chain_agreement_pvalue(psi),
        "chain_max_z": _chain_max_z(value, per_chain, per_chain_se),
    }
    messages = []
    if diag["level_ess_min"] < ESS_W1_MIN:
        messages.append(f"a level has Kish ESS {diag['level_ess_min']:.1f} < {ESS_W1_MIN:g}")
    if abs(diag["trapezoid_correction"]) > se:
        messages.append(
            f"estimated trapezoid discretisation error {diag['trapezoid_correction']:.3g} "
            "exceeds the se (which ignores it): use a denser ladder or the RTS estimate"
        )
    return _record(value, se, "st_ti", per_chain, per_chain_se, diag, messages)


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
    b, lz, lr = _setup(betas, log_zhat, log_r)
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
