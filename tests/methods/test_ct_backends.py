"""The extended CT model is a plain PyMC model: other NUTS backends sample it too.

These run only where the backend is installed (it is not a dependency).
"""

import pytest

import pymc_evidence as pme
from pymc_evidence.testing import models as tm
from tests._accuracy import assert_log_z


@pytest.mark.parametrize("backend", ["nutpie", "numpyro"])
def test_joint_ct_with_other_nuts_backend(backend):
    pytest.importorskip(backend)
    case = tm.beta_bernoulli()
    idata = pme.sample_evidence(
        case.model,
        method="ct",
        nuts_sampler=backend,
        draws=500,
        tune=500,
        chains=2,
        adapt_rounds=1,
        random_seed=5,
        progressbar=False,
    )
    est = pme.log_evidence(idata)
    assert_log_z(est, case.log_z, abs_tol=0.1, label=backend)


def test_gibbs_form_refuses_other_backends():
    case = tm.beta_bernoulli()
    with pytest.raises(ValueError, match="PyMC's own sampler"):
        pme.sample_evidence(case.model, method="gibbs_ct", nuts_sampler="nutpie")
