#!/usr/bin/env python
"""Evidence at the cost of a posterior: wall time and error of every method against PyMC.

On the same models, in one script, every method of ``pymc_evidence.METHODS`` (library
defaults) is timed against two PyMC baselines:

* ``pymc_smc``: ``pm.sample_smc(draws=2000, chains=4)``, PyMC's defaults otherwise; its
  log Z per chain is the last finite ``log_marginal_likelihood``, the estimate their mean and
  the se their spread / sqrt(chains);
* ``pymc_nuts``: a plain ``pm.sample(draws=1000, tune=1000, chains=4)``: a posterior, no
  evidence (the cost a user pays anyway).

Models: Bayesian linear regressions with known noise at ``d`` coefficients (``--dims``;
``n = max(2 d, 100)`` observations, ``X_ij ~ N(0, 1)``, ``beta ~ N(0, I)``, ``y = X beta* +
eps``, ``eps ~ N(0, I)``, data seeded by ``(--seed, d)``) whose exact
``log Z = log N(y; 0, I + X X^T)`` is computed here with ``scipy.stats.multivariate_normal``,
plus the centred eight-schools model (``testing.hierarchical_normal``, exact by quadrature)
and the radon pooled model (reference by converged 1-D quadrature, ``radon_reference.py``).

Timing (``time.perf_counter`` around the sampling call plus reading the estimate, so graph
construction and compilation are included): every (model, method) runs in a child process.
*Cold*: the child gets a fresh, empty PyTensor compile directory
(``PYTENSOR_FLAGS=base_compiledir=<new temp dir>``: the C ``compiledir`` and, with
PyTensor >= 3, the numba cache both live under it), so its first call compiles everything,
as on a new machine. *Warm*: further calls in the same child, after that first call. With
``--no-cold`` the child uses the usual cache and its first call is a warm-up (its time is
the ``first_s`` column, not a warm time).
Reported: medians over repeats (``--repeats`` warm calls, ``--cold-repeats`` cold children),
ratios to ``pymc_smc`` and ``pymc_nuts`` on the same model, the error against the exact
log Z and ``cost_se = warm time x se^2``, the time the method would need for se = 1 if its
variance falls as 1 / time. Method sizes, ``cores`` and ``chains`` are the library
defaults (the resolved ``cores`` is a CSV column); ``--quick`` shrinks every size for a
smoke test. Each child has a time limit (``--timeout``); a run that fails or times out is
recorded and the script goes on. The machine may be shared: read ratios below ~1.5x as noise.

Run from the repository root::

    PYTHONPATH=. python benchmarks/evidence_cost.py --dims 5,10 --out /tmp/cost --plot
    PYTHONPATH=. python benchmarks/evidence_cost.py --quick --dims 5,10 --methods smc,ct \\
        --models none --out /tmp/cost_quick --plot
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402
import registry  # noqa: E402
from _common import environment, failure, fmt, parse_list, quiet_logs, write_json  # noqa: E402

BASELINES = ("pymc_smc", "pymc_nuts")
FIXED_MODELS = {"eight_schools": "hier_centered", "radon_pooled": "radon_pooled"}
DEFAULT_DIMS = (5, 10, 20, 50, 100, 200, 500)
#: methods whose final stage is a NUTS run (draws/tune/chains are theirs)
NUTS_METHODS = ("ct", "gibbs_ct", "st", "rais", "bar", "lis", "bridge")
_MARK = "@@EVIDENCE_COST@@"


def all_methods() -> list[str]:
    """``pme.METHODS`` in registry order, then the two PyMC baselines."""
    import pymc_evidence as pme

    return [*pme.METHODS, *BASELINES]


# ------------------------------------------------------------------------------------------
# models
# ------------------------------------------------------------------------------------------


def regression_data(d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Design ``X`` (n x d) and response ``y`` of the regression at dimension ``d``."""
    n = max(2 * d, 100)
    rng = np.random.default_rng([seed, d])
    x = rng.normal(size=(n, d))
    y = x @ rng.normal(size=d) + rng.normal(size=n)
    return x, y


def regression_log_z(x: np.ndarray, y: np.ndarray) -> float:
    """Exact ``log N(y; 0, I + X X^T)`` (unit noise and prior scales), by scipy."""
    from scipy import stats

    cov = np.eye(y.size) + x @ x.T
    return float(stats.multivariate_normal(mean=np.zeros(y.size), cov=cov).logpdf(y))


