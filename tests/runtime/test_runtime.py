"""The model runtime (:mod:`pymc_evidence.runtime.runtime`): one per model, owner of its space,
compiled functions, prepared copies and backend; and the forked runs of
:mod:`pymc_evidence.methods._runs`, which need no module state."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import cloudpickle
import numpy as np
import pymc as pm
import pytest

from pymc_evidence.runtime import ModelRuntime, model_space, runtime_of
from pymc_evidence.runtime.batched_logp import batched_logp
from pymc_evidence.transforms import ct_spec, reparam_info


def _model():
    with pm.Model() as model:
        y = pm.Data("y", np.array([0.4, -0.2]))
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("obs", mu, 1.0, observed=y)
    return model


def test_one_runtime_per_model_owns_its_space_and_functions():
    model = _model()
    runtime = runtime_of(model)
    assert isinstance(runtime, ModelRuntime) and runtime_of(model) is runtime
    assert model_space(model) is runtime.space and runtime.space.runtime is runtime
    with model:
        assert runtime_of() is runtime  # the model in context
    density = batched_logp(runtime.space)
    assert density is batched_logp(model_space(model))  # compiled once, kept by the runtime
    assert runtime_of(model.copy()) is not runtime  # a copy starts its own


def test_backend_is_a_value_of_the_runtime():
    model = _model()
    assert runtime_of(model).backend == "auto"
    assert runtime_of(model, backend="default").backend == "default"
    assert batched_logp(model_space(model)).backend == "default"
    with pytest.raises(ValueError, match="backend must be one of"):
        runtime_of(model, backend="numba")


def test_prepared_copy_is_remade_when_the_data_change():
    model = _model()
    runtime = runtime_of(model)
    first = runtime.prepared("copy", pm.Model.copy)
    assert runtime.prepared("copy", pm.Model.copy) is first
    pm.set_data({"y": np.array([1.0, 2.0])}, model=model)
    assert runtime.prepared("copy", pm.Model.copy) is not first


def test_a_pickled_model_carries_an_empty_runtime():
    model = _model()
    runtime = runtime_of(model, backend="default")
    batched_logp(runtime.space)
    again = cloudpickle.loads(cloudpickle.dumps(model))
    fresh = runtime_of(again)
    assert fresh is not runtime and fresh.backend == "auto" and not fresh._compiled
    assert fresh.space.names == runtime.space.names


def test_origin_says_what_built_a_model():
    model = _model()
    with pytest.raises(ValueError, match="not built by pymc_evidence.continuous_tempering"):
        ct_spec(model)
    with pytest.raises(ValueError, match="not built by"):
        ct_spec("not a model")
    assert reparam_info(model) == {}


def test_forked_runs_match_runs_here_and_report_errors():
    """In a fresh interpreter (forking a process that ran JAX deadlocks): runs in two forked
    workers equal the runs here, a run's error is raised with its type, and a worker that
    dies is a RuntimeError rather than a hang."""
    script = textwrap.dedent(
        """
        import os
        import numpy as np
        from pymc_evidence.methods._runs import map_runs

        def run(index, seed, callback):
            return index, np.random.default_rng(seed).random(3).tolist()

        def bad(index, seed, callback):
            if index == 2:
                raise KeyError("run 2")
            return index

        def dies(index, seed, callback):
            if index == 1:
                os._exit(3)
            return index

        seeds = np.random.SeedSequence(5).spawn(5)
        done = []
        forked = map_runs(run, seeds, None, cores=2, on_done=done.append)
        print(forked == map_runs(run, seeds, None, cores=1), sorted(done))
        try:
            map_runs(bad, seeds, None, cores=2)
        except KeyError as err:
            print("KeyError", err)
        try:
            map_runs(dies, seeds, None, cores=2)
        except RuntimeError as err:
            print("RuntimeError", "died" in str(err))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True
    ).stdout.split("\n")
    assert out[:3] == ["True [0, 1, 2, 3, 4]", "KeyError 'run 2'", "RuntimeError True"]
