"""One model's independent runs on a ``concurrent.futures`` executor (``executor=``).

A Dask client's executor (``client.get_executor()``), Ray's or a process pool runs each of
a particle method's runs as one task. A task carries a :class:`RunRecipe`: the model as
the user gave it (``cloudpickle`` bytes), how the call prepared it, the fitted base and the
run's settings, all picklable. The worker prepares the model again (the same
deterministic transforms), takes the base as fitted here (nothing is fitted twice),
compiles the batched density once per model (the last recipe's problem is kept), and runs
with the seed it was given, under the float settings of the call. So a run's record is the
one it would have been here: ``executor`` changes where the runs go, never the number.

The runs' own work dominates a big model's call (its base is fitted and its schedule set
here, once); each worker pays one compilation of the density.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import cloudpickle
import numpy as np
from threadpoolctl import threadpool_limits

from ..problem import EvidenceProblem
from ..runtime._compile import exact_float_math, without_tracebacks
from ..runtime.jax_rows import jax_started
from ._runs import collect

__all__ = ["RemoteJob", "RunRecipe", "check_executor", "remote_job", "submit_runs"]


@dataclass(frozen=True)
class RunRecipe:
    """What a worker needs to prepare a call's model as the call did.

    Attributes
    ----------
    model : bytes
        The model as the user gave it (``cloudpickle``).
    potentials, reparam : str or None
        The call's :meth:`EvidenceProblem.build` arguments.
    base_spec : bytes
        The call's ``base`` argument (a name or a fitted base; ``cloudpickle``).
    base : bytes
        The record of the call's base fit (``cloudpickle``).
    backend : str
        The backend the call compiled its densities with.
    """

    model: bytes
    potentials: str | None
    reparam: str | None
    base_spec: bytes
    base: bytes
    backend: str


@dataclass(frozen=True)
class RemoteJob:
    """A run to send: ``job(problem, density, seed, callback)`` (picklable, e.g. a frozen
    dataclass) and the recipe of the problem it runs on."""

    recipe: RunRecipe
    job: object

    def __call__(self, seed) -> object:
        """Worker side: the run of ``seed``, as
        :func:`~pymc_evidence.methods._runs.map_runs` would have made it here."""
        with (
            threadpool_limits(limits=1),
            exact_float_math(),
            without_tracebacks(),
        ):
            problem, density = _prepared(self.recipe)
            return self.job(problem, density, seed, None)


def check_executor(executor) -> None:
    """Refuse an ``executor`` without a ``submit`` method, and a process pool that forks
    this process once it has run JAX (a forked copy of JAX's threads deadlocks or
    crashes); None passes."""
    if executor is None:
        return
    if not callable(getattr(executor, "submit", None)):
        raise TypeError(
            "executor must be a concurrent.futures.Executor (with a submit method), such as "
            f"a Dask client's client.get_executor(); got {type(executor).__name__}"
        )
    context = getattr(executor, "_mp_context", None)  # a ProcessPoolExecutor's
    if context is None or not jax_started() or context.get_start_method() != "fork":
        return
    raise RuntimeError(
        "this process has run JAX, and the executor's workers are forked from it, which "
        "deadlocks JAX; make the pool with another start method: ProcessPoolExecutor(n, "
        "mp_context=multiprocessing.get_context('forkserver')) (or 'spawn')"
    )


def remote_job(problem: EvidenceProblem, job) -> RemoteJob:
    """The :class:`RemoteJob` of ``job`` on ``problem`` (built with its base fitted).

    Examples
    --------
    >>> import pymc as pm
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu", 0, 1)
    ...     _ = pm.Normal("y", mu, 1, observed=[0.3])
    >>> problem = EvidenceProblem.build(model, random_seed=1, base="prior", fit="base")
    >>> remote_job(problem, print).recipe.reparam
    'auto'
    """
    try:
        model = cloudpickle.dumps(problem.source)
    except Exception as err:
        raise TypeError(
            f"the model cannot be pickled to travel to the executor's workers ({err}); "
            "run with executor=None"
        ) from err
    recipe = RunRecipe(
        model=model,
        potentials=problem.potentials,
        reparam=problem.reparam,
        base_spec=cloudpickle.dumps(problem.base_spec),
        base=cloudpickle.dumps(problem.fitted),
        backend=problem.space.runtime.backend,
    )
    return RemoteJob(recipe, job)


def submit_runs(remote: RemoteJob, seeds, executor, on_done=None) -> list:
    """``[remote(seed) for seed in seeds]`` on ``executor``, in the order of ``seeds``;
    ``on_done(index)`` as each run comes back."""
    futures = {executor.submit(remote, seed): i for i, seed in enumerate(seeds)}
    return collect(futures, on_done)


@lru_cache(maxsize=1)
def _prepared(recipe: RunRecipe):
    """The problem and batched density of ``recipe`` (the last recipe's kept, so that a
    worker given several runs of one model compiles once)."""
    problem = EvidenceProblem.build(
        cloudpickle.loads(recipe.model),
        random_seed=np.random.SeedSequence(0),  # the runs take their own seeds
        potentials=recipe.potentials,
        base=cloudpickle.loads(recipe.base_spec),
        reparam=recipe.reparam,
        backend=recipe.backend,
    )
    problem = problem.with_fitted(cloudpickle.loads(recipe.base))
    return problem, problem.density()