def regression_model(x: np.ndarray, y: np.ndarray):
    """``beta ~ N(0, I)``, ``y ~ N(X beta, 1)`` as a PyMC model."""
    import pymc as pm

    with pm.Model() as model:
        beta = pm.Normal("beta", 0.0, 1.0, shape=x.shape[1])
        pm.Normal("y", mu=pm.math.dot(x, beta), sigma=1.0, observed=y)
    return model


def build(name: str, seed: int, truth: bool = True):
    """``(pm.Model, exact log Z or NaN, number of observations)`` of benchmark ``name``."""
    if name.startswith("regression_d"):
        x, y = regression_data(int(name.removeprefix("regression_d")), seed)
        return regression_model(x, y), regression_log_z(x, y) if truth else math.nan, y.size
    model, log_z = registry.build(FIXED_MODELS[name], truth)
    n_obs = sum(np.size(model.rvs_to_values[rv].eval()) for rv in model.observed_RVs)
    return model, log_z, int(n_obs)


def n_params(model) -> int:
    return int(sum(np.size(v) for v in model.initial_point().values()))


# ------------------------------------------------------------------------------------------
# one call of one method (runs in the child process)
# ------------------------------------------------------------------------------------------


def sizes(method: str, quick: bool) -> dict:
    """Keyword arguments of one call: library defaults, or tiny ones with ``quick``."""
    if method == "pymc_smc":
        return {"draws": 200, "chains": 2} if quick else {"draws": 2000, "chains": 4}
    if method == "pymc_nuts":
        return {"draws": 100, "tune": 100, "chains": 2} if quick else {}
    if not quick:
        return {}
    opts: dict = {}
    if method in NUTS_METHODS:
        opts.update(draws=100, tune=100, chains=2)
    if method != "bridge":
        opts["base_kwargs"] = {"restarts": 1}
    if method in ("ct", "gibbs_ct"):
        opts.update(adapt_rounds=1, adapt_draws=100, adapt_tune=100)
    if method in ("smc", "arm"):
        opts.update(n_particles=64, n_runs=2)
    if method in ("ais", "rais", "bar"):
        opts.update(n_particles=32, n_stages=20)
    if method == "lis":
        opts.update(n_particles=16, n_stages=5)
    return opts


def default_cores(method: str) -> int:
    """Worker processes a call uses at the library defaults on this machine.

    ``pm.sample`` (``pymc_nuts`` and the NUTS stage of the methods in :data:`NUTS_METHODS`)
    runs ``min(4, cpu_count)`` chains in parallel, ``pm.sample_smc`` ``cpu_count``; the
    particle methods ``ais``, ``smc`` and ``arm`` run in the calling process.
    """
    cpus = os.cpu_count() or 1
    if method == "pymc_smc":
        return min(cpus, 4)  # chains=4: never more workers than chains
    return min(4, cpus) if method in (*NUTS_METHODS, "pymc_nuts") else 1


def _smc_estimate(idata, chains: int) -> tuple[float, float]:
    per_chain = _common.smc_chain_log_z(idata, chains)
    ok = per_chain[np.isfinite(per_chain)]
    se = float(ok.std(ddof=1) / math.sqrt(ok.size)) if ok.size > 1 else math.nan
    return (float(ok.mean()) if ok.size else math.nan), se


def call(model, method: str, seed: int, quick: bool) -> dict:
    """Run ``method`` once on ``model``: ``{"log_z", "se", "warnings"}`` (NaN for pymc_nuts)."""
    import pymc as pm

    kw = sizes(method, quick)
    if method == "pymc_smc":
        idata = pm.sample_smc(model=model, random_seed=seed, progressbar=False, **kw)
        log_z, se = _smc_estimate(idata, kw["chains"])
        return {"log_z": log_z, "se": se, "warnings": []}
    if method == "pymc_nuts":
        pm.sample(model=model, random_seed=seed, progressbar=False, **kw)
        return {"log_z": math.nan, "se": math.nan, "warnings": []}
    import pymc_evidence as pme

    idata = pme.sample_evidence(model, method=method, random_seed=seed, progressbar=False, **kw)
    est = pme.log_evidence(idata)
    return {"log_z": float(est.log_z), "se": float(est.se), "warnings": list(est.warnings)}


