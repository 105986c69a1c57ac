"""What the particle methods (ais, rais, bar, lis, smc, arm) share beyond the engines.

Reverse-direction runs start from posterior draws (the user's or the problem's internal
NUTS run); forward runs end with weighted particles that are resampled into ``posterior``;
every run is checked for divergences in its starting draws, non-finite densities met by the
kernels, and forward/reverse works that cross.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace

import numpy as np

from ..base.mixture import MixtureBase
from ..compat import get_group
from ..engines.ais import pilot_schedule
from ..estimators.diagnostics import CrossCheckWarning, checked, tagged
from ..estimators.logspace import systematic_resample
from ..estimators.mcse import grouped_jackknife_se
from ..estimators.noneq import crossing_messages
from ..estimators.record import SE_FLOOR
from ..progress import progress_bar
from ..results.assemble import copied_groups, divergences
from ..results.diagnostics import nuts_messages, pareto_check
from ._spec import MethodResult
from .bridge_missed import visited
from .st_trace import refuse_tempered

__all__ = [
    "ReverseStart",
    "particle_groups",
    "particle_result",
    "posterior_of_trace",
    "resampled_posterior",
    "reverse_start",
    "run_checks",
    "unvisited_base_modes",
    "with_chain_spread",
]

#: Warn when the spread between the NUTS chains that start the reverse runs widens the se
#: by more than this factor (:func:`with_chain_spread`).
CHAIN_SPREAD_WARN = 2.0


@dataclass(frozen=True, eq=False)
class ReverseStart:
    """Posterior draws that start reverse runs: ``x`` (n, d), the trace they came from,
    its divergence count (None when the trace records none) and the chain of each draw."""

    x: np.ndarray
    trace: object
    n_divergences: float | None
    messages: tuple = ()
    chain: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))


def reverse_start(problem, posterior, n: int, rng) -> ReverseStart:
    """``n`` draws evenly thinned from ``posterior`` (or the problem's NUTS run), shuffled."""
    if posterior is not None:
        refuse_tempered(posterior, "posterior= (the reverse runs' starting draws)")
    trace = problem.reference_posterior(posterior)
    x = problem.unconstrained(trace)
    n_draws = x.shape[1]
    x = x.reshape(-1, problem.space.ndim)
    if x.shape[0] < n:
        raise ValueError(f"need at least {n} posterior draws for reverse runs, got {x.shape[0]}")
    keep = np.linspace(0, x.shape[0] - 1, n).round().astype(int)
    n_div = divergences(trace).get("n_divergences")
    what = "the NUTS run that starts the reverse runs" if posterior is None else "posterior="
    messages = (*nuts_messages(trace, what=what), *unvisited_base_modes(problem.base, x))
    keep = rng.permutation(keep)
    return ReverseStart(x[keep], trace, n_div, messages, chain=keep // n_draws)


def with_chain_spread(est, start: ReverseStart | None, estimate_of) -> tuple:
    """``est`` with its se at least the jackknife se over the NUTS chains that started its
    reverse runs, and a warning when that widened it by more than :data:`CHAIN_SPREAD_WARN`.

    NUTS chains rarely cross between separated modes, and a chain in mode ``k`` gives
    reverse runs whose average estimates ``Q_k / Z_k`` (``Q_k`` the base's mass there) in
    place of ``1 / Z``: unless the base's masses match the posterior's, the estimate then
    depends on how the chains split between the modes, which the spread over runs cannot
    see: on ``testing.gaussian_shells`` (two shells, the chains split unevenly between them)
    ``rais``, ``bar`` and ``lis`` were biased, no better with more runs or stages (measured
    in :doc:`/hard_models`, "The other methods on separated modes"). Leaving one chain's
    runs out at a time
    (:func:`~pymc_evidence.estimators.mcse.grouped_jackknife_se`) sees the split; where all
    chains agree it is about the runs' own se (at most its noise is added).

    Parameters
    ----------
    est : EvidenceEstimate
    start : ReverseStart or None
        None (no reverse runs) returns ``est`` unchanged.
    estimate_of : callable
        ``estimate_of(keep) -> log_z`` from the reverse runs selected by the boolean mask
        ``keep`` (and every forward run).

    Returns
    -------
    est : EvidenceEstimate
    messages : list of WarningMessage
    """
    if start is None or start.chain.size != start.x.shape[0]:
        return est, []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        se_chain = grouped_jackknife_se(estimate_of, start.chain)
    if not np.isfinite(se_chain):
        return est, []
    diagnostics = {**est.diagnostics, "runs_se": est.se, "chain_jackknife_se": se_chain}
    floor = SE_FLOOR * max(1.0, abs(float(est.log_z)))  # below it: floating-point noise
    if se_chain <= max(est.se, floor):
        return replace(est, diagnostics=diagnostics), []
    messages = []
    if se_chain > CHAIN_SPREAD_WARN * est.se:
        text = (
            f"the NUTS chains that start the reverse runs give estimates that disagree "
            f"(jackknife se over chains {se_chain:.3g}, the runs' own {est.se:.3g}): they "
            "likely sit in separate modes, so the se is widened to it; method='smc' or "
            "'ais' anneal from the base instead"
        )
        messages = tagged([text], CrossCheckWarning)
    return replace(est, se=se_chain, diagnostics=diagnostics), messages


def unvisited_base_modes(base, x: np.ndarray) -> list:
    """A :class:`~pymc_evidence.CrossCheckWarning` per component of a mixture base (1 % of
    its weight or more) that no posterior draw came near (its 0.999 Laplace ellipsoid).

    Reverse runs start only where the draws are: NUTS chains rarely cross between separated
    modes, so a mode the base holds (the mode search found it) but no chain entered is
    missing from the reverse and two-way estimates. On ``testing.unequal_modes`` (a narrow
    mode with 30 % of ``Z``) ``rais``, ``lis`` and ``bar`` were high by several se, while ``smc``
    and ``ais``, which anneal from the base, were close (measured in :doc:`/hard_models`,
    "Modes of unequal mass and basin").
    """
    if not isinstance(base, MixtureBase):
        return []
    out = []
    for weight, component in zip(base.weights, base.components(), strict=True):
        if weight >= 0.01 and not visited(component, x):
            out.append(
                f"the posterior draws that start the reverse runs never came near a mode "
                f"that the base holds ({100 * weight:.3g} % of its weight): reverse and two-way "
                "estimates (rais, bar, lis) can be off by its share of the evidence; "
                "method='smc' or 'ais' anneal from the base, which holds it"
            )
    return tagged(out, CrossCheckWarning)


def pilot_run(problem, density, n_pilot: int, n_stages: int, rng, label: str, **kwargs):
    """:func:`~pymc_evidence.engines.ais.pilot_schedule` from ``n_pilot`` base draws, under a
    progress bar named ``label``: ``(betas, step_sizes, pilot record)``."""
    x_pilot = problem.base_draws(n_pilot, rng)
    with progress_bar(label, enabled=problem.sampling.progressbar) as update:
        return pilot_schedule(
            density, problem.base, x_pilot, n_stages, rng, callback=update, **kwargs
        )


def resampled_posterior(problem, x: np.ndarray, log_w: np.ndarray, rng):
    """One chain of ``posterior``: particles ``x`` resampled (systematic) by ``exp(log_w)``."""
    index = systematic_resample(log_w, x.shape[0], rng)
    return problem.posterior_dataset(x[index][None])


def run_checks(
    est,
    counts=None,
    *,
    weights=None,
    work_f=None,
    physical_r=None,
    n_div=None,
    messages=(),
    posterior_counts=None,
):
    """``est`` with the run-level checks added and their warnings emitted once.

    ``counts``: what the runs' evaluations and kernels met
    (:class:`~pymc_evidence.engines.counts.Counts`), for the shares of non-finite log
    densities and of diverging HMC trajectories; ``posterior_counts``: those of moves after
    the last reweighting (SMC's at ``beta = 1``), which touch the draws only; ``n_div``:
    divergences of the NUTS run that gave the reverse starts (None: unknown or no reverse
    runs); ``work_f``/``physical_r``: forward and reverse works, checked for crossing when
    both are given; ``messages``: further warnings (R-hat/ESS of the NUTS run);
    ``weights``: the log importance weights of each direction (``"forward"``,
    ``"reverse"``) that enters the estimate, as the method says (for AIS, RAIS and BAR
    their spec's :attr:`~pymc_evidence.methods._spec.MethodSpec.works`). The Pareto k-hat
    of each is stored as ``pareto_k_forward``/``pareto_k_reverse``, with a warning above
    0.7 for one-sided estimates (AIS, RAIS, one-direction LIS).
    """
    diagnostics = {}
    if n_div is not None:
        diagnostics["n_divergences"] = float(n_div)
    if counts is not None:
        diagnostics["nonfinite_fraction"] = float(counts.nonfinite_fraction)
        diagnostics["diverging_fraction"] = float(counts.diverging_fraction)
    if posterior_counts is not None:
        diagnostics["posterior_diverging_fraction"] = posterior_counts.diverging_fraction
    crossing = []
    if work_f is not None and physical_r is not None:
        crossing = crossing_messages(work_f, physical_r)
    sets = {direction: np.asarray(log_w, float) for direction, log_w in (weights or {}).items()}
    for direction, log_w in sets.items():
        what = f"the {direction} {est.method.upper()} runs' weights"
        diag, heavy = pareto_check(log_w, what=what, key=f"pareto_k_{direction}")
        diagnostics.update(diag)
        crossing += heavy if len(sets) == 1 else []  # two-sided (BAR, bridged) estimates cope
    return checked(est, diagnostics, [*crossing, *messages])


def particle_groups(posterior_group, start: ReverseStart | None) -> dict:
    """``posterior`` plus, when reverse runs started from a trace, its ``sample_stats`` and
    ``observed_data``."""
    groups = {"posterior": posterior_group}
    if start is not None:
        groups.update(copied_groups(start.trace, ("sample_stats", "observed_data")))
    return groups


def posterior_of_trace(start: ReverseStart):
    """The ``posterior`` group of the trace that started the reverse runs."""
    return get_group(start.trace, "posterior")


def particle_result(problem, est, start, *, runs, stage, forward, attrs) -> MethodResult:
    """The :class:`MethodResult` of a particle method with forward and/or reverse runs.

    ``runs``: per-run arrays (None when that direction did not run), stored on the
    ``particle`` dim; ``stage``: per-stage arrays on the ``stage`` dim; ``forward``:
    ``(x, log_w)`` of the forward runs' final particles, resampled into ``posterior`` when
    there are no reverse starts (else ``posterior`` is the trace they came from).
    """
    extra = {k: ("particle", v) for k, v in runs.items() if v is not None}
    extra.update({k: ("stage", np.asarray(v, float)) for k, v in stage.items()})
    if start is None:
        x, log_w = forward
        post = resampled_posterior(problem, x, log_w, problem.rng("resample"))
    else:
        post = posterior_of_trace(start)
    attrs = {**attrs, "base_kind": problem.base.kind}
    layout = {"chain_dim": "run", "extra_dims": extra}
    return MethodResult(est, particle_groups(post, start), layout, attrs)
