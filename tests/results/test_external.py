"""Using results of other tools and ArviZ diagnostics: ``pm.sample_smc`` results in
``log_evidence``/``compare``, ``error_measures``, Pareto k-hat and NUTS convergence checks."""

import warnings

import numpy as np
import pymc as pm
import pytest
import xarray as xr

import pymc_evidence as pme
from pymc_evidence import compat
from pymc_evidence.api.readers import sample_smc_estimate
from pymc_evidence.estimators.diagnostics import ConvergenceWarning, EvidenceWarning, WeightWarning
from pymc_evidence.estimators.noneq import ais_log_evidence, bar_log_evidence
from pymc_evidence.estimators.record import EvidenceEstimate
from pymc_evidence.methods._particles import run_checks
from pymc_evidence.methods.ct import ct_results
from pymc_evidence.results import log_evidence as results_log_evidence
from pymc_evidence.results.diagnostics import nuts_messages, pareto_check, pareto_khat
from pymc_evidence.results.error_measures import error_measures
from pymc_evidence.results.external import sample_smc_log_z
from pymc_evidence.testing import beta_bernoulli
from tests._accuracy import assert_log_z

SMC = {"draws": 400, "chains": 4, "cores": 1, "progressbar": False}


def smc_idata(stat_values, n_chains, dims=("chain", "draw")):
    """A results container shaped like ``pm.sample_smc``'s for the given stage values."""
    posterior = xr.Dataset({"p": (("chain", "draw"), np.zeros((n_chains, 5)))})
    stats = xr.Dataset({"log_marginal_likelihood": (dims[: np.ndim(stat_values)], stat_values)})
    return compat.new_idata({"posterior": posterior, "sample_stats": stats})


def ragged(rows):
    out = np.empty(len(rows), dtype=object)
    for i, row in enumerate(rows):
        out[i] = list(row)
    return out


# ------------------------------------------------------------------------------------------
# pm.sample_smc results
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "values, n_chains, expected",
    [
        (np.array([[np.nan, -3.0, -2.5], [np.nan, -2.9, -2.6]], dtype=object), 2, [-2.5, -2.6]),
        (ragged([[np.nan, -3.0, -2.5], [np.nan, -2.7]]), 2, [-2.5, -2.7]),  # different stages
        (np.array([np.nan, -3.0, -2.4]), 1, [-2.4]),  # PyMC 6, one chain: 'chain' counts stages
        (np.array([[np.nan, -3.0, -2.4]]), 1, [-2.4]),  # PyMC 5, one chain: (chain, draw)
        (np.array([[np.nan, -2.0, np.nan], [np.nan, -2.2, -2.1]], dtype=object), 2, [-2.0, -2.1]),
    ],
)
def test_sample_smc_layouts(values, n_chains, expected):
    np.testing.assert_array_equal(sample_smc_log_z(smc_idata(values, n_chains)), expected)


def test_sample_smc_bad_layouts():
    with pytest.raises(ValueError, match="no finite"):
        sample_smc_log_z(smc_idata(np.array([[np.nan, np.nan]] * 2, dtype=object), 2))
    with pytest.raises(ValueError, match="does not match"):
        sample_smc_log_z(smc_idata(np.array([[np.nan, -1.0]] * 3, dtype=object), 2))
    with pytest.raises(KeyError, match="not from pm.sample_smc"):
        sample_smc_log_z(compat.new_idata({"posterior": xr.Dataset({"p": ("draw", [0.0])})}))


def test_sample_smc_pools_on_the_z_scale():
    lz = np.array([-3.0, -2.0, -2.5, -2.2])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = sample_smc_estimate(smc_idata(np.stack([np.full(4, np.nan), lz], 1), 4))
    z = np.exp(lz)
    assert est.log_z == pytest.approx(np.log(z.mean()), rel=1e-12)
    assert est.se == pytest.approx(z.std(ddof=1) / (np.sqrt(4) * z.mean()), rel=1e-12)
    assert est.method == "pm.sample_smc" and est.diagnostics == {"se_from_n_chains": 4.0}
    assert np.all(np.isnan(est.per_chain_se)) and est.warnings == ()


