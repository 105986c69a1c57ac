"""``method="bridge"``: bridge sampling from posterior draws (the ``bridgesampling`` workflow).

The draws of a ``posterior`` group (the user's, or the problem's NUTS run) are mapped to the
model's raveled unconstrained space. The first half of every chain fits the proposal
(:mod:`~pymc_evidence.methods.bridge_proposals`); the second half, kept in chain order so its
autocorrelation is measured, enters the Meng-Wong iteration of
:func:`~pymc_evidence.estimators.bridge.bridge_log_evidence` together with ``n_proposal``
fresh proposal draws. The model's joint log density is evaluated for all points by the
problem's compiled batched function.

Chains that sample separated regions (modes they do not cross between) are grouped into
clusters (:func:`~pymc_evidence.estimators.bridge_modes.chain_clusters`); each cluster is
bridge-sampled on its own, with its own proposal, and the clusters' masses are summed
(:func:`~pymc_evidence.estimators.bridge_modes.combine_clusters`), so the share of chains
that happened to start in each mode does not matter. Modes that no draw came near are
searched for from the initial point, the clusters' means and a few prior draws, and a
missed mode's mass is added with a warning (:mod:`~pymc_evidence.methods.bridge_missed`).
With one cluster and no missed mode the estimate is the plain bridge estimate of all draws.

Convergence of the draws (R-hat, bulk ESS: :class:`~pymc_evidence.ConvergenceWarning`) is
judged as the estimate uses them, within each cluster of chains: chains that stayed in
different modes make R-hat across all chains large (on
:func:`~pymc_evidence.testing.bimodal_1d`, for one) without any effect on the estimate, so
only a cluster whose own chains disagree or mix slowly warns.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..compat import get_group, group_names
from ..estimators.bridge import bridge_log_evidence, combine_bridge_runs, posterior_n_eff
from ..estimators.bridge_modes import (
    chain_clusters,
    combine_clusters,
    sum_of_parts,
    summed_iterates,
)
from ..estimators.diagnostics import CrossCheckWarning, SamplingWarning, checked, tagged
from ..results.assemble import divergences
from ..results.diagnostics import nuts_messages
from ._spec import BRIDGE_SAMPLING, MethodResult, MethodSpec
from .bridge_missed import chains_at, missed_mode_masses, missed_mode_messages
from .bridge_options import BridgeOptions
from .bridge_proposals import proposal_setup
from .st_trace import refuse_tempered

__all__ = [
    "MAX_COVARIANCE_NOISE",
    "MIN_DRAWS_PER_CHAIN",
    "SPEC",
    "BridgeOptions",
    "bridge_parts",
    "covariance_noise",
]

#: Fewest draws per chain (each half needs at least 4 for autocorrelations).
MIN_DRAWS_PER_CHAIN = 8
#: NUTS target acceptance of the internal run (PyMC's default).
TARGET_ACCEPT = 0.8
#: Most nats of estimation noise (:func:`covariance_noise`) in the proposal's covariance that
#: bridge sampling is run with: on centred Gaussian hierarchies at the defaults, noise
#: well below it left the estimate within its se, noise well above it put the estimate far
#: outside (measured in :doc:`/hard_models`, "Every method, one seed").
MAX_COVARIANCE_NOISE = 8.0


def covariance_noise(ndim: int, n_fit: int) -> float:
    """``d^2 / 4n``: the nats of estimation noise that a sample covariance of ``n`` draws in
    ``d`` dimensions carries into a Gaussian's log density (the expected log-likelihood
    loss of the fitted Gaussian against the true one, to first order).

    Examples
    --------
    >>> covariance_noise(175, 2000)
    3.828125
    """
    return float(ndim) ** 2 / (4.0 * max(int(n_fit), 1))


def _too_many_dims(ndim: int, n_fit: int, chains: int) -> str | None:
    """Why bridge sampling cannot be right with ``n_fit`` draws fitting a ``ndim``-d
    proposal, naming what to do instead; None where it can."""
    noise = covariance_noise(ndim, n_fit)
    if noise <= MAX_COVARIANCE_NOISE:
        return None
    need = int(np.ceil(ndim**2 / (4.0 * MAX_COVARIANCE_NOISE) * 2 / max(chains, 1)))
    return (
        f"bridge sampling's Gaussian proposal in {ndim} dimensions, fitted to {n_fit} draws "
        f"(the first half of each chain), carries about {noise:.0f} nats of estimation "
        f"noise (d^2/4n; at most {MAX_COVARIANCE_NOISE:g} gives an estimate within its se): "
        f"use method='smc' (the default), or at least draws={need} per chain"
    )


def _posterior_draws(idata, space) -> np.ndarray:
    """Unconstrained draws ``(chain, draw, d)`` of the free variables, with clear errors."""
    try:
        names = group_names(idata)
    except TypeError as err:
        raise TypeError(f"bridge_sampling needs sampling results: {err}") from err
    if "posterior" not in names:
        raise ValueError(f"these results have no 'posterior' group (groups: {names})")
    refuse_tempered(idata, "bridge sampling")
    posterior = get_group(idata, "posterior")
    free = [rv.name for rv in space.model.free_RVs]
    missing = [name for name in free if name not in posterior]
    if missing:
        raise ValueError(
            f"the posterior lacks the model's free variables {missing} (it has "
            f"{sorted(map(str, posterior.data_vars))}): were these draws sampled from this model?"
        )
    for name in free:
        if posterior[name].dims[:2] != ("chain", "draw"):
            raise ValueError(f"posterior variable {name!r} must have dims (chain, draw, ...)")
    n_draw = posterior.sizes["draw"]
    if n_draw < MIN_DRAWS_PER_CHAIN:
        raise ValueError(
            f"too few draws: {n_draw} per chain, bridge sampling needs at least "
            f"{MIN_DRAWS_PER_CHAIN} (half fit the proposal, half enter the iteration)"
        )
    try:
        x = space.unconstrain({name: posterior[name].values for name in free})
    except Exception as err:
        raise ValueError(f"the posterior draws do not fit the model's variables: {err}") from err
    half = n_draw // 2
    if x.shape[0] * half <= space.ndim + 1:
        raise ValueError(
            f"too few draws: {x.shape[0] * half} in the fitting half for a {space.ndim}-d "
            "proposal covariance; draw more"
        )
    return x


def _estimate(log_f, x, options, rng):
    """Run the repetitions; returns the pooled estimate, the per-run estimates and each
    run's fixed-point iterates of ``log Z``."""
    repetitions, n_proposal = options.repetitions, options.n_proposal
    maxiter, tol = options.maxiter, options.tol
    half = x.shape[1] // 2
    x_fit, x_iter = x[:, :half], x[:, half : 2 * half]
    lf_post, lg_post, nan_post, draw = proposal_setup(options.proposal)(log_f, x_fit, x_iter)
    if not np.all(np.isfinite(lf_post)):
        raise ValueError(
            f"the model's log density is not finite at {int(np.sum(~np.isfinite(lf_post)))} "
            "posterior draws: were they sampled from this model?"
        )
    n_eff = posterior_n_eff(x_iter)
    n2 = int(n_proposal or x_iter.shape[0] * x_iter.shape[1])
    runs, iterates, n_nan = [], [], nan_post
    for _ in range(repetitions):
        lf_prop, lg_prop, nan_prop = draw(n2, rng)
        iterates.append([])  # the Meng-Wong iterates, for plot_running_log_z
        est = bridge_log_evidence(
            lf_post,
            lg_post,
            lf_prop,
            lg_prop,
            n_eff=n_eff,
            maxiter=maxiter,
            tol=tol,
            emit_warnings=False,
            history=iterates[-1],
        )
        runs.append(est)
        n_nan += nan_prop
    est = runs[0] if repetitions == 1 else combine_bridge_runs(runs)
    diagnostics = {**est.diagnostics, "n_nonfinite_log_f": float(n_nan)}
    return replace(est, diagnostics=diagnostics), runs, iterates


