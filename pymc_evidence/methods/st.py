"""``method="st"``: simulated tempering with Rao-Blackwellized evidence (Carlson et al.).

Runs :class:`~pymc_evidence.SimulatedTempering` through ``pm.sample`` from the problem's
base; the trace is turned into the estimate by :mod:`pymc_evidence.methods.st_trace`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..results.assemble import assemble_results
from ..steps.simulated_tempering import SimulatedTempering
from ._nuts import refuse_many_modes, sample_step, with_base_weights_se
from ._spec import SIMULATED_TEMPERING, MethodOptions, MethodResult, MethodSpec
from .st_trace import st_parts

__all__ = [
    "MAX_DRAWS_FACTOR",
    "ROUND_TRIPS_AIM",
    "ROUND_TRIPS_MIN",
    "SPEC",
    "STOptions",
    "more_draws",
    "st_results",
]


@dataclass(frozen=True)
class STOptions(MethodOptions):
    """The options of ``st``: the keyword arguments of
    :class:`~pymc_evidence.SimulatedTempering` that users may set through
    ``sample_evidence`` (every keyword-only one but those the problem sets: ``base``,
    ``potentials``, ``random_seed``, ``model``, ``warn_tempered``), with its defaults. The
    step checks them; none is stored as an attribute (the run stores its ladder's size).

    Examples
    --------
    >>> STOptions(n_levels=8).values()["n_levels"]
    8
    """

    betas: object = None
    n_levels: int = 32
    log_r: object = None
    log_zhat: object = None
    adapt_block: int = 100
    adapt_damping: float = 0.7
    step_size_bands: int = 4


#: The step's target acceptance unless the call sets ``target_accept``.
TARGET_ACCEPT = 0.8


#: Fewest round trips over the ladder (base to posterior and back) of any chain before the
#: run is repeated with more draws (:func:`run`).
ROUND_TRIPS_MIN = 8
#: Round trips per chain the longer run aims at, and the most it multiplies the draws by.
ROUND_TRIPS_AIM, MAX_DRAWS_FACTOR = 16, 4.0


def more_draws(min_round_trips: float, draws: int) -> int | None:
    """The draws to sample again with where some chain crossed the ladder too few times.

    The RTS estimate and its batch-means se rest on the chains' trips between the levels;
    with a handful of trips the se misses how far the levels' occupancy is from its limit.
    At the defaults the 61-d latent random walk's slowest chain made few trips and every
    chain was low; with more draws it was close. Hierarchies, mixtures, LKJ, latent GPs,
    AR(1) and regressions made enough (measured in :doc:`/methods`, "Simulated tempering
    (``st``)").

    Examples
    --------
    >>> more_draws(5.0, 1000), more_draws(9.0, 1000), more_draws(1.0, 1000)
    (3200, None, 4000)
    """
    if not min_round_trips < ROUND_TRIPS_MIN:
        return None
    factor = min(ROUND_TRIPS_AIM / max(float(min_round_trips), 1.0), MAX_DRAWS_FACTOR)
    return int(np.ceil(draws * factor))


def _sample(problem, options: STOptions, draws=None):
    """Fit the base, run :class:`~pymc_evidence.SimulatedTempering`, estimate."""
    sampling = problem.sampling
    step = SimulatedTempering(
        base=problem.tempering_base,
        potentials=problem.potentials,
        model=problem.model,
        warn_tempered=False,  # the trace is read by st_parts below
        target_accept=sampling.target_accept or TARGET_ACCEPT,
        **options.values(),
        **sampling.nuts_sampler_kwargs,
        **sampling.compile_kwargs,
    )
    raw = sample_step(problem, step, random_seed=problem.int_seed("nuts"), draws=draws)
    return st_parts(raw, method=SPEC.name, betas=step.betas, rng=problem.rng("resample"))


def run(problem, options: STOptions) -> MethodResult:
    """:func:`_sample`, once more with more draws where a chain made fewer than
    :data:`ROUND_TRIPS_MIN` round trips over the ladder (:func:`more_draws`)."""
    parts = _sample(problem, options)
    trips = parts[0].diagnostics.get("min_round_trips", np.inf)
    draws = more_draws(trips, int(problem.sampling.draws))
    if draws is not None:
        est, *rest = _sample(problem, options, draws=draws)
        diagnostics = {**est.diagnostics, "first_run_min_round_trips": float(trips)}
        parts = (replace(est, diagnostics=diagnostics), *rest)
    est, groups, layout, attrs = parts
    est = with_base_weights_se(est, problem.tempering_base)
    return MethodResult(est, groups, layout, attrs, nuts=("pymc",))


SPEC = MethodSpec(
    name="st",
    description="simulated tempering on a ladder of temperatures, Rao-Blackwellized (RTS) evidence",
    run=run,
    options=STOptions,
    nuts="step",
    ready=refuse_many_modes,
    family=SIMULATED_TEMPERING,
    tempering=True,
)


def st_results(raw, *, betas=None, random_seed=None):
    """Estimate ``log Z`` from a simulated-tempering trace sampled by the user and assemble
    the results: ``(idata, estimate)``, the estimate named after :data:`SPEC`.

    ``betas``: the ladder (else read back from the trace); ``random_seed`` seeds the
    importance resampling.
    """
    rng = np.random.default_rng(random_seed)
    est, groups, layout, attrs = st_parts(raw, method=SPEC.name, betas=betas, rng=rng)
    return assemble_results(est, groups, layout=layout, attrs=attrs), est
