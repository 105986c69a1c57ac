#!/usr/bin/env python
"""Is the reported standard error honest? Seeded repeats of ``sample_evidence`` on models
with an exact log Z.

For each model, ``--repeats`` runs (random_seed = 0, 1, ..., repeats-1) of
``pme.sample_evidence(model, method=...)`` at the package defaults (progressbar off; chains
and cores as given). For every run: error = log_z - exact, z = error / se. Per model the
script reports the mean error (bias), the RMSE, the std of the errors (the actual spread),
the mean reported se, their ratio, the coverage ``P(|error| <= 2 se)`` (nominal 0.954; we
want >= 0.85), the coverage at 1 se (nominal 0.683), and the z-scores themselves.

Run from the repository root::

    PYTHONPATH=. python benchmarks/calibration.py --method ct --out /tmp/calibration_ct.json
    PYTHONPATH=. python benchmarks/calibration.py --method gibbs_ct --repeats 10
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import (  # noqa: E402
    environment,
    failure,
    fmt,
    parse_list,
    quiet_logs,
    table,
    write_json,
)
from registry import analytic  # noqa: E402

MODELS = analytic()
DEFAULT_MODELS = ("conj_d5", "beta_bernoulli")
# models with an exact or quadrature-reference log Z
ANALYTIC = [k for k in MODELS if k != "radon_vis"]


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    p.add_argument(
        "--method",
        default="ct",
        choices=("ct", "gibbs_ct", "st", "ais", "rais", "bar", "lis", "smc", "arm", "bridge"),
    )
    p.add_argument("--repeats", type=int, default=20, help="seeds 0 .. repeats-1")
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument(
        "--models",
        default=",".join(DEFAULT_MODELS),
        help=f"comma-separated subset of {', '.join(ANALYTIC)}",
    )
    p.add_argument("--chains", type=int, default=4)
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--draws", type=int, default=None, help="default: the package default")
    p.add_argument("--tune", type=int, default=None, help="default: the package default")
    p.add_argument("--out", default=None, help="write raw results as JSON to this file")
    p.add_argument("--verbose", action="store_true", help="keep PyMC's INFO log output")
    args = p.parse_args(argv)
    args.models = parse_list(args.models, ANALYTIC, "--models")
    if args.repeats < 2:
        p.error("--repeats must be at least 2")
    return args


def one_run(model, args, seed) -> dict:
    import pymc_evidence as pme

    opts = {k: v for k, v in (("draws", args.draws), ("tune", args.tune)) if v is not None}
    idata = pme.sample_evidence(
        model,
        method=args.method,
        chains=args.chains,
        cores=args.cores,
        random_seed=seed,
        progressbar=False,
        **opts,
    )
    est = pme.log_evidence(idata)
    return {
        "log_z": float(est.log_z),
        "se": float(est.se),
        "per_chain_log_z": np.asarray(est.per_chain_log_z, dtype=float),
        "per_chain_se": np.asarray(est.per_chain_se, dtype=float),
        "diagnostics": dict(est.diagnostics),
        "package_warnings": list(est.warnings),
    }


def summarize(runs: list[dict], truth: float) -> dict:
    ok = [r for r in runs if "traceback" not in r and math.isfinite(r.get("log_z", math.nan))]
    err = np.array([r["log_z"] - truth for r in ok])
    se = np.array([r["se"] for r in ok])
    n = err.size
    if n == 0:
        return {"n_ok": 0, "n_failed": len(runs)}
    with np.errstate(divide="ignore", invalid="ignore"):
        z = err / se
    sd_err = float(err.std(ddof=1)) if n > 1 else math.nan
    mean_err = float(err.mean())
    return {
        "n_ok": n,
        "n_failed": len(runs) - n,
        "mean_error": mean_err,
        "mean_error_se": sd_err / math.sqrt(n) if n > 1 else math.nan,
        "rmse": float(np.sqrt(np.mean(err**2))),
        "sd_error": sd_err,
        "mean_se": float(se.mean()),
        "rms_se": float(np.sqrt(np.mean(se**2))),
        "sd_error_over_rms_se": sd_err / float(np.sqrt(np.mean(se**2))),
        "coverage_2se": float(np.mean(np.abs(err) <= 2 * se)),
        "coverage_1se": float(np.mean(np.abs(err) <= se)),
        "mean_z": float(np.mean(z)),
        "sd_z": float(np.std(z, ddof=1)) if n > 1 else math.nan,
        "max_abs_z": float(np.max(np.abs(z))),
        "z_scores": z.tolist(),
        "n_with_package_warnings": sum(bool(r.get("package_warnings")) for r in ok),
        "mean_time_s": float(np.mean([r["time_s"] for r in ok])),
    }


def render(summaries: dict, method: str) -> str:
    header = [
        "model",
        "method",
        "n_ok",
        "fail",
        "truth",
        "mean_err",
        "rmse",
        "sd_err",
        "mean_se",
        "sd_err/se",
        "cov_2se",
        "cov_1se",
        "mean_z",
        "sd_z",
        "max|z|",
        "t_run_s",
    ]
    rows = []
    for name, (truth, s) in summaries.items():
        if not s.get("n_ok"):
            rows.append(
                [name, method, "0", str(s.get("n_failed", 0)), fmt(truth, ".4f")]
                + [""] * (len(header) - 5)
            )
            continue
        rows.append(
            [
                name,
                method,
                str(s["n_ok"]),
                str(s["n_failed"]),
                fmt(truth, ".4f"),
                fmt(s["mean_error"], "+.5f"),
                fmt(s["rmse"], ".5f"),
                fmt(s["sd_error"], ".5f"),
                fmt(s["mean_se"], ".5f"),
                fmt(s["sd_error_over_rms_se"], ".2f"),
                fmt(s["coverage_2se"], ".2f"),
                fmt(s["coverage_1se"], ".2f"),
                fmt(s["mean_z"], "+.2f"),
                fmt(s["sd_z"], ".2f"),
                fmt(s["max_abs_z"], ".2f"),
                fmt(s["mean_time_s"], ".1f"),
            ]
        )
    return table(header, rows)


def main(argv=None) -> int:
    args = parse_args(argv)
    quiet_logs(args.verbose)
    seeds = list(range(args.first_seed, args.first_seed + args.repeats))
    env = environment()
    payload = {
        "environment": env,
        "settings": {
            "method": args.method,
            "seeds": seeds,
            "chains": args.chains,
            "cores": args.cores,
            "draws": args.draws,
            "tune": args.tune,
        },
        "models": {},
    }
    print(
        f"# calibration: method={args.method} models={args.models} seeds={seeds[0]}.."
        f"{seeds[-1]} chains={args.chains} cores={args.cores} draws={args.draws or 'default'}"
        f" tune={args.tune or 'default'}"
    )
    print(
        f"# pymc {env['pymc']}, {env['cpu_count']} CPUs, load avg {env['loadavg_at_start']}; "
        f"pymc_evidence at {env.get('git_commit', '?')[:10]}"
        f"{' + uncommitted changes' if env.get('package_dirty') else ''}"
    )
    sys.stdout.flush()
    summaries = {}
    for name in args.models:
        desc, build = MODELS[name]
        model, truth = build()
        print(f"\n## {name}: {desc}; exact log Z = {truth:.6f}")
        runs = []
        payload["models"][name] = {"truth": truth, "runs": runs}
        for seed in seeds:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                t0 = time.perf_counter()
                try:
                    res = one_run(model, args, seed)
                except Exception as exc:
                    res = failure(exc)
                elapsed = time.perf_counter() - t0
            res.update(
                seed=seed,
                time_s=elapsed,
                python_warnings=sorted(
                    {
                        f"{w.category.__name__}: {str(w.message).splitlines()[0][:200]}"
                        for w in caught
                    }
                ),
            )
            runs.append(res)
            if "traceback" in res:
                print(f"   seed {seed:3d}: FAILED after {elapsed:.1f} s\n{res['traceback']}")
            else:
                err = res["log_z"] - truth
                z = err / res["se"] if res["se"] > 0 else math.nan
                flag = "" if abs(err) <= 2 * res["se"] else "   <-- |err| > 2 se"
                print(
                    f"   seed {seed:3d}: log Z = {res['log_z']:.5f} ± {res['se']:.5f}  "
                    f"err {err:+.5f}  z {z:+.2f}  {elapsed:5.1f} s{flag}"
                    + (f"  warnings: {res['package_warnings']}" if res["package_warnings"] else "")
                )
            sys.stdout.flush()
            payload["models"][name]["summary"] = summarize(runs, truth)
            write_json(args.out, payload)
        summaries[name] = (truth, payload["models"][name]["summary"])
    payload["environment"]["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
    payload["environment"]["loadavg_at_end"] = list(os.getloadavg())
    write_json(args.out, payload)
    print("\n" + render(summaries, args.method))
    for name, (_, s) in summaries.items():
        if s.get("n_ok"):
            zs = " ".join(f"{z:+.2f}" for z in s["z_scores"])
            print(f"\nz-scores {name} (seed order): {zs}")
    print(
        "\ncov_2se: fraction of runs with |error| <= 2 se (nominal 0.954, want >= 0.85); "
        "sd_err/se: actual spread of the errors over the rms reported se (1 = honest)."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
