"""Progress bars (pymc_evidence.progress) and the ``progressbar``/``callback`` plumbing.

A disabled bar prints nothing and hands the loops ``None``; an enabled one draws and ends on
its final state; and a bar never changes a result: the same seed gives identical numbers
with and without one.
"""

from __future__ import annotations

import re
from io import StringIO

import numpy as np
import pytest
import rich.console
from rich.console import Console

import pymc_evidence as pme
from pymc_evidence import progress
from pymc_evidence.compat import get_group
from pymc_evidence.engines import (
    KernelSettings,
    LinkSettings,
    run_forward_ais,
    run_lis,
    run_reverse_ais,
    sigmoidal_schedule,
)
from pymc_evidence.progress import progress_bar, progress_bars, smc_progress


def _terminal():
    out = StringIO()
    return out, Console(file=out, force_terminal=True, width=100)


def test_disabled_bars_yield_none_and_print_nothing(capsys):
    with progress_bars(["a", "b"], [3, None], enabled=False) as updates:
        assert updates == [None, None]
    with smc_progress(False, 3) as bars:
        assert [bars.callback_for(r) for r in range(3)] == [None, None, None]
        bars.done(0)
    assert capsys.readouterr() == ("", "")


def test_enabled_bar_draws_and_finishes():
    out, console = _terminal()
    with progress_bar("AIS forward", 7, console=console) as update:
        for stage in range(1, 8):
            update(stage)
        assert console.is_terminal and console._live_stack  # live while inside
    assert not console._live_stack  # the live display has stopped
    text = out.getvalue()
    assert "AIS forward" in text and "7/7" in text
    assert text.rstrip().endswith("\x1b[?25h")  # the cursor is given back at the end


def test_throttled_updates_still_end_on_the_last_state():
    """With a huge interval only the first update is drawn live; the exit draws the last."""
    out, console = _terminal()
    with progress_bar("run", console=console, interval=1e9) as update:
        for done in range(1, 51):
            update(done, 50)
    text = out.getvalue()
    assert "50/50" in text and "49/50" not in text


def test_unknown_total_is_set_by_the_first_update():
    out, console = _terminal()
    with progress_bar("pilot", console=console) as update:
        update(3, 40)
    assert "3/40" in out.getvalue()


def test_mismatched_totals_raise():
    with pytest.raises(ValueError, match="2 descriptions but 1 totals"):
        with progress_bars(["a", "b"], [1]):
            pass


def test_smc_bars_show_stage_and_beta():
    out = StringIO()
    with smc_progress(True, 3, console=Console(file=out, width=100)) as bars:
        for run in range(2):
            callback = bars.callback_for(run)
            for stage, beta in enumerate([0.1, 0.4, 1.0], start=1):
                callback(beta, stage)
        bars.done(2)  # a run finished in a worker process: no stages seen, full bar
    lines = out.getvalue().splitlines()  # not a terminal: the final state, once
    assert len(lines) == 3
    assert "SMC run 0, stage 3" in lines[0] and "SMC run 1, stage 3" in lines[1]
    assert "SMC run 2 " in lines[2]
    assert all("beta 1.000" in line for line in lines)


@pytest.mark.parametrize("widgets", [True, False])
def test_jupyter_without_ipywidgets_prints_the_final_state(monkeypatch, widgets):
    """rich draws live Jupyter bars only through ipywidgets; without them, plain output."""
    monkeypatch.setattr(rich.console, "_is_jupyter", lambda: True)
    monkeypatch.setattr(progress, "_has_ipywidgets", lambda: widgets)
    assert progress._console(StringIO()).is_jupyter is widgets


def test_ais_engines_call_back_once_per_stage_and_results_do_not_change(tiny):
    model, base, density = tiny
    betas = sigmoidal_schedule(12)
    calls = []

    def forward(callback):
        rng = np.random.default_rng(3)
        return run_forward_ais(
            density, base, betas, 16, rng, KernelSettings(n_leapfrog=3), callback=callback
        )

    (w_plain, info_plain), (w_bar, info_bar) = forward(None), forward(lambda *a: calls.append(a))
    assert calls == [(k, 12) for k in range(1, 13)]
    np.testing.assert_array_equal(w_plain, w_bar)
    np.testing.assert_array_equal(info_plain.x, info_bar.x)
    calls.clear()
    kernel = KernelSettings(step_size=info_plain.step_size, n_leapfrog=3, scale=info_plain.scale)
    rev = [
        run_reverse_ais(density, betas, info_plain.x, np.random.default_rng(4), kernel, callback=c)
        for c in (None, lambda *a: calls.append(a))
    ]
    assert calls == [(k, 12) for k in range(1, 13)]
    np.testing.assert_array_equal(rev[0][0], rev[1][0])


def test_lis_engine_calls_back_once_per_chain(tiny):
    model, base, density = tiny
    calls = []
    out = [
        run_lis(
            density,
            [0.0, 0.5, 1.0],
            base.sample(8, np.random.default_rng(5)),
            np.random.default_rng(6),
            KernelSettings(step_size=1.0, n_leapfrog=2, scale=None),
            LinkSettings(chain_length=3),
            callback=c,
        )[0]
        for c in (None, lambda *a: calls.append(a))
    ]
    assert calls == [(1, 3), (2, 3), (3, 3)]
    np.testing.assert_array_equal(out[0], out[1])


def _ais(model, progressbar):
    result = pme.sample_evidence(
        model,
        "ais",
        base="prior",
        n_particles=32,
        n_stages=15,
        n_leapfrog=3,
        random_seed=11,
        progressbar=progressbar,
    )
    return get_group(result, "log_evidence")


def test_ais_method_silent_without_bar_and_identical_with_it(tiny, capsys):
    model = tiny[0]
    quiet = _ais(model, False)
    assert capsys.readouterr() == ("", "")
    shown = _ais(model, True)
    text = capsys.readouterr().out
    assert "AIS forward" in text and "15/15" in text
    np.testing.assert_array_equal(quiet["work_forward"], shown["work_forward"])
    assert float(quiet["log_marginal_likelihood"]) == float(shown["log_marginal_likelihood"])


def test_fit_base_progressbar(tiny, capsys):
    model = tiny[0]
    kwargs = dict(restarts=2, n_steps=300, random_seed=2, model=model)
    quiet = pme.fit_base(progressbar=False, **kwargs)
    assert capsys.readouterr() == ("", "")
    shown = pme.fit_base(**kwargs)  # on by default, as pm.fit
    text = capsys.readouterr().out
    assert "ADVI base, 2 restarts" in text
    assert re.search(r"Preparing the model\s.* 2/2 ", text)  # prior draws, compilation
    assert re.search(r" (\d+)/\1 ", text)  # ended on its (early-stopped) total
    np.testing.assert_array_equal(quiet.mean, shown.mean)
    assert quiet.log_zeta == shown.log_zeta
