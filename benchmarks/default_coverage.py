#!/usr/bin/env python
"""The default method over ten seeds on models with known log Z: ±2 se coverage and errors.

Models are the names of ``registry.py``: its families (``first_call``, ``more``, ``user``,
...), ``pymc_evidence.testing`` factories (``egg_box``, ``gaussian_shells``, ...), sized
models (``poisson:1000``) and ``bambi:J``. One process;
the first seed pays the compilation. Run from the repository root::

    PYTHONPATH=. .venv/bin/python benchmarks/default_coverage.py mixture_2,mixture_3,egg_box
    PYTHONPATH=. .venv/bin/python benchmarks/default_coverage.py mixture_3 1,2,3 n_moves=5
    PYTHONPATH=. .venv/bin/python benchmarks/default_coverage.py poisson:1000,gauss:2000
    PYTHONPATH=. .venv/bin/python benchmarks/default_coverage.py bambi:12 $(seq -s, 1 20)

A third argument sets options of the default method (``name=value``, comma-separated,
values read as Python literals). Each line also gives the median time of a call after
the first (the first pays the compilation).
"""

from __future__ import annotations

import ast
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def model_and_truth(name: str):
    """``(model, log_z)`` of a name of ``registry.py``."""
    from registry import build

    return build(name)


def coverage(name: str, seeds=range(1, 11), options=None) -> str:
    """One line: ±2 se coverage, the largest error, the mean error, the errors' spread
    against the mean se, the median se and the median time of the calls after the first;
    ``options`` go to the default method."""
    import pymc_evidence as pme

    model, truth = model_and_truth(name)
    errs, ses, times = [], [], []
    for seed in seeds:
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata = pme.sample_evidence(
                model=model, random_seed=seed, progressbar=False, **(options or {})
            )
        est = pme.log_evidence(idata)
        times.append(time.perf_counter() - start)
        errs.append(est.log_z - truth)
        ses.append(est.se)
    errs, ses = np.array(errs), np.array(ses)
    return (
        f"{name}: coverage {np.mean(np.abs(errs) <= 2 * ses):.1f}, "
        f"max |err| {np.max(np.abs(errs)):.3f}, mean err {errs.mean():+.3f}, "
        f"sd of errors {np.std(errs, ddof=1) if len(errs) > 1 else np.nan:.3f}, "
        f"mean se {ses.mean():.3f}, median se {np.median(ses):.3f}, "
        f"max |err|/se {np.max(np.abs(errs) / ses):.1f}, "
        f"warm median {np.median(times[1:] or times):.2f} s"
    )


def _options(text: str) -> dict:
    """``"a=1,b=x"`` -> ``{"a": 1, "b": "x"}`` (values as Python literals, else strings)."""
    out = {}
    for item in filter(None, text.split(",")):
        key, value = item.split("=", 1)
        try:
            out[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            out[key] = value
    return out


if __name__ == "__main__":
    chosen = range(1, 11) if len(sys.argv) < 3 else [int(s) for s in sys.argv[2].split(",")]
    chosen_options = _options(sys.argv[3]) if len(sys.argv) > 3 else {}
    for model_name in sys.argv[1].split(","):
        print(coverage(model_name, chosen, chosen_options), flush=True)
