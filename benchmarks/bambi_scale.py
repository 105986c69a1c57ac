#!/usr/bin/env python
"""A bambi formula at scale: ``y ~ 1 + x + (1|g)``, Gaussian, bambi's default priors.

``J`` groups of 3 rows. The truth uses numpy/scipy alone, with the priors read off the
model bambi builds: given ``sigma`` and ``1|g_sigma`` the data are Gaussian with covariance
``sigma² I + tau² Z Zᵀ + X S Xᵀ`` (``S`` the fixed effects' prior covariance), whose
inverse and determinant follow from each group's compound-symmetric block and Woodbury's
identity for the two fixed effects; the outer integral over ``(log sigma, log tau)`` is a
Gauss-Legendre rule around its mode, 40 points a side against 60 on a wider box. Needs
bambi (``pip install bambi``). Run from the repository root::

    PYTHONPATH=. .venv/bin/python benchmarks/bambi_scale.py --groups 1000,10000
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from scipy import optimize, special, stats

ROWS = 3


def data(J: int):
    import pandas as pd

    rng = np.random.default_rng(11)
    g = np.repeat(np.arange(J), ROWS)
    x = rng.normal(size=J * ROWS)
    y = 1.0 + 0.5 * x + 0.7 * rng.normal(size=J)[g] + rng.normal(size=J * ROWS)
    return pd.DataFrame({"y": y, "x": x, "g": pd.Categorical(g)})


def _priors(model) -> dict:
    """Each free variable's distribution parameters as floats."""
    out = {}
    for rv in model.free_RVs:
        params = rv.owner.op.dist_params(rv.owner)
        out[rv.name] = [np.asarray(p.eval(), dtype=float) for p in params]
    return out


def log_f_of(df, priors):
    """``log p(y, log sigma, log tau)`` with the fixed and group effects integrated."""
    y, x, g = df["y"].to_numpy(), df["x"].to_numpy(), df["g"].cat.codes.to_numpy()
    J = g.max() + 1
    (m0, s0), (m1, s1) = priors["Intercept"], priors["x"]
    tau_scale = priors["1|g_sigma"][-1]
    nu, sigma_scale = priors["sigma"]
    X = np.stack([np.ones_like(x), x], 1)
    S = np.diag([s0**2, s1**2])
    res = y - X @ [m0, m1]

    def log_lik(sig, tau):
        a, c = 1 / sig**2, tau**2 / (sig**2 + ROWS * tau**2)

        def a_inv(v):
            sums = np.zeros((J,) + v.shape[1:])
            np.add.at(sums, g, v)
            return a * (v - c * sums[g])

        ax = a_inv(X)
        inner = np.linalg.inv(S) + X.T @ ax
        log_det = J * ((ROWS - 1) * np.log(sig**2) + np.log(sig**2 + ROWS * tau**2))
        log_det += np.linalg.slogdet(inner)[1] + np.linalg.slogdet(S)[1]
        rx = res @ ax
        quad = res @ a_inv(res[:, None])[:, 0] - rx @ np.linalg.solve(inner, rx)
        return -0.5 * (len(y) * np.log(2 * np.pi) + log_det + quad)

    def log_f(t):
        sig, tau = np.exp(t)
        prior = stats.halfnorm.logpdf(tau, scale=tau_scale) + t[1]
        prior += np.log(2.0) + stats.t.logpdf(sig, df=nu, scale=sigma_scale) + t[0]
        return log_lik(sig, tau) + prior

    return log_f


def log_z(log_f) -> float:
    mode = optimize.minimize(lambda t: -log_f(t), [0.0, -0.5], method="Nelder-Mead",
                             options={"xatol": 1e-8, "fatol": 1e-10}).x  # fmt: skip
    h, hess = 1e-4, np.zeros((2, 2))
    for i in range(2):
        for k in range(2):
            e1, e2 = np.eye(2)[i] * h, np.eye(2)[k] * h
            hess[i, k] = (log_f(mode + e1 + e2) - log_f(mode + e1 - e2) - log_f(mode - e1 + e2)
                          + log_f(mode - e1 - e2)) / (4 * h * h)  # fmt: skip
    sd = np.sqrt(np.diag(np.linalg.inv(-hess)))

    def box(width, n):
        xs, ws = np.polynomial.legendre.leggauss(n)
        axes = [(m - width * s + width * s * (xs + 1), width * s * ws)
                for m, s in zip(mode, sd, strict=True)]  # fmt: skip
        vals = np.array([[log_f(np.array([u, v])) for v in axes[1][0]] for u in axes[0][0]])
        log_w = np.log(axes[0][1])[:, None] + np.log(axes[1][1])[None, :]
        return float(special.logsumexp(vals + log_w))

    first, check = box(9.0, 40), box(12.0, 60)
    if abs(first - check) > 1e-4:
        raise RuntimeError(f"outer quadrature unsettled: {first} vs {check}")
    return check


def main(argv=None):
    import bambi as bmb

    import pymc_evidence as pme

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", default="1000")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    for J in map(int, args.groups.split(",")):
        df = data(J)
        bm = bmb.Model("y ~ 1 + x + (1|g)", df)
        bm.build()
        model = bm.backend.model
        truth = log_z(log_f_of(df, _priors(model)))
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata = pme.sample_evidence(model, random_seed=args.seed, progressbar=False)
        est = pme.log_evidence(idata)
        print(f"J={J}: {time.perf_counter() - t:.1f} s, error {est.log_z - truth:+.4f} "
              f"± {est.se:.4f}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
