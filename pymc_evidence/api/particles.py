"""Particle methods end to end: forward AIS, reverse AIS and BAR (Habeck 2017).

All particles move together through one compiled, vectorized log density
(:func:`~pymc_evidence.engines.batched.batched_log_densities`). The forward run tunes its
HMC step size between stages; the reverse run reuses exactly those kernels in reverse
order, as the fluctuation theorems behind BAR require. Every particle is an independent
run, so standard errors come from the spread over particles.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import xarray as xr

from ..base import model_space
from ..compat import get_group, group_names, new_idata
from ..engines.ais import run_forward_ais, run_reverse_ais, sigmoidal_schedule
from ..engines.batched import batched_log_densities
from ..estimators.noneq import ais_log_evidence, bar_log_evidence, reverse_ais_log_evidence
from ..results import estimate_to_dataset
from .ct import resolve_base

__all__ = ["PARTICLE_METHODS", "run_particles"]

PARTICLE_METHODS = ("ais", "rais", "bar")


def _posterior_particles(space, posterior, n, rng):
    """``n`` raveled unconstrained draws, evenly thinned from a posterior group."""
    values = {rv.name: posterior[rv.name].values for rv in space.model.free_RVs}
    x = space.unconstrain(values).reshape(-1, space.ndim)
    if x.shape[0] < n:
        raise ValueError(f"need at least {n} posterior draws for reverse AIS, got {x.shape[0]}")
    keep = np.linspace(0, x.shape[0] - 1, n).round().astype(int)
    return x[rng.permutation(keep)]


def _constrained_dataset(space, x):
    """A ``posterior`` group (one chain) from raveled unconstrained particles."""
    points = [space.constrain(row) for row in x]
    data = {}
    for rv in space.model.free_RVs:
        stacked = np.stack([p[rv.name] for p in points])[None]
        dims = ("chain", "draw") + tuple(f"{rv.name}_dim_{i}" for i in range(stacked.ndim - 2))
        data[rv.name] = (dims, stacked)
    return xr.Dataset(data, coords={"chain": [0], "draw": np.arange(x.shape[0])})


def _resample(x, log_w, rng):
    w = np.exp(log_w - np.max(log_w))
    positions = (rng.random() + np.arange(x.shape[0])) / x.shape[0]
    index = np.minimum(np.searchsorted(np.cumsum(w / w.sum()), positions), x.shape[0] - 1)
    return x[index]


def _stage_values(prefix, info):
    out = {f"{prefix}_{k}": info[k] for k in ("acceptance", "step_sizes", "mean_increment")}
    if "ess" in info:
        out[f"{prefix}_ess"] = info["ess"]
    return out


def run_particles(
    model,
    method: str,
    *,
    draws: int,
    tune: int,
    chains: int,
    cores,
    random_seed,
    progressbar: bool,
    base="advi",
    base_kwargs: dict | None = None,
    n_particles: int = 256,
    n_stages: int = 200,
    n_leapfrog: int = 10,
    posterior=None,
    potentials: str | None = None,
):
    """Run ``"ais"``, ``"rais"`` or ``"bar"``; returns the results container.

    ``draws``/``tune``/``chains``/``cores`` set the internal NUTS run that provides the
    starting draws of reverse AIS when ``posterior`` (an InferenceData/DataTree with a
    ``posterior`` group) is not given.
    """
    if method not in PARTICLE_METHODS:
        raise ValueError(f"method must be one of {PARTICLE_METHODS}, got {method!r}")
    if n_particles < 2 or n_stages < 1:
        raise ValueError("n_particles must be >= 2 and n_stages >= 1")
    rng = np.random.default_rng(random_seed)
    space = model_space(model)
    base = resolve_base(base, model, rng, potentials=potentials, base_kwargs=base_kwargs)
    if not hasattr(base, "sample"):
        raise ValueError("particle methods need a Gaussian base (base='advi' or 'fullrank_advi')")
    density = batched_log_densities(model, base)
    betas = sigmoidal_schedule(n_stages)
    work_f, info_f = run_forward_ais(density, base, betas, n_particles, rng, n_leapfrog=n_leapfrog)
    stage = {"beta": betas, **_stage_values("forward", info_f)}
    post_group = None
    if method in ("rais", "bar"):
        if posterior is None:
            posterior = pm.sample(
                draws=draws,
                tune=tune,
                chains=chains,
                cores=cores,
                progressbar=progressbar,
                random_seed=int(rng.integers(2**31)),
                compute_convergence_checks=False,
                model=model,
            )
        post_group = get_group(posterior, "posterior")
        x0 = _posterior_particles(space, post_group, n_particles, rng)
        work_r, info_r = run_reverse_ais(
            density,
            betas,
            x0,
            rng,
            step_sizes=info_f["step_sizes"],
            n_leapfrog=n_leapfrog,
            scale=info_f["scale"],
        )
        stage.update(_stage_values("reverse", info_r))
        # The engine's reverse work is -log w; the estimators take the physical reverse work.
        physical_r = -work_r
    if method == "ais":
        est = ais_log_evidence(work_f)
    elif method == "rais":
        est = reverse_ais_log_evidence(physical_r)
    else:
        est = bar_log_evidence(work_f, physical_r)
    run_values = {"work_forward": work_f}
    if method != "ais":
        run_values["work_reverse"] = physical_r
    extra = {name: ("particle", values) for name, values in run_values.items()}
    extra.update({name: ("stage", np.asarray(v, float)) for name, v in stage.items()})
    attrs = {
        "n_particles": int(n_particles),
        "n_stages": int(n_stages),
        "n_leapfrog": int(n_leapfrog),
        "base_kind": base.kind,
        "schedule": "sigmoidal",
    }
    ds = estimate_to_dataset(est, chain_dim="run", extra_dims=extra, attrs=attrs)
    if post_group is None:
        post_group = _constrained_dataset(space, _resample(info_f["x"], -work_f, rng))
    groups = {"posterior": post_group, "log_evidence": ds}
    if posterior is not None:
        for name in ("sample_stats", "observed_data"):
            if name in group_names(posterior):
                groups[name] = get_group(posterior, name)
    return new_idata(groups)
