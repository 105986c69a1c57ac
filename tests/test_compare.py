"""Bayes factors and model comparison against hand-computed numbers."""

import doctest
import importlib
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import pymc_evidence as pme
from pymc_evidence import compat
from pymc_evidence.compare import BayesFactor, bayes_factor, bf, compare, post_prob
from pymc_evidence.estimators.pooling import cross_check
from pymc_evidence.estimators.record import EvidenceEstimate
from pymc_evidence.results import GROUP, estimate_to_dataset
from pymc_evidence.testing import conjugate_regression

LOG3 = np.log(3.0)


def est(log_z, se=0.1, method="ct"):
    return EvidenceEstimate(log_z=log_z, se=se, method=method)


def as_idata(estimate):
    return compat.new_idata({GROUP: estimate_to_dataset(estimate)})


@pytest.fixture(autouse=True)
def no_unexpected_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def test_two_models_uniform_prior():
    table = compare({"a": est(0.0, 0.1), "b": est(LOG3, 0.2)})
    assert list(table.index) == ["b", "a"]
    assert table.index.name == "model"
    assert list(table.columns) == [
        "rank",
        "log_z",
        "se",
        "method",
        "log_z_minus_best",
        "log_z_minus_best_se",
        "prior_prob",
        "post_prob",
        "post_prob_se",
        "warning",
    ]
    np.testing.assert_allclose(table["post_prob"], [0.75, 0.25], rtol=1e-12)
    np.testing.assert_allclose(table["prior_prob"], [0.5, 0.5])
    np.testing.assert_allclose(table["log_z_minus_best"], [0.0, -LOG3], rtol=1e-12)
    np.testing.assert_allclose(table["log_z_minus_best_se"], [0.0, np.hypot(0.1, 0.2)], rtol=1e-12)
    # two models: p_b = sigmoid(l_b - l_a), so se(p) = p (1 - p) se(l_b - l_a) for both rows
    expected = 0.75 * 0.25 * np.hypot(0.1, 0.2)
    np.testing.assert_allclose(table["post_prob_se"], [expected, expected], rtol=1e-12)
    assert (table["method"] == "ct").all()


@pytest.mark.parametrize("prior", [{"a": 0.75, "b": 0.25}, [0.75, 0.25], (0.75, 0.25)])
def test_prior_probs_shift_posterior(prior):
    table = compare({"a": est(0.0), "b": est(LOG3)}, prior_probs=prior)
    # prior odds a:b = 3:1 cancel the Bayes factor 1:3
    np.testing.assert_allclose(table.loc[["a", "b"], "post_prob"], [0.5, 0.5], rtol=1e-12)
    np.testing.assert_allclose(table.loc[["a", "b"], "prior_prob"], [0.75, 0.25])
    assert list(table.index) == ["b", "a"]  # still sorted by log Z, not by posterior


def test_three_models_and_zero_prior():
    models = {"a": est(-10.0), "b": est(-10.0 + LOG3), "c": est(-8.0)}
    table = compare(models, prior_probs={"a": 0.5, "b": 0.5, "c": 0.0})
    assert list(table.index) == ["c", "b", "a"]
    np.testing.assert_allclose(table.loc[["a", "b", "c"], "post_prob"], [0.25, 0.75, 0.0])
    assert table.loc["c", "post_prob_se"] == 0.0
    np.testing.assert_allclose(table.loc["a", "log_z_minus_best"], -2.0, rtol=1e-12)


def test_delta_method_matches_finite_differences():
    log_z = np.array([-2.0, -1.0, -1.5])
    se = np.array([0.1, 0.3, 0.2])
    names = ["a", "b", "c"]
    table = compare({n: est(z, s) for n, z, s in zip(names, log_z, se, strict=True)})

    def softmax(v):
        w = np.exp(v - v.max())
        return w / w.sum()

    step = 1e-6
    jac = np.column_stack(
        [(softmax(log_z + step * e) - softmax(log_z - step * e)) / (2 * step) for e in np.eye(3)]
    )
    expected = np.sqrt((jac**2 * se**2).sum(axis=1))
    np.testing.assert_allclose(table.loc[names, "post_prob_se"], expected, rtol=1e-6)


