"""PyMC's sampling arguments reach every NUTS run, and are refused where nothing runs NUTS.

``pm.sample`` is wrapped (not replaced) so the tests see what each method passed to it and
the runs still happen; accuracy on an exact model is checked where a run completes.
"""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytest

import pymc_evidence as pme
import pymc_evidence.nuts as nuts_module
from pymc_evidence.compat import get_group, group_names
from pymc_evidence.nuts import SamplingArgs
from pymc_evidence.testing import beta_bernoulli, conjugate_regression
from tests._accuracy import assert_log_z

SMALL = dict(draws=200, tune=200, chains=2, progressbar=False, random_seed=3)


@pytest.fixture
def calls(monkeypatch):
    """Every ``pm.sample`` call made through :mod:`pymc_evidence.nuts`, as keyword dicts."""
    seen = []
    real = pm.sample

    def spy(*args, **kwargs):
        seen.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(nuts_module.pm, "sample", spy)
    yield seen
    monkeypatch.setattr(nuts_module.pm, "sample", real)


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def test_posterior_run_gets_target_accept_and_nuts_kwargs(calls):
    case = conjugate_regression(n=20, d=2, seed=3)
    idata = _quiet(
        pme.sample_evidence,
        case.model,
        "bridge",
        target_accept=0.9,
        nuts_sampler="pymc",
        nuts_sampler_kwargs={"max_treedepth": 6},
        compile_kwargs={"mode": "FAST_RUN"},
        **SMALL,
    )
    (call,) = calls
    assert call["nuts"] == {"target_accept": 0.9, "max_treedepth": 6}
    assert call["compile_kwargs"] == {"mode": "FAST_RUN"} and call["draws"] == 200
    assert get_group(idata, "log_evidence").attrs["nuts_sampler"] == "pymc"
    assert_log_z(pme.log_evidence(idata), case.log_z, abs_tol=0.1)


#: NUTS arguments a user passes; the tempering steps must receive them.
USER_NUTS = dict(target_accept=0.9, nuts_sampler_kwargs={"max_treedepth": 7})


def _with_user_nuts(method, **extra):
    case = beta_bernoulli()
    idata = _quiet(pme.sample_evidence, case.model, method, **USER_NUTS, **SMALL, **extra)
    return case, idata


def test_ct_step_keeps_base_mass_matrix_and_takes_user_arguments(calls):
    case, idata = _with_user_nuts("ct", adapt_rounds=1, initvals={"p": np.asarray(0.3)})
    assert len(calls) == 2  # one adaptation round, one final run
    for call in calls:
        step = call["step"]
        assert step.target_accept == 0.9 and step.max_treedepth == 7
        assert type(step.potential).__name__ == "QuadPotentialDiagAdapt"
        assert len(call["initvals"]) == 2
        for point in call["initvals"]:
            assert "ct_u" in point
            np.testing.assert_allclose(point["p"], 0.3)
    assert_log_z(pme.log_evidence(idata), case.log_z, abs_tol=0.1)


def test_step_methods_pass_nuts_kwargs_to_the_step(calls):
    _with_user_nuts("gibbs_ct", adapt_rounds=0)
    (call,) = calls
    assert call["step"].target_accept == 0.9 and call["step"].max_treedepth == 7


@pytest.mark.parametrize("method", ["st", "gibbs_ct"])
def test_step_methods_refuse_other_backends_before_work(method, calls):
    with pytest.raises(ValueError, match="PyMC's own sampler"):
        pme.sample_evidence(beta_bernoulli().model, method, nuts_sampler="numpyro")
    assert calls == []


@pytest.mark.parametrize(
    "bad, error",
    [
        ({"nuts_sampler": "stan"}, ValueError),
        ({"target_accept": 1.5}, ValueError),
        ({"cores": 0}, ValueError),
        ({"compile_kwargs": "fast"}, TypeError),
    ],
)
def test_bad_sampling_arguments_are_refused(bad, error):
    with pytest.raises(error):
        SamplingArgs.from_call(**bad)


def test_initvals_must_match_chains():
    case = beta_bernoulli()
    with pytest.raises(ValueError, match="initvals holds 3 points for 2 chains"):
        _quiet(pme.sample_evidence, case.model, "bridge", initvals=[{}, {}, {}], **SMALL)


@pytest.mark.parametrize("method", ["smc", "bridge"])
def test_log_likelihood_group_on_request(method):
    case = beta_bernoulli()
    sizes = dict(n_particles=200, n_runs=2) if method == "smc" else dict(draws=200, chains=2)
    idata = _quiet(
        pme.sample_evidence,
        case.model,
        method,
        idata_kwargs={"log_likelihood": True},
        progressbar=False,
        random_seed=1,
        **sizes,
    )
    assert "log_likelihood" in group_names(idata)
    loglik = get_group(idata, "log_likelihood")
    posterior = get_group(idata, "posterior")
    assert loglik["y"].sizes["chain"] == posterior.sizes["chain"]
    assert np.all(np.isfinite(loglik["y"].values))


def test_smc_runs_give_the_same_number_whatever_cores():
    case = conjugate_regression(n=20, d=2, seed=3)
    kwargs = dict(n_particles=200, n_runs=3, base="prior", random_seed=9, progressbar=False)
    one = pme.log_evidence(_quiet(pme.sample_evidence, case.model, "smc", cores=1, **kwargs))
    two = pme.log_evidence(_quiet(pme.sample_evidence, case.model, "smc", cores=2, **kwargs))
    assert (one.log_z, one.se) == (two.log_z, two.se)
    assert one.diagnostics["n_particle_moves"] == two.diagnostics["n_particle_moves"]
    assert one.diagnostics["diverging_fraction"] == two.diagnostics["diverging_fraction"]


@pytest.mark.parametrize("method", ["bridge", "ct"])
def test_nutpie_backend(method):
    """Runs only where nutpie is installed (the ``backends`` extra)."""
    pytest.importorskip("nutpie")
    case = conjugate_regression(n=20, d=2, seed=3)
    extra = {"adapt_rounds": 1} if method == "ct" else {}
    idata = _quiet(pme.sample_evidence, case.model, method, nuts_sampler="nutpie", **SMALL, **extra)
    assert get_group(idata, "log_evidence").attrs["nuts_sampler"] == "nutpie"
    assert_log_z(pme.log_evidence(idata), case.log_z, abs_tol=0.1)


def test_nuts_attributes_name_the_runs_that_were_made():
    """``nuts_sampler``, ``draws``, ``tune`` and ``chains`` are recorded where a NUTS run was
    made (the problem's reference run, or a method's own), and only there."""
    case = conjugate_regression(n=20, d=2, seed=3)
    alone = _quiet(
        pme.sample_evidence, case.model, "smc", n_particles=128, random_seed=3, progressbar=False
    )
    assert not {"nuts_sampler", "draws"} & set(get_group(alone, "log_evidence").attrs)
    both = _quiet(pme.sample_evidence, case.model, ["smc", "bridge"], n_particles=128, **SMALL)
    attrs = get_group(both, "log_evidence").attrs
    assert attrs["nuts_sampler"] == "pymc" and attrs["draws"] == 200 and attrs["chains"] == 2
