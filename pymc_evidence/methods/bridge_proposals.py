"""The proposals of bridge sampling: a Gaussian fitted to posterior draws, or warp-3.

Each ``setup(log_f, x_fit, x_iter)`` returns the posterior-side log densities (``log f`` and
``log g`` at the iteration half's draws), the number of non-finite ``log f`` values met there,
and ``draw(n, rng)``, which returns ``log f`` and ``log g`` at ``n`` fresh proposal draws.
"""

from __future__ import annotations

import numpy as np

from ..base.gaussian import GaussianBase
from ..estimators.covariance import shrunk_covariance
from ..estimators.warp import (
    warp3_log_density,
    warp3_moments,
    warp3_points,
    warp3_standardize,
)

__all__ = ["PROPOSALS", "proposal_setup"]

#: proposal name -> description
PROPOSALS = {
    "normal": "Gaussian with the mean and covariance of the fitting half (unconstrained space)",
    "warp3": "warp-3: standard normal against the posterior standardised and symmetrised",
}


def _proposal_logs(log_f, x_prop, log_g_prop) -> tuple[np.ndarray, np.ndarray, int]:
    """``log f`` at proposal points; nan becomes -inf (zero density), counted."""
    lf = log_f(x_prop)
    if np.any(lf == np.inf):
        raise ValueError("the model's log density is +inf at a proposal draw")
    n_nan = int(np.sum(np.isnan(lf)))
    return np.where(np.isnan(lf), -np.inf, lf), log_g_prop, n_nan


def _normal_setup(log_f, x_fit, x_iter):
    """Posterior-side logs and a proposal sampler for the Gaussian proposal."""
    d = x_fit.shape[-1]
    flat = x_fit.reshape(-1, d)
    cov = shrunk_covariance(flat)
    base = GaussianBase.from_moments(flat.mean(0), cov, log_zeta=0.0)
    lf_post = log_f(x_iter)
    lg_post = base.logp(x_iter.reshape(-1, d)).reshape(x_iter.shape[:2])

    def draw(n, rng):
        x = base.sample(n, rng)
        return _proposal_logs(log_f, x, base.logp(x))

    return lf_post, lg_post, 0, draw


def _warp3_setup(log_f, x_fit, x_iter):
    """Posterior-side logs and a proposal sampler for the warp-3 proposal."""
    d = x_fit.shape[-1]
    mean, chol = warp3_moments(x_fit.reshape(-1, d))
    unit = GaussianBase(np.zeros(d), np.eye(d), 0.0, "moments")
    eta = warp3_standardize(x_iter, mean, chol)
    lf_mirror, _, n_nan = _proposal_logs(log_f, 2.0 * mean - x_iter, None)
    lf_post = warp3_log_density(log_f(x_iter), lf_mirror, chol)
    lg_post = unit.logp(eta.reshape(-1, d)).reshape(x_iter.shape[:2])

    def draw(n, rng):
        eta_prop = unit.sample(n, rng)
        plus, minus = warp3_points(eta_prop, mean, chol)
        lf_plus, _, nan_p = _proposal_logs(log_f, plus, None)
        lf_minus, _, nan_m = _proposal_logs(log_f, minus, None)
        return warp3_log_density(lf_plus, lf_minus, chol), unit.logp(eta_prop), nan_p + nan_m

    return lf_post, lg_post, n_nan, draw


def proposal_setup(name: str):
    """The setup function of proposal ``name`` (one of :data:`PROPOSALS`)."""
    return {"normal": _normal_setup, "warp3": _warp3_setup}[name]
