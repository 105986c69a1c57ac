#!/usr/bin/env python
"""The radon log Bayes factor, varying intercepts against complete pooling, in both forms.

The varying-intercept model is written twice, as users write it: centred
(``alpha_c ~ N(mu_alpha, sigma_alpha)``, :func:`pymc_evidence.testing.centred_radon_intercepts`)
and non-centred (:func:`pymc_evidence.testing.noncentred_radon_intercepts`); the evidence
is the same, so both give the same Bayes factor against the pooled model
(:func:`pymc_evidence.datasets.radon_models`). Exact values by quadrature, independent of
the package's estimators: the varying-intercept log Z from
:mod:`pymc_evidence.testing.radon_exact` (2-D Simpson over the two scales) and the pooled
log Z from :func:`pymc_evidence.testing.radon_exact.radon_pooled_log_z` (adaptive
quadrature over ``sigma_y``; ``benchmarks/radon_reference.py`` agrees to 1e-12).

For each seed the script runs the default method (``pme.sample_evidence`` with only
``random_seed``) and ``pm.sample_smc`` (4 chains x 2000) on the three models and prints the
log Bayes factors of both forms with their errors against the exact value::

    PYTHONPATH=. python benchmarks/radon_bayes_factor.py --seeds 3
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import quiet_logs  # noqa: E402


def models():
    """``{name: (model, exact log Z)}`` for pooled, centred and non-centred intercepts."""
    from pymc_evidence.datasets import radon_models
    from pymc_evidence.testing import centred_radon_intercepts, noncentred_radon_intercepts
    from pymc_evidence.testing.radon_exact import radon_pooled_log_z

    centred, noncentred = centred_radon_intercepts(), noncentred_radon_intercepts()
    return {
        "pooled": (radon_models()["pooled"], radon_pooled_log_z()),
        "centred": (centred.model, centred.log_z),
        "non-centred": (noncentred.model, noncentred.log_z),
    }


def pme_log_z(model, seed):
    import pymc_evidence as pme

    est = pme.log_evidence(pme.sample_evidence(model, random_seed=seed, progressbar=False))
    return est.log_z, est.se


def smc_log_z(model, seed):
    import pymc as pm

    idata = pm.sample_smc(2000, chains=4, model=model, random_seed=seed, progressbar=False)
    lml = np.asarray(idata.sample_stats["log_marginal_likelihood"])
    per_chain = []
    for chain in lml.reshape(lml.shape[0], -1):
        finite = [v for v in np.ravel(chain[-1]) if np.isfinite(v)]
        per_chain.append(float(finite[-1]) if finite else math.nan)
    per_chain = np.array(per_chain)
    return float(per_chain.mean()), float(per_chain.std(ddof=1) / math.sqrt(per_chain.size))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    p.add_argument("--seeds", type=int, default=1, help="run seeds 1..N")
    p.add_argument("--no-smc", action="store_true", help="skip pm.sample_smc")
    args = p.parse_args(argv)
    quiet_logs(False)
    warnings.simplefilter("ignore")
    systems = models()
    exact = systems["centred"][1] - systems["pooled"][1]
    print(f"exact log BF (varying intercepts vs pooled) = {exact:.4f}")
    runners = {"pme default": pme_log_z, **({} if args.no_smc else {"pm.sample_smc": smc_log_z})}
    print("| method | seed | form | log BF | se | error | time s |")
    print("|---|---|---|---|---|---|---|")
    for label, run in runners.items():
        for seed in range(1, args.seeds + 1):
            t0 = time.perf_counter()
            est = {name: run(model, seed) for name, (model, _) in systems.items()}
            secs = time.perf_counter() - t0
            for form in ("centred", "non-centred"):
                bf = est[form][0] - est["pooled"][0]
                se = math.hypot(est[form][1], est["pooled"][1])
                print(f"| {label} | {seed} | {form} | {bf:.3f} | {se:.3f} | {bf - exact:+.3f} "
                      f"| {secs:.1f} |")  # fmt: skip


if __name__ == "__main__":
    main()
