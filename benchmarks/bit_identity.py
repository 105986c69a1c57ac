#!/usr/bin/env python
"""Are the estimates bit-identical to a saved run? The check behind refactors that must not
change a number.

A fixed list of (model, method, seed) calls on models of ``registry.py``, each at the
method's defaults except for fewer NUTS draws, that covers:

* every method, on a conjugate regression of ``pymc_evidence.testing``, and a cross-check
  (a list of methods);
* the small analytic models (a Beta-Bernoulli, a two-mode likelihood) and the centred eight
  schools kept as written (``reparam=None``: HMC trajectories diverge in the funnel's neck);
* ``base="auto"`` above 30 dimensions (a logistic regression of 34 coefficients: mean-field
  ADVI, the Laplace Gaussian and full-rank ADVI compared);
* ``reparam="auto"`` integrating a hierarchy's group effects (a Poisson random intercept of
  40 groups: the base of the two hyperparameters given a defensive component), and a pair of
  them (random intercepts and slopes of 20 groups, whose base is widened);
* a discrete latent summed out (a Poisson change point, whose base is widened).

``--save FILE`` writes, per call, ``log_z`` and ``se`` as ``float.hex``, the run-level checks
(the shares of non-finite log densities and of diverging HMC trajectories) and a SHA-256 of
the whole ``log_evidence`` group (every variable's and coordinate's dtype, shape and bytes,
every attribute but the creation and sampling times, sorted by name) and of the
``posterior`` group (the same), with the hash of each item to name
what changed. ``--compare FILE`` runs again and lists every difference, item by item (exit
status 1 if any); what an older file lacks (the hashes, the checks, a call) is not
compared. ``--cases`` runs the calls whose key contains one of the given words. Run from
the repository root, one process for all::

    PYTHONPATH=. .venv/bin/python benchmarks/bit_identity.py --save /tmp/before.json
    # ... the refactor ...
    PYTHONPATH=. .venv/bin/python benchmarks/bit_identity.py --compare /tmp/before.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

METHODS = ("smc", "arm", "ais", "rais", "bar", "lis", "bridge", "ct", "gibbs_ct", "st")
MODELS = ("conjugate_regression", "beta_bernoulli", "mixture_likelihood")
#: Run-level checks compared besides the estimate
CHECKS = ("nonfinite_fraction", "diverging_fraction", "n_divergences")
#: NUTS draws for the methods that run NUTS (the defaults' 1000 + 1000 take minutes here)
NUTS = {"draws": 400, "tune": 400}
#: Methods that run no NUTS (``NUTS`` is not passed to them)
NO_NUTS = ("smc", "arm", "ais")
#: The groups hashed whole
GROUPS = ("log_evidence", "posterior")
#: Attributes that differ between identical calls (not hashed, not compared)
VOLATILE = ("created_at", "sampling_time")

#: Eight schools kept centred (``reparam=None``): HMC trajectories diverge in the funnel's
#: neck, so the particle methods' shares of diverging trajectories are not zero.
FUNNEL = "hierarchical_normal"
AS_WRITTEN = {FUNNEL: {"reparam": None}}
#: The names in ``registry.py`` of the models whose keys here differ (saved files use them)
REGISTERED = {"poisson_hierarchy_40": "poisson:40", "slopes_20": "slopes:20",
              "change_point": "change_point_30"}  # fmt: skip
#: The models beyond ``pymc_evidence.testing.models.ALL_MODELS`` and the methods run on each
WIDE = {
    "logistic_34": ("smc", "ct", "bridge"),
    "poisson_hierarchy_40": ("smc", "ct"),
    "slopes_20": ("smc",),
    "change_point": ("smc", "arm", "st"),
}


def cases() -> list[tuple[str, str, int]]:
    """Every method and a cross-check on the first model, the default and two NUTS methods
    on the others, the particle methods on the kept funnel, then the models of ``WIDE``.

    >>> cases()[0], len(cases())
    (('conjugate_regression', 'smc', 1), 30)
    """
    out = [(MODELS[0], method, 1) for method in METHODS]
    out += [(name, method, 2) for name in MODELS[1:] for method in ("smc", "bar", "ct")]
    out += [(FUNNEL, method, 3) for method in ("smc", "ais", "bar", "lis")]
    out += [(MODELS[0], "smc+bridge", 4)]
    out += [(name, method, 5) for name, methods in WIDE.items() for method in methods]
    return out


def build(name: str):
    """The PyMC model called ``name`` in :func:`cases` (a name of ``registry.py``, or of
    :data:`REGISTERED`)."""
    from registry import build as registered

    return registered(REGISTERED.get(name, name), truth=False)[0]


def _digest(value) -> bytes:
    """Bytes that stand for ``value``: an array's dtype, shape and data (its items' reprs
    when they are Python objects), else the ``repr``."""
    if isinstance(value, np.ndarray):
        data = repr(value.tolist()).encode() if value.dtype.kind == "O" else value.tobytes()
        return f"{value.dtype.str}{value.shape}".encode() + data
    return repr(value).encode()


def group_hashes(ds) -> dict:
    """``{"all": hash}`` of a whole dataset, plus the hash of each variable, coordinate and
    attribute (``var:``, ``coord:``, ``attr:`` prefixes) to tell which one changed."""
    items = {}
    for kind, mapping in (("var", ds.data_vars), ("coord", ds.coords)):
        for name, array in mapping.items():
            parts = [_digest(np.asarray(array.values)), repr(array.dims).encode()]
            parts += [k.encode() + _digest(v) for k, v in sorted(array.attrs.items())]
            items[f"{kind}:{name}"] = hashlib.sha256(b"\0".join(parts)).hexdigest()
    for name, value in ds.attrs.items():
        if name not in VOLATILE:
            items[f"attr:{name}"] = hashlib.sha256(_digest(value)).hexdigest()
    whole = hashlib.sha256("".join(f"{k}={v};" for k, v in sorted(items.items())).encode())
    return {"all": whole.hexdigest(), **dict(sorted(items.items()))}


def one(name: str, method: str, seed: int) -> dict:
    """``log_z``, ``se`` and the run-level checks of one seeded call, as hex strings, and
    the hashes of its ``log_evidence`` and ``posterior`` groups."""
    import pymc_evidence as pme
    from pymc_evidence.compat import get_group

    methods = method.split("+")
    nuts = any(m not in NO_NUTS for m in methods)
    kwargs = dict(NUTS) if nuts else {}
    kwargs.update(AS_WRITTEN.get(name, {}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pme.sample_evidence(
            model=build(name),
            method=methods if len(methods) > 1 else method,
            random_seed=seed,
            progressbar=False,
            **kwargs,
        )
    est = pme.log_evidence(idata)
    checks = {k: float(est.diagnostics[k]).hex() for k in CHECKS if k in est.diagnostics}
    hashes = {group: group_hashes(get_group(idata, group)) for group in GROUPS}
    return {"log_z": float(est.log_z).hex(), "se": float(est.se).hex(), "checks": checks,
            "groups": hashes}  # fmt: skip


def run_all(words=()) -> dict:
    """Every case of :func:`cases` (those whose key holds one of ``words``, if any)."""
    results = {}
    for name, method, seed in cases():
        key = f"{name}/{method}/{seed}"
        if words and not any(word in key for word in words):
            continue
        t = time.perf_counter()
        results[key] = one(name, method, seed)
        print(f"{name:22s} {method:10s} {time.perf_counter() - t:6.1f} s", flush=True)
    return results


def differences(before: dict, after: dict) -> list[str]:
    """What differs between two results of one call, compared on what ``before`` has."""
    out = [
        f"{k} {before[k]} -> {after.get(k)}" for k in ("log_z", "se") if before[k] != after.get(k)
    ]
    if "checks" in before and before["checks"] != after.get("checks"):
        out.append(f"checks {before['checks']} -> {after.get('checks')}")
    for group, hashes in before.get("groups", {}).items():
        new = after.get("groups", {}).get(group, {})
        items = (hashes.keys() | new.keys()) - {"all", *(f"attr:{k}" for k in VOLATILE)}
        changed = sorted(k for k in items if hashes.get(k) != new.get(k))
        if changed:
            out.append(f"{group}: {', '.join(changed)}")
    return out


def compare(saved: dict, results: dict) -> int:
    """Print every difference; the number of calls that differ."""
    n_differ = 0
    for key in sorted(saved.keys() | results.keys()):
        if key not in results:
            print(f"NOT RUN {key}")
            continue
        if key not in saved:
            print(f"NEW {key}: not in the saved file, not compared")
            continue
        found = differences(saved[key], results[key])
        if found:
            n_differ += 1
            print(f"DIFFERS {key}: " + "; ".join(found))
    print(f"{len(results) - n_differ} of {len(results)} bit-identical")
    return n_differ


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--save", help="write the results to this JSON file")
    group.add_argument("--compare", help="compare with the results in this JSON file")
    parser.add_argument("--cases", default="", help="comma-separated words of the keys to run")
    args = parser.parse_args(argv)
    results = run_all(tuple(w for w in args.cases.split(",") if w))
    if args.save:
        with open(args.save, "w") as f:
            json.dump(results, f, indent=1, sort_keys=True)
        print(f"{len(results)} results written to {args.save}")
        return 0
    with open(args.compare) as f:
        saved = json.load(f)
    return 1 if compare(saved, results) else 0


if __name__ == "__main__":
    sys.exit(main())
