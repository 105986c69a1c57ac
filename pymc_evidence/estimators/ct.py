"""Continuous-tempering (CT) evidence estimator of Graham & Storkey (2017).

The extended target over ``(x, beta)``, ``beta in [0, 1]``, is
``p(x, beta) ∝ exp(-beta phi(x) - (1 - beta) psi(x)) / zeta**beta`` with ``phi = -log`` of the
unnormalised target, ``psi = -log`` of a *normalised* base density and ``zeta`` a guess of
``Z``. Everything depends on ``x`` only through ``delta = phi(x) + log(zeta) - psi(x)``:

* ``p(beta | x) = delta exp(-beta delta) / (1 - exp(-delta))``, a truncated exponential;
* ``w0 = p(beta=0 | x) = delta / (1 - exp(-delta))``, ``w1 = p(beta=1 | x) = exp(-delta) w0``;
* ``Z ≈ zeta * sum_s w1(x_s) / sum_s w0(x_s)`` over draws ``x_s`` of the joint's x-marginal.

All weights are handled in log space through ``g(delta) = log w0``; note ``log w1(delta) =
g(-delta)``.

Non-finite ``delta``: the element-wise functions (:func:`log_w0`, :func:`log_w1`,
:func:`expected_beta`, :func:`beta_cdf`, :func:`sample_beta`) return their limits at
``±inf`` (``delta = +inf``, an impossible target state, gives ``w1 = 0``, ``log w0 = +inf``
and ``beta = 0`` surely) and propagate ``nan``. The estimators (:func:`ct_log_evidence`,
:func:`ct_weights`, :func:`base_moment_check`) raise ``ValueError`` on *any* non-finite
``delta``, reporting the counts of ``nan``, ``+inf`` and ``-inf``. Reason: a state with
``delta = ±inf`` has zero density under the extended target for every ``beta`` in ``(0, 1)``,
so it cannot be a valid draw; and ``w0 = +inf`` would make the estimate ``-inf``. Such states
mean a sampler defect (e.g. an unconverged initial point was kept), or a base that puts mass
where the target is impossible (``+inf``; eq. 20 then converges to
``Z / (1 - P_base(target impossible))``, not ``Z``) or vice versa (``-inf``; it converges to
``Z (1 - P_target(base impossible))``), so no silent rule would be honest.

The element-wise functions of ``p(beta | x)`` live in :mod:`.ct_beta` and are re-exported
here; this module holds the estimators and the base-moment check.
"""

from __future__ import annotations

import numpy as np

from .ct_beta import beta_cdf, expected_beta, log_w0, log_w1, sample_beta
from .diagnostics import evidence_messages
from .logspace import emit_warnings, kish_ess, normalize_log_weights
from .mcse import (
    as_chains,
    chain_agreement_pvalue,
    log_ratio_of_means,
    mcse_mean,
    ratio_influence,
)
from .record import EvidenceEstimate

__all__ = [
    "log_w0",
    "log_w1",
    "expected_beta",
    "beta_cdf",
    "sample_beta",
    "ct_log_evidence",
    "ct_weights",
    "base_moment_check",
]


def _check_delta(delta) -> np.ndarray:
    """``delta`` as a finite ``(chain, draw)`` array; raise ``ValueError`` otherwise."""
    d = as_chains(delta, "delta")
    bad = ~np.isfinite(d)
    if bad.any():
        n_nan = int(np.isnan(d).sum())
        n_pos = int((d == np.inf).sum())
        raise ValueError(
            f"delta has {int(bad.sum())} non-finite values of {d.size} ({n_nan} nan, "
            f"{n_pos} +inf, {int(bad.sum()) - n_nan - n_pos} -inf); CT estimators need finite "
            "phi(x) + log(zeta) - psi(x) at every kept draw (see pymc_evidence.estimators.ct)"
        )
    return d


