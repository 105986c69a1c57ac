"""bambi models as input (:mod:`pymc_evidence.api.bambi_models`): the evidence against its
exact value under bambi's default priors, the posterior in bambi's names and conventions,
and ``compare_models`` with bambi models. Skipped where bambi is not installed (it needs
PyMC 6: the ``bambi`` extra)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import pymc_evidence as pme
from pymc_evidence.api.bambi_models import is_bambi_model, pymc_model_of
from pymc_evidence.compat import group_names
from pymc_evidence.testing.bambi_truth import (
    bambi_priors,
    random_intercept_truth,
    scale_quantiles,
)
from tests._accuracy import assert_estimate, assert_log_z, assert_quantiles

bmb = pytest.importorskip("bambi")


def _data(J=12, rows=5, seed=1):
    """Groups of ``rows`` rows (one group short by two), a predictor far from zero (so that
    bambi's centring moves the intercept)."""
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(J), rows)[2:]
    x = rng.normal(size=g.size) + 2.0
    y = 1.0 + 0.5 * x + rng.normal(0.0, 0.7, J)[g] + rng.normal(size=g.size)
    return pd.DataFrame({"y": y, "x": x, "g": pd.Categorical(g)})


@pytest.fixture(scope="module")
def fitted():
    """A bambi model (not built), its exact truth and the default's result on it."""
    df = _data()
    model = bmb.Model("y ~ 1 + x + (1|g)", df)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pme.sample_evidence(model, random_seed=3, progressbar=False)
    codes = df["g"].cat.codes.to_numpy()
    truth = random_intercept_truth(df["y"], df["x"], codes, bambi_priors(model.backend.model))
    return model, truth, idata


def test_bambi_model_evidence_against_its_exact_value(fitted):
    model, truth, idata = fitted
    assert model.built  # built by the call
    assert_log_z(pme.log_evidence(idata), truth.log_z, abs_tol=0.1, label="bambi (1|g)")


def test_bambi_posterior_has_bambis_names_and_uncentred_intercept(fitted):
    """The variables bambi's ``fit()`` reports (no offsets, no ``mu``), and ``Intercept``
    moved back from the centred predictor: its posterior mean against the exact one."""
    _, truth, idata = fitted
    post = idata["posterior"]
    assert set(post.data_vars) == {"sigma", "Intercept", "x", "1|g_sigma", "1|g"}
    assert post["1|g"].dims[-1] == "g__factor_dim"
    for name, exact in [("Intercept", truth.intercept_mean), ("x", truth.slope_mean)]:
        draws = post[name].values.ravel()
        se = draws.std() / np.sqrt(draws.size / 4)  # resampled particles: a quarter
        assert_estimate(draws.mean(), exact, se, abs_tol=0.1, label=name)
    assert "log_evidence" in group_names(idata)


def test_recognised_without_importing_bambi_and_built_once():
    model = bmb.Model("y ~ x", _data(J=4, rows=3))
    assert is_bambi_model(model) and not is_bambi_model(model.formula)
    first = pymc_model_of(model)
    assert pymc_model_of(model) is first  # an existing build is kept


def test_compare_models_takes_bambi_models():
    df = _data(J=6, rows=4, seed=2)
    models = {"slope": bmb.Model("y ~ x", df), "flat": bmb.Model("y ~ 1", df)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = pme.compare_models(models, random_seed=1, progressbar=False, n_particles=200)
    assert not out.errors and set(out.table.index) == {"slope", "flat"}
    assert set(out.results["slope"][0]["posterior"].data_vars) == {"sigma", "Intercept", "x"}


def test_group_scale_quantiles_against_the_exact_posterior(fitted):
    """The share of the draws of ``1|g_sigma`` below its exact 5 %, 50 % and 95 % quantiles
    (quadrature), within the Monte Carlo error that the reported posterior ESS gives.
    Without the moves at ``beta = 1`` (``posterior_moves``) this seed's run, which goes
    from its base to the posterior in one step, left 2.2 % of its draws below the 5 %
    quantile."""
    model, _, idata = fitted
    df = _data()
    qs = np.array([0.05, 0.5, 0.95])
    exact = scale_quantiles(
        df["y"], df["x"], df["g"].cat.codes, bambi_priors(model.backend.model), qs, n_grid=300
    )
    draws = idata["posterior"]["1|g_sigma"].values
    ess = pme.log_evidence(idata).diagnostics["posterior_ess"]
    assert_quantiles(draws, exact, qs, ess, abs_tol=0.03, label="1|g_sigma")


def test_bambi_predict_reads_the_result(fitted):
    """``bmb_model.predict`` on the result: each draw's ``mu`` is its uncentred intercept
    plus slope times ``x`` plus its group's effect (bambi's conventions hold draw by draw)."""
    model, _, idata = fitted
    out = model.predict(idata, kind="response_params", inplace=False)
    post = out["posterior"]
    df = _data()
    codes = df["g"].cat.codes.to_numpy()
    expected = (
        post["Intercept"].values[..., None]
        + post["x"].values[..., None] * df["x"].to_numpy()
        + post["1|g"].values[..., codes]
    )
    np.testing.assert_allclose(post["mu"].values, expected, rtol=0, atol=1e-9)
