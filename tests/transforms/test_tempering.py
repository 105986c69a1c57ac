"""The continuous-tempering model transform (:mod:`pymc_evidence.transforms.tempering`).

The extended density is checked point by point against an independent computation (scipy
densities, Jacobians written by hand). The samplers of that density (the Gibbs-CT step and a
user's NUTS run of the joint form) are tested in ``tests/steps/test_gibbs_ct.py``.
"""

import numpy as np
import pymc as pm
import pytest
from scipy import special, stats

import pymc_evidence as pme
from pymc_evidence import GaussianBase, PriorBase
from pymc_evidence.runtime import model_space
from pymc_evidence.transforms import ct_spec, set_base

Y = np.array([0.7, -0.2, 1.3, 0.4])
MU0, MU_SD, S_SD = 0.5, 1.5, 1.2
CT_NAMES = ("ct_beta", "ct_delta", "ct_log_zeta")


def two_var_model():
    """mu ~ N(0.5, 1.5), s ~ HalfNormal(1.2) (log-transformed), y ~ N(mu, s)."""
    with pm.Model() as model:
        mu = pm.Normal("mu", np.float64(MU0), np.float64(MU_SD))
        s = pm.HalfNormal("s", np.float64(S_SD))
        pm.Normal("y", mu, s, observed=Y)
    return model


def log_f_by_hand(mu, s_log):
    """Joint density on (mu, log s), Jacobian of s = exp(s_log) included."""
    s = np.exp(s_log)
    return (
        stats.norm.logpdf(mu, MU0, MU_SD)
        + stats.halfnorm.logpdf(s, scale=S_SD)
        + s_log
        + stats.norm.logpdf(Y, mu, s).sum()
    )


def log_prior_by_hand(mu, s_log):
    s = np.exp(s_log)
    return stats.norm.logpdf(mu, MU0, MU_SD) + stats.halfnorm.logpdf(s, scale=S_SD) + s_log


def log_logistic(u):
    return np.log(special.expit(u)) + np.log(special.expit(-u))


def gaussian_base(model, mean, chol, log_zeta):
    space = model_space(model)
    return GaussianBase(
        np.asarray(mean, float),
        np.asarray(chol, float),
        log_zeta=log_zeta,
        kind="moments",
        names=space.names,
        sizes=space.sizes,
    )


def random_points(n, seed):
    rng = np.random.default_rng(seed)
    return [(rng.normal(0.4, 1.0), rng.normal(-0.3, 0.8), rng.normal(0.0, 2.0)) for _ in range(n)]


def extended_logp_reference(mu, s_log, u, log_q, log_zeta):
    beta = special.expit(u)
    return beta * (log_f_by_hand(mu, s_log) - log_zeta) + (1 - beta) * log_q + log_logistic(u)


def ct_deterministics_fn(ext):
    outs = ext.replace_rvs_by_values([ext[name] for name in CT_NAMES])
    return ext.compile_fn(outs, inputs=ext.value_vars, on_unused_input="ignore")


# ------------------------------------------------------------------------------------------
# The transform
@pytest.fixture(scope="module")
def source():
    return two_var_model()


@pytest.fixture(scope="module")
def base1(source):
    return gaussian_base(source, [0.3, -0.2], [[0.8, 0.0], [0.3, 0.5]], log_zeta=-6.5)


def test_source_logp_is_the_hand_written_joint_density(source):
    """The reference below relies on this: PyMC's logp(jacobian=True) on (mu, s_log__)."""
    logp = source.compile_logp(jacobian=True)
    for mu, s_log, _ in random_points(5, seed=0):
        assert logp({"mu": mu, "s_log__": s_log}) == pytest.approx(
            log_f_by_hand(mu, s_log), rel=1e-10
        )


def test_extended_model_structure_and_source_untouched(source, base1):
    before = (set(source.named_vars), len(source.potentials), len(source.deterministics))
    logp = source.compile_logp()
    point = {"mu": 0.2, "s_log__": -0.1}
    logp_before = logp(point)

    ext = pme.continuous_tempering(base1, model=source)

    assert isinstance(ext, pm.Model) and ext is not source
    assert sorted(rv.name for rv in ext.free_RVs) == ["ct_u", "mu", "s"]
    assert {d.name for d in ext.deterministics} >= set(CT_NAMES)
    # the source model is not modified
    assert (set(source.named_vars), len(source.potentials), len(source.deterministics)) == before
    assert not any(name.startswith("ct_") for name in source.named_vars)
    assert source.compile_logp()(point) == pytest.approx(logp_before, rel=1e-12)
    assert ct_spec(ext).source is source


