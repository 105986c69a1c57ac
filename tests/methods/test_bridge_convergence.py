"""Issue 25, point 8a: R-hat/ESS warnings of NUTS draws only where the estimate uses them.

Bridge sampling bridge-samples each cluster of chains (chains that stayed in one mode) on
its own and sums the clusters' masses, so chains sitting in different modes, which make
R-hat across all chains large, do not move the estimate: the check runs within each
cluster. A cluster whose own chains disagree still warns.
"""

import warnings

import numpy as np
import xarray as xr

import pymc_evidence as pme
from pymc_evidence.compat import new_idata
from pymc_evidence.methods.bridge import _convergence_messages
from pymc_evidence.results.diagnostics import nuts_messages
from pymc_evidence.testing import bimodal_1d
from tests._accuracy import assert_log_z


def _posterior(shifts, seed=0, n=400):
    """Results whose posterior has one variable, chains of iid N(shift, 0.25) draws."""
    rng = np.random.default_rng(seed)
    draws = np.array(shifts, float)[:, None] + 0.25 * rng.normal(size=(len(shifts), n))
    return new_idata({"posterior": xr.Dataset({"theta": (("chain", "draw"), draws)})})


def test_chains_in_different_modes_are_judged_within_their_cluster():
    post = _posterior([2.0, 2.0, -2.0, -2.0])
    assert len(nuts_messages(post, what="all chains")) == 2  # R-hat and ESS across modes
    clusters = [np.array([0, 1]), np.array([2, 3])]
    assert _convergence_messages(post, clusters) == []


def test_a_cluster_whose_chains_disagree_still_warns():
    post = _posterior([2.0, 2.3, -2.0, -2.0])
    messages = _convergence_messages(post, [np.array([0, 1]), np.array([2, 3])])
    assert any("R-hat" in m and "chains 0, 1" in m for m in messages)
    assert all(m.category is pme.ConvergenceWarning for m in messages)


def test_a_right_bridge_estimate_on_a_bimodal_posterior_is_quiet():
    """The issue's case (the bridge half of ``["smc", "bridge"]``): two mirror modes, the
    NUTS chains in both; before, R-hat ~1.5 and total ESS ~7 across them warned twice."""
    case = bimodal_1d()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        idata = pme.sample_evidence(
            case.model,
            method="bridge",
            chains=4,
            random_seed=1,
            progressbar=False,
        )
    est = pme.log_evidence(idata)
    assert est.diagnostics["n_clusters"] == 2  # the chains did sit in both modes
    assert_log_z(est, case.log_z, abs_tol=0.05, label="bridge, bimodal")
    noisy = [
        str(w.message) for w in caught if "R-hat" in str(w.message) or "bulk ESS" in str(w.message)
    ]
    assert noisy == []
