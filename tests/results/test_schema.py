"""The ``log_evidence`` group schema and the stack compatibility layer."""

import importlib

import numpy as np
import pymc as pm
import pytest
import xarray as xr

from pymc_evidence import compat
from pymc_evidence.estimators.record import EvidenceEstimate
from pymc_evidence.results import (
    GROUP,
    dataset_to_estimate,
    estimate_to_dataset,
    log_evidence,
    validate_log_evidence,
)


def make_estimate(**changes):
    fields = dict(
        log_z=-3.25,
        se=0.04,
        method="ct",
        per_chain_log_z=np.array([-3.2, -3.3]),
        per_chain_se=np.array([0.05, 0.06]),
        diagnostics={"ess": 812.0, "mean_beta": 0.5, "bad": float("nan"), "n_div": 3},
        warnings=("low ESS in chain 1", "beta rarely reached 1"),
    )
    fields.update(changes)
    return EvidenceEstimate(**fields)


def assert_same_estimate(back, est):
    assert back.log_z == est.log_z
    assert back.se == est.se
    assert back.method == est.method
    np.testing.assert_array_equal(back.per_chain_log_z, est.per_chain_log_z)
    np.testing.assert_array_equal(back.per_chain_se, est.per_chain_se)
    np.testing.assert_equal(back.diagnostics, {k: float(v) for k, v in est.diagnostics.items()})
    assert back.warnings == est.warnings


def assert_numeric(ds):
    for name, var in ds.variables.items():
        assert var.dtype.kind in "biuf", f"{name} has dtype {var.dtype}"


@pytest.fixture(scope="module")
def sampled():
    with pm.Model():
        x = pm.Normal("x")
        pm.Normal("y", x, 1.0, observed=np.array([0.3, -0.1, 0.5]))
        return pm.sample(
            draws=50,
            tune=50,
            chains=1,
            cores=1,
            progressbar=False,
            random_seed=1,
            compute_convergence_checks=False,
        )


@pytest.mark.parametrize(
    "warnings", [(), ("one",), ("first", "second", "third"), ("",), ("", "after an empty one")]
)
def test_estimate_round_trip(warnings):
    est = make_estimate(warnings=warnings)
    ds = estimate_to_dataset(est)
    assert_numeric(ds)
    assert ds.attrs["n_warnings"] == len(warnings)
    assert_same_estimate(dataset_to_estimate(ds), est)


def test_layout_of_the_group():
    ds = estimate_to_dataset(make_estimate())
    assert ds["log_marginal_likelihood"].dims == ()
    assert ds["log_marginal_likelihood_se"].dims == ()
    assert ds["log_marginal_likelihood_chain"].dims == ("chain",)
    assert ds["log_marginal_likelihood_chain_se"].dims == ("chain",)
    np.testing.assert_array_equal(ds["chain"], [0, 1])
    assert ds["diag_ess"].dims == () and ds["diag_ess"].dtype == np.float64
    assert ds.attrs["method"] == "ct"
    assert ds.attrs["warnings"] == "low ESS in chain 1\nbeta rarely reached 1"
    assert ds.attrs["schema_version"] == 1
    assert isinstance(ds.attrs["created_at"], str) and ds.attrs["created_at"].endswith("+00:00")
    package = importlib.import_module("pymc_evidence")
    assert ds.attrs["library_version"] == str(getattr(package, "__version__", "unknown"))


def test_newlines_inside_a_warning_become_spaces():
    ds = estimate_to_dataset(make_estimate(warnings=("two\nlines", "ok")))
    assert dataset_to_estimate(ds).warnings == ("two lines", "ok")


def test_missing_per_chain_se_is_nan_and_no_chains_is_allowed():
    ds = estimate_to_dataset(make_estimate(per_chain_se=np.empty(0)))
    assert np.isnan(ds["log_marginal_likelihood_chain_se"]).all()
    empty = estimate_to_dataset(EvidenceEstimate(log_z=1.0, se=0.1, method="smc"))
    assert empty.sizes["chain"] == 0
    assert dataset_to_estimate(empty).n_chains == 0


