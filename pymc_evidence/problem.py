"""One evidence problem: everything a method needs, made once per call.

:class:`EvidenceProblem` turns a PyMC model into the problem every method solves: the model
(checked once), its raveled unconstrained space, the record of the base fit (fitted once,
when the problem is built, for methods that use one), the compiled batched density, the
internal NUTS run that reverse-direction methods start from, and one
:class:`numpy.random.SeedSequence` from which every random stream of the call is derived.

Seeds. ``random_seed`` becomes one ``SeedSequence``; each named stream (:data:`STREAMS`) is
its child with a fixed spawn key, so a stream does not depend on which other streams a
method happened to use or in which order: the same seed gives the same number, in any
process, whatever ran before.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pymc as pm
import xarray as xr

from .basefit.pipeline import BaseFit, fit_record
from .basefit.plan import BASE_CHOICES, FULLRANK_MAX_DIM, ModelShape, plan_for, warn_fitted_funnel
from .compat import get_group, group_names
from .engines.batched import BatchedDensity, batched_log_densities
from .hygiene import check_model
from .nuts import SamplingArgs, run_nuts
from .results.model_data import dims_of
from .runtime import runtime_of
from .runtime.batched_logp import batched_logp
from .runtime.space import ModelSpace, in_chunks
from .transforms.discrete_values import stale_deterministics
from .transforms.group_effects import GroupEffectsOut
from .transforms.group_nested import GroupNestedOut
from .transforms.group_nested_quadrature import GroupNestedQuadratureOut
from .transforms.group_pair_effects import GroupPairOut
from .transforms.integrated import IntegratedOut
from .transforms.prepared import Summed, reparametrized, summed_out
from .transforms.reparam import centred_scales, reparam_info

__all__ = ["STREAMS", "EvidenceProblem", "SamplingArgs", "seed_sequence"]

#: The named random streams of one call (the spawn key of each is its index here).
STREAMS = ("base", "nuts", "method", "resample", "init", "pilot", "discrete", "more_chains",
           "defensive", "recentre")  # fmt: skip
#: Target acceptance of internal NUTS runs whose draws start reverse-direction methods.
REFERENCE_TARGET_ACCEPT = 0.95
#: What a problem fits when it is built (:meth:`EvidenceProblem.build`'s ``fit``).
FITS = (None, "base", "tempering")
#: What :func:`~pymc_evidence.transforms.prepared.summed_out` integrates (the rest it sums):
#: group effects, and Gaussian latents.
_GROUPS = (GroupEffectsOut, GroupPairOut, GroupNestedOut, GroupNestedQuadratureOut)
#: Rows per call of the batched log density in :meth:`EvidenceProblem.log_f`.
CHUNK = 2048


def seed_sequence(random_seed) -> np.random.SeedSequence:
    """The root ``SeedSequence`` of ``random_seed`` (None, int, sequence of ints,
    ``SeedSequence`` or ``Generator``; a Generator is consumed once).

    Examples
    --------
    >>> seed_sequence(1).entropy
    1
    """
    if isinstance(random_seed, np.random.SeedSequence):
        return random_seed
    if isinstance(random_seed, np.random.Generator):
        return np.random.SeedSequence(int(random_seed.integers(2**63)))
    if isinstance(random_seed, np.random.RandomState):
        return np.random.SeedSequence(int(random_seed.randint(2**31)))
    return np.random.SeedSequence(random_seed)


class ReferenceRuns:
    """The internal NUTS runs of one call whose draws start reverse-direction methods, one
    per target acceptance, made when a method first asks (seeded by stream ``"nuts"``).

    One explicit object, made by :meth:`EvidenceProblem.build` and shared by every
    :meth:`~EvidenceProblem.for_method` view, so that a cross-check of ``bar`` and ``rais``
    samples once; whether a method needs a run is known only inside it (the user's
    ``posterior=`` draws, ``lis``'s direction), so the runs are not made eagerly.

    Examples
    --------
    >>> ReferenceRuns().samplers
    ()
    """

    def __init__(self):
        self._runs: dict[float, object] = {}
        self._sampler: str | None = None

    def get(self, model, sampling: SamplingArgs, seed: int, target_accept: float):
        """The run at ``target_accept`` (made now where it is the first ask)."""
        if target_accept not in self._runs:
            nuts = {"random_seed": seed, "target_accept": target_accept}
            self._runs[target_accept] = run_nuts(model, sampling, **nuts)
            self._sampler = sampling.sampler
        return self._runs[target_accept]

    @property
    def samplers(self) -> tuple[str, ...]:
        """The NUTS backend of the runs made so far (none: ``()``)."""
        return () if self._sampler is None else (self._sampler,)


@dataclass(eq=False, frozen=True)
class EvidenceProblem:
    """A model prepared for evidence estimation; build with :meth:`build`.

    Immutable: the model, its space, the seeds, the call's options and the record of the
    base fit (:class:`~pymc_evidence.basefit.pipeline.BaseFit`, fitted once when the problem
    is built for methods that start from a base). The reference NUTS runs live in one
    :class:`ReferenceRuns` that every :meth:`for_method` view shares.

    Attributes
    ----------
    model : pm.Model
        The model the methods work on: the user's, or its non-centred reparametrisation
        (:func:`~pymc_evidence.transforms.reparametrize`; same ``log Z``).
    source : pm.Model
        The model the user gave.
    space : ModelSpace
        Its raveled unconstrained space (compiled functions cached there).
    seed : numpy.random.SeedSequence
        Root of every random stream of the call (see :meth:`rng`).
    sampling : SamplingArgs
        ``draws``, ``tune``, ``chains``, ``cores``, ``progressbar``.
    potentials : {None, "likelihood"}
        How ``pm.Potential`` terms are read.
    base_spec : str or base
        ``"auto"``, ``"advi"``, ``"fullrank_advi"``, ``"prior"`` or a fitted base.
    base_kwargs : dict
        The call's ``base_kwargs`` (:func:`~pymc_evidence.basefit.plan.plan_for`).
    reparam : {"auto", None}
        The :meth:`build` argument (for a worker that prepares the model again).
    fitted : BaseFit or None
        The record of the base fit (None: built without a base).

    Examples
    --------
    >>> import pymc as pm
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu", 0, 1)
    ...     _ = pm.Normal("y", mu, 1, observed=[0.3])
    >>> problem = EvidenceProblem.build(model, random_seed=1, base="prior", fit="base")
    >>> problem.space.ndim, problem.base.kind
    (1, 'prior')
    """

    model: pm.Model
    space: ModelSpace
    seed: np.random.SeedSequence
    source: pm.Model | None = None
    sampling: SamplingArgs = field(default_factory=SamplingArgs)
    potentials: str | None = None
    base_spec: object = "auto"
    base_kwargs: dict = field(default_factory=dict)
    reparam: str | None = "auto"
    fitted: BaseFit | None = None
    references: ReferenceRuns = field(default_factory=ReferenceRuns, repr=False)
    #: Which method of a cross-check this view is for: each gets its own ``"method"``
    #: stream (see :meth:`for_method`).
    method_slot: int = 0
    #: The source's discrete variables summed out (:mod:`~pymc_evidence.transforms.marginal`)
    #: or a Gaussian latent integrated (:mod:`~pymc_evidence.transforms.gaussian_latent`).
    summed: Summed | None = None

    @classmethod
    def build(
        cls,
        model: pm.Model | None = None,
        *,
        random_seed=None,
        sampling: SamplingArgs | None = None,
        potentials: str | None = None,
        base="auto",
        base_kwargs: dict | None = None,
        reparam: str | None = "auto",
        backend: str = "auto",
        fit: str | None = None,
    ) -> EvidenceProblem:
        """Check ``model`` (once), prepare its space and fit what ``fit`` asks for.

        ``reparam="auto"`` integrates Gaussian latents of a Gaussian likelihood out
        (:mod:`~pymc_evidence.transforms.gaussian_latent`) and works on the non-centred form
        of the model when it has centred location-scale variables (``reparam=None`` keeps
        the model as written, its discrete variables summed out). A fitted ``base`` object
        lives on the model as written, so it turns ``"auto"`` off. ``backend`` becomes the
        backend of the prepared models' runtimes (``ModelRuntime.backend``). ``fit``: None
        fits nothing, ``"base"`` the base, ``"tempering"`` also the tempering methods' base
        (what a method needs: its spec's ``uses_base`` and ``tempering``).
        """
        source = pm.modelcontext(model)
        if isinstance(base, str) and base not in BASE_CHOICES:
            raise ValueError(f"base must be one of {BASE_CHOICES} or a fitted base, got {base!r}")
        if reparam not in ("auto", None):
            raise ValueError(f"reparam must be 'auto' or None, got {reparam!r}")
        if fit not in FITS:
            raise ValueError(f"fit must be one of {FITS}, got {fit!r}")
        auto = reparam == "auto" and (base is None or isinstance(base, str))
        summed = summed_out(source, integrate=auto)
        discrete = summed is not None and not isinstance(summed, IntegratedOut)
        check_model(source, potentials=potentials, discrete=discrete)
        model = source if summed is None else summed.model
        if summed is not None:
            potentials = "likelihood"  # the sum is a potential; the source's were checked
        if auto:
            model = reparametrized(model)
        runtime_of(source if summed is None else summed.model, backend=backend)
        problem = cls(
            model=model,
            source=source,
            space=runtime_of(model, backend=backend).space,
            seed=seed_sequence(random_seed),
            sampling=sampling or SamplingArgs(),
            potentials=potentials,
            summed=summed,
            base_spec=base,
            base_kwargs=dict(base_kwargs or {}),
            reparam=reparam,
        )
        if fit is None:
            return problem
        return problem.with_fitted(problem.fit_base(tempering=fit == "tempering"))

    @property
    def integrated(self) -> tuple[str, ...]:
        """Names of the Gaussian latents or group effects integrated out of the model."""
        return self.summed.names if isinstance(self.summed, IntegratedOut) else ()

    @property
    def hyperparameters_only(self) -> bool:
        """True when a hierarchy's group effects were integrated out (one bump is left)."""
        return isinstance(self.summed, _GROUPS)

    @property
    def reparametrized(self) -> tuple[str, ...]:
        """Names of the variables the problem's model has in non-centred form."""
        return tuple(reparam_info(self.model).get("rewritten", {}))

    def for_method(self, slot: int) -> EvidenceProblem:
        """The view of method ``slot`` of a cross-check: its own ``"method"`` stream, the
        same memoised base and reference runs."""
        return replace(self, method_slot=int(slot))

    @property
    def reference_samplers(self) -> tuple[str, ...]:
        """The NUTS backend of the reference runs made so far (none: ``()``)."""
        return self.references.samplers

    # -- random streams -------------------------------------------------------------------
    def seed_of(self, stream: str) -> np.random.SeedSequence:
        """The ``SeedSequence`` of a named stream (a fixed child of :attr:`seed`)."""
        if stream not in STREAMS:
            raise ValueError(f"unknown stream {stream!r}; streams are {STREAMS}")
        key = self.seed.spawn_key + (STREAMS.index(stream),)
        if stream == "method" and self.method_slot:  # slot 0 keeps single-method keys
            key += (self.method_slot,)
        return np.random.SeedSequence(self.seed.entropy, spawn_key=key)

    def rng(self, stream: str) -> np.random.Generator:
        """A fresh Generator of a named stream (the same one on every call)."""
        return np.random.default_rng(self.seed_of(stream))

    def int_seed(self, stream: str) -> int:
        """An integer seed of a named stream, for APIs that take one (``pm.sample``)."""
        return int(self.seed_of(stream).generate_state(1)[0] >> 1)

    # -- base and densities ---------------------------------------------------------------
    @property
    def shape(self) -> ModelShape:
        """What the base policy reads of the model (:mod:`~pymc_evidence.basefit.plan`)."""
        small = self.space.ndim <= FULLRANK_MAX_DIM
        funnels = tuple(centred_scales(self.model)) if small else ()
        return ModelShape(self.space.ndim, funnels, self.hyperparameters_only)

    def fit_base(self, *, tempering: bool = False) -> BaseFit:
        """The record of this problem's base: the call's base fitted by the pipeline
        (:func:`~pymc_evidence.basefit.pipeline.fit_record`, streams ``"base"``,
        ``"defensive"`` and ``"recentre"``), or the fitted base it was given."""
        if not isinstance(self.base_spec, str):
            warn_fitted_funnel(self.shape, type(self.base_spec).__name__)
            return BaseFit.given(self.base_spec)
        progressbar = self.sampling.progressbar
        plan = plan_for(self.base_spec, self.shape, self.base_kwargs, tempering=tempering,
                        progressbar=progressbar)  # fmt: skip
        seeds = self.seed_of("base"), self.seed_of("defensive"), self.seed_of("recentre")
        return fit_record(self.space, plan, *seeds, progressbar=progressbar)

    def with_fitted(self, fitted: BaseFit) -> EvidenceProblem:
        """This problem with the record of a base fitted elsewhere on its model."""
        return replace(self, fitted=fitted)

    @property
    def base(self):
        """The normalized base density (see :attr:`fitted`)."""
        return self._fitted().base

    @property
    def tempering_base(self):
        """The base of ``ct``, ``gibbs_ct`` and ``st``
        (:attr:`~pymc_evidence.basefit.pipeline.BaseFit.tempering`): the fit itself where
        :attr:`base` is its widened copy, and the fits as a mixture where the base merged
        distinct fits into one Gaussian (``smc`` keeps the merged Gaussian: all its
        particles move together, the modes in proportion)."""
        tempering = self._fitted().tempering
        if tempering is None:
            raise ValueError("the problem was built without the tempering base (fit='base')")
        return tempering

    def _fitted(self) -> BaseFit:
        if self.fitted is None:
            raise ValueError(
                "the problem was built without a base: build it with fit='base' (or "
                "'tempering'), or give it one with with_fitted"
            )
        return self.fitted

    def density(self) -> BatchedDensity:
        """The batched ``log f``, ``log q`` and gradients (compiled once per model and base)."""
        return batched_log_densities(self.model, self.base)

    def base_draws(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` exact draws from the base, shape ``(n, d)``."""
        return self.base.sample(int(n), rng)

    # -- posterior draws ------------------------------------------------------------------
    def log_f(self, x: np.ndarray) -> np.ndarray:
        """The model's joint log density (Jacobians included) at every row of ``x`` (any
        leading shape), by one compiled batched function, in chunks of :data:`CHUNK` rows."""
        density = batched_logp(self.space)
        flat = np.asarray(x, dtype=float).reshape(-1, self.space.ndim)
        out = [density(flat[i : i + CHUNK])[0] for i in range(0, flat.shape[0], CHUNK)]
        return np.concatenate(out).reshape(np.shape(x)[:-1])

    def reference_posterior(self, posterior=None, *, target_accept=REFERENCE_TARGET_ACCEPT):
        """Posterior draws to start from: ``posterior`` when given (an InferenceData or
        DataTree with a ``posterior`` group), else one internal NUTS run with the call's
        sampling arguments, seeded by stream ``"nuts"`` (made once per problem and
        ``target_accept``, in :attr:`references`)."""
        if posterior is not None:
            if not group_names_safe(posterior) or "posterior" not in group_names(posterior):
                raise ValueError("posterior= must be sampling results with a 'posterior' group")
            return posterior
        return self.references.get(self.model, self.sampling, self.int_seed("nuts"), target_accept)

    def unconstrained(self, posterior) -> np.ndarray:
        """Raveled unconstrained draws ``(chain, draw, d)`` of a ``posterior`` group."""
        group = get_group(posterior, "posterior") if group_names_safe(posterior) else posterior
        values = {rv.name: group[rv.name].values for rv in self.model.free_RVs}
        return self.space.unconstrain(values)

    def posterior_dataset(self, x: np.ndarray):
        """A ``posterior`` group from raveled unconstrained draws ``x`` of shape
        ``(chain, draw, d)``: the free variables and deterministics, with the model's dims and
        coords (so a reparametrised model still shows the variables the user wrote)."""
        model = self.model
        x = np.asarray(x, dtype=float)
        n_chain, n_draw = x.shape[:2]
        stale = set()  # computed again from the draws of what was summed out or integrated
        if self.summed is not None and self.source is not None:
            stale = set(stale_deterministics(self.source, self.summed.names))
        kept = [d for d in model.deterministics if d.name not in stale]
        outputs = list(model.free_RVs) + kept
        fn = self.space.rows_function(
            "posterior", lambda: model.replace_rvs_by_values(outputs)
        )  # compiled once per model
        rows = in_chunks(fn, x.reshape(-1, x.shape[-1]))
        data, coords = {}, {"chain": np.arange(n_chain), "draw": np.arange(n_draw)}
        for i, var in enumerate(outputs):
            values = np.asarray(rows[i]).reshape((n_chain, n_draw) + np.shape(rows[i])[1:])
            dims = dims_of(model, var.name, values.shape[2:])
            data[var.name] = (("chain", "draw") + dims, values)
            for dim in dims:
                if dim in model.coords and model.coords[dim] is not None:
                    coords[dim] = np.asarray(model.coords[dim])
        return xr.Dataset(data, coords=coords)


def group_names_safe(obj) -> bool:
    """True when ``obj`` is a results container (rather than one dataset)."""
    try:
        group_names(obj)
    except TypeError:
        return False
    return True
