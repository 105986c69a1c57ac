"""The warning category tree, the categories real situations emit, and the package logger."""

import ast
import pickle
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pymc as pm
import pytest
import xarray as xr
from scipy import stats

import pymc_evidence as pme
from pymc_evidence import compat
from pymc_evidence.estimators import EvidenceEstimate, evidence_messages
from pymc_evidence.estimators.diagnostics import WARNING_CATEGORIES, WarningMessage, tagged
from pymc_evidence.estimators.logspace import emit_warnings
from pymc_evidence.estimators.noneq import ais_log_evidence
from pymc_evidence.estimators.pooling import cross_check
from pymc_evidence.record import add_messages
from pymc_evidence.results.schema import estimate_to_dataset, log_evidence
from pymc_evidence.transforms import reparametrize

DOCS = Path(__file__).resolve().parents[1] / "docs" / "warnings.rst"
NAMES = [
    "SamplingWarning",
    "ConvergenceWarning",
    "WeightWarning",
    "BaseFitWarning",
    "CrossCheckWarning",
    "ModelWarning",
]


def _caught(fn, *args, **kwargs):
    """``(result, [(category, text), ...])`` of every warning ``fn`` emits."""
    with warnings.catch_warnings(record=True) as caught, np.errstate(all="ignore"):
        warnings.simplefilter("always")
        out = fn(*args, **kwargs)
    return out, [(w.category, str(w.message)) for w in caught]


def _categories(caught):
    return {c for c, _ in caught if issubclass(c, pme.EvidenceWarning)}


# -- the tree ------------------------------------------------------------------------------


def test_tree_is_what_the_docs_say():
    assert issubclass(pme.EvidenceWarning, UserWarning)
    assert [c.__name__ for c in WARNING_CATEGORIES] == NAMES
    for name in NAMES:
        category = getattr(pme, name)
        assert category.__bases__ == (pme.EvidenceWarning,) and name in pme.__all__
    text = DOCS.read_text()
    tree = re.findall(r"^\s*[├└]── (\w+)", text, flags=re.MULTILINE)
    assert tree == ["EvidenceWarning", *NAMES]
    for name in ["EvidenceWarning", *NAMES]:  # one section per category
        assert re.search(rf"^``{name}``\n[-~]+$", text, flags=re.MULTILINE), name


def test_user_warning_filters_still_catch_every_category():
    for category in WARNING_CATEGORIES:
        with pytest.warns(UserWarning):
            warnings.warn("x", category, stacklevel=1)


def test_every_warn_call_in_the_package_names_a_category_of_the_tree():
    """``warn_user(text, Category)`` everywhere, no stack level counted by hand: the one
    ``warnings.warn`` is inside ``warn_user``; only the generic emitters pass a ``category``
    (``message.category``) variable on."""
    allowed = {"EvidenceWarning", *NAMES, "category"}
    package = Path(pme.__file__).parent
    calls, raw = 0, []
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            if ast.unparse(node.func) == "warnings.warn":
                raw.append(f"{path.name}:{node.lineno}")
            if ast.unparse(node.func) != "warn_user":
                continue
            calls += 1
            args = [*node.args[1:2], *(k.value for k in node.keywords if k.arg == "category")]
            assert len(args) == 1, f"{path.name}:{node.lineno} warns without a category"
            name = ast.unparse(args[0]).rsplit(".", 1)[-1]
            assert name in allowed, f"{path.name}:{node.lineno} warns with {name}"
    assert calls >= 7
    # two calls, both in warn_user: skip_file_prefixes (Python 3.12+) and the counted level
    assert len(raw) == 2 and all(r.startswith("record.py") for r in raw), raw


def test_warnings_point_at_the_users_line_however_deep():
    """A warning raised several calls deep in the package points at the test's own line."""
    from pymc_evidence.estimators.diagnostics import warn_user

    def deep():
        warn_user("deep", pme.WeightWarning)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        deep()  # a frame of this file: the warning points here, in the test's inner function
        pme.estimators.ais_log_evidence(np.array([0.0, -40.0, -80.0]))  # a few effective runs
    assert [w.filename for w in caught] == [__file__] * len(caught) and len(caught) >= 2


# -- messages that carry their category ----------------------------------------------------


