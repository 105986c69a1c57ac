"""The model transformations of a call that leave ``log Z`` unchanged, each made once.

A call's problem (:class:`~pymc_evidence.problem.EvidenceProblem`) works on a copy of the
user's model: its discrete variables summed out (:mod:`.marginal`), its Gaussian latents
integrated (:mod:`.gaussian_latent`), its centred location-scale variables non-centred
(:mod:`.reparam`). Each copy is kept, keyed weakly by the user's model, while the model's
variables, coords and data are unchanged (:func:`fingerprint`), so that the functions
compiled for it are reused by later calls (with a new copy per call, a warm ``smc`` on the
centred eight schools compiled again and was much slower).
"""

from __future__ import annotations

import hashlib
import weakref

import numpy as np
import pymc as pm

from .gaussian_latent import GaussianOut, integrate_gaussian_latent
from .group_effects import GroupEffectsOut, integrate_group_effects
from .group_pair_effects import GroupPairOut
from .marginal import SummedOut, sum_out_discrete
from .reparam import reparametrize

__all__ = ["fingerprint", "reparametrized", "summed_out"]

_REPARAMETRIZED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_SUMMED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def fingerprint(model: pm.Model) -> tuple:
    """What a reparametrised copy depends on: the variables, the coords and the values of
    the data containers (the copy holds copies of them, so ``pm.set_data`` must show)."""
    data = tuple((v.name, _digest(v)) for v in model.data_vars)
    coords = tuple((k, None if v is None else tuple(v)) for k, v in model.coords.items())
    return tuple(model.named_vars), data, coords


def _digest(var) -> str:
    """A hash of a data container's value (a shared variable's, or a constant's: a copy
    made by ``pm.do(..., make_interventions_shared=False)`` holds constants)."""
    value = var.get_value() if hasattr(var, "get_value") else var.data
    return hashlib.blake2b(np.ascontiguousarray(value).tobytes()).hexdigest()


def reparametrized(source: pm.Model) -> pm.Model:
    """:func:`~pymc_evidence.transforms.reparametrize` of ``source``, made once while the
    model is unchanged."""
    stamp = fingerprint(source)
    cached = _REPARAMETRIZED.get(source)
    if cached is None or cached[0] != stamp:
        cached = _REPARAMETRIZED[source] = (stamp, reparametrize(source))
    return cached[1]


#: The integrations of :func:`summed_out`, in the order they are tried.
_INTEGRATIONS = (
    ("discrete", sum_out_discrete),
    ("gaussian", integrate_gaussian_latent),
    ("groups", integrate_group_effects),
)


def summed_out(
    source: pm.Model, integrate: bool
) -> SummedOut | GaussianOut | GroupEffectsOut | GroupPairOut | None:
    """:func:`~pymc_evidence.transforms.marginal.sum_out_discrete` of ``source`` or, without
    discrete variables and with ``integrate``, :func:`~pymc_evidence.transforms.
    gaussian_latent.integrate_gaussian_latent` or else :func:`~pymc_evidence.transforms.
    group_effects.integrate_group_effects`; each made once while the model is unchanged
    (as :func:`reparametrized`); None when none applies."""
    stamp = fingerprint(source)
    cached = _SUMMED.setdefault(source, {})
    for key, make in _INTEGRATIONS:
        if key != "discrete" and not integrate:
            return None
        if key not in cached or cached[key][0] != stamp:
            cached[key] = (stamp, make(source))
        if cached[key][1] is not None:
            return cached[key][1]
    return None
