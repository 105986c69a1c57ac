"""The SimulatedTempering step (:mod:`pymc_evidence.steps.simulated_tempering`) in a user's
``pm.sample``: its estimate, argument checks, and chains independent of ``cores`` (also for
:class:`pme.GibbsContinuousTempering`, whose temperature is part of each chain's state)."""

import numpy as np
import pymc as pm
import pytest
from pymc.step_methods.compound import Competence

import pymc_evidence as pme
from pymc_evidence.compat import get_group
from pymc_evidence.testing import models as tm
from tests._accuracy import assert_log_z


def test_step_in_plain_pm_sample_multiprocess():
    """The stepper inside pm.sample (cores=2); the estimate is read from the recorded stats.

    The weights start 3 nats off at the target end, so adaptation must do the work.
    """
    case = tm.beta_bernoulli()
    with case.model:
        base = pme.fit_base(random_seed=1)
        betas = np.linspace(0.0, 1.0, 12)
        step = pme.SimulatedTempering(base=base, betas=betas, log_zhat=betas * (base.log_zeta - 3))
        assert step.competence(case.model.value_vars[0], True) == Competence.INCOMPATIBLE
        raw = pm.sample(
            800,
            tune=800,
            step=step,
            chains=2,
            cores=2,
            random_seed=2,
            progressbar=False,
            compute_convergence_checks=False,
        )
    est = pme.log_evidence(raw)
    assert_log_z(est, case.log_z, abs_tol=0.1, se_max=0.1, label="user step, cores=2")
    levels = raw.sample_stats["st_level"].values
    assert levels.min() == 0 and levels.max() == 11
    idata = pme.st_evidence(raw, step)
    assert np.allclose(get_group(idata, "log_evidence")["beta"].values, betas)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"betas": [0.1, 0.5, 1.0]}, "start"),
        ({"betas": [0.0, 0.6, 0.5, 1.0]}, "increasing"),
        ({"n_levels": 4, "log_r": np.log([0.5, 0.5, 0.5, 0.5])}, "log_r"),
        ({"n_levels": 4, "log_zhat": [0.0, 1.0]}, "log_zhat"),
        ({"adapt_damping": 0.0}, "adapt_damping"),
    ],
)
def test_bad_arguments(kwargs, match):
    case = tm.beta_bernoulli()
    base = pme.fit_base(model=case.model, random_seed=0)
    with pytest.raises(ValueError, match=match):
        pme.SimulatedTempering(base=base, model=case.model, **kwargs)


def _st_trace(case, base, cores):
    """A fresh stepper (6 levels, weights 2 nats off, blocks of 20), two chains, tuning kept."""
    with case.model:
        betas = np.linspace(0.0, 1.0, 6)
        step = pme.SimulatedTempering(
            base=base, betas=betas, log_zhat=betas * (base.log_zeta - 2), adapt_block=20
        )
        raw = pm.sample(
            60,
            tune=120,
            step=step,
            chains=2,
            cores=cores,
            random_seed=11,
            discard_tuned_samples=False,
            progressbar=False,
            compute_convergence_checks=False,
        )
    return step, raw


def _stats(raw, name):
    """Warm-up then kept values of one statistic, shape (chain, tune + draws)."""
    parts = [get_group(raw, g)[name].values for g in ("warmup_sample_stats", "sample_stats")]
    return np.concatenate(parts, axis=1)


def test_chains_independent_with_one_core():
    """cores=1 runs the chains one after the other with one stepper: each chain must start
    from the stepper's initial state (level, starting weights, fresh adaptation), exactly as
    with cores=2, where every chain has its own copy of the stepper."""
    case = tm.beta_bernoulli()
    base = pme.fit_base(model=case.model, random_seed=1)
    step, serial = _st_trace(case, base, cores=1)
    _, parallel = _st_trace(case, base, cores=2)
    start = float(step.betas[-1] * (base.log_zeta - 2))  # log Zhat_K - log Zhat_0 at start
    norm = _stats(serial, "st_log_norm")
    np.testing.assert_allclose(norm[:, 0], start, rtol=1e-12)  # both chains, first draw
    assert np.ptp(norm[0]) > 0.1  # chain 0 did adapt its weights during tuning
    np.testing.assert_array_equal(_stats(serial, "st_level"), _stats(parallel, "st_level"))
    for name in ("st_log_norm", "st_delta", "step_size"):
        np.testing.assert_allclose(_stats(serial, name), _stats(parallel, name), rtol=1e-8)
    np.testing.assert_allclose(
        get_group(serial, "posterior")["p"].values,
        get_group(parallel, "posterior")["p"].values,
        rtol=1e-8,
    )


def test_gibbs_ct_chains_independent_with_one_core():
    """The same for GibbsContinuousTempering: its temperature is part of each chain's state
    (chain 1 used to start at the temperature chain 0 ended at with cores=1)."""
    case = tm.beta_bernoulli()
    base = pme.fit_base(model=case.model, random_seed=1)
    traces = []
    for cores in (1, 2):
        with case.model:
            step = pme.GibbsContinuousTempering(base=base, warn_tempered=False)
            traces.append(
                pm.sample(
                    100,
                    tune=100,
                    step=step,
                    chains=2,
                    cores=cores,
                    random_seed=3,
                    discard_tuned_samples=False,
                    progressbar=False,
                    compute_convergence_checks=False,
                )  # fmt: skip
            )
    serial, parallel = (_stats(t, "ct_beta") for t in traces)
    np.testing.assert_allclose(serial, parallel, rtol=1e-8)
