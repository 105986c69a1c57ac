"""Discrete latent variables of finite support are summed out (transforms/marginal.py).

Truths are computed here by hand: the change point's rates integrate in closed form
(Gamma-Poisson) for each switchpoint; the indicators' mean integrates in closed form
(Gaussian) for each of their joint values.
"""

import numpy as np
import pymc as pm
import pytest
from scipy import stats
from scipy.special import gammaln, logsumexp

import pymc_evidence as pme
from pymc_evidence.compat import get_group
from pymc_evidence.hygiene import ModelHygieneError
from pymc_evidence.transforms.marginal import MAX_JOINT_VALUES, finite_support, sum_out_discrete
from tests._accuracy import assert_estimate, assert_log_z

N_T = 30
_RNG = np.random.default_rng(0)
COUNTS = np.r_[_RNG.poisson(3.0, 17), _RNG.poisson(1.0, N_T - 17)]


def change_point(counts=COUNTS):
    """Poisson counts whose rate switches from ``early`` to ``late`` after ``s``."""
    n_t = len(counts)
    with pm.Model(coords={"t": np.arange(n_t)}) as model:
        s = pm.DiscreteUniform("s", 0, n_t - 1)
        early = pm.Exponential("early", 1.0)
        late = pm.Exponential("late", 1.0)
        rate = pm.math.switch(s >= np.arange(n_t), early, late)
        pm.Deterministic("rate", rate, dims="t")
        pm.Poisson("y", rate, observed=counts, dims="t")
    return model


def _gamma_poisson(c):
    """``log ∫ Π Poisson(c | λ) Exp(λ | 1) dλ``."""
    return gammaln(c.sum() + 1) - gammaln(c + 1).sum() - (c.sum() + 1) * np.log(len(c) + 1)


def change_point_terms(counts=COUNTS):
    """``log p(y, s = k)`` for every k (the truth is their log-sum-exp)."""
    n_t = len(counts)
    terms = [_gamma_poisson(counts[: k + 1]) + _gamma_poisson(counts[k + 1 :]) for k in range(n_t)]
    return np.array(terms) - np.log(n_t)


Y3 = np.array([0.2, 2.1, 1.7])


def indicators():
    """``z_i ~ Bernoulli(0.4)`` choose whether ``y_i`` is centred on ``mu`` or on 0."""
    with pm.Model() as model:
        z = pm.Bernoulli("z", 0.4, shape=3)
        mu = pm.Normal("mu", 0.0, 2.0)
        pm.Normal("y", z * mu, 1.0, observed=Y3)
    return model


def indicators_log_z():
    """Sum over the 8 values of z of ``p(z) N(y; 0, I + 4 z z^T)``."""
    out = []
    for bits in np.ndindex(2, 2, 2):
        z = np.array(bits, dtype=float)
        prior = np.sum(np.where(z == 1, np.log(0.4), np.log(0.6)))
        cov = np.eye(3) + 4.0 * np.outer(z, z)
        out.append(prior + stats.multivariate_normal(np.zeros(3), cov).logpdf(Y3))
    return float(logsumexp(out))


def test_change_point_default_is_exact_and_draws_the_switchpoint():
    terms = change_point_terms()
    idata = pme.sample_evidence(change_point(), random_seed=1, progressbar=False)
    assert_log_z(pme.log_evidence(idata), logsumexp(terms), abs_tol=0.1, label="change point")
    post = get_group(idata, "posterior")
    s = post["s"].values
    assert s.dtype.kind == "i" and s.shape[:2] == post["early"].shape[:2]
    exact = np.exp(terms - logsumexp(terms))
    mean = np.sum(exact * np.arange(N_T))
    sd = np.sqrt(np.sum(exact * (np.arange(N_T) - mean) ** 2))
    # 4000 draws, but autocorrelated through the continuous draws they condition on: the se
    # of 200 independent ones
    assert_estimate(s.mean(), mean, sd / np.sqrt(200) + 0.0125, abs_tol=0.5, label="switch mean")
    t = np.arange(N_T)  # the deterministic was computed again with the drawn switchpoint
    early, late = post["early"].values[..., None], post["late"].values[..., None]
    expected = np.where(s[..., None] >= t, early, late)
    np.testing.assert_allclose(post["rate"].values, expected)


