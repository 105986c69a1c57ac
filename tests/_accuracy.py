"""The one accuracy rule of the test suite: an estimate of log Z against an exact truth.

``assert_log_z(est, truth, abs_tol=...)`` passes only when all of these hold:

- ``log_z`` is finite and ``se`` is finite and positive,
- ``|log_z - truth| <= 4 se`` (the error is explained by the reported error bar), AND
- ``|log_z - truth| <= abs_tol`` (the estimate is useful, whatever its error bar says),
- and, where ``se_max`` is given, ``se <= se_max`` (the error bar itself is small enough).

Both bounds, never either: a huge ``se`` must not excuse a large error, and a tiny error
must not hide a miscalibrated ``se``. Tests import it directly (``from _accuracy import
assert_log_z``: pytest puts ``tests/`` on ``sys.path``, there is no package) or take the
``assert_log_z`` fixture of ``conftest.py``.
"""

from __future__ import annotations

import math

__all__ = ["ACCURACY_SEED", "FAST_CASES", "assert_log_z", "check_method", "fast_case"]


def assert_log_z(est, truth, *, abs_tol, label="", se_max=None, z_max=4.0):
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


# The fast exact-log-Z cases every method is checked on at its defaults (test_ct_accuracy,
# test_method_accuracy). The package is imported lazily: conftest imports this module, and
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
