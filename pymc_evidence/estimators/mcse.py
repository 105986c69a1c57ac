"""Monte Carlo standard errors for means and ratios of means of MCMC draws.

Everything here works on arrays shaped ``(chain, draw)`` (a 1-D array is read as one chain)
and is pure numpy: no PyMC, PyTensor or xarray.

The effective sample size is the multi-chain estimator of Stan and ArviZ's ``ess_bulk``
*without* the rank normalisation, i.e. an estimate of ``Var(x) / Var(mean(x))``: FFT
autocovariances per chain, combined across chains through the split-free ``var_plus``
(within-chain variance plus the variance of the chain means), truncated with Geyer's initial
monotone positive sequence.
"""

from __future__ import annotations

import numpy as np
from scipy import fft as _fft
from scipy import stats

__all__ = [
    "ess_mean",
    "mcse_mean",
    "log_ratio_of_means",
    "ratio_influence",
    "chain_agreement_pvalue",
    "grouped_jackknife_se",
]

#: Fewest draws per chain for which autocorrelations are estimated.
MIN_DRAWS = 4


def as_chains(x, name: str = "x") -> np.ndarray:
    """Return ``x`` as a float array shaped ``(chain, draw)``."""
    x = np.asarray(x, dtype=float)
    if x.ndim == 1:
        x = x[None, :]
    if x.ndim != 2 or x.size == 0:
        raise ValueError(f"{name} must be a non-empty array shaped (chain, draw); got {x.shape}")
    return x


def _autocov(x: np.ndarray) -> np.ndarray:
    """Biased (divide-by-n) autocovariance of each row of ``x`` at lags ``0..n-1``, via FFT."""
    n = x.shape[1]
    centred = x - x.mean(axis=1, keepdims=True)
    size = _fft.next_fast_len(2 * n)
    spectrum = _fft.rfft(centred, n=size, axis=1)
    return _fft.irfft(spectrum * np.conj(spectrum), n=size, axis=1)[:, :n].real / n


def _geyer_tau(rho: np.ndarray) -> float:
    """Integrated autocorrelation time from autocorrelations ``rho[0..]`` (``rho[0] = 1``).

    Pairs ``P_k = rho[2k] + rho[2k+1]`` are summed up to (not including) the first
    non-positive pair (Geyer's initial positive sequence), after being made non-increasing
    (initial monotone sequence); ``tau = -1 + 2 sum_k P_k``.
    """
    n_pairs = rho.size // 2
    pairs = rho[: 2 * n_pairs : 2] + rho[1 : 2 * n_pairs : 2]
    non_positive = np.flatnonzero(pairs <= 0.0)
    keep = non_positive[0] if non_positive.size else n_pairs
    pairs = np.minimum.accumulate(pairs[: max(keep, 1)])
    return float(-1.0 + 2.0 * np.sum(pairs))


def ess_mean(x) -> float:
    """Effective sample size of the mean of multi-chain draws.

    Parameters
    ----------
    x : array_like, shape (chain, draw) or (draw,)
        Draws of a scalar quantity; a 1-D array is one chain.

    Returns
    -------
    float
        Estimate of ``Var(x) / Var(mean(x))``. Rules for degenerate input:

        * constant input returns the number of draws ``chain * draw``;
        * with fewer than 4 draws per chain, autocorrelations are not estimated: the chain
          means are treated as independent batches, ``ess = chain * Var(x) / Var(chain means)``
          capped at ``chain * draw`` (so one draw per chain of ``m`` independent runs gives
          ``ess = m``); with a single chain this is ``nan``;
        * any non-finite value gives ``nan``.

        The autocorrelation time is floored at ``1 / log10(chain * draw)`` as in Stan, which
        caps the ESS of antithetic chains.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> round(ess_mean(rng.normal(size=(4, 1000))) / 4000, 1)
    1.0
    >>> ess_mean(np.ones((2, 10)))
    20.0
    """
    x = as_chains(x)
    n_chain, n_draw = x.shape
    total = float(x.size)
    if not np.all(np.isfinite(x)):
        return float("nan")
    if np.ptp(x) <= 1e-14 * max(1.0, float(np.max(np.abs(x)))):
        return total
    if n_draw < MIN_DRAWS:
        if n_chain < 2:
            return float("nan")
        var_means = np.var(x.mean(axis=1), ddof=1)
        if var_means == 0.0:
            return total
        return float(min(total, n_chain * np.var(x, ddof=1) / var_means))
    acov = _autocov(x)
    within = np.mean(acov[:, 0]) * n_draw / (n_draw - 1.0)
    var_plus = within * (n_draw - 1.0) / n_draw
    if n_chain > 1:
        var_plus += np.var(x.mean(axis=1), ddof=1)
    rho = 1.0 - (within - acov.mean(axis=0)) / var_plus
    rho[0] = 1.0
    tau = _geyer_tau(rho[: n_draw - 2])
    tau = max(tau, 1.0 / np.log10(total))
    return float(total / tau)


