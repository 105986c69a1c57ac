"""``sample_evidence``: build the problem, run the method(s), assemble the results."""

from __future__ import annotations

from dataclasses import replace

import pymc as pm
from threadpoolctl import threadpool_limits

from ..compat import get_group, set_group
from ..estimators.pooling import cross_check
from ..estimators.record import with_se_floor
from ..methods import ProblemOptions, get_method, refuse_unknown, resolve_options
from ..nuts import SamplingArgs
from ..problem import EvidenceProblem
from ..record import add_messages
from ..results.assemble import assemble_results
from ..results.model_data import as_written
from ..runtime._compile import exact_float_math, resolve_backend, without_tracebacks
from ..runtime.batched_logp import backend_used
from .bambi_models import bambi_posterior, is_bambi_model, pymc_model_of
from .discrete import with_discrete_draws
from .exact import exact_evidence
from .sampling_checks import check_executor_use, check_sampling, with_log_likelihood

__all__ = ["sample_evidence"]

#: Why BLAS runs on one thread during a call: the matrices here are small (d x d, d the
#: model's dimension, and particles x d), the parallelism is across runs and chains, and
#: OpenBLAS's threads cost far more than they give on such sizes: the mode search's L-BFGS
#: ascents were many times slower with them, most of all on a busy machine (measured in
#: :doc:`/performance`, "What a user meets: the first call on a new model").
_ONE_BLAS_THREAD = 1


