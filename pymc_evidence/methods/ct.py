"""``method="ct"`` and ``"gibbs_ct"``: continuous tempering with bootstrap adaptation.

Two samplers share one workflow: the joint form samples the extended model of
:func:`~pymc_evidence.continuous_tempering` with NUTS; the Gibbs form runs
:class:`~pymc_evidence.GibbsContinuousTempering` on the model itself. Both compile their
log density once; adaptation rounds only update shared variables.

Adaptation is the paper's bootstrap (Graham & Storkey, section 6): after a pilot run the
base is refitted to the ``w1``-weighted posterior moments
(:func:`~pymc_evidence.basefit.refit.refit_base`) and ``log zeta`` set to the current
estimate, for a few rounds until ``log zeta`` is stable. The final estimate uses only the
final run, whose base is frozen.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass

import numpy as np

from ..basefit.refit import refit_base
from ..compat import get_group
from ..estimators.ct import base_moment_check, ct_log_evidence, ct_weights
from ..nuts import run_nuts
from ..results.assemble import assemble_results
from ..steps import GibbsContinuousTempering
from ..transforms import continuous_tempering, set_base
from ._nuts import (
    initvals_from_base,
    potential_from_base,
    refuse_many_modes,
    sample_step,
    with_base_weights_se,
)
from ._spec import CONTINUOUS_TEMPERING, MethodOptions, MethodResult, MethodSpec
from .ct_trace import ct_parts, raw_ct_arrays

__all__ = ["CT_SPEC", "GIBBS_CT_SPEC", "CTOptions", "ct_results", "moment_diagnostics"]

_log = logging.getLogger("pymc_evidence")
#: Default target acceptance: tempered targets mix a broad base with the posterior, and
#: divergences bias the estimate.
TARGET_ACCEPT = 0.95


@dataclass(frozen=True)
class CTOptions(MethodOptions):
    """The options of ``ct`` and ``gibbs_ct``, checked as they are made.

    Attributes
    ----------
    adapt_rounds, adapt_draws, adapt_tune : int
        The bootstrap rounds that refit the base and set ``log zeta`` (they stop early once
        it is stable), and the draws and tuning steps of each.
    covariance : {"auto", "full", "diag"}
        Of the refitted base (:func:`~pymc_evidence.basefit.refit.refit_base`).

    Examples
    --------
    >>> CTOptions(adapt_rounds=1).adapt_rounds
    1
    >>> CTOptions(covariance="dense")
    Traceback (most recent call last):
    ...
    ValueError: covariance must be 'auto', 'full' or 'diag', got 'dense'
    """

    adapt_rounds: int = 3
    adapt_draws: int = 500
    adapt_tune: int = 500
    covariance: str = "auto"

    INTS = ("adapt_rounds", "adapt_draws", "adapt_tune")

    def check(self) -> None:
        """The covariance's kind and the rounds."""
        if self.covariance not in ("auto", "full", "diag"):
            raise ValueError(
                f"covariance must be 'auto', 'full' or 'diag', got {self.covariance!r}"
            )
        if int(self.adapt_rounds) < 0:
            raise ValueError(f"adapt_rounds must be >= 0, got {self.adapt_rounds}")


def _unconstrained(space, raw) -> np.ndarray:
    posterior = get_group(raw, "posterior")
    return space.unconstrain({rv.name: posterior[rv.name].values for rv in space.model.free_RVs})


def moment_diagnostics(space, base, raw) -> dict:
    """Eq. 22: ``w0``-weighted moments of the draws against the base's own moments (only for
    a base whose moments are exact; the prior's are estimated from draws)."""
    if not base.exact_moments:
        return {}
    delta, _, _ = raw_ct_arrays(raw)
    mean, cov = base.moments()
    check = base_moment_check(_unconstrained(space, raw), delta, mean, cov)
    return {
        "base_moment_max_mean_z": float(check["max_mean_z"]),
        "base_moment_max_var_z": float(check["max_var_z"]),
    }


class _JointSampler:
    """Samples the extended model with NUTS (:func:`~pymc_evidence.nuts.run_nuts`: PyMC's
    own with the base's mass matrix and a log density compiled once, or another backend)."""

    def __init__(self, problem, options):
        self.problem, self.base = problem, problem.tempering_base
        # PyMC's NUTS unless the user names another: it reuses one compiled density across
        # the adaptation rounds, where nutpie compiles the extended model for every round
        # (slower; measured in :doc:`/sampling_arguments`, "Which method honours which
        # argument").
        self.sampler = problem.sampling.nuts_sampler or "pymc"
        self.ext = continuous_tempering(
            self.base,
            model=problem.model,
            potentials=problem.potentials,
            portable=self.sampler != "pymc",
            warn_tempered=False,  # the trace is read by ct_parts
        )
        self._logp_dlogp = None

    def set_base(self, base):
        set_base(self.ext, base)
        self.base = base

    def sample(self, draws, tune, seed):
        sampling = self.problem.sampling
        nuts = {}
        if self.sampler == "pymc":
            if self._logp_dlogp is None:  # compiled once, reused by every round
                self._logp_dlogp = self.ext.logp_dlogp_function(
                    ravel_inputs=True, **sampling.compile_kwargs
                )
                self._logp_dlogp.trust_input = True
            nuts = dict(
                logp_dlogp=self._logp_dlogp, potential=potential_from_base(self.base, self.ext)
            )
        return run_nuts(
            self.ext,
            sampling,
            random_seed=seed,
            target_accept=TARGET_ACCEPT,
            draws=draws,
            tune=tune,
            initvals=initvals_from_base(self.problem, sampling.chains, with_u=True),
            sampler=self.sampler,
            **nuts,
        )


