"""Models as users write them, each with its log Z computed here independently of the package.

Every builder returns ``(model, log_z)``. The truths use scipy/numpy only: closed forms,
enumeration of discrete assignments, or quadrature over the few parameters left once the
rest are integrated analytically. Data are seeded, so a model and its truth are the same in
every process. Used by ``first_call.py``; run this file to print every truth and a check
of each model's log density against the formula its truth integrates.
"""

from __future__ import annotations

import itertools

import numpy as np
import pymc as pm
from scipy import integrate, special, stats

from pymc_evidence.testing.lkj_slopes import pymc_lkj_offset

# ------------------------------------------------------------------------------------------
# Regressions


def regression(d: int = 5, n: int = 50):
    """Linear regression, known noise: ``y ~ N(0, I + X X^T)`` marginally, its determinant
    and quadratic form by the matrix determinant lemma and Woodbury (any number of rows)."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(n, d))
    y = X @ rng.normal(size=d) + rng.normal(size=n)
    with pm.Model() as model:
        beta = pm.Normal("beta", 0.0, 1.0, shape=d)
        pm.Normal("y", X @ beta, 1.0, observed=y)
    inner = np.eye(d) + X.T @ X
    xty = X.T @ y
    quad = y @ y - xty @ np.linalg.solve(inner, xty)
    return model, float(-0.5 * (n * np.log(2 * np.pi) + np.linalg.slogdet(inner)[1] + quad))


def _logistic_data(n, d):
    rng = np.random.default_rng(2)
    X = np.column_stack([np.ones(n), rng.normal(size=(n, d - 1))])
    beta = np.array([-0.5, 1.0, -0.7, 0.3, 0.0, 0.5][:d])
    y = rng.random(n) < special.expit(X @ beta)
    return X, y.astype(int)


def _logistic_log_lik(X, y, betas):
    """Log likelihood at each row of ``betas`` (chunked over rows)."""
    eta = betas @ X.T  # (m, n)
    return (y * eta - np.logaddexp(0.0, eta)).sum(axis=1)


def _laplace_t_importance(log_joint, mode, cov, m=40000, df=8, seed=3):
    """``log Z`` by importance sampling from a Student-t around the Laplace approximation;
    returns ``(log_z, se)``."""
    rng = np.random.default_rng(seed)
    proposal = stats.multivariate_t(mode, cov, df=df)
    draws = proposal.rvs(m, random_state=rng)
    log_w = np.concatenate([log_joint(c) for c in np.array_split(draws, 40)])
    log_w = log_w - proposal.logpdf(draws)
    log_z = special.logsumexp(log_w) - np.log(m)
    w = np.exp(log_w - log_w.max())
    return float(log_z), float(np.std(w) / np.mean(w) / np.sqrt(m))


def logistic(n: int = 20000, d: int = 6):
    """Logistic regression with many rows, ``beta ~ N(0, I)``; truth by importance sampling
    from a Student-t around the Laplace approximation (its se is ~1e-3 or less)."""
    X, y = _logistic_data(n, d)
    with pm.Model() as model:
        beta = pm.Normal("beta", 0.0, 1.0, shape=d)
        pm.Bernoulli("y", logit_p=X @ beta, observed=y)

    def log_joint(b):
        return _logistic_log_lik(X, y, b) + stats.norm.logpdf(b).sum(axis=1)

    mode = np.zeros(d)
    for _ in range(30):  # Newton's method on the log joint
        p = special.expit(X @ mode)
        grad = X.T @ (y - p) - mode
        hess = (X * (p * (1 - p))[:, None]).T @ X + np.eye(d)
        mode = mode + np.linalg.solve(hess, grad)
    log_z, se = _laplace_t_importance(log_joint, mode, np.linalg.inv(hess))
    assert se < 2e-3, se
    return model, log_z


# ------------------------------------------------------------------------------------------
# Hierarchies


def hierarchy(J: int = 300, centred: bool = True):
    """Gaussian hierarchy with known scales: ``theta_j ~ N(mu, tau)`` (``centred=False``:
    ``theta = mu + tau * eta``, ``eta ~ N(0, 1)``, written so by hand), ``mu ~ N(0, 5)``,
    ``tau ~ HalfNormal(5)``; ``mu`` and ``theta`` integrate in closed form, ``tau`` by
    adaptive quadrature."""
    rng = np.random.default_rng(4)
    sigma = rng.uniform(2.0, 6.0, J)
    y = rng.normal(rng.normal(3.0, 2.0, J), sigma)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 5.0)
        tau = pm.HalfNormal("tau", 5.0)
        if centred:
            theta = pm.Normal("theta", mu, tau, shape=J)
        else:
            theta = mu + tau * pm.Normal("eta", 0.0, 1.0, shape=J)
        pm.Normal("y", theta, sigma, observed=y)

    def log_lik(tau):  # y | tau ~ N(0, diag(sigma^2 + tau^2) + 25 11^T)
        v = sigma**2 + tau**2
        a = np.sum(1.0 / v)
        b = np.sum(y / v)
        return (
            -0.5 * np.sum(np.log(2 * np.pi * v) + y**2 / v)
            - 0.5 * np.log1p(25.0 * a)
            + 0.5 * b**2 / (a + 1.0 / 25.0)
        )

    return model, _quad_log(lambda t: log_lik(t) + stats.halfnorm.logpdf(t, scale=5.0), 0, 40)


def _quad_log(log_f, lo, hi, points=None):
    """``log ∫ exp(log_f)`` over ``[lo, hi]`` by adaptive quadrature, shifted by the max of
    ``log_f`` on a grid (so the integrand is O(1))."""
    grid = np.linspace(lo, hi, 4001)[1:-1]
    values = np.array([log_f(t) for t in grid])
    shift, at = float(values.max()), float(grid[values.argmax()])
    val, _ = integrate.quad(
        lambda t: np.exp(log_f(t) - shift), lo, hi, points=[at], limit=500, epsabs=0, epsrel=1e-10
    )
    return shift + float(np.log(val))


# ------------------------------------------------------------------------------------------
# Mixtures (label switching: exchangeable components, no ordering)


def _mixture_data(n):
    rng = np.random.default_rng(5)
    return np.concatenate([rng.normal(-2.0, 1.0, n // 2), rng.normal(2.5, 1.0, n - n // 2)])


def _mixture_log_z(y, k, prior_sd, alpha=1.0):
    """Sum over all ``k**n`` assignments: Dirichlet-multinomial for the weights times, per
    component, the Gaussian marginal of its points (mean ``~ N(0, prior_sd)``, unit noise)."""
    n = len(y)
    z = np.array(list(itertools.product(range(k), repeat=n)))  # (k**n, n)
    total = np.zeros(len(z))
    counts = np.zeros((len(z), k))
    for c in range(k):
        mask = z == c
        nk = mask.sum(axis=1)
        s = (mask * y).sum(axis=1)
        q = (mask * y**2).sum(axis=1)
        v = prior_sd**2
        total += (
            -0.5 * nk * np.log(2 * np.pi)
            - 0.5 * np.log1p(v * nk)
            - 0.5 * (q - v * s**2 / (1 + v * nk))
        )
        counts[:, c] = nk
    dm = special.gammaln(k * alpha) - special.gammaln(k * alpha + n)
    dm = dm + (special.gammaln(alpha + counts) - special.gammaln(alpha)).sum(axis=1)
    return float(special.logsumexp(total + dm))


def mixture(k: int = 2, n: int = 12):
    """``pm.NormalMixture`` with ``k`` components, Dirichlet(1) weights, means
    ``~ N(0, 5)``, unit noise; truth by enumerating every assignment."""
    y = _mixture_data(n)
    with pm.Model() as model:
        w = pm.Dirichlet("w", np.ones(k))
        mu = pm.Normal("mu", 0.0, 5.0, shape=k)
        pm.NormalMixture("y", w=w, mu=mu, sigma=1.0, observed=y)
    return model, _mixture_log_z(y, k, 5.0)


# ------------------------------------------------------------------------------------------
# Covariance: LKJCholeskyCov, latent GP


def _bivariate_log_lik_mu_integrated(Y, s1, s2, r, s0):
    """``log p(Y | Sigma)`` with the mean ``~ N(0, s0^2 I)`` integrated (2-D, vectorized
    over arrays ``s1, s2, r``)."""
    n = len(Y)
    det = (s1 * s2) ** 2 * (1 - r**2)
    i11, i22, i12 = s2**2 / det, s1**2 / det, -r * s1 * s2 / det  # Sigma^-1
    S = Y.T @ Y
    quad = i11 * S[0, 0] + i22 * S[1, 1] + 2 * i12 * S[0, 1]
    t1, t2 = Y.sum(axis=0)
    b1, b2 = i11 * t1 + i12 * t2, i12 * t1 + i22 * t2  # Sigma^-1 sum y
    p11, p22, p12 = n * i11 + 1 / s0**2, n * i22 + 1 / s0**2, n * i12  # posterior precision
    pdet = p11 * p22 - p12**2
    bpb = (p22 * b1**2 + p11 * b2**2 - 2 * p12 * b1 * b2) / pdet
    return (
        -n * np.log(2 * np.pi)
        - 0.5 * n * np.log(det)
        - 0.5 * quad
        + 0.5 * bpb
        - 0.5 * np.log(pdet)
        - np.log(s0**2)
    )


def lkj_cholesky(n: int = 30, eta: float = 2.0, s0: float = 2.0):
    """Bivariate normal, mean ``~ N(0, 2)``, covariance from ``pm.LKJCholeskyCov`` (eta 2,
    Exponential(1) scales): 5 parameters. The mean integrates in closed form; the scales
    and the correlation by a 3-D grid in (log s1, log s2, atanh r) (Simpson's rule)."""
    rng = np.random.default_rng(6)
    Y = rng.multivariate_normal([0.5, -0.3], [[1.0, 0.6], [0.6, 2.0]], size=n)
    with pm.Model() as model:
        sd = pm.Exponential.dist(1.0, shape=2)
        chol, _, _ = pm.LKJCholeskyCov("chol", n=2, eta=eta, sd_dist=sd, compute_corr=True)
        mu = pm.Normal("mu", 0.0, s0, shape=2)
        pm.MvNormal("y", mu, chol=chol, observed=Y)
    a = np.linspace(-3.0, 2.5, 201)  # log scales
    t = np.linspace(-3.0, 3.0, 201)  # atanh r
    A1, A2, T = np.meshgrid(a, a, t, indexing="ij")
    s1, s2, r = np.exp(A1), np.exp(A2), np.tanh(T)
    log_prior = (
        stats.expon.logpdf(s1)
        + A1
        + stats.expon.logpdf(s2)
        + A2  # log-scale Jacobians
        + stats.beta.logpdf((r + 1) / 2, eta, eta)
        - np.log(2.0)
        + np.log1p(-(r**2))
    )
    log_f = log_prior + _bivariate_log_lik_mu_integrated(Y, s1, s2, r, s0)
    log_z = _simpson3(log_f, a[1] - a[0], a[1] - a[0], t[1] - t[0])
    return model, log_z + pymc_lkj_offset(eta)  # PyMC 5's LKJ density is not normalized


def _simpson_weights(n):
    w = np.ones(n)
    w[1:-1:2], w[2:-1:2] = 4.0, 2.0
    return w / 3.0


def _simpson3(log_f, *steps):
    weights = [_simpson_weights(s) for s in log_f.shape]
    w = weights[0][:, None, None] * weights[1][None, :, None] * weights[2][None, None, :]
    shift = log_f.max()
    return float(shift + np.log(np.sum(w * np.exp(log_f - shift)) * np.prod(steps)))


def gp_latent(n: int = 20, noise: float = 0.3):
    """``pm.gp.Latent`` with an ExpQuad kernel, amplitude ``~ HalfNormal(1)``, lengthscale
    ``~ Gamma(2, 2)``, Gaussian noise 0.3: ``y | eta, ell ~ N(0, eta^2 K + jitter I +
    noise^2 I)``, then a 2-D Simpson grid in (log eta, log ell)."""
    rng = np.random.default_rng(7)
    x = np.sort(rng.uniform(0, 5, n))
    y = np.sin(1.5 * x) + rng.normal(0, noise, n)
    with pm.Model() as model:
        amp = pm.HalfNormal("amp", 1.0)
        ell = pm.Gamma("ell", 2.0, 2.0)
        gp = pm.gp.Latent(cov_func=amp**2 * pm.gp.cov.ExpQuad(1, ls=ell))
        f = gp.prior("f", X=x[:, None])
        pm.Normal("y", f, noise, observed=y)
    jitter = 1e-6  # what pm.gp.Latent adds to the covariance before its Cholesky
    la = np.linspace(-3.5, 1.5, 161)
    ll = np.linspace(-3.0, 2.0, 161)
    sq = (x[:, None] - x[None, :]) ** 2
    log_f = np.empty((len(la), len(ll)))
    for j, lell in enumerate(ll):
        K = np.exp(-0.5 * sq / np.exp(2 * lell))
        covs = np.exp(2 * la)[:, None, None] * K + (jitter + noise**2) * np.eye(n)
        L = np.linalg.cholesky(covs)
        alpha = np.linalg.solve(L, np.broadcast_to(y[:, None], (len(la), n, 1)))[..., 0]
        logdet = 2 * np.log(np.diagonal(L, axis1=1, axis2=2)).sum(axis=1)
        log_lik = -0.5 * (n * np.log(2 * np.pi) + logdet + (alpha**2).sum(axis=1))
        log_prior = stats.halfnorm.logpdf(np.exp(la)) + la
        log_prior = log_prior + stats.gamma.logpdf(np.exp(lell), 2.0, scale=0.5) + lell
        log_f[:, j] = log_lik + log_prior
    wa, wl = _simpson_weights(len(la)), _simpson_weights(len(ll))
    shift = log_f.max()
    total = np.sum(wa[:, None] * wl[None, :] * np.exp(log_f - shift)) * (la[1] - la[0])
    return model, float(shift + np.log(total * (ll[1] - ll[0])))


# ------------------------------------------------------------------------------------------
# Counts, time series, constraints, censoring


def dirichlet_multinomial(k: int = 4, m: int = 6, trials: int = 20):
    """``p ~ Dirichlet(1)``, ``m`` multinomial count vectors of ``trials``: closed form."""
    rng = np.random.default_rng(8)
    counts = rng.multinomial(trials, np.arange(1, k + 1) / (k * (k + 1) / 2), size=m)
    alpha = np.ones(k)
    with pm.Model() as model:
        p = pm.Dirichlet("p", alpha)
        pm.Multinomial("y", n=trials, p=p, observed=counts)
    coef = np.sum(special.gammaln(trials + 1) - special.gammaln(counts + 1).sum(axis=1))
    total = counts.sum(axis=0)
    log_b = special.gammaln(alpha + total).sum() - special.gammaln((alpha + total).sum())
    log_b0 = special.gammaln(alpha).sum() - special.gammaln(alpha.sum())
    return model, float(coef + log_b - log_b0)


def ar1(T: int = 100):
    """``pm.AR`` of order 1 with ``rho ~ N(0, 0.5)``, ``sigma ~ HalfNormal(1)`` and a
    N(0, 1) first value: ``rho`` integrates in closed form, ``sigma`` by quadrature."""
    rng = np.random.default_rng(9)
    y = np.zeros(T)
    y[0] = rng.normal()
    for t in range(1, T):
        y[t] = 0.6 * y[t - 1] + rng.normal(0, 0.8)
    with pm.Model() as model:
        rho = pm.Normal("rho", 0.0, 0.5, shape=1)
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.AR("y", rho=rho, sigma=sigma, init_dist=pm.Normal.dist(0.0, 1.0), observed=y)
    a, b = y[:-1], y[1:]

    def log_lik(s):  # rho ~ N(0, 0.25) integrated: b | s ~ N(0, s^2 I + 0.25 a a^T)
        prec = 1 / 0.25 + a @ a / s**2
        mean = (a @ b / s**2) / prec
        return (
            -0.5 * (T - 1) * np.log(2 * np.pi * s**2)
            - 0.5 * (b @ b) / s**2
            + 0.5 * prec * mean**2
            - 0.5 * np.log(0.25 * prec)
        )

    log_z = stats.norm.logpdf(y[0]) + _quad_log(
        lambda s: log_lik(s) + stats.halfnorm.logpdf(s), 1e-3, 5.0
    )
    return model, log_z


def zero_sum(k: int = 8, per: int = 10):
    """Group effects ``a ~ ZeroSumNormal(1)`` around ``mu ~ N(0, 2)``, unit noise: ``y`` is
    Gaussian with covariance ``4 11^T + G (I - 11^T / k) G^T + I`` (``G`` the group
    indicators)."""
    rng = np.random.default_rng(10)
    g = np.repeat(np.arange(k), per)
    effects = rng.normal(0, 1, k)
    y = 1.0 + (effects - effects.mean())[g] + rng.normal(size=k * per)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 2.0)
        a = pm.ZeroSumNormal("a", sigma=1.0, shape=k)
        pm.Normal("y", mu + a[g], 1.0, observed=y)
    G = np.eye(k)[g]
    cov = 4.0 + G @ (np.eye(k) - 1.0 / k) @ G.T + np.eye(k * per)
    return model, float(stats.multivariate_normal(np.zeros(k * per), cov).logpdf(y))


def censored(n: int = 40, lower: float = -1.0, upper: float = 1.5):
    """``pm.Censored`` normal with ``mu ~ N(0, 2)``, unit scale; truth by 1-D quadrature."""
    rng = np.random.default_rng(11)
    y = np.clip(rng.normal(0.6, 1.0, n), lower, upper)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 2.0)
        pm.Censored("y", pm.Normal.dist(mu, 1.0), lower=lower, upper=upper, observed=y)
    at_low, at_up = y <= lower, y >= upper
    mid = y[~at_low & ~at_up]

    def log_lik(m):
        return (
            stats.norm.logpdf(mid, m, 1.0).sum()
            + at_low.sum() * stats.norm.logcdf(lower, m, 1.0)
            + at_up.sum() * stats.norm.logsf(upper, m, 1.0)
        )

    return model, _quad_log(lambda m: log_lik(m) + stats.norm.logpdf(m, 0, 2.0), -10, 10)


if __name__ == "__main__":
    import sys

    from registry import build, family, ndim

    for name in family("first_call") if len(sys.argv) < 2 else sys.argv[1].split(","):
        model, log_z = build(name)
        print(f"{name:24s} d={ndim(model):5d} log Z = {log_z:.4f}", flush=True)