def _messages(est) -> list[str]:
    messages = []
    n_bad = est.diagnostics.get("n_nonfinite_log_f", 0.0)
    if n_bad:
        messages.append(
            f"the model's log density was nan at {n_bad:.0f} proposal points; they were "
            "counted as zero density (log f = -inf)"
        )
    return tagged(messages, SamplingWarning)


def _layout(runs, iterates) -> dict:
    one = len(runs) == 1  # then the per-chain values stay on ``chain``
    stages = {"log_z_iterates": np.asarray(iterates[0]) if one else iterates}
    layout = {"stage_values": stages, "stage_dim": "iteration"}
    if one:
        return layout
    per_run = {
        key: np.array([r.diagnostics[key] for r in runs])
        for key in ("converged", "n_iterations", "re2_proposal", "re2_posterior")
    }
    return {"chain_dim": "run", "chain_values": per_run, **layout}


def _clusters(x, log_density) -> list[np.ndarray]:
    """The clusters of chains, or all chains as one where a cluster is too small or too
    degenerate for a proposal of its own."""
    clusters = chain_clusters(x, log_density=log_density)
    half, d = x.shape[1] // 2, x.shape[-1]
    for idx in clusters:
        fit = x[idx, :half].reshape(-1, d)
        if fit.shape[0] <= d + 1 or np.any(np.ptp(fit, axis=0) == 0):
            return [np.arange(x.shape[0])]
    return clusters


