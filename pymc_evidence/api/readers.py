"""Readers: traces users sampled themselves, or results, in; the same results out."""

from __future__ import annotations

import pymc as pm
import xarray as xr

from ..base import model_space
from ..compat import group_names
from ..methods.bridge import SPEC as BRIDGE_SPEC
from ..methods.bridge import bridge_parts
from ..methods.ct import moment_diagnostics
from ..problem import EvidenceProblem
from ..results import GROUP
from ..results import log_evidence as _read_log_evidence
from ..results.assemble import assemble_results
from ..results.ct import ct_results, raw_ct_arrays
from ..results.schema import LOG_Z
from ..results.st import is_st_trace, st_results
from ..transforms.tempering import ct_spec

__all__ = ["bridge_sampling", "ct_evidence", "log_evidence", "st_evidence"]


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
    chains; see :func:`pymc_evidence.results.external.sample_smc_estimate`).

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
    return _read_log_evidence(idata)


def _groups(idata):
    try:
        return group_names(idata)
    except TypeError:
        return []