def test_sample_smc_one_or_few_chains_warn():
    with pytest.warns(ConvergenceWarning, match="one chain"):
        est = sample_smc_estimate(smc_idata(np.array([np.nan, -2.4]), 1))
    assert est.log_z == -2.4 and np.isnan(est.se) and len(est.warnings) == 1
    with pytest.warns(ConvergenceWarning, match="only 2 chains"):
        est = sample_smc_estimate(smc_idata(np.array([[np.nan, -2.0], [np.nan, -2.2]]), 2))
    assert np.isfinite(est.se)


@pytest.fixture(scope="module")
def coin():
    """Two Beta-Bernoulli models of the same 30 flips with exact log Z."""
    return {
        "flat": beta_bernoulli(n=30, heads=5, seed=1),  # log Z = -15.30
        "skeptic": beta_bernoulli(n=30, heads=5, a=20.0, b=20.0, seed=1),  # log Z = -18.14
    }


@pytest.fixture(scope="module")
def smc_runs(coin):
    out = {}
    for i, (name, case) in enumerate(coin.items()):
        with case.model, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out[name] = pm.sample_smc(random_seed=10 + i, **SMC)
    return out


def test_sample_smc_accuracy(coin, smc_runs):
    for name, case in coin.items():
        est = pme.log_evidence(smc_runs[name])  # the api reader
        with pytest.raises(KeyError, match="pme.log_evidence"):  # the schema reads groups only
            results_log_evidence(smc_runs[name])
        assert est.method == "pm.sample_smc" and est.n_chains == 4
        assert est.diagnostics["se_from_n_chains"] == 4.0
        assert_log_z(est, case.log_z, abs_tol=0.15, se_max=0.15, label=f"pm.sample_smc {name}")


def test_compare_mixes_sample_smc_and_pme(coin, smc_runs):
    case = coin["flat"]
    with case.model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = pm.sample(500, tune=500, chains=2, random_seed=3, progressbar=False)
        bridge = pme.bridge_sampling(trace, random_seed=4)
    with pytest.warns(UserWarning, match="different methods"):
        table = pme.compare(
            {
                "flat (smc)": smc_runs["flat"],
                "flat (bridge)": bridge,
                "skeptic": smc_runs["skeptic"],
            }
        )
    assert set(table["method"]) == {"pm.sample_smc", "bridge"}
    assert table.index[-1] == "skeptic" and table["post_prob"].sum() == pytest.approx(1.0)
    for name in ("flat (smc)", "flat (bridge)"):
        row = table.loc[name]
        assert_log_z((row["log_z"], row["se"]), case.log_z, abs_tol=0.15, label=name)
    truth = coin["flat"].log_z - coin["skeptic"].log_z
    skeptic = table.loc["skeptic"]
    difference = (-skeptic["log_z_minus_best"], skeptic["log_z_minus_best_se"])
    assert_log_z(difference, truth, abs_tol=0.25)
    with pytest.warns(UserWarning, match="different methods"):
        bf = pme.bayes_factor(bridge, smc_runs["skeptic"])
    assert_log_z((bf.log_bf, bf.se), truth, abs_tol=0.25, label="log BF flat/skeptic")
    assert pme.error_measures(smc_runs["flat"]).source == "se of log Z"
    assert pme.error_measures(bridge).source == "bridge"


# ------------------------------------------------------------------------------------------
# error_measures
# ------------------------------------------------------------------------------------------


def test_error_measures_from_se():
    em = error_measures(EvidenceEstimate(-1.0, 0.1, "ct"))
    assert em.re2 == pytest.approx(np.expm1(0.01), rel=1e-12)
    assert em.cv == pytest.approx(np.sqrt(np.expm1(0.01)), rel=1e-12)
    assert em.percentage == "10%" and em.source == "se of log Z"
    assert error_measures(EvidenceEstimate(-1.0, 0.0123, "ct")).percentage == "1.2%"
    assert "percentage='10%'" in repr(em)
    nan = error_measures(EvidenceEstimate(-1.0, np.nan, "ct"))
    assert np.isnan(nan.re2) and np.isnan(nan.cv) and nan.percentage == "nan%"


