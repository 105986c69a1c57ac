"""The proposals of bridge sampling: a Gaussian (or a mixture of Gaussians on pieces of the
draws) fitted to posterior draws, or warp-3.

Each ``setup(log_f, x_fit, x_iter)`` returns the posterior-side log densities (``log f`` and
``log g`` at the iteration half's draws), the number of non-finite ``log f`` values met there,
and ``draw(n, rng)``, which returns ``log f`` and ``log g`` at ``n`` fresh proposal draws.
"""

from __future__ import annotations

import numpy as np
from scipy.cluster.vq import kmeans2

from ..base.gaussian import GaussianBase
from ..base.mixture import MixtureBase
from ..estimators.covariance import shrunk_covariance
from ..estimators.warp import (
    warp3_log_density,
    warp3_moments,
    warp3_points,
    warp3_standardize,
)

__all__ = ["MIXTURE_GAIN", "PIECES", "PROPOSALS", "gaussian_fit", "proposal_setup"]

#: proposal name -> description
PROPOSALS = {
    "normal": "Gaussian with the mean and covariance of the fitting half (unconstrained "
    "space), or a mixture of one per k-means piece where held-out draws favour it",
    "warp3": "warp-3: standard normal against the posterior standardised and symmetrised",
}


def _proposal_logs(log_f, x_prop, log_g_prop) -> tuple[np.ndarray, np.ndarray, int]:
    """``log f`` at proposal points; nan becomes -inf (zero density), counted."""
    lf = log_f(x_prop)
    if np.any(lf == np.inf):
        raise ValueError("the model's log density is +inf at a proposal draw")
    n_nan = int(np.sum(np.isnan(lf)))
    return np.where(np.isnan(lf), -np.inf, lf), log_g_prop, n_nan


#: Numbers of k-means pieces tried for the proposal mixture (1: one Gaussian).
PIECES = (1, 2, 3, 4, 6, 8, 12, 16)
#: Held-out nats per draw by which a mixture of pieces must beat the single Gaussian to be
#: used. On a label-switching 3-component ``NormalMixture`` the pieces won by far more than
#: this; near-Gaussian posteriors (a regression, eight schools) keep the single Gaussian
#: (measured in :doc:`/methods`, "Linked importance sampling, SMC and bridge sampling").
MIXTURE_GAIN = 0.25


def _smallest_piece(d: int) -> float:
    """Fewest draws of a piece with a covariance of its own: ``2 (d + 1)``, and ``d^2 / 4``
    for at most a nat of covariance noise."""
    return max(2.0 * (d + 1), d * d / 4.0)


def _moments_fit(draws) -> GaussianBase:
    return GaussianBase.from_moments(draws.mean(0), shrunk_covariance(draws), log_zeta=0.0)


def _pieces_fit(flat, k: int):
    """One Gaussian (``k == 1``), or a mixture of one Gaussian per k-means piece of the
    draws (k-means++ on coordinates scaled by their sd, fixed seed), weighted by the
    pieces' shares; pieces under :func:`_smallest_piece` are left out. None where no piece
    is left."""
    if k == 1:
        return _moments_fit(flat)
    sd = flat.std(0)
    scaled = (flat - flat.mean(0)) / np.where(sd > 0, sd, 1.0)
    _, labels = kmeans2(scaled, k, minit="++", seed=np.random.default_rng(0))
    counts = np.bincount(labels, minlength=k)
    keep = np.flatnonzero(counts >= _smallest_piece(flat.shape[1]))
    if keep.size == 0:
        return None
    parts = [_moments_fit(flat[labels == j]) for j in keep]
    return MixtureBase.from_components(parts, np.log(counts[keep]), log_zeta=0.0, kind="pieces")


def gaussian_fit(flat):
    """The Gaussian, or mixture of Gaussians on k-means pieces, that the draws choose.

    Chains that hop between the label-switched modes of a mixture pool draws from several
    modes; one Gaussian fitted to them spreads over the modes and the space between, a poor
    proposal (biased on a 3-component ``NormalMixture``; measured in :doc:`/methods`,
    "Linked importance sampling, SMC and bridge sampling"). Each candidate in
    :data:`PIECES` is fitted to the even draws and scored by the mean log density of the
    odd ones; a mixture is used when it beats the single Gaussian by :data:`MIXTURE_GAIN`
    nats per draw, and is then refitted to all draws. Any normalised density that can be
    sampled is a valid bridge proposal; a closer one has a smaller se.
    """
    if flat.shape[0] < 8 * _smallest_piece(flat.shape[1]):  # two pieces in each half
        return _pieces_fit(flat, 1)
    fits = {k: _pieces_fit(flat[0::2], k) for k in PIECES}
    scores = {k: float(np.mean(f.logp(flat[1::2]))) for k, f in fits.items() if f is not None}
    best = max(scores, key=scores.get)
    if best == 1 or scores[best] < scores[1] + MIXTURE_GAIN:
        return _pieces_fit(flat, 1)
    return _pieces_fit(flat, best) or _pieces_fit(flat, 1)


def _normal_setup(log_f, x_fit, x_iter):
    """Posterior-side logs and a proposal sampler for the Gaussian proposal."""
    d = x_fit.shape[-1]
    base = gaussian_fit(x_fit.reshape(-1, d))
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
