"""Minnesota radon: which pooling structure does the data support?

Estimates the marginal likelihood log Z (with its Monte Carlo standard error) of three
regressions of log radon on the floor of measurement (Gelman & Hill, 2007):

- ``pooled``: complete pooling, one intercept and one floor slope for all 85 counties;
- ``varying_intercept``: partially pooled county intercepts, a common floor slope;
- ``varying_intercept_slope``: partially pooled county intercepts and floor slopes;

then prints the comparison table (differences in log Z, Bayes factors and posterior model
probabilities under equal prior odds, each with its standard error).

Run with ``make demo`` or ``python scripts/demo.py --help``. Takes a few minutes on a
2-core machine; the first run also spends time compiling (PyTensor's cache is reused later).
``--method ct`` runs continuous tempering instead of the default SMC.
"""

from __future__ import annotations

import argparse
import sys
import time

DEFAULT_MODELS = ("pooled", "varying_intercept", "varying_intercept_slope")
ALL_MODELS = ("pooled", "unpooled", "varying_intercept", "varying_intercept_slope")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Compare radon models by their marginal likelihood.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--method", default="smc", help="evidence method (one of pymc_evidence.METHODS)"
    )
    parser.add_argument("--draws", type=int, default=None, help="draws (method default if unset)")
    parser.add_argument("--tune", type=int, default=None, help="tuning steps (method default)")
    parser.add_argument("--chains", type=int, default=None, help="chains or runs (method default)")
    parser.add_argument("--seed", type=int, default=2007, help="random seed (model i uses seed+i)")
    parser.add_argument(
        "--models",
        default=",".join(DEFAULT_MODELS),
        help=f"comma-separated subset of {', '.join(ALL_MODELS)}",
    )
    parser.add_argument(
        "--no-progressbar", action="store_true", help="hide the sampler's progress bar"
    )
    args = parser.parse_args(argv)
    args.models = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = sorted(set(args.models) - set(ALL_MODELS))
    if unknown or not args.models:
        parser.error(f"--models: unknown {unknown}; choose from {', '.join(ALL_MODELS)}")
    return args


def n_parameters(model) -> int:
    """Number of scalar free parameters (in the unconstrained space)."""
    return int(sum(v.size for v in model.initial_point().values()))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    import pandas as pd
    import pymc as pm

    import pymc_evidence as pme
    from pymc_evidence.datasets import load_radon, radon_models

    print(
        f"Python {sys.version.split()[0]}, PyMC {pm.__version__}, pymc_evidence {pme.__version__}"
    )
    if args.method not in pme.METHODS:
        print(f"--method: unknown {args.method!r}; choose from {', '.join(pme.METHODS)}")
        return 2
    settings = {k: getattr(args, k) for k in ("draws", "tune", "chains")}
    settings = {k: v for k, v in settings.items() if v is not None}
    sizes = "".join(f", {k}={v}" for k, v in settings.items()) or " at its default settings"
    data = load_radon()
    models = radon_models(data)
    print(
        f"Minnesota radon: {len(data)} houses in {len(data.attrs['counties'])} counties; "
        f"method {args.method}{sizes}\n"
    )

    results = {}
    total = time.perf_counter()
    for i, name in enumerate(args.models):
        model = models[name]
        print(f"== {name} ({n_parameters(model)} parameters)", flush=True)
        start = time.perf_counter()
        idata = pme.sample_evidence(
            model=model,
            method=args.method,
            **settings,
            random_seed=args.seed + i,
            progressbar=not args.no_progressbar,
        )
        elapsed = time.perf_counter() - start
        results[name] = idata
        print(f"{name}: {pme.log_evidence(idata)}", flush=True)
        print(f"{name}: wall time {elapsed:.1f} s\n", flush=True)

    print(f"Total wall time: {time.perf_counter() - total:.1f} s\n")
    table = pme.compare(results)
    with pd.option_context("display.width", 160, "display.max_columns", None):
        print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
