"""Bridge sampling from posterior draws a user already has (the ``bridgesampling`` workflow).

The draws of the ``posterior`` group are mapped to the model's raveled unconstrained space
(:func:`~pymc_evidence.base.model_space`). The first half of every chain fits the proposal
(a Gaussian with their mean and covariance, or the warp-3 standardisation); the second half,
kept in chain order so its autocorrelation is measured, enters the Meng-Wong iteration of
:func:`~pymc_evidence.estimators.bridge.bridge_log_evidence` together with ``n_proposal``
fresh proposal draws. The model's joint log density (Jacobians included) is evaluated for all
points in one compiled, vectorized call per chunk.
"""

from __future__ import annotations

import warnings
import weakref
from dataclasses import replace

import numpy as np
import pymc as pm

from ..base import model_space
from ..base.gaussian import GaussianBase
from ..compat import get_group, group_names, set_group
from ..engines.batched import batched_log_densities
from ..estimators.bridge import bridge_log_evidence, combine_bridge_runs, posterior_n_eff
from ..estimators.diagnostics import EvidenceWarning
from ..estimators.warp import (
    warp3_log_density,
    warp3_moments,
    warp3_points,
    warp3_standardize,
)
from ..hygiene import check_model
from ..results import GROUP, estimate_to_dataset

__all__ = ["PROPOSALS", "bridge_sampling", "run_bridge"]

#: proposal name -> description
PROPOSALS = {
    "normal": "Gaussian with the mean and covariance of the fitting half (unconstrained space)",
    "warp3": "warp-3: standard normal against the posterior standardised and symmetrised",
}
#: Fewest draws per chain (each half needs at least 4 for autocorrelations).
MIN_DRAWS_PER_CHAIN = 8
_CHUNK = 2048
_REFERENCE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _log_f(model):
    """Batched ``log f`` (joint log density with Jacobians) of ``model``, compiled once.

    The batched function needs a base; a standard normal one, cached per model, keeps the
    compiled function reusable whatever proposal is fitted.
    """
    space = model_space(model)
    if model not in _REFERENCE:
        eye = np.eye(space.ndim)
        _REFERENCE[model] = GaussianBase(
            np.zeros(space.ndim), eye, 0.0, "moments", names=space.names, sizes=space.sizes
        )
    density = batched_log_densities(model, _REFERENCE[model])

    def log_f(x: np.ndarray) -> np.ndarray:
        flat = np.asarray(x, dtype=float).reshape(-1, space.ndim)
        out = [density(flat[i : i + _CHUNK])[0] for i in range(0, flat.shape[0], _CHUNK)]
        return np.concatenate(out).reshape(np.shape(x)[:-1])

    return log_f


def _posterior_draws(idata, space) -> np.ndarray:
    """Unconstrained draws ``(chain, draw, d)`` of the free variables, with clear errors."""
    try:
        names = group_names(idata)
    except TypeError as err:
        raise TypeError(f"bridge_sampling needs sampling results: {err}") from err
    if "posterior" not in names:
        raise ValueError(f"these results have no 'posterior' group (groups: {names})")
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


def _proposal_logs(log_f, x_prop, log_g_prop) -> tuple[np.ndarray, np.ndarray, int]:
    """``log f`` at proposal points; nan becomes -inf (zero density), counted."""
    lf = log_f(x_prop)
    if np.any(lf == np.inf):
        raise ValueError("the model's log density is +inf at a proposal draw")
    n_nan = int(np.sum(np.isnan(lf)))
    return np.where(np.isnan(lf), -np.inf, lf), log_g_prop, n_nan


def _normal_setup(log_f, x_fit, x_iter):
    """Posterior-side logs and a proposal sampler for the Gaussian proposal."""
    d = x_fit.shape[-1]
    flat = x_fit.reshape(-1, d)
    cov = np.cov(flat, rowvar=False).reshape(d, d)
    base = GaussianBase.from_moments(flat.mean(0), cov, log_zeta=0.0)
    lf_post = log_f(x_iter)
    lg_post = base.logp(x_iter.reshape(-1, d)).reshape(x_iter.shape[:2])

    def draw(n, rng):
        x = base.sample(n, rng)
        return _proposal_logs(log_f, x, base.logp(x))

    return lf_post, lg_post, 0, draw


def _warp3_setup(log_f, x_fit, x_iter):
    """Posterior-side logs and a proposal sampler for the warp-3 proposal."""
    d = x_fit.shape[-1]
    mean, chol = warp3_moments(x_fit.reshape(-1, d))
    unit = GaussianBase(np.zeros(d), np.eye(d), 0.0, "moments")
    eta = warp3_standardize(x_iter, mean, chol)
    lf_mirror, _, n_nan = _proposal_logs(log_f, 2.0 * mean - x_iter, None)
    lf_post = warp3_log_density(log_f(x_iter), lf_mirror, chol)
    lg_post = unit.logp(eta.reshape(-1, d)).reshape(x_iter.shape[:2])

    def draw(n, rng):
        eta_prop = unit.sample(n, rng)
        plus, minus = warp3_points(eta_prop, mean, chol)
        lf_plus, _, nan_p = _proposal_logs(log_f, plus, None)
        lf_minus, _, nan_m = _proposal_logs(log_f, minus, None)
        return warp3_log_density(lf_plus, lf_minus, chol), unit.logp(eta_prop), nan_p + nan_m

    return lf_post, lg_post, n_nan, draw


