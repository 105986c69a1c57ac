"""What every tempering step method shares: NUTS on ``beta log f + (1 - beta) log q``.

One compiled log density (and gradient) serves every temperature: ``beta`` is a shared
variable the step sets before each NUTS transition. ``log f - log q`` is compiled once too,
for the temperature draw that follows.

A model with discrete variables of finite support is tempered with them summed out
(:func:`~pymc_evidence.transforms.marginal.sum_out_discrete`: the evidence is unchanged): the
step updates the continuous variables, and ``pm.sample`` gives the discrete ones PyMC's own
steps, which draw them from their conditional given the continuous values.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytensor
from pymc.model.core import ValueGradFunction
from pymc.step_methods.hmc.quadpotential import QuadPotentialDiagAdapt

from ..base.gaussian import BaseDensity
from ..hygiene import check_model
from ..runtime.runtime import model_space
from ..runtime.space import ModelSpace
from ..transforms.marginal import sum_out_discrete
from ..transforms.tempering import check_layout, check_structure, tempered_terms

__all__ = ["OwnVariablesStep", "TemperedDensity", "continuous_model", "tempered_density"]


class OwnVariablesStep:
    """Mixin for the tempering steps: hand PyMC's array step only the step's own variables.

    PyMC's shared-variable steps cut the point down to their variables only when their
    density has "extra" (shared) inputs; a tempered density has none, so on a model whose
    discrete variables another step updates, the point would be raveled whole.
    """

    def step(self, point):
        """One transition of the step's own variables; the other values pass through."""
        if set(point) == set(self.var_names):
            return super().step(point)
        new, stats = super().step({name: point[name] for name in self.var_names})
        return {**point, **new}, stats


@dataclass(eq=False)
class TemperedDensity:
    """Compiled pieces of a tempered model.

    Attributes
    ----------
    space : ModelSpace
    beta : shared variable
        The inverse temperature the NUTS density is evaluated at.
    shared : dict
        Shared base parameters and ``log zeta`` (updated by :meth:`set_base`).
    base : BaseDensity
        The base whose values ``shared`` holds.
    logp_dlogp : ValueGradFunction
        ``beta log f + (1 - beta) log q`` and its gradient, for :class:`pymc.NUTS`.
    log_ratio : callable
        ``log f(x) - log q(x)`` at one raveled vector.
    step_vars : list
        The value variables the step updates: those of the model sampled by ``pm.sample``,
        in the order of ``space`` (its continuous ones when discrete ones were summed out).
    """

    space: ModelSpace
    beta: object
    shared: dict
    logp_dlogp: object
    log_ratio: object
    base: BaseDensity = None
    step_vars: list = None

    def set_base(self, base: BaseDensity) -> None:
        """Assign new base parameters (and ``log zeta``) without recompiling; the base must
        have the structure of the current one (``TypeError``/``ValueError`` otherwise)."""
        check_structure(self.base, base)
        check_layout(base, self.space)
        base.assign(self.shared)
        self.base = base


def continuous_model(model, potentials=None) -> tuple[pm.Model, str | None]:
    """``(model, potentials)`` checked, with its discrete variables summed out when it has
    any (the sum is a potential of the likelihood)."""
    model = pm.modelcontext(model)
    summed = sum_out_discrete(model)
    check_model(model, potentials=potentials, discrete=summed is not None)
    return (model, potentials) if summed is None else (summed.model, "likelihood")


def tempered_density(target, base, source=None, *, vars=None, beta=0.0, owner="step"):
    """Check the base and compile the tempered density of ``target``, a model checked by
    :func:`continuous_model` (with its ``potentials``); ``source`` (default ``target``) is
    the model ``pm.sample`` samples, whose value variables of the same names the step
    updates."""
    model = pm.modelcontext(target)
    source = model if source is None else source
    space = model_space(model)
    if vars is not None and {v.name for v in vars} != set(space.names):
        raise ValueError(f"{owner} must update all free variables at once")
    check_layout(base, space)
    shared = base.make_shared()
    beta_var = pytensor.shared(np.float64(beta), name=f"{owner}_beta")
    log_f, log_q = tempered_terms(model, base, shared, names=space.names)
    cost = beta_var * log_f + (1.0 - beta_var) * log_q
    vg = ValueGradFunction([cost], model.value_vars, {}, model=model, ravel_inputs=True)
    vg.trust_input = True
    log_ratio = space.compile_raveled(log_f - log_q)
    by_name = {v.name: v for v in source.value_vars}
    step_vars = [by_name[v.name] for v in model.value_vars]
    return TemperedDensity(space, beta_var, shared, vg, log_ratio, base, step_vars)


def initial_potential(base: BaseDensity, kwargs: dict):
    """Add a diagonal mass-matrix start from the base's mean and ``scale`` to NUTS ``kwargs``."""
    if "potential" in kwargs or "scaling" in kwargs:
        return kwargs
    mean, scale = base.moments()[0], base.scale
    return {**kwargs, "potential": QuadPotentialDiagAdapt(mean.size, mean, scale**2, 10)}
