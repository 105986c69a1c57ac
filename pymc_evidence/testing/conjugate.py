"""Conjugate test systems with a closed-form evidence.

Part of :mod:`pymc_evidence.testing.models`: Bayesian linear regression with a Gaussian prior
and known noise (``log_z`` a multivariate normal log density) and the Beta-Bernoulli coin
(``log_z`` a difference of log Beta functions).
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy import special, stats

from pymc_evidence.testing.analytic import AnalyticModel, as_data, f64

__all__ = ["beta_bernoulli", "conjugate_regression"]


# --------------------------------------------------------------------------------------------
# Conjugate Bayesian linear regression
# --------------------------------------------------------------------------------------------


def conjugate_regression(
    d: int = 5,
    n: int | None = None,
    seed: int = 0,
    *,
    sigma: float = 1.0,
    prior_sigma: float = 1.0,
) -> AnalyticModel:
    r"""Bayesian linear regression with known noise and a Gaussian prior on the weights.

    .. math::

        w \sim \mathcal N(0, \tau^2 I_d), \qquad
        y \mid w \sim \mathcal N(X w, \sigma^2 I_n),

    so that marginally :math:`y \sim \mathcal N(0, \sigma^2 I_n + \tau^2 X X^\top)` and
    ``log_z`` is that Gaussian log density at the data (computed with a Cholesky
    factorisation via :mod:`scipy.stats`).

    Parameters
    ----------
    d : int, default 5
        Number of regression weights (the single vector random variable ``w`` has shape
        ``(d,)``).
    n : int, optional
        Number of observations; defaults to ``2 * d + 20``.
    seed : int, default 0
        Seed for the design matrix ``X ~ N(0, 1)``, the true weights (drawn from the prior)
        and the noise.
    sigma : float, default 1.0
        Known observation noise standard deviation :math:`\sigma`.
    prior_sigma : float, default 1.0
        Prior standard deviation :math:`\tau` of each weight.

    Returns
    -------
    AnalyticModel
        With free variable ``w`` and observed variable ``y``; ``data`` holds ``X``, ``y``,
        ``sigma`` and ``prior_sigma``.

    Examples
    --------
    >>> from pymc_evidence.testing import conjugate_regression
    >>> system = conjugate_regression(d=2, n=10)
    >>> system.model["w"].shape.eval()
    array([2])
    >>> bool(np.isfinite(system.log_z))
    True
    """
    d = int(d)
    n = 2 * d + 20 if n is None else int(n)
    if d < 1 or n < 1:
        raise ValueError("d and n must be positive")
    if sigma <= 0 or prior_sigma <= 0:
        raise ValueError("sigma and prior_sigma must be positive")
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    w_true = rng.normal(0.0, prior_sigma, size=d)
    y = X @ w_true + rng.normal(0.0, sigma, size=n)

    cov = sigma**2 * np.eye(n) + prior_sigma**2 * (X @ X.T)
    log_z = float(stats.multivariate_normal(mean=np.zeros(n), cov=cov).logpdf(y))

    with pm.Model(coords={"coef": np.arange(d), "obs_id": np.arange(n)}) as model:
        w = pm.Normal("w", mu=f64(0.0), sigma=f64(prior_sigma), dims="coef")
        pm.Normal("y", mu=pt.dot(f64(X), w), sigma=f64(sigma), observed=y, dims="obs_id")

    description = (
        f"Linear regression y ~ N(Xw, {sigma:g}^2 I) with n={n} observations and d={d} "
        f"weights, prior w ~ N(0, {prior_sigma:g}^2 I), X ~ N(0, 1) (seed={seed}). "
        "Exact log Z = log N(y; 0, sigma^2 I + tau^2 X X^T)."
    )
    data = as_data(X=X, y=y, sigma=float(sigma), prior_sigma=float(prior_sigma))
    return AnalyticModel("conjugate_regression", model, log_z, description, data)


# --------------------------------------------------------------------------------------------
# Beta-Bernoulli
# --------------------------------------------------------------------------------------------


def beta_bernoulli(
    n: int = 50,
    heads: int | None = None,
    a: float = 1.0,
    b: float = 1.0,
    seed: int = 0,
) -> AnalyticModel:
    r"""Coin flips with a Beta prior on the success probability.

    .. math::

        p \sim \mathrm{Beta}(a, b), \qquad y_i \mid p \sim \mathrm{Bernoulli}(p),

    and for a particular sequence with :math:`h` ones,
    :math:`\log Z = \log B(a + h, b + n - h) - \log B(a, b)`.

    Parameters
    ----------
    n : int, default 50
        Number of flips.
    heads : int, optional
        Number of ones. If omitted the flips are drawn with success probability 0.3. If
        given, the sequence has exactly ``heads`` ones in a seeded random order (the order
        does not affect ``log_z``).
    a, b : float, default 1.0
        Beta prior parameters.
    seed : int, default 0
        Seed for the flips (or their order).

    Returns
    -------
    AnalyticModel
        With free variable ``p`` (log-odds transformed by PyMC) and observed ``y``; ``data``
        holds ``y``, ``a`` and ``b``.

    Examples
    --------
    >>> from pymc_evidence.testing import beta_bernoulli
    >>> from scipy.special import betaln
    >>> system = beta_bernoulli(n=20, heads=5, a=2.0, b=3.0)
    >>> bool(np.isclose(system.log_z, betaln(7, 18) - betaln(2, 3)))
    True
    """
    n = int(n)
    if n < 1:
        raise ValueError("n must be positive")
    if a <= 0 or b <= 0:
        raise ValueError("a and b must be positive")
    rng = np.random.default_rng(seed)
    if heads is None:
        y = (rng.random(n) < 0.3).astype(np.int64)
    else:
        heads = int(heads)
        if not 0 <= heads <= n:
            raise ValueError("heads must lie in [0, n]")
        y = np.zeros(n, dtype=np.int64)
        y[:heads] = 1
        y = rng.permutation(y)
    h = int(y.sum())
    log_z = float(special.betaln(a + h, b + n - h) - special.betaln(a, b))

    with pm.Model(coords={"obs_id": np.arange(n)}) as model:
        p = pm.Beta("p", alpha=f64(a), beta=f64(b))
        pm.Bernoulli("y", p=p, observed=y, dims="obs_id")

    description = (
        f"Beta({a:g}, {b:g}) prior on a coin's bias, {n} Bernoulli flips with {h} ones "
        f"(seed={seed}). Exact log Z = log B(a+h, b+n-h) - log B(a, b)."
    )
    data = as_data(y=y, a=float(a), b=float(b))
    return AnalyticModel("beta_bernoulli", model, log_z, description, data)
