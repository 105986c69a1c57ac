"""Particle methods end to end: forward AIS, reverse AIS and BAR (Habeck 2017).

All particles move together through one compiled, vectorized log density
(:func:`~pymc_evidence.engines.batched.batched_log_densities`). The forward run tunes its
HMC step size between stages; the reverse run reuses exactly those kernels in reverse
order, as the fluctuation theorems behind BAR require. Every particle is an independent
run, so standard errors come from the spread over particles.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pymc as pm
import xarray as xr

from ..base import model_space
from ..base.fit import prior_draws
from ..base.gaussian import PriorBase
from ..compat import get_group, group_names, new_idata
from ..engines.ais import (
    geometric_schedule,
    linear_schedule,
    pilot_schedule,
    run_forward_ais,
    run_reverse_ais,
    sigmoidal_schedule,
)
from ..engines.batched import batched_log_densities
from ..estimators.diagnostics import EvidenceWarning, evidence_messages
from ..estimators.noneq import (
    ais_log_evidence,
    bar_log_evidence,
    crossing_messages,
    reverse_ais_log_evidence,
)
from ..results import estimate_to_dataset
from .ct import resolve_base

__all__ = ["PARTICLE_METHODS", "base_particles", "run_particles"]

PARTICLE_METHODS = ("ais", "rais", "bar")
SCHEDULES = ("adaptive", "sigmoidal", "geometric", "linear")


def base_particles(space, base, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` exact draws from the base, raveled unconstrained, shape ``(n, d)``.

    A Gaussian base samples itself; a :class:`~pymc_evidence.PriorBase` draws from the
    model's prior (the path is then the power posterior).
    """
    if isinstance(base, PriorBase):
        return prior_draws(space, int(n), int(rng.integers(2**31)))
    return base.sample(int(n), rng)


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


