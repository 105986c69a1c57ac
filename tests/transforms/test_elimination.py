"""Discrete variables summed out one at a time (transforms/elimination.py).

A hidden Markov chain written as users write it in PyMC, one ``pm.Categorical`` per time
step whose probabilities are the transition matrix's row of the step before: 2**25 joint
values, too many to enumerate, summed by variable elimination. The truths are computed
here with numpy alone: the forward algorithm for the likelihood given the noise scale, a
grid over that scale for the evidence, forward-backward for the states' marginals.
"""

import numpy as np
import pymc as pm
import pytest
from scipy import integrate, stats
from scipy.special import logsumexp

import pymc_evidence as pme
from pymc_evidence.compat import get_group
from pymc_evidence.hygiene import ModelHygieneError
from pymc_evidence.transforms.elimination import Eliminated
from pymc_evidence.transforms.marginal import sum_out_discrete
from tests._accuracy import assert_log_z

T = 25
MEANS = np.array([-1.0, 1.5])
TRANSITION = np.array([[0.9, 0.1], [0.2, 0.8]])
START = np.array([0.5, 0.5])


def _data():
    rng = np.random.default_rng(5)
    states = [0]
    for _ in range(1, T):
        states.append(rng.choice(2, p=TRANSITION[states[-1]]))
    states = np.array(states)
    return states, rng.normal(MEANS[states], 0.8)


STATES, Y = _data()


def hidden_markov_chain():
    """States with known means and transitions; the noise scale ``sigma`` is unknown."""
    with pm.Model() as model:
        sigma = pm.HalfNormal("sigma", 2.0)
        means = pm.math.constant(MEANS)
        prev = pm.Categorical("z_0", p=START)
        pm.Normal("y_0", means[prev], sigma, observed=Y[0])
        for t in range(1, T):
            z = pm.Categorical(f"z_{t}", p=pm.math.constant(TRANSITION)[prev])
            pm.Normal(f"y_{t}", means[z], sigma, observed=Y[t])
            prev = z
    return model


def _emissions(sigma):
    """``log p(y_t | z_t = k, sigma)``, shape (..., T, 2)."""
    sigma = np.asarray(sigma, dtype=float)[..., None, None]
    return stats.norm.logpdf(Y[:, None], MEANS, sigma)


def _forward_backward(sigma):
    """``log p(y | sigma)`` and ``p(z_t = 1 | y, sigma)`` by the forward-backward algorithm."""
    e = _emissions(sigma)
    log_a = np.log(TRANSITION)
    fwd = [np.log(START) + e[..., 0, :]]
    for t in range(1, T):
        fwd.append(logsumexp(fwd[-1][..., :, None] + log_a, axis=-2) + e[..., t, :])
    bwd = [np.zeros_like(fwd[0])]
    for t in range(T - 1, 0, -1):
        bwd.insert(0, logsumexp(log_a + (e[..., t, :] + bwd[0])[..., None, :], axis=-1))
    log_lik = logsumexp(fwd[-1], axis=-1)
    pairs = zip(fwd, bwd, strict=True)
    return log_lik, np.stack([np.exp(f + b - log_lik[..., None])[..., 1] for f, b in pairs], -1)


def _truth():
    """``log Z`` and the states' posterior marginals, by a grid over sigma."""
    grid = np.linspace(1e-3, 8.0, 16001)
    log_lik, marg = _forward_backward(grid)
    log_f = log_lik + stats.halfnorm(scale=2.0).logpdf(grid)
    w = np.exp(log_f - log_f.max())
    z = integrate.simpson(w, x=grid)
    marginals = integrate.simpson(w[:, None] * marg, x=grid, axis=0) / z
    return float(log_f.max() + np.log(z)), marginals


def test_the_chain_is_summed_by_elimination_exactly():
    """The continuous copy's density is the forward algorithm's likelihood times the prior,
    at any sigma; no elimination step holds more than two neighbours."""
    summed = sum_out_discrete(hidden_markov_chain())
    assert isinstance(summed, Eliminated) and len(summed.names) == T
    assert max(len(step.scope) for step in summed.steps) == 2
    logp = summed.model.compile_logp(mode="JAX")
    for sigma in (0.5, 0.8, 2.3):
        value = logp({"sigma_log__": np.log(sigma)})
        exact = _forward_backward(sigma)[0] + stats.halfnorm(scale=2.0).logpdf(sigma)
        assert value == pytest.approx(exact + np.log(sigma), abs=1e-6)


@pytest.mark.heavy
def test_smc_on_a_hidden_markov_chain():
    """Seed 1: the evidence within the bounds, and the states' draws follow their exact
    posterior marginals (4000 draws: an se of at most 0.008 each)."""
    truth, marginals = _truth()
    idata = pme.sample_evidence(hidden_markov_chain(), random_seed=1, progressbar=False)
    assert_log_z(pme.log_evidence(idata), truth, abs_tol=0.1, label="hidden Markov chain")
    post = get_group(idata, "posterior")
    drawn = np.array([float(post[f"z_{t}"].mean()) for t in range(T)])
    assert post["z_0"].dtype.kind == "i"
    assert np.max(np.abs(drawn - marginals)) < 0.05
    assert np.all((marginals > 0.5) == (STATES == 1))  # the data identify the states


def test_a_term_over_too_many_variables_is_refused():
    """Thirteen indicators in one likelihood term: a table of 2**13 values, whatever the
    order, so the model is refused with the variables named."""
    with pm.Model() as model:
        flags = [pm.Bernoulli(f"b_{i}", 0.5) for i in range(13)]
        pm.Normal("y", pm.math.sum(pm.math.stack(flags)), 1.0, observed=3.0)
    with pytest.raises(ModelHygieneError, match="'b_0'.*joint values"):
        sum_out_discrete(model)
