#!/usr/bin/env python
"""Are the estimates bit-identical to a saved run? The check behind refactors that must not
change a number.

A fixed list of (model, method, seed) that covers every method, on small analytic models of
``pymc_evidence.testing`` (a conjugate regression, a Beta-Bernoulli, a two-mode likelihood);
each call at the method's defaults except for fewer NUTS draws. ``--save FILE`` writes every
``log_z`` and ``se`` as ``float.hex``, with the run-level checks (the shares of non-finite
log densities and of diverging HMC trajectories); ``--compare FILE`` runs again and lists
every difference (exit status 1 if any; checks missing from an older file are not
compared). Run from the repository root, one process for all::

    PYTHONPATH=. .venv/bin/python benchmarks/bit_identity.py --save /tmp/before.json
    # ... the refactor ...
    PYTHONPATH=. .venv/bin/python benchmarks/bit_identity.py --compare /tmp/before.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings

METHODS = ("smc", "arm", "ais", "rais", "bar", "lis", "bridge", "ct", "gibbs_ct", "st")
MODELS = ("conjugate_regression", "beta_bernoulli", "mixture_likelihood")
#: Run-level checks compared besides the estimate
CHECKS = ("nonfinite_fraction", "diverging_fraction", "n_divergences")
#: NUTS draws for the methods that run NUTS (the defaults' 1000 + 1000 take minutes here)
NUTS = {"draws": 400, "tune": 400}


#: Eight schools kept centred (``reparam=None``): HMC trajectories diverge in the funnel's
#: neck, so the particle methods' shares of diverging trajectories are not zero.
FUNNEL = "hierarchical_normal"
AS_WRITTEN = {FUNNEL: {"reparam": None}}


def cases() -> list[tuple[str, str, int]]:
    """Every method on the first model, the default and two NUTS methods on the others, and
    the particle methods on the kept funnel."""
    out = [(MODELS[0], method, 1) for method in METHODS]
    out += [(name, method, 2) for name in MODELS[1:] for method in ("smc", "bar", "ct")]
    out += [(FUNNEL, method, 3) for method in ("smc", "ais", "bar", "lis")]
    return out


def one(name: str, method: str, seed: int) -> dict:
    """``log_z``, ``se`` and the run-level checks of one seeded call, as hex strings."""
    import pymc_evidence as pme
    from pymc_evidence.testing.models import ALL_MODELS

    model = ALL_MODELS[name]().model
    kwargs = {} if method in ("smc", "arm", "ais") else dict(NUTS)
    kwargs.update(AS_WRITTEN.get(name, {}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pme.sample_evidence(
            model=model, method=method, random_seed=seed, progressbar=False, **kwargs
        )
    est = pme.log_evidence(idata)
    checks = {k: float(est.diagnostics[k]).hex() for k in CHECKS if k in est.diagnostics}
    return {"log_z": float(est.log_z).hex(), "se": float(est.se).hex(), "checks": checks}


def run_all() -> dict:
    results = {}
    for name, method, seed in cases():
        t = time.perf_counter()
        results[f"{name}/{method}/{seed}"] = one(name, method, seed)
        print(f"{name:22s} {method:9s} {time.perf_counter() - t:6.1f} s", flush=True)
    return results


def _differs(saved: dict, results: dict, key: str) -> bool:
    before, after = saved.get(key), results.get(key)
    if before is None or after is None:
        return True
    if "checks" not in before:  # an older file: the estimate only
        after = {k: v for k, v in after.items() if k != "checks"}
    return before != after


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--save", help="write the results to this JSON file")
    group.add_argument("--compare", help="compare with the results in this JSON file")
    args = parser.parse_args(argv)
    results = run_all()
    if args.save:
        with open(args.save, "w") as f:
            json.dump(results, f, indent=1, sort_keys=True)
        print(f"{len(results)} results written to {args.save}")
        return 0
    with open(args.compare) as f:
        saved = json.load(f)
    differ = [key for key in sorted(saved.keys() | results.keys()) if _differs(saved, results, key)]
    for key in differ:
        before, after = saved.get(key, {}), results.get(key, {})
        print(
            f"DIFFERS {key}: log_z {float.fromhex(before.get('log_z', 'nan')):.17g} -> "
            f"{float.fromhex(after.get('log_z', 'nan')):.17g}, se "
            f"{float.fromhex(before.get('se', 'nan')):.17g} -> "
            f"{float.fromhex(after.get('se', 'nan')):.17g}, checks "
            f"{before.get('checks')} -> {after.get('checks')}"
        )
    print(f"{len(results) - len(differ)} of {len(results)} bit-identical")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
