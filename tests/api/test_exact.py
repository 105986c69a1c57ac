"""Models whose evidence needs no sampling (api/exact.py): truths by scipy."""

import warnings

import numpy as np
import pymc as pm
import pytest
from scipy import stats

import pymc_evidence as pme
from pymc_evidence import ModelWarning

Y = np.array([0.1, 1.0, -0.4])


def test_only_observed_variables_give_the_log_likelihood():
    with pm.Model() as model:
        pm.Normal("y", 0.5, 2.0, observed=Y)
    est = pme.log_evidence(pme.sample_evidence(model, method="ct", progressbar=False))
    assert est.method == "exact" and est.se == 0.0
    assert est.log_z == pytest.approx(stats.norm(0.5, 2.0).logpdf(Y).sum(), abs=1e-7)


def test_only_discrete_latents_are_summed_exactly():
    with pm.Model() as model:
        z = pm.Bernoulli("z", 0.3)
        pm.Normal("y", 2.0 * z, 1.0, observed=Y)
    truth = np.log(
        0.7 * np.exp(stats.norm(0, 1).logpdf(Y).sum())
        + 0.3 * np.exp(stats.norm(2, 1).logpdf(Y).sum())
    )
    est = pme.log_evidence(pme.sample_evidence(model, progressbar=False))
    assert est.method == "exact" and est.log_z == pytest.approx(truth, abs=1e-7)


def test_no_observed_variables_is_zero_with_a_warning():
    with pm.Model() as model:
        pm.Normal("x", 0.0, 1.0)
    with pytest.warns(ModelWarning, match="no observed variables"):
        est = pme.log_evidence(pme.sample_evidence(model, progressbar=False))
    assert (est.log_z, est.se, est.method) == (0.0, 0.0, "exact")


def test_empty_model_is_a_clear_error():
    with warnings.catch_warnings(), pm.Model() as model:
        pass
    with pytest.raises(ValueError, match="empty"):
        pme.sample_evidence(model, progressbar=False)
