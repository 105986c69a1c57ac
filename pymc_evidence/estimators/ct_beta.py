"""The conditional ``p(beta | x)`` of continuous tempering and its weights, in log space.

Under the extended target of :mod:`.ct`, ``p(beta | x) = delta exp(-beta delta) /
(1 - exp(-delta))`` on ``[0, 1]``, a truncated exponential. This module evaluates it stably
for every ``delta``: ``log w0 = g(delta) = log p(beta=0 | x)``, ``log w1 = g(-delta)``, the
conditional mean, the CDF and exact draws (Taylor series near ``delta = 0``, ``expm1`` /
``log1p`` elsewhere). Non-finite ``delta`` give the limits at ``±inf`` and propagate ``nan``
(see :mod:`.ct`). Pure numpy.
"""

from __future__ import annotations

import numpy as np

__all__ = ["log_w0", "log_w1", "expected_beta", "beta_cdf", "sample_beta"]

#: Below this |delta| the Taylor series of g and of E[beta|x] are used.
_SERIES_CUT = 0.25
#: Below this |delta| the conditional of beta is treated as exactly uniform.
_UNIFORM_CUT = 1e-250

# g(d) = d/2 - sum_n B_2n d^2n / (2n (2n)!), n = 1..5.
_G_SERIES = (-1 / 24, 1 / 2880, -1 / 181440, 1 / 9676800, -1 / 479001600)
# E[beta|d] = g'(d) = 1/2 - sum_n B_2n d^(2n-1) / (2n)!, n = 1..5.
_EB_SERIES = (-1 / 12, 1 / 720, -1 / 30240, 1 / 1209600, -1 / 47900160)


def _even_series(d2: np.ndarray, coefs) -> np.ndarray:
    """Horner evaluation of ``sum_k coefs[k] * d2**k`` for ``k = 0..``."""
    out = np.zeros_like(d2)
    with np.errstate(over="ignore", invalid="ignore"):
        for c in coefs[::-1]:
            out = out * d2 + c
    return out


def log_w0(delta) -> np.ndarray:
    """``g(delta) = log w0 = log(delta / (1 - exp(-delta)))``, stable for every ``delta``.

    Uses a Taylor series ``delta/2 - delta**2/24 + ...`` for ``|delta| < 0.25`` (``g(0) = 0``)
    and ``log|d| - log(-expm1(-|d|)) + min(d, 0)`` otherwise; ``g(+inf) = +inf``,
    ``g(-inf) = -inf``.

    Parameters
    ----------
    delta : array_like

    Returns
    -------
    ndarray
        Same shape as ``delta``.

    Examples
    --------
    >>> float(log_w0(0.0))
    0.0
    >>> round(float(log_w0(-1e4)), 4)  # -1e4 + log(1e4)
    -9990.7897
    """
    d = np.asarray(delta, dtype=float)
    a = np.abs(d)
    small = a < _SERIES_CUT
    with np.errstate(divide="ignore", invalid="ignore"):
        big = np.log(a) - np.log(-np.expm1(-a)) + np.minimum(d, 0.0)
    with np.errstate(over="ignore", invalid="ignore"):
        series = d / 2.0 + d * d * _even_series(d * d, _G_SERIES)
    out = np.where(small, series, big)
    return np.where(d == -np.inf, -np.inf, out)


def log_w1(delta) -> np.ndarray:
    """``log w1 = log(delta / (exp(delta) - 1)) = g(delta) - delta``, computed as ``g(-delta)``.

    Parameters
    ----------
    delta : array_like

    Returns
    -------
    ndarray

    Examples
    --------
    >>> bool(np.allclose(log_w1([-2.0, 0.0, 3.0]) - log_w0([-2.0, 0.0, 3.0]), [2.0, 0.0, -3.0]))
    True
    """
    return log_w0(-np.asarray(delta, dtype=float))


def expected_beta(delta) -> np.ndarray:
    """``E[beta | x] = 1/delta - 1/(exp(delta) - 1)``, stable (``1/2`` at ``delta = 0``).

    Parameters
    ----------
    delta : array_like

    Returns
    -------
    ndarray
        In ``[0, 1]``; ``0`` at ``delta = +inf``, ``1`` at ``-inf``.

    Examples
    --------
    >>> float(expected_beta(0.0))
    0.5
    >>> round(float(expected_beta(100.0)), 6)
    0.01
    """
    d = np.asarray(delta, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        big = 1.0 / d - 1.0 / np.expm1(d)
    with np.errstate(over="ignore", invalid="ignore"):
        series = 0.5 + d * _even_series(d * d, _EB_SERIES)
    return np.where(np.abs(d) < _SERIES_CUT, series, big)


def beta_cdf(b, delta) -> np.ndarray:
    """CDF ``P(beta < b | x) = (1 - exp(-b delta)) / (1 - exp(-delta))`` of ``p(beta | x)``.

    Computed as ``expm1(-b d) / expm1(-d)`` for ``d >= 0`` and as
    ``exp(-(1 - b)|d|) expm1(-b|d|) / expm1(-|d|)`` for ``d < 0``, so it never overflows and
    keeps relative accuracy in both tails. ``P(beta > 1 - b | delta) = beta_cdf(b, -delta)``.

    Parameters
    ----------
    b, delta : array_like
        Broadcast together; ``b`` is clipped to ``[0, 1]``.

    Returns
    -------
    ndarray

    Examples
    --------
    >>> float(beta_cdf(0.3, 0.0))
    0.3
    >>> round(float(beta_cdf(0.1, 50.0)), 4)  # 1 - exp(-5)
    0.9933
    """
    b, d = np.broadcast_arrays(np.asarray(b, dtype=float), np.asarray(delta, dtype=float))
    b = np.clip(b, 0.0, 1.0)
    a = np.abs(d)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = np.expm1(-b * a) / np.expm1(-a)
        ratio = np.where(d < 0, np.exp(-(1.0 - b) * a) * ratio, ratio)
    out = np.where(a < _UNIFORM_CUT, b, ratio)
    out = np.where(b == 0.0, 0.0, np.where(b == 1.0, 1.0, out))
    return np.where(np.isnan(d), np.nan, out)


def sample_beta(delta, rng: np.random.Generator) -> np.ndarray:
    """Exact draws of ``beta ~ p(beta | x) ∝ exp(-beta delta)`` on ``[0, 1]`` (inverse CDF).

    One draw per element of ``delta``: with ``r ~ U(0, 1)`` and ``a = |delta|``,
    ``t = -log1p(r expm1(-a)) / a`` and ``beta = t`` (``delta >= 0``) or ``1 - t``
    (``delta < 0``); ``beta = r`` when ``a < 1e-250``.

    Parameters
    ----------
    delta : array_like
    rng : numpy.random.Generator

    Returns
    -------
    ndarray
        Same shape as ``delta``, values in ``[0, 1]``.

    Examples
    --------
    >>> beta = sample_beta(np.full(1000, 5.0), np.random.default_rng(0))
    >>> bool(beta.min() >= 0.0 and beta.max() <= 1.0)
    True
    """
    d = np.asarray(delta, dtype=float)
    r = rng.random(d.shape)
    a = np.abs(d)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = -np.log1p(r * np.expm1(-a)) / a
    t = np.where(a < _UNIFORM_CUT, r, t)
    beta = np.clip(np.where(d < 0, 1.0 - t, t), 0.0, 1.0)
    return np.where(np.isnan(d), np.nan, beta)
