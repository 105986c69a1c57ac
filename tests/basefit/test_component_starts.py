"""Mixture likelihoods: each component's own mode as a start of the mode search.

The off-centre phase transition (:func:`pymc_evidence.testing.phase_transition`: a spike
holding 90 % of Z, 20 nats down the broad bump's flank, its basin ~1e-13 of the prior box)
was missed by every method, -2.30 nats with a small se. Its truth is the closed form of
the testing module, checked there against quadrature (``test_hard_models``).
"""

import warnings

import numpy as np
import pymc as pm
import pytest

import pymc_evidence as pme
from pymc_evidence.basefit.component_starts import component_starts, mixture_sizes
from pymc_evidence.runtime import model_space
from pymc_evidence.testing import phase_transition
from tests._accuracy import assert_log_z


@pytest.fixture(scope="module")
def off_centre():
    return phase_transition()


def _constrained(x, h):
    """The interval transform's inverse on ``(-h, h)``: ``x = h tanh(z / 2)``."""
    return h * np.tanh(np.asarray(x) / 2.0)


def test_component_modes_are_the_bump_and_the_spike(off_centre):
    space = model_space(off_centre.model)
    assert mixture_sizes(off_centre.model) == {"y": 2}
    points = _constrained(component_starts(space, space.initial_x()), 1.0)
    assert points.shape == (2, 10)
    # the bump's centre and the spike's (0.2 in every coordinate); the interval transform's
    # Jacobian moves each mode by about its variance (1e-2 and 1e-4)
    assert np.allclose(points[0], 0.0, atol=0.02)
    assert np.allclose(points[1], off_centre.data["offset"], atol=1e-3)


def test_normal_mixture_one_start_per_component():
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 5.0, shape=3)
        pm.NormalMixture("y", w=np.ones(3) / 3, mu=mu, sigma=1.0, observed=[-4.0, 0.1, 5.0])
    space = model_space(model)
    points = component_starts(space, space.initial_x())
    # component k alone: every point from it, so mu_k climbs to the data's mean under its
    # N(0, 5) prior (precision-weighted: 3 / (3 + 1/25) of it), the others stay at 0
    expected = np.mean([-4.0, 0.1, 5.0]) * 3.0 / (3.0 + 1.0 / 25.0)
    assert np.allclose(points, expected * np.eye(3), atol=1e-4)


def test_no_mixture_no_starts():
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0, shape=2)
        pm.Normal("y", mu.sum(), 1.0, observed=[0.3])
    space = model_space(model)
    assert component_starts(space, space.initial_x()).shape == (0, 2)


@pytest.mark.parametrize("method", ["smc", "bridge"])
def test_off_centre_spike_is_found(off_centre, method):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # bridge warns that its chains missed the spike
        out = pme.sample_evidence(off_centre.model, method=method, random_seed=1,
                                  progressbar=False)  # fmt: skip
    assert_log_z(pme.log_evidence(out), off_centre.log_z, abs_tol=0.05, se_max=0.05,
                 label=f"off-centre phase transition, {method}")  # fmt: skip
