"""Shared test helpers.

The accuracy rule lives in ``_accuracy.py`` (importable as ``from tests._accuracy import
assert_log_z`` from every folder: ``tests`` is a package); the fixture below hands the
same function to tests that prefer fixtures. ``dask_executor`` is a local Dask cluster's
executor, one per test module. The notebook runs are collected first (see
:func:`pytest_collection_modifyitems`).
"""

import logging

import pytest

from tests._accuracy import assert_log_z as _assert_log_z


def pytest_collection_modifyitems(config, items):
    """The notebook runs first, otherwise in collection order: each takes minutes, and
    collected last (``test_notebooks.py`` sorts late) they left one worker of
    ``pytest -n 2`` running them alone at the end."""
    items.sort(key=lambda item: item.get_closest_marker("notebooks") is None)


@pytest.fixture
def assert_log_z():
    """The project's accuracy rule: finite, |error| <= 4 se AND |error| <= abs_tol."""
    return _assert_log_z


@pytest.fixture(scope="module")
def radon():
    """The radon data as arrays: county index ``idx``, floor ``x``, log radon ``y``, and the
    number of counties ``k`` (shared by the exact-radon tests)."""
    from pymc_evidence.datasets import county_coding, load_radon

    data = load_radon()
    idx, counties = county_coding(data)
    x, y = data["floor"].to_numpy(float), data["log_radon"].to_numpy(float)
    return {"idx": idx, "x": x, "y": y, "k": len(counties)}


@pytest.fixture(scope="module")
def tiny():
    """A one-parameter normal model (``mu ~ N(0, 1)``, two observations), its standard
    normal base and batched density: ``(model, base, density)``, for engine tests."""
    import numpy as np
    import pymc as pm

    from pymc_evidence.base import GaussianBase
    from pymc_evidence.engines import batched_log_densities

    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu, 1.0, observed=np.array([0.5, -0.2]))
    base = GaussianBase(np.zeros(1), np.eye(1), log_zeta=0.0, kind="moments")
    return model, base, batched_log_densities(model, base)


@pytest.fixture(scope="module")
def dask_executor():
    """A local Dask cluster's executor (two worker processes, one thread each), for the
    tests of ``executor=``; skipped without ``dask.distributed``."""
    distributed = pytest.importorskip("dask.distributed")
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client.get_executor()