def test_large_log_z_is_stable_and_single_model_allowed():
    table = compare({"a": est(-1e5), "b": est(-1e5 + LOG3)})
    np.testing.assert_allclose(table.loc[["a", "b"], "post_prob"], [0.25, 0.75], rtol=1e-9)
    single = compare({"only": est(-4.0)})
    assert single.loc["only", "post_prob"] == 1.0
    assert single.loc["only", "post_prob_se"] == 0.0


def test_compare_accepts_results_containers():
    table = compare({"a": as_idata(est(0.0)), "b": estimate_to_dataset(est(LOG3)), "c": est(1.0)})
    assert list(table.index) == ["b", "c", "a"]


def test_bayes_factor_propagates_errors():
    result = bayes_factor(est(-10.0, 0.3), est(-12.0, 0.4))
    assert isinstance(result, BayesFactor)
    assert result.log_bf == 2.0
    assert result.se == pytest.approx(0.5, rel=1e-12)
    assert str(result) == "log BF = 2.000 ± 0.500 (BF = 7.39)"
    log_bf, se = bayes_factor(as_idata(est(0.0, 0.05)), est(LOG3, 0.12))
    assert log_bf == pytest.approx(-LOG3, rel=1e-12)
    assert se == pytest.approx(0.13, rel=1e-12)


def test_warnings_for_mixed_methods_and_bad_se():
    with pytest.warns(pme.CrossCheckWarning, match="different methods"):
        compare({"a": est(0.0, method="ct"), "b": est(1.0, method="ais")})
    with pytest.warns(pme.ConvergenceWarning, match="not finite"):
        table = compare({"a": est(0.0, se=np.nan), "b": est(1.0)})
    assert np.isnan(table.loc["a", "log_z_minus_best_se"])
    with pytest.warns(pme.ConvergenceWarning, match="not finite"):
        assert np.isinf(bayes_factor(est(0.0, se=np.inf), est(1.0)).se)


@pytest.mark.parametrize(
    ("prior", "error", "match"),
    [
        ([0.5, 0.6], ValueError, "sum to 1"),
        ([1.5, -0.5], ValueError, "non-negative"),
        ([np.nan, 1.0], ValueError, "finite"),
        ([1.0], ValueError, "1 values for 2 models"),
        ({"a": 0.5, "z": 0.5}, ValueError, "unknown: \\['z'\\], missing: \\['b'\\]"),
        ({"a": 1.0}, ValueError, "missing"),
        ("ab", TypeError, "dict, a sequence"),
        (["x", "y"], TypeError, "numbers"),
    ],
)
def test_invalid_prior_probs(prior, error, match):
    with pytest.raises(error, match=match):
        compare({"a": est(0.0), "b": est(1.0)}, prior_probs=prior)


def test_invalid_models():
    with pytest.raises(ValueError, match="empty"):
        compare({})
    with pytest.raises(TypeError, match="dict"):
        compare([est(0.0)])
    with pytest.raises(TypeError, match="Model 'a'"):
        compare({"a": 3.0})
    with pytest.raises(ValueError, match="non-finite log Z"):
        compare({"a": est(np.nan), "b": est(0.0)})
    no_group = compat.new_idata({"posterior": xr.Dataset({"x": ("draw", np.ones(2))})})
    with pytest.raises(KeyError, match="log_evidence"):
        compare({"a": no_group})


# -- R's bridgesampling names: bf and post_prob ---------------------------------------------

