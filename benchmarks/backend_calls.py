#!/usr/bin/env python
"""The batched log density + gradient of a model on each backend: compile time and the cost
of one call at 1, 8, 64 and 256 points (what ``backend="auto"`` chooses between).

Run from the repository root, one model per fresh process with an empty compile cache::

    PYTENSOR_FLAGS=base_compiledir=$(mktemp -d) PYTHONPATH=. \\
        .venv/bin/python benchmarks/backend_calls.py radon_varying_intercept_slope
    PYTENSOR_FLAGS=base_compiledir=$(mktemp -d) PYTHONPATH=. \\
        .venv/bin/python benchmarks/backend_calls.py mixture_2 jax

Models: the names of ``registry.py``, or ``radon_<name>`` for
``pymc_evidence.datasets.radon_models()``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def model_of(name: str):
    if name.startswith("radon_"):
        from pymc_evidence.datasets import radon_models

        return radon_models()[name[len("radon_") :]]
    from registry import build

    return build(name, truth=False)[0]


def time_backend(space, backend: str, rows=(1, 8, 64, 256), seconds: float = 0.5) -> str:
    """One line: compile + first call, then milliseconds per call at each row count."""
    from pymc_evidence.runtime.batched_logp import batched_logp

    start = time.perf_counter()
    density = batched_logp(space, backend=backend)
    x = space.initial_x() + 0.01 * np.random.default_rng(0).normal(size=(max(rows), space.ndim))
    density(x)
    out = [f"{backend}: compile+first {time.perf_counter() - start:.1f} s"]
    for n in rows:
        density(x[:n])
        start, k = time.perf_counter(), 0
        while time.perf_counter() - start < seconds:
            density(x[:n])
            k += 1
        out.append(f"{n}: {(time.perf_counter() - start) / k * 1e3:.2f} ms")
    return "  ".join(out)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    from pymc_evidence.runtime.runtime import model_space

    space = model_space(model_of(argv[0]))
    for backend in argv[1:] or ("jax", "default"):
        print(f"{argv[0]} (d={space.ndim}) {time_backend(space, backend)}", flush=True)


if __name__ == "__main__":
    main()