def timed_call(model, method: str, seed: int, quick: bool, kind: str) -> dict:
    """One call with its wall time; an exception is recorded, not raised."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        try:
            res = call(model, method, seed, quick)
        except Exception as exc:  # record and go on (the traceback goes to the JSON)
            info = failure(exc)
            res = {"log_z": math.nan, "se": math.nan, "failure": info["error"][:300],
                   "traceback": info["traceback"]}  # fmt: skip
        res["time_s"] = time.perf_counter() - t0
    res.update(kind=kind, seed=seed)
    return res


def worker(spec: dict) -> None:
    """Child process: build the model, run ``spec["kinds"]`` calls in order, print JSON."""
    quiet_logs(spec.get("verbose", False))
    model, _, _ = build(spec["model"], spec["data_seed"], truth=False)
    runs = []
    for i, kind in enumerate(spec["kinds"]):
        runs.append(timed_call(model, spec["method"], spec["seed"] + i, spec["quick"], kind))
        print(_MARK + json.dumps(_common.to_jsonable(runs[-1])), flush=True)


# ------------------------------------------------------------------------------------------
# the parent: children, medians, ratios
# ------------------------------------------------------------------------------------------


def run_child(spec: dict, fresh_cache: bool, timeout: float) -> list[dict]:
    """Run :func:`worker` in a child process (fresh compile dir if ``fresh_cache``)."""
    env = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="pytensor_cold_") as tmp:
        if fresh_cache:
            # base_compiledir, not only compiledir: PyTensor >= 3 keeps its numba cache in
            # base_compiledir/numba, which a fresh compiledir alone would leave warm
            flags = [env.get("PYTENSOR_FLAGS", ""), f"base_compiledir={tmp}"]
            env["PYTENSOR_FLAGS"] = ",".join(f for f in flags if f)
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", json.dumps(spec)]
        try:
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
            out, err, note = proc.stdout, proc.stderr, f"exit code {proc.returncode}"
        except subprocess.TimeoutExpired as exc:
            out, err, note = _text(exc.stdout), _text(exc.stderr), f"timed out after {timeout} s"
    runs = [_load(line[len(_MARK) :]) for line in out.splitlines() if line.startswith(_MARK)]
    if len(runs) < len(spec["kinds"]):  # crashed or timed out: say so in the next run
        tail = " | ".join(err.strip().splitlines()[-3:])[-300:]
        runs.append({"kind": spec["kinds"][len(runs)], "failure": f"{note}: {tail}"})
    return runs


def _load(text: str) -> dict:
    """A run record from JSON (NaN was written as null)."""
    run = json.loads(text)
    return {k: math.nan if v is None and k in ("log_z", "se") else v for k, v in run.items()}


def _text(value) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else (value or "")


def measure(model: str, method: str, args) -> list[dict]:
    """Every timed call of one (model, method): cold children first, then warm calls."""
    base = {"model": model, "method": method, "data_seed": args.seed, "seed": args.seed,
            "quick": args.quick, "verbose": args.verbose}  # fmt: skip
    if not args.cold:
        return run_child(
            {**base, "kinds": ["first"] + ["warm"] * args.repeats}, False, args.timeout
        )
    runs = run_child({**base, "kinds": ["cold"] + ["warm"] * args.repeats}, True, args.timeout)
    for k in range(1, args.cold_repeats):
        runs += run_child({**base, "seed": args.seed + k, "kinds": ["cold"]}, True, args.timeout)
    return runs


def _median(values) -> float:
    vals = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    return float(np.median(vals)) if vals else math.nan


def summarise(model: str, method: str, runs: list[dict], info: dict) -> dict:
    """One CSV row: medians over the successful calls of each kind."""
    ok = [r for r in runs if "failure" not in r]
    times = {k: _median(r["time_s"] for r in ok if r["kind"] == k) for k in ("cold", "warm")}
    errors = [r["log_z"] - info["truth"] for r in ok]
    ses = [r["se"] for r in ok]
    se = _median(ses)
    return {
        "model": model, "d": info["d"], "n_obs": info["n_obs"], "method": method,
        "truth": info["truth"], "log_z": _median(r["log_z"] for r in ok),
        "se": se, "error": _median(errors),
        "abs_err_over_se": _median(abs(e) / s for e, s in zip(errors, ses, strict=True) if s > 0),
        "cold_s": times["cold"], "warm_s": times["warm"],
        "first_s": _median(r["time_s"] for r in ok if r["kind"] == "first"),
        "n_cold": sum(r["kind"] == "cold" for r in ok),
        "n_warm": sum(r["kind"] == "warm" for r in ok),
        "cost_se": times["warm"] * se**2,
        "n_warnings": max((len(r.get("warnings", [])) for r in ok), default=0),
        "cores": default_cores(method),
        "failure": "; ".join(r["failure"] for r in runs if "failure" in r)[:400],
    }  # fmt: skip


def add_ratios(rows: list[dict]) -> None:
    """``{cold,warm}_vs_{pymc_smc,pymc_nuts}``: time over the baseline's on the same model."""
    by = {(r["model"], r["method"]): r for r in rows}
    for r in rows:
        for ref in BASELINES:
            other = by.get((r["model"], ref), {})
            for k in ("cold", "warm"):
                t, t_ref = r[f"{k}_s"], other.get(f"{k}_s", math.nan)
                ok = math.isfinite(t) and math.isfinite(t_ref) and t_ref > 0
                r[f"{k}_vs_{ref}"] = t / t_ref if ok else math.nan


