#!/usr/bin/env python
"""Every method at one seed on models with known log Z: error, se and the |error| / se rule.

Models: names of ``registry.py`` (``first_call_models`` names, ``pymc_evidence.testing``
factories, ...). A line per (model, method); ``ok`` when the error is within 4 se and 0.15 nats
and the se is at most 0.15, ``REFUSED`` with the first line of the refusal. Run from the
repository root::

    PYTHONPATH=. .venv/bin/python benchmarks/every_method.py mixture_2,lkj_cholesky
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from registry import build  # noqa: E402

METHODS = ("smc", "arm", "ais", "rais", "bar", "lis", "bridge", "ct", "gibbs_ct", "st")


def one(model, truth, method: str, seed: int) -> str:
    """One line: the method's error and se, or its refusal."""
    import pymc_evidence as pme

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata = pme.sample_evidence(
                model=model, method=method, random_seed=seed, progressbar=False
            )
    except Exception as err:  # a refusal before sampling, or a failure: both are reported
        return f"REFUSED {type(err).__name__}: {str(err).splitlines()[0][:120]}"
    est = pme.log_evidence(idata)
    err, se = est.log_z - truth, est.se
    ok = abs(err) <= 4 * se and abs(err) <= 0.15 and se <= 0.15
    return f"{'ok  ' if ok else 'FAIL'} error {err:+.3f} se {se:.3f}"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    for name in args.models.split(","):
        model, truth = build(name)
        for method in args.methods.split(","):
            print(f"{name:22s} {method:9s} {one(model, truth, method, args.seed)}", flush=True)