def sample_evidence(
    model: pm.Model | None = None,
    method="smc",
    *,
    draws: int | None = None,
    tune: int | None = None,
    chains: int | None = None,
    cores: int | None = None,
    random_seed=None,
    progressbar: bool = True,
    nuts_sampler: str | None = None,
    target_accept: float | None = None,
    nuts_sampler_kwargs: dict | None = None,
    initvals=None,
    compile_kwargs: dict | None = None,
    idata_kwargs: dict | None = None,
    backend: str | None = None,
    executor=None,
    **method_options,
):
    """Estimate the marginal likelihood ``log Z = log p(y | model)`` with a standard error.

    Parameters
    ----------
    model : pm.Model or bambi.Model, optional
        Taken from the context when omitted. Needs proper priors and continuous free
        variables (see :func:`pymc_evidence.check_model`). A bambi model is built if it
        was not, and the posterior returned is as its ``fit()`` returns it (bambi's names,
        no offsets or ``mu``, the intercept of its centred predictors moved back).
    method : str or list of str
        ``"smc"`` (the default), ``"arm"``, ``"ais"``, ``"rais"``, ``"bar"``, ``"lis"``,
        ``"bridge"``, ``"ct"``, ``"gibbs_ct"`` or ``"st"`` (:data:`pymc_evidence.METHODS`).
        A list (e.g. ``["smc", "bridge"]``) is a cross-check: every method runs on the
        same problem (one base fit, one NUTS run), and the result holds their
        inverse-variance weighted combination (se widened by the Birge ratio when they
        scatter more than their errors allow; per-method values on the ``run`` dim, whose
        ``method`` coordinate names them), with an :class:`~pymc_evidence.EvidenceWarning`
        when two disagree by more than 3 combined se. Each method's own warnings concern
        its own estimate and are emitted as it finishes.
        ``"ct"``: joint continuous tempering (Graham & Storkey 2017), NUTS on the model
        extended by a temperature variable. ``"gibbs_ct"``: the Gibbs form, NUTS at a fixed
        temperature followed by an exact draw of the temperature. ``"st"``: simulated
        tempering on a discrete ladder with Rao-Blackwellized evidence (Carlson et al. 2016),
        through :class:`pymc_evidence.SimulatedTempering`. ``"ais"``, ``"rais"``, ``"bar"``:
        forward AIS, reverse AIS and their Bennett-acceptance-ratio combination (Habeck
        2017) with all particles moved together by batched HMC. ``"lis"``: linked
        importance sampling (Neal 2005), forward and reverse runs joined by the optimal
        top-level bridge (bridged LIS). ``"smc"``, ``"arm"``: tempered resample-move SMC
        and its adaptive-particle-count form (Fraccaro et al.). ``"bridge"``: bridge
        sampling from NUTS posterior draws (:func:`pymc_evidence.bridge_sampling`).

        The R-hat and bulk-ESS checks of NUTS draws
        (:class:`~pymc_evidence.ConvergenceWarning`) are made only by the methods whose
        estimate uses the draws, and on the draws as the estimate uses them: ``bridge``
        bridge-samples each cluster of chains that share a mode on its own, so it checks
        within each cluster (chains that stayed in different modes of a mixture do not
        warn; a cluster whose own chains disagree does); ``rais``, ``bar`` and ``lis``
        start their reverse runs from the pooled draws, whose share of each mode matters,
        so they check all chains together. ``smc``, ``arm`` and ``ais`` use no NUTS draws
        and make no such check.
    draws, tune, chains
        As in :func:`pymc.sample`, for the NUTS runs of the methods that run NUTS (``ct``,
        ``gibbs_ct``, ``st``, and the posterior draws of ``bridge``, ``rais``, ``bar``,
        ``lis``); defaults 1000, 1000, 4. The particle methods (``smc``, ``arm``, ``ais``)
        run no NUTS and refuse them (``TypeError``): their sizes are ``n_particles`` and
        ``n_runs``.
    cores : int, optional
        As in :func:`pymc.sample`: chains of NUTS runs, and the independent runs of
        ``smc``/``arm``, run in up to ``cores`` processes (default ``min(4, cpu count)``).
        The result is the same for a given seed whatever ``cores`` is.
    random_seed : int, optional
        Seeds everything (one :class:`numpy.random.SeedSequence`, see
        :mod:`pymc_evidence.problem`): the same seed gives the same number.
    progressbar : bool, default True
        Progress bars for the base fit, NUTS runs and annealing.
    nuts_sampler : {None, "pymc", "nutpie", "numpyro", "blackjax"}
        The NUTS backend. ``None`` picks what PyMC would (nutpie when installed on PyMC 6),
        except for ``ct``, whose adaptation rounds reuse one compiled PyMC NUTS (nutpie
        would recompile the extended model every round). PyMC's NUTS starts from the
        base's variances as its mass matrix; other backends adapt their own (they start
        from a base draw). ``gibbs_ct`` and ``st`` are PyMC step methods: PyMC's sampler
        only.
    target_accept : float, optional
        Overrides each method's own default (0.95 for ``ct``, ``gibbs_ct`` and the internal
        posterior runs, whose divergences would bias the estimate; 0.8 for ``st``).
    nuts_sampler_kwargs, initvals, compile_kwargs, idata_kwargs
        As in :func:`pymc.sample`, passed to every NUTS run (``nuts_sampler_kwargs`` and
        ``compile_kwargs`` go to the step of ``gibbs_ct``/``st``; ``initvals`` override
        the base's starting points variable by variable).
        ``idata_kwargs={"log_likelihood": True}`` adds a ``log_likelihood`` group of the
        returned posterior, for any method.
    backend : {None, "auto", "default", "jax"}
        Where the batched log density and gradient (all particles in one call) that the
        particle methods (``smc``, ``arm``, ``ais``, ``rais``, ``bar``, ``lis``) and the
        ADVI base fit evaluate is compiled. ``None`` is ``"auto"``, unless
        ``compile_kwargs={"mode": "JAX"}`` is given, which means ``"jax"`` (and is then not
        refused by the particle methods). ``"auto"``: on JAX, the model's single-point
        graph batched by :func:`jax.vmap` and compiled by :func:`jax.jit` (far sooner,
        for a new model, than numba compiles the graph vectorized over rows; see
        ``docs/performance.rst``), or PyTensor's default linker where jax cannot run one of
        the model's ops. ``"default"``: PyTensor's default linker (numba on PyMC 6, C on
        PyMC 5). ``"jax"``: JAX on the device jax has, a GPU with
        ``pip install "jax[cuda12]"``, and a model with an op JAX cannot run raises
        ``NotImplementedError`` naming it. On JAX, ``jax_enable_x64`` is switched on
        (float64 throughout) and the independent runs of ``smc``/``arm`` run in ``cores``
        threads of this process (a process that ran JAX cannot be forked; the estimate is
        the same for any ``cores``). NUTS runs are unaffected: use
        ``nuts_sampler="numpyro"`` or ``"blackjax"`` (or nutpie) for them.
    executor : concurrent.futures.Executor, optional
        Where the independent runs of ``smc``/``arm`` go, one task a run: a Dask client's
        ``client.get_executor()``, Ray's, a process pool (see ``docs/distributed.rst``).
        The base is fitted and the schedule set here; each worker prepares the model again
        and compiles its density once. The estimate is the same as without it for the same
        seed. None (default): here, in up to ``cores`` processes.
    **method_options
        For every method: ``potentials`` (``"likelihood"`` to accept ``pm.Potential``
        terms as part of the likelihood) and ``reparam`` (``"auto"``, default: integrate
        Gaussian latents of a Gaussian likelihood out, such as the values of a
        ``pm.gp.Latent`` with Gaussian noise, see
        :func:`pymc_evidence.transforms.gaussian_latent.integrate_gaussian_latent`, or a
        hierarchy's group effects of 5 groups or more, group by group, see
        :func:`pymc_evidence.transforms.group_effects.integrate_group_effects`, and work
        on the non-centred form of centred location-scale variables, see
        :func:`pymc_evidence.transforms.reparametrize`; ``log Z`` is unchanged and the
        posterior keeps the variables as written, the integrated ones drawn from their
        conditional; the attributes ``integrated`` and ``reparametrized`` name them;
        ``None`` keeps the model as written).
        A fitted ``base`` or a ``posterior`` of the model as written turns ``"auto"`` off.

        Each method's own options (``base``, ``n_particles``, ``n_runs``, ``schedule``,
        ``posterior_moves``, ``n_stages``, ``posterior``, ...) and their defaults are listed
        in ``docs/methods.rst``, "Each method's options"; an unknown one is a
        ``TypeError`` listing the valid ones (and naming the closest, where one is close).

    Returns
    -------
    InferenceData or DataTree
        ``posterior``: draws of the posterior in the variables of the model as written
        (resampled by their weights for the tempering and forward particle methods; the
        NUTS draws that ``bridge`` and the reverse runs used), without the internal
        variables of ``reparam="auto"`` (``theta_z`` of a non-centred ``theta``; the
        ``log_evidence`` attribute ``reparametrized`` names the rewritten variables).
        ``observed_data`` (and
        ``constant_data`` for models with ``pm.Data``), written from the model as
        :func:`pymc.sample` writes them, for every method. The tempering methods add
        ``extended_posterior`` (the raw tempered draws, in the coordinates that were
        sampled, with ``ct_log_w0``/``ct_log_w1`` or the level weights), and methods that
        run NUTS its ``sample_stats``. The ``log_evidence`` group: read it with
        :func:`pymc_evidence.log_evidence`.

    Raises
    ------
    ValueError
        An unknown method (with the nearest name), an invalid option value, or a model a
        method refuses (the message names the methods that accept it).
    TypeError
        An option no chosen method takes, NUTS arguments given to a method that runs no
        NUTS, or an executor without ``submit``.
    ModelHygieneError
        An improper prior, ``pm.Potential`` terms without ``potentials=``, or a discrete
        variable that cannot be summed out (:func:`pymc_evidence.check_model`).
    BaseFitError
        Every fit of the base failed; the message says what failed and what to try.

    Warns
    -----
    EvidenceWarning
        And its kinds (``ConvergenceWarning``, ``WeightWarning``, ``CrossCheckWarning``,
        ``BaseFitWarning``, ``ModelWarning``, ``SamplingWarning``): an estimate whose
        diagnostics say its se may not hold; the same messages are kept with the result.

    Examples
    --------
    >>> import pymc as pm, pymc_evidence as pme
    >>> with pm.Model():
    ...     p = pm.Beta("p", 1, 1)
    ...     y = pm.Bernoulli("y", p, observed=[1, 0, 1, 1])
    ...     idata = pme.sample_evidence(n_particles=500, n_runs=2, random_seed=3,
    ...                                 progressbar=False)
    >>> est = pme.log_evidence(idata)    # exact: log B(4, 2) = log(1/20) = -2.996
    >>> bool(abs(est.log_z + 2.9957) < max(4 * est.se, 0.1))
    True
    """
    names = [method] if isinstance(method, str) or method is None else list(method)
    specs = [get_method(name) for name in names]
    shared, per_method = _split_options(specs, method_options)
    backend, compile_kwargs = _backend_of(backend, compile_kwargs, specs)
    sampling = SamplingArgs.from_call(
        draws=draws,
        tune=tune,
        chains=chains,
        cores=cores,
        executor=executor,
        progressbar=progressbar,
        nuts_sampler=nuts_sampler,
        target_accept=target_accept,
        nuts_sampler_kwargs=nuts_sampler_kwargs,
        initvals=initvals,
        compile_kwargs=compile_kwargs,
        idata_kwargs=idata_kwargs,
    )
    check_sampling(specs, sampling)
    check_executor_use(executor, specs)
    bmb_model = model if is_bambi_model(model) else None
    model = pymc_model_of(model)
    exact = exact_evidence(model, shared.potentials)
    if exact is not None:
        return bambi_posterior(exact, bmb_model)
    with (
        threadpool_limits(limits=_ONE_BLAS_THREAD),
        exact_float_math(),
        without_tracebacks(),
    ):
        problem = _problem(model, random_seed, sampling, shared, specs, per_method, backend)
        for spec, options in zip(specs, per_method, strict=True):
            if spec.ready is not None:
                spec.ready(problem, options)  # refusals before any method samples
        results = []
        for slot, (spec, options) in enumerate(zip(specs, per_method, strict=True)):
            result = spec.run(problem.for_method(slot), options)  # independent random numbers
            results.append(replace(result, estimate=with_se_floor(result.estimate)))
    attrs = _call_attrs(problem, results)
    used = backend_used(problem.model, backend)
    if used:
        attrs["backend"] = used
    groups = as_written(results[0].groups, problem.model, problem.source)
    if len(results) == 1:
        result = results[0]
        attrs.update(result.attrs)
        out = assemble_results(result.estimate, groups, layout=result.layout, attrs=attrs)
    else:
        est = _combined([r.estimate for r in results])
        attrs["methods"] = ",".join(names)
        out = assemble_results(est, groups, layout={"chain_dim": "run"}, attrs=attrs)
        group = get_group(out, "log_evidence")  # each run labelled by its method
        set_group(out, "log_evidence", group.assign_coords(method=("run", names)))
    out = with_log_likelihood(with_discrete_draws(out, problem), problem)
    return bambi_posterior(out, bmb_model)


