"""Every non-tempering method at its defaults on the exact-log-Z model set.

|log_z - truth| <= 4 se AND <= 0.1, se <= 0.1, with a fixed seed (``_accuracy.py``); the
tempering methods have the same check in ``test_ct_accuracy.py`` and ``test_st.py`` beside it.
(``arm`` is ``smc`` on the default adaptive schedule; its own tests use a fixed schedule.)
"""

import pytest

from tests._accuracy import FAST_CASES, assert_below, check_method, fast_case

METHODS = ["ais", "bar", "lis", "smc", "bridge"]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("name", FAST_CASES)
def test_exact_log_z_at_defaults(name, method):
    est = check_method(fast_case(name), method)
    if method in ("bar", "lis"):  # one-direction estimates bracket the truth (Jensen)
        d = est.diagnostics
        lower = d.get("log_z_ais", d.get("log_z_forward"))
        upper = d.get("log_z_rais", d.get("log_z_reverse"))
        assert_below(lower, upper, est.se, slack=0.05, label="forward below reverse")
