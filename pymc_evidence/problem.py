"""One evidence problem: everything a method needs, made once per call.

:class:`EvidenceProblem` turns a PyMC model into the problem every method solves: the model
(checked once), its raveled unconstrained space, the normalized base density (fitted once,
lazily, only by methods that use one), the compiled batched density, the internal NUTS run
that reverse-direction methods start from, and one :class:`numpy.random.SeedSequence` from
which every random stream of the call is derived.

Seeds. ``random_seed`` becomes one ``SeedSequence``; each named stream (:data:`STREAMS`) is
its child with a fixed spawn key, so a stream does not depend on which other streams a
method happened to use or in which order: the same seed gives the same number, in any
process, whatever ran before.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace

import numpy as np
import pymc as pm
import xarray as xr

from .base import fit_base, runtime_of
from .base.batched_logp import batched_logp
from .base.space import ModelSpace
from .base.widen import defend, defensive_widths
from .compat import get_group, group_names
from .engines.batched import BatchedDensity, batched_log_densities
from .estimators.diagnostics import BaseFitWarning, warn_user
from .hygiene import check_model
from .nuts import SamplingArgs, run_nuts
from .results.model_data import dims_of
from .transforms.gaussian_latent import GaussianOut
from .transforms.group_effects import GroupEffectsOut
from .transforms.group_pair_effects import GroupPairOut
from .transforms.marginal import SummedOut
from .transforms.prepared import reparametrized, summed_out
from .transforms.reparam import centred_scales, reparam_info

__all__ = ["STREAMS", "EvidenceProblem", "SamplingArgs", "seed_sequence"]

#: The named random streams of one call (the spawn key of each is its index here).
STREAMS = ("base", "nuts", "method", "resample", "init", "pilot", "discrete", "more_chains",
           "defensive")  # fmt: skip
#: Target acceptance of internal NUTS runs whose draws start reverse-direction methods.
REFERENCE_TARGET_ACCEPT = 0.95
#: What ``base=`` may name; ``"auto"``: full-rank ADVI up to :data:`FULLRANK_MAX_DIM`
#: dimensions, mean-field or the Laplace Gaussian above (``docs/methods``).
BASE_CHOICES = ("auto", "advi", "fullrank_advi", "prior")
FULLRANK_MAX_DIM = 30
#: Up to here ``"auto"`` also fits full-rank ADVI above :data:`FULLRANK_MAX_DIM` and keeps
#: the better base.
FULLRANK_TRY_MAX_DIM = 100
_log = logging.getLogger("pymc_evidence")
#: What :func:`~pymc_evidence.transforms.prepared.summed_out` integrates (the rest it sums):
#: group effects, and Gaussian latents.
_GROUPS = (GroupEffectsOut, GroupPairOut)
_INTEGRATED = (GaussianOut, *_GROUPS)
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


@dataclass(eq=False, frozen=True)
class EvidenceProblem:
    """A model prepared for evidence estimation; build with :meth:`build`.

    Immutable: what is made on first use (the base, the tempering base, the reference NUTS
    runs) is memoised in one store that every :meth:`for_method` view shares, so a
    cross-check fits each once.

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
        Passed to :func:`pymc_evidence.fit_base`.
    reparam : {"auto", None}
        The :meth:`build` argument (for a worker that prepares the model again).

    Examples
    --------
    >>> import pymc as pm
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu", 0, 1)
    ...     _ = pm.Normal("y", mu, 1, observed=[0.3])
    >>> problem = EvidenceProblem.build(model, random_seed=1, base="prior")
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
    #: The base, the tempering base and the reference NUTS runs, made on first use.
    _made: dict = field(default_factory=dict, repr=False)
    #: Which method of a cross-check this view is for: each gets its own ``"method"``
    #: stream (see :meth:`for_method`).
    method_slot: int = 0
    #: The source's discrete variables summed out (:mod:`~pymc_evidence.transforms.marginal`)
    #: or a Gaussian latent integrated (:mod:`~pymc_evidence.transforms.gaussian_latent`).
    summed: SummedOut | GaussianOut | GroupEffectsOut | GroupPairOut | None = None

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
    ) -> EvidenceProblem:
        """Check ``model`` (once) and prepare its space; nothing is fitted or sampled yet.

        ``reparam="auto"`` integrates Gaussian latents of a Gaussian likelihood out
        (:mod:`~pymc_evidence.transforms.gaussian_latent`) and works on the non-centred form
        of the model when it has centred location-scale variables (``reparam=None`` keeps
        the model as written, its discrete variables summed out). A fitted ``base`` object
        lives on the model as written, so it turns ``"auto"`` off. ``backend`` becomes the
        backend of the prepared models' runtimes (``ModelRuntime.backend``).
        """
        source = pm.modelcontext(model)
        if isinstance(base, str) and base not in BASE_CHOICES:
            raise ValueError(f"base must be one of {BASE_CHOICES} or a fitted base, got {base!r}")
        if reparam not in ("auto", None):
            raise ValueError(f"reparam must be 'auto' or None, got {reparam!r}")
        auto = reparam == "auto" and (base is None or isinstance(base, str))
        summed = summed_out(source, integrate=auto)
        discrete = summed is not None and not isinstance(summed, _INTEGRATED)
        check_model(source, potentials=potentials, discrete=discrete)
        model = source if summed is None else summed.model
        if summed is not None:
            potentials = "likelihood"  # the sum is a potential; the source's were checked
        if auto:
            model = reparametrized(model)
        runtime_of(source if summed is None else summed.model, backend=backend)
        return cls(
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

    @property
    def integrated(self) -> tuple[str, ...]:
        """Names of the Gaussian latents or group effects integrated out of the model."""
        return self.summed.names if isinstance(self.summed, _INTEGRATED) else ()

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
        made = any(isinstance(key, tuple) and key[0] == "reference" for key in self._made)
        return (self.sampling.sampler,) if made else ()

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
    def base(self):
        """The normalized base density, fitted on first use (seeded by stream ``"base"``)."""
        if "base" not in self._made:
            self._made["base"] = self._resolve_base()
        return self._made["base"]

    def with_base(self, base) -> EvidenceProblem:
        """This problem with ``base``, fitted elsewhere on its model, as its base."""
        return replace(self, _made={"base": base})

    @property
    def tempering_base(self):
        """The base of ``ct``, ``gibbs_ct`` and ``st``: the fit itself where :attr:`base`
        is its widened copy (:func:`~pymc_evidence.base.widen.widen_light_base`); ``ct``'s
        rounds cannot refit a defended mixture (on the latent GP it was biased from it;
        measured in :doc:`/hard_models`, "Bases narrower than the posterior: widened, with a
        defensive component").

        Where the fit merged distinct ADVI fits (separated modes) into one Gaussian, the
        same fits (stream ``"base"`` again) combined as a mixture instead. A tempering chain
        stuck in mode ``k`` near ``beta = 1`` estimates ``Z_k / Q_k`` (``Q_k`` the base's
        mass there): one Gaussian over both modes of a 2-component ``NormalMixture`` biased
        ``ct`` high and gave ``st`` errors beyond its se; the mixture of the fits, which
        weighs each mode by its evidence, put both close, within their se (measured in
        :doc:`/hard_models`, "The other methods on separated modes"). ``smc`` keeps the
        merged Gaussian (all its particles move together, the modes in proportion)."""
        if "tempering" not in self._made:
            base = getattr(self.base, "info", {}).get("unwidened", self.base)
            own = isinstance(self.base_spec, str) and "combine" not in self.base_kwargs
            if own and "merged" in (base.kind, getattr(base, "info", {}).get("base_kind")):
                mixture = self._resolve_base(combine="mixture")
                base = getattr(mixture, "info", {}).get("unwidened", mixture)
            self._made["tempering"] = base
        return self._made["tempering"]

    def _resolve_base(self, **more):
        if not isinstance(self.base_spec, str):
            self._warn_fitted_funnel(type(self.base_spec).__name__)
            return self.base_spec
        method, extra = self.base_spec, {}
        if method == "auto":
            method, extra = self._auto_base()
        elif method != "prior":
            self._warn_fitted_funnel(f"base={method!r}")
        base = fit_base(
            method,
            **extra,
            model=self.model,
            random_seed=self.rng("base"),
            potentials=self.potentials,
            **{"progressbar": self.sampling.progressbar, **self.base_kwargs, **more},
        )
        if self.hyperparameters_only:  # see base.widen.defend
            widths = defensive_widths(self.space)
            base = defend(base, batched_logp(self.space), 1000, self.rng("defensive"), widths)
        return base

    def _auto_base(self) -> tuple[str, dict]:
        """``base="auto"``: up to :data:`FULLRANK_MAX_DIM` dimensions, the prior (proper:
        :func:`~pymc_evidence.check_model` saw to it) where the model keeps a funnel (a
        centred scale, see :func:`~pymc_evidence.transforms.reparam.centred_scales`), else
        full-rank ADVI; above, the best of mean-field ADVI, the Laplace Gaussian and (up to
        :data:`FULLRANK_TRY_MAX_DIM`) full-rank ADVI. The mode search runs first: a one-mode
        posterior that its Laplace Gaussian fits is not fitted (``laplace_first=True``).
        Funnels are a small-model matter: few data per group reach into the neck, which no
        fitted base covers; large centred models are usually data-rich."""
        small = self.space.ndim <= FULLRANK_MAX_DIM
        funnels = centred_scales(self.model) if small else ()
        if funnels:
            _log.log(
                logging.INFO if self.sampling.progressbar else logging.DEBUG,
                "base='auto': annealing from the prior (centred scales: %s)",
                ", ".join(funnels),
            )
            return "prior", {}
        if small:
            local = self.hyperparameters_only  # one bump: see laplace_first
            return "fullrank_advi", {"laplace_first": "local" if local else True}
        also = self.space.ndim <= FULLRANK_TRY_MAX_DIM
        return "advi", {"laplace": True, "laplace_first": True, "also_fullrank": also}

    def _warn_fitted_funnel(self, what: str) -> None:
        """Warn when a small model keeps a funnel (a centred scale) and the base is a fit:
        the tempered paths start in the funnel's mouth and their kernels do not reach the
        neck (``docs/hard_models``), which no per-run diagnostic shows reliably."""
        small = self.space.ndim <= FULLRANK_MAX_DIM
        funnels = centred_scales(self.model) if small else ()
        if funnels:
            warn_user(
                f"the model keeps centred scales ({', '.join(funnels)}) and the base is a fit "
                f"({what}): tempering from it rarely reaches the funnel's neck, so the "
                "estimate can be low by more than its se; keep reparam='auto' with a base "
                "named by string, or use base='prior'",
                BaseFitWarning,
            )

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
        ``target_accept``)."""
        if posterior is not None:
            if not group_names_safe(posterior) or "posterior" not in group_names(posterior):
                raise ValueError("posterior= must be sampling results with a 'posterior' group")
            return posterior
        key = ("reference", target_accept)
        if key not in self._made:
            nuts = {"random_seed": self.int_seed("nuts"), "target_accept": target_accept}
            self._made[key] = run_nuts(self.model, self.sampling, **nuts)
        return self._made[key]

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
        outputs = list(model.free_RVs) + list(model.deterministics)
        fn = self.space.rows_function(
            "posterior", lambda: model.replace_rvs_by_values(outputs)
        )  # compiled once per model
        rows = fn(x.reshape(-1, x.shape[-1]))
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
