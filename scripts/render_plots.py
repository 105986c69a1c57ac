"""Render every public plot of :mod:`pymc_evidence.plots` to ``docs/_static/plots/*.png``.

Each plot on the results a user has in hand: one method's result, a cross-check, a
comparison of two models and one of five, on small models with exact log Z (a
Beta-Bernoulli coin, known-noise regressions on subsets of three predictors, a two-bump
mixture), seeded, so that a re-run draws the same pictures. ``docs/plots.rst`` shows
them. Run from the repository root (about half a minute)::

    .venv/bin/python scripts/render_plots.py
"""

from __future__ import annotations

import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402
from scipy import stats  # noqa: E402

import pymc_evidence as pme  # noqa: E402
from pymc_evidence.testing import beta_bernoulli, mixture_likelihood  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "docs" / "_static" / "plots"
QUIET = {"progressbar": False}


def _save(ax, name: str) -> None:
    fig = ax.figure if hasattr(ax, "figure") else ax.flat[0].figure
    fig.savefig(OUT / f"{name}.png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    print(f"wrote {name}.png", flush=True)


def subsets(n: int = 40, seed: int = 3):
    """Five regressions of one data set on subsets of three predictors (the third has no
    effect), known noise 1 and ``N(0, 1)`` weights: ``({name: model}, {name: log Z})``,
    ``log Z = log N(y; 0, I + X_S X_S')``."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = X @ [1.0, 0.4, 0.0] + rng.normal(size=n)
    models, truth = {}, {}
    for name, cols in {"none": [], "x1": [0], "x1+x2": [0, 1], "x2": [1],
                       "x1+x2+x3": [0, 1, 2]}.items():  # fmt: skip
        with pm.Model() as model:
            if cols:
                w = pm.Normal("w", 0.0, 1.0, shape=len(cols))
                pm.Normal("y", pm.math.dot(X[:, cols], w), 1.0, observed=y)
            else:
                pm.Normal("c", 0.0, 1.0)  # one free variable; the data do not depend on it
                pm.Normal("y", 0.0, 1.0, observed=y)
        cov = np.eye(n) + X[:, cols] @ X[:, cols].T
        models[name], truth[name] = model, stats.multivariate_normal(np.zeros(n), cov).logpdf(y)
    return models, truth


def comparisons() -> None:
    """``plot_compare``: one result, a cross-check, two models, five models."""
    coin = beta_bernoulli(n=40, heads=30)
    one = pme.sample_evidence(coin.model, random_seed=1, **QUIET)
    _save(pme.plot_compare({"coin": one}, reference={"coin": coin.log_z}), "compare_one")
    both = pme.sample_evidence(coin.model, method=["smc", "bridge"], random_seed=2, **QUIET)
    _save(pme.plot_compare({"coin": both}, reference={"coin": coin.log_z}), "compare_crosscheck")
    models, truth = subsets()
    results = {
        name: pme.sample_evidence(model, random_seed=10 + i, **QUIET)
        for i, (name, model) in enumerate(models.items())
    }
    two = {name: results[name] for name in ("x1", "x1+x2")}
    truth_two = {name: truth[name] for name in two}
    _save(pme.plot_compare(two, reference=truth_two), "compare_two")
    _save(pme.plot_compare(results, reference=truth), "compare_five")


def paths() -> None:
    """``plot_running_log_z`` on an SMC and a CT result, ``plot_work_overlap`` on BAR,
    ``plot_beta_trace`` on CT and ``plot_st_levels`` on ST, all on a two-bump mixture."""
    bumps = mixture_likelihood(d=2)
    smc = pme.sample_evidence(bumps.model, random_seed=4, **QUIET)
    _save(pme.plot_running_log_z(smc, reference=bumps.log_z), "running_smc")
    ct = pme.sample_evidence(bumps.model, method="ct", random_seed=5, draws=500, **QUIET)
    _save(pme.plot_running_log_z(ct, reference=bumps.log_z), "running_ct")
    _save(pme.plot_beta_trace(ct), "beta_trace")
    st = pme.sample_evidence(bumps.model, method="st", random_seed=6, draws=500, **QUIET)
    _save(pme.plot_st_levels(st), "st_levels")
    bar = pme.sample_evidence(bumps.model, method="bar", random_seed=7, **QUIET)
    _save(pme.plot_work_overlap(bar), "work_overlap")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        comparisons()
        paths()


if __name__ == "__main__":
    main()
