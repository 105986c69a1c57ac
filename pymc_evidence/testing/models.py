"""Analytic test systems: small PyMC models whose evidence is known exactly.

Every factory in this module returns an :class:`AnalyticModel` that bundles a PyMC model with
its exact log marginal likelihood ``log Z = log p(y | M)``. The exact value is computed
independently of PyMC, from a closed form (Gaussian conjugacy, Beta functions) or from
one-dimensional adaptive quadrature with :func:`scipy.integrate.quad`, so it can serve as
ground truth when testing evidence estimators.

Conventions shared by all systems:

* every prior is proper (no ``Flat`` / ``HalfFlat``), so ``Z`` is finite and well defined;
* synthetic data are drawn inside the factory from ``numpy.random.default_rng(seed)``, so a
  given set of arguments always builds the same data and the same ``log_z``;
* ``log_z`` is the log density of the observed data *as PyMC scores it*: for the Bernoulli
  model that is the probability of the particular 0/1 sequence (no binomial coefficient);
* all numeric constants handed to PyMC are float64 arrays. A bare Python number such as
  ``5.0`` may be turned into a float32 constant by PyTensor, which shifts ``logp`` by
  ~1e-8 and would spoil comparisons with the exact value.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy import integrate, optimize, special, stats

__all__ = [
    "ALL_MODELS",
    "AnalyticModel",
    "beta_bernoulli",
    "conjugate_regression",
    "hierarchical_normal",
    "mixture_likelihood",
    "normalized_density",
    "registry",
]

_LOG_2PI = math.log(2.0 * math.pi)


@dataclass(frozen=True)
class AnalyticModel:
    """A PyMC model paired with its exact log marginal likelihood.

    Parameters
    ----------
    name : str
        Short identifier, e.g. ``"beta_bernoulli"``.
    model : pymc.Model
        The model. Its free random variables are the parameters integrated over in ``Z``.
    log_z : float
        Exact ``log p(y | model)``, computed without PyMC.
    description : str
        One-paragraph human-readable summary of the model, its data and how ``log_z`` was
        obtained.
    data : Mapping[str, Any], optional
        Read-only mapping of the data and constants the model was built from (observed
        arrays, design matrices, known scales), for building independent reference
        computations. Not part of equality or ``repr``.

    Examples
    --------
    >>> from pymc_evidence.testing import beta_bernoulli
    >>> system = beta_bernoulli(n=10, heads=3)
    >>> system.name
    'beta_bernoulli'
    >>> round(system.log_z, 6)
    -7.185387
    """

    name: str
    model: pm.Model = field(repr=False, compare=False)
    log_z: float
    description: str
    data: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)


def _data(**arrays: Any) -> Mapping[str, Any]:
    """Freeze the constants a system was built from into a read-only mapping."""
    frozen = {}
    for key, value in arrays.items():
        if isinstance(value, np.ndarray):
            value = value.copy()
            value.flags.writeable = False
        frozen[key] = value
    return MappingProxyType(frozen)


def _f64(x) -> np.ndarray:
    """Return ``x`` as a float64 numpy array (keeps PyTensor constants in double precision)."""
    return np.asarray(x, dtype=np.float64)


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
        w = pm.Normal("w", mu=_f64(0.0), sigma=_f64(prior_sigma), dims="coef")
        pm.Normal("y", mu=pt.dot(_f64(X), w), sigma=_f64(sigma), observed=y, dims="obs_id")

    description = (
        f"Linear regression y ~ N(Xw, {sigma:g}^2 I) with n={n} observations and d={d} "
        f"weights, prior w ~ N(0, {prior_sigma:g}^2 I), X ~ N(0, 1) (seed={seed}). "
        "Exact log Z = log N(y; 0, sigma^2 I + tau^2 X X^T)."
    )
    data = _data(X=X, y=y, sigma=float(sigma), prior_sigma=float(prior_sigma))
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
        p = pm.Beta("p", alpha=_f64(a), beta=_f64(b))
        pm.Bernoulli("y", p=p, observed=y, dims="obs_id")

    description = (
        f"Beta({a:g}, {b:g}) prior on a coin's bias, {n} Bernoulli flips with {h} ones "
        f"(seed={seed}). Exact log Z = log B(a+h, b+n-h) - log B(a, b)."
    )
    data = _data(y=y, a=float(a), b=float(b))
    return AnalyticModel("beta_bernoulli", model, log_z, description, data)


# --------------------------------------------------------------------------------------------
# Hierarchical normal (eight schools)
# --------------------------------------------------------------------------------------------

_HIER_MU_SIGMA = 5.0
_HIER_TAU_SIGMA = 5.0


def _hierarchical_log_lik_tau(tau, y, sigma, mu_sigma=_HIER_MU_SIGMA):
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
    return -0.5 * (y.shape[-1] * _LOG_2PI + logdet + quad)


def _hierarchical_exact_log_z(y, sigma, mu_sigma=_HIER_MU_SIGMA, tau_sigma=_HIER_TAU_SIGMA):
    """Integrate ``HalfNormal(tau) * p(y | tau)`` over ``tau`` in a shifted log space."""

    def log_f(t):
        return stats.halfnorm.logpdf(t, scale=tau_sigma) + _hierarchical_log_lik_tau(
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

    log_z = _hierarchical_exact_log_z(y, sigma)

    coords = {"school": np.arange(J)}
    with pm.Model(coords=coords) as model:
        mu = pm.Normal("mu", mu=_f64(0.0), sigma=_f64(_HIER_MU_SIGMA))
        tau = pm.HalfNormal("tau", sigma=_f64(_HIER_TAU_SIGMA))
        if centered:
            theta = pm.Normal("theta", mu=mu, sigma=tau, dims="school")
        else:
            eta = pm.Normal("eta", mu=_f64(0.0), sigma=_f64(1.0), dims="school")
            theta = pm.Deterministic("theta", mu + tau * eta, dims="school")
        pm.Normal("y", mu=theta, sigma=_f64(sigma), observed=y, dims="school")

    kind = "centred" if centered else "non-centred"
    description = (
        f"{kind.capitalize()} hierarchical normal model with J={J} groups and known "
        f"sigma_j (seed={seed}): mu ~ N(0, 5^2), tau ~ HalfNormal(5), theta_j ~ N(mu, tau^2), "
        "y_j ~ N(theta_j, sigma_j^2). Exact log Z: mu and theta integrated in closed form, "
        "tau by adaptive quadrature."
    )
    name = "hierarchical_normal" if centered else "hierarchical_normal_noncentered"
    data = _data(y=y, sigma=sigma, mu_sigma=_HIER_MU_SIGMA, tau_sigma=_HIER_TAU_SIGMA)
    return AnalyticModel(name, model, log_z, description, data)


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

    cov = _f64(noise_sigma**2 * np.eye(d))
    with pm.Model(coords={"dim": np.arange(d)}) as model:
        x = pm.Normal("x", mu=_f64(0.0), sigma=_f64(prior_sigma), dims="dim")
        components = [
            pm.MvNormal.dist(mu=x + _f64(offset), cov=cov),
            pm.MvNormal.dist(mu=x - _f64(offset), cov=cov),
        ]
        pm.Mixture(
            "y", w=_f64([weight, 1.0 - weight]), comp_dists=components, observed=y, dims="dim"
        )

    description = (
        f"x ~ N(0, {prior_sigma:g}^2 I_{d}); y | x ~ {weight:g} N(x + a, {noise_sigma:g}^2 I) + "
        f"{1 - weight:g} N(x - a, {noise_sigma:g}^2 I) with |2a| = {separation:g} (seed={seed}). "
        f"Bimodal posterior with mode weights {post_w[0]:.3f} / {post_w[1]:.3f}. "
        "Exact log Z = log sum_k pi_k N(y; +-a, (s0^2 + s^2) I)."
    )
    data = _data(
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
    peak = -0.5 * _LOG_2PI  # log density of N(0, 1) at 0
    if c >= peak:
        # a narrow normal at its centre: -log(z_sigma) - log(2 pi)/2 = c
        z_sigma, z_value = math.exp(peak - c), 0.0
    else:
        # a unit normal away from its centre: -z^2/2 - log(2 pi)/2 = c
        z_sigma, z_value = 1.0, math.sqrt(2.0 * (peak - c))

    with pm.Model(coords={"dim": np.arange(d)}) as model:
        x = pm.Normal("x", mu=_f64(0.0), sigma=_f64(1.0), dims="dim")
        pm.Normal("y", mu=x, sigma=_f64(noise_sigma), observed=y, dims="dim")
        pm.Normal("z_offset", mu=_f64(0.0), sigma=_f64(z_sigma), observed=_f64(z_value))

    description = (
        f"x ~ N(0, I_{d}), y | x ~ N(x, {noise_sigma:g}^2 I) (seed={seed}) plus an independent "
        f"observation z_offset ~ N(0, {z_sigma:.6g}^2) at {z_value:.6g} that adds the constant "
        f"{c:.6g} to log p. Posterior N(y/(1+s^2), s^2/(1+s^2) I); log Z = {log_z:g} by "
        "construction."
    )
    data = _data(y=y, noise_sigma=float(noise_sigma), z_sigma=z_sigma, z_value=z_value)
    return AnalyticModel("normalized_density", model, log_z, description, data)


# --------------------------------------------------------------------------------------------
# Registry
# --------------------------------------------------------------------------------------------

ALL_MODELS: dict[str, Callable[[], AnalyticModel]] = {
    "conjugate_regression": conjugate_regression,
    "beta_bernoulli": beta_bernoulli,
    "hierarchical_normal": hierarchical_normal,
    "hierarchical_normal_noncentered": lambda: hierarchical_normal(centered=False),
    "mixture_likelihood": mixture_likelihood,
    "normalized_density": normalized_density,
}
"""Factories of the default analytic systems, keyed by :attr:`AnalyticModel.name`."""


def registry() -> list[AnalyticModel]:
    """Build the default instance of every analytic test system.

    Each call builds fresh PyMC models, so callers may modify them freely.

    Returns
    -------
    list of AnalyticModel
        One entry per key of :data:`ALL_MODELS`, in that order.

    Examples
    --------
    >>> from pymc_evidence.testing import registry
    >>> [m.name for m in registry()]  # doctest: +NORMALIZE_WHITESPACE
    ['conjugate_regression', 'beta_bernoulli', 'hierarchical_normal',
     'hierarchical_normal_noncentered', 'mixture_likelihood', 'normalized_density']
    """
    return [factory() for factory in ALL_MODELS.values()]
