"""The user-facing functions: argument checks, the returned container, importance-resampled
posterior, netCDF round trip and model comparison, on conjugate normal models whose
evidence and posterior are known exactly.
"""

import warnings

import arviz as az
import numpy as np
import pymc as pm
import pytest
import xarray as xr
from scipy import stats

import pymc_evidence as pme
from pymc_evidence import GaussianBase
from pymc_evidence.compat import from_netcdf, get_group, group_names, new_idata, to_netcdf
from pymc_evidence.runtime import model_space
from tests._accuracy import assert_log_z

Y = np.array([0.8, -0.5])
NOISE = 0.5
GROUPS = {"posterior", "extended_posterior", "sample_stats", "observed_data", "log_evidence"}
RUN = dict(chains=2, cores=1, progressbar=False)


def normal_model(prior_sd):
    """x ~ N(0, prior_sd² I₂), y ~ N(x, 0.5² I₂), with a Deterministic of x."""
    with pm.Model(coords={"dim": [0, 1]}) as model:
        x = pm.Normal("x", np.float64(0.0), np.float64(prior_sd), dims="dim")
        pm.Deterministic("x_sum", x.sum())
        pm.Normal("y", x, np.float64(NOISE), observed=Y, dims="dim")
    return model


def exact(prior_sd):
    """(log Z, posterior mean, posterior sd) of :func:`normal_model`."""
    var = prior_sd**2 + NOISE**2
    log_z = stats.norm.logpdf(Y, 0.0, np.sqrt(var)).sum()
    shrink = prior_sd**2 / var
    return log_z, shrink * Y, np.sqrt(shrink) * NOISE


@pytest.fixture(scope="module")
def ct_run():
    """Default path: ADVI base (small), one adaptation round, joint CT."""
    with normal_model(1.0):
        return pme.sample_evidence(
            method="ct",
            draws=300,
            tune=300,
            random_seed=3,
            adapt_rounds=1,
            adapt_draws=200,
            adapt_tune=200,
            base_kwargs={"restarts": 1, "n_steps": 1000},
            **RUN,
        )


@pytest.fixture(scope="module")
def offset_run():
    """A deliberately poor base (shifted by one posterior sd, 1.5 times too wide) and a
    wrong log ζ, no adaptation: the raw draws are far from the posterior, so only a correct
    importance resampling gives back the exact posterior."""
    log_z, mean, sd = exact(1.0)
    model = normal_model(1.0)
    space = model_space(model)
    base = GaussianBase(
        mean + sd,
        np.diag(np.full(2, 1.5 * sd)),
        log_zeta=log_z + 0.7,
        kind="moments",
        names=space.names,
        sizes=space.sizes,
    )
    with model:
        return pme.sample_evidence(
            method="ct", draws=400, tune=300, random_seed=4, base=base, adapt_rounds=0, **RUN
        )


def gibbs_wide(seed):
    with normal_model(3.0):
        return pme.sample_evidence(
            method="gibbs_ct",
            draws=300,
            tune=300,
            random_seed=seed,
            adapt_rounds=1,
            adapt_draws=200,
            adapt_tune=200,
            base_kwargs={"restarts": 1, "n_steps": 1000},
            **RUN,
        )


@pytest.fixture(scope="module")
def gibbs_run():
    return gibbs_wide(5)


# ------------------------------------------------------------------------------------------
# Argument checks (before any work)
@pytest.fixture
def no_sampling(monkeypatch):
    def boom(*args, **kwargs):
        raise AssertionError("sampling started despite invalid arguments")

    monkeypatch.setattr(pm, "sample", boom)
    monkeypatch.setattr("pymc_evidence.problem.fit_record", boom)


