"""Helpers shared by the benchmark scripts (not part of the package): the one argument
parser and runner of the tools, and the outputs.

* the tools (:data:`TOOLS`) and their estimates (:func:`estimate`, :func:`smc_chain_log_z`);
* :func:`tool_parser`, the arguments of a script that runs tools on models
  (``--models``, ``--tools``, ``--seed``, ``--timeout``, ``--out``);
* :func:`run_child`, one (tool, model) in a fresh process with an empty compile cache and a
  timeout, and :func:`child_result`, the child's side (its peak memory with its result);
* the environment record, JSON output and tables (:func:`markdown_table`).

The models are in ``registry.py``. The scripts import this file as a sibling module, so run
them as ``python benchmarks/<script>.py`` from the repository root (with the repository on
``PYTHONPATH`` or the package installed).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
import traceback

import numpy as np

#: What the timing scripts run on a model: ``pme.sample_evidence`` with the default method,
#: ``pm.sample_smc(draws=2000, chains=4)`` and ``pm.sample(draws=1000, tune=1000, chains=4)``
TOOLS = ("pme", "pymc_smc", "pymc_nuts")
#: The line a child prints its result on (JSON after it)
RESULT = "RESULT "


def parse_list(text: str, allowed, what: str) -> list[str]:
    items = [s.strip() for s in text.split(",") if s.strip()]
    unknown = [s for s in items if s not in allowed]
    if unknown or not items:
        raise SystemExit(f"{what}: unknown {unknown}; choose from {', '.join(allowed)}")
    return items


def quiet_logs(verbose: bool) -> None:
    """Silence PyMC's per-run INFO chatter (it goes to stderr) unless ``verbose``."""
    if not verbose:
        for name in ("pymc", "pymc.sampling", "pymc.smc", "pymc.stats.convergence"):
            logging.getLogger(name).setLevel(logging.ERROR)


def _git_state() -> dict:
    """Commit and dirty flag of the repository the package is imported from (if a git tree)."""
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "pymc_evidence"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    return {
        "git_commit": head,
        "package_dirty": bool(dirty.strip()),
        "package_dirty_files": dirty.split()[1::2],
    }


def environment() -> dict:
    import pymc
    import pytensor

    try:
        import pymc_evidence

        pme_version = getattr(pymc_evidence, "__version__", "?")
    except Exception:  # pragma: no cover - reported, not fatal
        pme_version = "import failed"
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "pymc": pymc.__version__,
        "pytensor": pytensor.__version__,
        "numpy": np.__version__,
        "pymc_evidence": pme_version,
        "argv": sys.argv,
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        "loadavg_at_start": list(os.getloadavg()),
        **_git_state(),
    }


def failure(exc: BaseException) -> dict:
    return {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}


def to_jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, (np.floating, float)):
        value = float(obj)
        return value if math.isfinite(value) else None
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.bool_,)):
        return bool(obj)
    return obj


def write_json(path: str | None, payload: dict) -> None:
    """Write atomically (a crash mid-run leaves the previous, complete file)."""
    if not path:
        return
    tmp = f"{path}.tmp"
    with open(tmp, "w") as fh:
        json.dump(to_jsonable(payload), fh, indent=2)
    os.replace(tmp, path)


def fmt(value, spec: str = ".3f", width: int = 0) -> str:
    try:
        v = float(value)
    except (TypeError, ValueError):
        text = str(value)
    else:
        text = "-" if not math.isfinite(v) else format(v, spec)
    return text.rjust(width) if width else text


def table(header: list[str], rows: list[list[str]]) -> str:
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)
    ]
    line = "  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True))
    out = [line, "-" * len(line)]
    out += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(out)


def markdown_table(header: list[str], rows: list[list]) -> str:
    """A markdown table (``|``-separated, a ``---`` rule under the header).

    >>> print(markdown_table(["a", "b"], [[1, 2]]))
    | a | b |
    |---|---|
    | 1 | 2 |
    """
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows])


# ------------------------------------------------------------------------------------------
# Tools and their estimates


def _flat_floats(x):
    """All scalars inside ``x`` (nested lists / object arrays), in order, as floats."""
    if isinstance(x, (list, tuple, np.ndarray)):
        for el in np.asarray(x, dtype=object).ravel():
            yield from _flat_floats(el)
    else:
        try:
            yield float(x)
        except (TypeError, ValueError):
            yield math.nan


def per_chain_entries(values, n_chains: int) -> list:
    """Split a stored SMC statistic into one entry per chain.

    PyMC builds ``sample_stats`` from one list (one value per stage) per chain. When the
    chains ran different numbers of stages the lists are ragged, NumPy makes a 1-D object
    array of ``n_chains`` lists and ArviZ labels it ``(chain=1, draw=n_chains)``; with equal
    stage counts it is a float array ``(chain, stage)``; with a single stored value per chain
    it is ``(chain, 1)``. So rely on the count of chains, not on the dimension labels.
    """
    vals = np.asarray(values, dtype=object)
    if vals.ndim >= 1 and vals.shape[0] == n_chains:
        return [vals[i] for i in range(n_chains)]
    if vals.size == n_chains:
        return list(vals.ravel())
    if vals.ndim >= 2 and vals.shape[0] == 1 and vals.shape[1] == n_chains:
        return [vals[0, i] for i in range(n_chains)]
    if vals.size % n_chains == 0:
        return list(vals.reshape(n_chains, -1))
    raise ValueError(f"cannot split a statistic of shape {vals.shape} into {n_chains} chains")


