"""The annealing engines as init/step kernels: one driver, one record vocabulary, values only.

Each family (forward and reverse AIS, LIS, SMC / ARM) is a frozen kernel whose
``step(rng, state) -> (state, StageInfo)`` the one driver (:func:`engines.anneal`) runs; the
run functions are that driver plus the stacking of the stages. These tests step the kernels
by hand and check that the runs give the same numbers, that the records share their names,
and that nothing a step changes lives on the kernel.
"""

import dataclasses

import numpy as np
import pytest

from pymc_evidence.engines import (
    AISInfo,
    AISKernel,
    KernelSettings,
    LinkSettings,
    LISInfo,
    ReverseAISInfo,
    SMCRunInfo,
    StageInfo,
    anneal,
    run_forward_ais,
    run_lis,
    run_reverse_ais,
    sigmoidal_schedule,
    stack,
)
from pymc_evidence.engines.smc import ResampleMove, SMCSettings, run_resample_move
from pymc_evidence.engines.smc_kernel import Kernel
from pymc_evidence.engines.stages import STAGE_FIELDS


def test_forward_ais_is_its_kernel_stepped_by_the_driver(tiny):
    _, base, density = tiny
    betas = sigmoidal_schedule(8)
    x0 = base.sample(64, np.random.default_rng(1))
    works, info = run_forward_ais(density, base, betas, 64, np.random.default_rng(2), x0=x0)
    kernel = AISKernel(density, betas, 1.0, KernelSettings(), np.ones(1), None)
    state, first = kernel.init(x0)
    rng, infos = np.random.default_rng(2), []
    while not state.done:  # the driver's loop, by hand
        state, stage = kernel.step(rng, state)
        infos.append(stage)
    np.testing.assert_array_equal(works, -state.log_w)
    arrays = stack([first, *infos])
    for key in (*STAGE_FIELDS, "mean_increment", "ess", "path_var"):
        np.testing.assert_array_equal(arrays[key], getattr(info, key), err_msg=key)
    assert state.stage == 8 and first.beta == 0.0 and infos[-1].n_moves == 0


def test_smc_is_its_kernel_stepped_by_the_driver(tiny):
    _, base, density = tiny
    x0 = base.sample(100, np.random.default_rng(3))
    settings = SMCSettings(schedule=sigmoidal_schedule(6))
    log_z, info = run_resample_move(density, x0, np.random.default_rng(4), settings)
    smc = ResampleMove(Kernel(density, settings), settings.checked_schedule())
    state, first = smc.init(x0)
    state, infos = anneal(smc.step, state, np.random.default_rng(4))
    assert len(infos) == 7  # six reweighting stages and the finishing moves at beta = 1
    np.testing.assert_array_equal(state.particles.x, info.x)
    total = sum(stage.values["log_increment"] for stage in infos[:-1])
    assert total == log_z and info.n_stages == 6
    # a stage's moves ran at the beta it started from: the record puts them there
    np.testing.assert_array_equal(info.acceptance[:-1], [s.acceptance for s in infos[:-1]])
    assert info.acceptance[-1] == infos[-1].acceptance and first.n_moves == 0


def test_every_record_names_its_stages_alike(tiny):
    """``beta``, ``acceptance``, ``step_size`` and ``n_moves``, one value per temperature."""
    _, base, density = tiny
    rng = np.random.default_rng(5)
    betas = sigmoidal_schedule(5)
    _, fwd = run_forward_ais(density, base, betas, 32, rng)
    kernel = KernelSettings(step_size=fwd.step_size, scale=fwd.scale)
    _, rev = run_reverse_ais(density, betas, base.sample(32, rng), rng, kernel)
    lis_kernel = KernelSettings(step_size=0.8, n_leapfrog=3, scale=None)
    _, lis = run_lis(density, [0, 0.5, 1], base.sample(16, rng), rng, lis_kernel, LinkSettings(4))
    _, smc = run_resample_move(density, base.sample(50, rng), rng)
    for record in (fwd, rev, lis, smc):
        fields = {f.name for f in dataclasses.fields(record)}
        assert set(STAGE_FIELDS) <= fields, type(record).__name__
        assert not {"betas", "step_sizes", "n_steps_per_stage"} & fields
        sizes = {np.shape(getattr(record, key)) for key in STAGE_FIELDS}
        assert sizes == {np.shape(record.beta)}, type(record).__name__
    # both AIS directions moved at the same temperatures with the same steps
    np.testing.assert_array_equal(rev.step_size, fwd.step_size)
    np.testing.assert_array_equal(rev.n_moves, fwd.n_moves)
    assert lis.n_moves.tolist() == [4 * 1, 4 * 1, 4 * 1]


def test_states_records_and_kernels_are_values():
    for cls in (AISInfo, ReverseAISInfo, LISInfo, SMCRunInfo, StageInfo, AISKernel, Kernel):
        assert cls.__dataclass_params__.frozen, cls.__name__
    stage = StageInfo(0.5, values={"ess": 3.0})
    with pytest.raises(TypeError):
        stage.values["ess"] = 4.0
    assert stack([StageInfo(0.0), stage])["ess"][0] != stack([stage])["ess"][0]  # nan first