E = np.e
# two estimates, -3.0 ± 0.1 and -4.0 ± 0.2: BF = e, log BF = 1 ± sqrt(0.05)
A, B = est(-3.0, 0.1, "smc"), est(-4.0, 0.2, "smc")


def test_bf_is_the_factor_with_its_log_and_se():
    result = pme.bf(A, B)
    assert isinstance(result, BayesFactor)
    assert result == bayes_factor(A, B)
    assert result.log_bf == 1.0
    assert result.se == pytest.approx(np.sqrt(0.05), rel=1e-12)
    assert result.bf == pytest.approx(E, rel=1e-12)
    # delta method: d exp(l) = exp(l) dl
    assert result.bf_se == pytest.approx(E * np.sqrt(0.05), rel=1e-12)
    assert str(result) == "log BF = 1.000 ± 0.224 (BF = 2.72)"
    log_bf, se = result  # still the two-field record
    assert (log_bf, se) == (result.log_bf, result.se)
    reverse = bf(B, A)
    assert reverse.bf == pytest.approx(1 / E, rel=1e-12)
    assert reverse.se == result.se


def test_bf_of_a_huge_log_factor_is_inf_without_a_warning():
    result = bf(est(800.0, 0.1), est(0.0, 0.1))
    assert result.bf == np.inf and result.bf_se == np.inf
    assert "BF = inf" in str(result)


@pytest.mark.parametrize("function", [bf, bayes_factor, post_prob])
def test_warnings_point_at_the_callers_line(function):
    with pytest.warns(pme.CrossCheckWarning, match="different methods") as record:
        function(est(0.0, method="ct"), est(1.0, method="ais"))
    assert record[0].filename == __file__
    with pytest.warns(pme.CrossCheckWarning) as record:
        compare({"a": est(0.0, method="ct"), "b": est(1.0, method="ais")})
    assert record[0].filename == __file__


def test_post_prob_of_two_estimates():
    table = post_prob(A, B)
    assert list(table.columns) == ["prior_prob", "post_prob", "post_prob_se"]
    assert list(table.index) == [0, 1] and table.index.name == "model"
    np.testing.assert_allclose(table["post_prob"], [E / (1 + E), 1 / (1 + E)], rtol=1e-12)
    np.testing.assert_allclose(table["prior_prob"], [0.5, 0.5])
    # two models: se(p) = p (1 - p) se(log BF) for both
    expected = E / (1 + E) ** 2 * np.sqrt(0.05)
    np.testing.assert_allclose(table["post_prob_se"], [expected, expected], rtol=1e-12)


def test_post_prob_keeps_the_order_given_and_matches_compare():
    models = {"worse": B, "better": A, "third": est(-5.0, 0.3, "smc")}
    table = post_prob(models)
    assert list(table.index) == ["worse", "better", "third"]  # not sorted
    full = compare(models)
    cols = ["prior_prob", "post_prob", "post_prob_se"]
    np.testing.assert_allclose(table[cols], full.loc[list(models), cols], rtol=1e-12)
    np.testing.assert_allclose(table["post_prob"].sum(), 1.0, rtol=1e-12)


@pytest.mark.parametrize(
    "call",
    [
        lambda: post_prob(A, B, model_names=["a", "b"]),
        lambda: post_prob([A, B], model_names=("a", "b")),
        lambda: post_prob({"a": A, "b": B}),
        lambda: post_prob(as_idata(A), estimate_to_dataset(B), model_names=["a", "b"]),
    ],
)
def test_post_prob_accepts_positional_list_dict_and_containers(call):
    table = call()
    assert list(table.index) == ["a", "b"]
    np.testing.assert_allclose(table["post_prob"], [E / (1 + E), 1 / (1 + E)], rtol=1e-12)


