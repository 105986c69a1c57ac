"""``method="lis"``: linked importance sampling (Neal 2005), forward, reverse and bridged.

A pilot forward AIS run (a fraction of the particles) chooses a coarse schedule of equal
thermodynamic length and the HMC step size at each of its temperatures; both are then
frozen. Forward LIS runs start from independent base draws, reverse runs from posterior
draws (the user's, or the problem's NUTS run); with the same kernels in both directions the
top-level bridge (Bennett's equation) joins them. Every particle is one independent run, so
standard errors come from the spread over runs.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import numpy as np

from ..engines.lis import interpolate_step_sizes, run_lis
from ..engines.settings import KernelSettings, LinkSettings
from ..estimators.lis import bridged_log_evidence, lis_log_evidence, reverse_lis_log_evidence
from ..progress import progress_bar
from ._nuts import refuse_modes_beyond_chains
from ._particles import (
    particle_result,
    pilot_run,
    reverse_start,
    run_checks,
    with_chain_spread,
)
from ._spec import LINKED_RUNS, MethodOptions, MethodResult, MethodSpec
from .noneq import more_stages

__all__ = ["LIS_DIRECTIONS", "SPEC", "LISOptions"]

LIS_DIRECTIONS = ("bridged", "forward", "reverse")


@dataclass(frozen=True)
class LISOptions(MethodOptions):
    """The options of ``lis``, checked as they are made.

    Attributes
    ----------
    n_particles : int
        Runs per direction.
    n_stages : int
        Links of the schedule (of equal thermodynamic length, from a pilot AIS run); run
        once more with more, at most ``max_stages``, where the log weights of a direction
        spread too widely (:func:`~pymc_evidence.methods.noneq.more_stages`).
    max_stages : int
    chain_length : int
        Transitions per chain.
    n_leapfrog : int
        Leapfrog steps of an HMC move.
    direction : {"bridged", "forward", "reverse"}
        Which runs, and how they are joined (:data:`LIS_DIRECTIONS`).
    posterior : InferenceData or DataTree, optional
        Draws that start the reverse runs (None: the problem's NUTS run).

    Examples
    --------
    >>> LISOptions(direction="forward").to_attrs()["direction"]
    'forward'
    >>> LISOptions(chain_length=0)
    Traceback (most recent call last):
    ...
    ValueError: n_particles must be >= 2, n_stages >= 1 and chain_length >= 1
    """

    n_particles: int = 128
    n_stages: int = 20
    max_stages: int = 80
    chain_length: int = 10
    n_leapfrog: int = 10
    direction: str = "bridged"
    posterior: object = None

    INTS = ATTRS = ("n_particles", "n_stages", "max_stages", "chain_length", "n_leapfrog")

    def check(self) -> None:
        """The direction's name and the counts."""
        if self.direction not in LIS_DIRECTIONS:
            raise ValueError(f"direction must be one of {LIS_DIRECTIONS}, got {self.direction!r}")
        if int(self.n_particles) < 2 or int(self.n_stages) < 1 or int(self.chain_length) < 1:
            raise ValueError("n_particles must be >= 2, n_stages >= 1 and chain_length >= 1")
        if int(self.max_stages) < 1:
            raise ValueError(f"max_stages must be >= 1, got {self.max_stages}")

    def to_attrs(self) -> dict:
        """The counts, the schedule's kind and the direction."""
        return {**super().to_attrs(), "schedule": "adaptive", "direction": self.direction}


def _link_values(prefix, info) -> dict:
    """Per-stage arrays (``stage`` = index of ``betas``; link ``k`` ends at ``betas[k+1]``)."""
    pad = np.concatenate
    return {
        f"{prefix}_acceptance": np.asarray(info.acceptance, float),
        f"{prefix}_step_sizes": np.asarray(info.step_size, float),  # the schema's name
        f"{prefix}_link_log_ratio": pad([[np.nan], info.link_log_ratio]),
        f"{prefix}_link_ess": pad([[np.nan], info.link_ess]),
    }


def _estimate(direction, log_r_f, log_r_r):
    if direction == "forward":
        return lis_log_evidence(log_r_f), None
    if direction == "reverse":
        return reverse_lis_log_evidence(log_r_r, method="lis"), None
    return bridged_log_evidence(log_r_f, log_r_r, method="lis"), -log_r_f


def _kernel(problem, density, options, rng):
    """The frozen schedule, kernel and links, from a pilot forward AIS run (and its
    counts)."""
    n, n_stages = options.n_particles, options.n_stages
    betas, _, pilot = pilot_run(
        problem,
        density,
        max(64, n // 2),
        n_stages,
        rng,
        "LIS pilot (AIS)",
        n_pilot_stages=max(40, 2 * n_stages),
        kernel=KernelSettings(n_leapfrog=options.n_leapfrog),
    )
    # LIS also moves at beta = 0 and 1: step sizes held constant beyond the pilot's range
    steps = interpolate_step_sizes(pilot.beta, pilot.step_size, betas)
    kernel = KernelSettings(step_size=steps, n_leapfrog=options.n_leapfrog, scale=pilot.scale)
    links = LinkSettings(chain_length=options.chain_length)
    return betas, kernel, links, pilot.counts


def _run_lis(problem, label, *args, **kwargs):
    """:func:`~pymc_evidence.engines.lis.run_lis` under a progress bar of its chains."""
    with progress_bar(label, enabled=problem.sampling.progressbar) as update:
        return run_lis(*args, callback=update, **kwargs)


def _links(problem, density, options, rng, start_of):
    """The pilot, then forward and/or reverse LIS runs (reverse from ``start_of()``):
    ``(stage values, log_r_f, info_f, log_r_r, counts)``, None for a direction not run;
    ``counts``: those of the runs and their pilot."""
    n, direction = options.n_particles, options.direction
    betas, kernel, links, counts = _kernel(problem, density, options, rng)
    stage = {"beta": betas}
    log_r_f = info_f = log_r_r = None
    if direction != "reverse":
        length = links.chain_length + 1
        x0 = problem.base_draws(n * length, rng).reshape(n, length, problem.space.ndim)
        log_r_f, info_f = _run_lis(problem, "LIS forward", density, betas, x0, rng, kernel, links)
        stage.update(_link_values("forward", info_f))
        counts = counts + info_f.counts
    if direction != "forward":
        log_r_r, info_r = _run_lis(
            problem,
            "LIS reverse",
            density,
            betas,
            start_of().x,
            rng,
            kernel,
            replace(links, direction="reverse"),
            end_sampler=lambda m, r: problem.base_draws(m, r),
        )
        stage.update(_link_values("reverse", info_r))
        counts = counts + info_r.counts
    return stage, log_r_f, info_f, log_r_r, counts


def _linked(problem, density, options, rng, start_of):
    """:func:`_links`, run once more with more links (at most ``max_stages``) where the
    log weights of a direction spread by more than 1.5 nats
    (:func:`~pymc_evidence.methods.noneq.more_stages`). On the 61-d latent random walk
    both directions spread by more than that and more links brought the estimate close
    (measured in :doc:`/methods`, "Linked importance sampling, SMC and bridge sampling");
    hierarchies, mixtures, LKJ and latent GPs spread less.
    Returns the options used and the kept runs (whose counts the checks read)."""
    runs = _links(problem, density, options, rng, start_of)
    log_r_f, log_r_r = runs[1], runs[3]
    spread = max(float(np.std(w)) for w in (log_r_f, log_r_r) if w is not None)
    raised = more_stages(spread, options.n_stages, options.max_stages)
    if raised is None:
        return options, runs
    options = replace(options, n_stages=raised)
    return options, _links(problem, density, options, rng, start_of)


def run(problem, options: LISOptions) -> MethodResult:
    """Forward and/or reverse LIS runs, joined as ``options.direction`` says."""
    rng, density = problem.rng("method"), problem.density()
    n, direction = options.n_particles, options.direction
    start_of = functools.cache(lambda: reverse_start(problem, options.posterior, n, rng))
    options, (stage, log_r_f, info_f, log_r_r, counts) = _linked(
        problem, density, options, rng, start_of
    )
    start = None if direction == "forward" else start_of()
    est, work_f = _estimate(direction, log_r_f, log_r_r)
    est, spread = with_chain_spread(
        est, start, lambda keep: _estimate(direction, log_r_f, log_r_r[keep])[0].log_z
    )
    weights = {"forward": log_r_f, "reverse": log_r_r}  # the runs' log weights
    est = run_checks(
        est,
        counts,
        weights={k: w for k, w in weights.items() if w is not None},
        work_f=work_f,
        physical_r=None if log_r_r is None else -log_r_r,
        n_div=None if start is None else start.n_divergences,
        messages=() if start is None else (*start.messages, *spread),
    )
    return particle_result(
        problem,
        est,
        start,
        runs={"log_r_forward": log_r_f, "log_r_reverse": log_r_r},
        stage=stage,
        forward=None if log_r_f is None else (info_f.x, log_r_f),  # a state of each run's
        attrs=options.to_attrs(),  # last chain, run-weighted, without reverse starts
    )


def _ready(problem, options) -> None:
    """Runs that start from NUTS draws need a chain in every mode (see
    :func:`~pymc_evidence.methods._nuts.refuse_modes_beyond_chains`)."""
    if options.direction != "forward":
        refuse_modes_beyond_chains(problem, options)


SPEC = MethodSpec(
    name="lis",
    description="linked importance sampling (Neal), forward and reverse runs joined by a bridge",
    run=run,
    options=LISOptions,
    nuts="any",
    ready=_ready,
    family=LINKED_RUNS,
)