def _schedule(schedule, density, base, space, n_stages, n_particles, n_leapfrog, rng):
    """``(betas, step_sizes, name)``; ``step_sizes`` None means tuned during the forward run."""
    if not isinstance(schedule, str):
        betas = np.asarray(schedule, dtype=float)
        return betas, None, "custom"
    if schedule == "adaptive":
        x_pilot = base_particles(space, base, max(64, n_particles // 4), rng)
        betas, steps, _ = pilot_schedule(
            density, base, x_pilot, n_stages, rng, n_leapfrog=n_leapfrog
        )
        return betas, steps, schedule
    makers = {"sigmoidal": sigmoidal_schedule, "geometric": geometric_schedule}
    makers["linear"] = linear_schedule
    if schedule not in makers:
        raise ValueError(f"schedule must be one of {SCHEDULES} or an array, got {schedule!r}")
    return makers[schedule](n_stages), None, schedule


def _reference_posterior(model, posterior, sampling, rng):
    """The user's posterior, or an internal NUTS run (``target_accept`` 0.95)."""
    if posterior is not None:
        return posterior
    return pm.sample(
        **sampling,
        random_seed=int(rng.integers(2**31)),
        target_accept=0.95,
        compute_convergence_checks=False,
        model=model,
    )


def _n_divergences(posterior) -> float | None:
    if "sample_stats" not in group_names(posterior):
        return None
    stats = get_group(posterior, "sample_stats")
    return float(stats["diverging"].values.sum()) if "diverging" in stats else None


def with_run_checks(est, work_f=None, physical_r=None, n_div=None, nonfinite=None):
    """``est`` with the API-level checks of a particle run added to its warnings.

    ``n_div``: divergences of the NUTS run that gave the reverse starts (None: unknown or
    no reverse runs); ``work_f``/``physical_r``: forward and reverse works, checked for
    crossing when both are given; ``nonfinite``: share of non-finite log densities met by
    the kernels (:meth:`~pymc_evidence.engines.BatchedDensity.nonfinite_fraction`).
    """
    checked = {}
    if n_div is not None:
        checked["n_divergences"] = n_div
    if nonfinite is not None:
        checked["nonfinite_fraction"] = float(nonfinite)
    messages = evidence_messages(checked, est.se)
    if work_f is not None and physical_r is not None:
        messages += crossing_messages(work_f, physical_r)
    for message in messages:
        warnings.warn(message, EvidenceWarning, stacklevel=4)
    diag = {**est.diagnostics, **checked}
    return replace(est, diagnostics=diag, warnings=est.warnings + tuple(messages))


def _estimate(method, work_f, physical_r, n_div, nonfinite):
    """The method's estimate, with the API-level checks added to its warnings."""
    if method == "ais":
        est = ais_log_evidence(work_f)
    elif method == "rais":
        est = reverse_ais_log_evidence(physical_r)
    else:
        est = bar_log_evidence(work_f, physical_r)
    return with_run_checks(est, work_f, physical_r, n_div, nonfinite)


def assemble_particles(post_group, ds, posterior):
    """The results container: ``posterior``, ``log_evidence`` and, when the reverse starts
    came from a NUTS run, its ``sample_stats`` and ``observed_data``."""
    groups = {"posterior": post_group, "log_evidence": ds}
    if posterior is not None:
        for name in ("sample_stats", "observed_data"):
            if name in group_names(posterior):
                groups[name] = get_group(posterior, name)
    return new_idata(groups)


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
    schedule="sigmoidal",
    posterior=None,
    potentials: str | None = None,
):
    """Run ``"ais"``, ``"rais"`` or ``"bar"``; returns the results container.

    ``draws``/``tune``/``chains``/``cores`` set the internal NUTS run that provides the
    starting draws of reverse AIS when ``posterior`` (an InferenceData/DataTree with a
    ``posterior`` group) is not given. With ``schedule="adaptive"`` a pilot run (a quarter
    of the particles, a quarter of the stages) fixes the schedule and the step sizes; the
    forward and reverse runs then use exactly those kernels. The default sigmoidal
    schedule tunes the step size between stages of the forward run (from the acceptance
    of all particles) and the reverse run replays those step sizes.
    """
    if method not in PARTICLE_METHODS:
        raise ValueError(f"method must be one of {PARTICLE_METHODS}, got {method!r}")
    if n_particles < 2 or n_stages < 1:
        raise ValueError("n_particles must be >= 2 and n_stages >= 1")
    rng = np.random.default_rng(random_seed)
    space = model_space(model)
    base = resolve_base(base, model, rng, potentials=potentials, base_kwargs=base_kwargs)
    density = batched_log_densities(model, base)
    betas, steps, schedule_name = _schedule(
        schedule, density, base, space, n_stages, n_particles, n_leapfrog, rng
    )
    x0 = base_particles(space, base, n_particles, rng)
    counts = density.counts()
    work_f, info_f = run_forward_ais(
        density,
        base,
        betas,
        n_particles,
        rng,
        n_leapfrog=n_leapfrog,
        x0=x0,
        **({} if steps is None else {"step_size": steps}),
    )
    stage = {"beta": betas, **_stage_values("forward", info_f)}
    physical_r, n_div, post_group = None, None, None
    if method in ("rais", "bar"):
        sampling = dict(draws=draws, tune=tune, chains=chains, cores=cores, progressbar=progressbar)
        posterior = _reference_posterior(model, posterior, sampling, rng)
        n_div = _n_divergences(posterior)
        post_group = get_group(posterior, "posterior")
        y0 = _posterior_particles(space, post_group, n_particles, rng)
        work_r, info_r = run_reverse_ais(
            density,
            betas,
            y0,
            rng,
            step_sizes=info_f["step_sizes"],
            n_leapfrog=n_leapfrog,
            scale=info_f["scale"],
        )
        stage.update(_stage_values("reverse", info_r))
        # The engine's reverse work is -log w; the estimators take the physical reverse work.
        physical_r = -work_r
    est = _estimate(method, work_f, physical_r, n_div, density.nonfinite_fraction(counts))
    run_values = {"work_forward": work_f}
    if physical_r is not None:
        run_values["work_reverse"] = physical_r
    extra = {name: ("particle", values) for name, values in run_values.items()}
    extra.update({name: ("stage", np.asarray(v, float)) for name, v in stage.items()})
    attrs = {
        "n_particles": int(n_particles),
        "n_stages": int(n_stages),
        "n_leapfrog": int(n_leapfrog),
        "base_kind": base.kind,
        "schedule": schedule_name,
    }
    ds = estimate_to_dataset(est, chain_dim="run", extra_dims=extra, attrs=attrs)
    if post_group is None:
        post_group = _constrained_dataset(space, _resample(info_f["x"], -work_f, rng))
    return assemble_particles(post_group, ds, posterior)