def test_post_prob_with_prior_probs():
    # prior odds 1:e cancel the Bayes factor e: equal posterior probabilities
    prior = [1 / (1 + E), E / (1 + E)]
    table = post_prob(A, B, prior_probs=prior)
    np.testing.assert_allclose(table["post_prob"], [0.5, 0.5], rtol=1e-12)
    np.testing.assert_allclose(table["prior_prob"], prior, rtol=1e-12)
    named = post_prob({"a": A, "b": B}, prior_probs={"a": 0.25, "b": 0.75})
    p_a = 0.25 * E / (0.25 * E + 0.75)
    np.testing.assert_allclose(named["post_prob"], [p_a, 1 - p_a], rtol=1e-12)


def test_post_prob_single_model_and_errors():
    single = post_prob(A)
    assert single.loc[0, "post_prob"] == 1.0 and single.loc[0, "post_prob_se"] == 0.0
    with pytest.raises(ValueError, match="no results"):
        post_prob()
    with pytest.raises(ValueError, match="empty"):
        post_prob({})
    with pytest.raises(ValueError, match="name each of the 2 results once"):
        post_prob(A, B, model_names=["a"])
    with pytest.raises(ValueError, match="name each of the 2 results once"):
        post_prob(A, B, model_names=["a", "a"])
    with pytest.raises(TypeError, match="a dict names them"):
        post_prob({"a": A, "b": B}, model_names=["x", "y"])
    with pytest.raises(ValueError, match="sum to 1"):
        post_prob(A, B, prior_probs=[0.5, 0.6])
    with pytest.raises(TypeError, match="Model 1"):
        post_prob(A, 3.0)
    with pytest.warns(pme.ConvergenceWarning, match="not finite") as record:
        post_prob(A, est(-4.0, np.nan, "smc"))
    assert record[0].filename == __file__


def test_docstring_examples():
    module = importlib.import_module("pymc_evidence.compare")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 10 and result.failed == 0


def test_printed_table_is_rounded_whole_and_says_who_wins():
    """``print(compare(...))``: every column (pandas cut nine to ``...``), three decimals,
    an se below them as ``<0.001``, and a sentence with the favoured model, its log BF and
    posterior probability and the signs' meaning; a slice without them prints as pandas'."""
    table = compare({"a": est(-10.0, 0.02, "smc"), "b": est(-12.0, 1e-5, "smc")})
    text = " ".join(repr(table).split())
    assert "..." not in text and "-10.000" in text and "<0.001" in text
    assert "post_prob_se" in text and "The data favour 'a' over 'b' by log BF 2.000" in text
    assert "log_z_minus_best is each model's log Bayes factor against the best" in text
    assert "favour" not in repr(table[["log_z"]])
    assert isinstance(table, pd.DataFrame) and table.index.tolist() == ["a", "b"]


def test_table_ranks_flags_warnings_and_rounds_to_the_se():
    """As ArviZ's comparison tables: a rank (0 the best), a warning column (an estimate
    that came with warnings) named in the sentence, and the log Z columns printed to the
    precision their se allows (se 0.0004: five decimals)."""
    table = compare(
        {"a": est(-10.0, 0.0004, "smc"), "b": est(-12.0, 0.03, "smc"),
         "c": EvidenceEstimate(-11.0, 0.05, "smc", warnings=("a warning",))}
    )  # fmt: skip
    assert table["rank"].tolist() == [0, 1, 2] and table.index.tolist() == ["a", "c", "b"]
    assert table["warning"].tolist() == [False, True, False]
    text = repr(table)
    assert "-10.00000" in text and "-11.00000" in text and "With warnings" in text
    assert "'c'" in text.split("With warnings")[1]
    assert "With warnings" not in repr(compare({"a": est(-1.0, 0.1), "b": est(-2.0, 0.1)}))


# -- issue 49: the sign of every difference in its column's name ------------------------------


