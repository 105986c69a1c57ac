"""Warp-3 (Meng & Schilling 2002) for bridge sampling: pure numpy/scipy.

The map sends posterior draws to a density that is symmetric about zero, with unit
covariance and the same normalizing constant as the posterior: standardize with the
posterior mean and Cholesky factor, then mix each point with its reflection. A standard
normal proposal then matches the warped density's first three moments.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import solve_triangular

from .covariance import shrunk_covariance

__all__ = ["warp3_log_density", "warp3_moments", "warp3_points", "warp3_standardize"]


def warp3_moments(x) -> tuple[np.ndarray, np.ndarray]:
    """Mean and lower Cholesky factor of the covariance of draws (rows of ``x``), its
    correlations shrunk as :func:`~pymc_evidence.estimators.shrunk_covariance`
    says (in many dimensions the raw sample covariance makes a poor standardisation).

    Examples
    --------
    >>> mean, chol = warp3_moments(np.array([[0.0], [2.0]]))
    >>> float(mean[0]), float(chol[0, 0])
    (1.0, 1.0)
    """
    x = np.asarray(x, dtype=float).reshape(-1, np.shape(x)[-1])
    if x.shape[0] <= x.shape[1]:
        raise ValueError(f"need more draws than dimensions, got {x.shape[0]} of {x.shape[1]}")
    mean = x.mean(axis=0)
    cov = shrunk_covariance(x, bias=True)
    return mean, np.linalg.cholesky(cov)


def warp3_standardize(x, mean, chol, rng: np.random.Generator | None = None) -> np.ndarray:
    """Warp-3 coordinates ``eta = +/- chol^-1 (x - mean)`` of draws ``x`` (shape ``(..., d)``).

    With ``rng``, each draw's sign is flipped with probability 1/2, which turns draws of
    ``p`` into draws of the symmetric warped density :func:`warp3_log_density`; without it
    the signs are kept (the warped density is even, so bridge weights do not depend on them).

    Examples
    --------
    >>> from scipy import stats
    >>> rng = np.random.default_rng(0)
    >>> x = rng.gamma(2.0, size=(20000, 1))            # skewness 1.41
    >>> eta = warp3_standardize(x, *warp3_moments(x), rng=rng)
    >>> abs(float(stats.skew(eta[:, 0]))) < 0.05
    True
    """
    x = np.asarray(x, dtype=float)
    flat = x.reshape(-1, x.shape[-1])
    eta = solve_triangular(chol, (flat - mean).T, lower=True).T
    if rng is not None:
        eta *= rng.choice([-1.0, 1.0], size=(eta.shape[0], 1))
    return eta.reshape(x.shape)


def warp3_points(eta, mean, chol) -> tuple[np.ndarray, np.ndarray]:
    """The two points ``mean + chol eta`` and ``mean - chol eta`` where ``f`` is evaluated.

    Examples
    --------
    >>> plus, minus = warp3_points(np.array([[1.0]]), np.array([2.0]), np.array([[3.0]]))
    >>> float(plus[0, 0]), float(minus[0, 0])
    (5.0, -1.0)
    """
    shift = np.asarray(eta, dtype=float) @ np.asarray(chol).T
    return mean + shift, mean - shift


def warp3_log_density(log_f_plus, log_f_minus, chol) -> np.ndarray:
    """Log of the warp-3 density ``|chol| (f(mean + chol eta) + f(mean - chol eta)) / 2``.

    It integrates over ``eta`` to the same ``Z`` as ``f`` over ``x``, is even in ``eta``,
    and for a Gaussian ``f`` with the matching mean and Cholesky factor it is exactly
    ``Z`` times the standard normal density.

    Examples
    --------
    >>> from scipy import stats
    >>> eta = np.array([[0.5]])
    >>> plus, minus = warp3_points(eta, np.array([1.0]), np.array([[2.0]]))
    >>> log_f = lambda x: 3.0 + stats.norm.logpdf(x[:, 0], 1.0, 2.0)
    >>> value = warp3_log_density(log_f(plus), log_f(minus), np.array([[2.0]]))
    >>> bool(np.isclose(value[0], 3.0 + stats.norm.logpdf(0.5)))
    True
    """
    log_det = float(np.sum(np.log(np.diag(np.asarray(chol)))))
    return log_det - np.log(2.0) + np.logaddexp(log_f_plus, log_f_minus)
