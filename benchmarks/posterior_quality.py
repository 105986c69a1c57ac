#!/usr/bin/env python
"""The default's posterior against exact or long-NUTS references (issue 50).

Five model kinds: a conjugate regression (exact Gaussian posterior), a Poisson change point
with a ``pm.DiscreteUniform`` switch (each rate's posterior is a mixture of Gammas over the
switch, exact), a bambi hierarchy ``y ~ 1 + x + (1|g)`` with bambi's default priors (a long
``bmb.Model.fit``; the group scale's quantiles exact by quadrature), a 2-component
``NormalMixture`` with exchangeable components (a long NUTS run, its draws symmetrised over
the labels, as the posterior is) and a latent GP (a long NUTS run). NUTS references are
computed once (``--reference``, seeded) and stored in ``posterior_references.json``.

For each seed and each scalar of the reference (integer variables left out), the default's
5, 50, 95 and 99 % quantiles are compared with the reference's through
``z = (q - q_ref) / sqrt(mcse^2 + mcse_ref^2)``, both MCSEs ArviZ's (``az.mcse(...,
method="quantile")``, the runs as chains; a symmetrised reference's MCSE times sqrt(2), as
its two halves are one draw set). The ESS check: ``az.ess(method="mean")`` of each scalar,
against the spread of the seeds' means about the reference mean, pooled as the mean of
``(mean - mean_ref)^2 / (var / ess + mcse_ref^2)`` over scalars and seeds (1 when the
reported ESS is right; its inverse is the implied ESS over the reported).

    PYTHONPATH=. .venv/bin/python benchmarks/posterior_quality.py --seeds 1-5
    PYTHONPATH=. .venv/bin/python benchmarks/posterior_quality.py --reference  # NUTS refs
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import arviz as az
import numpy as np
from scipy import optimize, special, stats
from scipy.special import logsumexp

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
QS = (0.05, 0.5, 0.95, 0.99)
REFERENCES = HERE / "posterior_references.json"
NUTS = {"draws": 4000, "tune": 2000, "chains": 4, "target_accept": 0.95}
NUTS_SEED = 20261205


def scalars(dataset) -> dict[str, np.ndarray]:
    """Each real scalar of a posterior as ``(chain, draw)`` draws, named ``var[i,j]``."""
    out = {}
    for name, da in dataset.data_vars.items():
        values = np.asarray(da.values)
        if not np.issubdtype(values.dtype, np.floating):
            continue
        flat = values.reshape(values.shape[0], values.shape[1], -1)
        for k in range(flat.shape[2]):
            index = np.unravel_index(k, values.shape[2:])
            key = name if values.ndim == 2 else f"{name}[{','.join(map(str, index))}]"
            out[key] = flat[:, :, k]
    return out


def summary(draws: np.ndarray, factor: float = 1.0) -> dict:
    """Quantiles, their MCSEs (times ``factor``), mean, variance and the mean's MCSE."""
    mcse = [float(az.mcse(draws, method="quantile", prob=q)) * factor for q in QS]
    return {
        "quantiles": [float(np.quantile(draws, q)) for q in QS],
        "mcse": mcse,
        "mean": float(draws.mean()),
        "var": float(draws.var()),
        "mean_mcse": float(az.mcse(draws, method="mean")) * factor,
    }


def exact(quantiles, mean, var) -> dict:
    """A reference known exactly (no Monte Carlo error)."""
    n = len(QS)
    return {"quantiles": list(map(float, quantiles)), "mcse": [0.0] * n, "mean": float(mean),
            "var": float(var), "mean_mcse": 0.0}  # fmt: skip


# -------------------------------------------------------------------------- models


def regression():
    """Conjugate regression, 5 weights: ``w | y ~ N(S X'y / s^2, S)``, ``S^-1 = X'X / s^2 +
    I / t^2``."""
    from pymc_evidence.testing import conjugate_regression

    system = conjugate_regression(d=5)
    data = system.data
    X, y, s, t = data["X"], data["y"], data["sigma"], data["prior_sigma"]
    cov = np.linalg.inv(X.T @ X / s**2 + np.eye(X.shape[1]) / t**2)
    mean = cov @ X.T @ y / s**2
    refs = {}
    for k in range(mean.size):
        sd = np.sqrt(cov[k, k])
        refs[f"w[{k}]"] = exact(stats.norm.ppf(QS, mean[k], sd), mean[k], sd**2)
    return system.model, refs