@pytest.mark.heavy
def test_change_point_arm_starts_from_a_base_wide_enough():
    """The data barely show the switch: the posterior of the two log rates is a cross whose
    arms have a rate's exponential prior tail. The full-rank fit covers the middle (ESS 5 %
    of the draws), and ``arm`` from it was -0.115 +- 0.024 (4.8 se) at this seed; from the
    widened base (the default of ``fit_base``) it is -0.030 +- 0.019."""
    idata = pme.sample_evidence(change_point(), method="arm", random_seed=1, progressbar=False)
    assert_log_z(pme.log_evidence(idata), logsumexp(change_point_terms()), abs_tol=0.08)


@pytest.mark.parametrize("method", ["bridge", "ais"])
def test_vector_of_indicators_summed_out(method):
    idata = pme.sample_evidence(indicators(), method=method, random_seed=2, progressbar=False)
    assert_log_z(pme.log_evidence(idata), indicators_log_z(), abs_tol=0.1, label=method)
    z = get_group(idata, "posterior")["z"].values
    assert z.shape[2:] == (3,) and set(np.unique(z)) <= {0, 1}


def _sum_by_hand(mean_of_z, mu):
    """``log Σ_z p(z) N(Y3; mean_of_z(z, mu), I) + log N(mu; 0, 2)`` over z's 8 values."""
    by_hand = []
    for bits in np.ndindex(2, 2, 2):
        z = np.array(bits)
        prior = np.sum(np.where(z == 1, np.log(0.4), np.log(0.6)))
        by_hand.append(prior + stats.norm(mean_of_z(z, mu), 1.0).logpdf(Y3).sum())
    return logsumexp(by_hand) + stats.norm(0, 2).logpdf(mu)


def test_summed_model_density_is_the_sum():
    """The continuous copy's joint density at a point equals the sum over z by hand: summed
    element by element where each z_i enters y_i alone (even with only 8 joint values: it
    is the cheaper sum), over the joint values where they enter every y_i together."""
    summed = sum_out_discrete(indicators())
    assert summed.names == ("z",) and summed.elementwise and list(summed.values["z"]) == [0, 1]
    logp = summed.model.compile_logp()({"mu": 0.7})
    assert logp == pytest.approx(_sum_by_hand(lambda z, mu: z * mu, 0.7), abs=1e-7)

    with pm.Model() as together:
        z = pm.Bernoulli("z", 0.4, shape=3)
        mu = pm.Normal("mu", 0.0, 2.0)
        pm.Normal("y", z.sum() * mu, 1.0, observed=Y3)
    summed = sum_out_discrete(together)
    assert not summed.elementwise and summed.values["z"].shape == (8, 3)
    logp = summed.model.compile_logp()({"mu": 0.7})
    assert logp == pytest.approx(_sum_by_hand(lambda z, mu: z.sum() * mu, 0.7), abs=1e-7)


def test_supports_and_refusals():
    with pm.Model() as model:
        p = pm.Dirichlet("p", np.ones(4))
        c = pm.Categorical("c", p)
        b = pm.Binomial("b", 5, 0.3)
        k = pm.Poisson("k", 2.0)
    assert list(finite_support(c, model)) == [0, 1, 2, 3]
    assert list(finite_support(b, model)) == list(range(6))
    with pytest.raises(ModelHygieneError, match="'k'.*unbounded"):
        finite_support(k, model)
    with pm.Model() as too_many:  # two variables: 2**14 joint values, none summed alone
        a = pm.Bernoulli("a", 0.5, shape=7)
        b = pm.Bernoulli("b", 0.5, shape=7)
        pm.Normal("y", a - b, 1.0, observed=np.zeros(7))
    assert 2**14 > MAX_JOINT_VALUES
    with pytest.raises(ModelHygieneError, match="'a', 'b'.*joint values"):
        pme.sample_evidence(too_many, progressbar=False)
    with pm.Model() as alone:  # 2**13 values but no dependents: summed element by element
        pm.Bernoulli("many", 0.5, shape=13)
        pm.Normal("x", 0.0, 1.0)
        pm.Normal("y", 0.0, 1.0, observed=0.0)
    assert sum_out_discrete(alone).elementwise


Y30 = np.where(_RNG.uniform(size=30) < 0.3, _RNG.normal(3.0, 1.0, 30), _RNG.normal(0.0, 1.0, 30))


