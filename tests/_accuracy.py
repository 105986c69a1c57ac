"""The one accuracy rule of the test suite: an estimate of log Z against an exact truth.

``assert_log_z(est, truth, abs_tol=...)`` passes only when all of these hold:

- ``log_z`` is finite and ``se`` is finite and positive,
- ``|log_z - truth| <= 4 se`` (the error is explained by the reported error bar), AND
- ``|log_z - truth| <= abs_tol`` (the estimate is useful, whatever its error bar says),
- and, where ``se_max`` is given, ``se <= se_max`` (the error bar itself is small enough).

Both bounds, never either: a huge ``se`` must not excuse a large error, and a tiny error
must not hide a miscalibrated ``se``. Other Monte Carlo quantities with an exact value (a
mean of draws, a frequency, an estimate of ``Z`` itself) go through :func:`assert_estimate`,
the same rule elementwise; an estimate known to be biased one way (an ELBO, forward AIS)
through :func:`assert_below` / :func:`assert_above`. No test writes ``4 * se`` itself:
:data:`Z_MAX` is the one number. Tests import it directly (``from tests._accuracy import
assert_log_z``, from any folder of the suite: ``tests`` is a package and pytest puts the
repository root on ``sys.path``) or take the ``assert_log_z`` fixture of ``conftest.py``.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "ACCURACY_SEED",
    "FAST_CASES",
    "Z_MAX",
    "assert_above",
    "assert_below",
    "assert_estimate",
    "assert_log_z",
    "check_method",
    "fast_case",
]

#: The bound on ``|error| / se`` of every accuracy check.
Z_MAX = 4.0


def assert_log_z(est, truth, *, abs_tol, label="", se_max=None, z_max=Z_MAX):
    """Assert that an estimate of log Z matches ``truth`` within 4 se AND within ``abs_tol``.

    Parameters
    ----------
    est : EvidenceEstimate or (float, float)
        Anything with ``log_z`` and ``se`` attributes, or a ``(log_z, se)`` pair.
    truth : float
        The exact log Z (or exact difference of log Zs).
    abs_tol : float
        Absolute bound on ``|log_z - truth|``; required, there is no default.
    label : str
        Names the case in the failure message.
    se_max : float, optional
        Also require ``se <= se_max``.
    z_max : float
        The bound on ``|error| / se``: 4, the project's rule; change it only with a reason.

    Returns
    -------
    float
        The error ``log_z - truth``.
    """
    if hasattr(est, "log_z"):
        log_z, se = est.log_z, est.se
    else:
        log_z, se = est
    log_z, se, truth = float(log_z), float(se), float(truth)
    error = log_z - truth
    z = error / se if se > 0 else math.nan
    what = f"{label}: " if label else ""
    report = (
        f"{what}log_z {log_z:.4f}, truth {truth:.4f}, error {error:+.4f}, se {se:.4f}, "
        f"z = error/se {z:+.2f}; rule |error| <= {z_max:g} se AND |error| <= {abs_tol:g}"
        + (f" AND se <= {se_max:g}" if se_max is not None else "")
        + (f"  [{est}]" if hasattr(est, "log_z") else "")
    )
    print(report)
    problems = []
    if not math.isfinite(log_z):
        problems.append("log_z not finite")
    if not (math.isfinite(se) and se > 0):
        problems.append("se not finite and positive")
    if not problems:
        if abs(error) > z_max * se:
            problems.append(f"|error| > {z_max:g} se")
        if abs(error) > abs_tol:
            problems.append(f"|error| > abs_tol {abs_tol:g}")
        if se_max is not None and se > se_max:
            problems.append(f"se > se_max {se_max:g}")
    assert not problems, f"{'; '.join(problems)} -- {report}"
    return error


def _report(label, value, truth, se, rule):
    what = f"{label}: " if label else ""
    return f"{what}estimate {value}, exact {truth}, se {se}; rule {rule}"


def assert_estimate(value, truth, se, *, abs_tol, label="", z_max=Z_MAX):
    """Monte Carlo estimates (a number or an array, elementwise) of quantities with exact
    values: every ``|value - truth| <= z_max se`` AND ``<= abs_tol``, every ``se`` finite and
    positive (``abs_tol`` is required: pass ``np.inf`` only where the ``se`` alone is the
    point, and say why). Returns the errors."""
    value, truth, se = (np.asarray(a, dtype=float) for a in (value, truth, se))
    error = value - truth
    rule = f"|error| <= {z_max:g} se AND |error| <= {abs_tol:g}"
    report = _report(label, value, truth, se, rule)
    assert np.all(np.isfinite(value)), f"estimate not finite -- {report}"
    assert np.all(np.isfinite(se) & (se > 0)), f"se not finite and positive -- {report}"
    assert np.all(np.abs(error) <= z_max * se), f"|error| > {z_max:g} se -- {report}"
    assert np.all(np.abs(error) <= abs_tol), f"|error| > {abs_tol:g} -- {report}"
    return error


def assert_quantiles(draws, exact, probs, ess, *, abs_tol, label=""):
    """Posterior draws against exact quantiles: the share of ``draws`` (flattened) below
    each ``exact[i]`` is ``probs[i]`` within :func:`assert_estimate`'s rule, its se the
    binomial one of ``ess`` effective draws (the ESS the result reports, so that an
    overstated ESS fails too). Returns the shares' errors."""
    draws, probs = np.ravel(draws), np.asarray(probs, dtype=float)
    below = (draws[:, None] < np.asarray(exact, dtype=float)[None, :]).mean(axis=0)
    se = np.sqrt(probs * (1.0 - probs) / ess)
    return assert_estimate(below, probs, se, abs_tol=abs_tol, label=label)