def _gamma_mixture(weights, shapes, rates) -> dict:
    """Exact quantiles, mean and variance of a mixture of Gammas."""

    def cdf(v):
        return float(np.sum(weights * stats.gamma.cdf(v, shapes, scale=1 / rates)))

    hi = float(np.max(stats.gamma.ppf(0.9999, shapes, scale=1 / rates)))
    qs = [optimize.brentq(lambda v, q=q: cdf(v) - q, 1e-12, hi, xtol=1e-12) for q in QS]
    mean = np.sum(weights * shapes / rates)
    second = np.sum(weights * shapes * (shapes + 1) / rates**2)
    return exact(qs, mean, second - mean**2)


def _log_marginal(shape, rate, a: float, b: float) -> np.ndarray:
    """``log int Gamma(lam; a, b) prod Poisson(c; lam) dlam`` up to the counts' factorials
    (the same for every switch)."""
    return a * np.log(b) - special.gammaln(a) + special.gammaln(shape) - shape * np.log(rate)


def change_point():
    """``user_models.change_point``: given the switch ``s = k``, ``early ~ Gamma(a + sum of
    the first k + 1 counts, b + k + 1)`` and ``late`` likewise; ``p(s = k | y)`` from the
    Gamma-Poisson marginals."""
    from pymc.backends.arviz import find_observations
    from user_models import change_point as build

    model, _ = build()
    counts = np.asarray(find_observations(model)["y"], dtype=float)
    a, b, n = 2.0, 0.5, counts.size
    k = np.arange(n)
    head = np.cumsum(counts)  # the sum of the first k + 1
    shape_e, rate_e = a + head, b + k + 1
    shape_l, rate_l = a + counts.sum() - head, b + n - k - 1
    log_w = _log_marginal(shape_e, rate_e, a, b) + _log_marginal(shape_l, rate_l, a, b)
    weights = np.exp(log_w - logsumexp(log_w))
    return model, {
        "early": _gamma_mixture(weights, shape_e, rate_e),
        "late": _gamma_mixture(weights, shape_l, rate_l),
    }


def _bambi_data(J: int = 12, rows: int = 5, seed: int = 1):
    """``tests/api/test_bambi_models``'s data: groups of ``rows`` rows (one short by two), a
    predictor far from zero."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(J), rows)[2:]
    x = rng.normal(size=g.size) + 2.0
    y = 1.0 + 0.5 * x + rng.normal(0.0, 0.7, J)[g] + rng.normal(size=g.size)
    return pd.DataFrame({"y": y, "x": x, "g": pd.Categorical(g)})


def bambi_hierarchy():
    """bambi's ``y ~ 1 + x + (1|g)``, default priors; references from ``bmb.Model.fit``, the
    group scale's quantiles exact (:func:`pymc_evidence.testing.bambi_truth.scale_quantiles`)."""
    import bambi as bmb

    from pymc_evidence.testing.bambi_truth import bambi_priors, scale_quantiles

    df = _bambi_data()
    model = bmb.Model("y ~ 1 + x + (1|g)", df)
    model.build()
    refs = dict(_stored("bambi_hierarchy"))
    priors = bambi_priors(model.backend.model)
    codes = df["g"].cat.codes.to_numpy()
    q = scale_quantiles(df["y"], df["x"], codes, priors, QS)
    if "1|g_sigma" in refs:  # the moments stay the long run's
        refs["1|g_sigma"] = {**refs["1|g_sigma"], "quantiles": list(q), "mcse": [0.0] * len(QS)}
    return model, refs


def mixture():
    """``first_call_models.mixture``: two exchangeable components, 12 points."""
    from first_call_models import mixture as build

    model, _ = build(k=2, n=12)
    return model, _stored("mixture")


def gp_latent():
    """``first_call_models.gp_latent``: ``pm.gp.Latent``, 20 points."""
    from first_call_models import gp_latent as build

    model, _ = build()
    return model, _stored("gp_latent")


MODELS = {
    "regression": regression,
    "change_point": change_point,
    "bambi_hierarchy": bambi_hierarchy,
    "mixture": mixture,
    "gp_latent": gp_latent,
}
NUTS_REFERENCED = ("bambi_hierarchy", "mixture", "gp_latent")


def _stored(name: str) -> dict:
    if not REFERENCES.exists():
        raise SystemExit(f"no {REFERENCES.name}: run with --reference first")
    return json.loads(REFERENCES.read_text())[name]["scalars"]


# -------------------------------------------------------------------------- references


