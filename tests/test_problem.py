"""The evidence problem and the method registry: seeds, option checks, determinism."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import warnings

import numpy as np
import pymc as pm
import pytest

import pymc_evidence as pme
from pymc_evidence.api.sample import _split_options
from pymc_evidence.methods import REGISTRY, ProblemOptions, get_method, resolve_options
from pymc_evidence.problem import STREAMS, EvidenceProblem, SamplingArgs, seed_sequence
from pymc_evidence.testing import beta_bernoulli, conjugate_regression
from tests._accuracy import assert_log_z

FAST = {
    "smc": dict(n_particles=200, n_runs=2, base="prior"),
    "ais": dict(n_particles=64, n_stages=30, base="prior"),
    "bridge": dict(draws=200, tune=200, chains=2),
}


def _small():
    return conjugate_regression(n=20, d=2, seed=3)


def _run(case, method, seed, **extra):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pme.sample_evidence(
            case.model, method, random_seed=seed, progressbar=False, **FAST[method], **extra
        )
    est = pme.log_evidence(idata)
    return est.log_z, est.se


def test_registry_is_the_method_list():
    assert dict(pme.METHODS) == {name: spec.description for name, spec in REGISTRY.items()}
    assert set(REGISTRY) == {
        "ct", "gibbs_ct", "st", "ais", "rais", "bar", "lis", "smc", "arm", "bridge",
    }  # fmt: skip


def test_unknown_option_is_refused_before_any_work(monkeypatch):
    def boom(*args, **kwargs):
        raise AssertionError("work started despite an invalid option")

    monkeypatch.setattr(pm, "sample", boom)
    monkeypatch.setattr("pymc_evidence.problem.fit_record", boom)
    case = _small()
    for method in REGISTRY:
        with pytest.raises(TypeError, match="valid options"):
            pme.sample_evidence(case.model, method, not_an_option=1, progressbar=False)
    with pytest.raises(TypeError, match="base"):  # bridge starts from no base
        pme.sample_evidence(case.model, "bridge", base="prior", progressbar=False)
    with pytest.raises(ValueError, match="schedule"):
        pme.sample_evidence(case.model, "ais", schedule="cosine", progressbar=False)


def test_resolve_options_fills_defaults():
    options = resolve_options(get_method("lis"), {"n_particles": 32, "reparam": None})
    assert options.n_particles == 32 and options.direction == "bridged"
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.n_particles = 64
    shared = ProblemOptions.from_keywords({"n_particles": 32, "reparam": None})
    assert shared.base == "auto" and shared.potentials is None and shared.reparam is None


def test_options_are_typed_and_checked_once():
    """Counts become ints as the options are made; a bad value is refused then, with the
    message the checks always gave; the attributes stored come from the options."""
    options = resolve_options(get_method("ais"), {"n_stages": 50.0, "schedule": [0, 0.5, 1]})
    assert options.n_stages == 50 and type(options.n_stages) is int
    assert options.to_attrs() == {
        "n_particles": 256, "n_stages": 50, "max_stages": 3200, "n_leapfrog": 10,
        "schedule": "custom",
    }  # fmt: skip
    with pytest.raises(ValueError, match="n_particles must be >= 2 and n_runs >= 1"):
        resolve_options(get_method("smc"), {"n_runs": 0})
    with pytest.raises(TypeError, match="did you mean 'n_particles'"):
        pme.sample_evidence(_small().model, "smc", n_particle=10, progressbar=False)
    # one record of the problem options, whichever method comes first
    specs = [get_method("bridge"), get_method("smc")]
    shared, per_method = _split_options(specs, {"base": "prior"})
    assert shared.base == "prior" and per_method[1] == get_method("smc").options()
    assert type(per_method[0]).__name__ == "BridgeOptions"


def test_streams_are_fixed_children_of_the_seed():
    problem = EvidenceProblem.build(_small().model, random_seed=5, base="prior", fit="base")
    draws = {s: problem.rng(s).random() for s in STREAMS}
    assert len(set(draws.values())) == len(STREAMS)  # independent streams
    again = EvidenceProblem.build(_small().model, random_seed=5, base="prior", fit="base")
    # a stream does not depend on which others were used, nor in which order
    assert again.rng("resample").random() == draws["resample"]
    assert again.int_seed("nuts") == problem.int_seed("nuts")
    assert seed_sequence(np.random.SeedSequence(5)).entropy == 5
    # each method of a cross-check draws its own "method" stream; other streams are shared
    view = again.for_method(1)
    assert view.rng("method").random() != draws["method"]
    assert view.rng("base").random() == draws["base"]
    assert again.for_method(0).rng("method").random() == draws["method"]
    # the views share the fitted base and the reference runs; the problem cannot be changed
    assert view.base is again.base and view.references is again.references
    with pytest.raises(AttributeError):
        again.method_slot = 1


def test_sampling_args_are_checked():
    with pytest.raises(ValueError, match="draws"):
        SamplingArgs(draws=0)
    with pytest.raises(ValueError, match="tune"):
        SamplingArgs(tune=-1)


@pytest.mark.parametrize("method", sorted(FAST))
def test_same_seed_same_number_in_one_process(method):
    case = _small()
    first = _run(case, method, 11)
    _run(beta_bernoulli(n=10, heads=3), "smc", 2)  # other work in between
    assert _run(case, method, 11) == first
    assert _run(case, method, 12) != first


_SCRIPT = """
import json, sys, warnings
warnings.simplefilter("ignore")
import pymc_evidence as pme
from pymc_evidence.testing import conjugate_regression
case = conjugate_regression(n=20, d=2, seed=3)
method, options = sys.argv[1], json.loads(sys.argv[2])
idata = pme.sample_evidence(case.model, method, random_seed=11, progressbar=False, **options)
est = pme.log_evidence(idata)
print(json.dumps([est.log_z, est.se]))
"""


@pytest.mark.parametrize("method", ["smc", "bridge"])
def test_same_seed_same_number_in_a_fresh_process(method):
    out = subprocess.run(
        [sys.executable, "-c", _SCRIPT, method, json.dumps(FAST[method])],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    assert tuple(json.loads(out.stdout.strip().splitlines()[-1])) == _run(_small(), method, 11)


def test_cores_do_not_change_the_number():
    case = _small()
    assert _run(case, "bridge", 3, cores=1) == _run(case, "bridge", 3, cores=2)


def test_st_results_describe_their_own_resampling():
    """ST's posterior was once labelled as resampled from CT draws."""
    case = beta_bernoulli(n=10, heads=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pme.sample_evidence(
            case.model, "st", draws=100, tune=200, chains=1, n_levels=4, base="prior",
            random_seed=1, progressbar=False,
        )  # fmt: skip
    note = pme.compat.get_group(idata, "posterior").attrs["pymc_evidence_note"]
    assert "simulated-tempering" in note and "CT" not in note


def test_cross_check_shares_the_problem_and_combines():
    case = _small()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pme.sample_evidence(
            case.model, ["smc", "bridge"], draws=300, tune=300, chains=2, base="prior",
            n_particles=300, n_runs=2, random_seed=4, progressbar=False,
        )  # fmt: skip
    est = pme.log_evidence(idata)
    assert est.method == "smc+bridge" and est.n_chains == 2
    group = pme.compat.get_group(idata, "log_evidence")
    assert group.attrs["methods"] == "smc,bridge"
    assert group["method"].values.tolist() == ["smc", "bridge"]  # each run named
    assert_log_z(est, case.log_z, abs_tol=0.1)
    # the printed estimate shows what each method gave, read back from the results
    smc, bridge = est.per_chain_log_z
    assert f"smc {smc:.3f} ± " in str(est) and f", bridge {bridge:.3f} ± " in str(est)


def test_cross_check_refuses_an_option_no_method_takes():
    with pytest.raises(TypeError, match="unknown option"):
        pme.sample_evidence(_small().model, ["smc", "bridge"], bogus=1, progressbar=False)


def test_reparametrized_model_is_reused_until_the_data_change():
    """One non-centred copy per model (its compiled functions serve later calls), made anew
    when a data container changes (the copy holds copies of the data)."""
    import numpy as np
    import pymc as pm

    with pm.Model() as model:
        y = pm.Data("y", np.array([1.0, -0.5, 2.0]))
        mu = pm.Normal("mu", 0.0, 1.0)
        tau = pm.HalfNormal("tau", 1.0)
        theta = pm.Normal("theta", mu, tau, shape=3)
        pm.Normal("obs", theta, 1.0, observed=y)
    first = EvidenceProblem.build(model, random_seed=1).model
    assert first is not model and EvidenceProblem.build(model, random_seed=2).model is first
    with model:
        pm.set_data({"y": np.array([0.0, 0.0, 3.0])})
    again = EvidenceProblem.build(model, random_seed=1).model
    assert again is not first
    np.testing.assert_allclose(again["y"].get_value(), [0.0, 0.0, 3.0])
