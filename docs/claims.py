"""Small, fast checks of the seed papers' qualitative claims with the current package.

Run from the repository root (a few minutes on two cores)::

    .venv/bin/python docs/claims.py

It prints two tables whose numbers are copied into ``docs/claims.rst``. The docs build never
runs this script.

Claim A (Habeck 2017): on the same set of nonequilibrium runs, Bennett's acceptance ratio
(BAR), which uses the forward *and* the reverse works, is closer to the truth than forward AIS
(biased low) or reverse AIS (biased high) alone, most visibly when the annealing schedule is
short.

Claim B (Graham & Storkey 2017; Carlson et al. 2016): tempering along a path that starts at
the prior visits both modes of a bimodal posterior and weighs them correctly, while plain NUTS
chains each stay in the mode they start in, and an annealing path from a one-mode Gaussian base
reports only that mode's share of the evidence.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import time
import warnings

import numpy as np

# Keep BLAS single-threaded: the machine is small and shared.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    __import__("os").environ.setdefault(_var, "1")

import pymc as pm  # noqa: E402

import pymc_evidence as pme  # noqa: E402
from pymc_evidence.compat import get_group  # noqa: E402
from pymc_evidence.estimators import (  # noqa: E402
    ais_log_evidence,
    bar_log_evidence,
    reverse_ais_log_evidence,
)
from pymc_evidence.testing import conjugate_regression, mixture_likelihood  # noqa: E402


def quiet() -> None:
    for name in ("pymc", "pymc.sampling", "pymc.stats.convergence", "pytensor"):
        logging.getLogger(name).setLevel(logging.ERROR)
    warnings.simplefilter("ignore")


# --------------------------------------------------------------------------------------------
# Claim A: BAR against forward-only and reverse-only AIS on the same works
# --------------------------------------------------------------------------------------------


def claim_bar(stages: list[int], seeds: list[int], n_particles: int) -> list[dict]:
    system = conjugate_regression(d=5)
    model, truth = system.model, system.log_z
    fitted = pme.fit_base("advi", model=model, random_seed=0)
    d = fitted.ndim
    # The weights' prior is N(0, I) in the unconstrained space: a base equal to the prior, so
    # the path is the power posterior and short schedules are visibly biased.
    base = dataclasses.replace(fitted, mean=np.zeros(d), chol=np.eye(d), kind="prior_gaussian")
    posterior = pm.sample(
        draws=500, tune=500, chains=2, cores=1, random_seed=1, progressbar=False,
        compute_convergence_checks=False, model=model,
    )
    rows = []
    for n_stages in stages:
        for seed in seeds:
            idata = pme.sample_evidence(
                model, method="bar", base=base, posterior=posterior, n_particles=n_particles,
                n_stages=n_stages, random_seed=seed, progressbar=False,
            )
            group = get_group(idata, "log_evidence")
            w_f = group["work_forward"].values
            w_r = group["work_reverse"].values
            for name, est in (
                ("ais (forward)", ais_log_evidence(w_f)),
                ("rais (reverse)", reverse_ais_log_evidence(w_r)),
                ("bar (both)", bar_log_evidence(w_f, w_r)),
            ):
                rows.append(
                    dict(n_stages=n_stages, seed=seed, method=name, error=est.log_z - truth,
                         se=est.se)
                )
    return rows


def summarize_bar(rows: list[dict]) -> None:
    print("Claim A: conjugate_regression(d=5), Gaussian base = prior, "
          f"{len({r['seed'] for r in rows})} seeds per cell, error = log_z - exact")
    header = f"{'n_stages':>8}  {'estimator':<15} {'mean error':>10} {'rms error':>9} " \
             f"{'mean se':>8} {'mean |err|/se':>13}"
    print(header)
    print("-" * len(header))
    for n_stages in sorted({r["n_stages"] for r in rows}):
        for method in ("ais (forward)", "rais (reverse)", "bar (both)"):
            cell = [r for r in rows if r["n_stages"] == n_stages and r["method"] == method]
            err = np.array([r["error"] for r in cell])
            se = np.array([r["se"] for r in cell])
            rms = np.sqrt(np.mean(err**2))
            print(f"{n_stages:>8}  {method:<15} {err.mean():>+10.3f} {rms:>9.3f} "
                  f"{se.mean():>8.3f} {np.mean(np.abs(err) / se):>13.1f}")
    print()


# --------------------------------------------------------------------------------------------
# Claim B: both modes of a bimodal posterior
# --------------------------------------------------------------------------------------------


def mode_one_fraction(x: np.ndarray, data) -> np.ndarray:
    """Per chain, the fraction of draws nearer the ``x = y - a`` mode (weight ``pi``)."""
    y, a = np.asarray(data["y"]), np.asarray(data["offset"])
    near_one = np.linalg.norm(x - (y - a), axis=-1) < np.linalg.norm(x - (y + a), axis=-1)
    return near_one.mean(axis=-1)


def exact_mode_one_mass(data) -> float:
    from scipy import stats

    y, a = np.asarray(data["y"]), np.asarray(data["offset"])
    sd = np.hypot(data["prior_sigma"], data["noise_sigma"])
    one = np.log(data["weight"]) + stats.norm.logpdf(y, a, sd).sum()
    two = np.log1p(-data["weight"]) + stats.norm.logpdf(y, -a, sd).sum()
    return float(1.0 / (1.0 + np.exp(two - one)))


#: substrings of the package's warning messages -> short labels for the table
_WARNING_TAGS = {
    "disagree": "chains disagree",
    "divergent": "divergences",
    "Kish ESS": "low ESS",
    "rarely visits": "beta end unvisited",
    "moments": "base moments",
    "overlap": "poor overlap",
    "round trip": "no round trip",
    "barely visited": "levels unvisited",
}


def warning_tags(messages) -> str:
    tags = [tag for key, tag in _WARNING_TAGS.items() if any(key in m for m in messages)]
    return ", ".join(tags) if tags else "-"


def _row(label, x, data, est=None, truth=np.nan):
    frac = mode_one_fraction(x, data)
    return dict(
        method=label,
        error=np.nan if est is None else est.log_z - truth,
        se=np.nan if est is None else est.se,
        per_chain=frac,
        pooled=frac.mean(),
        warnings="" if est is None else warning_tags(est.warnings),
    )


def claim_modes(draws: int, seed: int) -> tuple[list[dict], float]:
    system = mixture_likelihood()
    model, truth, data = system.model, system.log_z, system.data
    common = dict(draws=draws, tune=draws, chains=4, cores=1, random_seed=seed,
                  progressbar=False)
    rows = []

    nuts = pm.sample(model=model, compute_convergence_checks=False, **common)
    rows.append(_row("NUTS (pm.sample)", get_group(nuts, "posterior")["x"].values, data))

    for method in ("ct", "st"):
        idata = pme.sample_evidence(model, method=method, base="prior", **common)
        est = pme.log_evidence(idata)
        x = get_group(idata, "posterior")["x"].values
        rows.append(_row(f"{method}, base='prior'", x, data, est, truth))

    one_mode = pme.fit_base("advi", restarts=1, model=model, random_seed=seed)
    for method in ("ais", "ct"):
        options = dict(common) if method == "ct" else dict(random_seed=seed, progressbar=False)
        idata = pme.sample_evidence(model, method=method, base=one_mode, **options)
        est = pme.log_evidence(idata)
        x = get_group(idata, "posterior")["x"].values
        rows.append(_row(f"{method}, 1-mode ADVI base", x, data, est, truth))
    return rows, exact_mode_one_mass(data)


def summarize_modes(rows: list[dict], mass: float) -> None:
    print(f"Claim B: mixture_likelihood() (d=2, modes 8 apart), exact mass of mode 1 = {mass:.3f}")
    header = (
        f"{'method':<24} {'error':>8} {'se':>6}  {'mode-1 share per chain':<24} {'pooled':>6}"
        "  warnings"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        chains = " ".join(f"{v:.2f}" for v in np.atleast_1d(r["per_chain"]))
        err = "" if np.isnan(r["error"]) else f"{r['error']:+.3f}"
        se = "" if np.isnan(r["se"]) else f"{r['se']:.3f}"
        print(
            f"{r['method']:<24} {err:>8} {se:>6}  {chains:<24} {r['pooled']:>6.2f}  "
            f"{r['warnings']}"
        )
    print()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stages", default="5,20,80,320", help="schedule lengths for claim A")
    parser.add_argument("--seeds", type=int, default=10, help="seeds per cell for claim A")
    parser.add_argument("--particles", type=int, default=256, help="particles for claim A")
    parser.add_argument("--draws", type=int, default=1000, help="draws per chain for claim B")
    parser.add_argument("--only", choices=("A", "B"), help="run one claim only")
    args = parser.parse_args(argv)
    quiet()
    import sys

    import pymc

    print(f"pymc_evidence {pme.__version__}, PyMC {pymc.__version__}, "
          f"Python {sys.version.split()[0]}\n")
    t0 = time.perf_counter()
    if args.only in (None, "A"):
        stages = [int(s) for s in args.stages.split(",")]
        summarize_bar(claim_bar(stages, list(range(args.seeds)), args.particles))
        print(f"[claim A: {time.perf_counter() - t0:.0f} s]\n")
    t1 = time.perf_counter()
    if args.only in (None, "B"):
        summarize_modes(*claim_modes(args.draws, seed=2))
        print(f"[claim B: {time.perf_counter() - t1:.0f} s]")
    print(f"total {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
