#!/usr/bin/env python
"""Every evidence method on the hard analytic models, against their exact log Z.

Models: the systems of :mod:`pymc_evidence.testing.hard` (``HARD_MODELS``: HalfCauchy eight
schools, 1-D bimodal, symmetric 5-D mixture, phase transition, prior conflict, ring, radon
varying intercepts centred / non-centred) plus ``hierarchical_normal`` (centred) and the
radon varying intercepts and slopes, centred and non-centred (175 parameters): the ``hard``
family of ``registry.py``. Every
``log_z`` is exact (closed form or converged quadrature, checked in
``tests/testing/test_hard.py``).

Methods: every key of ``pme.METHODS`` at its defaults (``progressbar=False``, ``cores``)
and ``pymc_smc``: ``pm.sample_smc`` with 4 chains x 2000 particles, whose log Z per chain is
the last finite value of ``sample_stats["log_marginal_likelihood"]``; the estimate is the
mean over chains and its se the spread over chains / sqrt(chains).

For each (model, method, seed) the script records the estimate, se, ``error = estimate -
truth``, ``error / se``, the number of package warnings (``pme.log_evidence(idata).warnings``)
and of distinct Python warnings, and the wall time (sampling plus reading the estimate).
Exceptions are caught per cell and recorded. Seeds are ``1..N`` (``--seeds N``). The CSV is
rewritten after every cell, so an interrupted run keeps what it finished. With more than
one seed a summary per (model, method) follows: mean error, RMSE, coverage of +-2 se.

Run from the repository root (long: every method on every model; pick a subset)::

    PYTHONPATH=. python benchmarks/hard_models.py --out /tmp/hard_models.csv
    PYTHONPATH=. python benchmarks/hard_models.py --models ring,bimodal_1d \\
        --methods ct,pymc_smc --seeds 3 --out /tmp/hard_small.csv
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import failure, parse_list, quiet_logs, smc_chain_log_z  # noqa: E402
from registry import family  # noqa: E402


def all_methods() -> list[str]:
    """``pme.METHODS`` plus ``"pymc_smc"`` (only the latter if the package fails to import)."""
    try:
        import pymc_evidence as pme
    except Exception as exc:  # keep the PyMC baseline usable while the package is broken
        print(f"pymc_evidence import failed ({failure(exc)['error']}); only pymc_smc runs")
        return ["pymc_smc"]
    return [*pme.METHODS, "pymc_smc"]


COLUMNS = [
    "model", "method", "seed", "truth", "log_z", "se", "error", "error_over_se",
    "n_warnings", "n_py_warnings", "wall_s", "failure", "warnings", "spread_se", "proxy_se",
]  # fmt: skip


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    p.add_argument("--models", default="all", help="comma-separated model names, or 'all'")
    p.add_argument("--methods", default="all", help="comma-separated methods, or 'all'")
    p.add_argument("--seeds", type=int, default=1, help="run seeds 1..N")
    p.add_argument("--out", default=None, help="CSV file for the per-run rows")
    p.add_argument("--cores", type=int, default=1, help="cores for NUTS chains and SMC")
    p.add_argument("--smc-draws", type=int, default=2000, help="pm.sample_smc particles")
    p.add_argument("--smc-chains", type=int, default=4, help="pm.sample_smc chains")
    p.add_argument("--verbose", action="store_true", help="keep PyMC's log output")
    return p.parse_args(argv)


def run_pymc_smc(model, seed: int, args) -> dict:
    import pymc as pm

    idata = pm.sample_smc(
        draws=args.smc_draws,
        chains=args.smc_chains,
        cores=args.cores,
        random_seed=seed,
        progressbar=False,
        model=model,
    )
    per_chain = smc_chain_log_z(idata, args.smc_chains)
    ok = per_chain[np.isfinite(per_chain)]
    se = float(ok.std(ddof=1) / math.sqrt(ok.size)) if ok.size > 1 else math.nan
    return {"log_z": float(ok.mean()) if ok.size else math.nan, "se": se, "warnings": []}


def run_method(model, method: str, seed: int, args) -> dict:
    """One estimate of ``log Z``: ``{"log_z", "se", "warnings"}``."""
    if method == "pymc_smc":
        return run_pymc_smc(model, seed, args)
    import pymc_evidence as pme

    idata = pme.sample_evidence(
        model=model, method=method, random_seed=seed, cores=args.cores, progressbar=False
    )
    est = pme.log_evidence(idata)
    return {
        "log_z": float(est.log_z),
        "se": float(est.se),
        "warnings": list(est.warnings),
        "spread_se": est.diagnostics.get("spread_se", math.nan),
        "proxy_se": est.diagnostics.get("proxy_se", math.nan),
    }


def run_cell(name: str, model, truth: float, method: str, seed: int, args) -> dict:
    """Run one (model, method, seed) cell, catching exceptions and Python warnings."""
    row = {"model": name, "method": method, "seed": seed, "truth": truth}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        try:
            res = run_method(model, method, seed, args)
        except Exception as exc:  # record and go on with the next cell
            res = {"log_z": math.nan, "se": math.nan, "warnings": []}
            row["failure"] = failure(exc)["error"].splitlines()[0][:300]
        row["wall_s"] = time.perf_counter() - t0
    py_warnings = {f"{w.category.__name__}: {str(w.message).splitlines()[0][:120]}" for w in caught}
    error = res["log_z"] - truth
    row.update(
        log_z=res["log_z"],
        se=res["se"],
        error=error,
        error_over_se=error / res["se"] if res["se"] > 0 else math.nan,
        n_warnings=len(res["warnings"]),
        n_py_warnings=len(py_warnings),
        warnings=" | ".join(str(w).splitlines()[0][:120] for w in res["warnings"]),
        spread_se=res.get("spread_se", math.nan),
        proxy_se=res.get("proxy_se", math.nan),
    )
    return row


def write_csv(path: str | None, rows: list[dict]) -> None:
    """Rewrite ``path`` atomically with all rows so far."""
    if not path:
        return
    tmp = f"{path}.tmp"
    with open(tmp, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    os.replace(tmp, path)


def _f(value, spec=".3f") -> str:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    return format(v, spec) if math.isfinite(v) else "-"


def markdown_rows(rows: list[dict]) -> str:
    head = ["model", "method", "seed", "truth", "log_z", "se", "error", "error/se", "warn",
            "time_s", "failure"]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [
            r["model"], r["method"], str(r["seed"]), _f(r["truth"]), _f(r["log_z"]),
            _f(r["se"]), _f(r["error"]), _f(r["error_over_se"], ".2f"),
            f"{r['n_warnings']}+{r['n_py_warnings']}", _f(r["wall_s"], ".1f"),
            r.get("failure", "")[:60],
        ]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown_summary(rows: list[dict]) -> str:
    """Per (model, method) over seeds: runs, failures, mean error, RMSE, +-2 se coverage."""
    head = ["model", "method", "runs", "failed", "mean err", "rmse", "mean se", "cover 2se",
            "mean warn", "mean time_s"]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["model"], r["method"]), []).append(r)
    for (model, method), grp in groups.items():
        ok = [r for r in grp if math.isfinite(r["log_z"])]
        err = np.array([r["error"] for r in ok])
        se = np.array([r["se"] for r in ok])
        cover = np.mean(np.abs(err) <= 2 * se) if ok else math.nan
        cells = [
            model, method, str(len(grp)), str(len(grp) - len(ok)),
            _f(err.mean() if ok else math.nan), _f(np.sqrt(np.mean(err**2)) if ok else math.nan),
            _f(se.mean() if ok else math.nan), _f(cover, ".2f"),
            _f(np.mean([r["n_warnings"] for r in grp]), ".1f"),
            _f(np.mean([r["wall_s"] for r in grp]), ".1f"),
        ]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    args = parse_args(argv)
    quiet_logs(args.verbose)
    factories = family("hard")
    known_methods = all_methods()
    models, methods = list(factories), known_methods
    if args.models != "all":
        models = parse_list(args.models, factories, "models")
    if args.methods != "all":
        methods = parse_list(args.methods, known_methods, "methods")
    rows: list[dict] = []
    for name in models:
        try:
            model, truth = factories[name]()
        except Exception as exc:  # a broken factory must not stop the benchmark
            print(f"{name}: model construction failed: {failure(exc)['error']}", flush=True)
            continue
        print(f"## {name}: exact log Z = {truth:.6f}", flush=True)
        for method in methods:
            for seed in range(1, args.seeds + 1):
                row = run_cell(name, model, truth, method, seed, args)
                rows.append(row)
                write_csv(args.out, rows)
                status = row.get("failure") or f"error {_f(row['error'])} (se {_f(row['se'])})"
                print(f"  {method:9s} seed {seed}: {status}  [{row['wall_s']:.1f} s]", flush=True)
    print("\n" + markdown_rows(rows))
    if args.seeds > 1:
        print("\n" + markdown_summary(rows))
    if args.out:
        print(f"\nwrote {len(rows)} rows to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
