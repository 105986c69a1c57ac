#!/usr/bin/env python
"""LIS against AIS at equal cost on Neal's (2005) one-dimensional test family.

Endpoints ``p_0(x) = exp(-|x|^q)`` (normalised: the base) and ``p_1(x) = exp(-|(x-t)/s|^q)``
(the "model", ``log Z = log(2 s Gamma(1 + 1/q))`` exactly), joined by the package's geometric
path ``p_beta = p_0^(1-beta) p_1^beta``. For the contraction sequence (``t = 0``) the
geometric path *is* Neal's eq. 19 family, re-timed: width ``s^eta`` at
``beta = (s^(-q eta) - 1) / (s^(-q) - 1)``; for the Gaussian shift (``s = 1, q = 2``) it is
his shift family with ``beta = eta``. A light-tailed shift on the geometric path is *not* his
sequence (intermediates are near-intersections of boxes), but it is light-tailed and included.

Kernel: one random-walk Metropolis update per transition (the engine's ``rwm_step``), proposal
sd ``1.5 x sd(pi_beta)`` (from a quadrature grid), as Neal pretends MCMC is needed between the
exactly sampled ends. Cost unit: one update or one exact draw. LIS: ``n = 4`` (``eta = j/4``),
``K = m`` per chain, chain 0 of ``m + 1`` iid base draws: ``5 m + 1`` units. AIS: ``5 m + 1``
stages in ``eta``, one update each: the same cost. Reverse runs start from exact ``pi_1``
draws (reverse LIS: an RWM chain at ``beta = 1``, iid base draws for the last chain, so
the kernels match the forward runs). ``M`` runs per estimate; bridged estimates use ``M/2``
forward and ``M/2`` reverse runs (optimal top-level bridge, i.e. BAR on the run estimates).
Reported: MSE of ``log Z`` estimates over replications (x1000, with its standard error).

Run from the repository root (about 10 seconds)::

    PYTHONPATH=. python benchmarks/experiments/lis_vs_ais.py --reps 300 --m 20 --runs 20

Recorded output (this machine, PyMC 6 venv, seed 0; about 2 s per sequence):

    MSE of log Z x 1000 (+- se), reps=300, m=20, runs=20, n_AIS=101
    sequence                   LIS fwd     LIS rev    LIS brdg     AIS fwd     AIS rev    AIS brdg
    shift t=5 q=2           549.0±41.3  546.2±51.0  223.6±18.1  320.9±25.4  322.5±22.6   123.4±9.7
    contract s=0.1 q=2        22.0±1.8    34.1±3.0    22.3±2.1    22.0±1.8    43.4±5.4    24.9±2.0
    contract s=0.1 q=10       16.8±1.4    28.9±4.8    19.1±1.5    84.6±8.1  184.6±12.8    91.6±8.6
    light shift t=1.5 q=10    47.4±4.4    37.8±2.8    32.1±2.4  660.3±38.6  574.1±29.8  266.0±26.9

Reading: on the Gaussian shift LIS is no better than AIS (Neal: "if anything slightly worse"),
and bridging helps both. On the Gaussian contraction they tie, reverse worse than forward. With
light tails (q = 10) LIS wins by 5x (contraction) to 14x (shift), and bridged LIS beats bridged
AIS by 5-8x; reverse AIS on the contraction is the worst, as in Neal's Fig. 12. These match
the independent mini re-run in ``notes/seed_lis.md`` (sec. 3.6) within their noise.
"""

from __future__ import annotations

import argparse
import time
import warnings
from dataclasses import replace

import numpy as np
from scipy.special import gammaln

from pymc_evidence.engines.hmc import init_state, rwm_step
from pymc_evidence.engines.lis import run_lis
from pymc_evidence.engines.settings import KernelSettings, LinkSettings
from pymc_evidence.estimators.lis import (
    bridged_log_evidence,
    lis_log_evidence,
    reverse_lis_log_evidence,
)

SEQUENCES = {  # name: (s, t, q)
    "shift t=5 q=2": (1.0, 5.0, 2.0),
    "contract s=0.1 q=2": (0.1, 0.0, 2.0),
    "contract s=0.1 q=10": (0.1, 0.0, 10.0),
    "light shift t=1.5 q=10": (1.0, 1.5, 10.0),
}


