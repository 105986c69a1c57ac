"""Hard analytic systems with a difficult posterior geometry.

Part of :mod:`pymc_evidence.testing.hard`: bimodal and ring-shaped posteriors, a symmetric
two-mode mixture, a narrow spike holding most of the evidence far from a broad bump (a
first-order phase transition on the tempering path) and a prior far from the likelihood.
Each ``log_z`` is a closed form or a 1-D adaptive quadrature (:func:`scipy.integrate.quad`).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy import integrate, special, stats

from pymc_evidence.testing.models import AnalyticModel, as_data, f64

__all__ = [
    "bimodal_1d",
    "phase_transition",
    "phase_transition_centred",
    "prior_conflict",
    "ring",
    "symmetric_mixture",
]


def log_quad(log_f, breaks, mode) -> float:
    """``log`` of the integral of ``exp(log_f)`` over ``[breaks[0], breaks[-1]]``.

    The integrand is divided by its value at ``mode`` (log-space shift) and each piece
    between consecutive breaks (put the modes there) is integrated adaptively.
    """
    shift = float(log_f(mode))
    total = 0.0
    for lo, hi in zip(breaks[:-1], breaks[1:], strict=True):
        total += integrate.quad(
            lambda t: math.exp(float(log_f(t)) - shift), lo, hi, epsabs=0, epsrel=1e-12, limit=500
        )[0]
    return shift + math.log(total)


def grid_mode(log_f, lo, hi, n=4001) -> float:
    """Location of the largest value of ``log_f`` on a uniform grid of ``[lo, hi]``."""
    grid = np.linspace(lo, hi, n)
    return float(grid[int(np.argmax(log_f(grid)))])


def bimodal_1d(y: float = 4.0, prior_sd: float = 3.0) -> AnalyticModel:
    r"""One parameter seen through its square: two mirror-image posterior modes.

    :math:`\theta \sim N(0, s^2)`, :math:`y \sim N(\theta^2, 1)`. For ``y > 0`` the posterior
    has modes near :math:`\pm\sqrt y` of width about :math:`1 / (2\sqrt y)` (for the defaults:
    at ``+-2``, sd 0.25, a valley 8 nats deep between them). ``log_z`` by adaptive quadrature
    of :math:`2\int_0^\infty N(\theta; 0, s^2) N(y; \theta^2, 1)\, d\theta`.

    Parameters
    ----------
    y : float, default 4.0
        The single observation.
    prior_sd : float, default 3.0
        Prior standard deviation ``s``.

    Returns
    -------
    AnalyticModel
        Free variable ``theta``; ``data`` holds ``y`` and ``prior_sd``.

    Examples
    --------
    >>> from pymc_evidence.testing import bimodal_1d
    >>> round(bimodal_1d().log_z, 4)
    -2.8956
    """
    if prior_sd <= 0:
        raise ValueError("prior_sd must be positive")
    y, s = float(y), float(prior_sd)

    def log_f(t):
        return stats.norm.logpdf(t, 0.0, s) + stats.norm.logpdf(y, np.square(t), 1.0)

    mode = grid_mode(log_f, 0.0, max(2.0 * math.sqrt(abs(y)), 10.0 * s))
    log_z = math.log(2.0) + log_quad(log_f, [0.0, mode, math.inf], mode)

    with pm.Model() as model:
        theta = pm.Normal("theta", mu=f64(0.0), sigma=f64(s))
        pm.Normal("y", mu=theta**2, sigma=f64(1.0), observed=f64(y))

    description = (
        f"theta ~ N(0, {s:g}^2), y ~ N(theta^2, 1) at y = {y:g}: symmetric bimodal posterior "
        "(modes near +-sqrt(y)). Exact log Z by 1-D adaptive quadrature."
    )
    return AnalyticModel("bimodal_1d", model, log_z, description, as_data(y=y, prior_sd=s))


def symmetric_mixture(
    d: int = 5,
    separation: float = 10.0,
    seed: int = 0,
    *,
    prior_sigma: float = 5.0,
    noise_sigma: float = 1.0,
) -> AnalyticModel:
    r"""Equal-weight two-component mixture likelihood with exactly equal posterior modes.

    As :func:`~pymc_evidence.testing.mixture_likelihood` with weight 1/2, but the data are
    orthogonal to the offset ``a`` (:math:`y \perp a`), so the posterior is symmetric under
    the reflection that swaps the two modes and each holds exactly half of the mass. The
    modes sit ``separation * s0^2 / (s0^2 + s^2)`` apart with sd about ``s``. Exactly,
    :math:`Z = N(y; a, (s_0^2 + s^2) I_d)`.

    Parameters
    ----------
    d : int, default 5
        Dimension (at least 2, so that ``y`` can be non-zero).
    separation : float, default 10.0
        ``2 |a|``, the distance between the likelihood components.
    seed : int, default 0
        Seed of ``y``: a normal draw with its component along ``a`` removed.
    prior_sigma, noise_sigma : float, default 5.0, 1.0
        Prior sd :math:`s_0` of ``x`` and component sd :math:`s`.

    Returns
    -------
    AnalyticModel
        Free ``x`` (shape ``(d,)``), observed ``y``; ``data`` holds ``y``, ``offset``,
        ``prior_sigma`` and ``noise_sigma``.

    Examples
    --------
    >>> from pymc_evidence.testing import symmetric_mixture
    >>> system = symmetric_mixture()
    >>> float(abs(system.data["y"] @ system.data["offset"])) < 1e-12
    True
    """
    d = int(d)
    if d < 2:
        raise ValueError("d must be at least 2")
    if prior_sigma <= 0 or noise_sigma <= 0 or separation < 0:
        raise ValueError("scales must be positive and separation non-negative")
    offset = np.full(d, 0.5 * separation / math.sqrt(d))
    var = prior_sigma**2 + noise_sigma**2
    y = np.random.default_rng(seed).normal(0.0, math.sqrt(var), size=d)
    y -= (y @ offset) / (offset @ offset) * offset if separation > 0 else 0.0
    log_z = float(stats.norm.logpdf(y, offset, math.sqrt(var)).sum())

    cov = f64(noise_sigma**2 * np.eye(d))
    with pm.Model(coords={"dim": np.arange(d)}) as model:
        x = pm.Normal("x", mu=f64(0.0), sigma=f64(prior_sigma), dims="dim")
        comps = [
            pm.MvNormal.dist(mu=x + f64(offset), cov=cov),
            pm.MvNormal.dist(mu=x - f64(offset), cov=cov),
        ]
        pm.Mixture("y", w=f64([0.5, 0.5]), comp_dists=comps, observed=y, dims="dim")

    description = (
        f"x ~ N(0, {prior_sigma:g}^2 I_{d}); y ~ 0.5 N(x + a, {noise_sigma:g}^2 I) + "
        f"0.5 N(x - a, {noise_sigma:g}^2 I), |2a| = {separation:g}, y orthogonal to a "
        f"(seed={seed}): two posterior modes of exactly equal mass. log Z = log N(y; a, v I)."
    )
    data = as_data(
        y=y, offset=offset, prior_sigma=float(prior_sigma), noise_sigma=float(noise_sigma)
    )
    return AnalyticModel("symmetric_mixture", model, log_z, description, data)


def observe_bumps(x, d: int, centres, sigmas, weights) -> None:
    """Add ``y = 0`` observed under a ``pm.Mixture`` of ``MvNormal(x - c_k, s_k^2 I)``: the
    likelihood ``sum_k w_k N(x; c_k, s_k^2 I)`` of Gaussian bumps (``c_k`` scalars or
    length-``d`` vectors), inside the current model with a ``"dim"`` coordinate."""
    eye = np.eye(d)
    comps = [
        pm.MvNormal.dist(mu=x - f64(c), cov=f64(s**2 * eye))
        for c, s in zip(centres, sigmas, strict=True)
    ]
    pm.Mixture("y", w=f64(weights), comp_dists=comps, observed=np.zeros(d), dims="dim")


def phase_transition(
    d: int = 10,
    *,
    spike_mass: float = 0.9,
    bump_sigma: float = 0.1,
    spike_sigma: float = 0.01,
    offset: float = 0.2,
    half_width: float = 1.0,
) -> AnalyticModel:
    r"""Broad Gaussian bump plus a narrow, off-centre spike holding most of the evidence.

    Uniform prior :math:`x \sim U(-h, h)^d` and likelihood (Skilling's phase-change example,
    with the spike moved off the bump's centre)

    .. math::

        L(x) = (1 - m)\, N(x; 0, v^2 I) + m\, N(x; c\mathbf 1, u^2 I),

    written as a ``pm.Mixture`` of two ``MvNormal`` observed at ``y = 0``. Exactly,
    :math:`Z = (2h)^{-d} [(1 - m) \prod_i P_v(x_i) + m \prod_i P_u(x_i)]` with the box masses
    :math:`P` of the Gaussians from ``erf``. With the defaults the spike holds 90 % of ``Z``,
    its peak is ``log(9 (v/u)^d) = 25`` nats above the bump's and the bump's log density at
    the spike is 20 nats below its peak: tempering from the prior follows the bump until
    :math:`\beta \approx 0.9` and then has to jump to a region it has never visited.

    Parameters
    ----------
    d : int, default 10
        Dimension.
    spike_mass : float, default 0.9
        Mixture weight ``m`` of the spike (its share of ``Z`` up to box truncation).
    bump_sigma, spike_sigma : float, default 0.1, 0.01
        Widths ``v`` and ``u``.
    offset : float, default 0.2
        Every coordinate of the spike centre ``c``.
    half_width : float, default 1.0
        Half-width ``h`` of the prior box.

    Returns
    -------
    AnalyticModel
        Free ``x`` (interval-transformed by PyMC); ``data`` holds the settings and
        ``spike_share`` (the spike's exact share of ``Z``).

    Examples
    --------
    >>> from pymc_evidence.testing import phase_transition
    >>> system = phase_transition()
    >>> round(system.log_z, 6), round(system.data["spike_share"], 6)
    (-6.931472, 0.9)
    """
    d, h, c = int(d), float(half_width), float(offset)
    if d < 1 or not 0.0 < spike_mass < 1.0 or min(bump_sigma, spike_sigma, h) <= 0:
        raise ValueError("need d >= 1, 0 < spike_mass < 1 and positive widths")
    if abs(c) >= h:
        raise ValueError("the spike centre must lie inside the prior box")

    def log_box_mass(centre, sd):
        return d * math.log(special.ndtr((h - centre) / sd) - special.ndtr((-h - centre) / sd))

    terms = np.array(
        [
            math.log1p(-spike_mass) + log_box_mass(0.0, bump_sigma),
            math.log(spike_mass) + log_box_mass(c, spike_sigma),
        ]
    )
    log_z = float(special.logsumexp(terms) - d * math.log(2.0 * h))
    share = float(np.exp(terms[1] - special.logsumexp(terms)))

    with pm.Model(coords={"dim": np.arange(d)}) as model:
        x = pm.Uniform("x", lower=f64(-h), upper=f64(h), dims="dim")
        observe_bumps(x, d, [0.0, c], [bump_sigma, spike_sigma], [1.0 - spike_mass, spike_mass])

    description = (
        f"x ~ U(-{h:g}, {h:g})^{d}; L = {1 - spike_mass:g} N(x; 0, {bump_sigma:g}^2 I) + "
        f"{spike_mass:g} N(x; {c:g}, {spike_sigma:g}^2 I): a spike with {share:.3f} of Z off "
        "the bump's centre (phase transition on the tempering path). Closed form via erf."
    )
    data = as_data(
        spike_mass=float(spike_mass), bump_sigma=float(bump_sigma),
        spike_sigma=float(spike_sigma), offset=c, half_width=h, spike_share=share,
    )  # fmt: skip
    return AnalyticModel("phase_transition", model, log_z, description, data)


def phase_transition_centred(d: int = 10) -> AnalyticModel:
    """Skilling's phase-change example: the spike at the centre of the bump, unit box.

    :func:`phase_transition` with ``offset=0`` and ``half_width=0.5``: ``Z`` is 1 up to a
    truncation of about 6e-7 (``log Z = -5.7e-7`` for ``d = 10``), the spike holds 90 % of it, and
    a tempered path that follows the bump reports ``log 0.1 = -2.303``. Unlike the
    off-centre form, the spike's basin holds the bump's centre, so an ascent from there
    finds it.

    Examples
    --------
    >>> system = phase_transition_centred()
    >>> system.name, round(system.log_z, 5)
    ('phase_transition_centred', -0.0)
    """
    return dataclasses.replace(
        phase_transition(d, offset=0.0, half_width=0.5), name="phase_transition_centred"
    )


def prior_conflict(d: int = 8, distance: float = 6.0, seed: int = 0) -> AnalyticModel:
    r"""Standard normal prior far from a narrow, strongly correlated Gaussian likelihood.

    :math:`x \sim N(0, I_d)`, :math:`y \sim N(x, \Sigma)` with
    :math:`\Sigma = Q\, \mathrm{diag}(\sigma_k^2)\, Q^\top`, ``Q`` a random rotation and
    :math:`\sigma_k` log-spaced from 0.02 to 0.5 (condition number 625), and ``y`` a random
    direction at ``distance`` prior sds from the prior mean. Exactly
    :math:`Z = N(y; 0, I + \Sigma)`.

    Parameters
    ----------
    d : int, default 8
        Dimension.
    distance : float, default 6.0
        ``|y|`` in prior standard deviations.
    seed : int, default 0
        Seed of ``Q`` and of the direction of ``y``.

    Returns
    -------
    AnalyticModel
        Free ``x``, observed ``y`` (one ``MvNormal`` vector); ``data`` holds ``y``, ``cov``.

    Examples
    --------
    >>> from pymc_evidence.testing import prior_conflict
    >>> system = prior_conflict()
    >>> round(float(np.linalg.norm(system.data["y"])), 6)
    6.0
    """
    d = int(d)
    if d < 1 or distance < 0:
        raise ValueError("need d >= 1 and distance >= 0")
    rng = np.random.default_rng(seed)
    q, r = np.linalg.qr(rng.normal(size=(d, d)))
    q *= np.sign(np.diag(r))
    cov = (q * np.geomspace(0.02, 0.5, d) ** 2) @ q.T
    cov = 0.5 * (cov + cov.T)
    u = rng.normal(size=d)
    y = distance * u / np.linalg.norm(u)
    log_z = float(stats.multivariate_normal(np.zeros(d), np.eye(d) + cov).logpdf(y))

    with pm.Model(coords={"dim": np.arange(d)}) as model:
        x = pm.Normal("x", mu=f64(0.0), sigma=f64(1.0), dims="dim")
        pm.MvNormal("y", mu=x, cov=f64(cov), observed=y, dims="dim")

    description = (
        f"x ~ N(0, I_{d}); y ~ N(x, Sigma), Sigma rotated with sds 0.02..0.5 (seed={seed}), "
        f"|y| = {distance:g}: prior-likelihood conflict. log Z = log N(y; 0, I + Sigma)."
    )
    return AnalyticModel("prior_conflict", model, log_z, description, as_data(y=y, cov=cov))


def ring(d: int = 5, sharpness: float = 5.0, radius: float = 1.0) -> AnalyticModel:
    r"""A thin spherical shell: ``log L = -k (|x|^2 - r^2)^2`` under a standard normal prior.

    :math:`x \sim N(0, I_d)` and one observation :math:`r^2 \sim N(|x|^2, 1 / (2k))`, so the
    likelihood is :math:`e^{-k(|x|^2 - r^2)^2}` times the constant
    :math:`(\pi / k)^{-1/2}`. With :math:`s = |x|^2 \sim \chi^2_d`,
    :math:`Z = (k/\pi)^{1/2} \int_0^\infty \chi^2_d(s)\, e^{-k (s - r^2)^2} ds` (quadrature).

    Parameters
    ----------
    d : int, default 5
        Dimension.
    sharpness : float, default 5.0
        ``k``.
    radius : float, default 1.0
        ``r``.

    Returns
    -------
    AnalyticModel
        Free ``x``, observed ``r2``; ``data`` holds ``sharpness`` and ``radius``.

    Examples
    --------
    >>> from pymc_evidence.testing import ring
    >>> round(ring().log_z, 4)
    -2.5402
    """
    d, k, r2 = int(d), float(sharpness), float(radius) ** 2
    if d < 1 or k <= 0:
        raise ValueError("need d >= 1 and sharpness > 0")

    def log_f(s):
        return stats.chi2.logpdf(s, d) - k * np.square(s - r2)

    mode = grid_mode(log_f, 1e-12, r2 + d + 20.0)
    log_z = 0.5 * math.log(k / math.pi) + log_quad(log_f, [0.0, mode, math.inf], mode)

    with pm.Model(coords={"dim": np.arange(d)}) as model:
        x = pm.Normal("x", mu=f64(0.0), sigma=f64(1.0), dims="dim")
        sd = f64(math.sqrt(0.5 / k))
        pm.Normal("r2", mu=pt.sum(pt.square(x)), sigma=sd, observed=f64(r2))

    description = (
        f"x ~ N(0, I_{d}); log L = -{k:g} (|x|^2 - {r2:g})^2 + const: a ring-shaped "
        "posterior. Exact log Z by 1-D quadrature over |x|^2 ~ chi^2_d."
    )
    return AnalyticModel("ring", model, log_z, description, as_data(sharpness=k, radius=radius))
