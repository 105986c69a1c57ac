"""Independent runs of a particle method, here or in worker processes (``cores=``).

Each run is seeded by its own child ``SeedSequence`` and touches no state another run reads,
so its result is the same wherever it runs: ``cores`` changes the wall time, never the
number. Workers are forked from this process, so they inherit the compiled batched density
(nothing is pickled or compiled again; only the seed goes in and the run's record comes
back) and use one BLAS thread each. Where ``fork`` is not available (macOS and Windows
start processes by spawning, which would recompile every function), runs stay in this
process. This is what ``pm.sample_smc`` does with its chains, without the recompilation.

The workers are ``multiprocessing.Process`` objects of the ``fork`` context whose target is
the call's own closure: under ``fork`` a process's target is inherited, not pickled, so no
module state carries the job to them. They take ``(index, seed)`` tasks from one queue and
put each run's pickled result on another.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import queue
import traceback
import warnings
from concurrent.futures import ThreadPoolExecutor, as_completed

from threadpoolctl import threadpool_limits

from ..runtime.jax_rows import jax_started

__all__ = ["collect", "map_runs", "n_threads", "n_workers"]

#: Seconds between checks that the workers still live while waiting for their results.
POLL_SECONDS = 0.2


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


def _worker(run_one, tasks, results) -> None:
    """Worker side: the runs of the tasks ``(index, seed)`` until a None, each result (or
    the error it raised, with its traceback) put on ``results`` pickled."""
    with threadpool_limits(limits=1):
        while (task := tasks.get()) is not None:
            index, seed = task
            try:
                payload = pickle.dumps((index, True, run_one(index, seed, None)))
            except BaseException as err:  # sent back, raised by the caller
                text = traceback.format_exc()
                try:
                    payload = pickle.dumps((index, False, (err, text)))
                except Exception:  # an error that cannot be pickled: its text
                    payload = pickle.dumps((index, False, (RuntimeError(repr(err)), text)))
            results.put(payload)


def _in_processes(run_one, seeds, workers: int, on_done) -> list:
    """The runs in ``workers`` forked processes whose target inherits ``run_one``."""
    context = multiprocessing.get_context("fork")
    tasks, results = context.Queue(), context.Queue()
    for task in [*enumerate(seeds), *[None] * workers]:
        tasks.put(task)
    procs = [
        context.Process(target=_worker, args=(run_one, tasks, results), daemon=True)
        for _ in range(workers)
    ]
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*fork.*", category=DeprecationWarning)
            for proc in procs:
                proc.start()
        return _gather(results, procs, len(seeds), on_done)
    finally:
        for proc in procs:
            if proc.is_alive():  # only after an error: the others' runs are not wanted
                proc.terminate()
            proc.join()


def _gather(results, procs, n: int, on_done) -> list:
    """The ``n`` results from the workers ``procs``, in index order; ``on_done(index)`` as
    each comes back. A run's error is raised here."""
    out = [None] * n
    for _ in range(n):
        index, ok, value = _next_result(results, procs)
        if not ok:
            err, text = value
            raise err from RuntimeError(f"in the worker process:\n{text}")
        out[index] = value
        if on_done:
            on_done(index)
    return out


def _next_result(results, procs) -> tuple:
    """The next ``(index, ok, value)`` a worker sent; a RuntimeError once none can come (a
    worker died, or all have exited)."""
    while True:
        try:
            return pickle.loads(results.get(timeout=POLL_SECONDS))
        except queue.Empty:
            codes = [proc.exitcode for proc in procs]
            if any(codes) or None not in codes:
                break
    try:  # what a worker put before it exited is in the pipe
        return pickle.loads(results.get(timeout=1.0))
    except queue.Empty:
        raise RuntimeError(f"a run's worker process died (exit codes {codes})") from None


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
    return _in_processes(run_one, seeds, workers, on_done)
