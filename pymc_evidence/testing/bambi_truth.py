"""The exact evidence of bambi's ``y ~ 1 + x + (1|g)`` (Gaussian) under the priors it built.

Part of :mod:`pymc_evidence.testing`; numpy and scipy only. bambi writes the model as

    y_i ~ N(b0 + b1 (x_i - mean(x)) + u_{g_i}, sigma),   u_j ~ N(0, tau),
    b0 ~ N(m0, s0),  b1 ~ N(m1, s1),  sigma ~ HalfStudentT(nu, s_sigma),  tau ~ HalfNormal(s_tau),

its predictor centred (the ``Intercept`` it reports is ``b0 - b1 mean(x)``). Given
``(sigma, tau)`` the data are Gaussian with covariance ``sigma² I + tau² Z Zᵀ + X S Xᵀ``;
each group's block is compound-symmetric, so its inverse and determinant are closed forms
for groups of any size, and the two fixed effects enter by Woodbury's identity. The outer
integral over ``(log sigma, log tau)`` is a composite Gauss-Legendre rule on a box around
its mode, ``log tau``'s axis closed to ``tau = 0`` (:mod:`~pymc_evidence.testing.quadrature`),
checked against a finer rule on a wider box. The same algebra gives the fixed effects'
posterior mean given ``(sigma, tau)``, and the rule its posterior mean.

The priors are read off the PyMC model bambi builds (:func:`bambi_priors`), the data off
its data frame: nothing here calls :mod:`pymc_evidence`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import optimize, special, stats

from pymc_evidence.testing.glmm import hessian
from pymc_evidence.testing.quadrature import box_rule

__all__ = [
    "RandomInterceptTruth",
    "bambi_priors",
    "example_data",
    "random_intercept_truth",
    "scale_quantiles",
]


@dataclass(frozen=True)
class RandomInterceptTruth:
    """``log_z`` and the posterior means of bambi's ``Intercept`` (uncentred) and slope."""

    log_z: float
    intercept_mean: float
    slope_mean: float


def example_data(seed: int = 0):
    """``(y, x, g, priors)`` of a small example: 4 groups of 3 rows, priors as bambi's
    keys name them."""
    rng = np.random.default_rng(seed)
    g, x = np.repeat(np.arange(4), 3), rng.normal(size=12)
    priors = {"Intercept": [0.0, 2.0], "x": [0.0, 2.0], "sigma": [4.0, 1.0],
              "1|g_sigma": [1.0]}  # fmt: skip
    return x + rng.normal(size=12), x, g, priors


def bambi_priors(model) -> dict:
    """Each free variable's distribution parameters of a PyMC model, by name: floats, the
    first element of a vector parameter (a group's, the same for every group)."""
    out = {}
    for rv in model.free_RVs:
        params = rv.owner.op.dist_params(rv.owner)
        out[rv.name] = [float(np.ravel(p.eval())[0]) for p in params]
    return out


def _conditional(y, x, g, priors):
    """``f(log sigma, log tau) -> (log p(y, log sigma, log tau), E[b | sigma, tau, y])``."""
    sizes = np.bincount(g)
    X = np.stack([np.ones_like(x), x - x.mean()], 1)
    (m0, s0), (m1, s1) = priors["Intercept"], priors["x"]
    prior_mean, prior_prec = np.array([m0, m1]), np.diag([s0**-2, s1**-2])
    res = y - X @ prior_mean
    nu, s_sigma = priors["sigma"]
    s_tau = priors["1|g_sigma"][-1]

    def f(t):
        sig2, tau2 = np.exp(2 * t)
        c = tau2 / (sig2 + sizes * tau2)

        def a_inv(v):  # (sigma² I + tau² Z Zᵀ)⁻¹ v, group by group
            sums = np.zeros((sizes.size,) + v.shape[1:])
            np.add.at(sums, g, v)
            return (v - (c[:, None] * sums)[g]) / sig2

        ax = a_inv(X)
        inner = prior_prec + X.T @ ax
        log_det = np.sum((sizes - 1) * np.log(sig2) + np.log(sig2 + sizes * tau2))
        log_det += np.linalg.slogdet(inner)[1] - np.linalg.slogdet(prior_prec)[1]
        rx = res @ ax
        quad = res @ a_inv(res[:, None])[:, 0] - rx @ np.linalg.solve(inner, rx)
        log_lik = -0.5 * (y.size * np.log(2 * np.pi) + log_det + quad)
        log_prior = stats.halfnorm.logpdf(np.exp(t[1]), scale=s_tau) + t[1]
        log_prior += np.log(2.0) + stats.t.logpdf(np.exp(t[0]), df=nu, scale=s_sigma) + t[0]
        return log_lik + log_prior, prior_mean + np.linalg.solve(inner, rx)

    return f