def _ct_diagnostics(d, lw0, lw1, log_ratio, per_chain, per_chain_se) -> dict:
    """Scalar diagnostics of :func:`ct_log_evidence` (see its docstring)."""
    several = d.shape[0] > 1
    common_se = np.sqrt(np.mean(per_chain_se**2))
    with np.errstate(divide="ignore", invalid="ignore"):
        max_z = np.max(np.abs(per_chain - log_ratio)) / common_se if several else np.nan
    return {
        "n_chains": float(d.shape[0]),
        "n_draws": float(d.size),
        "ess_w1": kish_ess(lw1),
        "ess_w0": kish_ess(lw0),
        "frac_beta_lt_0.1": float(np.mean(beta_cdf(0.1, d))),
        "frac_beta_gt_0.9": float(np.mean(beta_cdf(0.1, -d))),
        "mean_beta": float(np.mean(expected_beta(d))),
        "chain_disagreement": chain_agreement_pvalue(ratio_influence(lw1, lw0)),
        "chain_max_z": float(max_z),
    }


def ct_log_evidence(delta, log_zeta, *, method: str = "ct") -> EvidenceEstimate:
    """Continuous-tempering estimate of ``log Z`` (Graham & Storkey eq. 20), in log space.

    ``log Z = log zeta + log(sum w1 / sum w0)`` pooled over all draws, with the delta-method,
    autocorrelation-aware standard error of :func:`~.mcse.log_ratio_of_means`; the same per
    chain. Any non-finite ``delta`` raises ``ValueError`` (see the module docstring).

    Diagnostics (floats): ``n_chains``, ``n_draws``; ``ess_w1``, ``ess_w0`` (Kish ESS of the
    weights); ``frac_beta_lt_0.1``, ``frac_beta_gt_0.9`` and ``mean_beta``, Rao-Blackwellised
    (averages over draws of ``P(beta<0.1|x)``, ``P(beta>0.9|x)``, ``E[beta|x]``);
    ``chain_disagreement``, the p-value of a chi-square test that the chains agree within
    their errors (:func:`~.mcse.chain_agreement_pvalue` on the influence series of the log
    ratio; ``nan`` for one chain); ``chain_max_z``, the largest ``|per-chain - pooled|``
    in units of the root-mean-square per-chain se.

    Warnings (returned and emitted as :class:`~.diagnostics.EvidenceWarning`, see
    :func:`~.diagnostics.evidence_messages`): either end fraction below 0.01;
    ``chain_disagreement < 0.01``; ``ess_w1 < 50`` or below 1% of the draws; a non-finite se.

    Parameters
    ----------
    delta : array_like, shape (chain, draw) or (draw,)
        ``phi(x) + log(zeta) - psi(x)`` at each kept draw of the CT chain (joint, Gibbs or
        marginalised CT); ``phi = -log`` unnormalised target, ``psi = -log`` normalised base.
    log_zeta : float
        The ``log zeta`` used in ``delta``.
    method : str, default "ct"
        Name stored in the record.

    Returns
    -------
    EvidenceEstimate

    Examples
    --------
    >>> est = ct_log_evidence(np.zeros((2, 100)), log_zeta=-3.0)  # base = target, zeta = Z
    >>> est.log_z, est.se
    (-3.0, 0.0)
    """
    d = _check_delta(delta)
    log_zeta = float(log_zeta)
    if not np.isfinite(log_zeta):
        raise ValueError(f"log_zeta must be finite, got {log_zeta}")
    lw0, lw1 = log_w0(d), log_w1(d)
    value, se, per_chain, per_chain_se = log_ratio_of_means(lw1, lw0)
    diag = _ct_diagnostics(d, lw0, lw1, value, per_chain, per_chain_se)
    messages = emit_warnings(evidence_messages(diag, se))
    return EvidenceEstimate(
        log_z=log_zeta + value,
        se=se,
        method=method,
        per_chain_log_z=log_zeta + per_chain,
        per_chain_se=per_chain_se,
        diagnostics=diag,
        warnings=messages,
    )


