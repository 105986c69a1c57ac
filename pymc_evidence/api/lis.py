"""Linked importance sampling end to end (Neal 2005): forward, reverse and bridged LIS.

A pilot forward AIS run (a fraction of the particles) chooses a coarse schedule of equal
thermodynamic length and the HMC step size at each of its temperatures; both are then
frozen. Forward LIS runs start from independent base draws, reverse runs from posterior
draws (the user's, or an internal NUTS run); with the same kernels in both directions the
top-level bridge (Bennett's equation) joins them. Every particle is one independent run, so
standard errors come from the spread over runs.
"""

from __future__ import annotations

import numpy as np

from ..base import model_space
from ..compat import get_group
from ..engines.ais import pilot_schedule
from ..engines.batched import batched_log_densities
from ..engines.lis import interpolate_step_sizes, run_lis
from ..estimators.lis import bridged_log_evidence, lis_log_evidence, reverse_lis_log_evidence
from ..results import estimate_to_dataset
from .ct import resolve_base
from .particles import (
    _constrained_dataset,
    _n_divergences,
    _posterior_particles,
    _reference_posterior,
    _resample,
    assemble_particles,
    base_particles,
    with_run_checks,
)

__all__ = ["LIS_DIRECTIONS", "run_lis_method"]

LIS_DIRECTIONS = ("bridged", "forward", "reverse")


def _link_values(prefix, info):
    """Per-stage arrays (``stage`` = index of ``betas``; link ``k`` ends at ``betas[k+1]``)."""
    pad = np.concatenate
    return {
        f"{prefix}_acceptance": np.asarray(info["acceptance"], float),
        f"{prefix}_step_sizes": np.asarray(info["step_sizes"], float),
        f"{prefix}_link_log_ratio": pad([[np.nan], info["link_log_ratio"]]),
        f"{prefix}_link_ess": pad([[np.nan], info["link_ess"]]),
    }


def _check(direction, n_particles, n_stages, chain_length):
    if direction not in LIS_DIRECTIONS:
        raise ValueError(f"direction must be one of {LIS_DIRECTIONS}, got {direction!r}")
    if n_particles < 2 or n_stages < 1 or chain_length < 1:
        raise ValueError("n_particles must be >= 2, n_stages >= 1 and chain_length >= 1")


def _estimate(direction, log_r_f, log_r_r, n_div, nonfinite):
    if direction == "forward":
        return with_run_checks(lis_log_evidence(log_r_f), nonfinite=nonfinite)
    if direction == "reverse":
        est = reverse_lis_log_evidence(log_r_r, method="lis")
        return with_run_checks(est, None, -log_r_r, n_div, nonfinite)
    est = bridged_log_evidence(log_r_f, log_r_r, method="lis")
    return with_run_checks(est, -log_r_f, -log_r_r, n_div, nonfinite)


def run_lis_method(
    model,
    *,
    draws: int,
    tune: int,
    chains: int,
    cores,
    random_seed,
    progressbar: bool,
    base="advi",
    base_kwargs: dict | None = None,
    n_particles: int = 128,
    n_stages: int = 20,
    chain_length: int = 10,
    n_leapfrog: int = 10,
    direction: str = "bridged",
    posterior=None,
    potentials: str | None = None,
):
    """Run ``method="lis"``; returns the results container.

    ``n_particles`` independent runs per direction, ``n_stages`` links between
    ``n_stages + 1`` temperatures and chains of ``chain_length`` transitions at each:
    ``n_stages * chain_length`` kernel steps per run (200 by default, as many as AIS's
    200 stages). ``direction="bridged"`` (default) joins forward and reverse runs;
    ``"forward"`` needs no posterior draws; ``"reverse"`` uses only the reverse runs.
    """
    _check(direction, n_particles, n_stages, chain_length)
    rng = np.random.default_rng(random_seed)
    space = model_space(model)
    base = resolve_base(base, model, rng, potentials=potentials, base_kwargs=base_kwargs)
    density = batched_log_densities(model, base)
    x_pilot = base_particles(space, base, max(64, n_particles // 2), rng)
    betas, _, pilot = pilot_schedule(
        density,
        base,
        x_pilot,
        n_stages,
        rng,
        n_pilot_stages=max(40, 2 * n_stages),
        n_leapfrog=n_leapfrog,
    )
    # LIS also moves at beta = 0 and 1: step sizes held constant beyond the pilot's range
    steps = interpolate_step_sizes(pilot["betas"], pilot["step_sizes"], betas)
    kernel = dict(
        chain_length=int(chain_length),
        step_sizes=steps,
        n_leapfrog=n_leapfrog,
        scale=pilot["scale"],
    )
    stage = {"beta": betas}
    counts = density.counts()
    log_r_f = log_r_r = None
    if direction != "reverse":
        x0 = base_particles(space, base, n_particles * (chain_length + 1), rng)
        x0 = x0.reshape(n_particles, chain_length + 1, space.ndim)
        log_r_f, info_f = run_lis(density, betas, x0, rng, direction="forward", **kernel)
        stage.update(_link_values("forward", info_f))
    n_div = post_group = None
    if direction != "forward":
        sampling = dict(draws=draws, tune=tune, chains=chains, cores=cores, progressbar=progressbar)
        posterior = _reference_posterior(model, posterior, sampling, rng)
        n_div = _n_divergences(posterior)
        post_group = get_group(posterior, "posterior")
        y0 = _posterior_particles(space, post_group, n_particles, rng)
        log_r_r, info_r = run_lis(
            density,
            betas,
            y0,
            rng,
            direction="reverse",
            end_sampler=lambda m, r: base_particles(space, base, m, r),
            **kernel,
        )
        stage.update(_link_values("reverse", info_r))
    est = _estimate(direction, log_r_f, log_r_r, n_div, density.nonfinite_fraction(counts))
    runs = {"log_r_forward": log_r_f, "log_r_reverse": log_r_r}
    extra = {k: ("particle", v) for k, v in runs.items() if v is not None}
    extra.update({k: ("stage", np.asarray(v, float)) for k, v in stage.items()})
    attrs = {
        "n_particles": int(n_particles),
        "n_stages": int(n_stages),
        "chain_length": int(chain_length),
        "n_leapfrog": int(n_leapfrog),
        "base_kind": base.kind,
        "schedule": "adaptive",
        "direction": direction,
    }
    ds = estimate_to_dataset(est, chain_dim="run", extra_dims=extra, attrs=attrs)
    if post_group is None:  # forward only: a state of each run's last chain, run-weighted
        post_group = _constrained_dataset(space, _resample(info_f["x"], log_r_f, rng))
    return assemble_particles(post_group, ds, posterior)
