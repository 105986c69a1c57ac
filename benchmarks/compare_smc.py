#!/usr/bin/env python
"""Every method of the package against PyMC's own SMC (``pymc_smc``) on the same models.

For every model and method, one call estimates log Z; the script prints a table with the
exact value (analytic models) or a quadrature reference (radon pooled / unpooled /
varying_intercept, see ``radon_reference.py``), the estimate, its standard error, the error,
``|error| / se``, the wall time and the time relative to SMC. The ``d_smc`` / ``z_smc``
columns compare the methods with each other (useful where no reference exists): each
estimate's difference from the SMC estimate, in nats and in units of the combined se.

SMC's log Z is taken per chain as the final finite value of
``sample_stats["log_marginal_likelihood"]`` (PyMC may store one value per chain or a list
per stage, as an object array when there are several chains); the estimate is the mean over
chains and its "se" the std over chains / sqrt(chains) (a pseudo-se from only a few
independent runs).

Timing: ``time.perf_counter`` around the sampling call plus reading the estimate. Unless
``--no-warmup``, every (model, method) pair is first run once, untimed, with tiny settings so
that PyTensor's on-disk compilation cache is warm for both methods; the timed call still
pays graph construction/rewriting and loading the compiled modules, as a user would. The
machine the numbers come from may be shared with other work; timings are noisy.

Run from the repository root::

    PYTHONPATH=. python benchmarks/compare_smc.py --out /tmp/compare_smc.json
    PYTHONPATH=. python benchmarks/compare_smc.py --models conj_d5 --quick
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings
from functools import partial

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import (  # noqa: E402
    environment,
    failure,
    fmt,
    n_stages,
    parse_list,
    quiet_logs,
    smc_chain_log_z,
    table,
    write_json,
)
from registry import analytic  # noqa: E402

MODELS = analytic()
DEFAULT_MODELS = ("conj_d5", "conj_d50", "hier_centered", "radon_vi")
# "pymc_smc" is pm.sample_smc, the reference; "smc"/"arm" are this package's resample-move SMC.
METHODS = ("pymc_smc", "ct", "gibbs_ct", "st", "ais", "bar", "lis", "smc", "arm", "bridge")


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    p.add_argument(
        "--models",
        default=",".join(DEFAULT_MODELS),
        help=f"comma-separated subset of {', '.join(MODELS)}",
    )
    p.add_argument(
        "--methods",
        default=",".join(METHODS),
        help=f"comma-separated subset of {', '.join(METHODS)}",
    )
    p.add_argument("--seed", type=int, default=0, help="random_seed of every call")
    p.add_argument(
        "--quick",
        action="store_true",
        help="smaller settings (SMC draws=500; CT draws=tune=300, adapt 200/200)",
    )
    p.add_argument("--smc-draws", type=int, default=None, help="SMC draws (default 2000)")
    p.add_argument("--smc-chains", type=int, default=4)
    p.add_argument(
        "--smc-cores", type=int, default=2, help="SMC cores (2 = same parallelism as the CT runs)"
    )
    p.add_argument("--cores", type=int, default=2, help="cores of sample_evidence")
    p.add_argument("--no-warmup", action="store_true", help="skip the untimed warm-up runs")
    p.add_argument("--out", default=None, help="write raw results as JSON to this file")
    p.add_argument(
        "--no-reference",
        action="store_true",
        help="do not compute the quadrature reference log Z of the radon models",
    )
    p.add_argument("--verbose", action="store_true", help="keep PyMC's INFO log output")
    args = p.parse_args(argv)
    args.models = parse_list(args.models, MODELS, "--models")
    args.methods = parse_list(args.methods, METHODS, "--methods")
    if args.smc_draws is None:
        args.smc_draws = 500 if args.quick else 2000
    return args


# ------------------------------------------------------------------------------------------
# SMC
# ------------------------------------------------------------------------------------------


def run_smc(model, *, draws, chains, cores, seed) -> dict:
    import pymc as pm

    idata = pm.sample_smc(
        draws=draws, chains=chains, cores=cores, random_seed=seed, progressbar=False, model=model
    )
    chain_z = smc_chain_log_z(idata, chains)
    ok = chain_z[np.isfinite(chain_z)]
    n = ok.size
    log_z = float(ok.mean()) if n else math.nan
    se = float(ok.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
    extra = {"per_chain_log_z": chain_z, "n_finite_chains": n}
    try:  # number of tempering stages per chain (informative only)
        extra["n_stages_per_chain"] = n_stages(idata.sample_stats["beta"].values, chains)
    except Exception:
        pass
    return {"log_z": log_z, "se": se, **extra}


# ------------------------------------------------------------------------------------------
# Continuous tempering
# ------------------------------------------------------------------------------------------


def run_ct(model, method, *, seed, cores, options) -> dict:
    import pymc_evidence as pme

    idata = pme.sample_evidence(
        model, method=method, random_seed=seed, cores=cores, progressbar=False, **options
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


def settings(args) -> dict:
    smc = {"draws": args.smc_draws, "chains": args.smc_chains, "cores": args.smc_cores}
    ct = {}  # package defaults (draws=tune=1000, chains=4, adapt 3 x 500/500)
    if args.quick:
        ct = {"draws": 300, "tune": 300, "adapt_draws": 200, "adapt_tune": 200}
    return {"smc": smc, "ct": ct}


#: Methods whose last stage is a NUTS run (``draws``, ``tune`` and ``chains`` are theirs)
NUTS_METHODS = ("ct", "gibbs_ct", "st", "rais", "bar", "lis", "bridge")


def _accepted(method: str, options: dict) -> dict:
    """The options of ``options`` that ``method`` takes: NUTS sizes for the NUTS methods,
    adaptation rounds for the continuous-tempering ones."""
    drop = () if method in NUTS_METHODS else ("draws", "tune", "chains")
    if method not in ("ct", "gibbs_ct"):
        drop += ("adapt_draws", "adapt_tune", "adapt_rounds")
    return {k: v for k, v in options.items() if k not in drop}


def call(model, method, args, conf, *, warmup=False) -> dict:
    if method == "pymc_smc":
        if warmup:
            return run_smc(model, draws=100, chains=1, cores=1, seed=args.seed)
        return run_smc(model, seed=args.seed, **conf["smc"])
    if warmup:
        opts = {"draws": 50, "tune": 50, "chains": 1}
        if method != "bridge":  # bridge starts from NUTS draws, not from a base
            opts["base_kwargs"] = {"restarts": 1}
        if method in ("ct", "gibbs_ct"):
            opts["adapt_rounds"] = 0
        if method in ("ais", "bar", "lis"):
            opts.update(n_particles=8, n_stages=5)
        if method in ("smc", "arm"):
            opts.update(n_particles=16)
        return run_ct(model, method, seed=args.seed, cores=1, options=_accepted(method, opts))
    options = _accepted(method, conf["ct"])
    return run_ct(model, method, seed=args.seed, cores=args.cores, options=options)


def timed(fn) -> tuple[dict, float, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        try:
            res = fn()
        except Exception as exc:  # record and continue with the next run
            res = failure(exc)
        elapsed = time.perf_counter() - t0
    msgs = []
    for w in caught:
        m = f"{w.category.__name__}: {str(w.message).splitlines()[0][:200]}"
        if m not in msgs:
            msgs.append(m)
    return res, elapsed, msgs


def add_derived(rows: list[dict]) -> None:
    by_model = {}
    for r in rows:
        by_model.setdefault(r["model"], {})[r["method"]] = r
    for r in rows:
        truth, z, se = r["truth"], r.get("log_z", math.nan), r.get("se", math.nan)
        r["error"] = z - truth if math.isfinite(truth) else math.nan
        r["abs_err_over_se"] = abs(r["error"]) / se if se and se > 0 else math.nan
        smc = by_model[r["model"]].get("pymc_smc", {})
        t_smc = smc.get("time_s", math.nan) if "error_msg" not in smc else math.nan
        r["time_ratio_vs_smc"] = r["time_s"] / t_smc if t_smc and math.isfinite(t_smc) else math.nan
        z_smc, se_smc = smc.get("log_z", math.nan), smc.get("se", math.nan)
        r["diff_vs_smc"] = z - z_smc if r["method"] != "pymc_smc" else math.nan
        comb = math.hypot(se, se_smc) if math.isfinite(se) and math.isfinite(se_smc) else math.nan
        r["z_vs_smc"] = r["diff_vs_smc"] / comb if comb and comb > 0 else math.nan


def render(rows: list[dict]) -> str:
    header = [
        "model",
        "method",
        "truth",
        "log_z",
        "se",
        "error",
        "|err|/se",
        "d_smc",
        "z_smc",
        "time_s",
        "t/t_smc",
    ]
    body = []
    for r in rows:
        if "error_msg" in r:
            body.append(
                [
                    r["model"],
                    r["method"],
                    fmt(r["truth"]),
                    "FAILED",
                    "",
                    "",
                    "",
                    "",
                    "",
                    fmt(r["time_s"], ".1f"),
                    "",
                ]
            )
            continue
        body.append(
            [
                r["model"],
                r["method"],
                fmt(r["truth"]),
                fmt(r["log_z"]),
                fmt(r["se"], ".4f"),
                fmt(r["error"], "+.4f"),
                fmt(r["abs_err_over_se"], ".2f"),
                fmt(r["diff_vs_smc"], "+.4f"),
                fmt(r["z_vs_smc"], "+.2f"),
                fmt(r["time_s"], ".1f"),
                fmt(r["time_ratio_vs_smc"], ".2f"),
            ]
        )
    return table(header, body)


def main(argv=None) -> int:
    args = parse_args(argv)
    quiet_logs(args.verbose)
    conf = settings(args)
    env = environment()
    payload = {
        "environment": env,
        "settings": {
            **conf,
            "seed": args.seed,
            "ct_cores": args.cores,
            "warmup": not args.no_warmup,
            "quick": args.quick,
        },
        "rows": [],
        "warmups": [],
    }
    print(f"# compare_smc: models={args.models} methods={args.methods} seed={args.seed}")
    print(
        f"# SMC {conf['smc']}; CT options {conf['ct'] or 'package defaults'} "
        f"(cores={args.cores}); warm-up={'no' if args.no_warmup else 'yes'}"
    )
    print(
        f"# pymc {env['pymc']}, {env['cpu_count']} CPUs, load avg {env['loadavg_at_start']}; "
        f"pymc_evidence at {env.get('git_commit', '?')[:10]}"
        f"{' + uncommitted changes' if env.get('package_dirty') else ''}"
    )
    sys.stdout.flush()
    rows = payload["rows"]
    for name in args.models:
        desc, build = MODELS[name]
        try:
            model, truth = build(not args.no_reference)
        except Exception as exc:
            print(f"!! {name}: building the model failed: {exc}")
            rows.append(
                {
                    "model": name,
                    "method": "-",
                    "truth": math.nan,
                    "time_s": 0.0,
                    "error_msg": failure(exc),
                }
            )
            continue
        n_par = int(sum(np.size(v) for v in model.initial_point().values()))
        print(
            f"\n## {name}: {desc}; {n_par} unconstrained parameters; true (reference) log Z = "
            f"{fmt(truth, '.4f')}"
        )
        for method in args.methods:
            if not args.no_warmup:
                res, el, _ = timed(partial(call, model, method, args, conf, warmup=True))
                payload["warmups"].append(
                    {"model": name, "method": method, "time_s": el, "failed": "traceback" in res}
                )
                print(
                    f"   warm-up {method}: {el:.1f} s"
                    + (f"  (failed: {res['error']})" if "traceback" in res else "")
                )
            load = list(os.getloadavg())
            res, elapsed, msgs = timed(partial(call, model, method, args, conf))
            row = {
                "model": name,
                "method": method,
                "truth": truth,
                "n_params": n_par,
                "time_s": elapsed,
                "loadavg_before": load,
                "python_warnings": msgs,
            }
            if "traceback" in res:
                row["error_msg"] = res
                print(f"   {method}: FAILED after {elapsed:.1f} s\n{res['traceback']}")
            else:
                row.update(res)
                err = res["log_z"] - truth if math.isfinite(truth) else math.nan
                print(
                    f"   {method}: log Z = {res['log_z']:.4f} ± {res['se']:.4f}  "
                    f"error {fmt(err, '+.4f')}  {elapsed:.1f} s"
                    + (
                        f"  warnings: {res.get('package_warnings')}"
                        if res.get("package_warnings")
                        else ""
                    )
                )
            sys.stdout.flush()
            rows.append(row)
            add_derived(rows)
            write_json(args.out, payload)
    add_derived(rows)
    payload["environment"]["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
    payload["environment"]["loadavg_at_end"] = list(os.getloadavg())
    write_json(args.out, payload)
    print("\n" + render(rows))
    print(
        "\nse of SMC = std over chains / sqrt(chains) (pseudo-se). d_smc, z_smc: difference "
        "from the SMC estimate and that difference / sqrt(se^2 + se_smc^2)."
    )
    print("Timings are wall-clock on a possibly shared machine; treat them as rough.")
    failed = [f"{r['model']}/{r['method']}" for r in rows if "error_msg" in r]
    if failed:
        print(f"FAILED runs: {', '.join(failed)} (tracebacks above and in --out)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
