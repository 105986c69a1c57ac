"""Many models, and seeded replicas of each, through any ``concurrent.futures`` executor.

:func:`compare_models` runs :func:`~pymc_evidence.sample_evidence` once per (model,
replica), sequentially or on an executor (a process pool, a Dask client's executor, Ray's),
pools each model's replicas (:func:`~pymc_evidence.estimators.pooling.pool_replicas`) and
compares the pooled estimates (:func:`~pymc_evidence.compare`).

Every task gets its own child of one :class:`numpy.random.SeedSequence`, spawned in a fixed
order (one child per model, spawned once per replica), so a seed gives the same numbers
whatever the executor or its number of workers. Models travel to the workers as
``cloudpickle`` bytes, so executors that pickle with the standard :mod:`pickle` work too.
A task that raises is caught in the worker: its model gets a row with the error text, the
others are compared as usual.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from concurrent.futures import as_completed
from dataclasses import dataclass, field
from typing import Any

import cloudpickle
import numpy as np
import pandas as pd
import pymc as pm
from threadpoolctl import threadpool_limits

from .api import log_evidence, sample_evidence
from .api.bambi_models import is_bambi_model
from .compare import LOG_Z_COLUMNS, compare, log_prior_probs
from .estimators.diagnostics import EvidenceWarning, warn_user
from .estimators.pooling import pool_replicas
from .methods._remote import check_executor
from .problem import seed_sequence
from .progress import progress_bar

__all__ = ["ModelComparison", "compare_models"]

#: Columns that :func:`compare_models` adds to the :func:`~pymc_evidence.compare` table.
EXTRA_COLUMNS = ["replicas", "replica_sd", "error"]


@dataclass
class ModelComparison:
    """What :func:`compare_models` returns.

    Attributes
    ----------
    table : pandas.DataFrame
        :func:`~pymc_evidence.compare`'s table of the pooled estimates (best first), then
        the failed models (``log_z``, ``prior_prob``, ``post_prob`` NaN: no part in the
        comparison, so both probability columns sum to 1); extra columns ``replicas``
        (replicas that succeeded), ``replica_sd`` (sd of their ``log_z``, NaN below two)
        and ``error`` (empty when every replica succeeded).
    results : dict
        Model name to the list of its successful replicas' results (InferenceData or
        DataTree, in replica order).
    errors : dict
        Model name to the error text, for models with a failed replica.
    estimates : dict
        Model name to its pooled :class:`~pymc_evidence.EvidenceEstimate`.
    seed : numpy.random.SeedSequence
        The root seed; pass it as ``random_seed`` to reproduce the run.
    note : str
        How the prior was renormalised when models failed (else empty); shown with the table.
    """

    table: pd.DataFrame
    results: dict = field(default_factory=dict)
    errors: dict = field(default_factory=dict)
    estimates: dict = field(default_factory=dict)
    seed: np.random.SeedSequence | None = None
    note: str = ""

    def _title(self) -> str:
        return f"ModelComparison: {len(self.table)} models, {len(self.errors)} with errors"

    def __repr__(self) -> str:
        note = f"\n{self.note}" if self.note else ""
        errors = "".join(f"\n{name}: {text}" for name, text in self.errors.items())
        return f"{self._title()}\n{self.table.drop(columns='error')!r}{note}{errors}"

    def _repr_html_(self) -> str:
        from html import escape

        errors = "".join(
            f"<li><b>{escape(str(name))}</b>: {escape(text)}</li>"
            for name, text in self.errors.items()
        )
        table = self.table.drop(columns="error")._repr_html_()
        note = f"<p>{escape(self.note)}</p>" if self.note else ""
        return f"<p>{escape(self._title())}</p>{table}{note}" + (errors and f"<ul>{errors}</ul>")


def _is_model(obj) -> bool:
    """A model :func:`~pymc_evidence.sample_evidence` takes: PyMC's or bambi's."""
    return isinstance(obj, pm.Model) or is_bambi_model(obj)


def _load(payload):
    """The model of a task: unpickle bytes, call a builder."""
    if isinstance(payload, bytes):
        payload = cloudpickle.loads(payload)
    model = payload if _is_model(payload) else payload()
    if not _is_model(model):
        raise TypeError(
            f"the model builder returned {type(model).__name__}, not a pm.Model or bambi.Model"
        )
    return model


def _run_task(payload, method, seed, options):
    """Worker side: one replica of one model, as ``(result, warnings, error text)``.

    Everything raised is caught here (exceptions need not pickle); the package's warnings
    are recorded as ``(category, text)`` and re-emitted by the caller. BLAS gets one
    thread, as in the forked runs of the particle methods: several workers on a machine
    would otherwise each start a thread per core, and the numbers must not depend on where
    the task runs.
    """
    try:
        with threadpool_limits(limits=1), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = sample_evidence(
                model=_load(payload),
                method=method,
                random_seed=seed,
                progressbar=False,
                **options,
            )
    except Exception as err:  # isolated: reported in the model's row
        return None, [], f"{type(err).__name__}: {err}"
    kept = [(w.category, str(w.message)) for w in caught if issubclass(w.category, EvidenceWarning)]
    return result, kept, None


def _payloads(models: Mapping, pickled: bool) -> dict:
    """Each model (or builder) checked, and as cloudpickle bytes when ``pickled``."""
    if not isinstance(models, Mapping):
        raise TypeError(f"models must be a dict of name to pm.Model, got {type(models).__name__}")
    if not models:
        raise ValueError("models is empty; pass at least one model")
    out = {}
    for name, model in models.items():
        if not (_is_model(model) or callable(model)):
            raise TypeError(
                f"model {name!r} is a {type(model).__name__}: expected a pm.Model, a "
                "bambi.Model or a function that returns one"
            )
        if not pickled:
            out[name] = model
            continue
        try:
            out[name] = cloudpickle.dumps(model)
        except Exception as err:
            raise TypeError(
                f"model {name!r} cannot be pickled to travel to the executor's workers "
                f"({type(err).__name__}: {err}). Remove what holds it (open files, "
                "connections, locks), pass a function that builds the model instead, or "
                "run with executor=None."
            ) from err
    return out


def _task_seeds(random_seed, n_models: int, replicas: int):
    """The root seed (a copy: the caller's is not spawned) and each model's replica seeds."""
    given = seed_sequence(random_seed)
    root = np.random.SeedSequence(given.entropy, spawn_key=given.spawn_key)
    copy = np.random.SeedSequence(given.entropy, spawn_key=given.spawn_key)
    return copy, [child.spawn(replicas) for child in root.spawn(n_models)]


def _execute(tasks: list, executor, update) -> dict:
    """Run ``{key: args}`` tasks with :func:`_run_task`; ``update(done)`` after each."""
    out = {}
    if executor is None:
        for done, (key, args) in enumerate(tasks, 1):
            out[key] = _run_task(*args)
            if update is not None:
                update(done)
        return out
    futures = {executor.submit(_run_task, *args): key for key, args in tasks}
    for done, future in enumerate(as_completed(futures), 1):
        key = futures[future]
        try:
            out[key] = future.result()
        except Exception as err:  # the worker died, or the result did not travel back
            out[key] = (None, [], f"{type(err).__name__} in the executor: {err}")
        if update is not None:
            update(done)
    return out


def _pool_model(name, outcomes: list):
    """``(results, pooled estimate or None, error text)`` of one model's replicas."""
    results, estimates, errors = [], [], []
    for replica, (result, _, error) in enumerate(outcomes):
        if error is None:
            est = log_evidence(result)
            if np.isfinite(est.log_z):
                results.append(result)
                estimates.append(est)
                continue
            error = f"non-finite log Z ({est.log_z})"
        errors.append(f"replica {replica}: {error}" if len(outcomes) > 1 else error)
    pooled = pool_replicas(estimates) if estimates else None
    messages = dict.fromkeys(item for _, found, _ in outcomes for item in found)
    if pooled is not None:
        own = {m for est in estimates for m in est.warnings}
        messages.update(
            dict.fromkeys(
                (getattr(m, "category", EvidenceWarning), str(m))
                for m in pooled.warnings
                if m not in own
            )
        )
    for category, text in messages:
        warn_user(f"model {name!r}: {text}", category)
    return results, pooled, "; ".join(errors)


def _table(names, pooled: dict, errors: dict, counts: dict, log_prior, method) -> pd.DataFrame:
    """The comparison of the models that ran, then the failed ones, with the extra columns."""
    ok = [name for name in names if name in pooled]
    if ok:
        prior = np.exp(np.array([log_prior[names.index(name)] for name in ok]))
        total = prior.sum()  # 0: the models that ran have no prior mass, no probabilities
        table = compare(
            {name: pooled[name] for name in ok}, prior_probs=prior / total if total else None
        )
        if not total:
            table[["prior_prob", "post_prob", "post_prob_se"]] = np.nan
    else:
        table = pd.DataFrame(columns=LOG_Z_COLUMNS, index=pd.Index([], name="model"))
    failed = [name for name in names if name not in pooled]
    rows = pd.DataFrame(  # no part in the comparison: no prior or posterior probability
        {"method": [method] * len(failed)}, index=pd.Index(failed, name="model")
    ).reindex(columns=LOG_Z_COLUMNS)
    table = pd.concat([table, rows]) if len(table) else rows
    table["replicas"] = [counts[name] for name in table.index]
    table["replica_sd"] = [
        float(np.std(pooled[n].per_chain_log_z, ddof=1)) if counts[n] > 1 else np.nan
        for n in table.index
    ]
    table["error"] = [errors.get(name, "") for name in table.index]
    return table


def _check_call(replicas, executor, method_kwargs) -> int:
    if isinstance(replicas, bool) or not isinstance(replicas, int | np.integer) or replicas < 1:
        raise ValueError(f"replicas must be a positive integer, got {replicas!r}")
    check_executor(executor)
    if "model" in method_kwargs:
        raise TypeError("pass the models in the models dict, not as model=")
    return int(replicas)


def compare_models(
    models: Mapping[Any, pm.Model | Callable[[], pm.Model]],
    method="smc",
    replicas: int = 1,
    executor=None,
    random_seed=None,
    prior_probs=None,
    progressbar: bool = True,
    **method_kwargs,
) -> ModelComparison:
    """Estimate the evidence of many models, with seeded replicas, and compare them.

    Each (model, replica) runs ``sample_evidence(model, method, random_seed=<its seed>,
    progressbar=False, **method_kwargs)``; the replicas of a model are pooled
    (:func:`~pymc_evidence.estimators.pooling.pool_replicas`: log of the mean evidence,
    se the larger of the replicas' spread and the per-run se, a calibration check) and the
    pooled estimates compared (:func:`~pymc_evidence.compare`).

    Parameters
    ----------
    models : dict
        Model name to a ``pm.Model`` or a ``bambi.Model`` (each result's posterior then
        in bambi's names), or to a function without arguments that builds one (for models
        that do not pickle, or are cheaper to build where they run).
    method : str or list of str
        As in :func:`~pymc_evidence.sample_evidence`.
    replicas : int, default 1
        Independent runs per model, each with its own seed. Two or more give an se from
        their spread and a check of the per-run se.
    executor : concurrent.futures.Executor, optional
        Where the tasks run: a ``ProcessPoolExecutor``, ``dask.distributed.Client(...)
        .get_executor()``, Ray's executor, ... None runs them one after another here.
        With an executor ``cores`` defaults to 1 (the executor is the parallelism, and
        Dask's worker processes cannot start processes of their own). Every task uses one
        BLAS thread, wherever it runs.
    random_seed : int, SeedSequence or None
        The root seed: one child per model (in the order of ``models``), spawned once per
        replica. The same seed gives the same table whatever the executor.
    prior_probs : dict or sequence of float, optional
        As in :func:`~pymc_evidence.compare`. Failed models take no part: the prior is
        renormalised over the models that ran, as :func:`~pymc_evidence.compare` of them
        would (``prior_prob`` NaN for the failed models; ``note`` says so).
    progressbar : bool, default True
        One bar over models x replicas.
    **method_kwargs
        Passed to every :func:`~pymc_evidence.sample_evidence` call (``n_particles``,
        ``draws``, ``cores``, ...).

    Returns
    -------
    ModelComparison
        ``table``, ``results`` (name to list of results), ``errors`` (name to error text),
        ``estimates`` (name to pooled estimate), ``seed``.

    Raises
    ------
    TypeError
        If a model is neither a ``pm.Model`` nor a function, or cannot be pickled for an
        executor (the message names it).
    ValueError
        If ``models`` is empty, ``replicas`` is not positive or ``prior_probs`` is invalid.

    Warns
    -----
    EvidenceWarning
        When runs failed (the models are named; their rows say why).
    CrossCheckWarning
        When a model's replicas scatter more (or much less) than their se allow
        (chi-square test at 1 %); the package's warnings of each run are emitted
        once per model, prefixed with its name.

    Examples
    --------
    >>> import pymc as pm, pymc_evidence as pme
    >>> def coin(a):
    ...     with pm.Model() as model:
    ...         p = pm.Beta("p", a, a)
    ...         pm.Bernoulli("y", p, observed=[1, 0, 1, 1])
    ...     return model
    >>> out = pme.compare_models({"flat": coin(1), "fair": coin(20)}, replicas=2,
    ...                          random_seed=1, progressbar=False, n_particles=200)
    >>> out.table.index.tolist(), out.table["replicas"].tolist()
    (['fair', 'flat'], [2, 2])
    """
    replicas = _check_call(replicas, executor, method_kwargs)
    payloads = _payloads(models, pickled=executor is not None)
    names = list(payloads)
    log_prior = log_prior_probs(names, prior_probs)
    options = dict(method_kwargs)
    if executor is not None:
        options.setdefault("cores", 1)
    seed, seeds = _task_seeds(random_seed, len(names), replicas)
    tasks = [
        ((i, r), (payloads[name], method, seeds[i][r], options))
        for i, name in enumerate(names)
        for r in range(replicas)
    ]
    label = f"{len(names)} models x {replicas} replicas"
    with progress_bar(label, len(tasks), enabled=progressbar) as update:
        outcomes = _execute(tasks, executor, update)
    out = ModelComparison(table=pd.DataFrame(), seed=seed)
    pooled, counts = {}, {}
    for i, name in enumerate(names):
        results, est, error = _pool_model(name, [outcomes[i, r] for r in range(replicas)])
        out.results[name], counts[name] = results, len(results)
        if est is not None:
            pooled[name] = out.estimates[name] = est
        if error:
            out.errors[name] = error
    if out.errors:
        warn_user(
            f"{len(out.errors)} of {len(names)} models had failed runs, "
            f"{list(out.errors)}: see the error column (or .errors) of the result",
            EvidenceWarning,
        )
    method_name = method if isinstance(method, str) else "+".join(method)
    out.table = _table(names, pooled, out.errors, counts, log_prior, method_name)
    out.note = _prior_note(names, pooled, log_prior)
    return out


def _prior_note(names, pooled: dict, log_prior) -> str:
    """What became of the prior when models failed: renormalised over the others."""
    failed = [name for name in names if name not in pooled]
    mass = float(np.exp(log_prior)[[i for i, n in enumerate(names) if n in pooled]].sum())
    if not failed or not pooled:
        return ""
    return (
        f"prior_prob is renormalised over the {len(pooled)} of {len(names)} models that ran "
        f"(their prior mass {mass:.3g}); the failed {failed} take no part in the comparison"
    )