def _backend_of(backend, compile_kwargs, specs):
    """``(backend, compile_kwargs)`` checked: ``compile_kwargs={"mode": "JAX"}`` alone, for
    methods that run no NUTS, selects the JAX backend and is used up (the NUTS arguments
    are otherwise refused by those methods); with NUTS runs it also reaches them."""
    backend = resolve_backend(backend, compile_kwargs)
    only_mode = compile_kwargs is not None and set(compile_kwargs) == {"mode"}
    by_mode = only_mode and resolve_backend(None, compile_kwargs) == "jax"
    if by_mode and all(spec.nuts == "none" for spec in specs):
        compile_kwargs = None
    return backend, compile_kwargs


def _split_options(specs, given: dict) -> tuple[ProblemOptions, list]:
    """The call's problem options and each method's options (checked as they are made)
    from one set of keywords; a keyword no method accepts is a ``TypeError``."""
    accepted = [spec.accepted() for spec in specs]
    names = [spec.name for spec in specs]
    refuse_unknown(given, set().union(*accepted), f"method(s) {names}")
    per_method = [
        resolve_options(spec, {k: v for k, v in given.items() if k in ok})
        for spec, ok in zip(specs, accepted, strict=True)
    ]
    return ProblemOptions.from_keywords(given), per_method


