#!/usr/bin/env python
"""Wall time of ``pme.compare_models`` on many small models: sequential, a process pool, Dask.

The models are 16 (``--n-models``) small conjugate regressions with exact log Z
(``testing.conjugate_regression`` with ``d`` = 1..4 weights and data seeds 0, 1, ...), each
run ``--replicas`` times with SMC at ``--n-particles`` particles. The same seed goes to every
executor, and the script checks that the three tables are identical, then prints a markdown
table of wall times (and the Dask cluster's start-up time, not included in its wall time).

An untimed warm-up run (one replica, few particles) first fills PyTensor's on-disk compile
cache, so no executor pays for the first compilation of a graph; every timed run still
builds and loads its functions, in every process, as a user's would. The machine may be
shared with other work: timings are noisy.

Run from the repository root::

    PYTHONPATH=. python benchmarks/many_models.py
    PYTHONPATH=. python benchmarks/many_models.py --n-models 4 --workers 2 --out /tmp/many.json
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor

import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import environment, quiet_logs, write_json  # noqa: E402

import pymc_evidence as pme  # noqa: E402
from pymc_evidence.testing import conjugate_regression  # noqa: E402

SEED = 20260613


def systems(n_models: int) -> dict:
    """``n_models`` small conjugate regressions (name to AnalyticModel)."""
    out = {}
    for i in range(n_models):
        d, seed = 1 + i % 4, i // 4
        out[f"conj_d{d}_s{seed}"] = conjugate_regression(d=d, seed=seed)
    return out


def timed(models: dict, executor, args) -> tuple[float, pme.ModelComparison]:
    start = time.perf_counter()
    out = pme.compare_models(
        models,
        method="smc",
        replicas=args.replicas,
        executor=executor,
        random_seed=SEED,
        progressbar=False,
        n_particles=args.n_particles,
        n_runs=args.n_runs,
    )
    return time.perf_counter() - start, out


def run_dask(models: dict, args) -> tuple[float, float, pme.ModelComparison]:
    """(cluster start-up seconds, wall seconds, result) on a local Dask cluster."""
    from dask.distributed import Client, LocalCluster

    start = time.perf_counter()
    with (
        LocalCluster(
            n_workers=args.workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        ) as cluster,
        Client(cluster) as client,
    ):
        startup = time.perf_counter() - start
        wall, out = timed(models, client.get_executor(), args)
    return startup, wall, out


def markdown(rows: list[tuple[str, float]], extra: str) -> str:
    base = rows[0][1]
    lines = ["| executor | wall time (s) | speed-up |", "|---|---:|---:|"]
    lines += [f"| {name} | {wall:.1f} | {base / wall:.2f} |" for name, wall in rows]
    return "\n".join(lines) + f"\n\n{extra}"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-models", type=int, default=16)
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--n-particles", type=int, default=300)
    parser.add_argument("--n-runs", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", help="write the numbers as JSON here")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    quiet_logs(args.verbose)
    cases = systems(args.n_models)
    models = {name: case.model for name, case in cases.items()}
    with warnings.catch_warnings():  # the warm-up's tiny runs warn; their numbers are unused
        warnings.simplefilter("ignore")
        pme.compare_models(models, random_seed=0, progressbar=False, n_particles=20, n_runs=2)
    wall_seq, seq = timed(models, None, args)
    with ProcessPoolExecutor(args.workers) as pool:  # before Dask starts its threads
        wall_pool, pooled = timed(models, pool, args)
    startup, wall_dask, dask = run_dask(models, args)
    pd.testing.assert_frame_equal(pooled.table, seq.table)
    pd.testing.assert_frame_equal(dask.table, seq.table)
    errors = seq.table["log_z"] - pd.Series({n: c.log_z for n, c in cases.items()})
    z = (errors / seq.table["se"]).abs()
    rows = [
        ("sequential", wall_seq),
        (f"ProcessPoolExecutor({args.workers})", wall_pool),
        (f"Dask LocalCluster({args.workers} workers)", wall_dask),
    ]
    print(
        f"{args.n_models} models x {args.replicas} replicas, SMC with {args.n_particles} "
        f"particles x {args.n_runs} runs, {os.cpu_count()} CPUs (load average "
        f"{os.getloadavg()[0]:.1f}); tables identical.\n"
    )
    print(
        markdown(
            rows,
            f"Dask cluster start-up (not included): {startup:.1f} s. Pooled estimates "
            f"against the exact log Z: max |error| {errors.abs().max():.4f}, "
            f"max |error|/se {z.max():.2f}.",
        )
    )
    write_json(
        args.out,
        {
            "environment": environment(),
            "settings": vars(args),
            "wall_s": dict(rows),
            "dask_startup_s": startup,
            "max_abs_error": float(errors.abs().max()),
            "max_abs_z": float(z.max()),
        },
    )


if __name__ == "__main__":
    main()