def mcse_mean(x) -> float:
    """Monte Carlo standard error of the overall mean of multi-chain draws.

    Parameters
    ----------
    x : array_like, shape (chain, draw) or (draw,)

    Returns
    -------
    float
        ``std(x) / sqrt(ess_mean(x))``; ``0`` for constant input, ``nan`` when the ESS is.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> round(mcse_mean(rng.normal(size=(4, 2500))), 2)
    0.01
    """
    x = as_chains(x)
    if x.size < 2:
        return float("nan")
    ess = ess_mean(x)
    sd = float(np.std(x, ddof=1))
    if sd == 0.0:
        return 0.0
    return float(sd / np.sqrt(ess))


def _shifted(log_a: np.ndarray, log_b: np.ndarray):
    """Log ratio of means and the max-shifted values (``None, None`` if degenerate)."""
    top_a, top_b = np.max(log_a), np.max(log_b)
    if top_a == -np.inf or top_b == -np.inf:
        value = -np.inf if top_b > -np.inf else (np.inf if top_a > -np.inf else np.nan)
        return float(value), None, None
    a = np.exp(log_a - top_a)
    b = np.exp(log_b - top_b)
    return float(top_a - top_b + np.log(a.mean()) - np.log(b.mean())), a, b


def _log_ratio(log_a: np.ndarray, log_b: np.ndarray) -> tuple[float, float]:
    """Log ratio of means and its delta-method se for one ``(chain, draw)`` block."""
    value, a, b = _shifted(log_a, log_b)
    if a is None:
        return value, float("nan")
    return value, mcse_mean(a / a.mean() - b / b.mean())


def ratio_influence(log_a, log_b) -> np.ndarray:
    """Influence series ``z_s = a_s / mean(a) - b_s / mean(b)`` of the pooled log ratio of means.

    ``log(mean a / mean b)`` is to first order ``mean(z)`` plus a constant, so the mean of
    ``z`` over one chain approximates that chain's deviation from the pooled estimate;
    :func:`chain_agreement_pvalue` applied to ``z`` tests chain agreement.

    Parameters
    ----------
    log_a, log_b : array_like, shape (chain, draw) or (draw,)
        As in :func:`log_ratio_of_means`.

    Returns
    -------
    ndarray, shape (chain, draw)
        Zero-mean over all draws; ``nan`` everywhere if either mean is zero.

    Examples
    --------
    >>> z = ratio_influence([[0.0, np.log(3.0)]], [[0.0, 0.0]])
    >>> z.round(2).tolist()
    [[-0.5, 0.5]]
    """
    log_a, log_b = _check_pair(log_a, log_b)
    _, a, b = _shifted(log_a, log_b)
    if a is None:
        return np.full(log_a.shape, np.nan)
    return a / a.mean() - b / b.mean()


def chain_agreement_pvalue(x) -> float:
    """p-value of a chi-square test that all chains of ``x`` have the same mean.

    ``Q = sum_c (mean_c - mean(mean_c))^2 / s^2`` on ``chains - 1`` degrees of freedom, where
    ``s^2 = mean_c(mcse_c^2)`` pools the within-chain, autocorrelation-aware squared standard
    errors of the chain means (equal-length chains). Pooling keeps the test honest when a
    chain that missed rare large values reports a too-small error of its own. Applied to
    :func:`ratio_influence` it tests whether per-chain ratio estimates agree.

    Parameters
    ----------
    x : array_like, shape (chain, draw)

    Returns
    -------
    float
        Small values mean the chains disagree beyond their errors; ``nan`` with one chain or
        when the errors cannot be estimated; ``1`` when all chain means are equal.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(4, 500))
    >>> bool(chain_agreement_pvalue(x) > 0.01)
    True
    >>> bool(chain_agreement_pvalue(x + [[0.0], [0.0], [0.0], [1.0]]) < 1e-6)
    True
    """
    x = as_chains(x)
    if x.shape[0] < 2 or not np.all(np.isfinite(x)):
        return float("nan")
    means = x.mean(axis=1)
    if np.ptp(means) == 0.0:
        return 1.0
    common_var = float(np.mean([mcse_mean(chain) ** 2 for chain in x]))
    if not (np.isfinite(common_var) and common_var > 0.0):
        return float("nan")
    q = float(np.sum((means - means.mean()) ** 2) / common_var)
    return float(stats.chi2.sf(q, x.shape[0] - 1))


