#!/usr/bin/env python
"""Centred models as written (``reparam=None``) against the automatic non-centred form
(``reparam="auto"``, the default), and ``pm.sample_smc``, on models with exact log Z.

Run from the repository root::

    PYTHONPATH=. python benchmarks/experiments/reparam_effect.py [--methods smc,bridge] [--seeds 1]

Printed on 2026-11-24 (2 cores, PyMC 6.4, seed 1; error = estimate - exact, ± se):
see ``docs/hard_models.rst`` for the table.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _common import quiet_logs  # noqa: E402


def models() -> dict:
    from pymc_evidence.testing import (
        centred_radon_intercepts,
        hierarchical_normal,
        hierarchical_normal_cauchy,
    )

    return {
        "eight_schools_halfnormal": lambda: hierarchical_normal(J=8, centered=True),
        "eight_schools_halfcauchy": lambda: hierarchical_normal_cauchy(J=8, centered=True),
        "radon_intercepts_centred": centred_radon_intercepts,
    }


def run_pme(case, method, reparam, seed):
    import pymc_evidence as pme

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pme.sample_evidence(
            case.model, method, random_seed=seed, progressbar=False, reparam=reparam
        )
    est = pme.log_evidence(idata)
    return est.log_z, est.se, len(est.warnings)


def run_pymc_smc(case, seed):
    import numpy as np
    import pymc as pm

    with case.model:
        idata = pm.sample_smc(draws=2000, chains=4, random_seed=seed, progressbar=False)
    lml = idata.sample_stats["log_marginal_likelihood"].values
    per_chain = [np.asarray(c, dtype=float).ravel() for c in lml.reshape(lml.shape[0], -1)]
    last = np.array([c[np.isfinite(c)][-1] for c in per_chain])
    return float(last.mean()), float(last.std(ddof=1) / np.sqrt(last.size)), 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--methods", default="smc,bridge,ct")
    p.add_argument("--seeds", type=int, default=1)
    args = p.parse_args(argv)
    quiet_logs(False)
    print("| model | method | reparam | error | se | warnings | time (s) |")
    print("|---|---|---|---|---|---|---|")
    for name, factory in models().items():
        case = factory()
        cells = [(m, r) for m in args.methods.split(",") for r in ("auto", None)]
        cells.append(("pm.sample_smc", "-"))
        for method, reparam in cells:
            for seed in range(1, args.seeds + 1):
                start = time.perf_counter()
                try:
                    if method == "pm.sample_smc":
                        log_z, se, n_warn = run_pymc_smc(case, seed)
                    else:
                        log_z, se, n_warn = run_pme(case, method, reparam, seed)
                    cell = f"{log_z - case.log_z:+.3f} | {se:.3f} | {n_warn}"
                except Exception as exc:  # a failing cell is reported, not fatal
                    cell = f"failed: {type(exc).__name__} | | "
                took = time.perf_counter() - start
                print(f"| {name} | {method} | {reparam} | {cell} | {took:.1f} |", flush=True)


if __name__ == "__main__":
    main()
