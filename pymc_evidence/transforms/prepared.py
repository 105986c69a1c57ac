"""The model transformations of a call that leave ``log Z`` unchanged, each made once.

A call's problem (:class:`~pymc_evidence.problem.EvidenceProblem`) works on a copy of the
user's model: its discrete variables summed out (:mod:`.marginal`), its Gaussian latents
integrated (:mod:`.gaussian_latent`), its centred location-scale variables non-centred
(:mod:`.reparam`). Each copy is kept by the user's model's runtime
(:meth:`~pymc_evidence.runtime.runtime.ModelRuntime.prepared`) while the model's variables,
coords and data are unchanged (:func:`~pymc_evidence.runtime.runtime.fingerprint`), so that
the functions compiled for it are reused by later calls (with a new copy per call, a warm
``smc`` compiles again).
"""

from __future__ import annotations

import pymc as pm

from ..runtime.runtime import fingerprint, runtime_of
from .elimination import Eliminated
from .gaussian_latent import integrate_gaussian_latent
from .group_effects import integrate_group_effects
from .integrated import IntegratedOut
from .marginal import SummedOut, sum_out_discrete
from .reparam import reparametrize

__all__ = ["Summed", "fingerprint", "reparametrized", "summed_out"]

#: What :func:`summed_out` returns: a model with variables summed or integrated out, and
#: how to draw them back.
Summed = SummedOut | Eliminated | IntegratedOut


def reparametrized(source: pm.Model) -> pm.Model:
    """:func:`~pymc_evidence.transforms.reparametrize` of ``source``, made once while the
    model is unchanged (kept by its runtime)."""
    return runtime_of(source).prepared("reparametrized", reparametrize)


#: The integrations of :func:`summed_out`, in the order they are tried.
_INTEGRATIONS = (
    ("discrete", sum_out_discrete),
    ("gaussian", integrate_gaussian_latent),
    ("groups", integrate_group_effects),
)


def summed_out(source: pm.Model, integrate: bool) -> Summed | None:
    """:func:`~pymc_evidence.transforms.marginal.sum_out_discrete` of ``source`` or, without
    discrete variables and with ``integrate``, :func:`~pymc_evidence.transforms.
    gaussian_latent.integrate_gaussian_latent` or else :func:`~pymc_evidence.transforms.
    group_effects.integrate_group_effects`; each made once while the model is unchanged
    (as :func:`reparametrized`); None when none applies."""
    runtime, stamp = runtime_of(source), fingerprint(source)
    for key, make in _INTEGRATIONS:
        if key != "discrete" and not integrate:
            return None
        out = runtime.prepared(key, make, stamp)
        if out is not None:
            return out
    return None
