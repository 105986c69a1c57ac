"""Simulated-tempering traces in, the estimate and the groups of the results out.

Every chain of a :class:`~pymc_evidence.SimulatedTempering` run adapts its own weights
``log Zhat`` during tuning, so the RTS estimate (eq. 12) is computed per chain, with that
chain's frozen weights, and the chains are pooled with equal weights
(:func:`~pymc_evidence.estimators.pooling.pool_chain_estimates`).
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np

from ..compat import get_group, group_names
from ..estimators.diagnostics import checked
from ..estimators.pooling import pool_chain_estimates
from ..estimators.rts import rb_thermodynamic_integration, round_trips, rts_log_evidence
from ..record import EvidenceWarning, WarningMessage, WeightWarning
from ..results.assemble import copied_groups, divergences
from ..results.diagnostics import pareto_khat
from ..results.schema import GROUP
from ..steps.simulated_tempering import q_stat_names
from .ct_trace import resample_posterior

__all__ = ["is_st_trace", "refuse_tempered", "st_arrays", "st_parts"]


def is_st_trace(raw) -> bool:
    """True for a trace recorded by :class:`~pymc_evidence.SimulatedTempering`."""
    return "sample_stats" in group_names(raw) and "st_q_0" in get_group(raw, "sample_stats")


def refuse_tempered(idata, what: str) -> None:
    """Raise ``ValueError`` when ``idata`` is the raw trace of a tempering run (no
    ``log_evidence`` group; ``ct_delta`` in its posterior or sample statistics, or the level
    statistics of :class:`~pymc_evidence.SimulatedTempering`): its ``posterior`` group holds
    tempered draws, which ``what`` (a method that needs posterior draws) would take for the
    posterior. The message names the reader that turns the trace into posterior draws."""
    try:
        names = group_names(idata)
    except TypeError:  # not sampling results: the caller's own checks say so
        return
    if GROUP in names or "posterior" not in names:
        return
    stats = get_group(idata, "sample_stats") if "sample_stats" in names else {}
    if is_st_trace(idata):
        reader = "pme.st_evidence(trace, step)"
    elif "ct_delta" in get_group(idata, "posterior") or "ct_delta" in stats:
        reader = "pme.ct_evidence(trace)"
    else:
        return
    raise ValueError(
        f"{what} needs posterior draws, and this is the raw trace of a tempering run: its "
        f"posterior group holds tempered draws. Pass the trace to {reader} and use its "
        "result (posterior draws, resampled by their weights) instead"
    )


def _ladder_from_trace(stats, n_levels: int) -> np.ndarray:
    """The ladder, read back from (level, beta) pairs; unvisited levels interpolated."""
    levels, betas = stats["st_level"].values.ravel(), stats["st_beta"].values.ravel()
    known = np.full(n_levels, np.nan)
    known[levels] = betas
    known[0], known[-1] = 0.0, 1.0
    seen = np.flatnonzero(np.isfinite(known))
    return np.interp(np.arange(n_levels), seen, known[seen])


def st_arrays(raw, betas=None):
    """``(log_cond (chain, draw, K), delta, levels, log_norm per chain, betas)``."""
    stats = get_group(raw, "sample_stats")
    n = sum(1 for name in stats.data_vars if str(name).startswith("st_q_"))
    with np.errstate(divide="ignore"):
        log_cond = np.log(np.stack([stats[k].values for k in q_stat_names(n)], axis=-1))
    log_norm = stats["st_log_norm"].values
    if np.any(np.ptp(log_norm, axis=1) > 0):
        raise ValueError("the weights changed during the draws; was tuning long enough?")
    betas = _ladder_from_trace(stats, n) if betas is None else np.asarray(betas, float)
    return log_cond, stats["st_delta"].values, stats["st_level"].values, log_norm[:, 0], betas


def _per_chain(log_cond, delta, log_norm, betas):
    estimates, ti = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        for c in range(log_cond.shape[0]):
            log_zhat = np.zeros(betas.size)
            log_zhat[-1] = log_norm[c]  # with uniform r this reproduces the chain's shift
            estimates.append(rts_log_evidence(log_cond[c : c + 1], betas, log_zhat))
            ti.append(rb_thermodynamic_integration(delta[c : c + 1], log_cond[c : c + 1], betas))
    return estimates, ti


def st_parts(raw, *, method: str, betas=None, rng=None, settings: dict | None = None):
    """Estimate ``log Z`` from a simulated-tempering trace; returns ``(estimate, groups,
    layout, attrs)`` for :func:`~pymc_evidence.results.assemble.assemble_results`;
    ``method`` names the estimate (its spec's).

    ``posterior`` holds the draws importance-resampled by ``q(K-1 | x)`` (the
    Rao-Blackwellized weight of the target level), so every draw counts, not only those
    that happened to sit at ``beta = 1``.
    """
    log_cond, delta, levels, log_norm, betas = st_arrays(raw, betas)
    per_chain, ti = _per_chain(log_cond, delta, log_norm, betas)
    n_levels = betas.size
    trips = round_trips(levels, n_levels)
    diag = {
        "ti_log_z": float(np.mean([t.log_z for t in ti])),
        "ti_se": float(np.sqrt(np.sum([t.se**2 for t in ti])) / len(ti)),
        "min_round_trips": float(np.min(trips)),
        "c_max_abs_dev": float(max(e.diagnostics["c_max_abs_dev"] for e in per_chain)),
    }
    pooled = pool_chain_estimates(per_chain, method=method, diagnostics=diag)
    extra = []
    if np.min(trips) == 0:
        text = "some chain made no round trip between beta = 0 and beta = 1"
        extra.append(WarningMessage(text, WeightWarning))
    quiet = replace(pooled, warnings=())  # the chains' warnings are emitted here, once
    # k-hat of the resampling weights q <= 1 is recorded, not warned on (bounded weights)
    pareto = {"pareto_k": pareto_khat(log_cond[..., -1])}
    diagnostics = {**pooled.diagnostics, **divergences(raw), **pareto}
    est = checked(quiet, diagnostics, [*pooled.warnings, *extra])
    extra_dims = {
        "beta": ("level", betas),
        "c_hat": ("level", np.exp(log_cond).mean(axis=(0, 1))),
        "r": ("level", np.full(n_levels, 1.0 / n_levels)),
        "occupancy": ("level", np.bincount(levels.ravel(), minlength=n_levels) / levels.size),
        "round_trips": ("chain", trips.astype(float)),
        "log_zhat_top": ("chain", log_norm),
    }
    raw_post = get_group(raw, "posterior")
    extended = raw_post.assign(
        st_level=(("chain", "draw"), levels),
        st_delta=(("chain", "draw"), delta),
        st_log_q=(("chain", "draw", "level"), log_cond),
    )
    rng = rng if rng is not None else np.random.default_rng()
    note = "importance-resampled by q(beta = 1 | x) from the simulated-tempering draws"
    groups = {
        "posterior": resample_posterior(raw_post, log_cond[..., -1], rng, note),
        "extended_posterior": extended,
        "sample_stats": get_group(raw, "sample_stats").drop_vars(q_stat_names(n_levels)),
        **copied_groups(raw),
    }
    attrs = {"n_levels": int(n_levels), **(settings or {})}
    return est, groups, {"extra_dims": extra_dims}, attrs
