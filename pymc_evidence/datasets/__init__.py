"""Real data sets shipped with the package, and model families built on them.

Currently the Minnesota radon data (Gelman & Hill, 2007): 919 household measurements of
log radon in 85 counties, with an indicator for measurements taken on the ground floor
(``floor == 1``) versus the basement (``floor == 0``) and the county-level log uranium.

Examples
--------
>>> from pymc_evidence.datasets import load_radon, radon_models
>>> df = load_radon()
>>> df.shape
(919, 5)
>>> len(df.attrs["counties"])
85
>>> sorted(radon_models(df))
['pooled', 'unpooled', 'varying_intercept', 'varying_intercept_slope']
"""

from __future__ import annotations

from importlib import resources

import numpy as np
import pandas as pd
import pymc as pm

__all__ = ["load_radon", "radon_models"]

_RADON_FILE = "radon.csv"
_RADON_COLUMNS = ("county", "floor", "log_radon", "log_uranium")


def load_radon() -> pd.DataFrame:
    """Load the Minnesota radon data.

    The CSV ships inside the package and is read with :mod:`importlib.resources`, so it also
    works from an installed wheel or zip.

    Returns
    -------
    pandas.DataFrame
        919 rows with columns

        - ``county`` (str): county name;
        - ``floor`` (int): 0 = basement, 1 = ground floor;
        - ``log_radon`` (float): log radon activity (the response);
        - ``log_uranium`` (float): county-level log uranium;
        - ``county_idx`` (int): integer code of ``county``, ``0..84``, indexing the
          alphabetically sorted county names.

        ``df.attrs["counties"]`` holds those sorted county names (a tuple of 85 strings), so
        ``df.attrs["counties"][df.county_idx[i]] == df.county[i]``.

    Examples
    --------
    >>> from pymc_evidence.datasets import load_radon
    >>> df = load_radon()
    >>> list(df.columns)
    ['county', 'floor', 'log_radon', 'log_uranium', 'county_idx']
    >>> df.attrs["counties"][:3]
    ('AITKIN', 'ANOKA', 'BECKER')
    """
    source = resources.files(__name__).joinpath(_RADON_FILE)
    with source.open("r", encoding="utf-8") as fh:
        df = pd.read_csv(fh)
    missing = set(_RADON_COLUMNS) - set(df.columns)
    if missing:  # pragma: no cover - guards against a corrupted package file
        raise RuntimeError(f"radon data is missing columns {sorted(missing)}")
    df = df.loc[:, list(_RADON_COLUMNS)].copy()
    df["county"] = df["county"].astype(str).str.strip()
    df["floor"] = df["floor"].astype(np.int64)
    df["log_radon"] = df["log_radon"].astype(np.float64)
    df["log_uranium"] = df["log_uranium"].astype(np.float64)
    codes, names = pd.factorize(df["county"], sort=True)
    df["county_idx"] = codes.astype(np.int64)
    df.attrs["counties"] = tuple(str(name) for name in names)
    return df


def county_coding(data: pd.DataFrame) -> tuple[np.ndarray, tuple[str, ...]]:
    """Return integer county codes and county names for ``data``."""
    counties = data.attrs.get("counties")
    if "county_idx" in data.columns and counties is not None:
        idx = data["county_idx"].to_numpy(dtype=np.int64)
        return idx, tuple(counties)
    codes, names = pd.factorize(data["county"].astype(str), sort=True)
    return codes.astype(np.int64), tuple(str(name) for name in names)


