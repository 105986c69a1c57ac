#!/usr/bin/env python
"""The default method over ten seeds on models with known log Z: ±2 se coverage and errors.

Models are the names of ``first_call_models.MODELS``, ``more_models.MODELS``,
``user_models.MODELS`` or of
``pymc_evidence.testing`` factories (``egg_box``, ``gaussian_shells``, ...). One process;
the first seed pays the compilation. Run from the repository root::

    PYTHONPATH=. .venv/bin/python benchmarks/default_coverage.py mixture_2,mixture_3,egg_box
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def model_and_truth(name: str):
    """``(model, log_z)`` of a benchmark model (``first_call_models``, ``more_models``,
    ``user_models``) or a
    ``pymc_evidence.testing`` system."""
    from first_call_models import MODELS
    from more_models import MODELS as MORE
    from user_models import MODELS as USER

    if name in MODELS or name in MORE or name in USER:
        return {**MODELS, **MORE, **USER}[name]()
    import pymc_evidence.testing as systems

    system = getattr(systems, name)()
    return system.model, system.log_z


def coverage(name: str, seeds=range(1, 11)) -> str:
    """One line: ±2 se coverage, the largest error, the mean error and the median se."""
    import pymc_evidence as pme

    model, truth = model_and_truth(name)
    errs, ses = [], []
    for seed in seeds:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata = pme.sample_evidence(model=model, random_seed=seed, progressbar=False)
        est = pme.log_evidence(idata)
        errs.append(est.log_z - truth)
        ses.append(est.se)
    errs, ses = np.array(errs), np.array(ses)
    return (
        f"{name}: coverage {np.mean(np.abs(errs) <= 2 * ses):.1f}, "
        f"max |err| {np.max(np.abs(errs)):.3f}, mean err {errs.mean():+.3f}, "
        f"median se {np.median(ses):.3f}, max |err|/se {np.max(np.abs(errs) / ses):.1f}"
    )


if __name__ == "__main__":
    chosen = range(1, 11) if len(sys.argv) < 3 else [int(s) for s in sys.argv[2].split(",")]
    for model_name in sys.argv[1].split(","):
        print(coverage(model_name, chosen), flush=True)
