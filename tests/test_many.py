"""``pme.compare_models``: many models and replicas, sequentially, on a process pool and on a
Dask cluster; replica pooling (``pool_replicas``) and its calibration check.

The executor tests run three small exact models with SMC at small settings and check that
the three ways give the identical table (same seed) and that the pooled estimates match
the exact log Z. The process pool runs before the Dask cluster starts: forking a process
that already runs the Dask client's threads is what Python warns against.
"""

from __future__ import annotations

import multiprocessing
import tempfile
import warnings
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pandas as pd
import pymc as pm
import pytest

import pymc_evidence as pme
from pymc_evidence import many
from pymc_evidence.estimators.pooling import pool_replicas
from pymc_evidence.estimators.record import EvidenceEstimate
from pymc_evidence.testing import beta_bernoulli, conjugate_regression, normalized_density
from tests._accuracy import assert_log_z

#: Workers of a fresh server process: a fork of this process, which has run JAX, deadlocks.
FORKSERVER = multiprocessing.get_context("forkserver")
SEED = 20260613
SETTINGS = dict(replicas=2, random_seed=SEED, progressbar=False, n_particles=200, n_runs=2)


@pytest.fixture(scope="module")
def systems():
    return {s.name: s for s in (beta_bernoulli(), conjugate_regression(d=2), normalized_density())}


@pytest.fixture(scope="module")
def sequential(systems):
    return pme.compare_models({name: s.model for name, s in systems.items()}, **SETTINGS)


def test_sequential_table(sequential, systems):
    table = sequential.table
    assert set(table.index) == set(systems)
    assert list(table.columns[-3:]) == ["replicas", "replica_sd", "error"]
    assert (table["replicas"] == 2).all() and (table["error"] == "").all()
    assert (table["replica_sd"] > 0).all()  # the replicas have different seeds
    assert not sequential.errors
    assert np.isclose(table["post_prob"].sum(), 1.0)
    assert all(len(results) == 2 for results in sequential.results.values())


def test_pooled_estimates_match_exact_log_z(sequential, systems):
    for name, system in systems.items():
        est = sequential.estimates[name]
        assert est.per_chain_log_z.size == 2
        assert_log_z(est, system.log_z, abs_tol=0.05, label=name)


def test_process_pool_gives_the_same_table(sequential, systems):
    models = {name: s.model for name, s in systems.items()}
    with ProcessPoolExecutor(2, mp_context=FORKSERVER) as pool:
        out = pme.compare_models(models, executor=pool, **SETTINGS)
    pd.testing.assert_frame_equal(out.table, sequential.table)


def test_dask_cluster_gives_the_same_table(sequential, systems, dask_executor):
    models = {name: s.model for name, s in systems.items()}
    out = pme.compare_models(models, executor=dask_executor, **SETTINGS)
    pd.testing.assert_frame_equal(out.table, sequential.table)
    assert out.seed.entropy == SEED


def _improper():
    with pm.Model() as model:
        mu = pm.Flat("mu")
        pm.Normal("y", mu, 1, observed=[0.3, 0.1])
    return model


def _broken():
    raise RuntimeError("the data base is down")


def test_failures_are_isolated(systems):
    models = {"coin": systems["beta_bernoulli"].model, "flat": _improper(), "down": _broken}
    with pytest.warns(pme.EvidenceWarning, match=r"2 of 3 models had failed runs"):
        out = pme.compare_models(
            models,
            prior_probs=[0.5, 0.25, 0.25],
            random_seed=1,
            progressbar=False,
            n_particles=100,
            n_runs=2,
        )
    table = out.table
    assert table.index.tolist() == ["coin", "flat", "down"]
    assert table.loc["coin", "post_prob"] == 1.0 and table.loc["coin", "prior_prob"] == 1.0
    assert set(out.errors) == {"flat", "down"}
    assert "ModelHygieneError" in out.errors["flat"] and "improper" in out.errors["flat"]
    assert "RuntimeError: the data base is down" in table.loc["down", "error"]
    assert np.isnan(table.loc["down", "log_z"]) and table.loc["down", "replicas"] == 0
    assert table.loc["down", "method"] == "smc"
    # the failed models take no part: the prior is renormalised over the model that ran
    assert np.isnan(table.loc[["flat", "down"], ["prior_prob", "post_prob"]].values).all()
    assert np.nansum(table["prior_prob"]) == 1.0 == np.nansum(table["post_prob"])
    assert "renormalised over the 1 of 3 models that ran" in out.note and out.note in repr(out)
    assert out.results["down"] == [] and "down" in repr(out)
    assert "the data base is down" in out._repr_html_()
    with pytest.warns(pme.EvidenceWarning, match="1 of 1 models"):
        alone = pme.compare_models({"down": _broken}, progressbar=False)
    assert alone.table.index.tolist() == ["down"] and np.isnan(alone.table["post_prob"]).all()


def test_unpicklable_model_is_named():
    with pm.Model() as model:
        pm.Normal("x")
    with tempfile.TemporaryFile("w") as handle:
        model.log_file = handle  # an open file for writing does not pickle
        with (
            ProcessPoolExecutor(1, mp_context=FORKSERVER) as pool,
            pytest.raises(TypeError, match="'leaky'.*pickled"),
        ):
            pme.compare_models({"leaky": model}, executor=pool, progressbar=False)


