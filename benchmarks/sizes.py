"""The sized models of the benchmarks, ``kind:J``: hierarchies of ``J`` groups and a logistic
regression of ``J`` rows (:func:`sized`), registered in ``registry.py``.

Models (each with a log Z computed without pymc_evidence):

* ``gauss:J``: the centred Gaussian hierarchy ``theta ~ N(mu, tau)``, ``y_j ~ N(theta_j,
  s_j)`` (:func:`pymc_evidence.testing.hierarchical_normal`: closed form in ``mu`` and
  ``theta``, quadrature over ``tau``);
* ``poisson:J``, ``bernoulli:J`` and ``binomial:J``: random-intercept GLMMs of 3 rows a
  group (binomial: 5 trials a row; :func:`pymc_evidence.testing.glmm.count_hierarchy`:
  nested quadrature);
* ``slopes:J``: a random intercept and a random slope per group, 4 rows a group, written
  non-centred as bambi writes ``y ~ 1 + x + (1 + x | g)``
  (:func:`pymc_evidence.testing.slopes.slope_hierarchy`: closed form given the two scales,
  Gauss-Legendre over them);
* ``lkj:J`` and ``lkjc:J``: a correlated random intercept and slope, 4 rows a group, their
  covariance ``LKJCholeskyCov`` (``eta=2``, ``HalfNormal(1)`` scales), written non-centred
  (``z @ L.T``, as bambi writes ``(1 + x | g)`` with a full covariance) or centred
  (``MvNormal(0, chol=L)``) (:func:`pymc_evidence.testing.lkj_slopes.lkj_slope_hierarchy`:
  closed form given the covariance, composite Gauss-Legendre over its three parameters);
* ``crossed:J``: crossed random intercepts ``(1|county) + (1|year)``, ``J`` counties of 4
  rows crossed with 10 years, a ``HalfNormal(1)`` scale each, written centred
  (:func:`pymc_evidence.testing.crossed.crossed_intercepts`: Woodbury given the scales,
  composite Gauss-Legendre over the three of them);
* ``nested:J``: nested random intercepts ``(1|state) + (1|state:county)``, ``J`` counties of
  4 rows in ``J / 20`` states, written as ``crossed:J`` (the same function, ``nested=True``);
* ``nested3:J``: the same data written in three levels, counties centred on their state
  (``a ~ N(b[state], tau_a)``, rows ``mu + a[county]``; ``three_level=True``), same log Z;
* ``npoisson:J`` and ``nbernoulli:J``: nested random intercepts of a Poisson or
  Bernoulli-logit likelihood, ``mu + b[state] + a[county]``, ``J`` counties of 4 rows in
  ``J / 20`` states (:func:`pymc_evidence.testing.glmm_nested.nested_count_hierarchy`:
  trapezoid per county statistic and per state, Gauss-Legendre over the three
  hyperparameters);
* ``cpoisson:J`` and ``cbernoulli:J``: crossed random intercepts ``(1|county) + (1|year)``
  of a Poisson or Bernoulli-logit likelihood, ``J`` counties of 4 rows, each row in one of
  10 years
  (:func:`pymc_evidence.testing.glmm_crossed.crossed_count_hierarchy`: a trapezoid per county,
  Gauss-Legendre over ``log tau_b`` and importance sampling over the rest at each node; minutes
  at a few hundred counties);
* ``logistic:n``: a logistic regression of ``n`` rows and 6 coefficients (``N(0, 1)``
  priors), log Z by importance sampling from the Laplace approximation, checked two ways (a
  multivariate t with 5 degrees of freedom and a Gaussian 1.2 times wider, 20 000 draws each;
  they must agree within 4 of their combined se).
"""

from __future__ import annotations

import numpy as np

#: Importance-sampling draws of each of the logistic truth's two proposals: 2 000 gave
#: the 20 000-row truth an se of 0.011 (larger than the default's), 20 000 give about 0.003.
IS_DRAWS = 20_000
KINDS = (
    "gauss",
    "poisson",
    "bernoulli",
    "binomial",
    "slopes",
    "lkj",
    "lkjc",
    "crossed",
    "nested",
    "nested3",
    "npoisson",
    "nbernoulli",
    "cpoisson",
    "cbernoulli",
    "logistic",
)