def _totals(parts, clusters, n_chain, log_mass, mass_se):
    """Per-cluster runs summed run by run (plus the missed modes), then pooled."""
    n_runs = len(parts[0][1])
    runs, iterates = [], []
    for r in range(n_runs):
        cluster_runs = [runs_k[r] for _, runs_k, _ in parts]
        runs.append(
            combine_clusters(
                cluster_runs, clusters, n_chain, extra_log_mass=log_mass, extra_se=mass_se
            )
        )
        iterates.append(summed_iterates([its[r] for _, _, its in parts], log_mass))
    est = runs[0] if n_runs == 1 else combine_bridge_runs(runs)
    n_nan = sum(est_k.diagnostics["n_nonfinite_log_f"] for est_k, _, _ in parts)
    return replace(est, diagnostics={**est.diagnostics, "n_nonfinite_log_f": n_nan}), runs, iterates


def _estimate_modes(problem, x, clusters, options, rng):
    """Bridge-sample each cluster of chains, add the modes the chains missed; with one
    cluster and no missed mode, the plain estimate of :func:`_estimate`."""
    parts = [_estimate(problem.log_f, x[idx], options, rng) for idx in clusters]
    log_z, _, _ = sum_of_parts([p[0].log_z for p in parts], [p[0].se for p in parts])
    missed = missed_mode_masses(problem.space, x, clusters, log_z, rng, problem.log_f)
    if len(clusters) == 1 and not missed.log_mass.size:
        est, runs, iterates = parts[0]
        extra = {"n_clusters": 1.0, "n_missed_modes": 0.0}
        est = replace(est, diagnostics={**est.diagnostics, **extra})
    else:
        est, runs, iterates = _totals(parts, clusters, x.shape[0], missed.log_mass, missed.se)
    return est, runs, iterates, missed


def _convergence_messages(idata, clusters) -> list:
    """R-hat and bulk ESS (:func:`~pymc_evidence.results.diagnostics.nuts_messages`) of the
    draws as the estimate uses them: within each cluster of chains, which is bridge-sampled
    on its own. Chains that sit in different modes (a large R-hat across them on a mixture)
    do not move the estimate, so they raise no warning; a cluster whose chains disagree or
    mix slowly does."""
    what = "the posterior draws bridge sampling used"
    if len(clusters) == 1:
        return nuts_messages(idata, what=what)
    post = get_group(idata, "posterior")
    out = []
    for idx in clusters:
        chains = ", ".join(str(c) for c in post["chain"].values[idx])
        out += nuts_messages(post.isel(chain=idx), what=f"{what} (chains {chains}, one mode)")
    return out


def _with_more_chains(problem, x, found, options):
    """Where the chains missed a region no Laplace Gaussian measures (``found``: the first
    estimate and its :class:`~.bridge_missed.MissedModes`), NUTS chains started at its
    peaks join the draws and everything is estimated again (stream ``"more_chains"``):
    the estimate, its runs, iterates and missed modes, the draws and their clusters, and
    the new chains' divergences. Where all chains of the two Gaussian shells sat in one
    shell, bridge was far too low before (with a warning; measured in :doc:`/hard_models`,
    "The other methods on separated modes"); see :func:`chains_at`."""
    more = chains_at(problem, found[3].peaks, TARGET_ACCEPT, draws=x.shape[1])
    x = np.concatenate([x, _posterior_draws(more, problem.space)])
    clusters = _clusters(x, problem.log_f)
    again = _estimate_modes(problem, x, clusters, options, problem.rng("more_chains"))
    n_more = divergences(more).get("n_divergences", 0.0)
    return again, x, clusters, n_more