# ------------------------------------------------------------------------------------------
# output
# ------------------------------------------------------------------------------------------

COLUMNS = [
    "model", "d", "n_obs", "method", "truth", "log_z", "se", "error", "abs_err_over_se",
    "cold_s", "warm_s", "first_s", "cold_vs_pymc_smc", "warm_vs_pymc_smc",
    "cold_vs_pymc_nuts", "warm_vs_pymc_nuts", "cost_se", "n_cold", "n_warm", "n_warnings",
    "cores", "failure",
]  # fmt: skip


def write_csv(path: str, rows: list[dict]) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(_common.to_jsonable(rows))
    os.replace(tmp, path)


def read_csv(paths: list[str]) -> list[dict]:
    """Rows of earlier runs' CSV files, numbers parsed (to re-render the table and plot)."""
    rows = []
    for path in paths:
        with open(path, newline="") as fh:
            for row in csv.DictReader(fh):
                for key in COLUMNS:
                    if key not in ("model", "method", "failure"):
                        row[key] = float(row[key]) if row.get(key) else math.nan
                if not math.isfinite(row["cores"]):  # CSV written before the column existed
                    row["cores"] = default_cores(row["method"])
                for key in ("d", "n_obs", "n_cold", "n_warm", "n_warnings", "cores"):
                    row[key] = int(row[key])
                rows.append(row)
    return rows


HEADER = ["model", "d", "method", "error", "se", "|err|/se", "warm s", "warm/smc",
          "warm/nuts", "cold s", "cold/smc", "cold/nuts", "time·se²"]  # fmt: skip


def display_cells(r: dict) -> list[str]:
    """One table row as text (``FAILED``, or ``(!)`` after the error when some call failed)."""
    cells = [
        r["model"], str(r["d"]), r["method"], fmt(r["error"], "+.3f"), fmt(r["se"], ".3f"),
        fmt(r["abs_err_over_se"], ".1f"), fmt(r["warm_s"], ".1f"),
        fmt(r["warm_vs_pymc_smc"], ".2f"), fmt(r["warm_vs_pymc_nuts"], ".2f"),
        fmt(r["cold_s"], ".1f"), fmt(r["cold_vs_pymc_smc"], ".2f"),
        fmt(r["cold_vs_pymc_nuts"], ".2f"), fmt(r["cost_se"], ".2g"),
    ]  # fmt: skip
    if r["failure"]:
        cells[3] = "FAILED" if r["n_warm"] + r["n_cold"] == 0 else cells[3] + " (!)"
    return cells


def markdown(rows: list[dict]) -> str:
    """The summary table as GitHub markdown."""
    head = [h.replace("|", "\\|") for h in HEADER]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(display_cells(r)) + " |" for r in rows]
    return "\n".join(lines)


def rst(rows: list[dict]) -> str:
    """The summary table as an reStructuredText ``csv-table`` (for the docs)."""
    head = [h.replace("|", "\\|") for h in HEADER]  # |x| would be a substitution
    lines = [".. csv-table::", "   :header: " + ", ".join(f'"{h}"' for h in head), ""]
    lines += ["   " + ", ".join(f'"{c}"' for c in display_cells(r)) for r in rows]
    return "\n".join(lines)


