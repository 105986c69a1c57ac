"""Issue 25, point 6: a tempered trace is never taken for a posterior sample.

``pm.sample`` with :class:`pme.GibbsContinuousTempering`, :class:`pme.SimulatedTempering` or
on the model of :func:`pme.continuous_tempering` returns tempered draws in its ``posterior``
group. Building the step (or the extended model) warns and names the reader; the methods of
this package that need posterior draws refuse such a trace; ``sample_evidence``, which reads
its own traces, does not warn.
"""

import warnings

import numpy as np
import pymc as pm
import pytest
import xarray as xr

import pymc_evidence as pme
from pymc_evidence import GaussianBase
from pymc_evidence.compat import get_group, new_idata
from pymc_evidence.methods._particles import reverse_start
from pymc_evidence.methods.st_trace import refuse_tempered
from pymc_evidence.problem import EvidenceProblem
from pymc_evidence.results.schema import estimate_to_dataset
from pymc_evidence.runtime import model_space


def _model():
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu, 1.0, observed=[0.3, -0.1])
    return model


def _base(model):
    space = model_space(model)
    return GaussianBase(
        np.zeros(1), np.eye(1), -2.5, "moments", names=space.names, sizes=space.sizes
    )


BUILDERS = {
    "gibbs": (lambda m, b, **kw: pme.GibbsContinuousTempering(base=b, model=m, **kw)),
    "st": (lambda m, b, **kw: pme.SimulatedTempering(base=b, model=m, n_levels=4, **kw)),
    "joint": (lambda m, b, **kw: pme.continuous_tempering(b, model=m, **kw)),
}
READERS = {
    "gibbs": "pme.ct_evidence(trace)",
    "st": "pme.st_evidence(trace, step)",
    "joint": "pme.ct_evidence(trace, ext)",
}


@pytest.mark.parametrize("kind", list(BUILDERS))
def test_building_warns_and_names_the_reader(kind):
    model = _model()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        BUILDERS[kind](model, _base(model))
    ours = [w for w in caught if issubclass(w.category, pme.EvidenceWarning)]
    assert len(ours) == 1
    text = str(ours[0].message)
    assert "tempered draws" in text and "az.summary" in text and READERS[kind] in text
    assert ours[0].filename == __file__  # points at the user's line


@pytest.mark.parametrize("kind", list(BUILDERS))
def test_warn_tempered_false_is_silent(kind):
    model = _model()
    with warnings.catch_warnings():
        warnings.simplefilter("error", pme.EvidenceWarning)
        BUILDERS[kind](model, _base(model), warn_tempered=False)


def test_sample_evidence_reads_its_own_traces_without_the_warning():
    model = _model()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        idata = pme.sample_evidence(
            model,
            method="st",
            base=_base(model),
            n_levels=4,
            draws=60,
            tune=60,
            chains=1,
            random_seed=1,
            progressbar=False,
        )
    assert not [w for w in caught if "tempered draws" in str(w.message)]
    assert pme.log_evidence(idata).method == "st"
    with pytest.raises(TypeError, match="warn_tempered"):  # not a sample_evidence option
        pme.sample_evidence(model, method="st", warn_tempered=True)


def _raw(kind):
    """A fake raw trace of each tempering run: the variables that mark it."""
    draws = np.zeros((2, 10))
    posterior = {"mu": (("chain", "draw"), draws)}
    stats = {"diverging": (("chain", "draw"), draws.astype(bool))}
    if kind == "joint":
        posterior["ct_delta"] = (("chain", "draw"), draws)
    elif kind == "gibbs":
        stats["ct_delta"] = (("chain", "draw"), draws)
    else:
        stats["st_q_0"] = (("chain", "draw"), draws)
    return new_idata({"posterior": xr.Dataset(posterior), "sample_stats": xr.Dataset(stats)})


@pytest.mark.parametrize("kind", list(BUILDERS))
def test_raw_traces_are_refused_as_posterior_draws(kind):
    model, raw = _model(), _raw(kind)
    reader = "pme.st_evidence" if kind == "st" else "pme.ct_evidence"
    with pytest.raises(ValueError, match=reader):
        pme.bridge_sampling(raw, model)
    with pytest.raises(ValueError, match="tempered draws"):
        pme.sample_evidence(model, method="bridge", posterior=raw, progressbar=False)
    problem = EvidenceProblem.build(model, base=_base(model), reparam=None)
    with pytest.raises(ValueError, match=reader):
        reverse_start(problem, raw, 4, np.random.default_rng(0))


def test_results_and_plain_traces_are_not_refused():
    raw = _raw("gibbs")
    est = pme.EvidenceEstimate(-1.0, 0.1, "gibbs_ct")
    groups = {name: get_group(raw, name) for name in ("posterior", "sample_stats")}
    result = new_idata({**groups, "log_evidence": estimate_to_dataset(est)})
    refuse_tempered(result, "test")  # a result: its posterior is resampled
    plain = new_idata({"posterior": xr.Dataset({"mu": (("chain", "draw"), np.zeros((2, 10)))})})
    refuse_tempered(plain, "test")
    refuse_tempered(xr.Dataset(), "test")  # not sampling results: the caller's checks say so
