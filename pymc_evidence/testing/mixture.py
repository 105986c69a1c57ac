"""Test systems built from Gaussian pieces: a mixture likelihood and a chosen evidence.

Part of :mod:`pymc_evidence.testing.models`: a Gaussian prior with a two-component mixture
likelihood (a bimodal posterior, ``log_z`` a log-sum-exp of two Gaussian densities) and a
Gaussian model with an extra constant observation whose evidence equals any chosen number.
"""

from __future__ import annotations

import math

import numpy as np
import pymc as pm
from scipy import special, stats

from pymc_evidence.testing.analytic import LOG_2PI, AnalyticModel, as_data, f64

__all__ = ["mixture_likelihood", "normalized_density"]


# --------------------------------------------------------------------------------------------
# Bimodal posterior from a mixture likelihood
# --------------------------------------------------------------------------------------------


def mixture_likelihood(
    d: int = 2,
    separation: float = 8.0,
    seed: int = 0,
    *,
    weight: float = 0.4,
    prior_sigma: float = 5.0,
    noise_sigma: float = 1.0,
) -> AnalyticModel:
    r"""A Gaussian prior with a two-component mixture likelihood: a bimodal posterior.

    .. math::

        x \sim \mathcal N(0, s_0^2 I_d), \qquad
        p(y \mid x) = \pi\, \mathcal N(y; x + a, s^2 I_d)
                    + (1 - \pi)\, \mathcal N(y; x - a, s^2 I_d),

    with :math:`a = \tfrac{\text{separation}}{2}\, \mathbf 1 / \sqrt d`, so the two
    posterior modes sit about ``separation * s0**2 / (s0**2 + s**2)`` apart (in units of the
    likelihood width ``s``) while each mode has standard deviation
    :math:`s s_0 / \sqrt{s_0^2 + s^2} \approx s`. The single observed vector ``y`` is scored by
    a ``pm.Mixture`` of two ``pm.MvNormal`` components. Exactly,

    .. math::

        Z = \pi\, \mathcal N(y; a, (s_0^2 + s^2) I) + (1 - \pi)\,
            \mathcal N(y; -a, (s_0^2 + s^2) I).

    Parameters
    ----------
    d : int, default 2
        Dimension of ``x`` and ``y``.
    separation : float, default 8.0
        Distance between the two likelihood modes in ``x``-space, ``2 |a|``.
    seed : int, default 0
        Seed for the data: ``x_true`` from the prior, a component drawn with probability
        ``weight``, then ``y`` from that component.
    weight : float, default 0.4
        Mixture weight :math:`\pi` of the ``x + a`` component.
    prior_sigma : float, default 5.0
        Prior standard deviation :math:`s_0`.
    noise_sigma : float, default 1.0
        Component standard deviation :math:`s`.

    Returns
    -------
    AnalyticModel
        Free variable ``x`` (shape ``(d,)``) and observed ``y``; ``data`` holds ``y``,
        ``offset`` (the vector ``a``), ``weight``, ``prior_sigma`` and ``noise_sigma``.

    Examples
    --------
    >>> from pymc_evidence.testing import mixture_likelihood
    >>> system = mixture_likelihood(d=1, separation=10.0)
    >>> [v.name for v in system.model.free_RVs]
    ['x']
    """
    d = int(d)
    if d < 1:
        raise ValueError("d must be positive")
    if not 0.0 < weight < 1.0:
        raise ValueError("weight must lie in (0, 1)")
    if prior_sigma <= 0 or noise_sigma <= 0 or separation < 0:
        raise ValueError("scales must be positive and separation non-negative")
    rng = np.random.default_rng(seed)
    offset = np.full(d, 0.5 * separation / math.sqrt(d))
    x_true = rng.normal(0.0, prior_sigma, size=d)
    sign = 1.0 if rng.random() < weight else -1.0
    y = x_true + sign * offset + rng.normal(0.0, noise_sigma, size=d)

    var = prior_sigma**2 + noise_sigma**2
    log_terms = np.array(
        [
            math.log(weight) + stats.norm.logpdf(y, offset, math.sqrt(var)).sum(),
            math.log1p(-weight) + stats.norm.logpdf(y, -offset, math.sqrt(var)).sum(),
        ]
    )
    log_z = float(special.logsumexp(log_terms))
    post_w = np.exp(log_terms - log_z)

    cov = f64(noise_sigma**2 * np.eye(d))
    with pm.Model(coords={"dim": np.arange(d)}) as model:
        x = pm.Normal("x", mu=f64(0.0), sigma=f64(prior_sigma), dims="dim")
        components = [
            pm.MvNormal.dist(mu=x + f64(offset), cov=cov),
            pm.MvNormal.dist(mu=x - f64(offset), cov=cov),
        ]
        pm.Mixture(
            "y", w=f64([weight, 1.0 - weight]), comp_dists=components, observed=y, dims="dim"
        )

    description = (
        f"x ~ N(0, {prior_sigma:g}^2 I_{d}); y | x ~ {weight:g} N(x + a, {noise_sigma:g}^2 I) + "
        f"{1 - weight:g} N(x - a, {noise_sigma:g}^2 I) with |2a| = {separation:g} (seed={seed}). "
        f"Bimodal posterior with mode weights {post_w[0]:.3f} / {post_w[1]:.3f}. "
        "Exact log Z = log sum_k pi_k N(y; +-a, (s0^2 + s^2) I)."
    )
    data = as_data(
        y=y,
        offset=offset,
        weight=float(weight),
        prior_sigma=float(prior_sigma),
        noise_sigma=float(noise_sigma),
    )
    return AnalyticModel("mixture_likelihood", model, log_z, description, data)


