"""Continuous-tempering traces in, the estimate and the groups of the results out.

The raw trace of a CT run samples the *extended* target, so its draws are not posterior
draws. This module computes the evidence
(:func:`~pymc_evidence.estimators.ct.ct_log_evidence`), importance-resamples posterior
draws by the ``w1`` weights, and lays out the groups of the results: ``posterior``
(resampled), ``extended_posterior`` (raw draws with ``log_w0``/``log_w1``),
``sample_stats`` and ``observed_data``; :mod:`pymc_evidence.results` then adds
``log_evidence``. :func:`resample_posterior` serves simulated tempering too.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..compat import get_group, group_names
from ..estimators.ct import beta_cdf, ct_log_evidence, log_w0, log_w1
from ..estimators.diagnostics import checked
from ..estimators.logspace import systematic_resample
from ..results.assemble import copied_groups, divergences
from ..results.diagnostics import pareto_khat

__all__ = ["CT_PREFIX", "ct_parts", "raw_ct_arrays", "resample_posterior"]

CT_PREFIX = "ct_"
N_BETA_BINS = 20


def raw_ct_arrays(raw) -> tuple[np.ndarray, float, str]:
    """``(delta, log_zeta, source)`` from a raw CT trace (joint model or Gibbs-CT step)."""
    posterior = get_group(raw, "posterior")
    if "ct_delta" in posterior:
        zeta = posterior["ct_log_zeta"].values if "ct_log_zeta" in posterior else None
        delta, source = posterior["ct_delta"].values, "posterior"
    else:
        stats = get_group(raw, "sample_stats") if "sample_stats" in group_names(raw) else {}
        if "ct_delta" not in stats:
            raise ValueError(
                "this trace has no 'ct_delta': it was not sampled from a model built by "
                "pme.continuous_tempering nor with pme.GibbsContinuousTempering"
            )
        zeta = stats["ct_log_zeta"].values
        delta, source = stats["ct_delta"].values, "sample_stats"
    if zeta is None or np.ptp(zeta) > 0:
        raise ValueError("log zeta must be recorded and constant over the trace")
    return np.asarray(delta, dtype=float), float(np.ravel(zeta)[0]), source


def resample_posterior(posterior: xr.Dataset, log_w: np.ndarray, rng, note: str) -> xr.Dataset:
    """Resample each chain's draws by ``exp(log_w)`` (systematic), keeping (chain, draw);
    ``note`` (how the weights came about) is stored in the group's attributes.

    Chains are resampled separately so that chain-level diagnostics (R-hat) still reveal a
    chain that saw only part of the posterior.
    """
    keep = [name for name in posterior.data_vars if not str(name).startswith(CT_PREFIX)]
    n_chain, n_draw = log_w.shape
    index = np.empty((n_chain, n_draw), dtype=int)
    for c in range(n_chain):
        index[c] = systematic_resample(log_w[c], n_draw, rng)
    out = {}
    for name in keep:
        values = posterior[name].values
        picked = np.take_along_axis(
            values, index.reshape(index.shape + (1,) * (values.ndim - 2)), axis=1
        )
        out[name] = (posterior[name].dims, picked)
    coords = {k: v for k, v in posterior.coords.items() if k not in ("chain", "draw")}
    ds = xr.Dataset(out, coords={**coords, "chain": posterior.chain, "draw": posterior.draw})
    ds.attrs = dict(posterior.attrs)
    ds.attrs["pymc_evidence_note"] = note
    return ds


def _beta_histogram(delta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rao-Blackwellized density of beta on a grid of bins: mean over draws of p(beta | x)."""
    edges = np.linspace(0.0, 1.0, N_BETA_BINS + 1)
    flat = delta.ravel()
    cdf = np.stack([beta_cdf(np.full_like(flat, e), flat) for e in edges])
    return 0.5 * (edges[1:] + edges[:-1]), np.diff(cdf, axis=0).mean(axis=1)


def ct_parts(raw, *, method: str, rng=None, rounds=None, diagnostics=None, settings=None):
    """Estimate ``log Z`` from a raw CT trace; returns ``(estimate, groups, layout, attrs)``
    for :func:`~pymc_evidence.results.assemble.assemble_results`.

    ``method``: the name of the estimate (its spec's); ``rng`` draws the importance
    resampling; ``rounds`` are the adaptation rounds' summaries.
    """
    delta, log_zeta, source = raw_ct_arrays(raw)
    est = ct_log_evidence(delta, log_zeta, method=method)
    lw0, lw1 = log_w0(delta), log_w1(delta)
    # k-hat of w1 is recorded, not warned on: w1 grows only linearly in |delta|, so its
    # variance is finite and PSIS' tail fit misleads (a large k-hat at a Kish ESS of nearly
    # all the draws)
    pareto = {"pareto_k": pareto_khat(lw1)}
    est = checked(est, {**(diagnostics or {}), **divergences(raw), **pareto})
    raw_post = get_group(raw, "posterior")
    extended = raw_post.assign(
        ct_log_w0=(("chain", "draw"), lw0), ct_log_w1=(("chain", "draw"), lw1)
    )
    if source == "sample_stats":
        extended = extended.assign(ct_delta=(("chain", "draw"), delta))
    centers, density = _beta_histogram(delta)
    extra = {"beta_bin_center": ("beta_bin", centers), "beta_density": ("beta_bin", density)}
    for key in ("log_zeta", "log_z", "se", "mean_beta", "ess_w1") if rounds else ():
        extra[f"adapt_{key}"] = ("adapt_round", np.array([r[key] for r in rounds], float))
    attrs = {"log_zeta": log_zeta, "n_adapt_rounds": len(rounds or []), **(settings or {})}
    rng = rng if rng is not None else np.random.default_rng()
    note = "importance-resampled by w1 from the extended CT draws"
    groups = {
        "posterior": resample_posterior(raw_post, lw1, rng, note),
        "extended_posterior": extended,
    }
    if "sample_stats" in group_names(raw):
        groups["sample_stats"] = get_group(raw, "sample_stats")
    groups.update(copied_groups(raw))
    return est, groups, {"extra_dims": extra}, attrs
