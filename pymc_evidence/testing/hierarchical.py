"""The eight-schools hierarchical normal test system, ``log_z`` by 1-D quadrature.

Part of :mod:`pymc_evidence.testing.models`. ``mu`` and ``theta`` are integrated out in closed
form; the remaining integral over the group scale ``tau`` is done by adaptive quadrature
(:func:`scipy.integrate.quad`). The private helpers are shared with
:mod:`pymc_evidence.testing.hard_hierarchical`.
"""

from __future__ import annotations

import math

import numpy as np
import pymc as pm
from scipy import integrate, optimize, stats

from pymc_evidence.testing.analytic import LOG_2PI, AnalyticModel, as_data, f64

__all__ = ["hierarchical_normal"]


# --------------------------------------------------------------------------------------------
# Hierarchical normal (eight schools)
# --------------------------------------------------------------------------------------------

HIER_MU_SIGMA = 5.0
HIER_TAU_SIGMA = 5.0


def hierarchical_log_lik_tau(tau, y, sigma, mu_sigma=HIER_MU_SIGMA):
    r"""``log p(y | tau)`` with ``mu`` and ``theta`` integrated out analytically.

    ``y | tau ~ N(0, diag(sigma^2 + tau^2) + mu_sigma^2 11^T)``; the determinant and the
    quadratic form use the matrix determinant lemma and Sherman-Morrison, vectorised over
    ``tau``.
    """
    tau = np.asarray(tau, dtype=np.float64)[..., None]
    var = sigma**2 + tau**2
    s1 = np.sum(1.0 / var, axis=-1)
    sy = np.sum(y / var, axis=-1)
    syy = np.sum(y**2 / var, axis=-1)
    k = 1.0 + mu_sigma**2 * s1
    logdet = np.sum(np.log(var), axis=-1) + np.log(k)
    quad = syy - mu_sigma**2 * sy**2 / k
    return -0.5 * (y.shape[-1] * LOG_2PI + logdet + quad)


def hierarchical_exact_log_z(y, sigma, mu_sigma=HIER_MU_SIGMA, tau_sigma=HIER_TAU_SIGMA):
    """Integrate ``HalfNormal(tau) * p(y | tau)`` over ``tau`` in a shifted log space."""

    def log_f(t):
        return stats.halfnorm.logpdf(t, scale=tau_sigma) + hierarchical_log_lik_tau(
            t, y, sigma, mu_sigma
        )

    hi = 12.0 * tau_sigma  # prior mass beyond is ~1e-32
    grid = np.linspace(0.0, hi, 2001)
    i = int(np.argmax(log_f(grid)))
    lo_b, hi_b = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    res = optimize.minimize_scalar(
        lambda t: -float(log_f(t)), bounds=(lo_b, hi_b), method="bounded"
    )
    t_star = float(res.x) if -res.fun >= log_f(grid[i]) else float(grid[i])
    shift = float(log_f(t_star))

    def g(t):
        return math.exp(float(log_f(t)) - shift)

    total = 0.0
    for lo, up in ((0.0, t_star), (t_star, hi)):
        if up > lo:
            total += integrate.quad(g, lo, up, epsabs=1e-14, epsrel=1e-11, limit=200)[0]
    total += integrate.quad(g, hi, np.inf, epsabs=1e-14, epsrel=1e-11, limit=200)[0]
    return shift + math.log(total)


def hierarchical_normal(J: int = 8, seed: int = 0, centered: bool = True) -> AnalyticModel:
    r"""Eight-schools-like hierarchical normal model with known measurement errors.

    .. math::

        \mu \sim \mathcal N(0, 5^2), \quad \tau \sim \mathrm{HalfNormal}(5), \quad
        \theta_j \sim \mathcal N(\mu, \tau^2), \quad
        y_j \sim \mathcal N(\theta_j, \sigma_j^2), \; j = 1..J.

    Integrating :math:`\mu` and :math:`\theta` analytically gives
    :math:`y \mid \tau \sim \mathcal N(0, \mathrm{diag}(\sigma^2 + \tau^2) + 25\,\mathbf 1
    \mathbf 1^\top)`; the remaining integral over :math:`\tau` is done by adaptive
    quadrature of the integrand divided by its maximum (log-space shift), split at the mode.

    Parameters
    ----------
    J : int, default 8
        Number of groups ("schools").
    seed : int, default 0
        Seed for the data: :math:`\sigma_j \sim U(8, 18)`, true effects
        :math:`\theta_j \sim N(5, 4^2)`, :math:`y_j \sim N(\theta_j, \sigma_j^2)`.
    centered : bool, default True
        ``True`` samples ``theta`` directly (the funnel geometry); ``False`` uses
        ``theta = mu + tau * eta`` with ``eta ~ N(0, 1)`` (``theta`` is then a
        ``Deterministic``). Both parametrisations have the same ``log_z``.

    Returns
    -------
    AnalyticModel
        Free variables ``mu``, ``tau`` (log transformed) and ``theta`` or ``eta``; ``data``
        holds ``y``, ``sigma``, ``mu_sigma`` and ``tau_sigma``.

    Examples
    --------
    >>> from pymc_evidence.testing import hierarchical_normal
    >>> a = hierarchical_normal(J=4, centered=True)
    >>> b = hierarchical_normal(J=4, centered=False)
    >>> a.log_z == b.log_z
    True
    >>> sorted(v.name for v in b.model.free_RVs)
    ['eta', 'mu', 'tau']
    """
    J = int(J)
    if J < 1:
        raise ValueError("J must be positive")
    rng = np.random.default_rng(seed)
    sigma = rng.uniform(8.0, 18.0, size=J)
    theta_true = rng.normal(5.0, 4.0, size=J)
    y = theta_true + rng.normal(0.0, sigma)

    log_z = hierarchical_exact_log_z(y, sigma)

    model = eight_schools_model(
        y, sigma, lambda: pm.HalfNormal("tau", sigma=f64(HIER_TAU_SIGMA)), centered
    )

    kind = "centred" if centered else "non-centred"
    description = (
        f"{kind.capitalize()} hierarchical normal model with J={J} groups and known "
        f"sigma_j (seed={seed}): mu ~ N(0, 5^2), tau ~ HalfNormal(5), theta_j ~ N(mu, tau^2), "
        "y_j ~ N(theta_j, sigma_j^2). Exact log Z: mu and theta integrated in closed form, "
        "tau by adaptive quadrature."
    )
    name = "hierarchical_normal" if centered else "hierarchical_normal_noncentered"
    data = as_data(y=y, sigma=sigma, mu_sigma=HIER_MU_SIGMA, tau_sigma=HIER_TAU_SIGMA)
    return AnalyticModel(name, model, log_z, description, data)


