"""Models whose evidence needs no sampling: no free variables, or no data.

* No continuous free variable (only observed variables, or only discrete latent ones of
  finite support, summed out): ``log Z`` is the model's log density at its one point,
  exactly; se 0, method ``"exact"``.
* No observed variable and no potential: the evidence of no data is 1, ``log Z = 0``
  exactly (every prior is normalized), with a :class:`~pymc_evidence.ModelWarning`, since
  a model without data is more often a mistake than a question.
* An empty model has no evidence: a ``ValueError`` says so.
"""

from __future__ import annotations

import numpy as np
import pymc as pm

from ..estimators.diagnostics import ModelWarning, warn_user
from ..estimators.record import EvidenceEstimate
from ..hygiene import check_model, is_discrete
from ..results.assemble import assemble_results
from ..results.model_data import model_data_groups
from ..transforms.marginal import sum_out_discrete

__all__ = ["exact_evidence"]


def exact_evidence(model, potentials=None):
    """The result of a model whose ``log Z`` is known without sampling, else None.

    Raises
    ------
    ValueError
        For a model with no variables at all.
    """
    source = pm.modelcontext(model)
    data = list(source.observed_RVs) + list(source.potentials)
    if not source.free_RVs and not data:
        raise ValueError(
            "the model is empty (no free and no observed variables): it has no marginal "
            "likelihood. Add the data as observed variables (pm.Normal(..., observed=y))."
        )
    if any(not is_discrete(rv) for rv in source.free_RVs) and data:
        return None
    if not data:
        check_model(source, potentials=potentials, discrete=True)
        warn_user(
            "the model has no observed variables, so there is no data whose evidence to "
            "compute: p(no data) = 1 and log Z = 0 exactly. Pass the data with observed=...",
            ModelWarning,
        )
        return _result(source, 0.0, "no observed variables")
    summed = sum_out_discrete(source)
    check_model(source, potentials=potentials, discrete=summed is not None)
    target = source if summed is None else summed.model
    log_z = float(np.asarray(target.compile_logp()({})))
    how = "no free variables" if summed is None else f"summed over {', '.join(summed.names)}"
    return _result(source, log_z, how)


def _result(source, log_z: float, how: str):
    """The exact estimate, with the model's ``observed_data``/``constant_data`` (no posterior:
    nothing was sampled)."""
    est = EvidenceEstimate(log_z=log_z, se=0.0, method="exact", diagnostics={})
    return assemble_results(est, model_data_groups(source), attrs={"exact": how})