def test_extended_logp_matches_independent_computation(source, base1):
    """log p(x, u) = β(log f − log ζ) + (1−β) log q + log σ(u) + log σ(−u), Jacobian included.

    log q is the base's Gaussian on (mu, s_log__) in the *source* model's order (the order
    of ``base.names``), whatever order the cloned model keeps its variables in.
    """
    ext = pme.continuous_tempering(base1, model=source)
    logp = ext.compile_logp()
    q = stats.multivariate_normal(base1.mean, base1.cov)
    for mu, s_log, u in random_points(6, seed=1):
        expected = extended_logp_reference(mu, s_log, u, q.logpdf([mu, s_log]), base1.log_zeta)
        got = logp({"mu": mu, "s_log__": s_log, "ct_u": u})
        assert got == pytest.approx(expected, rel=1e-9, abs=1e-9), (mu, s_log, u)


def test_extended_deterministics(source, base1):
    ext = pme.continuous_tempering(base1, model=source)
    fn = ct_deterministics_fn(ext)
    q = stats.multivariate_normal(base1.mean, base1.cov)
    for mu, s_log, u in random_points(4, seed=2):
        beta, delta, log_zeta = fn({"mu": mu, "s_log__": s_log, "ct_u": u})
        assert beta == pytest.approx(special.expit(u), rel=1e-12)
        assert 0.0 <= beta <= 1.0
        assert log_zeta == pytest.approx(base1.log_zeta, rel=1e-12)
        expected = base1.log_zeta + q.logpdf([mu, s_log]) - log_f_by_hand(mu, s_log)
        assert delta == pytest.approx(expected, rel=1e-9, abs=1e-9)


def test_log_zeta_argument_overrides_the_base(source, base1):
    ext = pme.continuous_tempering(base1, model=source, log_zeta=2.25)
    _, _, log_zeta = ct_deterministics_fn(ext)({"mu": 0.0, "s_log__": 0.0, "ct_u": 0.0})
    assert log_zeta == 2.25 and ct_spec(ext).log_zeta == 2.25


def test_prior_base_extended_logp(source):
    """With the prior as base the path is the power posterior: log q = log prior."""
    space = model_space(source)
    base = PriorBase(log_zeta=-4.0, names=space.names, sizes=space.sizes)
    logp = pme.continuous_tempering(base, model=source).compile_logp()
    for mu, s_log, u in random_points(4, seed=3):
        expected = extended_logp_reference(mu, s_log, u, log_prior_by_hand(mu, s_log), -4.0)
        got = logp({"mu": mu, "s_log__": s_log, "ct_u": u})
        assert got == pytest.approx(expected, rel=1e-9, abs=1e-9)


def test_set_base_updates_compiled_functions(source, base1):
    """set_base changes the shared values: functions compiled before see the new base."""
    ext = pme.continuous_tempering(base1, model=source)
    logp, det = ext.compile_logp(), ct_deterministics_fn(ext)
    point = {"mu": 0.9, "s_log__": -0.4, "ct_u": 0.7}
    base2 = gaussian_base(source, [1.1, 0.2], [[0.5, 0.0], [-0.2, 0.9]], log_zeta=-3.0)

    set_base(ext, base2)

    q2 = stats.multivariate_normal(base2.mean, base2.cov)
    expected = extended_logp_reference(0.9, -0.4, 0.7, q2.logpdf([0.9, -0.4]), -3.0)
    assert logp(point) == pytest.approx(expected, rel=1e-9)
    assert det(point)[2] == pytest.approx(-3.0)
    assert ct_spec(ext).base is base2 and ct_spec(ext).log_zeta == -3.0


def test_mismatched_base_layout_is_refused(source, base1):
    wrong_names = GaussianBase(
        np.zeros(2), np.eye(2), log_zeta=0.0, kind="moments", names=("a", "b"), sizes=(1, 1)
    )
    wrong_dim = GaussianBase(np.zeros(3), np.eye(3), log_zeta=0.0, kind="moments")
    for base in (wrong_names, wrong_dim):
        with pytest.raises(ValueError):
            pme.continuous_tempering(base, model=source)
        with pytest.raises(ValueError):
            pme.GibbsContinuousTempering(base=base, model=source)
    ext = pme.continuous_tempering(base1, model=source)
    with pytest.raises(TypeError):
        set_base(ext, PriorBase(names=base1.names, sizes=base1.sizes))
    with pytest.raises(ValueError):
        ct_spec(source)