def _rule(f, mode, sd, width, points):
    """``(log Z, posterior mean of b)`` by :func:`~pymc_evidence.testing.quadrature.box_rule`
    around the mode, ``log tau`` closed to a scale of zero."""
    grid, log_w = box_rule(mode, sd, width, points, log_scales=(1,))
    flat = grid.reshape(-1, 2)
    pairs = [f(t) for t in flat]
    vals = np.array([v for v, _ in pairs]) + log_w.ravel()
    log_z = float(special.logsumexp(vals))
    mean = np.exp(vals - log_z) @ np.array([m for _, m in pairs])
    return log_z, mean


def _mode_and_sd(f):
    mode = optimize.minimize(lambda t: -f(t)[0], [0.0, -0.5], method="Nelder-Mead",
                             options={"xatol": 1e-8, "fatol": 1e-10}).x  # fmt: skip
    return mode, np.sqrt(np.diag(np.linalg.inv(-hessian(lambda t: f(t)[0], mode))))


def scale_quantiles(y, x, g, priors, qs, n_grid: int = 1200) -> np.ndarray:
    """Exact posterior quantiles ``qs`` of the group scale ``tau`` (bambi's ``1|g_sigma``):
    ``sigma`` integrated by a Gauss-Legendre rule, ``log tau``'s density on a uniform grid
    of ``n_grid`` points from 14 posterior sd below its mode to 7 above (its left tail
    falls like ``tau``, so less than 1e-4 of the mass is cut off), its CDF by the trapezoid
    rule and inverted linearly.

    Examples
    --------
    >>> import numpy as np
    >>> q = scale_quantiles(*example_data(), [0.05, 0.5, 0.95], n_grid=200)
    >>> bool(np.all(np.diff(q) > 0))
    True
    """
    y, x = np.asarray(y, dtype=float), np.asarray(x, dtype=float)
    f = _conditional(y, x, np.asarray(g, dtype=int), priors)
    mode, sd = _mode_and_sd(f)
    nodes, w = np.polynomial.legendre.leggauss(40)
    log_sig, log_w = mode[0] + 10 * sd[0] * nodes, np.log(10 * sd[0] * w)
    log_taus = np.linspace(mode[1] - 14 * sd[1], mode[1] + 7 * sd[1], n_grid)
    log_p = [special.logsumexp([f(np.array([a, t]))[0] for a in log_sig] + log_w)
             for t in log_taus]  # fmt: skip
    density = np.exp(np.array(log_p) - np.max(log_p))
    cdf = np.concatenate([[0.0], np.cumsum(0.5 * (density[1:] + density[:-1]))])
    return np.exp(np.interp(qs, cdf / cdf[-1], log_taus))


def random_intercept_truth(y, x, g, priors) -> RandomInterceptTruth:
    """The exact evidence and fixed-effect posterior means of bambi's ``y ~ 1 + x + (1|g)``.

    Parameters
    ----------
    y, x : array
        The response and the predictor, one value a row.
    g : array of int
        Each row's group, ``0 .. J-1`` (groups of any size).
    priors : dict
        :func:`bambi_priors` of the model bambi built.

    Examples
    --------
    >>> round(random_intercept_truth(*example_data()).log_z, 3)
    -21.173
    """
    y, x, g = (np.asarray(a, dtype=float) for a in (y, x, g))
    g = g.astype(int)
    f = _conditional(y, x, g, priors)
    mode, sd = _mode_and_sd(f)
    first, _ = _rule(f, mode, sd, 10.0, 12)
    log_z, mean = _rule(f, mode, sd, 13.0, 18)
    if abs(first - log_z) > 1e-4:
        raise RuntimeError(f"outer quadrature unsettled: {first} vs {log_z}")
    return RandomInterceptTruth(log_z, float(mean[0] - mean[1] * x.mean()), float(mean[1]))
