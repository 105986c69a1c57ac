"""The user-facing functions: the only place where every layer meets."""

from __future__ import annotations

import pymc as pm

from ..base import model_space
from ..compat import group_names
from ..estimators.ct import base_moment_check
from ..hygiene import check_model
from ..results import GROUP
from ..results import log_evidence as _read_log_evidence
from ..transforms.tempering import ct_spec
from .assemble import ct_results, raw_ct_arrays
from .bridge import bridge_sampling, run_bridge
from .ct import _unconstrained_draws, run_ct
from .lis import run_lis_method
from .particles import run_particles
from .smc import SMC_METHODS, run_smc
from .st import is_st_trace, run_st, st_results

__all__ = [
    "METHODS",
    "bridge_sampling",
    "ct_evidence",
    "log_evidence",
    "sample_evidence",
    "st_evidence",
]

#: method name -> one-line description (shown in the error for an unknown method)
METHODS = {
    "ct": "continuous tempering, joint form: NUTS on the model extended by a temperature",
    "gibbs_ct": "continuous tempering, Gibbs form: NUTS at fixed temperature + exact β draws",
    "st": "simulated tempering on a ladder of temperatures, Rao-Blackwellized (RTS) evidence",
    "ais": "forward annealed importance sampling from the base (a stochastic lower bound)",
    "rais": "reverse AIS from posterior draws to the base (a stochastic upper bound)",
    "bar": "forward and reverse AIS combined by Bennett's acceptance ratio",
    "smc": "tempered resample-move SMC from the base, adaptive schedule, batched HMC moves",
    "arm": "resample-move SMC with adaptive particle counts on hard steps (ARM)",
    "lis": "linked importance sampling (Neal), forward and reverse runs joined by a bridge",
    "bridge": "bridge sampling (Meng-Wong optimal bridge) from NUTS posterior draws",
}


def rounds_initial_kind(rounds, base) -> str:
    """How the run's first base was made (adaptation replaces it by refitted moments)."""
    return rounds[0]["base_kind"] if rounds else base.kind


def _moment_diagnostics(model, base, raw) -> dict:
    """Eq. 22: w0-weighted moments of the draws against the base's known moments."""
    from ..base import GaussianBase

    if not isinstance(base, GaussianBase):
        return {}
    delta, _, _ = raw_ct_arrays(raw)
    x = _unconstrained_draws(model_space(model), raw)
    check = base_moment_check(x, delta, base.mean, base.cov)
    return {
        "base_moment_max_mean_z": float(check["max_mean_z"]),
        "base_moment_max_var_z": float(check["max_var_z"]),
    }