def test_unknown_method_lists_the_methods(no_sampling):
    with normal_model(1.0), pytest.raises(ValueError, match="nested") as info:
        pme.sample_evidence(method="nested")
    for name in pme.METHODS:
        assert repr(name) in str(info.value)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"draws": 0}, "draws"), ({"chains": 0}, "chains"), ({"tune": -1}, "tune")],
)
def test_bad_counts(no_sampling, kwargs, match):
    with normal_model(1.0), pytest.raises(ValueError, match=match):
        pme.sample_evidence(**kwargs)


def test_ct_evidence_needs_a_ct_trace():
    posterior = xr.Dataset({"x": (("chain", "draw"), np.zeros((2, 5)))})
    with pytest.raises(ValueError, match="ct_delta"):
        pme.ct_evidence(new_idata({"posterior": posterior}))


# ------------------------------------------------------------------------------------------
# The returned container
def test_groups(ct_run):
    assert set(group_names(ct_run)) == GROUPS


def test_log_z_default_path(ct_run):
    est = pme.log_evidence(ct_run)
    assert est.method == "ct" and est.n_chains == 2
    assert_log_z(est, exact(1.0)[0], abs_tol=0.1)


def test_posterior_has_only_source_variables(ct_run):
    post = get_group(ct_run, "posterior")
    assert set(post.data_vars) == {"x", "x_sum"}
    assert post["x"].dims == ("chain", "draw", "dim")
    assert post["x"].shape == (2, 300, 2)
    assert post["x_sum"].shape == (2, 300)
    # resampling picks whole draws: the Deterministic still equals the sum of x
    np.testing.assert_allclose(post["x_sum"].values, post["x"].values.sum(-1), rtol=1e-12)
    ext = get_group(ct_run, "extended_posterior")
    assert {"ct_u", "ct_beta", "ct_delta", "ct_log_zeta", "ct_log_w0", "ct_log_w1"} <= set(
        ext.data_vars
    )
    assert ext["x"].shape == (2, 300, 2)


def test_arviz_summary_on_posterior(ct_run):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        summary = az.summary(ct_run)
    labels = [str(label) for label in summary.index]
    assert len(labels) == 3  # x[0], x[1], x_sum
    assert not any("ct_" in label for label in labels)
    assert "mean" in summary.columns
    _, mean, sd = exact(1.0)
    means = summary["mean"].to_numpy(dtype=float)
    assert np.all(np.abs(means[:2] - mean) < 0.3 * sd)


def test_log_evidence_attrs(ct_run):
    attrs = get_group(ct_run, "log_evidence").attrs
    assert attrs["method"] == "ct"
    assert int(attrs["draws"]) == 300 and int(attrs["tune"]) == 300
    assert int(attrs["chains"]) == 2
    assert int(attrs["n_adapt_rounds"]) == 1
    # the kind of the base used in the final run: ADVI, or its bootstrap refit
    assert attrs["base_kind"] in ("advi", "moments")
    group = get_group(ct_run, "log_evidence")
    assert group["adapt_log_z"].shape == (1,)
    assert np.isfinite(group["adapt_log_z"].values).all()


def test_netcdf_round_trip(ct_run, tmp_path):
    path = to_netcdf(ct_run, tmp_path / "ct_run.nc")
    back = from_netcdf(path)
    assert set(group_names(back)) == set(group_names(ct_run))
    before, after = pme.log_evidence(ct_run), pme.log_evidence(back)
    assert after.log_z == before.log_z and after.se == before.se
    assert after.method == before.method
    np.testing.assert_array_equal(after.per_chain_log_z, before.per_chain_log_z)
    for name in group_names(ct_run):
        a, b = get_group(ct_run, name), get_group(back, name)
        assert set(a.data_vars) == set(b.data_vars), name
        for var in a.data_vars:
            if a[var].dtype.kind in "fiub":
                np.testing.assert_array_equal(a[var].values, b[var].values, err_msg=var)
    attrs_a, attrs_b = (get_group(x, "log_evidence").attrs for x in (ct_run, back))
    for key in ("method", "draws", "chains", "base_kind", "n_adapt_rounds"):
        assert attrs_b[key] == attrs_a[key], key