def assert_below(value, bound, se, *, slack=0.0, label="", z_max=Z_MAX):
    """An estimate whose expectation is at most ``bound`` (an ELBO, forward AIS's
    ``log Z``): ``value <= bound + z_max se + slack``."""
    value, bound, se = (np.asarray(a, dtype=float) for a in (value, bound, se))
    report = _report(label, value, bound, se, f"value <= bound + {z_max:g} se + {slack:g}")
    assert np.all(np.isfinite(se) & (se >= 0)), f"se not finite -- {report}"
    assert np.all(value <= bound + z_max * se + slack), report


def assert_above(value, bound, se, *, slack=0.0, label="", z_max=Z_MAX):
    """An estimate whose expectation is at least ``bound`` (reverse AIS's ``log Z``):
    ``value >= bound - z_max se - slack``."""
    value, bound, se = (np.asarray(a, dtype=float) for a in (value, bound, se))
    report = _report(label, value, bound, se, f"value >= bound - {z_max:g} se - {slack:g}")
    assert np.all(np.isfinite(se) & (se >= 0)), f"se not finite -- {report}"
    assert np.all(value >= bound - z_max * se - slack), report


# The fast exact-log-Z cases every method is checked on at its defaults (methods/test_ct_accuracy,
# methods/test_accuracy). The package is imported lazily: conftest imports this module, and
# tests that do not need the package (test_layering) must not fail when it does not import.
FAST_CASES = ("regression_d5", "beta_bernoulli", "normalized_density")
ACCURACY_SEED = 20261122


def fast_case(name):
    """A fresh model of one of :data:`FAST_CASES` (with its exact ``log_z``)."""
    from pymc_evidence.testing import models as tm

    factories = {
        "regression_d5": lambda: tm.conjugate_regression(d=5),
        "beta_bernoulli": tm.beta_bernoulli,
        "normalized_density": tm.normalized_density,
    }
    return factories[name]()


def check_method(case, method, *, abs_tol=0.1, se_max=0.1, random_seed=ACCURACY_SEED, **options):
    """``sample_evidence`` on ``case`` with ``method``, then :func:`assert_log_z`."""
    import pymc_evidence as pme

    idata = pme.sample_evidence(
        case.model, method=method, random_seed=random_seed, progressbar=False, **options
    )
    est = pme.log_evidence(idata)
    assert_log_z(est, case.log_z, abs_tol=abs_tol, se_max=se_max, label=f"{case.name} {method}")
    return est
