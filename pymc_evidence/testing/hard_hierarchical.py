"""Hard analytic hierarchical systems: heavy-tailed scales and centred funnels.

Part of :mod:`pymc_evidence.testing.hard`: the eight-schools model with a ``HalfCauchy``
scale prior (``log_z`` by quadrature over the scale), the radon varying-intercept model
in centred and non-centred form (``log_z`` from :mod:`pymc_evidence.testing.radon_exact`) and
the radon varying-intercepts-and-slopes model in both forms (``log_z`` from
:mod:`pymc_evidence.testing.radon_slopes_exact`; not in ``HARD_MODELS``).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pymc as pm

from pymc_evidence.testing.hard_geometry import grid_mode, log_quad
from pymc_evidence.testing.hierarchical import eight_schools_model
from pymc_evidence.testing.models import (
    HIER_MU_SIGMA,
    AnalyticModel,
    as_data,
    f64,
    hierarchical_log_lik_tau,
)

__all__ = [
    "centred_radon_intercepts",
    "centred_radon_slopes",
    "hierarchical_normal_cauchy",
    "noncentred_radon_intercepts",
    "noncentred_radon_slopes",
]


def hierarchical_normal_cauchy(J: int = 8, seed: int = 0, centered: bool = True) -> AnalyticModel:
    r"""Eight-schools model with a heavy-tailed ``tau ~ HalfCauchy(5)`` scale prior.

    Same data and structure as :func:`~pymc_evidence.testing.hierarchical_normal`
    (:math:`\mu \sim N(0, 5^2)`, :math:`\theta_j \sim N(\mu, \tau^2)`,
    :math:`y_j \sim N(\theta_j, \sigma_j^2)`). ``mu`` and ``theta`` are integrated in closed
    form; with :math:`\tau = 5 \tan u` the HalfCauchy prior becomes uniform,
    :math:`Z = \tfrac{2}{\pi}\int_0^{\pi/2} p(y \mid 5 \tan u)\, du`, done by adaptive quadrature.
    (PyMC's ``HalfCauchy`` log density adds ``log 2`` in float32, 1.9e-9 too high; ``log_z``
    is the exact value.)

    Parameters
    ----------
    J : int, default 8
        Number of groups.
    seed : int, default 0
        Data seed (the same data as ``hierarchical_normal(J, seed)``).
    centered : bool, default True
        Sample ``theta`` (the funnel) or ``eta`` with ``theta = mu + tau * eta``.

    Returns
    -------
    AnalyticModel
        ``data`` holds ``y``, ``sigma``, ``mu_sigma`` and ``tau_beta``.

    Examples
    --------
    >>> from pymc_evidence.testing import hierarchical_normal_cauchy
    >>> system = hierarchical_normal_cauchy(J=4)
    >>> system.model["tau"].owner.op.name
    'halfcauchy'
    """
    J, tau_beta = int(J), 5.0
    if J < 1:
        raise ValueError("J must be positive")
    rng = np.random.default_rng(seed)  # same draws as models.hierarchical_normal
    sigma = rng.uniform(8.0, 18.0, size=J)
    y = rng.normal(5.0, 4.0, size=J) + rng.normal(0.0, sigma)

    def log_f(u):
        return hierarchical_log_lik_tau(tau_beta * np.tan(u), y, sigma)

    u_star = grid_mode(log_f, 0.0, 0.5 * math.pi * (1 - 1e-9))
    log_z = math.log(2.0 / math.pi) + log_quad(log_f, [0.0, u_star, 0.5 * math.pi], u_star)

    model = eight_schools_model(
        y, sigma, lambda: pm.HalfCauchy("tau", beta=f64(tau_beta)), centered
    )

    kind = "centred" if centered else "non-centred"
    description = (
        f"{kind.capitalize()} hierarchical normal, J={J} (seed={seed}), tau ~ HalfCauchy(5). "
        "Exact log Z: mu, theta in closed form, tau by quadrature over u = atan(tau/5)."
    )
    name = "hierarchical_normal_cauchy" + ("" if centered else "_noncentered")
    data = as_data(y=y, sigma=sigma, mu_sigma=HIER_MU_SIGMA, tau_beta=tau_beta)
    return AnalyticModel(name, model, log_z, description, data)


def _radon_arrays(data):
    """County codes, county names, floor indicator and log radon of ``data``."""
    from pymc_evidence.datasets import county_coding

    idx, counties = county_coding(data)
    return idx, counties, data["floor"].to_numpy(np.float64), data["log_radon"].to_numpy(np.float64)


def _radon_intercepts(centered: bool, data=None) -> AnalyticModel:
    from pymc_evidence.datasets import load_radon, radon_models
    from pymc_evidence.testing.radon_exact import radon_intercepts_log_z

    data = load_radon() if data is None else data
    log_z = radon_intercepts_log_z(data)
    if not centered:
        model = radon_models(data)["varying_intercept"]
    else:
        idx, counties, floor, y = _radon_arrays(data)
        with pm.Model(coords={"county": list(counties), "obs_id": np.arange(y.size)}) as model:
            mu_alpha = pm.Normal("mu_alpha", mu=f64(0.0), sigma=f64(10.0))
            sigma_alpha = pm.HalfNormal("sigma_alpha", sigma=f64(1.0))
            alpha = pm.Normal("alpha", mu=mu_alpha, sigma=sigma_alpha, dims="county")
            beta = pm.Normal("beta", mu=f64(0.0), sigma=f64(10.0))
            sigma_y = pm.HalfNormal("sigma_y", sigma=f64(5.0))
            mu = alpha[idx] + beta * floor
            pm.Normal("log_radon", mu=mu, sigma=sigma_y, observed=y, dims="obs_id")
    kind = "centred" if centered else "non-centred"
    description = (
        f"Radon varying intercepts, {kind} (alpha_c ~ N(mu_alpha, sigma_alpha^2)"
        f"{'' if centered else ' as mu_alpha + sigma_alpha z_c'}), common floor slope, "
        "priors as datasets.radon_models. Exact log Z: Gaussian coefficients integrated in "
        "closed form, (sigma_alpha, sigma_y) by converged 2-D Simpson's rule."
    )
    name = "radon_intercepts_" + ("centred" if centered else "noncentred")
    return AnalyticModel(name, model, log_z, description, as_data(n_obs=len(data)))


def centred_radon_intercepts(data=None) -> AnalyticModel:
    """Radon varying-intercept model with centred county intercepts (a funnel).

    ``alpha_c ~ N(mu_alpha, sigma_alpha^2)`` directly, with the priors of
    :func:`pymc_evidence.datasets.radon_models` (``varying_intercept``), so it has the same
    evidence; ``log_z`` from :func:`pymc_evidence.testing.radon_exact.radon_intercepts_log_z`.

    Parameters
    ----------
    data : pandas.DataFrame, optional
        Radon data (default :func:`pymc_evidence.datasets.load_radon`).

    Returns
    -------
    AnalyticModel
        Free ``mu_alpha``, ``sigma_alpha``, ``alpha`` (85 counties), ``beta``, ``sigma_y``.

    Examples
    --------
    >>> from pymc_evidence.testing import centred_radon_intercepts
    >>> round(centred_radon_intercepts().log_z, 4)
    -1062.6661
    """
    return _radon_intercepts(True, data)


def noncentred_radon_intercepts(data=None) -> AnalyticModel:
    """``radon_models()["varying_intercept"]`` (non-centred) with its exact ``log_z``.

    Parameters
    ----------
    data : pandas.DataFrame, optional
        Radon data (default :func:`pymc_evidence.datasets.load_radon`).

    Returns
    -------
    AnalyticModel
        The same evidence as :func:`centred_radon_intercepts`.

    Examples
    --------
    >>> from pymc_evidence.testing import noncentred_radon_intercepts
    >>> "z_alpha" in noncentred_radon_intercepts().model.named_vars
    True
    """
    return _radon_intercepts(False, data)


@functools.lru_cache(maxsize=1)
def _default_radon_slopes_log_z() -> float:
    """``radon_slopes_log_z()`` on the default radon data, computed once per process."""
    from pymc_evidence.testing.radon_slopes_exact import radon_slopes_log_z

    return radon_slopes_log_z()


def _radon_slopes(centered: bool, data=None) -> AnalyticModel:
    from pymc_evidence.datasets import load_radon, radon_models
    from pymc_evidence.testing.radon_slopes_exact import radon_slopes_log_z

    log_z = _default_radon_slopes_log_z() if data is None else radon_slopes_log_z(data)
    data = load_radon() if data is None else data
    if not centered:
        model = radon_models(data)["varying_intercept_slope"]
    else:
        idx, counties, floor, y = _radon_arrays(data)
        coef_sd, group_sd = f64(10.0), f64(1.0)
        with pm.Model(coords={"county": list(counties), "obs_id": np.arange(y.size)}) as model:
            mu_alpha = pm.Normal("mu_alpha", mu=f64(0.0), sigma=coef_sd)
            sigma_alpha = pm.HalfNormal("sigma_alpha", sigma=group_sd)
            alpha = pm.Normal("alpha", mu=mu_alpha, sigma=sigma_alpha, dims="county")
            mu_beta = pm.Normal("mu_beta", mu=f64(0.0), sigma=coef_sd)
            sigma_beta = pm.HalfNormal("sigma_beta", sigma=group_sd)
            beta = pm.Normal("beta", mu=mu_beta, sigma=sigma_beta, dims="county")
            sigma_y = pm.HalfNormal("sigma_y", sigma=f64(5.0))
            mu = alpha[idx] + beta[idx] * floor
            pm.Normal("log_radon", mu=mu, sigma=sigma_y, observed=y, dims="obs_id")
    kind = "centred" if centered else "non-centred"
    form = "" if centered else " as mu + sigma * (z_alpha, z_beta)"
    description = (
        f"Radon varying intercepts and floor slopes, {kind} (alpha_c ~ N(mu_alpha, sigma_alpha^2)"
        f", beta_c ~ N(mu_beta, sigma_beta^2){form}), priors as datasets.radon_models. Exact "
        "log Z: Gaussian coefficients integrated in closed form, (sigma_alpha, sigma_beta, "
        "sigma_y) by converged 3-D Simpson's rule."
    )
    name = "radon_slopes_" + ("centred" if centered else "noncentred")
    return AnalyticModel(name, model, log_z, description, as_data(n_obs=len(data)))


def centred_radon_slopes(data=None) -> AnalyticModel:
    """Radon varying intercepts and floor slopes, both centred (two funnels).

    ``alpha_c ~ N(mu_alpha, sigma_alpha^2)`` and ``beta_c ~ N(mu_beta, sigma_beta^2)``
    directly, with the priors of :func:`pymc_evidence.datasets.radon_models`
    (``varying_intercept_slope``), so it has the same evidence; ``log_z`` from
    :func:`pymc_evidence.testing.radon_slopes_exact.radon_slopes_log_z` (cached for the
    default data).

    Parameters
    ----------
    data : pandas.DataFrame, optional
        Radon data (default :func:`pymc_evidence.datasets.load_radon`).

    Returns
    -------
    AnalyticModel
        Free ``mu_alpha``, ``sigma_alpha``, ``alpha``, ``mu_beta``, ``sigma_beta``, ``beta``
        (85 counties each) and ``sigma_y``.

    Examples
    --------
    >>> from pymc_evidence.testing import centred_radon_slopes
    >>> round(centred_radon_slopes().log_z, 3)
    -1063.11
    """
    return _radon_slopes(True, data)


def noncentred_radon_slopes(data=None) -> AnalyticModel:
    """``radon_models()["varying_intercept_slope"]`` (non-centred) with its exact ``log_z``.

    Parameters
    ----------
    data : pandas.DataFrame, optional
        Radon data (default :func:`pymc_evidence.datasets.load_radon`).

    Returns
    -------
    AnalyticModel
        The same evidence as :func:`centred_radon_slopes`.

    Examples
    --------
    >>> from pymc_evidence.testing import noncentred_radon_slopes
    >>> system = noncentred_radon_slopes()
    >>> round(system.log_z, 3), "z_beta" in system.model.named_vars
    (-1063.11, True)
    """
    return _radon_slopes(False, data)