def _more_chains_message(x, n_chains: int) -> list:
    """A :class:`~pymc_evidence.CrossCheckWarning` text when ``x`` holds more chains than
    the ``n_chains`` of the posterior group (:func:`_with_more_chains` ran)."""
    n_more = x.shape[0] - n_chains
    if not n_more:
        return []
    text = (
        f"the posterior chains missed a region where the density rises as high as anywhere "
        f"they went, which no Laplace approximation measures; {n_more} more NUTS chains "
        "started there and their draws are in the estimate, not in the posterior group, "
        "which holds the first chains only (it misses that region)"
    )
    return tagged([text], CrossCheckWarning)


def bridge_parts(problem, idata, options, *, more_chains=False) -> MethodResult:
    """Bridge-sample the draws of ``idata`` for ``problem``'s model; every group of
    ``idata`` is kept in the result. ``more_chains``: where the chains missed a region
    that only draws can measure, sample it with chains of its own
    (:func:`_with_more_chains`; for the method's own NUTS run, not for a user's draws)."""
    x = _posterior_draws(idata, problem.space)
    n_chains, clusters, n_more = x.shape[0], _clusters(x, problem.log_f), 0.0
    found = _estimate_modes(problem, x, clusters, options, problem.rng("method"))
    if more_chains and found[3].n_unmeasured:
        found, x, clusters, n_more = _with_more_chains(problem, x, found, options)
    est, runs, iterates, missed = found
    missed = missed_mode_messages(missed, est.log_z) + _more_chains_message(x, n_chains)
    if x.shape[0] > n_chains:
        extra = {"n_more_chains": float(x.shape[0] - n_chains)}
        est = replace(est, diagnostics={**est.diagnostics, **extra})
    # the estimator ran with emit_warnings=False: its messages are emitted here, once
    quiet = replace(est, warnings=())
    clusters = [idx[idx < n_chains] for idx in clusters if np.any(idx < n_chains)]
    runs_ok = _convergence_messages(idata, clusters)
    too_few = _too_many_dims(x.shape[-1], x.shape[0] * (x.shape[1] // 2), x.shape[0])
    too_few = tagged([too_few], SamplingWarning) if too_few else []
    messages = [*too_few, *est.warnings, *_messages(est), *missed, *runs_ok]
    n_div = divergences(idata)
    if n_more:
        n_div = {"n_divergences": n_div.get("n_divergences", 0.0) + n_more}
    est = checked(quiet, n_div, messages)
    attrs = options.to_attrs(n_proposal=int(est.diagnostics["n_proposal"]))
    groups = {name: get_group(idata, name) for name in group_names(idata)}
    return MethodResult(est, groups, _layout(runs, iterates), attrs)


def ready(problem, options) -> None:
    """Refuse, before any sampling, a NUTS run whose draws would be too few to fit the
    proposal of a model of this dimension (:data:`MAX_COVARIANCE_NOISE`); the user's own
    ``posterior`` draws are bridge-sampled with a warning instead."""
    if options.posterior is None:
        sampling = problem.sampling
        n_fit = int(sampling.chains) * (int(sampling.draws) // 2)
        why = _too_many_dims(problem.space.ndim, n_fit, int(sampling.chains))
        if why:
            raise ValueError(why)


def run(problem, options) -> MethodResult:
    """NUTS draws (unless ``posterior`` is given), then bridge sampling."""
    trace = problem.reference_posterior(options.posterior, target_accept=TARGET_ACCEPT)
    return bridge_parts(problem, trace, options, more_chains=options.posterior is None)


SPEC = MethodSpec(
    name="bridge",
    description="bridge sampling (Meng-Wong optimal bridge) from NUTS posterior draws",
    run=run,
    options=BridgeOptions,
    uses_base=False,
    nuts="any",
    ready=ready,
    family=BRIDGE_SAMPLING,
)
