"""One model's independent SMC runs on an executor (``sample_evidence(executor=...)``):
the same estimate and draws as here, for the same seed, on a local Dask cluster and on a
process pool; refusals of an executor that is not one or that no method would use."""

from __future__ import annotations

import multiprocessing
import warnings
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

import pymc_evidence as pme
from pymc_evidence.testing import beta_bernoulli
from pymc_evidence.testing.glmm import count_hierarchy
from tests._accuracy import assert_log_z

#: A hierarchy whose group effects are integrated out (the worker must prepare the model
#: as the call did) at small sizes.
SETTINGS = dict(random_seed=7, progressbar=False, n_particles=120, n_runs=3)


@pytest.fixture(scope="module")
def hierarchy():
    return count_hierarchy(J=100, rows=2, kind="poisson", seed=3)


def _call(model, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pme.sample_evidence(model, **SETTINGS, **kwargs)


@pytest.fixture(scope="module")
def here(hierarchy):
    return _call(hierarchy.model)


def _assert_same(result, expected):
    a, b = pme.log_evidence(result), pme.log_evidence(expected)
    assert a.log_z == b.log_z and a.se == b.se
    np.testing.assert_array_equal(a.per_chain_log_z, b.per_chain_log_z)
    for name in ("mu", "tau", "b"):
        np.testing.assert_array_equal(result["posterior"][name], expected["posterior"][name])


def test_here_is_right(here, hierarchy):
    assert pme.log_evidence(here).per_chain_log_z.size == 3
    assert_log_z(pme.log_evidence(here), hierarchy.log_z, abs_tol=0.15, label="here")


def test_process_pool_gives_the_same_runs(here, hierarchy):
    context = multiprocessing.get_context("forkserver")
    with ProcessPoolExecutor(2, mp_context=context) as pool:
        _assert_same(_call(hierarchy.model, executor=pool), here)


def test_dask_cluster_gives_the_same_runs(here, hierarchy, dask_executor):
    _assert_same(_call(hierarchy.model, executor=dask_executor), here)


def test_refusals():
    model = beta_bernoulli().model
    with pytest.raises(TypeError, match="executor must be a concurrent.futures.Executor"):
        pme.sample_evidence(model, executor="dask", progressbar=False)
    with (
        ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("forkserver")) as pool,
        pytest.raises(ValueError, match=r"independent runs of \['smc', 'arm'\]"),
    ):
        pme.sample_evidence(model, method="bridge", executor=pool, progressbar=False)