def eight_schools_model(y, sigma, tau_prior, centered: bool) -> pm.Model:
    """The PyMC model of the hierarchical normal systems: ``mu ~ N(0, 5^2)``, ``tau`` from
    ``tau_prior()`` (called inside the model), ``theta ~ N(mu, tau^2)`` written centred or
    as ``mu + tau * eta``, and ``y ~ N(theta, sigma^2)`` observed, on a ``school`` dim."""
    with pm.Model(coords={"school": np.arange(len(y))}) as model:
        mu = pm.Normal("mu", mu=f64(0.0), sigma=f64(HIER_MU_SIGMA))
        tau = tau_prior()
        if centered:
            theta = pm.Normal("theta", mu=mu, sigma=tau, dims="school")
        else:
            eta = pm.Normal("eta", mu=f64(0.0), sigma=f64(1.0), dims="school")
            theta = pm.Deterministic("theta", mu + tau * eta, dims="school")
        pm.Normal("y", mu=theta, sigma=f64(sigma), observed=y, dims="school")
    return model


def hierarchical_quantiles(y, sigma, probs, n_grid: int = 20001) -> dict[str, np.ndarray]:
    """Exact posterior quantiles of ``tau``, ``mu`` and each ``theta_j`` of
    :func:`hierarchical_normal` (``tau ~ HalfNormal(5)``) at ``probs``.

    ``tau``'s density is :func:`hierarchical_log_lik_tau` times its prior on a uniform grid
    over ``[0, 12 * 5]`` (trapezoid weights); given ``tau``, ``mu`` and each ``theta_j``
    are Gaussian (``mu``'s precision ``sum 1 / (sigma^2 + tau^2) + 1 / 25``; ``theta_j``
    shrinks ``y_j`` towards ``mu`` with weight ``sigma_j^2 / (sigma_j^2 + tau^2)``), so
    their posteriors are mixtures of Gaussians over the grid, inverted by bisection.

    Examples
    --------
    >>> from pymc_evidence.testing import hierarchical_normal
    >>> data = hierarchical_normal(J=4).data
    >>> q = hierarchical_quantiles(data["y"], data["sigma"], [0.5, 0.95], n_grid=2001)
    >>> q["theta"].shape, bool(q["tau"][0] < q["tau"][1])
    ((4, 2), True)
    """
    y, sigma = np.asarray(y, dtype=float), np.asarray(sigma, dtype=float)
    tau = np.linspace(0.0, 12.0 * HIER_TAU_SIGMA, n_grid)
    log_p = hierarchical_log_lik_tau(tau, y, sigma) + stats.halfnorm.logpdf(tau, scale=5.0)
    w = np.exp(log_p - log_p.max()) * np.r_[0.5, np.ones(n_grid - 2), 0.5]
    w /= w.sum()
    cdf = np.cumsum(w) - 0.5 * w  # the trapezoid rule's CDF at the nodes
    out = {"tau": np.interp(probs, cdf, tau)}
    var = sigma**2 + tau[:, None] ** 2  # (grid, J)
    v_mu = 1.0 / (np.sum(1.0 / var, axis=1) + 1.0 / HIER_MU_SIGMA**2)
    m_mu = v_mu * np.sum(y / var, axis=1)
    out["mu"] = _mixture_quantiles(w, m_mu, np.sqrt(v_mu), probs)
    shrink = sigma**2 / var  # the weight of mu in theta_j's conditional mean
    m_theta = (1.0 - shrink) * y + shrink * m_mu[:, None]
    v_theta = (1.0 - shrink) * sigma**2 + shrink**2 * v_mu[:, None]
    out["theta"] = np.array(
        [_mixture_quantiles(w, m_theta[:, j], np.sqrt(v_theta[:, j]), probs) for j in range(y.size)]
    )
    return out


def _mixture_quantiles(w, means, sds, probs) -> np.ndarray:
    """Quantiles of the Gaussian mixture ``sum_k w_k N(means_k, sds_k^2)`` by bisection."""
    lo = np.full(len(probs), float(np.min(means - 40 * sds)))
    hi = np.full(len(probs), float(np.max(means + 40 * sds)))
    probs = np.asarray(probs, dtype=float)
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        below = np.sum(w[:, None] * stats.norm.cdf((mid - means[:, None]) / sds[:, None]), 0)
        lo, hi = np.where(below < probs, mid, lo), np.where(below < probs, hi, mid)
    return 0.5 * (lo + hi)
