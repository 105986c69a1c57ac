"""Independent runs of a particle method, here or in worker processes (``cores=``).

Each run is seeded by its own child ``SeedSequence`` and touches no state another run reads,
so its result is the same wherever it runs: ``cores`` changes the wall time, never the
number. Workers are forked from this process, so they inherit the compiled batched density
(nothing is pickled or compiled again; only the seed goes in and the run's record comes
back) and use one BLAS thread each. Where ``fork`` is not available (macOS and Windows
start processes by spawning, which would recompile every function), runs stay in this
process. This is what ``pm.sample_smc`` does with its chains, without the recompilation.
"""

from __future__ import annotations

import multiprocessing
import os
import warnings
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, as_completed

from threadpoolctl import threadpool_limits

from ..base.jax_rows import jax_started

__all__ = ["collect", "map_runs", "n_threads", "n_workers"]

#: The job the forked workers run (``run_one``: a closure, which cannot be pickled; forked
#: workers inherit it), set just before they start.
_JOB = None


def n_workers(cores: int | None, n_runs: int, density=None) -> int:
    """Worker processes for ``n_runs`` runs: ``cores`` (default ``min(4, cpu count)`` as
    in :func:`pymc.sample`) capped at ``n_runs``; 1 where ``fork`` is unavailable, for a
    thread-safe ``density`` (JAX's: its runs go in threads, :func:`n_threads`), and once
    jax has started in this process (a forked copy of a process that ran JAX deadlocks).

    Examples
    --------
    >>> n_workers(1, 4)
    1
    """
    if (
        "fork" not in multiprocessing.get_all_start_methods()
        or getattr(density, "thread_safe", False)
        or jax_started()
    ):
        return 1
    cores = min(4, os.cpu_count() or 1) if cores is None else int(cores)
    return max(1, min(cores, int(n_runs)))


def n_threads(cores: int | None, n_runs: int, density=None) -> int:
    """Threads for ``n_runs`` runs in this process: ``cores`` (default ``min(4, cpu
    count)``) capped at ``n_runs`` when ``density`` is thread-safe (compiled on JAX, whose
    jitted functions, like numpy's large array operations, release the GIL, so runs in
    threads overlap); 1 otherwise.

    Examples
    --------
    >>> n_threads(2, 4)
    1
    """
    if not getattr(density, "thread_safe", False):
        return 1
    cores = min(4, os.cpu_count() or 1) if cores is None else int(cores)
    return max(1, min(cores, int(n_runs)))


def _in_threads(run_one, seeds, threads, callback_for, on_done) -> list:
    """The runs in ``threads`` threads, each with its own progress callback; BLAS limited
    to one thread for all of them (set once: threadpoolctl's limits are process-wide)."""
    with threadpool_limits(limits=1), ThreadPoolExecutor(max_workers=threads) as pool:
        futures = {
            pool.submit(run_one, i, seed, callback_for(i) if callback_for else None): i
            for i, seed in enumerate(seeds)
        }
        return collect(futures, on_done)


def collect(futures: dict, on_done=None) -> list:
    """The results of ``futures`` (future to index ``0..n-1``) in index order, waiting for
    them as they complete; ``on_done(index)`` as each comes back."""
    results = [None] * len(futures)
    for future in as_completed(futures):
        i = futures[future]
        results[i] = future.result()
        if on_done:
            on_done(i)
    return results


def _call(index: int, seed):
    """Worker side: one run (what it met is in its result, sent back as a value)."""
    with threadpool_limits(limits=1):
        return _JOB(index, seed, None)


def map_runs(run_one, seeds, density, *, cores=None, callback_for=None, on_done=None) -> list:
    """``[run_one(i, seed, callback) for i, seed in enumerate(seeds)]``, possibly in parallel.

    Parameters
    ----------
    run_one : callable
        ``run_one(index, seed, callback) -> result``; ``callback`` is ``callback_for(index)``
        in this process and None in a worker.
    seeds : sequence of numpy.random.SeedSequence
    density : BatchedDensity
        The runs' density: where it is on JAX, runs may share it in threads
        (:func:`n_threads`); else they go to worker processes (:func:`n_workers`).
    cores : int, optional
        See :func:`n_workers`.
    callback_for : callable, optional
        Progress callback of a run executed in this process.
    on_done : callable, optional
        Called with the index of each run as it finishes.

    Returns
    -------
    list
        The results in the order of ``seeds``.
    """
    global _JOB
    seeds = list(seeds)
    workers = n_workers(cores, len(seeds), density)
    threads = n_threads(cores, len(seeds), density) if workers == 1 else 1
    if threads > 1:
        return _in_threads(run_one, seeds, threads, callback_for, on_done)
    if workers == 1:
        out = []
        for i, seed in enumerate(seeds):
            out.append(run_one(i, seed, callback_for(i) if callback_for else None))
            if on_done:
                on_done(i)
        return out
    _JOB = run_one
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*fork.*", category=DeprecationWarning)
            context = multiprocessing.get_context("fork")
            with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
                futures = {pool.submit(_call, i, seed): i for i, seed in enumerate(seeds)}
                results = collect(futures, on_done)
    finally:
        _JOB = None
    return results