def test_difference_columns_say_their_sign():
    """One signed difference, named as it is computed (this model's log Z minus the
    best's, <= 0: its log Bayes factor against the best); no pair of columns that are each
    other's negatives; the old names raise a KeyError that names their replacement."""
    table = compare({"a": est(-10.0, 0.3), "b": est(-12.0, 0.4), "c": est(-11.0, 0.1)})
    assert not {"d_log_z", "d_log_z_se", "log_bf"} & set(table.columns)
    minus = table["log_z_minus_best"]
    np.testing.assert_allclose(minus, table["log_z"] - table["log_z"].max(), rtol=1e-12)
    assert minus.iloc[0] == 0.0 and (minus <= 0).all()
    np.testing.assert_allclose(minus["b"], bayes_factor(est(-12.0, 0.4), est(-10.0, 0.3)).log_bf)
    np.testing.assert_allclose(table["log_z_minus_best_se"], [0.0, np.hypot(0.3, 0.1), 0.5])
    with pytest.raises(KeyError, match="'d_log_z' is now -table\\['log_z_minus_best'\\]"):
        table["d_log_z"]
    with pytest.raises(KeyError, match="'log_bf' is now 'log_z_minus_best'"):
        table[["log_z", "log_bf"]]
    with pytest.raises(KeyError, match="nothing"):
        table["nothing"]


# -- issue 49: the same table for a cross-check, by method ------------------------------------

SMC, BRIDGE = est(-3.21, 0.02, "smc"), est(-3.20, 0.012, "bridge")


def test_compare_methods_of_a_cross_check():
    """Rows are the methods, nearest the combined estimate first; each difference from
    the combined estimate has the se of a residual from an inverse-variance mean, so that
    for two methods both rows are the pairwise difference's z (the cross-check's test)."""
    check = cross_check([SMC, BRIDGE])
    for given in (check, as_idata(check), estimate_to_dataset(check)):
        table = pme.compare_methods(given)
        assert isinstance(table, pd.DataFrame) and table.index.name == "method"
        assert list(table.columns) == [
            "rank", "log_z", "se", "log_z_minus_combined", "log_z_minus_combined_se",
            "warning",
        ]  # fmt: skip
        assert table.index.tolist() == ["bridge", "smc"] and table["rank"].tolist() == [0, 1]
        np.testing.assert_allclose(table["log_z"], [-3.20, -3.21])
        np.testing.assert_allclose(table["log_z_minus_combined"], table["log_z"] - check.log_z)
        se, pair = table["se"].to_numpy(), np.hypot(0.02, 0.012)
        np.testing.assert_allclose(table["log_z_minus_combined_se"], se**2 / pair, rtol=1e-12)
        z = table["log_z_minus_combined"] / table["log_z_minus_combined_se"]
        np.testing.assert_allclose(z.abs(), 0.01 / pair, rtol=1e-9)
        assert table["warning"].tolist() == [False, False]
        assert table.attrs["combined"]["method"] == "smc+bridge"
        assert table.attrs["combined"]["se"] == pytest.approx(check.se)


def test_compare_methods_se_is_the_spread_of_the_difference():
    """Simulated: the sd of (a method's estimate - the inverse-variance mean) over many
    independent draws of the estimates is the table's se, not sqrt(se**2 + se_mean**2)."""
    ses = np.array([0.02, 0.012, 0.05])
    rng = np.random.default_rng(0)
    draws = rng.normal(0.0, ses, size=(200_000, 3))
    w = ses**-2
    spread = (draws - (draws @ w / w.sum())[:, None]).std(axis=0)
    estimates = [est(0.0, s, m) for s, m in zip(ses, "abc", strict=True)]
    table = pme.compare_methods(cross_check(estimates))
    column = table.loc[["a", "b", "c"], "log_z_minus_combined_se"]
    np.testing.assert_allclose(column, spread, rtol=0.01)