def _check_options(repetitions, proposal, n_proposal, maxiter, tol):
    if proposal not in PROPOSALS:
        options = ", ".join(f"{k!r} ({v})" for k, v in PROPOSALS.items())
        raise ValueError(f"unknown proposal {proposal!r}; choose one of: {options}")
    if int(repetitions) < 1:
        raise ValueError(f"repetitions must be at least 1, got {repetitions}")
    if n_proposal is not None and int(n_proposal) < 2:
        raise ValueError(f"n_proposal must be at least 2, got {n_proposal}")
    if int(maxiter) < 1 or not tol > 0:
        raise ValueError(f"need maxiter >= 1 and tol > 0, got {maxiter}, {tol}")


def _estimate(model, x, proposal, repetitions, n_proposal, rng, maxiter, tol):
    """Run the repetitions; returns the pooled estimate and the per-run estimates."""
    half = x.shape[1] // 2
    x_fit, x_iter = x[:, :half], x[:, half : 2 * half]
    log_f = _log_f(model)
    setup = _normal_setup if proposal == "normal" else _warp3_setup
    lf_post, lg_post, nan_post, draw = setup(log_f, x_fit, x_iter)
    if not np.all(np.isfinite(lf_post)):
        raise ValueError(
            f"the model's log density is not finite at {int(np.sum(~np.isfinite(lf_post)))} "
            "posterior draws: were they sampled from this model?"
        )
    n_eff = posterior_n_eff(x_iter)
    n2 = int(n_proposal or x_iter.shape[0] * x_iter.shape[1])
    runs, n_nan = [], nan_post
    for _ in range(int(repetitions)):
        lf_prop, lg_prop, nan_prop = draw(n2, rng)
        est = bridge_log_evidence(
            lf_post,
            lg_post,
            lf_prop,
            lg_prop,
            n_eff=n_eff,
            maxiter=maxiter,
            tol=tol,
            emit_warnings=False,
        )
        runs.append(est)
        n_nan += nan_prop
    est = runs[0] if repetitions == 1 else combine_bridge_runs(runs)
    diagnostics = {**est.diagnostics, "n_nonfinite_log_f": float(n_nan)}
    return replace(est, diagnostics=diagnostics), runs


def _divergences(idata) -> dict:
    """Divergent transitions recorded with the draws (PyMC's ``sample_stats.diverging``)."""
    if "sample_stats" not in group_names(idata):
        return {}
    stats = get_group(idata, "sample_stats")
    return {"n_divergences": float(np.sum(stats["diverging"]))} if "diverging" in stats else {}


def _finish(est, runs, settings, extra_diag):
    """Add warnings (emitted once) and build the ``log_evidence`` group."""
    messages = list(est.warnings)
    est = replace(est, diagnostics={**est.diagnostics, **extra_diag})
    if est.diagnostics.get("n_divergences", 0.0) > 0:
        messages.append(
            f"the posterior draws include {est.diagnostics['n_divergences']:.0f} divergent "
            "transitions: they may miss part of the posterior, biasing log Z beyond its se"
        )
    n_bad = est.diagnostics.get("n_nonfinite_log_f", 0.0)
    if n_bad:
        messages.append(
            f"the model's log density was nan at {n_bad:.0f} proposal points; they were "
            "counted as zero density (log f = -inf)"
        )
    for message in messages:
        warnings.warn(message, EvidenceWarning, stacklevel=3)
    est = replace(est, warnings=tuple(messages))
    if len(runs) == 1:
        return estimate_to_dataset(est, attrs=settings)
    per_run = {
        key: np.array([r.diagnostics[key] for r in runs])
        for key in ("converged", "n_iterations", "re2_proposal", "re2_posterior")
    }
    return estimate_to_dataset(est, chain_dim="run", chain_values=per_run, attrs=settings)