class GeneralizedNormalPath:
    """Batched ``(log f, log q, grad f, grad q)`` for the two generalized-normal endpoints."""

    def __init__(self, s, t, q):
        self.s, self.t, self.q, self.n_calls = s, t, q, 0
        self.log_z0 = np.log(2.0) + gammaln(1.0 + 1.0 / q)
        self.log_z = np.log(s) + self.log_z0

    def __call__(self, x):
        self.n_calls += 1
        x = np.atleast_2d(x)[:, 0]
        log_f = -(np.abs((x - self.t) / self.s) ** self.q)
        log_q = -(np.abs(x) ** self.q) - self.log_z0
        zeros = np.zeros((x.size, 1))  # RWM needs no gradients
        return log_f, log_q, zeros, zeros

    def sample(self, end, n, rng):
        """Exact draws of ``pi_0`` (end=0) or ``pi_1`` (end=1)."""
        w = rng.gamma(1.0 / self.q, 1.0, size=n) ** (1.0 / self.q) * rng.choice([-1, 1], n)
        return (w if end == 0 else self.t + self.s * w)[:, None]

    def sd(self, betas):
        """Standard deviation of ``pi_beta`` by quadrature on a grid."""
        grid = np.linspace(min(-1.5, self.t - 1.5 * self.s), max(1.5, self.t + 1.5 * self.s), 4001)
        log_f, log_q, _, _ = self(grid[:, None])
        out = []
        for beta in np.atleast_1d(betas):
            lp = beta * log_f + (1 - beta) * log_q
            w = np.exp(lp - lp.max())
            w /= w.sum()
            mean = np.sum(w * grid)
            out.append(np.sqrt(np.sum(w * (grid - mean) ** 2)))
        return np.array(out)


def eta_to_beta(eta, s, t, q):
    if t == 0.0:  # contraction: width s^eta
        return (s ** (-q * eta) - 1.0) / (s ** (-q) - 1.0)
    return np.asarray(eta, float)


def ais_runs(path, betas, x, rng, eps, direction):
    """AIS log weights of every particle (forward from pi_0 or reverse from pi_1)."""
    state, log_w = init_state(x, path), np.zeros(x.shape[0])
    order = range(1, betas.size) if direction == "forward" else range(betas.size - 2, -1, -1)
    for k in order:
        lo, hi = (k - 1, k) if direction == "forward" else (k, k + 1)
        sign = 1.0 if direction == "forward" else -1.0
        log_w += sign * (betas[hi] - betas[lo]) * (state.log_f - state.log_q)
        if 0 < k < betas.size - 1:
            state, _ = rwm_step(state, betas[k], path, eps[k], rng)
    return log_w


def lis_runs(path, betas, n, m, rng, eps, direction):
    kernel = KernelSettings(step_size=eps, scale=None, kind="rwm")
    links = LinkSettings(chain_length=m)
    if direction == "forward":
        x0 = path.sample(0, n * (m + 1), rng).reshape(n, m + 1, 1)
        return run_lis(path, betas, x0, rng, kernel, links)[0]
    x0 = path.sample(1, n, rng)
    log_r, _ = run_lis(
        path, betas, x0, rng, kernel, replace(links, direction="reverse"),
        end_sampler=lambda k, g: path.sample(0, k, g),
    )  # fmt: skip
    return log_r


def estimates(fwd, rev, truth, runs):
    """Per replication: forward, reverse and bridged errors of log Z."""
    half = runs // 2
    out = np.empty((fwd.shape[0], 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, (f, r) in enumerate(zip(fwd, rev, strict=True)):
            out[i, 0] = lis_log_evidence(f).log_z - truth
            out[i, 1] = reverse_lis_log_evidence(r).log_z - truth
            out[i, 2] = bridged_log_evidence(f[:half], r[:half]).log_z - truth
    return out


def one_sequence(s, t, q, reps, m, runs, rng):
    path = GeneralizedNormalPath(s, t, q)
    lis_betas = eta_to_beta(np.linspace(0, 1, 5), s, t, q)
    ais_betas = eta_to_beta(np.linspace(0, 1, 5 * m + 2), s, t, q)  # 5m + 1 stages
    total = reps * runs
    cols = []
    for betas, runner in ((lis_betas, "lis"), (ais_betas, "ais")):
        eps = 1.5 * path.sd(betas)
        pair = []
        for direction in ("forward", "reverse"):
            if runner == "lis":
                log_r = lis_runs(path, betas, total, m, rng, eps, direction)
            else:
                x = path.sample(0 if direction == "forward" else 1, total, rng)
                log_r = ais_runs(path, betas, x, rng, eps, direction)
            pair.append(log_r.reshape(reps, runs))
        cols.append(estimates(pair[0], pair[1], path.log_z, runs))
    return np.concatenate(cols, axis=1)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=300)
    parser.add_argument("--m", type=int, default=20, help="LIS chain length K")
    parser.add_argument("--runs", type=int, default=20, help="runs per estimate (even)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    labels = ["LIS fwd", "LIS rev", "LIS brdg", "AIS fwd", "AIS rev", "AIS brdg"]
    print(f"MSE of log Z x 1000 (+- se), reps={args.reps}, m={args.m}, runs={args.runs}, "
          f"n_AIS={5 * args.m + 1}")  # fmt: skip
    print(f"{'sequence':22s}" + "".join(f"{lab:>12s}" for lab in labels))
    for name, (s, t, q) in SEQUENCES.items():
        start = time.perf_counter()
        err = one_sequence(s, t, q, args.reps, args.m, args.runs, rng)
        mse = 1000 * np.mean(err**2, axis=0)
        se = 1000 * np.std(err**2, axis=0, ddof=1) / np.sqrt(err.shape[0])
        cells = "".join(f"{f'{a:.1f}±{b:.1f}':>12s}" for a, b in zip(mse, se, strict=True))
        print(f"{name:22s}{cells}  ({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
