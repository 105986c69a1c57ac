"""The bootstrap step of the tempering methods: refit the base to weighted posterior draws.

Graham & Storkey (section 6) refit the Gaussian base to the importance-weighted posterior
moments after a pilot run and set ``log zeta`` to the running estimate; repeated for a few
rounds, the base approaches the posterior and the path between them becomes short.
"""

from __future__ import annotations

import numpy as np

from ..base.gaussian import GaussianBase
from ..base.stats import FitStats
from ..estimators.covariance import shrunk_covariance
from ..estimators.logspace import kish_ess

__all__ = ["FULL_COV_MAX_DIM", "refit_base"]

#: Above this dimension ``covariance="auto"`` refits a diagonal covariance.
FULL_COV_MAX_DIM = 200
#: Fewest effective draws for which the moments are refitted (else only ``log zeta`` moves).
MIN_REFIT_ESS = 5.0


def refit_base(base, x: np.ndarray, weights: np.ndarray, log_z: float, covariance: str = "auto"):
    """The base refitted to the weighted draws, with ``log zeta`` set to ``log_z``.

    Parameters
    ----------
    base : base density
        A Gaussian base is refitted: ``N(weighted mean, weighted covariance)``, the
        correlations shrunk towards zero
        (:func:`~pymc_evidence.estimators.shrunk_covariance`), the covariance
        then shrunk towards the old one with ``d + 2`` pseudo-draws of weight (so a
        few effective draws cannot collapse it). Other bases (prior, mixture) keep their
        shape, since one Gaussian would lose what they cover; only ``log zeta`` moves.
    x : ndarray, shape (n, d)
        Raveled unconstrained draws.
    weights : ndarray, shape (n,)
        Normalized importance weights of the draws towards the posterior.
    log_z : float
        The new ``log zeta``.
    covariance : {"auto", "full", "diag"}
        ``"auto"``: full up to :data:`FULL_COV_MAX_DIM` dimensions, diagonal above.

    Returns
    -------
    base density
        With ``stats.refit_ess`` set when refitted.

    Examples
    --------
    >>> import numpy as np
    >>> base = GaussianBase(np.zeros(1), np.eye(1), log_zeta=0.0, kind="advi")
    >>> x = np.random.default_rng(0).normal(2.0, 0.5, size=(4000, 1))
    >>> new = refit_base(base, x, np.full(4000, 1 / 4000), log_z=-1.0)
    >>> round(float(new.mean[0]), 1), new.log_zeta
    (2.0, -1.0)
    """
    if covariance not in ("auto", "full", "diag"):
        raise ValueError(f"covariance must be 'auto', 'full' or 'diag', got {covariance!r}")
    weights = np.asarray(weights, dtype=float)
    ess = kish_ess(np.log(np.maximum(weights, 1e-300)))
    if not isinstance(base, GaussianBase) or ess < MIN_REFIT_ESS:
        return base.with_values(log_zeta=float(log_z))
    x = np.asarray(x, dtype=float).reshape(-1, base.ndim)
    mean = weights @ x
    centered = x - mean
    if covariance == "diag" or (covariance == "auto" and base.ndim > FULL_COV_MAX_DIM):
        cov, old = np.diag(weights @ centered**2), np.diag(base.std**2)
    else:
        cov, old = shrunk_covariance(x, weights), base.cov
    prior_n = base.ndim + 2.0
    cov = (ess * cov + prior_n * old) / (ess + prior_n)
    return GaussianBase.from_moments(
        mean,
        cov,
        log_zeta=float(log_z),
        kind="moments",
        names=base.names,
        sizes=base.sizes,
        elbo=base.elbo,
        elbo_se=base.elbo_se,
        stats=FitStats(refit_ess=float(ess)),
    )