def _symmetrised(post) -> dict[str, np.ndarray]:
    """A 2-component mixture's draws with the labels swapped appended (the posterior is
    exchangeable in them)."""
    swapped = post.isel(w_dim_0=[1, 0], mu_dim_0=[1, 0])
    draws = scalars(post)
    other = scalars(swapped)
    return {k: np.concatenate([v, other[k]], axis=1) for k, v in draws.items()}


def reference(name: str) -> dict:
    """A long NUTS run's summaries of every scalar of model ``name``."""
    import pymc as pm

    from pymc_evidence.compat import get_group

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name == "bambi_hierarchy":
            import bambi as bmb

            bm = bmb.Model("y ~ 1 + x + (1|g)", _bambi_data())
            idata = bm.fit(**NUTS, random_seed=NUTS_SEED, progressbar=False)
        else:
            from first_call_models import gp_latent as gp
            from first_call_models import mixture as mix

            model = mix(k=2, n=12)[0] if name == "mixture" else gp()[0]
            with model:
                idata = pm.sample(**NUTS, random_seed=NUTS_SEED, progressbar=False)
    post = get_group(idata, "posterior")
    if name == "mixture":
        draws, factor = _symmetrised(post), np.sqrt(2.0)
    else:
        draws, factor = scalars(post), 1.0
    return {
        "sampler": {**NUTS, "random_seed": NUTS_SEED, "pymc": pm.__version__},
        "scalars": {k: summary(v, factor) for k, v in draws.items()},
    }


# -------------------------------------------------------------------------- comparison


def compare(name: str, seed: int) -> dict:
    """The default's run at ``seed`` against model ``name``'s reference."""
    import pymc_evidence as pme
    from pymc_evidence.compat import get_group

    model, refs = MODELS[name]()
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pme.sample_evidence(model, random_seed=seed, progressbar=False)
    seconds = time.perf_counter() - start
    draws = scalars(get_group(idata, "posterior"))
    z, ess_z2 = [], []
    for key, ref in refs.items():
        ours = summary(draws[key])
        pairs = zip(ours["quantiles"], ours["mcse"], ref["quantiles"], ref["mcse"], strict=True)
        z += [(q - qr) / np.hypot(m, mr) for q, m, qr, mr in pairs]
        ess = float(az.ess(draws[key], method="mean"))
        error = (ours["mean"] - ref["mean"]) ** 2
        ess_z2.append(error / (ours["var"] / ess + ref["mean_mcse"] ** 2))
    est = pme.log_evidence(idata)
    return {"model": name, "seed": seed, "seconds": seconds, "z": z, "ess_z2": ess_z2,
            "posterior_ess": est.diagnostics.get("posterior_ess", np.nan),
            "n_draws": int(next(iter(draws.values())).size)}  # fmt: skip


def table(rows: list[dict]) -> str:
    head = "| model | comparisons | within 3 | max abs z | implied ESS / reported | ESS (min) | s |"
    lines = [head, "|---|---|---|---|---|---|---|"]
    for name in dict.fromkeys(r["model"] for r in rows):
        mine = [r for r in rows if r["model"] == name]
        z = np.abs(np.concatenate([r["z"] for r in mine]))
        z2 = np.mean(np.concatenate([r["ess_z2"] for r in mine]))
        lines.append(
            f"| {name} | {z.size} | {np.mean(z <= 3):.3f} | {z.max():.2f} | {1 / z2:.2f} | "
            f"{np.median([r['posterior_ess'] for r in mine]):.0f} of {mine[0]['n_draws']} | "
            f"{np.median([r['seconds'] for r in mine]):.1f} |"
        )
    return "\n".join(lines)


def _seeds(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--seeds", default="1-5")
    parser.add_argument("--reference", action="store_true", help="recompute the NUTS references")
    parser.add_argument("--out", default=None, help="a JSON file for the per-seed rows")
    args = parser.parse_args(argv)
    names = args.models.split(",")
    if args.reference:
        stored = json.loads(REFERENCES.read_text()) if REFERENCES.exists() else {}
        for name in [n for n in names if n in NUTS_REFERENCED]:
            stored[name] = reference(name)
            print(f"reference {name}: {len(stored[name]['scalars'])} scalars", flush=True)
        REFERENCES.write_text(json.dumps(stored, indent=1) + "\n")
        return
    rows = []
    for name in names:
        for seed in _seeds(args.seeds):
            rows.append(compare(name, seed))
            r = rows[-1]
            print(f"{name} seed {seed}: max |z| {np.max(np.abs(r['z'])):.2f}, "
                  f"{r['seconds']:.1f} s", flush=True)  # fmt: skip
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))
    print(table(rows))


if __name__ == "__main__":
    main()