def _problem(model, random_seed, sampling, shared, specs, per_method, backend) -> EvidenceProblem:
    """One problem for every method of the call (so they share the base and NUTS draws),
    its models' runtimes on ``backend``, its base fitted here where a method starts from one."""
    reparam = shared.reparam
    if any(options.given_draws is not None for options in per_method):
        reparam = None  # the user's draws are of the model as written
    fit = None
    if any(spec.uses_base for spec in specs):
        fit = "tempering" if any(spec.tempering for spec in specs) else "base"
    return EvidenceProblem.build(
        model,
        random_seed=random_seed,
        sampling=sampling,
        potentials=shared.potentials,
        base=shared.base,
        base_kwargs=shared.base_kwargs,
        reparam=reparam,
        backend=backend,
        fit=fit,
    )


def _call_attrs(problem, results) -> dict:
    """The call's settings for the ``log_evidence`` group's attributes."""
    sampling = problem.sampling
    nuts = set(problem.reference_samplers).union(*(r.nuts for r in results))
    attrs = {
        "random_seed_entropy": str(problem.seed.entropy),
        "reparametrized": ",".join(problem.reparametrized),
        "integrated": ",".join(problem.integrated),
    }
    if nuts:
        attrs.update(draws=int(sampling.draws), tune=int(sampling.tune))
        attrs.update(chains=int(sampling.chains))
        attrs["nuts_sampler"] = ",".join(sorted(nuts))
    return attrs


def _combined(estimates):
    """The cross-check of several methods' estimates; new warnings are emitted once."""
    est = cross_check(estimates)
    old = {m for e in estimates for m in e.warnings}
    kept = tuple(m for m in est.warnings if m in old)
    return add_messages(replace(est, warnings=kept), [m for m in est.warnings if m not in old])
