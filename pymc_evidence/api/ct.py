"""Continuous tempering end to end: base, adaptation rounds, final run, results.

Two samplers share one workflow: the joint form (``"ct"``) samples the extended model of
:func:`~pymc_evidence.continuous_tempering` with NUTS; the Gibbs form (``"gibbs_ct"``) runs
:class:`~pymc_evidence.GibbsContinuousTempering` on the model itself. Both compile their
log density once; adaptation rounds only update shared variables.

Adaptation is the paper's bootstrap (Graham & Storkey, section 6): after a pilot run the
Gaussian base is refitted to the ``w1``-weighted posterior moments and ``log zeta`` is set
to the current estimate, for a few rounds until ``log zeta`` is stable. The final estimate
uses only the final run, whose base is frozen.
"""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pymc as pm
from pymc.step_methods.hmc.quadpotential import QuadPotentialDiagAdapt

from ..base import GaussianBase, PriorBase, fit_base, model_space
from ..compat import get_group
from ..estimators.ct import ct_log_evidence, ct_weights
from ..estimators.diagnostics import kish_ess
from ..steps import GibbsContinuousTempering
from ..transforms import continuous_tempering, set_base
from .assemble import raw_ct_arrays

__all__ = ["run_ct", "refit_base"]

_log = logging.getLogger("pymc_evidence")
_FULL_COV_MAX_DIM = 200
#: ADVI fits from different starts; distinct ones are merged so the base covers every mode.
DEFAULT_RESTARTS = 8


def resolve_base(base, model, rng, *, potentials=None, base_kwargs=None):
    """A fitted base: ``base`` itself, or ``fit_base(base, ...)`` when it names a method
    (with ``DEFAULT_RESTARTS`` restarts unless ``base_kwargs`` says otherwise)."""
    if not isinstance(base, str):
        return base
    options = {"restarts": DEFAULT_RESTARTS, "potentials": potentials, **(base_kwargs or {})}
    return fit_base(base, model=model, random_seed=rng.integers(2**31), **options)


def _unconstrained_draws(space, raw) -> np.ndarray:
    posterior = get_group(raw, "posterior")
    return space.unconstrain({rv.name: posterior[rv.name].values for rv in space.model.free_RVs})


def refit_base(base, space, raw, log_z: float, covariance: str = "auto"):
    """The bootstrap step: base ← N(w1-weighted mean, covariance), ``log zeta`` ← ``log_z``.

    With few effective draws the weighted covariance is shrunk towards the old one
    (weight ``d + 2`` pseudo-draws); with almost none only ``log zeta`` moves. A prior
    base keeps its shape and only updates ``log zeta``.
    """
    if isinstance(base, PriorBase):
        return base.with_values(log_zeta=log_z)
    delta, _, _ = raw_ct_arrays(raw)
    w = ct_weights(delta)
    ess = kish_ess(np.log(np.maximum(w, 1e-300)))
    if ess < 5:
        return base.with_values(log_zeta=log_z)
    x = _unconstrained_draws(space, raw).reshape(-1, space.ndim)
    mean = w @ x
    centered = x - mean
    if covariance == "diag" or (covariance == "auto" and space.ndim > _FULL_COV_MAX_DIM):
        cov = np.diag(w @ centered**2)
        old = np.diag(base.std**2)
    else:
        cov = (centered * w[:, None]).T @ centered
        old = base.cov
    prior_n = space.ndim + 2.0
    cov = (ess * cov + prior_n * old) / (ess + prior_n)
    return GaussianBase.from_moments(
        mean,
        cov,
        log_zeta=log_z,
        kind="moments",
        names=base.names,
        sizes=base.sizes,
        elbo=base.elbo,
        elbo_se=base.elbo_se,
        info={"refit_ess": float(ess)},
    )


def _potential(base, model):
    """NUTS's initial diagonal mass matrix from the base, in ``model``'s value-variable order
    (variables the base does not know, like ``ct_u``, start at the logistic variance)."""
    if isinstance(base, GaussianBase):
        mean, var = base.mean, base.std**2
    else:
        mean, var = np.zeros(base.ndim), np.ones(base.ndim)
    offsets = np.cumsum((0,) + tuple(base.sizes))
    where = {name: slice(offsets[i], offsets[i + 1]) for i, name in enumerate(base.names)}
    point = model.initial_point()
    means, variances = [], []
    for v in model.value_vars:
        if v.name in where:
            means.append(mean[where[v.name]])
            variances.append(var[where[v.name]])
        else:
            size = np.size(point[v.name])
            means.append(np.zeros(size))
            variances.append(np.full(size, 3.0))
    mean, var = np.concatenate(means), np.concatenate(variances)
    return QuadPotentialDiagAdapt(mean.size, mean, var, 10)


def _initvals(space, base, chains, rng, with_u):
    if not isinstance(base, GaussianBase):
        return None
    points = []
    for x in base.sample(chains, rng):
        point = space.constrain(x)
        if with_u:
            point["ct_u"] = np.asarray(rng.logistic())
        points.append(point)
    return points


