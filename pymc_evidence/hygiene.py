"""Checks that a PyMC model has a well-defined, normalized marginal likelihood.

``log Z`` is only meaningful when every term of the joint density is a normalized density:
improper priors, unnormalized ``pm.Potential`` terms, minibatch scaling and discrete free
variables all break that, each in its own way. These checks turn each case into an error that
says what is wrong and what to do, instead of a silently wrong number.
"""

from __future__ import annotations

import pymc as pm

from .estimators.diagnostics import ModelWarning, warn_user

__all__ = ["ModelHygieneError", "check_model", "is_discrete", "POTENTIAL_ROLES"]

#: What a user may say a ``pm.Potential`` term is.
POTENTIAL_ROLES = ("likelihood",)

_IMPROPER_OPS = {"FlatRV", "HalfFlatRV"}
#: LKJ priors, whose density PyMC 5 does not normalize (see :func:`check_model`).
_LKJ_OPS = {"LKJCorrRV", "_LKJCholeskyCovRV", "LKJCholeskyCovRV"}


def is_discrete(rv) -> bool:
    """True for a variable of integer or boolean dtype."""
    return rv.type.dtype.startswith(("int", "uint", "bool"))


class ModelHygieneError(ValueError):
    """The model's marginal likelihood is undefined or cannot be estimated as written."""


def check_model(model: pm.Model, *, potentials: str | None = None, discrete: bool = False) -> None:
    """Raise :class:`ModelHygieneError` if ``log Z`` of ``model`` is not well defined.

    Parameters
    ----------
    model : pm.Model
        The model to check.
    potentials : {None, "likelihood"}
        What ``pm.Potential`` terms in the model are. ``None`` (default) refuses models with
        potentials. ``"likelihood"`` treats every potential as part of the data density: the
        evidence is then the integral of prior times likelihood times ``exp(potential)``.
    discrete : bool, default False
        Accept discrete free variables (their caller sums them out: :func:`pymc_evidence.
        sample_evidence` does for finite supports).

    Raises
    ------
    ModelHygieneError
        For improper priors (``Flat``, ``HalfFlat``), discrete free variables, potentials
        whose role was not given, and minibatch (``total_size``) scaling.

    Examples
    --------
    >>> import pymc as pm
    >>> with pm.Model() as model:
    ...     x = pm.Flat("x")
    >>> check_model(model)
    Traceback (most recent call last):
    ...
    pymc_evidence.hygiene.ModelHygieneError: The prior of 'x' is improper (FlatRV): its ...
    """
    if potentials is not None and potentials not in POTENTIAL_ROLES:
        if potentials == "prior":
            raise NotImplementedError(
                "potentials='prior' would need the normalizing constant of the constrained "
                "prior, which pymc_evidence does not estimate yet. Write the constraint as a "
                "proper prior, or as a likelihood term and pass potentials='likelihood'."
            )
        raise ValueError(f"potentials must be one of {POTENTIAL_ROLES} or None, got {potentials!r}")
    for rv in model.free_RVs:
        op_name = type(rv.owner.op).__name__
        if op_name in _IMPROPER_OPS:
            raise ModelHygieneError(
                f"The prior of {rv.name!r} is improper ({op_name}): its marginal likelihood "
                "is undefined (any constant multiple of an improper prior is as good as "
                "another). Give it a proper prior, e.g. pm.Normal or pm.HalfNormal."
            )
        if not discrete and is_discrete(rv):
            raise ModelHygieneError(
                f"{rv.name!r} is a discrete free variable. Here it needs a continuous space "
                "(gradient-based methods); pymc_evidence.sample_evidence sums out discrete "
                "variables of finite support by itself, or sum it out in the model "
                "(e.g. pm.Mixture)."
            )
    _warn_unnormalized_lkj(model)
    if model.potentials and potentials is None:
        names = ", ".join(repr(p.name) for p in model.potentials)
        raise ModelHygieneError(
            f"The model has pm.Potential terms ({names}). A potential is an unnormalized "
            "density term, so the evidence depends on what it means. If it is part of the "
            "likelihood (a custom data density), pass potentials='likelihood'. If it "
            "penalizes or constrains the prior, that prior is unnormalized: the evidence is "
            "then log Z(the model) - log Z(the model written again without its observed "
            "variables), each estimated with potentials='likelihood'."
        )
    scaled = [  # PyMC >= 5.10 wraps total_size RVs in a MinibatchRandomVariable
        rv.name
        for rv in model.basic_RVs
        if type(rv.owner.op).__name__ == "MinibatchRandomVariable"
        or getattr(model, "rvs_to_total_sizes", {}).get(rv) is not None
    ]
    if scaled:
        raise ModelHygieneError(
            f"Variables {scaled} use total_size (minibatch scaling). The scaled density is a "
            "stochastic estimate of the full-data likelihood, so log Z from it is meaningless. "
            "Build the model on the full data."
        )


def _warn_unnormalized_lkj(model: pm.Model) -> None:
    """Warn on PyMC 5 when the model has an LKJ prior: PyMC 5's ``LKJCorr`` and
    ``LKJCholeskyCov`` add the log normalizing constant where they should subtract it
    (checked for ``n = 2`` at ``eta = 1, 2, 3.5``; PyMC 6 is right), so ``log Z`` of PyMC's
    density is off from the normalized model's by twice that constant."""
    if int(pm.__version__.split(".")[0]) >= 6:
        return
    names = [rv.name for rv in model.free_RVs if type(rv.owner.op).__name__ in _LKJ_OPS]
    if names:
        warn_user(
            f"{names}: PyMC {pm.__version__}'s LKJ density is not normalized (its log "
            "normalizing constant c enters with the wrong sign; PyMC 6 is right), so log Z "
            "here is PyMC's density's, 2c above the normalized model's (n=2: c = (2 eta - 1) "
            "log 2 + log B(eta, eta); eta=2: log(16/9) = 0.575 nats). Bayes factors between "
            "models with the same LKJ prior are unaffected",
            ModelWarning,
        )