def test_warning_message_is_a_string_with_a_category(tmp_path):
    m = WarningMessage("chains disagree", pme.ConvergenceWarning)
    assert m == "chains disagree" and hash(m) == hash("chains disagree") and repr(m) == repr(str(m))
    back = pickle.loads(pickle.dumps(m))
    assert back.category is pme.ConvergenceWarning and back == m
    assert WarningMessage("x").category is pme.EvidenceWarning
    with pytest.raises(TypeError, match="Warning subclass"):
        WarningMessage("x", ValueError)
    with pytest.raises(TypeError, match="must be strings"):
        tagged([1.0])
    # stored as text: the netCDF schema is unchanged and the text comes back equal
    est = EvidenceEstimate(-1.0, 0.1, "demo", warnings=(m,))
    path = tmp_path / "w.nc"
    estimate_to_dataset(est).to_netcdf(path)
    with xr.open_dataset(path) as ds:
        assert log_evidence(ds.load()).warnings == ("chains disagree",)


def test_emit_warnings_honours_each_message_category():
    msgs = ["plain", WarningMessage("weights", pme.WeightWarning)]
    out, caught = _caught(emit_warnings, msgs, pme.ConvergenceWarning)
    assert caught == [(pme.ConvergenceWarning, "plain"), (pme.WeightWarning, "weights")]
    assert [m.category for m in out] == [pme.ConvergenceWarning, pme.WeightWarning]
    _, caught = _caught(emit_warnings, ["plain"])
    assert caught == [(pme.EvidenceWarning, "plain")]


@pytest.mark.parametrize(
    ("diag", "se", "category"),
    [
        ({"frac_beta_lt_0.1": 0.001}, 0.1, pme.WeightWarning),
        ({"frac_beta_gt_0.9": 0.001}, 0.1, pme.WeightWarning),
        ({"ess_w1": 3.0, "n_draws": 1000.0}, 0.1, pme.WeightWarning),
        ({"chain_disagreement": 1e-4, "chain_max_z": 5.0}, 0.1, pme.ConvergenceWarning),
        ({}, np.nan, pme.ConvergenceWarning),
        ({"n_divergences": 3.0}, 0.1, pme.SamplingWarning),
        ({"diverging_fraction": 0.1}, 0.1, pme.SamplingWarning),
        ({"nonfinite_fraction": 0.1}, 0.1, pme.SamplingWarning),
        ({"base_moment_max_var_z": 9.0}, 0.1, pme.BaseFitWarning),
    ],
)
def test_evidence_messages_categories(diag, se, category):
    (message,) = evidence_messages(diag, se)
    assert message.category is category


def test_category_survives_a_cross_check_and_reemission():
    """What ``sample_evidence`` does with several methods: old warnings keep their category
    when the combined estimate re-emits them, the disagreement is a CrossCheckWarning."""
    a = EvidenceEstimate(-3.0, 0.01, "smc", warnings=tagged(["few runs"], pme.WeightWarning))
    b = EvidenceEstimate(-3.5, 0.01, "bridge")
    combined = cross_check([a, b])
    est, caught = _caught(add_messages, EvidenceEstimate(-3.2, 0.3, "x"), combined.warnings)
    assert [c for c, _ in caught] == [pme.WeightWarning, pme.CrossCheckWarning]
    assert "disagree" in caught[1][1] and est.warnings == combined.warnings


# -- one real situation per category -------------------------------------------------------


def _normal_trace(n_divergent: int):
    """Exact posterior draws of ``mu`` (prior N(0, 1), 4 observations with sd 1) as a trace
    with ``n_divergent`` divergences flagged in ``sample_stats``; the model and its log Z."""
    y = np.array([0.3, -0.5, 1.1, 0.2])
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu, 1.0, observed=y)
    prec = 1.0 + y.size
    draws = np.random.default_rng(3).normal(y.sum() / prec, prec**-0.5, size=(2, 500))
    diverging = np.zeros((2, 500), dtype=bool)
    diverging[0, :n_divergent] = True
    dims = ("chain", "draw")
    idata = compat.new_idata(
        {
            "posterior": xr.Dataset({"mu": (dims, draws)}),
            "sample_stats": xr.Dataset({"diverging": (dims, diverging)}),
        }
    )
    log_z = stats.multivariate_normal(np.zeros(y.size), np.eye(y.size) + 1.0).logpdf(y)
    return model, idata, float(log_z)


