"""Helpers shared by the benchmark scripts (not part of the package).

Model registry, environment record, JSON output and table formatting. The scripts import this
file as a sibling module, so run them as ``python benchmarks/<script>.py`` from the repository
root (with the repository on ``PYTHONPATH`` or the package installed).
"""

from __future__ import annotations

import json
import logging
import math
import os
import platform
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np


def _conj(d: int):
    def build():
        from pymc_evidence.testing.models import conjugate_regression

        system = conjugate_regression(d=d)
        return system.model, float(system.log_z)

    return build


def _analytic(factory_name: str, **kwargs):
    def build():
        from pymc_evidence.testing import models

        system = getattr(models, factory_name)(**kwargs)
        return system.model, float(system.log_z)

    return build


#: Give radon models the quadrature reference of ``radon_reference.py`` as their "truth"
#: (pooled, unpooled, varying_intercept; NaN otherwise). Scripts may switch it off.
USE_RADON_REFERENCE = True


def _radon(key: str):
    def build():
        from pymc_evidence.datasets import radon_models

        ref = math.nan
        if USE_RADON_REFERENCE:
            from radon_reference import radon_reference_log_z

            ref = radon_reference_log_z(key)
        return radon_models()[key], ref

    return build


#: benchmark name -> (description, builder returning (pm.Model, exact log Z or NaN))
MODELS: dict[str, tuple[str, Callable[[], tuple[Any, float]]]] = {
    "conj_d5": ("conjugate_regression(d=5)", _conj(5)),
    "conj_d50": ("conjugate_regression(d=50)", _conj(50)),
    "hier_centered": (
        "hierarchical_normal() (centered funnel, J=8)",
        _analytic("hierarchical_normal"),
    ),
    "beta_bernoulli": ("beta_bernoulli() (n=50)", _analytic("beta_bernoulli")),
    "mixture": ("mixture_likelihood()", _analytic("mixture_likelihood")),
    "normalized_density": ("normalized_density()", _analytic("normalized_density")),
    "radon_vi": (
        "radon_models()['varying_intercept'] (reference log Z by 2-D quadrature)",
        _radon("varying_intercept"),
    ),
    "radon_pooled": (
        "radon_models()['pooled'] (reference log Z by 1-D quadrature)",
        _radon("pooled"),
    ),
    "radon_unpooled": (
        "radon_models()['unpooled'] (reference log Z by 1-D quadrature)",
        _radon("unpooled"),
    ),
    "radon_vis": (
        "radon_models()['varying_intercept_slope'] (no reference log Z)",
        _radon("varying_intercept_slope"),
    ),
}


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
