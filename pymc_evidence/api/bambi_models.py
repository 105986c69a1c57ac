"""bambi models as input: the PyMC model a bambi model builds, and its posterior in bambi's
names and conventions.

A :class:`bambi.Model` is a formula, data and priors; its PyMC model
(``bmb_model.backend.model``) exists once ``bmb_model.build()`` has run, and writes a few
things in ways bambi undoes when it returns draws: predictors centred (the ``Intercept``
variable is the intercept at the predictors' means), group effects non-centred
(``1|g_offset``), the linear predictor ``mu`` as a deterministic over the rows. bambi's own
``fit()`` passes its draws through the backend's cleaning step, which drops the offsets and
the per-row deterministics and moves the intercept back to the uncentred predictors. The
evidence is the same in either set of coordinates (the shift of the intercept is linear,
of unit Jacobian), so only the posterior is cleaned here, by bambi's own step.

bambi is not a dependency: a model is recognised by its type's module, never imported.
"""

from __future__ import annotations

from ..compat import get_group, set_group
from ..estimators.diagnostics import ModelWarning, warn_user

__all__ = ["bambi_posterior", "is_bambi_model", "pymc_model_of"]


def is_bambi_model(obj) -> bool:
    """Whether ``obj`` is a :class:`bambi.Model` (recognised without importing bambi).

    Examples
    --------
    >>> is_bambi_model(object())
    False
    """
    cls = type(obj)
    return cls.__module__.split(".")[0] == "bambi" and cls.__name__ == "Model"


def pymc_model_of(model):
    """The PyMC model of ``model``: a bambi model's, built first if it is not; anything
    else as it is.

    Examples
    --------
    >>> import pymc as pm
    >>> m = pm.Model()
    >>> pymc_model_of(m) is m
    True
    """
    if not is_bambi_model(model):
        return model
    if not getattr(model, "built", False) or getattr(model, "backend", None) is None:
        model.build()
    return model.backend.model


def bambi_posterior(idata, bmb_model):
    """``idata`` with its posterior as bambi's ``fit()`` returns it: offsets and per-row
    deterministics dropped, the intercept of centred predictors moved back; the
    ``log_evidence`` group untouched. ``idata`` itself when ``bmb_model`` is None.

    bambi's own cleaning step is used (``backend._clean_results``, what ``fit()`` calls),
    so that the names follow bambi's version; if that step is missing or fails, the
    posterior stays the PyMC model's and a :class:`~pymc_evidence.ModelWarning` says so.

    Examples
    --------
    >>> bambi_posterior("any result", None)
    'any result'
    """
    if bmb_model is None:
        return idata
    try:
        _drop_response_params(idata, bmb_model)
        clean = bmb_model.backend._clean_results
        return clean(idata, omit_offsets=True, include_response_params=False)
    except Exception as err:  # another bambi version's cleaning step
        warn_user(
            "the posterior keeps the variables of the bambi model's PyMC model (offsets, "
            "'mu', the intercept of centred predictors): bambi's cleaning step failed "
            f"({type(err).__name__}: {err}). The evidence is unaffected.",
            ModelWarning,
        )
        return idata


def _drop_response_params(idata, bmb_model) -> None:
    """Drop the likelihood's parameters that the PyMC model holds as deterministics over
    the rows (``mu``): bambi's ``fit()`` does not sample them."""
    model = bmb_model.backend.model
    posterior = get_group(idata, "posterior")
    params = bmb_model.family.likelihood.params
    drop = [
        name
        for name in params
        if name in posterior and model.named_vars.get(name) in model.deterministics
    ]
    set_group(idata, "posterior", posterior.drop_vars(drop))