def test_sampling_warning_for_a_trace_with_divergences():
    model, idata, log_z = _normal_trace(n_divergent=5)
    out, caught = _caught(pme.bridge_sampling, idata, model, random_seed=1)
    assert _categories(caught) == {pme.SamplingWarning}
    assert any("5 divergent NUTS transitions" in text for _, text in caught)
    est = pme.log_evidence(out)
    assert abs(est.log_z - log_z) < 5 * est.se + 0.02  # the warning does not change the value
    with warnings.catch_warnings():
        warnings.simplefilter("error", pme.SamplingWarning)
        with pytest.raises(pme.SamplingWarning, match="divergent"):
            pme.bridge_sampling(idata, model, random_seed=1)


def test_error_filter_on_one_category_leaves_the_others_warnings():
    model, idata, _ = _normal_trace(n_divergent=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", pme.SamplingWarning)
        with pytest.warns(pme.ConvergenceWarning, match="did not converge"):
            pme.bridge_sampling(idata, model, maxiter=1, random_seed=1)


def test_convergence_warning_for_a_non_finite_se():
    ests = {"a": EvidenceEstimate(-1.0, np.nan, "smc"), "b": EvidenceEstimate(-2.0, 0.1, "smc")}
    _, caught = _caught(pme.compare, ests)
    assert _categories(caught) == {pme.ConvergenceWarning}


def test_weight_warning_for_degenerate_ais_weights():
    work = np.random.default_rng(0).normal(0.0, 4.0, 200)  # log weights with sd 4
    est, caught = _caught(ais_log_evidence, work)
    assert _categories(caught) == {pme.WeightWarning} and est.diagnostics["ess"] < 20


def test_base_fit_warning_when_full_rank_advi_fails():
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0, shape=2)
        pm.Normal("y", mu, 1.0, observed=np.zeros((3, 2)))

    def fit():  # a learning rate that overflows every fit, full-rank first
        from pymc_evidence.basefit import BasePlan
        from pymc_evidence.basefit.pipeline import fit_plan
        from pymc_evidence.runtime import model_space

        plan = BasePlan("fullrank_advi", n_steps=20, learning_rate=1e8)
        with pytest.raises(pme.BaseFitError):
            fit_plan(model_space(model), plan, np.random.default_rng(0))

    _, caught = _caught(fit)
    assert _categories(caught) == {pme.BaseFitWarning}
    assert any("falling back to mean-field" in text for _, text in caught)


def test_cross_check_warning_for_mixed_methods():
    ests = {"a": EvidenceEstimate(-1.0, 0.1, "smc"), "b": EvidenceEstimate(-2.0, 0.1, "ct")}
    _, caught = _caught(pme.bayes_factor, ests["a"], ests["b"])
    assert _categories(caught) == {pme.CrossCheckWarning}


def test_model_warning_when_reparametrization_skips_a_variable():
    with pm.Model() as model:
        a = pm.Normal("a", 0.0, 1.0)
        pm.Normal("c", 0.0, a)  # the scale may be negative: not rewritten
    _, caught = _caught(reparametrize, model)
    assert [c for c, _ in caught] == [pme.ModelWarning] and "'c' is not rewritten" in caught[0][1]


# -- the package logger --------------------------------------------------------------------

_INFO = (
    "import pymc_evidence.methods.ct as ct\n"
    "ct._log.info('CT adaptation round 1: hello')\n"  # the logger methods/ct.py writes to
)


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True
    )
    return done.stderr


def test_info_lines_show_by_default_and_user_config_wins():
    default = _run(_INFO)
    assert "CT adaptation round 1: hello" in default.splitlines()
    configured = _run(
        "import logging\n"
        "logging.basicConfig(level=logging.WARNING, format='ROOT %(levelname)s %(message)s')\n"
        + _INFO
        + "import logging\n"
        "log = logging.getLogger('pymc_evidence')\n"
        "assert not log.handlers and log.level == logging.NOTSET\n"
        "log.warning('shown once')\n"
    )
    assert "hello" not in configured
    assert configured.splitlines().count("ROOT WARNING shown once") == 1
    assert "shown once" in configured and configured.count("shown once") == 1