def test_stage_values_are_nan_padded_and_extra_dims_kept():
    ds = estimate_to_dataset(
        make_estimate(),
        chain_values={"accept_rate": np.array([0.8, 0.7])},
        stage_values={
            "beta": [np.array([0.0, 0.5, 1.0]), np.array([0.0, 1.0])],
            "ladder": [0, 1, 2],
        },
        stage_dim="level",
        extra_dims={"weights": ("particle", np.ones(4)), "grid": (("chain", "k"), np.ones((2, 3)))},
        chain_dim="run",
    )
    assert_numeric(ds)
    assert ds["accept_rate"].dims == ("run",)
    assert ds["beta"].dims == ("run", "level")
    np.testing.assert_array_equal(ds["beta"].values, [[0.0, 0.5, 1.0], [0.0, 1.0, np.nan]])
    assert ds["ladder"].dims == ("level",) and ds["ladder"].dtype == np.float64
    assert ds["weights"].dims == ("particle",)
    assert ds["grid"].dims == ("chain", "k")
    assert ds["log_marginal_likelihood_chain"].dims == ("run",)
    assert_same_estimate(dataset_to_estimate(ds), make_estimate())


def test_settings_are_converted_to_netcdf_safe_types():
    attrs = {"draws": np.int32(7), "adapt": True, "tol": np.float32(0.5), "grid": [1, 2]}
    ds = estimate_to_dataset(make_estimate(), attrs={**attrs, "base": "advi", "none": []})
    assert ds.attrs["adapt"] == 1 and type(ds.attrs["adapt"]) is int
    assert ds.attrs["draws"] == 7 and type(ds.attrs["draws"]) is int
    assert ds.attrs["tol"] == 0.5 and type(ds.attrs["tol"]) is float
    np.testing.assert_array_equal(ds.attrs["grid"], [1, 2])
    assert ds.attrs["none"].dtype == np.float64 and ds.attrs["none"].size == 0


@pytest.mark.parametrize("value", [None, {"a": 1}, ["advi", "prior"], np.ones((2, 2)), 1j])
def test_unsafe_settings_raise_type_error(value):
    with pytest.raises(TypeError, match="netCDF"):
        estimate_to_dataset(make_estimate(), attrs={"setting": value})


@pytest.mark.parametrize("key", ["method", "warnings", "n_warnings", "created_at", 3])
def test_reserved_or_bad_setting_names_raise(key):
    with pytest.raises(ValueError, match="reserved"):
        estimate_to_dataset(make_estimate(), attrs={key: 1})


@pytest.mark.parametrize(
    "kwargs",
    [
        {"chain_values": {"log_marginal_likelihood": np.ones(2)}},
        {"chain_values": {"diag_ess": np.ones(2)}},
        {"chain_values": {"a": np.ones(2)}, "stage_values": {"a": np.ones(3)}},
        {"chain_values": {"a/b": np.ones(2)}},
    ],
)
def test_name_clashes_raise(kwargs):
    with pytest.raises(ValueError, match="Variable name"):
        estimate_to_dataset(make_estimate(), **kwargs)


def test_inconsistent_shapes_raise():
    with pytest.raises(ValueError, match="Inconsistent dimension sizes"):
        estimate_to_dataset(make_estimate(), chain_values={"a": np.ones(3)})
    with pytest.raises(ValueError, match="3-D"):
        estimate_to_dataset(make_estimate(), stage_values={"a": np.ones((2, 2, 2))})
    with pytest.raises(ValueError, match="per_chain_se"):
        estimate_to_dataset(make_estimate(per_chain_se=np.ones(3)))
    with pytest.raises(TypeError, match="scalar"):
        estimate_to_dataset(make_estimate(diagnostics={"ess": np.ones(2)}))


def test_object_dtype_is_rejected_on_write():
    ragged = np.empty(2, dtype=object)
    ragged[:] = [np.ones(2), np.ones(3)]
    with pytest.raises(TypeError, match="dtype object"):
        estimate_to_dataset(make_estimate(), stage_values={"beta": ragged})
    with pytest.raises(TypeError, match="real numbers"):
        estimate_to_dataset(make_estimate(), chain_values={"label": np.array(["a", "b"])})
    with pytest.raises(TypeError, match="real numbers"):
        estimate_to_dataset(make_estimate(diagnostics={"name": "x"}))


@pytest.mark.parametrize("dtype", [object, str])
def test_validate_rejects_non_numeric_variables(dtype):
    ds = estimate_to_dataset(make_estimate())
    ds["bad"] = ("chain", np.array(["a", "b"], dtype=dtype))
    with pytest.raises(ValueError, match="'bad' has non-numeric dtype"):
        validate_log_evidence(ds)
    with pytest.raises(ValueError, match="non-numeric"):
        dataset_to_estimate(ds)


