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
