"""Readers: traces users sampled themselves, or results, in; the same results out."""

from __future__ import annotations

from typing import Any

import numpy as np
import pymc as pm
import xarray as xr

from ..compat import group_names
from ..estimators.logspace import log_mean_exp_se
from ..methods.bridge import SPEC as BRIDGE_SPEC
from ..methods.bridge import bridge_parts
from ..methods.ct import ct_results, moment_diagnostics
from ..methods.ct_trace import raw_ct_arrays
from ..methods.st import st_results
from ..methods.st_trace import is_st_trace
from ..problem import EvidenceProblem
from ..record import ConvergenceWarning, EvidenceEstimate, emit_warnings
from ..results import GROUP
from ..results import log_evidence as _read_log_evidence
from ..results.assemble import assemble_results
from ..results.error_measures import ErrorMeasures
from ..results.error_measures import error_measures as _measures_of
from ..results.external import is_sample_smc, sample_smc_log_z
from ..results.schema import LOG_Z
from ..runtime import model_space
from ..transforms.tempering import ct_spec

__all__ = [
    "SMC_METHOD",
    "bridge_sampling",
    "ct_evidence",
    "error_measures",
    "log_evidence",
    "sample_smc_estimate",
    "st_evidence",
]

#: ``method`` of the estimates read from ``pm.sample_smc`` results.
SMC_METHOD = "pm.sample_smc"
#: Fewer chains than this give a warning: the se is then itself too uncertain to rely on.
MIN_CHAINS_FOR_SE = 4


def ct_evidence(raw, ext: pm.Model | None = None, *, random_seed=None):
    """Evidence and posterior draws from a continuous-tempering trace you sampled yourself.

    The trace's own ``posterior`` group holds tempered draws (the temperature runs from the
    base to the posterior); the result's ``posterior`` holds them importance-resampled to
    the posterior, which is what ``az.summary`` should see.

    Parameters
    ----------
    raw : InferenceData or DataTree
        From ``pm.sample`` on a model built by :func:`pymc_evidence.continuous_tempering`,
        or on a model with the :class:`pymc_evidence.GibbsContinuousTempering` step.
    ext : pm.Model, optional
        The extended model; when given, the base-moment diagnostic (eq. 22) is added.
    random_seed : int, optional
        Seed of the importance resampling.

    Returns
    -------
    InferenceData or DataTree
        The same groups as :func:`sample_evidence`.

    Examples
    --------
    >>> import pymc as pm, pymc_evidence as pme
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu", 0, 1)
    ...     _ = pm.Normal("y", mu, 1, observed=[0.3])
    ...     base = pme.fit_base(random_seed=0, progressbar=False)
    ...     ext = pme.continuous_tempering(base, warn_tempered=False)
    >>> with ext:
    ...     raw = pm.sample(300, tune=300, chains=2, random_seed=0, progressbar=False)
    >>> idata = pme.ct_evidence(raw, ext)   # az.summary(idata): the posterior; not of raw
    """
    diagnostics = {}
    if ext is not None:
        spec = ct_spec(ext)
        diagnostics = moment_diagnostics(model_space(spec.source), spec.base, raw)
    idata, _ = ct_results(raw, random_seed=random_seed, diagnostics=diagnostics)
    return idata