@pytest.mark.parametrize(
    ("models", "kwargs", "error", "match"),
    [
        ({}, {}, ValueError, "empty"),
        ([pm.Model()], {}, TypeError, "dict"),
        ({"a": 3.0}, {}, TypeError, "'a' is a float"),
        ({"a": pm.Model()}, {"replicas": 0}, ValueError, "replicas"),
        ({"a": pm.Model()}, {"executor": "dask"}, TypeError, "executor"),
        ({"a": pm.Model()}, {"model": pm.Model()}, TypeError, "models dict"),
        ({"a": pm.Model()}, {"prior_probs": [0.5, 0.5]}, ValueError, "prior_probs"),
    ],
)
def test_bad_input(models, kwargs, error, match):
    with pytest.raises(error, match=match):
        pme.compare_models(models, progressbar=False, **kwargs)


def _fake_sample_evidence(scatter):
    """A stand-in for sample_evidence: log Z = -1 + scatter * N(0, 1) from the task's seed,
    reported se 0.01 (an EvidenceEstimate is its own log_evidence)."""

    def fake(model, method, random_seed, progressbar, **options):
        noise = np.random.default_rng(random_seed).normal()
        return EvidenceEstimate(log_z=-1.0 + scatter * noise, se=0.01, method=method)

    return fake


def test_calibration_warning_is_emitted_per_model(monkeypatch):
    monkeypatch.setattr(many, "sample_evidence", _fake_sample_evidence(0.5))
    models = {"a": pm.Model(), "b": pm.Model()}
    with pytest.warns(pme.CrossCheckWarning) as record:
        out = pme.compare_models(models, replicas=4, random_seed=3, progressbar=False)
    texts = sorted(str(w.message) for w in record)
    assert len(texts) == 2 and texts[0].startswith("model 'a': 4 replicas scatter more")
    assert texts[1].startswith("model 'b'")
    # the spread (sd 0.5 / sqrt 4), not the optimistic per-run se (0.01 / 2), sets the se
    assert (out.table["se"] > 0.1).all()
    with pytest.warns(pme.CrossCheckWarning):
        again = pme.compare_models(models, replicas=4, random_seed=out.seed, progressbar=False)
    pd.testing.assert_frame_equal(again.table, out.table)


def test_calibrated_replicas_do_not_warn(monkeypatch):
    # (honest replicas do warn 1 % of the time, by design; this seed is one of the 99 %)
    monkeypatch.setattr(many, "sample_evidence", _fake_sample_evidence(0.01))
    with warnings.catch_warnings():
        warnings.simplefilter("error", pme.EvidenceWarning)
        out = pme.compare_models({"a": pm.Model()}, replicas=3, random_seed=5, progressbar=False)
    assert out.table.loc["a", "replicas"] == 3


def _replicas(values, se):
    return [EvidenceEstimate(log_z=v, se=se, method="smc") for v in values]


def test_pool_replicas_log_mean_exp_and_se():
    values = np.array([-2.0, -2.1, -1.95])
    est = pool_replicas(_replicas(values, 0.05))
    assert np.isclose(est.log_z, np.log(np.mean(np.exp(values))))
    w = np.exp(values - est.log_z)
    spread = np.std(w, ddof=1) / np.sqrt(3)
    assert np.isclose(est.se, max(spread, 0.05 * np.sqrt(np.sum(w**2)) / 3))
    assert np.isclose(est.diagnostics["replica_spread_se"], spread)
    assert est.method == "smc" and not est.warnings
    one = pool_replicas(_replicas([-2.0], 0.05))
    assert (one.log_z, one.se) == (-2.0, 0.05)
    close = pool_replicas(_replicas([-2.0, -2.0001], 0.05))  # agreement by chance
    assert np.isclose(close.se, 0.05 / np.sqrt(2), rtol=1e-3)  # the per-run se is the floor


def test_pool_replicas_calibration_check():
    rng = np.random.default_rng(0)
    honest = 0.1 * rng.normal(size=20)  # scatter as the reported se says
    assert not pool_replicas(_replicas(honest, 0.1)).warnings
    optimistic = pool_replicas(_replicas(honest, 0.02))  # reported se 5x too small
    (message,) = optimistic.warnings
    assert message.category is pme.CrossCheckWarning and "optimistic" in message
    assert optimistic.diagnostics["replica_p_high"] < 1e-10
    assert optimistic.se > 0.1 / np.sqrt(20) * 0.7  # the spread sets the se
    pessimistic = pool_replicas(_replicas(honest, 1.0))  # no warning, only a diagnostic
    assert not pessimistic.warnings and pessimistic.diagnostics["replica_p_low"] < 1e-6
    with pytest.raises(ValueError, match="finite"):
        pool_replicas(_replicas([-1.0, np.inf], 0.1))
    with pytest.raises(ValueError, match="no replicas"):
        pool_replicas([])


def test_forking_pool_after_jax_is_refused_with_the_fix(systems):
    import jax.numpy as jnp

    float(jnp.ones(1)[0])  # this process has run JAX
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:
        with pytest.raises(RuntimeError, match="forkserver"):
            model = next(iter(systems.values())).model
            pme.compare_models({"m": model}, executor=pool, progressbar=False)