def n_stages(values, n_chains: int) -> list[int]:
    """The number of stored stages of each chain of an SMC statistic."""
    return [len(list(_flat_floats(b))) for b in per_chain_entries(values, n_chains)]


def smc_chain_log_z(idata, n_chains: int) -> np.ndarray:
    """Per-chain log Z of a ``pm.sample_smc`` result: the last finite stored value per chain."""
    lml = idata.sample_stats["log_marginal_likelihood"].values
    out = []
    for entry in per_chain_entries(lml, n_chains):
        finite = [v for v in _flat_floats(entry) if math.isfinite(v)]
        out.append(finite[-1] if finite else math.nan)
    return np.asarray(out, dtype=float)


def estimate(tool: str, model, seed: int, backend: str | None = None) -> tuple[float, float]:
    """``(log_z, se)`` of one call of a tool of :data:`TOOLS` on ``model`` (NaN for
    ``pymc_nuts``, a posterior only); ``pymc_smc``'s are the mean of its chains' log Z and
    their spread over the root of their number. ``pme``'s ``backend`` defaults to the
    environment's ``PME_BENCH_BACKEND`` (``first_call.py --backend`` sets it)."""
    import pymc as pm

    if tool == "pme":
        import pymc_evidence as pme

        backend = backend or os.environ.get("PME_BENCH_BACKEND") or None
        idata = pme.sample_evidence(
            model=model, random_seed=seed, progressbar=False, backend=backend
        )
        est = pme.log_evidence(idata)
        return float(est.log_z), float(est.se)
    if tool == "pymc_smc":
        idata = pm.sample_smc(draws=2000, chains=4, model=model, random_seed=seed,
                              progressbar=False)  # fmt: skip
        per_chain = smc_chain_log_z(idata, 4)
        return float(np.mean(per_chain)), float(np.std(per_chain, ddof=1) / np.sqrt(4))
    if tool != "pymc_nuts":
        raise ValueError(f"unknown tool {tool!r}; one of {TOOLS}")
    pm.sample(draws=1000, tune=1000, chains=4, model=model, random_seed=seed, progressbar=False)
    return math.nan, math.nan


# ------------------------------------------------------------------------------------------
# The argument parser and the runner


def tool_parser(doc: str, models: str, timeout: float, tools=TOOLS) -> argparse.ArgumentParser:
    """The arguments of a script that runs tools on models, each in a fresh process:
    ``--models`` (``registry.py``'s names, comma-separated), ``--tools``, ``--seed``,
    ``--timeout`` (seconds a child may take), ``--out`` and the child's ``--child TOOL
    MODEL``; the script adds its own.

    >>> tool_parser("Doc.", "gauss:300", 600.0).parse_args([]).tools
    'pme,pymc_smc,pymc_nuts'
    """
    parser = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    parser.add_argument("--models", default=models, help="comma-separated names of registry.py")
    parser.add_argument("--tools", default=",".join(tools), help=f"a subset of {TOOLS}")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=timeout, help="seconds per child")
    parser.add_argument("--out")
    parser.add_argument("--child", nargs=2, metavar=("TOOL", "MODEL"), help=argparse.SUPPRESS)
    return parser


def run_child(script: str, tool: str, name: str, args: list[str], timeout: float) -> dict:
    """Run ``script --child TOOL NAME ARGS`` in a fresh process with an empty compile cache
    (``PYTENSOR_FLAGS=base_compiledir=<new temp dir>``: PyTensor's C cache and, with
    PyTensor >= 3, its numba cache) and the repository on ``PYTHONPATH``; its
    :func:`child_result`, with ``process_s`` (the child's wall time), or an ``error``."""
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.TemporaryDirectory(prefix="bench_") as cache:
        flags = [env.get("PYTENSOR_FLAGS", ""), f"base_compiledir={cache}"]
        env["PYTENSOR_FLAGS"] = ",".join(f for f in flags if f)
        env["PYTHONPATH"] = os.pathsep.join([root, env.get("PYTHONPATH", "")])
        cmd = [sys.executable, script, "--child", tool, name, *args]
        t = time.perf_counter()
        try:
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"tool": tool, "model": name, "error": f"timeout after {timeout:.0f} s"}
        wall = time.perf_counter() - t
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(RESULT):
            return {**json.loads(line[len(RESULT) :]), "process_s": wall}
    return {"tool": tool, "model": name, "error": proc.stderr.strip().splitlines()[-3:]}


def child_result(result: dict) -> None:
    """Print a child's ``result`` for :func:`run_child`, with ``peak_gib``, the peak resident
    memory of the process."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB
    print(RESULT + json.dumps({**result, "peak_gib": peak}), flush=True)
