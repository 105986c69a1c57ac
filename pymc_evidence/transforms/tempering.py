"""Continuous tempering as a model transform (Graham & Storkey 2017, joint form).

``continuous_tempering`` returns a plain ``pm.Model``: a clone of the user's model with one
extra free variable, the temperature control ``u`` with ``beta = sigmoid(u)``, and one
potential that turns the joint density into the extended target

    log p(x, u) = beta * (log f(x) - log zeta) + (1 - beta) * log q(x) + log beta'(u),

where ``f`` is the model's joint density (Jacobians included), ``q`` the normalized base and
``log beta'(u) = log sigmoid(u) + log sigmoid(-u)`` the standard logistic density of ``u``
(the Jacobian of ``beta``). Any NUTS backend samples it. The deterministic ``ct_delta``
records ``Delta(x) = log zeta + log q(x) - log f(x)``, all the estimator needs.

The base parameters and ``log zeta`` live in shared variables, so adaptation rounds update
them without rebuilding or recompiling the model (see :func:`set_base`).
"""

from __future__ import annotations

from dataclasses import dataclass

import pymc as pm
import pytensor.tensor as pt
from pytensor.graph.replace import graph_replace

from ..base.gaussian import BaseDensity, graph_form
from ..hygiene import check_model
from ..runtime.model_copy import copy_model
from ..runtime.runtime import model_space, runtime_of
from .tempered_draws import warn_tempered_draws

__all__ = ["CTSpec", "continuous_tempering", "ct_spec", "set_base", "tempered_terms"]

U_NAME = "ct_u"
BETA_NAME = "ct_beta"
DELTA_NAME = "ct_delta"
LOG_ZETA_NAME = "ct_log_zeta"


@dataclass(eq=False)
class CTSpec:
    """What an extended model needs to be read back: the source model, base and shared state."""

    source: pm.Model
    base: BaseDensity
    shared: dict
    names: tuple

    @property
    def log_zeta(self) -> float:
        """Current ``log zeta``."""
        return float(self.shared["log_zeta"].get_value())


def raveled_value_vars(model, names):
    """``model``'s value variables in the order of ``names``.

    A cloned model may list its value variables in another order than its source, so the
    raveled layout of a base is always rebuilt from its names, never from list order.
    """
    by_name = {v.name: v for v in model.value_vars}
    return [by_name[name] for name in names]


def tempered_terms(model, base, shared, names=None):
    """Symbolic ``(log f, log q)`` on ``model``'s value variables (no potentials added).

    ``shared`` comes from ``base.make_shared()``; ``names`` gives the raveling order when
    the base carries no layout of its own (a base built by hand).
    """
    names = tuple(base.names) or tuple(names or ())
    x = pt.concatenate([v.ravel() for v in raveled_value_vars(model, names)]) if names else None
    return model.logp(jacobian=True), base.logp_graph(model, shared, x)


def on_random_variables(model, graphs):
    """``graphs`` written on ``model``'s free random variables instead of its value
    variables (each value variable replaced by its transform of the variable).

    PyMC turns random variables into value variables whenever it builds a log density, so
    the result means the same; but samplers that rebuild the model first (nutpie, the JAX
    samplers) give it new value variables, and a graph on the old ones would miss inputs.
    """
    replace = {}
    for rv in model.free_RVs:
        transform = model.rvs_to_transforms.get(rv)
        value = model.rvs_to_values[rv]
        replace[value] = rv if transform is None else transform.forward(rv, *rv.owner.inputs)
    return graph_replace(list(graphs), replace, strict=False)


def check_layout(base, space):
    if tuple(base.names) and (tuple(base.names), tuple(base.sizes)) != (space.names, space.sizes):
        raise ValueError(
            "the base was fitted on a different model: its variables "
            f"{list(zip(base.names, base.sizes, strict=True))} differ from the model's "
            f"{list(zip(space.names, space.sizes, strict=True))}"
        )
    if base.ndim and base.ndim != space.ndim:
        raise ValueError(f"base has dimension {base.ndim}, the model {space.ndim}")


def check_structure(old, new):
    """Refuse a base that cannot be written into the shared variables of ``old``."""
    if graph_form(new) != graph_form(old):
        raise TypeError(
            f"cannot swap a {type(old).__name__} for a {type(new).__name__}: the compiled "
            "graph has the old base's form; build a new model (or step) for the new base"
        )
    if new.structure != old.structure:
        raise ValueError(
            f"cannot swap a {type(old).__name__} of structure {old.structure} for one of "
            f"structure {new.structure} (different dimension or number of components); "
            "build a new model (or step) for the new base"
        )