def sized(name: str, truth: bool = True):
    """``(model, log_z)`` of ``kind:J`` (``truth=False``: NaN for the hierarchies, whose
    quadratures take seconds at a few hundred groups).

    >>> model, log_z = sized("poisson:20", truth=False)
    >>> [rv.name for rv in model.free_RVs]
    ['mu', 'tau', 'b']
    """
    kind, size = name.split(":")
    J = int(size)
    if kind == "gauss":
        from pymc_evidence.testing.hierarchical import hierarchical_normal

        system = hierarchical_normal(J=J, seed=3, centered=True)
    elif kind in ("poisson", "bernoulli", "binomial"):
        from pymc_evidence.testing.glmm import count_hierarchy

        system = count_hierarchy(J=J, rows=3, kind=kind, seed=1, exact=truth)
    elif kind == "slopes":
        from pymc_evidence.testing.slopes import slope_hierarchy

        system = slope_hierarchy(J=J, rows=4, seed=1, exact=truth)
    elif kind in ("lkj", "lkjc"):
        from pymc_evidence.testing.lkj_slopes import lkj_slope_hierarchy

        system = lkj_slope_hierarchy(J=J, rows=4, seed=1, centered=kind == "lkjc", exact=truth)
    elif kind == "crossed":
        from pymc_evidence.testing.crossed import crossed_intercepts

        system = crossed_intercepts(J=J, K=10, rows=4, seed=1)
    elif kind in ("nested", "nested3"):
        from pymc_evidence.testing.crossed import crossed_intercepts

        three = kind == "nested3"
        system = crossed_intercepts(
            J=J, K=max(J // 20, 5), rows=4, seed=1, nested=True, three_level=three
        )
    elif kind in ("npoisson", "nbernoulli"):
        from pymc_evidence.testing.glmm_nested import nested_count_hierarchy

        system = nested_count_hierarchy(
            J=J, K=max(J // 20, 5), rows=4, kind=kind[1:], seed=1, exact=truth
        )
    elif kind in ("cpoisson", "cbernoulli"):
        from pymc_evidence.testing.glmm_crossed import crossed_count_hierarchy

        system = crossed_count_hierarchy(J=J, T=10, rows=4, kind=kind[1:], seed=1, exact=truth)
    elif kind == "logistic":
        return logistic(J)
    else:
        raise ValueError(f"unknown model kind {kind!r}; one of {KINDS}")
    return system.model, system.log_z


def _log_lik(x, y, betas, chunk: int = 25) -> np.ndarray:
    """The logistic log likelihood of every row of ``betas`` (``(M, 6)``)."""
    out = []
    for i in range(0, len(betas), chunk):
        eta = x @ betas[i : i + chunk].T
        out.append(np.sum(y[:, None] * eta - np.logaddexp(0.0, eta), axis=0))
    return np.concatenate(out)


def _is_log_z(x, y, draws, log_q) -> tuple[float, float]:
    """Importance-sampling log Z and its delta-method se."""
    from scipy import special, stats

    log_w = _log_lik(x, y, draws) + stats.norm.logpdf(draws).sum(1) - log_q
    log_z = special.logsumexp(log_w) - np.log(len(log_w))
    w = np.exp(log_w - log_w.max())
    return float(log_z), float(np.std(w) / np.mean(w) / np.sqrt(len(w)))


def logistic(n: int):
    """The ``logistic:n`` model and its log Z (see the module's docstring)."""
    import pymc as pm
    from scipy import stats

    rng = np.random.default_rng(7)
    x = np.column_stack([np.ones(n), rng.normal(size=(n, 5))])
    truth = np.array([-0.5, 0.8, -0.4, 0.3, 0.0, 0.6])
    y = rng.binomial(1, 1.0 / (1.0 + np.exp(-x @ truth))).astype(float)
    beta = np.zeros(6)
    for _ in range(50):  # Newton for the mode
        p = 1.0 / (1.0 + np.exp(-x @ beta))
        hess = (x * (p * (1 - p))[:, None]).T @ x + np.eye(6)
        beta = beta + np.linalg.solve(hess, x.T @ (y - p) - beta)
    cov = np.linalg.inv(hess)
    t = stats.multivariate_t(beta, cov, df=5, seed=1)
    wide = stats.multivariate_normal(beta, 1.44 * cov, seed=2)
    first = _is_log_z(x, y, d := t.rvs(IS_DRAWS), t.logpdf(d))
    second = _is_log_z(x, y, d := wide.rvs(IS_DRAWS), wide.logpdf(d))
    if abs(first[0] - second[0]) > 4 * np.hypot(first[1], second[1]) + 1e-3:
        raise RuntimeError(f"the two importance samples disagree: {first} {second}")
    with pm.Model() as model:
        b = pm.Normal("beta", 0.0, 1.0, shape=6)
        pm.Bernoulli("y", logit_p=pm.math.dot(x, b), observed=y)
    return model, first[0]