def bridge_sampling(
    idata,
    model: pm.Model | None = None,
    *,
    repetitions: int = 1,
    proposal: str = "normal",
    n_proposal: int | None = None,
    random_seed=None,
    maxiter: int = 1000,
    tol: float = 1e-10,
    potentials: str | None = None,
):
    """Marginal likelihood by bridge sampling from posterior draws you already have.

    Parameters
    ----------
    idata : InferenceData or DataTree
        Results with a ``posterior`` group holding every free variable of ``model`` with
        dims ``(chain, draw, ...)``, at least 8 draws per chain.
    model : pm.Model, optional
        The model the draws came from; taken from the context when omitted. Needs proper
        priors and continuous free variables (see :func:`pymc_evidence.check_model`).
    repetitions : int, default 1
        Independent redraws of the proposal sample (the posterior halves stay the same).
        With more than one, per-run estimates go on a ``run`` dimension, ``log_z`` is their
        mean and ``se^2 = mean(re2_posterior) + max(mean(re2_proposal), var(runs)) / R``
        (see :func:`~pymc_evidence.estimators.bridge.combine_bridge_runs`).
    proposal : {"normal", "warp3"}
        ``"normal"``: a Gaussian with the fitting half's mean and covariance in the
        unconstrained space. ``"warp3"``: the posterior standardised by that mean and
        covariance and symmetrised (Meng & Schilling 2002) against a standard normal,
        better for skewed posteriors; it costs three model evaluations per proposal draw.
    n_proposal : int, optional
        Proposal draws per repetition; default the number of draws in the iteration half.
    random_seed : int or Generator, optional
        Seeds the proposal draws.
    maxiter, tol : int, float
        Of the Meng-Wong iteration: converged when the change of ``log Z`` is at most
        ``tol * max(1, |log Z|)``. Non-convergence gives the last iterate with a warning,
        ``diag_converged = 0`` and the warning stored in the group.
    potentials : {None, "likelihood"}
        As in :func:`pymc_evidence.check_model`.

    Returns
    -------
    InferenceData or DataTree
        A copy of ``idata`` (same type, all groups kept) with a ``log_evidence`` group
        (method ``"bridge"``; a previous one is replaced). Read it with
        :func:`pymc_evidence.log_evidence`.

    Notes
    -----
    The first half of each chain fits the proposal and the second half enters the iteration;
    ``N1`` in the bridge weights is replaced by the median ESS of the iteration half over
    coordinates, and the se is Frühwirth-Schnatter's (2004) relative error with the ESS of
    the bridge function over chains. Per-chain estimates (each chain's half against all
    proposal draws) are stored for ``repetitions=1``.

    Examples
    --------
    >>> import pymc as pm
    >>> from pymc_evidence.testing import beta_bernoulli
    >>> case = beta_bernoulli(n=20, heads=6)
    >>> with case.model:
    ...     idata = pm.sample(500, tune=500, chains=2, random_seed=1, progressbar=False)
    ...     result = bridge_sampling(idata, random_seed=2)
    >>> from pymc_evidence.results import log_evidence
    >>> est = log_evidence(result)
    >>> bool(abs(est.log_z - case.log_z) < max(4 * est.se, 0.1))
    True
    """
    model = pm.modelcontext(model)
    check_model(model, potentials=potentials)
    _check_options(repetitions, proposal, n_proposal, maxiter, tol)
    space = model_space(model)
    x = _posterior_draws(idata, space)
    rng = np.random.default_rng(random_seed)
    est, runs = _estimate(model, x, proposal, repetitions, n_proposal, rng, maxiter, tol)
    settings = {
        "proposal": proposal,
        "repetitions": int(repetitions),
        "n_proposal": int(est.diagnostics["n_proposal"]),
        "maxiter": int(maxiter),
        "tol": float(tol),
        "split": "first half of each chain fits the proposal, second half iterates",
    }
    group = _finish(est, runs, settings, _divergences(idata))
    out = idata.copy()
    set_group(out, GROUP, group)
    return out


def run_bridge(
    model,
    *,
    draws: int,
    tune: int,
    chains: int,
    cores,
    random_seed,
    progressbar: bool,
    posterior=None,
    **bridge_options,
):
    """Sample the posterior with NUTS unless ``posterior`` is given, then bridge-sample.

    For ``sample_evidence(method="bridge")``: ``draws``/``tune``/``chains``/``cores``/
    ``progressbar`` go to :func:`pymc.sample`; ``random_seed`` seeds both the sampling and
    the proposal draws; ``bridge_options`` go to :func:`bridge_sampling`.

    Examples
    --------
    >>> from pymc_evidence.testing import normalized_density
    >>> case = normalized_density(log_z=-3.7, d=2)
    >>> idata = run_bridge(case.model, draws=400, tune=400, chains=2, cores=1,
    ...                    random_seed=0, progressbar=False)
    >>> from pymc_evidence.results import log_evidence
    >>> bool(abs(log_evidence(idata).log_z + 3.7) < 0.1)
    True
    """
    model = pm.modelcontext(model)
    check_model(model, potentials=bridge_options.get("potentials"))
    seeds = np.random.default_rng(random_seed).integers(2**31, size=2)
    if posterior is None:
        posterior = pm.sample(
            draws=draws,
            tune=tune,
            chains=chains,
            cores=cores,
            random_seed=int(seeds[0]),
            progressbar=progressbar,
            compute_convergence_checks=False,
            model=model,
        )
    return bridge_sampling(posterior, model, random_seed=int(seeds[1]), **bridge_options)