def test_validate_lists_every_problem():
    ds = estimate_to_dataset(make_estimate()).drop_vars("log_marginal_likelihood_se")
    ds["diag_vector"] = ("chain", np.ones(2))
    ds.attrs["n_warnings"] = 5
    ds.attrs["flag"] = True
    with pytest.raises(ValueError) as info:
        validate_log_evidence(ds)
    message = str(info.value)
    assert "missing variable 'log_marginal_likelihood_se'" in message
    assert "'diag_vector' must be a scalar" in message
    assert "n_warnings=5" in message
    assert "'flag'=True is not netCDF-safe" in message
    with pytest.raises(ValueError, match="'method' must be a string"):
        validate_log_evidence(xr.Dataset({"log_marginal_likelihood": 0.0}))
    with pytest.raises(TypeError):
        validate_log_evidence({"log_marginal_likelihood": 0.0})


def test_log_evidence_reads_every_container_kind():
    est = make_estimate()
    ds = estimate_to_dataset(est)
    idata = compat.new_idata({GROUP: ds})
    assert_same_estimate(log_evidence(idata), est)
    assert_same_estimate(log_evidence(ds), est)
    assert log_evidence(est) is est
    with pytest.raises(KeyError, match="sample_evidence"):
        log_evidence(compat.new_idata({"posterior": xr.Dataset({"x": ("draw", np.ones(3))})}))
    with pytest.raises(TypeError):
        log_evidence([1.0, 2.0])


def test_container_type_matches_pymc(sampled):
    assert isinstance(sampled, xr.DataTree) == compat.IS_DATATREE
    assert isinstance(compat.new_idata({}), xr.DataTree) == compat.IS_DATATREE
    assert "posterior" in compat.group_names(sampled)
    with pytest.raises(KeyError, match="available groups"):
        compat.get_group(sampled, "no_such_group")


def test_set_group_adds_and_replaces_in_place(sampled):
    idata = sampled.copy()
    before = compat.group_names(idata)
    compat.set_group(idata, GROUP, estimate_to_dataset(make_estimate()))
    compat.set_group(idata, GROUP, estimate_to_dataset(make_estimate(log_z=-1.0)))
    assert compat.group_names(idata) == [*before, GROUP]
    assert log_evidence(idata).log_z == -1.0
    assert GROUP not in compat.group_names(sampled)
    with pytest.raises(ValueError, match="Group name"):
        compat.set_group(idata, "a/b", xr.Dataset())
    with pytest.raises(TypeError, match="xarray.Dataset"):
        compat.set_group(idata, "other", {"x": 1})


def test_netcdf_round_trip_of_sampled_results(sampled, tmp_path):
    est = make_estimate()
    group = estimate_to_dataset(
        est,
        stage_values={"beta": [np.linspace(0, 1, 5), np.linspace(0, 1, 3)]},
        attrs={"draws": 50, "adapt": False, "base": "advi", "grid": np.arange(3.0)},
    )
    idata = sampled.copy()
    compat.set_group(idata, GROUP, group)
    path = compat.to_netcdf(idata, tmp_path / "run.nc")
    back = compat.from_netcdf(path)
    assert type(back) is type(sampled)
    assert compat.group_names(back) == compat.group_names(idata)
    for name in compat.group_names(idata):
        original, loaded = compat.get_group(idata, name), compat.get_group(back, name)
        assert_numeric(loaded)
        assert set(loaded.variables) == set(original.variables)
        for var in original.data_vars:
            assert loaded[var].dtype == original[var].dtype
            np.testing.assert_array_equal(loaded[var].values, original[var].values)
    xr.testing.assert_identical(compat.get_group(back, GROUP), group)
    assert_same_estimate(log_evidence(back), est)


def test_printed_unit_comes_from_the_record_and_survives_the_file():
    """Independent runs (``n_runs`` counted in the diagnostics) print as runs, whatever the
    method's name, and the same after a round trip through the group."""
    runs = make_estimate(method="any name", diagnostics={"n_runs": 2.0}, warnings=())
    chains = make_estimate(method="smc", diagnostics={}, warnings=())
    assert "(any name, 2 runs)" in str(runs) and "(smc, 2 chains)" in str(chains)
    for est in (runs, chains):
        assert str(dataset_to_estimate(estimate_to_dataset(est))) == str(est)


def test_registry_families_drive_the_readers_of_results():
    """Every method names its family; only the annealing methods name the works they use."""
    from pymc_evidence.methods import ANNEALING, FAMILIES, REGISTRY, methods_in

    assert all(spec.family in FAMILIES for spec in REGISTRY.values())
    assert set(methods_in(*FAMILIES)) == set(REGISTRY)
    for name, spec in REGISTRY.items():
        assert bool(spec.works) == (spec.family == ANNEALING), name
        assert set(spec.works) <= {"forward", "reverse"}
    with pytest.raises(ValueError, match="unknown method families"):
        methods_in("smc")