# ------------------------------------------------------------------------------------------
# Importance resampling against the exact posterior
def test_resampled_posterior_is_the_exact_posterior(offset_run):
    log_z, mean, sd = exact(1.0)
    assert_log_z(pme.log_evidence(offset_run), log_z, abs_tol=0.1)
    x = get_group(offset_run, "posterior")["x"].values.reshape(-1, 2)
    np.testing.assert_array_less(np.abs(x.mean(axis=0) - mean), 0.25 * sd)
    np.testing.assert_allclose(x.std(axis=0), sd, rtol=0.2)
    # guard: the raw tempered draws are biased, so the check above is not vacuous
    raw = get_group(offset_run, "extended_posterior")["x"].values.reshape(-1, 2)
    assert np.all(raw.mean(axis=0) - mean > 0.3 * sd)


def test_resampling_seed(ct_run):
    """ct_evidence on the same raw draws: same seed, same posterior; the evidence does not
    depend on the resampling seed."""
    raw = new_idata(
        {
            "posterior": get_group(ct_run, "extended_posterior").drop_vars(
                ["ct_log_w0", "ct_log_w1"]
            ),
        }
    )
    a, b, c = (pme.ct_evidence(raw, random_seed=s) for s in (1, 1, 2))
    xa, xb, xc = (get_group(i, "posterior")["x"].values for i in (a, b, c))
    np.testing.assert_array_equal(xa, xb)
    assert not np.array_equal(xa, xc)
    assert pme.log_evidence(a).log_z == pme.log_evidence(c).log_z == pme.log_evidence(ct_run).log_z


# ------------------------------------------------------------------------------------------
# Gibbs form through sample_evidence, reproducibility, comparison
def test_gibbs_ct_log_z(gibbs_run):
    est = pme.log_evidence(gibbs_run)
    assert est.method == "gibbs_ct"
    assert get_group(gibbs_run, "log_evidence").attrs["method"] == "gibbs_ct"
    assert set(group_names(gibbs_run)) == GROUPS
    assert_log_z(est, exact(3.0)[0], abs_tol=0.1)


def test_same_seed_same_log_z(gibbs_run):
    again = gibbs_wide(5)
    # rel 1e-9, not bit for bit: see steps/test_gibbs_ct.test_gibbs_same_seed_same_result
    assert pme.log_evidence(again).log_z == pytest.approx(
        pme.log_evidence(gibbs_run).log_z, rel=1e-9
    )
    np.testing.assert_allclose(
        get_group(again, "posterior")["x"].values,
        get_group(gibbs_run, "posterior")["x"].values,
        rtol=1e-9,
    )


def test_compare_orders_models(ct_run, gibbs_run):
    """Same data, priors N(0, 1) and N(0, 9): exactly log Z differs by ~1.7 nats."""
    truth = exact(1.0)[0] - exact(3.0)[0]
    assert truth > 1.0
    with pytest.warns(pme.CrossCheckWarning, match="different methods"):
        table = pme.compare({"wide": gibbs_run, "narrow": ct_run})
    assert list(table.index) == ["narrow", "wide"]
    assert table.loc["narrow", "log_z_minus_best"] == 0.0
    d = -table.loc["wide", "log_z_minus_best"]
    d_se = table.loc["wide", "log_z_minus_best_se"]
    assert_log_z((d, d_se), truth, abs_tol=0.15, label="compare: -log_z_minus_best of 'wide'")
    assert table.loc["narrow", "post_prob"] == pytest.approx(1 / (1 + np.exp(-d)), rel=1e-9)
    assert table.loc["narrow", "post_prob"] > 0.7
    with pytest.warns(pme.CrossCheckWarning, match="different methods"):
        bf = pme.bayes_factor(ct_run, gibbs_run)
    assert bf.log_bf == pytest.approx(d, rel=1e-12)