def sample_evidence(
    model: pm.Model | None = None,
    method: str = "ct",
    *,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 4,
    cores: int | None = None,
    random_seed=None,
    progressbar: bool = True,
    **method_options,
):
    """Estimate the marginal likelihood ``log Z = log p(y | model)`` with a standard error.

    Parameters
    ----------
    model : pm.Model, optional
        Taken from the context when omitted. Needs proper priors and continuous free
        variables (see :func:`pymc_evidence.check_model`).
    method : {"ct", "gibbs_ct", "st", "ais", "rais", "bar", "lis", "smc", "arm", "bridge"}
        ``"ct"``: joint continuous tempering (Graham & Storkey 2017), NUTS on the model
        extended by a temperature variable. ``"gibbs_ct"``: the Gibbs form, NUTS at a fixed
        temperature followed by an exact draw of the temperature. ``"st"``: simulated
        tempering on a discrete ladder with Rao-Blackwellized evidence (Carlson et al. 2016),
        through :class:`pymc_evidence.SimulatedTempering`. ``"ais"``, ``"rais"``, ``"bar"``:
        forward AIS, reverse AIS and their Bennett-acceptance-ratio combination (Habeck
        2017) with all particles moved together by batched HMC. ``"lis"``: linked
        importance sampling (Neal 2005), forward and reverse runs joined by the optimal
        top-level bridge (bridged LIS). ``"smc"``, ``"arm"``: tempered resample-move SMC
        and its adaptive-particle-count form (Fraccaro et al.). ``"bridge"``: bridge
        sampling from NUTS posterior draws (:func:`pymc_evidence.bridge_sampling`).
    draws, tune, chains, cores, random_seed, progressbar
        As in :func:`pymc.sample`, for the final run.
    **method_options
        For the CT methods:

        - ``base``: ``"advi"`` (default), ``"fullrank_advi"``, ``"prior"`` or a fitted
          base from :func:`pymc_evidence.fit_base`; ``base_kwargs`` go to ``fit_base``
          (default ``{"restarts": 8}``: eight ADVI fits from different starts, merged into
          one Gaussian covering every mode they found).
        - ``adapt_rounds`` (3), ``adapt_draws`` (500), ``adapt_tune`` (500): the bootstrap
          rounds that refit the base to the weighted posterior moments and set ``log zeta``
          to the running estimate; they stop early once ``log zeta`` is stable.
        - ``covariance``: ``"auto"`` (full below 200 dimensions), ``"full"`` or ``"diag"``
          for the refitted base.
        - ``potentials``: ``"likelihood"`` to accept ``pm.Potential`` terms as part of the
          likelihood.
        - ``nuts_sampler``: ``"pymc"`` (default), ``"nutpie"`` or ``"numpyro"`` (joint form).
        - ``target_accept`` (0.95: tempered targets mix a broad base with the posterior,
          and divergences bias the estimate).

        For ``"st"``: ``base``, ``base_kwargs`` and ``potentials`` as above, and the
        arguments of :class:`pymc_evidence.SimulatedTempering` (``n_levels``, ``betas``,
        ``adapt_block``, ``adapt_damping``, ``step_size_bands``, ``target_accept``, ...).

        For ``"ais"``, ``"rais"``, ``"bar"``: ``base``/``base_kwargs`` (``"prior"`` gives
        the power-posterior path from exact prior draws), ``n_particles`` (256),
        ``n_stages`` (200), ``schedule`` (``"sigmoidal"``, ``"geometric"``, ``"linear"``,
        ``"adaptive"``: chosen by a pilot run, kernels frozen; or an array of betas),
        ``n_leapfrog`` (10), and ``posterior`` (an InferenceData/DataTree whose draws start
        reverse AIS; without it ``draws``/``tune``/``chains`` set an internal NUTS run with
        ``target_accept=0.95``, whose divergences are reported as a warning).

        For ``"lis"``: ``base``/``base_kwargs``, ``n_particles`` (128 runs per direction),
        ``n_stages`` (20 links, schedule of equal thermodynamic length from a pilot AIS
        run), ``chain_length`` (10 transitions per chain), ``n_leapfrog`` (10),
        ``direction`` (``"bridged"``, ``"forward"``: no posterior draws needed,
        ``"reverse"``) and ``posterior`` as for ``"bar"``.

        For ``"smc"`` and ``"arm"``: ``draws`` is the number of particles per run and
        ``chains`` the number of independent runs (their spread gives the se); ``tune`` and
        ``cores`` are not used. Options: ``base``/``base_kwargs``, ``schedule``
        (``"adaptive"``: next temperature by bisection on the conditional ESS, or an array
        of betas), ``target_ess`` (0.8), ``resample_threshold`` (0.5), ``resampling``
        (``"systematic"``, ``"residual"``), ``n_leapfrog`` (10), ``n_moves`` (10),
        ``arm_threshold`` (0.7), ``max_expansions`` (3), ``n_particles``, ``n_runs``. With
        the adaptive schedule every step already has a conditional ESS of ``target_ess``,
        so ARM expands only when ``arm_threshold > target_ess`` or with a fixed schedule;
        that is where it helps (see :func:`pymc_evidence.api.smc.run_smc`).

        For ``"bridge"``: ``posterior`` (reuse draws you have; otherwise NUTS runs with
        ``draws``/``tune``/``chains``), ``repetitions``, ``proposal`` (``"normal"`` or
        ``"warp3"``), ``n_proposal``, ``maxiter``, ``tol`` (see
        :func:`pymc_evidence.bridge_sampling`).

    Returns
    -------
    InferenceData or DataTree
        ``posterior`` (draws importance-resampled to the posterior), ``extended_posterior``
        (the raw tempered draws with ``ct_log_w0``/``ct_log_w1``), ``sample_stats``,
        ``observed_data`` and the ``log_evidence`` group; read it with
        :func:`pymc_evidence.log_evidence`.

    Examples
    --------
    >>> import pymc as pm, pymc_evidence as pme
    >>> with pm.Model():
    ...     p = pm.Beta("p", 1, 1)
    ...     pm.Bernoulli("y", p, observed=[1, 0, 1, 1])
    ...     idata = pme.sample_evidence(draws=500, tune=500, chains=2, random_seed=3,
    ...                                 progressbar=False)
    >>> est = pme.log_evidence(idata)    # exact: log B(4, 2) = log(1/20) = -2.996
    >>> bool(abs(est.log_z + 2.9957) < max(4 * est.se, 0.1))
    True
    """
    if method not in METHODS:
        options = ", ".join(f"{k!r} ({v})" for k, v in METHODS.items())
        raise ValueError(f"unknown method {method!r}; choose one of: {options}")
    model = pm.modelcontext(model)
    check_model(model, potentials=method_options.get("potentials"))
    for name, value in (("draws", draws), ("chains", chains)):
        if int(value) < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
    if int(tune) < 0:
        raise ValueError(f"tune must be >= 0, got {tune}")
    sampling = dict(
        draws=draws,
        tune=tune,
        chains=chains,
        cores=cores,
        random_seed=random_seed,
        progressbar=progressbar,
    )
    settings = {"draws": int(draws), "tune": int(tune), "chains": int(chains)}
    if method in ("ais", "rais", "bar"):
        return run_particles(model, method, **sampling, **method_options)
    if method == "bridge":
        return run_bridge(model, **sampling, **method_options)
    if method == "lis":
        return run_lis_method(model, **sampling, **method_options)
    if method in SMC_METHODS:
        return run_smc(model, method, **sampling, **method_options)
    if method == "st":
        raw, step = run_st(model, **sampling, **method_options)
        settings["base_kind"] = step.base.kind
        return st_results(raw, betas=step.betas, random_seed=random_seed, settings=settings)[0]
    form = "joint" if method == "ct" else "gibbs"
    raw, base, rounds = run_ct(model, form=form, **sampling, **method_options)
    settings.update(base_kind=base.kind, base_initial_kind=rounds_initial_kind(rounds, base))
    idata, _ = ct_results(
        raw,
        method=method,
        random_seed=random_seed,
        rounds=rounds,
        diagnostics=_moment_diagnostics(model, base, raw),
        settings=settings,
    )
    return idata


