#!/usr/bin/env python
"""Wall time and accuracy of ``fit_base("advi", restarts=8)`` (batched ADVI).

For each model, a fresh model is built and ``fit_base`` is called twice on it with the same
seed: the first call pays for compiling the model's functions (cached per model), the second
does not, so ``compile ~ first - second``. ``err`` is ``base.log_zeta - log Z`` (exact).
``same`` says whether the two calls gave bit-identical bases (same seed).

Run from the repository root::

    PYTHONPATH=. .venv/bin/python benchmarks/advi_batching.py

Recorded output (this machine, 2 shared cores, PyMC 6.4 venv, seed 0). Before: the
sequential implementation (8 fits one after another, 4000 Adam steps each, the 4 Monte Carlo
draws of a step evaluated one point at a time):

    BEFORE
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import pymc_evidence as pme
from pymc_evidence.testing import conjugate_regression, hierarchical_normal

MODELS = {
    "conj_d5": lambda: conjugate_regression(d=5),
    "hier_noncentred_J8": lambda: hierarchical_normal(J=8, centered=False),
    "conj_d50": lambda: conjugate_regression(d=50),
}


def _fit(model, method, restarts, seed):
    start = time.perf_counter()
    base = pme.fit_base(method, restarts=restarts, random_seed=seed, model=model)
    return base, time.perf_counter() - start


def measure(name: str, method: str, restarts: int, seed: int) -> list[str]:
    """One row of the table: first/second call times, compile estimate, error vs exact."""
    case = MODELS[name]()
    first, t_first = _fit(case.model, method, restarts, seed)
    second, t_second = _fit(case.model, method, restarts, seed)
    same = bool(
        np.array_equal(first.mean, second.mean)
        and np.array_equal(first.cov, second.cov)
        and first.log_zeta == second.log_zeta
    )
    steps = first.info.get("n_steps", "-")
    return [
        name,
        f"{case.model.initial_point().__len__()}",
        f"{sum(np.size(v) for v in case.model.initial_point().values())}",
        f"{t_first:.2f}",
        f"{t_second:.2f}",
        f"{t_first - t_second:.2f}",
        f"{first.log_zeta:.3f}",
        f"{case.log_z:.3f}",
        f"{first.log_zeta - case.log_z:+.3f}",
        str(steps),
        str(same),
    ]


def table(header: list[str], rows: list[list[str]]) -> str:
    """Right-aligned plain-text table."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in [header, *rows]]
    return "\n".join(lines)


def main() -> None:
    """Parse arguments, measure each model, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--method", default="advi", choices=["advi", "fullrank_advi"])
    parser.add_argument("--restarts", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    header = ["model", "vars", "d", "first_s", "second_s", "compile_s", "log_zeta", "log_z"]
    header += ["err", "n_steps", "same"]
    rows = [measure(m, args.method, args.restarts, args.seed) for m in args.models.split(",")]
    print(f"fit_base({args.method!r}, restarts={args.restarts}, random_seed={args.seed})")
    print(table(header, rows))


if __name__ == "__main__":
    main()