def continuous_tempering(
    base: BaseDensity,
    *,
    model: pm.Model | None = None,
    log_zeta: float | None = None,
    potentials: str | None = None,
    portable: bool = False,
    warn_tempered: bool = True,
) -> pm.Model:
    """Extend a model with a continuous temperature variable (joint continuous tempering).

    Parameters
    ----------
    base : GaussianBase, MixtureBase or PriorBase
        Normalized base density, from :func:`pymc_evidence.fit_base`.
    model : pm.Model, optional
        The model to extend; taken from the context when omitted. It is not modified.
    log_zeta : float, optional
        Overrides ``base.log_zeta`` (the guess of ``log Z`` that balances the two ends).
    potentials : {None, "likelihood"}
        How to read ``pm.Potential`` terms (see :func:`pymc_evidence.hygiene.check_model`).
    portable : bool, default False
        Write the tempering term on the random variables (:func:`on_random_variables`) so
        that samplers which rebuild the model (``nuts_sampler="nutpie"``, ``"numpyro"``)
        can compile it; PyMC's own sampler needs no rewriting.
    warn_tempered : bool, default True
        Emit the warning below; pass False once you read the trace with
        :func:`pymc_evidence.ct_evidence`.

    Returns
    -------
    pm.Model
        A new model with the free variable ``ct_u`` and deterministics ``ct_beta``,
        ``ct_delta`` and ``ct_log_zeta``. Sample it with ``pm.sample`` (or nutpie /
        numpyro) and read the trace with :func:`pymc_evidence.ct_evidence`, which gives
        the evidence and importance-resampled posterior draws: the trace's own
        ``posterior`` group holds tempered draws (``az.summary`` of it describes a target
        much wider than the posterior).

    Warns
    -----
    EvidenceWarning
        That the trace of the extended model is not a posterior sample (emitted here, as
        nothing runs at the end of ``pm.sample``).

    Examples
    --------
    >>> import pymc as pm, pymc_evidence as pme
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu", 0, 1)
    ...     _ = pm.Normal("y", mu, 1, observed=[0.3, -0.1])
    ...     base = pme.fit_base(random_seed=0, progressbar=False)
    ...     ext = pme.continuous_tempering(base, warn_tempered=False)
    >>> sorted(v.name for v in ext.free_RVs)
    ['ct_u', 'mu']
    >>> with ext:
    ...     raw = pm.sample(300, tune=300, chains=2, random_seed=0, progressbar=False)
    >>> idata = pme.ct_evidence(raw, ext)   # raw.posterior holds tempered draws
    """
    if warn_tempered:
        warn_tempered_draws("pme.continuous_tempering", "pme.ct_evidence(trace, ext)")
    model = pm.modelcontext(model)
    check_model(model, potentials=potentials)
    space = model_space(model)
    check_layout(base, space)
    if log_zeta is not None:
        base = base.with_values(log_zeta=float(log_zeta))
    shared = base.make_shared()
    ext = copy_model(model)
    with ext:
        log_f, log_q = tempered_terms(ext, base, shared, names=space.names)
        if portable:
            log_f, log_q = on_random_variables(ext, [log_f, log_q])
        u = pm.Logistic(U_NAME, 0.0, 1.0, initval=0.0)
        beta = pm.Deterministic(BETA_NAME, pm.math.sigmoid(u))
        log_zeta_t = shared["log_zeta"]
        tempering = (beta - 1.0) * log_f + (1.0 - beta) * log_q - beta * log_zeta_t
        pm.Potential("ct_tempering", tempering)
        pm.Deterministic(DELTA_NAME, log_zeta_t + log_q - log_f)
        pm.Deterministic(LOG_ZETA_NAME, log_zeta_t)
    spec = CTSpec(source=model, base=base, shared=shared, names=space.names)
    runtime_of(ext).origin = spec  # read back by ct_spec
    return ext


def ct_spec(ext: pm.Model) -> CTSpec:
    """The :class:`CTSpec` of a model built by :func:`continuous_tempering` (kept as the
    :attr:`~pymc_evidence.runtime.runtime.ModelRuntime.origin` of its runtime)."""
    spec = runtime_of(ext).origin if isinstance(ext, pm.Model) else None
    if not isinstance(spec, CTSpec):
        raise ValueError("this model was not built by pymc_evidence.continuous_tempering")
    return spec


def set_base(ext: pm.Model, base: BaseDensity) -> None:
    """Replace the base and ``log zeta`` of an extended model in place (no recompilation).

    The new base must have the structure of the old one (same type, dimension and, for a
    mixture, number of components): its values are written into the model's shared
    variables, so functions compiled from ``ext`` before see the new base.

    Raises
    ------
    TypeError
        When the base is of another type.
    ValueError
        When it has another structure or layout.
    """
    spec = ct_spec(ext)
    check_structure(spec.base, base)
    check_layout(base, model_space(spec.source))
    base.assign(spec.shared)
    spec.base = base