def plot(rows: list[dict], path: str) -> None:
    """Log-log panels against d on the regression ladder: warm time, cold time, time x se²."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    reg = [r for r in rows if r["model"].startswith("regression_d")]
    panels = [("warm_s", "warm wall time [s]"), ("cold_s", "cold wall time [s]"),
              ("cost_se", "time × se²  [s·nat²]")]  # fmt: skip
    panels = [p for p in panels if any(math.isfinite(r[p[0]]) for r in reg)]
    if not panels:
        print("no regression rows with timings: no plot")
        return
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels) + 1.6, 4.2), squeeze=False)
    methods = list(dict.fromkeys(r["method"] for r in reg))
    for ax, (key, label) in zip(axes[0], panels, strict=True):
        for i, m in enumerate(methods):
            _plot_method(ax, reg, m, key, i)
        if key == "cost_se":
            _slope_one(ax, reg)
            _mark_biased(ax, reg)
        _log_axes(ax, sorted({r["d"] for r in reg}), label)
    handles = {h.get_label(): h for ax in axes[0] for h in ax.get_lines()}
    fig.legend(handles.values(), handles.keys(), loc="center right", fontsize=8)
    fig.suptitle("Bayesian linear regression, n = max(2d, 100): wall time and cost to a fixed se")
    fig.tight_layout(rect=(0, 0, 1 - 1.5 / fig.get_figwidth(), 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _plot_method(ax, reg, method, key, i) -> None:
    import matplotlib.pyplot as plt

    pts = sorted((r["d"], r[key]) for r in reg if r["method"] == method)
    pts = [(d, v) for d, v in pts if math.isfinite(v) and v > 0]
    if pts:
        style = "--" if method in BASELINES else "-"
        color = "black" if method == "pymc_smc" else plt.get_cmap("tab10")(i % 10)
        ax.plot(*zip(*pts, strict=True), style, marker="osD^vP*Xph<>"[i % 12], color=color,
                label=method, ms=4)  # fmt: skip


def _mark_biased(ax, reg) -> None:
    """Ring the points whose estimate is more than 4 se off (their se is not to be trusted)."""
    bad = [(r["d"], r["cost_se"]) for r in reg if r["abs_err_over_se"] > 4 and r["cost_se"] > 0]
    if bad:
        ax.plot(*zip(*bad, strict=True), "o", ms=11, mfc="none", mec="red", label="|error| > 4 se")


def _log_axes(ax, dims, label) -> None:
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    ax.set(xscale="log", yscale="log", xlabel="dimension d", ylabel=label)
    ax.set_xticks(dims)
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.grid(True, which="both", alpha=0.3)


def _slope_one(ax, reg) -> None:
    """A grey reference line of slope 1 (cost growing linearly with d)."""
    vals = [(r["d"], r["cost_se"]) for r in reg if math.isfinite(r["cost_se"]) and r["cost_se"] > 0]
    if vals:
        d0, c0 = min(vals)
        ds = np.array(sorted({d for d, _ in vals}), dtype=float)
        ax.plot(ds, c0 * ds / d0, color="grey", lw=3, alpha=0.4, label="∝ d")


# ------------------------------------------------------------------------------------------
# command line
# ------------------------------------------------------------------------------------------


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    p.add_argument(
        "--methods",
        default="all",
        help="comma-separated methods (pme.METHODS, pymc_smc, pymc_nuts) or 'all'",
    )
    p.add_argument(
        "--dims",
        default=",".join(map(str, DEFAULT_DIMS)),
        help="regression dimensions, comma-separated ('none': no regression)",
    )
    p.add_argument(
        "--models",
        default=",".join(FIXED_MODELS),
        help=f"other models ({', '.join(FIXED_MODELS)}) or 'none'",
    )
    p.add_argument("--repeats", type=int, default=3, help="warm calls per (model, method)")
    p.add_argument(
        "--cold",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="time cold calls in children with a fresh PyTensor compile dir",
    )
    p.add_argument(
        "--cold-repeats", type=int, default=None, help="cold children (default: --repeats)"
    )
    p.add_argument("--seed", type=int, default=0, help="data seed and first random_seed")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per child process")
    p.add_argument("--out", default="evidence_cost", help="output directory")
    p.add_argument("--plot", action="store_true", help="write evidence_cost.png (log-log vs d)")
    p.add_argument("--quick", action="store_true", help="tiny sizes (a smoke test)")
    p.add_argument("--verbose", action="store_true", help="keep PyMC's log output")
    p.add_argument(
        "--from-csv",
        default=None,
        help="comma-separated CSV files of earlier runs: only write the table (and plot) of "
        "their rows, concatenated, into --out",
    )
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker is None and args.from_csv is None:
        _check_args(args)
    return args


def _check_args(args) -> None:
    methods = all_methods()
    args.methods = (
        methods if args.methods == "all" else parse_list(args.methods, methods, "--methods")
    )
    try:
        args.dims = (
            [] if args.dims == "none" else [int(s) for s in args.dims.split(",") if s.strip()]
        )
    except ValueError:
        raise SystemExit(f"--dims: comma-separated positive integers, got {args.dims!r}") from None
    if any(d < 1 for d in args.dims):
        raise SystemExit("--dims: dimensions must be positive")
    args.models = [] if args.models == "none" else parse_list(args.models, FIXED_MODELS, "--models")
    args.cold_repeats = args.repeats if args.cold_repeats is None else args.cold_repeats
    if args.repeats < 1 or args.cold_repeats < 1:
        raise SystemExit("--repeats and --cold-repeats must be at least 1")


def model_info(name: str, seed: int) -> dict:
    model, truth, n_obs = build(name, seed)
    return {"truth": truth, "n_obs": n_obs, "d": n_params(model)}


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.worker is not None:
        worker(json.loads(args.worker))
        return 0
    quiet_logs(args.verbose)
    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out, "evidence_cost")
    if args.from_csv is not None:
        rows = read_csv(args.from_csv.split(","))
        add_ratios(rows)
        write_csv(stem + ".csv", rows)
        _write_outputs(rows, stem, args)
        return 0
    payload = {"environment": {**environment(), "cores": "library defaults"},
               "settings": {k: v for k, v in vars(args).items() if k != "worker"},
               "rows": [], "runs": []}  # fmt: skip
    print(f"# evidence_cost: methods={args.methods} dims={args.dims} models={args.models}")
    print(f"# {payload['environment']['cpu_count']} CPUs, load {os.getloadavg()}", flush=True)
    rows = payload["rows"]
    for name in [f"regression_d{d}" for d in args.dims] + args.models:
        info = model_info(name, args.seed)
        print(f"\n## {name}: d={info['d']} n={info['n_obs']} log Z={info['truth']:.4f}")
        for method in args.methods:
            runs = measure(name, method, args)
            payload["runs"].append({"model": name, "method": method, "runs": runs})
            rows.append(summarise(name, method, runs, info))
            add_ratios(rows)
            _report(rows[-1])
            write_csv(stem + ".csv", rows)
            write_json(stem + ".json", payload)
    _finish(rows, payload, stem, args)
    return 0


def _report(r: dict) -> None:
    print(f"   {r['method']:9s} error {fmt(r['error'], '+.3f'):>8s} se {fmt(r['se'], '.3f'):>6s}"
          f"  cold {fmt(r['cold_s'], '.1f'):>6s} s  warm {fmt(r['warm_s'], '.1f'):>6s} s"
          + (f"  FAILURE: {r['failure'][:160]}" if r["failure"] else ""), flush=True)  # fmt: skip


def _finish(rows, payload, stem, args) -> None:
    payload["environment"]["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
    payload["environment"]["loadavg_at_end"] = list(os.getloadavg())
    write_json(stem + ".json", payload)
    _write_outputs(rows, stem, args)
    print("Timings are wall clock on a possibly shared machine: treat them as rough.")


def _write_outputs(rows, stem, args) -> None:
    table = markdown(rows)
    with open(stem + ".md", "w") as fh:
        fh.write(table + "\n")
    with open(stem + ".rst", "w") as fh:
        fh.write(rst(rows) + "\n")
    print("\n" + table)
    if args.plot:
        plot(rows, stem + ".png")
    print(f"\nwrote {stem}.csv, .md, .rst" + (", .png" if args.plot else ""))


if __name__ == "__main__":
    sys.exit(main())