def test_compare_methods_flags_disagreement_and_prints_it():
    """A third method 9 combined se away: the methods in a pair beyond three combined se
    are flagged, the rounding follows the se, and the sentence names the furthest pair."""
    far = est(-3.5, 0.03, "ct")
    table = pme.compare_methods(cross_check([SMC, BRIDGE, far]))
    assert table.index.tolist() == ["smc", "bridge", "ct"]
    assert table["warning"].tolist() == [True, True, True]  # each in a pair beyond 3 se
    text = " ".join(repr(table).split())
    assert "-3.210" in text and "Combined (smc+bridge+ct): log Z -3.234 ± 0.065" in text
    assert "'bridge' and 'ct' differ by 0.300 ± 0.032 (9.3 combined se), beyond" in text
    assert "log_z_minus_combined is each method's log Z minus the combined one" in text
    agree = " ".join(repr(pme.compare_methods(cross_check([SMC, BRIDGE]))).split())
    assert "(0.4 combined se), within their errors" in agree and "Flagged" not in agree
    fine = pme.compare_methods(cross_check([est(-3.0, 2e-4, "smc"), est(-3.0002, 3e-4, "ais")]))
    assert "-3.00020" in repr(fine)  # se 2e-4: five decimals
    shown = fine._shown()["log_z_minus_combined"].tolist()  # a difference keeps its sign
    assert shown == ["0.00006", "-0.00014"]
    tiny = compare({"a": est(-1.0, 0.02), "b": est(-1.0002, 0.02)})._shown()
    assert tiny["log_z_minus_best"].tolist() == ["0.000", "-0.000"]
    assert "favour" not in repr(table[["log_z"]])


def test_compare_methods_of_separate_runs_and_refusals():
    """A dict of one model's runs by separate methods is combined as a cross-check; an
    estimate's own warnings flag its row. One method's result is no cross-check."""
    warned = EvidenceEstimate(-3.21, 0.02, "smc", warnings=("few particles",))
    table = pme.compare_methods({"smc": as_idata(warned), "bridge": BRIDGE})
    expected = pme.compare_methods(cross_check([SMC, BRIDGE]))
    np.testing.assert_allclose(table[["log_z", "log_z_minus_combined_se"]],
                               expected[["log_z", "log_z_minus_combined_se"]])  # fmt: skip
    assert table["warning"].to_dict() == {"bridge": False, "smc": True}
    assert table.attrs["combined"]["n_warnings"] == 1
    with pytest.raises(ValueError, match="one estimate \\(method 'smc'\\), not a cross-check"):
        pme.compare_methods(as_idata(SMC))
    with pytest.raises(ValueError, match="two results or more"):
        pme.compare_methods({"smc": SMC})
    for one in (as_idata(SMC), estimate_to_dataset(SMC), SMC):
        with pytest.raises(TypeError, match="compare_methods"):
            compare(one)


def test_compare_methods_of_a_run():
    """End to end: ``sample_evidence(method=["smc", "bridge"])`` on a conjugate regression
    (exact log Z), its InferenceData straight into the table."""
    case = conjugate_regression(n=20, d=2, seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pme.sample_evidence(
            case.model, ["smc", "bridge"], draws=300, tune=300, chains=2, base="prior",
            n_particles=300, n_runs=2, random_seed=4, progressbar=False,
        )  # fmt: skip
    combined = pme.log_evidence(idata)
    table = pme.compare_methods(idata)
    assert sorted(table.index) == ["bridge", "smc"]
    for method, (log_z, se) in combined.per_method.items():
        assert table.loc[method, "log_z"] == log_z and table.loc[method, "se"] == se
    np.testing.assert_allclose(
        table["log_z_minus_combined"], table["log_z"] - combined.log_z, rtol=1e-12
    )
    assert abs(combined.log_z - case.log_z) < max(4 * combined.se, 0.1)
    assert f"Combined (smc+bridge): log Z {combined.log_z:.3f}"[:30] in repr(table)


def test_compare_methods_docstring_examples():
    module = importlib.import_module("pymc_evidence.compare_methods")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 2 and result.failed == 0