class _GibbsSampler:
    """Runs the Gibbs-CT step method on the model itself (PyMC's sampler only)."""

    def __init__(self, problem, options):
        self.problem, self.base = problem, problem.tempering_base
        sampling, self.sampler = problem.sampling, "pymc"
        self.step = GibbsContinuousTempering(
            base=self.base,
            model=problem.model,
            potentials=problem.potentials,
            warn_tempered=False,  # the trace is read by ct_parts
            target_accept=sampling.target_accept or TARGET_ACCEPT,
            **sampling.nuts_sampler_kwargs,
            **sampling.compile_kwargs,
        )

    def set_base(self, base):
        self.step.set_base(base)
        self.base = base

    def sample(self, draws, tune, seed):
        return sample_step(self.problem, self.step, draws=draws, tune=tune, random_seed=seed)


def _round_summary(est, log_zeta, base) -> dict:
    return {
        "log_zeta": log_zeta,
        "log_z": est.log_z,
        "se": est.se,
        "base_kind": base.kind,
        "mean_beta": est.diagnostics.get("mean_beta", np.nan),
        "ess_w1": est.diagnostics.get("ess_w1", np.nan),
    }


def _adapt(sampler, options, seeds):
    """Bootstrap rounds; returns the adapted base and one summary dict per round."""
    history, base, space = [], sampler.base, sampler.problem.space
    for r in range(options.adapt_rounds):
        raw = sampler.sample(options.adapt_draws, options.adapt_tune, seeds[r])
        delta, log_zeta, _ = raw_ct_arrays(raw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = ct_log_evidence(delta, log_zeta)
        history.append(_round_summary(est, log_zeta, base))
        _log.log(
            logging.INFO if sampler.problem.sampling.progressbar else logging.DEBUG,
            "CT adaptation round %d: log zeta %.3f -> estimate %.3f ± %.3f",
            r + 1,
            log_zeta,
            est.log_z,
            est.se,
        )
        x = _unconstrained(space, raw).reshape(-1, space.ndim)
        base = refit_base(base, x, ct_weights(delta), est.log_z, options.covariance)
        sampler.set_base(base)
        if abs(est.log_z - log_zeta) < max(2.0 * est.se, 0.05):
            break
    return base, history


def _run(problem, options: CTOptions, method: str, sampler_class) -> MethodResult:
    initial_kind = problem.tempering_base.kind
    sampler = sampler_class(problem, options)
    seeds = problem.seed_of("method").generate_state(options.adapt_rounds + 1) >> 1
    base, rounds = _adapt(sampler, options, [int(s) for s in seeds[:-1]])
    sampling = problem.sampling
    raw = sampler.sample(sampling.draws, sampling.tune, int(seeds[-1]))
    est, groups, layout, attrs = ct_parts(
        raw,
        method=method,
        rng=problem.rng("resample"),
        rounds=rounds,
        diagnostics=moment_diagnostics(problem.space, base, raw),
        settings={"base_kind": base.kind, "base_initial_kind": initial_kind},
    )
    est = with_base_weights_se(est, base)
    return MethodResult(est, groups, layout, attrs, nuts=(sampler.sampler,))


def _spec(name, description, sampler_class, nuts):
    """The spec of ``name``, whose runs ``sampler_class`` samples."""

    def run(problem, options):
        return _run(problem, options, name, sampler_class)

    return MethodSpec(
        name=name,
        description=description,
        run=run,
        options=CTOptions,
        nuts=nuts,
        ready=refuse_many_modes,
        family=CONTINUOUS_TEMPERING,
        tempering=True,
    )


CT_SPEC = _spec(
    "ct",
    "continuous tempering, joint form: NUTS on the model extended by a temperature",
    _JointSampler,
    nuts="any",
)
GIBBS_CT_SPEC = _spec(
    "gibbs_ct",
    "continuous tempering, Gibbs form: NUTS at fixed temperature + exact β draws",
    _GibbsSampler,
    nuts="step",
)


def ct_results(raw, *, random_seed=None, diagnostics: dict | None = None):
    """Estimate ``log Z`` from a raw CT trace sampled by the user and assemble the results
    container: ``(idata, estimate)``.

    The estimate is named after the spec of the form that sampled the trace:
    :data:`CT_SPEC` for a joint-form trace (``ct_delta`` in its posterior),
    :data:`GIBBS_CT_SPEC` for a Gibbs one (in its sample statistics). ``random_seed``
    seeds the importance resampling; ``diagnostics`` are added to the estimate's.
    """
    _, _, source = raw_ct_arrays(raw)
    spec = CT_SPEC if source == "posterior" else GIBBS_CT_SPEC
    est, groups, layout, attrs = ct_parts(
        raw, method=spec.name, rng=np.random.default_rng(random_seed), diagnostics=diagnostics
    )
    return assemble_results(est, groups, layout=layout, attrs=attrs), est