def test_error_measures_lognormal_identity():
    """re2 = Var(Z) / E[Z]^2 for a log-normal Z with sd(log Z) = se."""
    se = 0.6
    z = np.exp(np.random.default_rng(0).normal(0.0, se, 400_000))
    em = error_measures(EvidenceEstimate(0.0, se, "ct"))
    assert em.re2 == pytest.approx(z.var() / z.mean() ** 2, rel=0.02)


def test_error_measures_bridge_uses_its_own_re2():
    diag = {"re2_proposal": 0.0016, "re2_posterior": 0.0009}
    est = EvidenceEstimate(-1.0, 0.05, "bridge", diagnostics=diag)
    em = error_measures(est)
    assert em.source == "bridge" and em.re2 == pytest.approx(0.0025) and em.cv == 0.05
    pooled = EvidenceEstimate(
        -1.0, 0.05, "bridge", np.array([-1.0, -0.9, -1.1]), diagnostics={**diag, "run_sd": 0.1}
    )
    assert error_measures(pooled).re2 == pytest.approx(0.0009 + 0.01 / 3)


def test_error_measures_of_a_bridge_run(coin):
    case = coin["flat"]
    with case.model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = pm.sample(300, tune=300, chains=2, random_seed=5, progressbar=False)
        est = pme.log_evidence(pme.bridge_sampling(trace, random_seed=6))
    em = pme.error_measures(est)
    diag = est.diagnostics
    assert em.re2 == pytest.approx(diag["re2_proposal"] + diag["re2_posterior"], rel=1e-12)
    assert em.re2 == pytest.approx(est.se**2, rel=1e-9)


# ------------------------------------------------------------------------------------------
# Pareto k-hat
# ------------------------------------------------------------------------------------------

# k-hat of seeded weights, measured with arviz_stats 1.3 (.venv) and arviz 0.23
# (.venv-other): the two implementations differ by < 0.02 (tail length floor vs ceil).
PARETO_REFERENCE = {"normal_0.5": 0.217, "normal_1.5": 0.435, "normal_2.5": 0.905}


def reference_weights():
    rng = np.random.default_rng(20261124)
    return {
        "normal_0.5": rng.normal(0, 0.5, 2000),
        "normal_1.5": rng.normal(0, 1.5, 2000),
        "normal_2.5": rng.normal(0, 2.5, 4000),
    }


def test_pareto_khat_same_on_both_arviz_stacks():
    for name, lw in reference_weights().items():
        assert pareto_khat(lw) == pytest.approx(PARETO_REFERENCE[name], abs=0.03), name
        assert pareto_khat(lw + 123.0) == pytest.approx(pareto_khat(lw), abs=1e-9)


def test_pareto_khat_heavy_and_light_tails():
    rng = np.random.default_rng(7)
    assert pareto_khat(np.log(np.abs(rng.standard_cauchy(2000)))) > 0.7  # infinite mean
    assert pareto_khat(np.log(rng.pareto(1.5, 2000) + 1.0)) > 0.5
    assert pareto_khat(rng.normal(0, 0.2, 2000)) < 0.5
    assert np.isnan(pareto_khat(rng.normal(size=20)))  # too few for a tail fit
    assert np.isnan(pareto_khat(np.zeros(100)))  # equal weights: nothing to fit
    assert np.isnan(pareto_khat([np.nan] * 50))
    with_zeros = np.concatenate([rng.normal(0, 0.2, 500), np.full(10, -np.inf)])
    assert pareto_khat(with_zeros) < 0.5


def test_pareto_check_message():
    heavy = np.log(np.abs(np.random.default_rng(1).standard_cauchy(1000)))
    diag, messages = pareto_check(heavy, what="the demo weights", key="pareto_k_demo")
    assert diag["pareto_k_demo"] > 0.7 and len(messages) == 1
    assert "the demo weights" in messages[0] and "too heavy-tailed" in messages[0]
    assert messages[0].category is WeightWarning
    assert pareto_check(np.random.default_rng(1).normal(size=1000), what="x")[1] == []


