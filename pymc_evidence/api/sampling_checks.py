"""Which of ``pm.sample``'s arguments a call's methods can honour, checked before any work.

Particle methods (``smc``, ``arm``, ``ais``) run no NUTS: their sizes are ``n_particles``
and ``n_runs``, and ``draws``/``tune``/``chains`` or the NUTS arguments given to them alone
are refused with a ``TypeError`` rather than silently reinterpreted. The tempering step
methods (``gibbs_ct``, ``st``) run inside PyMC's own sampler, so another ``nuts_sampler``
is a ``ValueError``.
"""

from __future__ import annotations

import pymc as pm
import xarray as xr

from ..compat import get_group, group_names, set_group
from ..methods import REGISTRY
from ..methods._remote import check_executor
from ..nuts import NUTS_ARGS

__all__ = ["check_executor_use", "check_sampling", "with_log_likelihood"]

_SIZES = ("draws", "tune", "chains")


def check_sampling(specs, sampling) -> None:
    """Refuse arguments no method of the call uses, and backends a step method cannot use.

    Raises
    ------
    TypeError
        ``draws``/``tune``/``chains`` or a NUTS argument given to methods that run no NUTS.
    ValueError
        A ``nuts_sampler`` other than ``"pymc"`` for ``gibbs_ct`` or ``st``.
    """
    if all(spec.nuts == "none" for spec in specs):
        refused = [name for name in _SIZES + NUTS_ARGS if name in sampling.given]
        if refused:
            sizes = "; ".join(f"{s.name}: {s.sizes}" for s in specs)
            raise TypeError(
                f"method(s) {[s.name for s in specs]} run no NUTS, so {refused} (pm.sample's "
                f"arguments) are not used and are not reinterpreted; set the sizes with {sizes}"
            )
    steps = [spec.name for spec in specs if spec.nuts == "step"]
    if steps and sampling.nuts_sampler not in (None, "pymc"):
        raise ValueError(
            f"method(s) {steps} run this package's step methods inside PyMC's own sampler; "
            f"nuts_sampler={sampling.nuts_sampler!r} cannot run them (use 'pymc' or leave it None)"
        )


def check_executor_use(executor, specs) -> None:
    """Refuse an ``executor`` that is not one, or that no method of the call would use.

    Raises
    ------
    TypeError
        ``executor`` has no ``submit`` method.
    ValueError
        No method of the call sends its runs to an executor.
    """
    check_executor(executor)
    if executor is not None and not any(spec.distributes for spec in specs):
        users = [name for name, spec in REGISTRY.items() if spec.distributes]
        raise ValueError(
            f"executor= takes the independent runs of {users}; method(s) "
            f"{[s.name for s in specs]} have none to send (to run many models or seeded "
            "replicas on an executor, use pme.compare_models(..., executor=...))"
        )


def with_log_likelihood(result, problem):
    """``result`` with a ``log_likelihood`` group of its ``posterior`` draws when the call
    asked for one (``idata_kwargs={"log_likelihood": True}``, as :func:`pymc.sample`), so
    that ``az.loo`` works on evidence results of any method."""
    wanted = problem.sampling.idata_kwargs.get("log_likelihood", False)
    if not wanted or "posterior" not in group_names(result):
        return result
    names = None if wanted is True else list(wanted)
    computed = pm.compute_log_likelihood(
        result,
        var_names=names,
        extend_inferencedata=False,
        model=problem.source,
        progressbar=False,
    )
    if not isinstance(computed, xr.Dataset):  # PyMC 5 wraps the group in InferenceData
        computed = get_group(computed, "log_likelihood")
    set_group(result, "log_likelihood", computed)
    return result