# --------------------------------------------------------------------------------------------
# A model whose evidence is any chosen number
# --------------------------------------------------------------------------------------------


def normalized_density(
    log_z: float = -3.7,
    d: int = 3,
    seed: int = 0,
    *,
    noise_sigma: float = 0.5,
) -> AnalyticModel:
    r"""A Gaussian model whose evidence equals a chosen constant.

    The model has three parts, all ordinary normalised PyMC densities:

    .. math::

        x \sim \mathcal N(0, I_d), \qquad y \mid x \sim \mathcal N(x, s^2 I_d), \qquad
        z_{\text{offset}} \sim \mathcal N(0, c^2),

    where ``z_offset`` is a single observation that does not depend on ``x``. Its density at
    the observed value is a constant :math:`C`, so the joint density is
    :math:`C\,\mathcal N(y; 0, (1 + s^2) I)\,\mathcal N(x; m, v I)` with posterior
    :math:`x \mid y \sim \mathcal N(m, v I)`, :math:`m = y / (1 + s^2)`,
    :math:`v = s^2 / (1 + s^2)`. The observation ``z_offset`` (its scale, or its value when
    the required constant is below the peak of a unit normal) is chosen so that
    :math:`\log C + \log \mathcal N(y; 0, (1 + s^2) I)` equals ``log_z`` exactly. In other
    words the unnormalised posterior is ``exp(log_z)`` times a normalised Gaussian density,
    and the posterior is the same as without ``z_offset``.

    Parameters
    ----------
    log_z : float, default -3.7
        The evidence to build in.
    d : int, default 3
        Dimension of ``x``.
    seed : int, default 0
        Seed for the data: ``x_true ~ N(0, I)``, ``y ~ N(x_true, s^2 I)``.
    noise_sigma : float, default 0.5
        Likelihood standard deviation :math:`s`.

    Returns
    -------
    AnalyticModel
        Free variable ``x``; observed ``y`` and ``z_offset``; ``data`` holds ``y``,
        ``noise_sigma``, ``z_sigma`` and ``z_value``.

    Examples
    --------
    >>> from pymc_evidence.testing import normalized_density
    >>> system = normalized_density(log_z=2.5, d=2)
    >>> system.log_z
    2.5
    """
    d = int(d)
    if d < 1:
        raise ValueError("d must be positive")
    if noise_sigma <= 0:
        raise ValueError("noise_sigma must be positive")
    log_z = float(log_z)
    if not math.isfinite(log_z):
        raise ValueError("log_z must be finite")
    rng = np.random.default_rng(seed)
    x_true = rng.normal(size=d)
    y = x_true + rng.normal(0.0, noise_sigma, size=d)

    log_py = float(stats.norm.logpdf(y, 0.0, math.sqrt(1.0 + noise_sigma**2)).sum())
    c = log_z - log_py  # required log N(z_value; 0, z_sigma^2)
    peak = -0.5 * LOG_2PI  # log density of N(0, 1) at 0
    if c >= peak:
        # a narrow normal at its centre: -log(z_sigma) - log(2 pi)/2 = c
        z_sigma, z_value = math.exp(peak - c), 0.0
    else:
        # a unit normal away from its centre: -z^2/2 - log(2 pi)/2 = c
        z_sigma, z_value = 1.0, math.sqrt(2.0 * (peak - c))

    with pm.Model(coords={"dim": np.arange(d)}) as model:
        x = pm.Normal("x", mu=f64(0.0), sigma=f64(1.0), dims="dim")
        pm.Normal("y", mu=x, sigma=f64(noise_sigma), observed=y, dims="dim")
        pm.Normal("z_offset", mu=f64(0.0), sigma=f64(z_sigma), observed=f64(z_value))

    description = (
        f"x ~ N(0, I_{d}), y | x ~ N(x, {noise_sigma:g}^2 I) (seed={seed}) plus an independent "
        f"observation z_offset ~ N(0, {z_sigma:.6g}^2) at {z_value:.6g} that adds the constant "
        f"{c:.6g} to log p. Posterior N(y/(1+s^2), s^2/(1+s^2) I); log Z = {log_z:g} by "
        "construction."
    )
    data = as_data(y=y, noise_sigma=float(noise_sigma), z_sigma=z_sigma, z_value=z_value)
    return AnalyticModel("normalized_density", model, log_z, description, data)