def test_an_indicator_per_observation_is_summed_element_by_element():
    """2**30 joint values, summed one element at a time; truth by 1-D quadrature over mu."""
    with pm.Model() as model:
        z = pm.Bernoulli("z", 0.3, shape=30)
        mu = pm.Normal("mu", 0.0, 3.0)
        pm.Normal("y", pm.math.switch(z, mu, 0.0), 1.0, observed=Y30)

    grid = np.linspace(-15, 15, 30001)
    mix = 0.7 * stats.norm(0, 1).pdf(Y30) + 0.3 * stats.norm(grid[:, None], 1).pdf(Y30)
    lf = np.log(mix).sum(axis=1) + stats.norm(0, 3).logpdf(grid)
    truth = lf.max() + np.log(np.trapezoid(np.exp(lf - lf.max()), grid))
    assert sum_out_discrete(model).elementwise
    idata = pme.sample_evidence(model, random_seed=3, progressbar=False)
    assert_log_z(pme.log_evidence(idata), truth, abs_tol=0.05, label="indicators per row")
    z_draws = get_group(idata, "posterior")["z"].values
    assert z_draws.shape[2:] == (30,)
    assert z_draws[..., np.argmax(Y30)].mean() > 0.9  # the largest y is from the mu component


def test_indicators_that_reach_other_rows_are_refused():
    """``y[i]`` depends on ``z[i - 1]``: not separable by element, and 2**30 joint values."""
    with pm.Model() as model:
        z = pm.Bernoulli("z", 0.3, shape=30)
        mu = pm.Normal("mu", 0.0, 3.0)
        shifted = pm.math.concatenate([z[-1:], z[:-1]])
        pm.Normal("y", pm.math.switch(shifted, mu, 0.0), 1.0, observed=Y30)
    with pytest.raises(ModelHygieneError, match="'z'.*joint values"):
        sum_out_discrete(model)


@pytest.mark.parametrize("stepper", [pytest.param("st", marks=pytest.mark.heavy), "gibbs_ct"])
def test_tempering_steps_on_a_model_with_a_discrete_variable(stepper):
    """The step tempers the continuous model with the switchpoint summed out; PyMC's own
    Metropolis draws the switchpoint, and the trace reads as on a continuous model. A
    12-count series, 4 x 1000 draws as ``sample_evidence`` runs them (with 2 x 500 gibbs_ct
    was -0.099 +- 0.021, its se too small for so short a run; on the 30-count series
    ``sample_evidence`` gives gibbs_ct -0.09 +- 0.05, st -0.09 +- 0.06)."""
    import warnings

    counts = COUNTS[11:23]
    model = change_point(counts)
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore", pme.EvidenceWarning)
        if stepper == "st":
            step = pme.SimulatedTempering(n_levels=16, random_seed=1)
        else:
            step = pme.GibbsContinuousTempering(base="advi", random_seed=1)
        assert {v.name for v in step.vars} == {"early_log__", "late_log__"}
        raw = pm.sample(1000, tune=1000, step=step, chains=4, cores=1, random_seed=1,
                        progressbar=False, compute_convergence_checks=False)  # fmt: skip
        idata = pme.st_evidence(raw, step) if stepper == "st" else pme.ct_evidence(raw)
    assert_log_z(pme.log_evidence(idata), logsumexp(change_point_terms(counts)), abs_tol=0.15)
    s = get_group(idata, "posterior")["s"].values
    assert s.dtype.kind == "i" and 0 <= s.min() and s.max() < len(counts)


def test_categorical_indicators_index_the_component_means():
    """``mu[z]`` with ``z ~ Categorical`` per row: two label-switched means, summed element
    by element; truth by a 2-D grid over the means (seed 1: +0.031 +- 0.017)."""
    rng = np.random.default_rng(11)
    y = np.where(rng.uniform(size=25) < 0.4, rng.normal(-2, 1, 25), rng.normal(2, 1, 25))
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 3, shape=2)
        z = pm.Categorical("z", p=np.array([0.4, 0.6]), shape=25)
        pm.Normal("y", mu[z], 1.0, observed=y)
    grid = np.linspace(-12, 12, 1201)
    a, b = grid[:, None, None], grid[None, :, None]
    lik = 0.4 * stats.norm.pdf(y, a, 1) + 0.6 * stats.norm.pdf(y, b, 1)
    log_f = (
        np.log(lik).sum(-1)
        + stats.norm.logpdf(a[..., 0], 0, 3)
        + stats.norm.logpdf(b[..., 0], 0, 3)
    )
    truth = logsumexp(log_f) + 2 * np.log(grid[1] - grid[0])
    assert sum_out_discrete(model).elementwise
    idata = pme.sample_evidence(model, random_seed=1, progressbar=False)
    assert_log_z(pme.log_evidence(idata), truth, abs_tol=0.1, label="categorical indicators")


