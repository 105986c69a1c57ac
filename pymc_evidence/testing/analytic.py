"""The :class:`AnalyticModel` record and the helpers shared by the analytic test systems.

Part of :mod:`pymc_evidence.testing.models`. Every factory of the analytic (and hard) test
systems returns an :class:`AnalyticModel` that bundles a PyMC model with its exact log marginal
likelihood ``log Z = log p(y | M)``, computed independently of PyMC.

Conventions shared by all systems:

* every prior is proper (no ``Flat`` / ``HalfFlat``), so ``Z`` is finite and well defined;
* synthetic data are drawn inside the factory from ``numpy.random.default_rng(seed)``, so a
  given set of arguments always builds the same data and the same ``log_z``;
* ``log_z`` is the log density of the observed data *as PyMC scores it*: for the Bernoulli
  model that is the probability of the particular 0/1 sequence (no binomial coefficient);
* all numeric constants handed to PyMC are float64 arrays (see :func:`f64`). A bare Python
  number such as ``5.0`` may be turned into a float32 constant by PyTensor, which shifts
  ``logp`` by ~1e-8 and would spoil comparisons with the exact value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
import pymc as pm

__all__ = ["AnalyticModel"]

LOG_2PI = math.log(2.0 * math.pi)


@dataclass(frozen=True)
class AnalyticModel:
    """A PyMC model paired with its exact log marginal likelihood.

    Parameters
    ----------
    name : str
        Short identifier, e.g. ``"beta_bernoulli"``.
    model : pymc.Model
        The model. Its free random variables are the parameters integrated over in ``Z``.
    log_z : float
        Exact ``log p(y | model)``, computed without PyMC.
    description : str
        One-paragraph human-readable summary of the model, its data and how ``log_z`` was
        obtained.
    data : Mapping[str, Any], optional
        Read-only mapping of the data and constants the model was built from (observed
        arrays, design matrices, known scales), for building independent reference
        computations. Not part of equality or ``repr``.

    Examples
    --------
    >>> from pymc_evidence.testing import beta_bernoulli
    >>> system = beta_bernoulli(n=10, heads=3)
    >>> system.name
    'beta_bernoulli'
    >>> round(system.log_z, 6)
    -7.185387
    """

    name: str
    model: pm.Model = field(repr=False, compare=False)
    log_z: float
    description: str
    data: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)


def as_data(**arrays: Any) -> Mapping[str, Any]:
    """Freeze the constants a system was built from into a read-only mapping."""
    frozen = {}
    for key, value in arrays.items():
        if isinstance(value, np.ndarray):
            value = value.copy()
            value.flags.writeable = False
        frozen[key] = value
    return MappingProxyType(frozen)


def f64(x) -> np.ndarray:
    """Return ``x`` as a float64 numpy array (keeps PyTensor constants in double precision)."""
    return np.asarray(x, dtype=np.float64)