def ct_weights(delta) -> np.ndarray:
    """Normalised ``w1`` importance weights (eq. 21) over the flattened draws.

    Parameters
    ----------
    delta : array_like, shape (chain, draw) or (draw,)
        Finite (see the module docstring).

    Returns
    -------
    ndarray, shape (chain * draw,)
        Non-negative, summing to one, in C order (chain-major), so that
        ``weights @ f.reshape(-1)`` estimates ``E_target[f]``; use them to resample
        posterior draws.

    Examples
    --------
    >>> ct_weights([[0.0, np.log(3.0)]]).round(3).tolist()  # w1 = 1 and w1(log 3) = log(3)/2
    [0.645, 0.355]
    """
    lw1 = log_w1(_check_delta(delta)).ravel()
    return np.exp(normalize_log_weights(lw1))


def _zscore(diff: np.ndarray, se: np.ndarray) -> np.ndarray:
    """``|diff| / se`` with ``0/0 = 0`` and ``x/0 = inf``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.abs(diff) / se
    return np.where(diff == 0.0, 0.0, z)


def base_moment_check(x, delta, mean, cov) -> dict:
    """Compare ``w0``-weighted moments of the draws with the known base moments (eq. 22).

    ``E[f | beta=0] ≈ sum w0 f / sum w0`` must reproduce the base mean and covariance on a
    converged run (necessary, not sufficient). Standard errors of the weighted means and
    variances use the delta method with :func:`~.mcse.mcse_mean`.

    Parameters
    ----------
    x : array_like, shape (chain, draw, dim) or (chain, draw)
        Draws of the (unconstrained) parameter vector.
    delta : array_like, shape (chain, draw)
        Finite ``delta`` at the same draws.
    mean : array_like, shape (dim,)
    cov : array_like, shape (dim, dim)
        Mean and covariance of the base density.

    Returns
    -------
    dict
        ``weighted_mean`` (dim,), ``weighted_cov`` (dim, dim), ``mean_se`` (dim,), and floats:
        ``max_mean_z`` (largest ``|mean error| / se``), ``max_var_z`` (same for the
        variances), ``max_mean_discrepancy_sd`` (largest ``|mean error| / base sd``),
        ``max_log_sd_ratio`` (largest ``|log(weighted sd / base sd)|``),
        ``max_corr_discrepancy`` (largest absolute correlation difference), ``ess_w0``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> check = base_moment_check(rng.normal(size=(2, 500, 3)), np.zeros((2, 500)),
    ...                           np.zeros(3), np.eye(3))
    >>> bool(check["max_mean_z"] < 4.0)
    True
    """
    d = _check_delta(delta)
    x = np.asarray(x, dtype=float)
    if x.shape == d.shape:
        x = x[..., None]
    if x.ndim != 3 or x.shape[:2] != d.shape:
        raise ValueError(f"x must be shaped (chain, draw, dim) matching delta {d.shape}")
    dim = x.shape[-1]
    mean = np.broadcast_to(np.asarray(mean, dtype=float), (dim,))
    cov = np.asarray(cov, dtype=float).reshape(dim, dim)
    lw0 = log_w0(d)
    w = np.exp(lw0 - lw0.max())
    w = w / w.mean()
    m_hat = np.einsum("cs,csi->i", w, x) / d.size
    centred = x - m_hat
    c_hat = np.einsum("cs,csi,csj->ij", w, centred, centred) / d.size
    var_hat = np.diag(c_hat)
    mean_se = np.array([mcse_mean(w * centred[..., i]) for i in range(dim)])
    var_se = np.array([mcse_mean(w * (centred[..., i] ** 2 - var_hat[i])) for i in range(dim)])
    base_sd = np.sqrt(np.diag(cov))
    corr_hat = c_hat / np.sqrt(np.outer(var_hat, var_hat))
    return {
        "weighted_mean": m_hat,
        "weighted_cov": c_hat,
        "mean_se": mean_se,
        "max_mean_z": float(np.max(_zscore(m_hat - mean, mean_se))),
        "max_var_z": float(np.max(_zscore(var_hat - np.diag(cov), var_se))),
        "max_mean_discrepancy_sd": float(np.max(np.abs(m_hat - mean) / base_sd)),
        "max_log_sd_ratio": float(np.max(np.abs(0.5 * np.log(var_hat / np.diag(cov))))),
        "max_corr_discrepancy": float(np.max(np.abs(corr_hat - cov / np.outer(base_sd, base_sd)))),
        "ess_w0": kish_ess(lw0),
    }
