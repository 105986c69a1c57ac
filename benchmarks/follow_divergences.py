#!/usr/bin/env python
"""Follow the diverging HMC trajectories from the step that met them to the results.

Eight schools kept centred (``reparam=None``), ``method="ais"``: the engine's ``hmc_step``
and the method's ``run_forward_ais`` are wrapped to print what they return, so that one
count can be followed from ``Info.counts`` (each step) through ``AISInfo.counts`` (each
forward run) to the ``log_evidence`` group's ``diag_diverging_fraction``. Nothing on the
way is counted on a shared object (see :mod:`pymc_evidence.engines.counts`). Run from the
repository root::

    PYTHONPATH=. .venv/bin/python benchmarks/follow_divergences.py [--seed 3]
"""

from __future__ import annotations

import argparse
import warnings

import pymc_evidence as pme
import pymc_evidence.engines.ais as ais_engine
import pymc_evidence.methods.noneq as noneq
from pymc_evidence.compat import get_group
from pymc_evidence.testing.models import hierarchical_normal


def _spy(module, name: str, seen: list):
    """Wrap ``module.name`` so that the counts of what it returns are kept in ``seen``."""
    original = getattr(module, name)

    def wrapped(*args, **kwargs):
        first, info = original(*args, **kwargs)
        seen.append(info.counts)
        return first, info

    setattr(module, name, wrapped)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args(argv)
    steps, runs = [], []
    _spy(ais_engine, "hmc_step", steps)
    _spy(noneq, "run_forward_ais", runs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pme.sample_evidence(
            hierarchical_normal().model,
            method="ais",
            random_seed=args.seed,
            progressbar=False,
            reparam=None,
        )
    print("1. the first HMC step with a divergence, its Info.counts:")
    print("  ", next(c for c in steps if c.n_diverging))
    print(f"2. {len(runs)} forward run(s), AISInfo.counts (the last is kept):")
    for counts in runs:
        print("  ", counts)
    kept = runs[-1]
    print(
        f"3. run_checks: {kept.n_diverging} / {kept.n_trajectories} = {kept.diverging_fraction!r}"
    )
    group = get_group(idata, "log_evidence")
    print(f"4. log_evidence diag_diverging_fraction = {float(group['diag_diverging_fraction'])!r}")


if __name__ == "__main__":
    main()
