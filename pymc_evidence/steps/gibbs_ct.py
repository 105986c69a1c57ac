"""Gibbs continuous tempering as a PyMC step method (Graham & Storkey 2017, section 5).

Each step is a NUTS transition of ``x`` at the current inverse temperature ``beta`` on the
bridge ``beta * log f(x) + (1 - beta) * log q(x)``, followed by an exact draw of
``beta | x`` from its truncated exponential conditional. ``beta`` lives in a shared
variable of the compiled NUTS function, so one compilation serves every temperature.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
from pymc.model.core import ValueGradFunction
from pymc.step_methods.compound import Competence
from pymc.step_methods.hmc.quadpotential import QuadPotentialDiagAdapt

from ..base.gaussian import GaussianBase, PriorBase
from ..base.space import model_space
from ..estimators.ct import sample_beta
from ..hygiene import check_model
from ..transforms.tempering import _assign, _check_layout, _shared_for, tempered_terms

__all__ = ["GibbsContinuousTempering"]


class GibbsContinuousTempering(pm.NUTS):
    """NUTS on ``x`` at a temperature ``beta`` that is redrawn exactly after every step.

    The chain targets ``p(x, beta) ∝ f(x)^beta q(x)^(1-beta) / zeta^beta`` on
    ``beta in [0, 1]``. Its draws are *not* posterior draws: pass the result to
    :func:`pymc_evidence.ct_evidence` (or :func:`pymc_evidence.log_evidence`) to get the
    evidence and importance-resampled posterior draws. Every step records ``ct_beta``,
    ``ct_delta = log zeta + log q(x) - log f(x)`` and ``ct_log_zeta`` as sampler statistics.

    NUTS adapts one step size and one diagonal mass matrix across all temperatures during
    tuning; the mass matrix starts from the base's variances, which suit both ends when the
    base is a good fit.

    Parameters
    ----------
    base : GaussianBase or PriorBase
        Normalized base density from :func:`pymc_evidence.fit_base`.
    log_zeta : float, optional
        Overrides ``base.log_zeta``.
    potentials : {None, "likelihood"}
        How to read ``pm.Potential`` terms.
    beta_init : float
        Starting inverse temperature of every chain.
    model : pm.Model, optional
    **kwargs
        Passed to :class:`pymc.NUTS` (``target_accept``, ``max_treedepth``, ...).

    Examples
    --------
    >>> import pymc as pm, pymc_evidence as pme
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu", 0, 1)
    ...     pm.Normal("y", mu, 1, observed=[0.2, 0.4])
    ...     base = pme.fit_base(random_seed=0)
    ...     step = pme.GibbsContinuousTempering(base=base)
    ...     raw = pm.sample(200, tune=200, step=step, chains=2, random_seed=0,
    ...                     progressbar=False, compute_convergence_checks=False)
    >>> est = pme.log_evidence(raw)
    """

    name = "gibbs_ct"
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
        base: GaussianBase | PriorBase,
        log_zeta: float | None = None,
        potentials: str | None = None,
        beta_init: float = 0.5,
        model=None,
        **kwargs,
    ):
        model = pm.modelcontext(model)
        check_model(model, potentials=potentials)
        space = model_space(model)
        if vars is not None and {v.name for v in vars} != set(space.names):
            raise ValueError("GibbsContinuousTempering must update all free variables at once")
        _check_layout(base, space)
        if log_zeta is not None:
            base = base.with_values(log_zeta=float(log_zeta))
        self._shared = _shared_for(base, space.ndim)
        _assign(self._shared, base)
        self._beta = pytensor.shared(np.float64(beta_init), name="ct_beta")
        log_f, log_q = tempered_terms(model, base, self._shared)
        cost = self._beta * log_f + (1.0 - self._beta) * log_q
        vg = ValueGradFunction([cost], model.value_vars, {}, model=model, ravel_inputs=True)
        vg.trust_input = True
        self._delta_fn = space.compile_raveled(self._shared["log_zeta"] + log_q - log_f)
        self.base = base
        self.space_layout = (space.names, space.sizes)
        if "potential" not in kwargs and "scaling" not in kwargs and isinstance(base, GaussianBase):
            n = space.ndim
            kwargs["potential"] = QuadPotentialDiagAdapt(n, base.mean.copy(), base.std**2, 10)
        super().__init__(vars=model.value_vars, model=model, logp_dlogp_func=vg, **kwargs)

    def set_base(self, base: GaussianBase | PriorBase) -> None:
        """Swap in a new base and ``log zeta`` (e.g. between adaptation rounds)."""
        if type(base) is not type(self.base):
            raise TypeError(f"cannot swap a {type(self.base).__name__} for {type(base).__name__}")
        _assign(self._shared, base)
        self.base = base

    def astep(self, q0):
        """One NUTS transition at the current ``beta``, then an exact draw of ``beta | x``."""
        q, stats = super().astep(q0)
        x = np.asarray(q.data, dtype=float)
        delta = float(self._delta_fn(x))
        beta = float(sample_beta(np.array([delta]), self.rng)[0])
        self._beta.set_value(np.float64(beta))
        stats[0].update(
            ct_beta=beta,
            ct_delta=delta,
            ct_log_zeta=float(self._shared["log_zeta"].get_value()),
        )
        return q, stats

    @staticmethod
    def competence(var, has_grad):
        """Never assigned automatically: it changes the target distribution."""
        return Competence.INCOMPATIBLE