def test_particle_runs_report_pareto_k():
    rng = np.random.default_rng(2)
    heavy_work = -1.5 * np.log(np.abs(rng.standard_cauchy(256)))  # w = |C|^1.5: k = 1.5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)  # AIS' own Kish ESS warning
        est = ais_log_evidence(heavy_work)
    with pytest.warns(WeightWarning, match="forward AIS runs' weights"):
        est = run_checks(est, weights={"forward": -heavy_work}, work_f=heavy_work)
    assert est.diagnostics["pareto_k_forward"] > 0.7
    assert any("Pareto k-hat" in m for m in est.warnings)
    light = rng.normal(0.0, 0.3, 256)
    with warnings.catch_warnings():
        warnings.simplefilter("error", EvidenceWarning)
        est = run_checks(ais_log_evidence(light), weights={"forward": -light}, work_f=light)
    assert est.diagnostics["pareto_k_forward"] < 0.7
    # BAR uses both directions: k-hat recorded, no warning for a heavy forward tail
    reverse = rng.normal(3.0, 0.3, 256)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = run_checks(
            bar_log_evidence(heavy_work, reverse),
            weights={"forward": -heavy_work, "reverse": -reverse},  # the works BAR uses
            work_f=heavy_work,
            physical_r=reverse,
        )
    assert not [w for w in caught if "Pareto" in str(w.message)]
    assert est.diagnostics["pareto_k_forward"] > 0.7
    assert {"pareto_k_forward", "pareto_k_reverse"} <= set(est.diagnostics)


def test_ct_results_report_pareto_k():
    rng = np.random.default_rng(3)
    delta = rng.normal(0.0, 1.0, (2, 300))
    posterior = xr.Dataset(
        {
            "mu": (("chain", "draw"), rng.normal(size=(2, 300))),
            "ct_delta": (("chain", "draw"), delta),
            "ct_log_zeta": (("chain", "draw"), np.full((2, 300), -1.0)),
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        _, est = ct_results(compat.new_idata({"posterior": posterior}), random_seed=0)
    assert np.isfinite(est.diagnostics["pareto_k"])  # recorded; bounded w1: never a warning
    assert not any("Pareto" in m for m in est.warnings)


# ------------------------------------------------------------------------------------------
# NUTS convergence messages
# ------------------------------------------------------------------------------------------


def nuts_like(values):
    return compat.new_idata({"posterior": xr.Dataset(values)})


def test_nuts_messages_flag_stuck_chains():
    rng = np.random.default_rng(4)
    stuck = rng.normal(size=(4, 300)) + 3.0 * np.arange(4)[:, None]
    good = rng.normal(size=(4, 300, 2))
    idata = nuts_like({"mu": (("chain", "draw"), stuck), "theta": (("chain", "draw", "k"), good)})
    messages = nuts_messages(idata, what="the internal NUTS run that starts reverse AIS")
    assert len(messages) == 2
    rhat, ess = messages
    assert rhat.startswith("the internal NUTS run that starts reverse AIS has not converged")
    assert "1 of 2 variables" in rhat and "mu " in rhat and "theta" not in rhat
    assert "bulk ESS" in ess and "mu " in ess
    assert {m.category for m in messages} == {ConvergenceWarning}


def test_nuts_messages_quiet_on_good_or_short_runs():
    rng = np.random.default_rng(5)
    good = nuts_like({"mu": (("chain", "draw"), rng.normal(size=(4, 300)))})
    assert nuts_messages(good, what="run") == []
    constant = nuts_like({"c": (("chain", "draw"), np.ones((2, 300)))})
    assert nuts_messages(constant, what="run") == []
    short = rng.normal(size=(4, 50)) + np.arange(4)[:, None]
    assert nuts_messages(xr.Dataset({"mu": (("chain", "draw"), short)}), what="run") == []


def test_nuts_messages_flag_low_ess():
    rng = np.random.default_rng(6)
    x = np.zeros((4, 400))
    for t in range(1, 400):  # AR(1) with rho = 0.995: mixes, but very slowly
        x[:, t] = 0.995 * x[:, t - 1] + 0.1 * rng.normal(size=4)
    messages = nuts_messages(nuts_like({"a": (("chain", "draw"), x)}), what="the slow run")
    assert any(m.startswith("the slow run has too few effective draws") for m in messages)