class _JointSampler:
    """Samples the extended model with NUTS (PyMC's own, or another backend by name)."""

    method = "ct"

    def __init__(self, model, base, potentials, nuts_sampler, target_accept):
        self.space = model_space(model)
        self.ext = continuous_tempering(base, model=model, potentials=potentials)
        self.nuts_sampler, self.target_accept = nuts_sampler, target_accept
        self._logp_dlogp = None
        self.base = base

    def set_base(self, base):
        set_base(self.ext, base)
        self.base = base

    def sample(self, draws, tune, chains, cores, seed, progressbar):
        rng = np.random.default_rng(seed)
        kwargs = dict(
            draws=draws,
            tune=tune,
            chains=chains,
            cores=cores,
            random_seed=seed,
            progressbar=progressbar,
            compute_convergence_checks=False,
            model=self.ext,
        )
        if self.nuts_sampler != "pymc":
            return pm.sample(
                nuts_sampler=self.nuts_sampler, target_accept=self.target_accept, **kwargs
            )
        if self._logp_dlogp is None:
            self._logp_dlogp = self.ext.logp_dlogp_function(ravel_inputs=True)
            self._logp_dlogp.trust_input = True
        step = pm.NUTS(
            model=self.ext,
            logp_dlogp_func=self._logp_dlogp,
            potential=_potential(self.base, self.ext),
            target_accept=self.target_accept,
        )
        initvals = _initvals(self.space, self.base, chains, rng, with_u=True)
        return pm.sample(step=step, initvals=initvals, **kwargs)


class _GibbsSampler:
    """Runs the Gibbs-CT step method on the model itself."""

    method = "gibbs_ct"

    def __init__(self, model, base, potentials, nuts_sampler, target_accept):
        if nuts_sampler != "pymc":
            raise ValueError("gibbs_ct runs PyMC's own NUTS; use method='ct' for other backends")
        self.space = model_space(model)
        self.model, self.base = model, base
        self.step = GibbsContinuousTempering(
            base=base,
            model=model,
            potentials=potentials,
            target_accept=target_accept,
        )

    def set_base(self, base):
        self.step.set_base(base)
        self.base = base

    def sample(self, draws, tune, chains, cores, seed, progressbar):
        rng = np.random.default_rng(seed)
        initvals = _initvals(self.space, self.base, chains, rng, with_u=False)
        return pm.sample(
            draws=draws,
            tune=tune,
            chains=chains,
            cores=cores,
            step=self.step,
            initvals=initvals,
            random_seed=seed,
            progressbar=progressbar,
            compute_convergence_checks=False,
            model=self.model,
        )


def _round_summary(est, log_zeta, base) -> dict:
    return {
        "log_zeta": log_zeta,
        "log_z": est.log_z,
        "se": est.se,
        "base_kind": base.kind,
        "mean_beta": est.diagnostics.get("mean_beta", np.nan),
        "ess_w1": est.diagnostics.get("ess_w1", np.nan),
    }


def _adapt(sampler, base, *, rounds, draws, tune, chains, cores, rng, progressbar, covariance):
    """Bootstrap rounds; returns the adapted base and one summary dict per round."""
    history = []
    for r in range(rounds):
        raw = sampler.sample(draws, tune, chains, cores, int(rng.integers(2**31)), progressbar)
        delta, log_zeta, _ = raw_ct_arrays(raw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = ct_log_evidence(delta, log_zeta)
        history.append(_round_summary(est, log_zeta, base))
        _log.info(
            "CT adaptation round %d: log zeta %.3f -> estimate %.3f ± %.3f",
            r + 1,
            log_zeta,
            est.log_z,
            est.se,
        )
        base = refit_base(base, sampler.space, raw, est.log_z, covariance)
        sampler.set_base(base)
        if abs(est.log_z - log_zeta) < max(2.0 * est.se, 0.05):
            break
    return base, history


def run_ct(
    model,
    *,
    form: str = "joint",
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 4,
    cores: int | None = None,
    random_seed=None,
    progressbar: bool = True,
    base="advi",
    base_kwargs: dict | None = None,
    adapt_rounds: int = 3,
    adapt_draws: int = 500,
    adapt_tune: int = 500,
    covariance: str = "auto",
    potentials: str | None = None,
    nuts_sampler: str = "pymc",
    target_accept: float = 0.95,
):
    """Run continuous tempering with adaptation; returns ``(raw_final_trace, base, rounds)``.

    See :func:`pymc_evidence.sample_evidence` for the arguments.
    """
    if form not in ("joint", "gibbs"):
        raise ValueError(f"form must be 'joint' or 'gibbs', got {form!r}")
    if covariance not in ("auto", "full", "diag"):
        raise ValueError(f"covariance must be 'auto', 'full' or 'diag', got {covariance!r}")
    if adapt_rounds < 0:
        raise ValueError(f"adapt_rounds must be >= 0, got {adapt_rounds}")
    if form == "gibbs" and nuts_sampler != "pymc":
        raise ValueError("gibbs_ct runs PyMC's own NUTS; use method='ct' for other backends")
    rng = np.random.default_rng(random_seed)
    base = resolve_base(base, model, rng, potentials=potentials, base_kwargs=base_kwargs)
    cls = _JointSampler if form == "joint" else _GibbsSampler
    sampler = cls(model, base, potentials, nuts_sampler, target_accept)
    base, history = _adapt(
        sampler,
        base,
        rounds=adapt_rounds,
        draws=adapt_draws,
        tune=adapt_tune,
        chains=chains,
        cores=cores,
        rng=rng,
        progressbar=progressbar,
        covariance=covariance,
    )
    raw = sampler.sample(draws, tune, chains, cores, int(rng.integers(2**31)), progressbar)
    return raw, base, history
