#!/usr/bin/env python
"""Same seed, same number, whatever PyTensor's compile cache holds? Measured, per tool.

For each tool, the same seeded call runs in three fresh processes: two sharing one new
compile directory (the first compiles into it, the second finds it warm), and a third with
another empty one. Each child prints the bits of its result; the table says whether the
warm-cache run matches the empty-cache ones.

Tools: ``logp`` (PyMC's compiled ``logp_dlogp_function`` at 50 fixed points, the function
NUTS calls), ``pm.sample`` (100 + 100 NUTS draws, one chain), and ``pme`` methods on a
3-component ``NormalMixture`` (``benchmarks/first_call_models.py``)::

    PYTHONPATH=. .venv/bin/python benchmarks/cache_determinism.py
    PYTHONPATH=. .venv/bin/python benchmarks/cache_determinism.py --tools logp,smc,ct

Measured on PyMC 6.4 / PyTensor 3.3.8 (numba linker): the log density that PyTensor's numba
backend loads from a warm cache differs from the freshly compiled one in the last bits
(24 of 50 values, by up to 1.4e-14; the gradients are identical), and that is enough for
NUTS trajectories, and every method built on NUTS draws (``ct``, ``gibbs_ct``, ``st``,
``bridge``, ``rais``, ``bar``, ``lis``), to give a different number for the same seed.
The particle methods' batched density runs on JAX by default, compiled in each process,
so ``smc``, ``arm`` and ``ais`` give the same bits either way.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
TOOLS = ("logp", "pm.sample", "smc", "bridge", "ct")


def _digest(values) -> str:
    import numpy as np

    return hashlib.sha256(np.ascontiguousarray(values, dtype=float).tobytes()).hexdigest()[:12]


def _child(tool: str) -> str:
    """The bits of ``tool``'s result on the 3-component mixture, as a short digest."""
    warnings.simplefilter("ignore")
    sys.path.insert(0, str(HERE))
    import first_call_models
    import numpy as np
    import pymc as pm

    model, _ = first_call_models.mixture(k=3)
    if tool == "logp":
        fn = model.logp_dlogp_function(ravel_inputs=True)
        fn.set_extra_values({})
        d = sum(np.size(v) for v in model.initial_point().values())
        points = np.random.default_rng(0).normal(size=(50, d))
        return _digest([fn(x)[0] for x in points])
    if tool == "pm.sample":
        with model:
            idata = pm.sample(
                draws=100, tune=100, chains=1, random_seed=3, progressbar=False,
                compute_convergence_checks=False,
            )  # fmt: skip
        return _digest(np.concatenate([v.values.ravel() for v in idata["posterior"].values()]))
    import pymc_evidence as pme

    nuts = {} if tool == "smc" else {"draws": 300, "tune": 300, "chains": 2}
    with model:
        idata = pme.sample_evidence(method=tool, random_seed=1, progressbar=False, **nuts)
    est = pme.log_evidence(idata)
    return f"{_digest([est.log_z, est.se])} (log Z {est.log_z:.6f} ± {est.se:.4f})"


def _run(tool: str, compiledir: str) -> str:
    env = dict(os.environ, PYTENSOR_FLAGS=f"base_compiledir={compiledir}")
    out = subprocess.run(
        [sys.executable, __file__, "--child", tool], env=env, capture_output=True, text=True
    )
    lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    return lines[-1][7:] if lines else f"failed: {out.stderr.strip().splitlines()[-1:]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", default=",".join(TOOLS))
    parser.add_argument("--child")
    args = parser.parse_args()
    if args.child:
        print("RESULT", _child(args.child))
        return
    print("| tool | empty cache | warm cache (same dir) | another empty cache | warm = empty |")
    print("|---|---|---|---|---|")
    for tool in args.tools.split(","):
        shared = tempfile.mkdtemp(prefix="pme_cache_")
        empty, warm = _run(tool, shared), _run(tool, shared)
        other = _run(tool, tempfile.mkdtemp(prefix="pme_cache_"))
        same = warm.split()[0] == empty.split()[0]
        print(f"| {tool} | {empty} | {warm} | {other} | {'yes' if same else 'NO'} |", flush=True)


if __name__ == "__main__":
    main()
