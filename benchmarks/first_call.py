#!/usr/bin/env python
"""What a user meets: the first evidence of a new model, against PyMC, each in a fresh process.

For every model of the ``first_call`` family of ``registry.py`` (models as users write them,
each with a log Z computed independently in ``first_call_models.py``; ``--models`` takes any
name of the registry) and every tool:

* ``pme``: ``pme.sample_evidence(random_seed=seed)``, the default method and settings;
* ``pymc_smc``: ``pm.sample_smc(draws=2000, chains=4)``; its estimate is the mean over chains
  of the last finite ``log_marginal_likelihood``, its se their spread / sqrt(chains);
* ``pymc_nuts``: ``pm.sample(draws=1000, tune=1000, chains=4)``, a posterior and no evidence:
  the cost of the posterior alone,

a child process is started with an empty compile cache
(``PYTENSOR_FLAGS=base_compiledir=<new temp dir>``: PyTensor's C cache and numba cache both live
there), builds the model (not timed), then times the tool's first call (``first_s``: everything
it compiles included) and ``--warm`` (3) more calls in the same process, each with another
seed (``warm_s``: their median).
``import_s`` is the time to import pymc and the tool. Children run one at a time: on a
shared or 2-core machine read the ratios, which are taken back to back, not the seconds.

Run from the repository root (about 20-40 minutes for every model)::

    PYTHONPATH=. .venv/bin/python benchmarks/first_call.py --out /tmp/first_call
    PYTHONPATH=. .venv/bin/python benchmarks/first_call.py --models mixture_2 --tools pme

``--backend jax`` runs pme's batched densities on JAX's default device (a GPU where jax sees
one; ``JAX_PLATFORMS=cpu`` keeps it on the CPU): ``benchmarks/gpu_first_call.sh`` does that on
a GPU machine.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import TOOLS, child_result, estimate, run_child, tool_parser  # noqa: E402
from registry import build, model_names, ndim  # noqa: E402


def child(tool: str, name: str, seed: int, warm: int = 3) -> dict:
    """One fresh process: build the model, time a first call, then ``warm`` more (seeds
    ``seed + 1, ...``): ``warm_s`` is their median (a single warm call varies by a second or
    more between processes), ``warm_all_s`` every one, the estimate that of the first of
    them."""
    t0 = time.perf_counter()
    import pymc  # noqa: F401

    if tool == "pme":
        import pymc_evidence  # noqa: F401
    import_s = time.perf_counter() - t0
    model, log_z = build(name)
    out = {"tool": tool, "model": name, "truth": log_z, "import_s": import_s}
    times = []
    for i in range(1 + max(int(warm), 1)):
        key = "first" if i == 0 else "warm"
        t = time.perf_counter()
        est, se = estimate(tool, model, seed + i)
        times.append(time.perf_counter() - t)
        if i <= 1:
            out[f"{key}_log_z"], out[f"{key}_se"] = est, se
    out["first_s"], out["warm_s"] = times[0], float(np.median(times[1:]))
    out["warm_all_s"] = times[1:]
    # after the calls: PyMC's initial-point function compiles C (an LKJCholeskyCov's Scan:
    # seconds), which a first call must pay, not the harness before it
    out["ndim"] = ndim(model)
    return out


def merged_repeats(results: list[dict]) -> list[dict]:
    """One result per model and tool: with repeats, the median of each time over them and
    ``pair_*``, the medians of the ratios to ``pm.sample_smc`` taken within each repeat
    (back to back, under the same load; a single warm call of ``pm.sample_smc`` on the
    3-component mixture took 4.3 s one day and 5.1-7.1 s in three processes the next)."""
    groups: dict = {}
    for r in results:
        groups.setdefault((r["model"], r["tool"]), []).append(r)
    merged = []
    for (model, _tool), runs in groups.items():
        ok = [r for r in runs if "first_s" in r]
        if len(runs) == 1 or not ok:
            merged.append(runs[0])
            continue
        out = {**ok[0], "repeats": len(ok)}
        for key in ("first_s", "warm_s"):
            out[key] = float(np.median([r[key] for r in ok]))
        smc = {r.get("repeat"): r for r in groups.get((model, "pymc_smc"), []) if "first_s" in r}
        for key in ("first_s", "warm_s"):
            pairs = [r[key] / smc[r["repeat"]][key] for r in ok if r.get("repeat") in smc]
            if pairs:
                out[f"pair_{key}"] = [round(x, 3) for x in pairs]
        merged.append(out)
    return merged


def _ratio(a, b):
    return a / b if a and b else float("nan")


def _smc_ratio(p: dict, s: dict, key: str) -> float:
    """pme's time over ``pm.sample_smc``'s: the median of the paired ratios with repeats."""
    pairs = p.get(f"pair_{key}")
    return float(np.median(pairs)) if pairs else _ratio(p.get(key), s.get(key))


def table(results: list[dict]) -> str:
    """One markdown row per model: times, ratios to pm.sample_smc and pm.sample, errors."""
    by = {(r["model"], r["tool"]): r for r in results}
    models = list(dict.fromkeys(r["model"] for r in results))
    head = (
        "| model | d | pme first | smc first | nuts first | pme/smc first | pme/nuts first "
        "| pme warm | smc warm | pme/smc warm | pme error (se) | smc error (se) |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|"
    )
    rows = [head]
    for m in models:
        p, s, n = (by.get((m, t), {}) for t in TOOLS)
        d = next((r.get("ndim") for r in (p, s, n) if "ndim" in r), "")

        def t_(r, k):
            return f"{r[k]:.1f}" if k in r else r.get("error", "-") and "fail"

        def err(r):
            if "first_log_z" not in r:
                return "-"
            return f"{r['first_log_z'] - r['truth']:+.3f} ({r['first_se']:.3f})"

        rows.append(
            f"| {m} | {d} | {t_(p, 'first_s')} | {t_(s, 'first_s')} | {t_(n, 'first_s')} "
            f"| {_smc_ratio(p, s, 'first_s'):.2f} "
            f"| {_ratio(p.get('first_s'), n.get('first_s')):.2f} "
            f"| {t_(p, 'warm_s')} | {t_(s, 'warm_s')} "
            f"| {_smc_ratio(p, s, 'warm_s'):.2f} | {err(p)} | {err(s)} |"
        )
    ratios = [
        _smc_ratio(by[(m, "pme")], by[(m, "pymc_smc")], "first_s")
        for m in models
        if (m, "pme") in by and (m, "pymc_smc") in by
    ]
    ratios = [r for r in ratios if np.isfinite(r)]
    if ratios:
        rows.append(
            f"\nmedian pme/smc first-call ratio: {np.median(ratios):.2f} (max {max(ratios):.2f})"
        )
    return "\n".join(rows)


def main(argv=None):
    parser = tool_parser(__doc__, "all", 900.0)
    parser.add_argument(
        "--warm", type=int, default=3, help="warm calls after the first (their median is shown)"
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="fresh processes per tool and model, the tools' order alternating; the table "
        "shows each tool's median times and the medians of the paired ratios",
    )
    parser.add_argument(
        "--backend",
        default=None,
        help="pme's batched backend (auto, default, jax); children inherit it",
    )
    parser.set_defaults(out="/tmp/first_call")
    args = parser.parse_args(argv)
    if args.backend:
        os.environ["PME_BENCH_BACKEND"] = args.backend
    if args.child:
        child_result(child(*args.child, args.seed, args.warm))
        return
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results, tools = [], args.tools.split(",")
    extra = ["--seed", str(args.seed), "--warm", str(args.warm)]
    for name in model_names(args.models):
        for r in range(max(args.repeat, 1)):
            for tool in tools if r % 2 == 0 else tools[::-1]:
                result = run_child(__file__, tool, name, extra, args.timeout)
                results.append({**result, "repeat": r})
                print(json.dumps(result), flush=True)
                (out / "results.json").write_text(json.dumps(results, indent=1))
    text = table(merged_repeats(results))
    (out / "table.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
