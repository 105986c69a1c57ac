#!/usr/bin/env python
"""Time against size: hierarchies of growing ``J``, each tool in a fresh process.

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
* ``logistic:n``: a logistic regression of ``n`` rows and 6 coefficients (``N(0, 1)``
  priors), log Z by importance sampling from the Laplace approximation, checked two ways (a
  multivariate t with 5 degrees of freedom and a Gaussian 1.2 times wider, 20 000 draws each;
  they must agree within 4 of their combined se).

Tools: ``pme`` (the default), ``pymc_nuts`` (a plain ``pm.sample()``, 4 x 1000 after 1000
tuning) and ``pymc_smc`` (``pm.sample_smc(draws=2000, chains=4)``), as in
``first_call.py``. Every (tool, model) runs in a child process with an empty compile cache
(``PYTENSOR_FLAGS=base_compiledir=<new temp dir>``), which builds the model (not timed), times
the first call, and reports its peak resident memory. One child at a time; on a 2-core
machine read the ratios (taken back to back) rather than the seconds. The table ends with
the log-log slope of each tool's time against ``J``.

Run from the repository root::

    PYTHONPATH=. .venv/bin/python benchmarks/scale.py --models gauss:300,gauss:1000,gauss:3000
    PYTHONPATH=. .venv/bin/python benchmarks/scale.py --models poisson:300,poisson:1000 \\
        --tools pme,pymc_nuts --out /tmp/scale.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
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
    "logistic",
)


def build(name: str):
    """``(model, log_z)`` of ``kind:J``."""
    kind, size = name.split(":")
    J = int(size)
    if kind == "gauss":
        from pymc_evidence.testing.hierarchical import hierarchical_normal

        system = hierarchical_normal(J=J, seed=3, centered=True)
    elif kind in ("poisson", "bernoulli", "binomial"):
        from pymc_evidence.testing.glmm import count_hierarchy

        system = count_hierarchy(J=J, rows=3, kind=kind, seed=1)
    elif kind == "slopes":
        from pymc_evidence.testing.slopes import slope_hierarchy

        system = slope_hierarchy(J=J, rows=4, seed=1)
    elif kind in ("lkj", "lkjc"):
        from pymc_evidence.testing.lkj_slopes import lkj_slope_hierarchy

        system = lkj_slope_hierarchy(J=J, rows=4, seed=1, centered=kind == "lkjc")
    elif kind == "crossed":
        from pymc_evidence.testing.crossed import crossed_intercepts

        system = crossed_intercepts(J=J, K=10, rows=4, seed=1)
    elif kind == "nested":
        from pymc_evidence.testing.crossed import crossed_intercepts

        system = crossed_intercepts(J=J, K=max(J // 20, 5), rows=4, seed=1, nested=True)
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


def child(tool: str, name: str, seed: int) -> dict:
    sys.path.insert(0, str(HERE))
    from first_call import _estimate

    model, log_z = build(name)
    t = time.perf_counter()
    est, se = _estimate(tool, model, seed)
    seconds = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB
    return {"tool": tool, "model": name, "truth": log_z, "log_z": est, "se": se,
            "first_s": seconds, "peak_gib": peak}  # fmt: skip


def run_child(tool: str, name: str, seed: int, timeout: float) -> dict:
    env = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="scale_") as cache:
        flags = [env.get("PYTENSOR_FLAGS", ""), f"base_compiledir={cache}"]
        env["PYTENSOR_FLAGS"] = ",".join(f for f in flags if f)
        env["PYTHONPATH"] = os.pathsep.join([str(HERE.parent), env.get("PYTHONPATH", "")])
        cmd = [sys.executable, __file__, "--child", tool, name, "--seed", str(seed)]
        try:
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"tool": tool, "model": name, "error": f"timeout after {timeout:.0f} s"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    return {"tool": tool, "model": name, "error": proc.stderr.strip().splitlines()[-3:]}


def slopes(results: list[dict]) -> dict:
    """The least-squares slope of log time against log J, per tool and model kind."""
    out = {}
    for tool in {r["tool"] for r in results}:
        for kind in KINDS:
            rows = [r for r in results if r["tool"] == tool and r["model"].startswith(kind + ":")
                    and "first_s" in r]  # fmt: skip
            if len(rows) >= 2:
                size = np.log([int(r["model"].split(":")[1]) for r in rows])
                out[(tool, kind)] = float(
                    np.polyfit(size, np.log([r["first_s"] for r in rows]), 1)[0]
                )
    return out


def table(results: list[dict]) -> str:
    lines = ["| model | tool | first call (s) | peak (GiB) | error | se | ratio to pm.sample |",
             "|---|---|---|---|---|---|---|"]  # fmt: skip
    nuts = {r["model"]: r.get("first_s") for r in results if r["tool"] == "pymc_nuts"}
    for r in results:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['tool']} | {r['error']} | | | | |")
            continue
        err = r["log_z"] - r["truth"]
        ratio = r["first_s"] / nuts[r["model"]] if nuts.get(r["model"]) else float("nan")
        lines.append(f"| {r['model']} | {r['tool']} | {r['first_s']:.1f} | {r['peak_gib']:.2f} "
                     f"| {err:+.3f} | {r['se']:.3f} | {ratio:.2f} |")  # fmt: skip
    for (tool, kind), slope in sorted(slopes(results).items()):
        lines.append(f"\nlog-log slope of {tool}'s time against J ({kind}): {slope:.2f}")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs=2, metavar=("TOOL", "MODEL"))
    parser.add_argument("--models", default="gauss:300,gauss:1000,poisson:300,poisson:1000")
    parser.add_argument("--tools", default="pme,pymc_nuts")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    if args.child:
        print("RESULT " + json.dumps(child(*args.child, args.seed)), flush=True)
        return
    results = []
    for name in args.models.split(","):
        for tool in args.tools.split(","):
            results.append(run_child(tool, name, args.seed, args.timeout))
            print(json.dumps(results[-1]), flush=True)
    print(table(results))
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
