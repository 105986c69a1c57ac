#!/usr/bin/env python
"""The nested quadrature's posterior draws alone, on ``npoisson:J`` of ``sizes.py``.

Integrates both effects out (:mod:`pymc_evidence.transforms.group_nested_quadrature`,
taken from 100 states, so ``J >= 2000``), then draws them back at ``--draws`` points near
``(mu, tau_s, tau_c) = (0, 0.5, 0.5)`` through the path a posterior takes
(``pymc_evidence.api.discrete``), and prints the seconds of each part and the first
draws' means. Run it in a fresh process with an empty compile cache, from the repository
root::

    PYTENSOR_FLAGS=base_compiledir=$(mktemp -d) PYTHONPATH=. \\
        .venv/bin/python benchmarks/experiments/nested_draws.py --groups 3000
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from pymc_evidence.api import discrete
from pymc_evidence.runtime.runtime import model_space
from pymc_evidence.testing.glmm_nested import nested_count_hierarchy
from pymc_evidence.transforms.group_effects import integrate_group_effects


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=3000, help="counties J")
    parser.add_argument("--draws", type=int, default=4000)
    args = parser.parse_args()
    J = args.groups
    system = nested_count_hierarchy(J=J, K=max(J // 20, 5), rows=4, seed=1, exact=False)
    t = time.perf_counter()
    out = integrate_group_effects(system.model)
    print(f"{type(out).__name__} {out.rule}: integrated in {time.perf_counter() - t:.1f} s")
    space = model_space(out.model)
    point = {"mu": 0.0, "tau_s": 0.5, "tau_c": 0.5}
    rvs = out.model.free_RVs
    x0 = np.asarray(space.unconstrain({rv.name: np.array([point[rv.name]]) for rv in rvs}))
    rng = np.random.default_rng(3)
    x = x0 + 0.05 * rng.standard_normal((args.draws, x0.shape[-1]))
    t = time.perf_counter()
    draws = discrete._draws(out, space, x, np.random.default_rng(1))
    print(f"{args.draws} draws in {time.perf_counter() - t:.1f} s (compilation included)")
    for name, value in draws.items():
        print(f"  {name} {value.shape}: first means {np.round(value.mean(0)[:4], 3)}")


if __name__ == "__main__":
    main()
