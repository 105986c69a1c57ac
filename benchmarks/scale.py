#!/usr/bin/env python
"""Time against size: hierarchies of growing ``J``, each tool in a fresh process.

Models: the sized ``kind:J`` models of ``sizes.py`` (its docstring lists each kind and how
its log Z is computed without pymc_evidence).

Tools: ``pme`` (the default), ``pymc_nuts`` (a plain ``pm.sample()``, 4 x 1000 after 1000
tuning) and ``pymc_smc`` (``pm.sample_smc(draws=2000, chains=4)``), as in
``first_call.py``. Every (tool, model) runs in a child process with an empty compile cache
(``PYTENSOR_FLAGS=base_compiledir=<new temp dir>``), which builds the model (not timed), times
the first call, and reports its peak resident memory. One child at a time; on a 2-core
machine read the ratios (taken back to back) rather than the seconds. The table ends with
the log-log slope of each tool's time against ``J``.

Run from the repository root::

    PYTHONPATH=. .venv/bin/python benchmarks/scale.py --models gauss:300,gauss:1000,gauss:3000
    PYTHONPATH=. .venv/bin/python benchmarks/scale.py --models poisson:300,poisson:1000 \\
        --tools pme,pymc_nuts --out /tmp/scale.json
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import child_result, estimate, run_child, tool_parser  # noqa: E402
from sizes import KINDS, sized  # noqa: E402


def child(tool: str, name: str, seed: int) -> dict:
    """One fresh process: build ``name`` (not timed; its log Z only for a tool that
    estimates one), time the tool's first call."""
    model, log_z = sized(name, truth=tool != "pymc_nuts")
    t = time.perf_counter()
    est, se = estimate(tool, model, seed)
    return {"tool": tool, "model": name, "truth": log_z, "log_z": est, "se": se,
            "first_s": time.perf_counter() - t}  # fmt: skip


def slopes(results: list[dict]) -> dict:
    """The least-squares slope of log time against log J, per tool and model kind."""
    out = {}
    for tool in {r["tool"] for r in results}:
        for kind in KINDS:
            rows = [r for r in results if r["tool"] == tool and r["model"].startswith(kind + ":")
                    and "first_s" in r]  # fmt: skip
            if len(rows) >= 2:
                size = np.log([int(r["model"].split(":")[1]) for r in rows])
                out[(tool, kind)] = float(
                    np.polyfit(size, np.log([r["first_s"] for r in rows]), 1)[0]
                )
    return out


def table(results: list[dict]) -> str:
    lines = ["| model | tool | first call (s) | peak (GiB) | error | se | ratio to pm.sample |",
             "|---|---|---|---|---|---|---|"]  # fmt: skip
    nuts = {r["model"]: r.get("first_s") for r in results if r["tool"] == "pymc_nuts"}
    for r in results:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['tool']} | {r['error']} | | | | |")
            continue
        err = r["log_z"] - r["truth"]
        ratio = r["first_s"] / nuts[r["model"]] if nuts.get(r["model"]) else float("nan")
        lines.append(f"| {r['model']} | {r['tool']} | {r['first_s']:.1f} | {r['peak_gib']:.2f} "
                     f"| {err:+.3f} | {r['se']:.3f} | {ratio:.2f} |")  # fmt: skip
    for (tool, kind), slope in sorted(slopes(results).items()):
        lines.append(f"\nlog-log slope of {tool}'s time against J ({kind}): {slope:.2f}")
    return "\n".join(lines)


def main(argv=None):
    parser = tool_parser(__doc__, "gauss:300,gauss:1000,poisson:300,poisson:1000", 1800.0,
                         tools=("pme", "pymc_nuts"))  # fmt: skip
    args = parser.parse_args(argv)
    if args.child:
        child_result(child(*args.child, args.seed))
        return
    results = []
    for name in args.models.split(","):
        for tool in args.tools.split(","):
            results.append(run_child(__file__, tool, name, ["--seed", str(args.seed)],
                                     args.timeout))  # fmt: skip
            print(json.dumps(results[-1]), flush=True)
    print(table(results))
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
