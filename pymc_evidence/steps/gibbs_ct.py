"""Gibbs continuous tempering as a PyMC step method (Graham & Storkey 2017, section 5).

Each step is a NUTS transition of ``x`` at the current inverse temperature ``beta`` on the
bridge ``beta * log f(x) + (1 - beta) * log q(x)``, followed by an exact draw of
``beta | x`` from its truncated exponential conditional. ``beta`` lives in a shared
variable of the compiled NUTS function, so one compilation serves every temperature.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
from pymc.step_methods.compound import Competence
from pymc.step_methods.hmc.nuts import NUTSState
from pymc.step_methods.state import dataclass_state

from ..base.gaussian import BaseDensity, GaussianBase
from ..basefit.fit import fit_base
from ..estimators.ct import sample_beta
from ..transforms.tempered_draws import warn_tempered_draws
from .tempered import OwnVariablesStep, continuous_model, initial_potential, tempered_density

__all__ = ["GibbsContinuousTempering"]


def _family(base) -> type:
    """The kind of density graph a base needs: every Gaussian (a fit, a Laplace ``Mode``)
    shares one, mixtures and the prior have their own."""
    return GaussianBase if isinstance(base, GaussianBase) else type(base)


@dataclass_state
class GibbsContinuousTemperingState(NUTSState):
    """Per-chain state of :class:`GibbsContinuousTempering`: NUTS's own and the chain's
    ``beta``. PyMC restores a step's ``sampling_state`` before every chain it runs in the
    same process (``cores=1``); without ``beta`` here the temperature one chain ended at
    started the next, and ``cores=1`` and ``cores=2`` gave different numbers."""

    beta: float


class GibbsContinuousTempering(OwnVariablesStep, pm.NUTS):
    """NUTS on ``x`` at a temperature ``beta`` that is redrawn exactly after every step.

    The chain targets ``p(x, beta) ∝ f(x)^beta q(x)^(1-beta) / zeta^beta`` on
    ``beta in [0, 1]``. Its draws are *not* posterior draws: the ``posterior`` group of the
    trace ``pm.sample`` returns holds the tempered draws, and ``az.summary(trace)`` would
    describe a target much wider than the posterior. Pass the trace to
    :func:`pymc_evidence.ct_evidence` for the evidence and importance-resampled posterior
    draws (``pme.log_evidence(trace)`` gives the estimate alone). Every step records
    ``ct_beta``, ``ct_delta = log zeta + log q(x) - log f(x)`` and ``ct_log_zeta`` as
    sampler statistics.

    NUTS adapts one step size and one diagonal mass matrix across all temperatures during
    tuning; the mass matrix starts from the base's variances, which suit both ends when the
    base is a good fit.

    Parameters
    ----------
    base : GaussianBase, MixtureBase or PriorBase, or str
        Normalized base density from :func:`pymc_evidence.fit_base`, or its ``method``
        (``"advi"``, ``"fullrank_advi"``, ``"prior"``) to fit one here. On a model with
        discrete variables (summed out for the step, which updates the continuous ones;
        PyMC's own steps draw the discrete ones), pass the method: the base lives on the
        continuous model.
    log_zeta : float, optional
        Overrides ``base.log_zeta``.
    potentials : {None, "likelihood"}
        How to read ``pm.Potential`` terms.
    beta_init : float
        Starting inverse temperature of every chain.
    warn_tempered : bool, default True
        Emit the warning below; pass False once you read the trace with
        :func:`pymc_evidence.ct_evidence` (:func:`pymc_evidence.sample_evidence` does).
    random_seed : int or Generator, optional
        Seeds the base's fit when ``base`` is a method name.
    model : pm.Model, optional
    **kwargs
        Passed to :class:`pymc.NUTS` (``target_accept``, ``max_treedepth``, ...).

    Warns
    -----
    EvidenceWarning
        When the step is built: the trace will hold tempered draws, not posterior draws, and
        :func:`pymc_evidence.ct_evidence` reads it. PyMC gives a step method no hook at the
        end of sampling and no mark to set on the trace, so this is the one moment a
        warning reaches the user before ``az.summary`` of the tempered draws would.

    Examples
    --------
    >>> import pymc as pm, pymc_evidence as pme
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu", 0, 1)
    ...     _ = pm.Normal("y", mu, 1, observed=[0.2, 0.4])
    ...     base = pme.fit_base(random_seed=0, progressbar=False)
    ...     step = pme.GibbsContinuousTempering(base=base, warn_tempered=False)
    ...     raw = pm.sample(200, tune=200, step=step, chains=2, random_seed=0,
    ...                     progressbar=False, compute_convergence_checks=False)
    >>> idata = pme.ct_evidence(raw)     # raw.posterior holds tempered draws
    >>> est = pme.log_evidence(idata)    # log Z and its se
    >>> posterior = idata.posterior      # importance-resampled: az.summary(idata) works
    """

    name = "gibbs_ct"
    _state_class = GibbsContinuousTemperingState
    stats_dtypes_shapes = {
        **pm.NUTS.stats_dtypes_shapes,
        "ct_beta": (np.float64, []),
        "ct_delta": (np.float64, []),
        "ct_log_zeta": (np.float64, []),
    }

    def __init__(
        self,
        vars=None,
        *,
        base: BaseDensity | str,
        log_zeta: float | None = None,
        potentials: str | None = None,
        beta_init: float = 0.5,
        warn_tempered: bool = True,
        random_seed=None,
        model=None,
        **kwargs,
    ):
        if warn_tempered:
            warn_tempered_draws("GibbsContinuousTempering", "pme.ct_evidence(trace)")
        model = pm.modelcontext(model)
        target, pots = continuous_model(model, potentials)
        if isinstance(base, str):
            base = fit_base(base, model=target, random_seed=random_seed, potentials=pots)
        if log_zeta is not None:
            base = base.with_values(log_zeta=float(log_zeta))
        self._density = tempered_density(
            target, base, model, vars=vars, beta=beta_init, owner="GibbsContinuousTempering"
        )
        self.base = base
        self.beta = float(beta_init)
        kwargs = initial_potential(base, kwargs)
        super().__init__(
            vars=self._density.step_vars,
            model=model,
            logp_dlogp_func=self._density.logp_dlogp,
            **kwargs,
        )

    def set_base(self, base: BaseDensity) -> None:
        """Swap in a new base and ``log zeta`` (e.g. between adaptation rounds)."""
        if _family(base) is not _family(self.base):
            raise TypeError(f"cannot swap a {type(self.base).__name__} for {type(base).__name__}")
        self._density.set_base(base)
        self.base = base

    def astep(self, q0):
        """One NUTS transition at the current ``beta``, then an exact draw of ``beta | x``."""
        self._density.beta.set_value(np.float64(self.beta))
        q, stats = super().astep(q0)
        log_zeta = float(self.base.log_zeta)
        delta = log_zeta - float(self._density.log_ratio(np.asarray(q.data, dtype=float)))
        beta = float(sample_beta(np.array([delta]), self.rng)[0])
        self.beta = beta
        self._density.beta.set_value(np.float64(beta))
        stats[0].update(
            ct_beta=beta,
            ct_delta=delta,
            ct_log_zeta=log_zeta,
        )
        return q, stats

    @staticmethod
    def competence(var, has_grad):
        """Never assigned automatically: it changes the target distribution."""
        return Competence.INCOMPATIBLE