def test_a_binomial_count_with_a_fixed_number_of_trials_is_summed():
    """An N-mixture: the latent population ``N ~ Binomial(15, 0.5)`` seen five times with a
    detection probability ``p ~ Beta(2, 2)``; truth by the sum over N of a 1-D integral."""
    y = np.array([3, 5, 4, 2, 6])
    with pm.Model() as model:
        p = pm.Beta("p", 2, 2)
        n = pm.Binomial("N", 15, 0.5)
        pm.Binomial("y", n, p, observed=y)
    grid = np.linspace(1e-6, 1 - 1e-6, 20001)
    terms = [
        stats.binom.logpmf(k, 15, 0.5)
        + logsumexp(stats.binom.logpmf(y[:, None], k, grid).sum(0) + stats.beta.logpdf(grid, 2, 2))
        for k in range(16)
    ]
    truth = logsumexp(terms) + np.log(grid[1] - grid[0])
    idata = pme.sample_evidence(model, random_seed=1, progressbar=False)
    assert_log_z(pme.log_evidence(idata), truth, abs_tol=0.05, label="N-mixture")
    assert set(np.unique(get_group(idata, "posterior")["N"].values)) <= set(range(6, 16))


# A latent class per subject, several binary answers each: the answers' terms are
# (subjects, items), the class (subjects,); summed class by class for each subject.
_LC = np.random.default_rng(3)
LC_CLASS = _LC.integers(0, 2, 8)
LC_Y = _LC.uniform(size=(8, 3)) < np.array([[0.85, 0.8, 0.2], [0.15, 0.3, 0.9]])[LC_CLASS]


def latent_class():
    with pm.Model() as model:
        w = pm.Dirichlet("w", np.ones(2))
        theta = pm.Beta("theta", 1.0, 1.0, shape=(2, 3))
        z = pm.Categorical("z", p=w, shape=8)
        pm.Bernoulli("y", p=theta[z], observed=LC_Y.astype(int))
    return model


def latent_class_log_z():
    """Every one of the 2**8 allocations: Dirichlet-multinomial for the classes' counts,
    Beta-Bernoulli for each class's answers to each item."""
    from scipy.special import betaln

    out = []
    for bits in np.ndindex(*(2,) * 8):
        z = np.array(bits)
        counts = np.bincount(z, minlength=2)
        term = gammaln(2) - gammaln(2 + 8) + gammaln(1 + counts).sum()
        for k in (0, 1):
            yes = LC_Y[z == k].sum(axis=0)
            term += (betaln(1 + yes, 1 + counts[k] - yes) - betaln(1, 1)).sum()
        out.append(term)
    return float(logsumexp(out))


@pytest.mark.heavy
def test_latent_class_with_rows_of_answers_is_summed_by_subject():
    model = latent_class()
    summed = sum_out_discrete(model)
    assert summed.elementwise and list(summed.values["z"]) == [0, 1]
    idata = pme.sample_evidence(model, random_seed=1, progressbar=False)
    assert_log_z(pme.log_evidence(idata), latent_class_log_z(), abs_tol=0.15, label="classes")
    z = get_group(idata, "posterior")["z"].values
    assert z.shape[2:] == (8,) and set(np.unique(z)) <= {0, 1}


def test_answers_depending_on_another_subjects_class_are_not_summed_by_subject():
    """``y[i]`` depends on ``z[(i + 1) % 8]`` through a roll: not separable by subject,
    and 256 joint values are summed together instead (the cyclic check catches it)."""
    with pm.Model() as model:
        theta = pm.Beta("theta", 1.0, 1.0, shape=(2, 3))
        z = pm.Bernoulli("z", 0.5, shape=8)
        pm.Bernoulli("y", p=theta[pm.math.concatenate([z[1:], z[:1]])], observed=LC_Y)
    summed = sum_out_discrete(model)
    assert not summed.elementwise and summed.values["z"].shape == (256, 8)
