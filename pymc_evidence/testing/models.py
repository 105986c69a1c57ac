"""Analytic test systems: small PyMC models whose evidence is known exactly.

Every factory in this module returns an :class:`AnalyticModel` that bundles a PyMC model with
its exact log marginal likelihood ``log Z = log p(y | M)``. The exact value is computed
independently of PyMC, from a closed form (Gaussian conjugacy, Beta functions) or from
one-dimensional adaptive quadrature with :func:`scipy.integrate.quad`, so it can serve as
ground truth when testing evidence estimators.

The systems live in sibling modules, re-exported here with the registry:

* :mod:`~pymc_evidence.testing.analytic`: the :class:`AnalyticModel` record, the conventions
  shared by all systems and the private helpers ``as_data`` / ``f64``;
* :mod:`~pymc_evidence.testing.conjugate`: :func:`conjugate_regression`,
  :func:`beta_bernoulli` (closed form);
* :mod:`~pymc_evidence.testing.hierarchical`: :func:`hierarchical_normal` (quadrature);
* :mod:`~pymc_evidence.testing.mixture`: :func:`mixture_likelihood`,
  :func:`normalized_density`.
"""

from __future__ import annotations

from collections.abc import Callable

# Private helpers are re-exported (``x as x``) for modules that import them from here.
from pymc_evidence.testing.analytic import LOG_2PI as LOG_2PI
from pymc_evidence.testing.analytic import AnalyticModel
from pymc_evidence.testing.analytic import as_data as as_data
from pymc_evidence.testing.analytic import f64 as f64
from pymc_evidence.testing.conjugate import beta_bernoulli, conjugate_regression
from pymc_evidence.testing.hierarchical import HIER_MU_SIGMA as HIER_MU_SIGMA
from pymc_evidence.testing.hierarchical import HIER_TAU_SIGMA as HIER_TAU_SIGMA
from pymc_evidence.testing.hierarchical import (
    hierarchical_exact_log_z as hierarchical_exact_log_z,
)
from pymc_evidence.testing.hierarchical import (
    hierarchical_log_lik_tau as hierarchical_log_lik_tau,
)
from pymc_evidence.testing.hierarchical import hierarchical_normal
from pymc_evidence.testing.mixture import mixture_likelihood, normalized_density

__all__ = [
    "ALL_MODELS",
    "AnalyticModel",
    "beta_bernoulli",
    "conjugate_regression",
    "hierarchical_normal",
    "mixture_likelihood",
    "normalized_density",
    "registry",
]


# --------------------------------------------------------------------------------------------
# Registry
# --------------------------------------------------------------------------------------------

ALL_MODELS: dict[str, Callable[[], AnalyticModel]] = {
    "conjugate_regression": conjugate_regression,
    "beta_bernoulli": beta_bernoulli,
    "hierarchical_normal": hierarchical_normal,
    "hierarchical_normal_noncentered": lambda: hierarchical_normal(centered=False),
    "mixture_likelihood": mixture_likelihood,
    "normalized_density": normalized_density,
}
"""Factories of the default analytic systems, keyed by :attr:`AnalyticModel.name`."""


def registry() -> list[AnalyticModel]:
    """Build the default instance of every analytic test system.

    Each call builds fresh PyMC models, so callers may modify them freely.

    Returns
    -------
    list of AnalyticModel
        One entry per key of :data:`ALL_MODELS`, in that order.

    Examples
    --------
    >>> from pymc_evidence.testing import registry
    >>> [m.name for m in registry()]  # doctest: +NORMALIZE_WHITESPACE
    ['conjugate_regression', 'beta_bernoulli', 'hierarchical_normal',
     'hierarchical_normal_noncentered', 'mixture_likelihood', 'normalized_density']
    """
    return [factory() for factory in ALL_MODELS.values()]
