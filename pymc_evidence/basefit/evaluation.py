"""Fresh Monte Carlo evaluation of fitted base densities: ELBO, importance-sampling ``log Z``.

Every fitted base (ADVI restarts, Laplace approximations, widened and merged bases) is judged
by draws of its own that its fit never saw (:func:`evaluate_bases`, one batched call of the
model's density for all of them).
"""

from __future__ import annotations

import numpy as np

from ..base.stats import FitStats
from ..estimators.logspace import logsumexp

__all__ = ["BaseFitError", "evaluate_bases", "weight_stats", "with_stats", "with_weight_stats"]


class BaseFitError(RuntimeError):
    """ADVI did not produce a usable base density."""


def weight_stats(log_w: np.ndarray) -> dict:
    """ELBO, importance-sampling ``log Z``, Kish ESS and non-finite count of log weights
    ``log p(x) - log q(x)`` of draws ``x ~ q`` (see :func:`evaluate_bases`).

    Examples
    --------
    >>> weight_stats(np.zeros(4))["is_ess"]
    4.0
    """
    n = log_w.size
    n_nonfinite = int(np.sum(~np.isfinite(log_w)))
    log_w = np.where(np.isfinite(log_w), log_w, -np.inf)
    finite = log_w[np.isfinite(log_w)]
    if finite.size < 2:
        raise BaseFitError("the model density is not finite at draws from the base")
    w = np.exp(log_w - np.max(log_w))
    return {
        "elbo": float(np.mean(finite)),
        "elbo_se": float(np.std(finite, ddof=1) / np.sqrt(finite.size)),
        "log_is": float(logsumexp(log_w) - np.log(n)),
        "is_ess": float(w.sum() ** 2 / np.sum(w**2)),
        "n_nonfinite": n_nonfinite,
    }


def evaluate_bases(density, bases, n: int, rng: np.random.Generator) -> list:
    """Fresh Monte Carlo ELBO and importance-sampling ``log Z`` of several bases at once.

    ``n`` draws of each base (drawn in order from ``rng``) are evaluated by the model in one
    batched call.

    Returns
    -------
    list of dict or BaseFitError
        Per base: ``elbo``, ``elbo_se``, ``log_is`` (log-mean-exp of the importance
        weights, a consistent but downward-biased estimate of ``log Z``), ``is_ess`` (Kish
        effective sample size) and ``n_nonfinite`` (draws where the model density was not
        finite, counted as weight zero); or the error when fewer than two were finite.
    """
    draws = [base.sample(n, rng) for base in bases]
    if not draws:
        return []
    log_f = density(np.concatenate(draws))[0].reshape(len(draws), n)
    out = []
    for base, x, lf in zip(bases, draws, log_f, strict=True):
        try:
            out.append(weight_stats(lf - base.logp(x)))
        except BaseFitError as err:
            out.append(err)
    return out


def with_weight_stats(stats: FitStats, stat: dict) -> FitStats:
    """``stats`` with the importance-sampling fields of ``stat`` (:func:`weight_stats`):
    ``log_is``, ``is_ess`` and ``n_nonfinite``.

    Examples
    --------
    >>> out = with_weight_stats(FitStats(refit_ess=7.0), weight_stats(np.zeros(4)))
    >>> out.is_ess, out.n_nonfinite, out.refit_ess
    (4.0, 0, 7.0)
    """
    return stats.updated(
        log_is=stat["log_is"], is_ess=stat["is_ess"], n_nonfinite=stat["n_nonfinite"]
    )


def with_stats(base, stat: dict, stats: FitStats | None = None, info: dict | None = None):
    """A copy of ``base`` judged by draws of its own: its ``log_zeta``, ``elbo`` and
    ``elbo_se`` from ``stat`` (:func:`weight_stats`), its ``stats`` those of ``stats``
    (default ``base.stats``) with ``stat``'s added (:func:`with_weight_stats`), its ``info``
    ``info`` (default ``base.info``); every other field kept.

    Examples
    --------
    >>> from pymc_evidence.base import GaussianBase
    >>> base = GaussianBase(np.zeros(1), np.eye(1), 0.0, "advi", info={"restart": 1})
    >>> out = with_stats(base, weight_stats(np.log([1.0, 2.0, 3.0])))
    >>> round(out.log_zeta, 12) == round(float(np.log(2.0)), 12), out.elbo_se > 0
    (True, True)
    >>> round(out.stats.is_ess, 3), out.info
    (2.571, {'restart': 1})
    """
    return base.with_values(
        log_zeta=stat["log_is"],
        elbo=stat["elbo"],
        elbo_se=stat["elbo_se"],
        stats=with_weight_stats(base.stats if stats is None else stats, stat),
        info=dict(base.info if info is None else info),
    )