def st_evidence(raw, step=None, *, random_seed=None):
    """Evidence, level diagnostics and posterior draws from a simulated-tempering trace.

    The trace's own ``posterior`` group holds the draws of every level of the ladder; the
    result's ``posterior`` holds them resampled to the posterior (the target level).

    Parameters
    ----------
    raw : InferenceData or DataTree
        From ``pm.sample(step=pme.SimulatedTempering(...))``.
    step : SimulatedTempering, optional
        The step method used; gives the exact ladder (otherwise it is read back from the
        recorded levels and temperatures).
    random_seed : int, optional
        Seed of the importance resampling into ``posterior``.

    Returns
    -------
    InferenceData or DataTree
        ``posterior`` (resampled by the target level's Rao-Blackwellized weight),
        ``extended_posterior``, ``sample_stats`` and the ``log_evidence`` group with a
        ``level`` dimension (``beta``, ``c_hat``, ``r``, ``occupancy``) and per-chain round
        trips.

    Examples
    --------
    >>> import pymc as pm, pymc_evidence as pme
    >>> with pm.Model():
    ...     mu = pm.Normal("mu", 0, 1)
    ...     _ = pm.Normal("y", mu, 1, observed=[0.3])
    ...     base = pme.fit_base("advi", random_seed=0, progressbar=False)
    ...     step = pme.SimulatedTempering(base=base, n_levels=8, warn_tempered=False)
    ...     raw = pm.sample(300, tune=300, step=step, chains=2, random_seed=0,
    ...                     progressbar=False, compute_convergence_checks=False)
    >>> idata = pme.st_evidence(raw, step)
    """
    betas = None if step is None else step.betas
    return st_results(raw, betas=betas, random_seed=random_seed)[0]


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
    proposal draws) are stored for ``repetitions=1``. Chains that sit in separated modes
    are bridge-sampled cluster by cluster, and R-hat/ESS are checked within each cluster
    (a :class:`~pymc_evidence.ConvergenceWarning` only when a cluster's own chains
    disagree or mix slowly). The raw trace of a tempering run is refused (``ValueError``):
    its draws are tempered; pass the result of :func:`ct_evidence` or :func:`st_evidence`.

    Examples
    --------
    >>> import pymc as pm
    >>> from pymc_evidence.testing import beta_bernoulli
    >>> case = beta_bernoulli(n=20, heads=6)
    >>> with case.model:
    ...     idata = pm.sample(500, tune=500, chains=2, random_seed=1, progressbar=False)
    ...     result = bridge_sampling(idata, random_seed=2)
    >>> est = log_evidence(result)
    >>> bool(abs(est.log_z - case.log_z) < max(4 * est.se, 0.1))
    True
    """
    options = BRIDGE_SPEC.options(
        repetitions=repetitions, proposal=proposal, n_proposal=n_proposal, maxiter=maxiter, tol=tol
    )
    if model is None and pm.Model.get_context(error_if_none=False) is None:
        raise TypeError(
            "bridge_sampling needs the model the draws came from: pass it, "
            "bridge_sampling(idata, model), or call it inside `with model:`"
        )
    problem = EvidenceProblem.build(
        model,
        random_seed=random_seed,
        potentials=potentials,
        base=None,
        reparam=None,
    )
    result = bridge_parts(problem, idata, options)
    return assemble_results(
        result.estimate, {}, layout=result.layout, attrs=result.attrs, into=idata
    )


def log_evidence(idata):
    """The evidence estimate stored in (or recorded by) a sampling result.

    Reads the ``log_evidence`` group; for a raw trace of a tempering step method (e.g.
    ``pm.sample(step=pme.GibbsContinuousTempering(...))``) it computes the estimate from
    the recorded statistics; for a ``pm.sample_smc`` result it pools the chains' final
    ``log_marginal_likelihood`` (method ``"pm.sample_smc"``, se from the spread of the
    chains; see :func:`sample_smc_estimate`).

    Returns
    -------
    EvidenceEstimate
        With ``log_z``, ``se``, ``method``, per-chain values, diagnostics and warnings.

    Examples
    --------
    >>> from pymc_evidence import EvidenceEstimate, log_evidence
    >>> log_evidence(EvidenceEstimate(log_z=-1.0, se=0.1, method="ct")).log_z
    -1.0
    """
    if isinstance(idata, xr.Dataset):
        if LOG_Z not in idata:
            raise TypeError(
                "an xarray.Dataset without the evidence (xr.open_dataset reads a saved "
                "result's root group only): read the whole result with "
                "xr.open_datatree(path) or az.from_netcdf(path), or its evidence group with "
                f"xr.open_dataset(path, group={GROUP!r})"
            )
        return _read_log_evidence(idata)
    if not hasattr(idata, "log_z") and GROUP not in _groups(idata):
        if is_st_trace(idata):
            return st_results(idata)[1]
        try:
            raw_ct_arrays(idata)
        except (ValueError, KeyError):
            pass
        else:
            return ct_results(idata)[1]
        if is_sample_smc(idata):
            return sample_smc_estimate(idata)
    return _read_log_evidence(idata)


def error_measures(idata_or_estimate) -> ErrorMeasures:
    """Relative mean-squared error and coefficient of variation of the ``Z`` estimate of
    anything :func:`log_evidence` reads (a raw tempering trace, a ``pm.sample_smc`` result
    included): :func:`pymc_evidence.results.error_measures.error_measures` of its estimate.

    Examples
    --------
    >>> from pymc_evidence import EvidenceEstimate
    >>> error_measures(EvidenceEstimate(log_z=-12.3, se=0.05, method="ct")).percentage
    '5%'
    """
    return _measures_of(log_evidence(idata_or_estimate))


def _groups(idata):
    try:
        return group_names(idata)
    except TypeError:
        return []


def _messages(n: int) -> list[str]:
    if n == 1:
        return [
            "pm.sample_smc ran one chain: the se of log Z comes from the spread of "
            "independent chains, so it is not available (nan); run pm.sample_smc with "
            f"chains >= {MIN_CHAINS_FOR_SE}"
        ]
    if n < MIN_CHAINS_FOR_SE:
        return [
            f"the se of the pm.sample_smc estimate comes from the spread of only {n} chains "
            f"and is itself very uncertain; run pm.sample_smc with chains >= "
            f"{MIN_CHAINS_FOR_SE} for a usable error bar"
        ]
    return []


def sample_smc_estimate(idata: Any) -> EvidenceEstimate:
    """The evidence estimate of a ``pm.sample_smc`` result, with a standard error.

    Each chain of ``pm.sample_smc`` is an independent SMC run whose ``Z`` estimate is
    unbiased, so the runs are pooled on the ``Z`` scale::

        log Z = logsumexp(log Z_i) - log n
        se    = sd(Z_i) / (sqrt(n) * mean(Z_i))      (delta method, sd with ddof=1)

    The se comes from the spread of the ``n`` chains only (PyMC gives no error bar per
    run): it is NaN for one chain, and rough for fewer than 4; both cases warn.

    Parameters
    ----------
    idata : arviz.InferenceData or xarray.DataTree
        From ``pm.sample_smc`` (PyMC 5 or 6).

    Returns
    -------
    EvidenceEstimate
        ``method="pm.sample_smc"``; ``per_chain_log_z`` holds the chains' final values
        (their own se is unknown: NaN); ``diagnostics["se_from_n_chains"]`` is ``n``, saying
        that the se is the spread of ``n`` chains.

    Warns
    -----
    ConvergenceWarning
        For fewer than 4 chains.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> from pymc_evidence import compat
    >>> stats = xr.Dataset({"log_marginal_likelihood": (("chain", "draw"),
    ...     np.array([[np.nan, -3.1], [np.nan, -2.9], [np.nan, -3.0], [np.nan, -3.05]],
    ...              dtype=object))})
    >>> print(sample_smc_estimate(compat.new_idata({"sample_stats": stats})))
    log Z = -3.010 ± 0.043 (pm.sample_smc, 4 chains)
    """
    log_z_chains = sample_smc_log_z(idata)
    n = log_z_chains.size
    log_z, se = log_mean_exp_se(log_z_chains)
    messages = emit_warnings(_messages(n), ConvergenceWarning)
    return EvidenceEstimate(
        log_z=float(log_z),
        se=float(se),
        method=SMC_METHOD,
        per_chain_log_z=log_z_chains,
        per_chain_se=np.full(n, np.nan),
        diagnostics={"se_from_n_chains": float(n)},
        warnings=messages,
    )