def grouped_jackknife_se(estimate_of, groups) -> float:
    """Jackknife standard error of an estimate over groups of its inputs, left out in turn.

    ``se^2 = (G - 1) / G * sum_g (theta_{-g} - mean_g theta_{-g})^2`` over the ``G``
    distinct labels of ``groups``, ``theta_{-g} = estimate_of(groups != g)``. Meant for
    inputs that come in groups which are not exchangeable within the run: the reverse runs
    started in the draws of different NUTS chains, each of which may sit in a mode of its
    own; the spread between groups then holds what the spread within them cannot see.

    Parameters
    ----------
    estimate_of : callable
        ``estimate_of(keep) -> float`` for a boolean mask over the inputs.
    groups : array_like of int, shape (n,)

    Returns
    -------
    float
        ``nan`` with fewer than two groups or a non-finite leave-one-out estimate.

    Examples
    --------
    >>> x = np.r_[np.zeros(50), np.ones(50)]
    >>> groups = np.repeat([0, 1], 50)
    >>> round(grouped_jackknife_se(lambda keep: float(x[keep].mean()), groups), 3)
    0.5
    """
    groups = np.asarray(groups)
    labels = np.unique(groups)
    if labels.size < 2:
        return float("nan")
    theta = np.array([estimate_of(groups != g) for g in labels], dtype=float)
    if not np.all(np.isfinite(theta)):
        return float("nan")
    g = labels.size
    return float(np.sqrt((g - 1) / g * np.sum((theta - theta.mean()) ** 2)))


def _check_pair(log_a, log_b) -> tuple[np.ndarray, np.ndarray]:
    """Validate two same-shaped arrays of log-values without nan or +inf."""
    log_a = as_chains(log_a, "log_a")
    log_b = as_chains(log_b, "log_b")
    if log_a.shape != log_b.shape:
        raise ValueError(
            f"log_a and log_b must have the same shape: {log_a.shape} vs {log_b.shape}"
        )
    for name, arr in (("log_a", log_a), ("log_b", log_b)):
        n_bad = int(np.sum(np.isnan(arr) | (arr == np.inf)))
        if n_bad:
            raise ValueError(f"{name} has {n_bad} nan or +inf values of {arr.size}")
    return log_a, log_b


def log_ratio_of_means(log_a, log_b):
    """Log of a ratio of two means, computed in log space, with an MCMC-aware standard error.

    Estimates ``log(mean(exp(log_a)) / mean(exp(log_b)))`` without ever forming
    ``exp(log_a)`` unshifted, so values like ``log_a ~ 1e4`` are fine.

    The standard error is the delta-method one: with ``a_s``, ``b_s`` the values (after the
    common shift), the influence series ``z_s = a_s / mean(a) - b_s / mean(b)`` has
    ``Var(log ratio) ~ Var(mean(z))``, estimated by :func:`mcse_mean` (so it accounts for
    autocorrelation and for the correlation between ``a`` and ``b``). It ignores the
    ``O(1/ESS)`` bias of a ratio estimator.

    Parameters
    ----------
    log_a, log_b : array_like, shape (chain, draw) or (draw,)
        Logs of non-negative values, same shape. ``-inf`` (a zero value) is allowed;
        ``nan`` and ``+inf`` raise ``ValueError``.

    Returns
    -------
    value : float
        Pooled estimate over all chains.
    se : float
        Its standard error (``nan`` if it cannot be estimated, e.g. < 4 draws in 1 chain).
    per_chain_value, per_chain_se : ndarray, shape (chain,)
        The same computed from each chain alone.

    Examples
    --------
    >>> log_a = np.log([[1.0, 2.0, 3.0, 4.0, 5.0]]) + 1e4
    >>> log_b = np.zeros((1, 5))
    >>> value, se, per_chain, per_chain_se = log_ratio_of_means(log_a, log_b)
    >>> round(value - 1e4, 6)  # log(mean([1, 2, 3, 4, 5])) = log 3
    1.098612
    """
    log_a, log_b = _check_pair(log_a, log_b)
    value, se = _log_ratio(log_a, log_b)
    per_chain = np.array(
        [_log_ratio(log_a[c : c + 1], log_b[c : c + 1]) for c in range(len(log_a))]
    )
    return value, se, per_chain[:, 0].copy(), per_chain[:, 1].copy()