def radon_models(data: pd.DataFrame | None = None) -> dict[str, pm.Model]:
    r"""The four classic radon regression models, with proper weakly informative priors.

    With :math:`y_i` the log radon of house :math:`i`, :math:`x_i` its floor indicator and
    :math:`c[i]` its county:

    ``"pooled"``
        :math:`y_i \sim N(\alpha + \beta x_i, \sigma^2)` (complete pooling).
    ``"unpooled"``
        :math:`y_i \sim N(\alpha_{c[i]} + \beta x_i, \sigma^2)` with independent
        :math:`\alpha_c \sim N(0, 10^2)` (no pooling; a common floor slope, as in Gelman &
        Hill).
    ``"varying_intercept"``
        :math:`\alpha_c = \mu_\alpha + \sigma_\alpha z_c`, :math:`z_c \sim N(0, 1)`
        (non-centred partial pooling of the intercepts) and a common slope :math:`\beta`.
    ``"varying_intercept_slope"``
        Non-centred varying intercepts as above and varying floor slopes
        :math:`\beta_c = \mu_\beta + \sigma_\beta w_c`, :math:`w_c \sim N(0, 1)`
        (independent intercepts and slopes).

    Priors: coefficients and population means :math:`N(0, 10^2)`; group-level scales
    :math:`\mathrm{HalfNormal}(1)`; residual scale :math:`\mathrm{HalfNormal}(5)`. No flat
    priors, so every model has a finite evidence.

    Parameters
    ----------
    data : pandas.DataFrame, optional
        Data with columns ``county``, ``floor`` and ``log_radon`` (as returned by
        :func:`load_radon`, which is used when omitted). A subset of rows may be passed;
        counties are then recoded from the ``county`` column unless ``county_idx`` and
        ``attrs["counties"]`` are present.

    Returns
    -------
    dict of str to pymc.Model
        Keys ``"pooled"``, ``"unpooled"``, ``"varying_intercept"`` and
        ``"varying_intercept_slope"``. Models use coords ``"county"`` and ``"obs_id"``; the
        observed variable is ``"log_radon"`` in each.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_evidence.datasets import radon_models
    >>> models = radon_models()
    >>> m = models["varying_intercept"]
    >>> sorted(v.name for v in m.free_RVs)
    ['beta', 'mu_alpha', 'sigma_alpha', 'sigma_y', 'z_alpha']
    >>> bool(np.isfinite(m.compile_logp()(m.initial_point())))
    True
    """
    if data is None:
        data = load_radon()
    county_idx, counties = county_coding(data)
    floor = data["floor"].to_numpy(dtype=np.float64)
    y = data["log_radon"].to_numpy(dtype=np.float64)
    coords = {"county": list(counties), "obs_id": np.arange(len(y))}

    # Float64 numpy constants: bare Python numbers can become float32 PyTensor constants.
    zero, coef_sd = np.float64(0.0), np.float64(10.0)
    one, group_sd, resid_sd = np.float64(1.0), np.float64(1.0), np.float64(5.0)

    models: dict[str, pm.Model] = {}

    with pm.Model(coords=coords) as pooled:
        alpha = pm.Normal("alpha", mu=zero, sigma=coef_sd)
        beta = pm.Normal("beta", mu=zero, sigma=coef_sd)
        sigma_y = pm.HalfNormal("sigma_y", sigma=resid_sd)
        pm.Normal("log_radon", mu=alpha + beta * floor, sigma=sigma_y, observed=y, dims="obs_id")
    models["pooled"] = pooled

    with pm.Model(coords=coords) as unpooled:
        alpha = pm.Normal("alpha", mu=zero, sigma=coef_sd, dims="county")
        beta = pm.Normal("beta", mu=zero, sigma=coef_sd)
        sigma_y = pm.HalfNormal("sigma_y", sigma=resid_sd)
        mu = alpha[county_idx] + beta * floor
        pm.Normal("log_radon", mu=mu, sigma=sigma_y, observed=y, dims="obs_id")
    models["unpooled"] = unpooled

    with pm.Model(coords=coords) as varying_intercept:
        mu_alpha = pm.Normal("mu_alpha", mu=zero, sigma=coef_sd)
        sigma_alpha = pm.HalfNormal("sigma_alpha", sigma=group_sd)
        z_alpha = pm.Normal("z_alpha", mu=zero, sigma=one, dims="county")
        alpha = pm.Deterministic("alpha", mu_alpha + sigma_alpha * z_alpha, dims="county")
        beta = pm.Normal("beta", mu=zero, sigma=coef_sd)
        sigma_y = pm.HalfNormal("sigma_y", sigma=resid_sd)
        mu = alpha[county_idx] + beta * floor
        pm.Normal("log_radon", mu=mu, sigma=sigma_y, observed=y, dims="obs_id")
    models["varying_intercept"] = varying_intercept

    with pm.Model(coords=coords) as varying_intercept_slope:
        mu_alpha = pm.Normal("mu_alpha", mu=zero, sigma=coef_sd)
        sigma_alpha = pm.HalfNormal("sigma_alpha", sigma=group_sd)
        z_alpha = pm.Normal("z_alpha", mu=zero, sigma=one, dims="county")
        alpha = pm.Deterministic("alpha", mu_alpha + sigma_alpha * z_alpha, dims="county")
        mu_beta = pm.Normal("mu_beta", mu=zero, sigma=coef_sd)
        sigma_beta = pm.HalfNormal("sigma_beta", sigma=group_sd)
        z_beta = pm.Normal("z_beta", mu=zero, sigma=one, dims="county")
        beta = pm.Deterministic("beta", mu_beta + sigma_beta * z_beta, dims="county")
        sigma_y = pm.HalfNormal("sigma_y", sigma=resid_sd)
        mu = alpha[county_idx] + beta[county_idx] * floor
        pm.Normal("log_radon", mu=mu, sigma=sigma_y, observed=y, dims="obs_id")
    models["varying_intercept_slope"] = varying_intercept_slope

    return models