def ct_evidence(raw, ext: pm.Model | None = None, *, random_seed=None):
    """Evidence and posterior draws from a continuous-tempering trace you sampled yourself.

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
    ...     pm.Normal("y", mu, 1, observed=[0.3])
    ...     ext = pme.continuous_tempering(pme.fit_base(random_seed=0))
    >>> with ext:
    ...     raw = pm.sample(300, tune=300, chains=2, random_seed=0, progressbar=False)
    >>> idata = pme.ct_evidence(raw, ext)
    """
    diagnostics = {}
    if ext is not None:
        spec = ct_spec(ext)
        diagnostics = _moment_diagnostics(spec.source, spec.base, raw)
    idata, _ = ct_results(raw, random_seed=random_seed, diagnostics=diagnostics)
    return idata


def st_evidence(raw, step=None, *, random_seed=None):
    """Evidence, level diagnostics and posterior draws from a simulated-tempering trace.

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
    ...     pm.Normal("y", mu, 1, observed=[0.3])
    ...     step = pme.SimulatedTempering(n_levels=8, random_seed=0)
    ...     raw = pm.sample(300, tune=300, step=step, chains=2, random_seed=0,
    ...                     progressbar=False, compute_convergence_checks=False)
    >>> idata = pme.st_evidence(raw, step)
    """
    betas = None if step is None else step.betas
    return st_results(raw, betas=betas, random_seed=random_seed)[0]


def log_evidence(idata):
    """The evidence estimate stored in (or recorded by) a sampling result.

    Reads the ``log_evidence`` group; for a raw trace of a tempering step method (e.g.
    ``pm.sample(step=pme.GibbsContinuousTempering(...))``) it computes the estimate from
    the recorded statistics.

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
