"""Shared test helpers.

The accuracy rule lives in ``_accuracy.py`` (importable as ``from _accuracy import
assert_log_z``, since pytest puts ``tests/`` on ``sys.path``); the fixture below hands the
same function to tests that prefer fixtures.
"""

import pytest
from _accuracy import assert_log_z as _assert_log_z


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
