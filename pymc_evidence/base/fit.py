"""``fit_base``: the normalized base density every path starts from."""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
from scipy.special import logsumexp

from ..hygiene import check_model
from .advi import BaseFitError, evaluate_base, run_advi
from .gaussian import GaussianBase, PriorBase, moment_match
from .space import ModelSpace, model_space

__all__ = ["fit_base", "BASE_METHODS", "prior_draws"]

BASE_METHODS = ("advi", "fullrank_advi", "prior")


def prior_draws(space: ModelSpace, n: int, seed) -> np.ndarray:
    """``n`` draws from the model's prior, as raveled unconstrained vectors."""
    from pymc.initial_point import make_initial_point_fn

    fn = make_initial_point_fn(
        model=space.model, default_strategy="prior", jitter_rvs=set(), return_transformed=True
    )
    seeds = np.random.default_rng(seed).integers(2**31, size=n)
    return np.array([space.ravel(fn(int(s))) for s in seeds])


def _one_fit(space, x0, fullrank, n_steps, learning_rate, n_eval, rng):
    mean, chol, trace = run_advi(
        space, x0, fullrank=fullrank, n_steps=n_steps, learning_rate=learning_rate, rng=rng
    )
    kind = "fullrank_advi" if fullrank else "advi"
    base = GaussianBase(mean, chol, log_zeta=0.0, kind=kind, names=space.names, sizes=space.sizes)
    stats = evaluate_base(space, base, n_eval, rng)
    if not np.isfinite(stats["elbo"]):
        raise BaseFitError("the ELBO of the fitted base is not finite")
    tail = trace[int(0.9 * len(trace)) :]
    info = {"n_steps": n_steps, "elbo_trace_tail": float(np.nanmean(tail)), **stats}
    return base.with_values(
        log_zeta=stats["log_is"], elbo=stats["elbo"], elbo_se=stats["elbo_se"], info=info
    )


def _distinct(fits, tol):
    """Drop fits whose means are within ``tol`` standard deviations of a better fit."""
    kept = []
    for fit in sorted(fits, key=lambda b: -b.log_zeta):
        duplicate = any(
            np.max(np.abs(fit.mean - k.mean) / np.sqrt(fit.std**2 + k.std**2)) < tol for k in kept
        )
        if not duplicate:
            kept.append(fit)
    return kept


def _combine(fits, space):
    """Moment-match one Gaussian to the ELBO-weighted mixture of distinct fits (eq. 25)."""
    log_weights = np.array([f.log_zeta for f in fits])
    mean, cov = moment_match(log_weights, [f.mean for f in fits], [f.cov for f in fits])
    info = {
        "n_components": len(fits),
        "component_log_zeta": [float(v) for v in log_weights],
        "component_elbo": [float(f.elbo) for f in fits],
    }
    return GaussianBase.from_moments(
        mean,
        cov,
        log_zeta=float(logsumexp(log_weights)),
        kind="mixture",
        names=space.names,
        sizes=space.sizes,
        elbo=float(max(f.elbo for f in fits)),
        info=info,
    )


def fit_base(
    method: str = "advi",
    *,
    restarts: int = 1,
    n_steps: int | None = None,
    learning_rate: float = 0.05,
    n_eval: int = 1000,
    random_seed=None,
    potentials: str | None = None,
    model: pm.Model | None = None,
) -> GaussianBase | PriorBase:
    """Fit the normalized base density of a tempering path.

    Parameters
    ----------
    method : {"advi", "fullrank_advi", "prior"}
        Mean-field ADVI, full-rank ADVI, or the model's own prior (power-posterior path).
    restarts : int
        Number of ADVI fits; the first starts at the model's initial point, the others at
        prior draws. Distinct fits are combined into one Gaussian moment-matched to their
        ELBO-weighted mixture (Graham & Storkey, eq. 25), which covers several modes.
    n_steps : int, optional
        ADVI iterations per fit (default 4000 mean-field, 6000 full-rank).
    learning_rate : float
        Adam's initial learning rate.
    n_eval : int
        Draws used for the fresh Monte Carlo ELBO and the importance-sampling ``log Z``.
    random_seed : int or Generator, optional
    potentials : {None, "likelihood"}
        How to read ``pm.Potential`` terms (see :func:`pymc_evidence.check_model`).
    model : pm.Model, optional
        Taken from the context when omitted.

    Returns
    -------
    GaussianBase or PriorBase
        The base, with ``log_zeta`` set to the importance-sampling estimate of ``log Z``
        (at least as tight as the ELBO on average), and ``elbo``/``elbo_se`` recorded.

    Raises
    ------
    BaseFitError
        When no fit succeeds. A failing full-rank fit falls back to mean-field with a
        warning.

    Examples
    --------
    >>> import numpy as np, pymc as pm, pymc_evidence as pme
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu", 0, 1)
    ...     y = pm.Normal("y", mu, 1, observed=[0.5])
    ...     base = pme.fit_base(random_seed=1)
    >>> bool(abs(base.log_zeta - (-1.0 - 0.5 * np.log(2 * np.pi * 2) + 1.0 - 0.0625)) < 0.05)
    True
    """
    if method not in BASE_METHODS:
        raise ValueError(f"method must be one of {BASE_METHODS}, got {method!r}")
    if restarts < 1:
        raise ValueError(f"restarts must be at least 1, got {restarts}")
    space = model_space(model)
    check_model(space.model, potentials=potentials)
    rng = np.random.default_rng(random_seed)
    if method == "prior":
        return PriorBase(log_zeta=0.0, names=space.names, sizes=space.sizes)
    fullrank = method == "fullrank_advi"
    n_steps = n_steps or (6000 if fullrank else 4000)
    starts = [space.initial_x()]
    if restarts > 1:
        starts += list(prior_draws(space, restarts - 1, rng.integers(2**31)))
    fits, errors = [], []
    for x0 in starts:
        try:
            fits.append(_one_fit(space, x0, fullrank, n_steps, learning_rate, n_eval, rng))
        except BaseFitError as err:
            errors.append(str(err))
    if not fits and fullrank:
        warnings.warn(
            f"full-rank ADVI failed ({errors[0]}); falling back to mean-field ADVI",
            RuntimeWarning,
            stacklevel=2,
        )
        return fit_base(
            "advi",
            restarts=restarts,
            learning_rate=learning_rate,
            n_eval=n_eval,
            random_seed=rng,
            potentials=potentials,
            model=space.model,
        )
    if not fits:
        raise BaseFitError(f"every ADVI fit failed: {errors}")
    if len(fits) == 1:
        return fits[0]
    distinct = _distinct(fits, tol=0.5)
    if len(distinct) == 1:
        return distinct[0]
    return _combine(distinct, space)
