"""Tempered resample-move SMC (``"smc"``) and ARM (``"arm"``) end to end.

Fits (or takes) the base, compiles the batched log density once, runs ``n_runs``
independent SMC runs (:func:`~pymc_evidence.engines.smc.run_resample_move`), combines them
with :func:`~pymc_evidence.estimators.smc.smc_log_evidence` and builds the results
container: ``posterior`` (each run's final, equally weighted particles as one chain) and the
``log_evidence`` group.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import xarray as xr

from ..base import model_space
from ..compat import new_idata
from ..engines.batched import batched_log_densities
from ..engines.smc import STAGE_KEYS, SMCSettings, run_resample_move
from ..estimators.smc import smc_log_evidence
from ..results import estimate_to_dataset
from .ct import resolve_base
from .particles import _constrained_dataset, base_particles, with_run_checks

__all__ = ["SMC_METHODS", "run_smc"]

SMC_METHODS = ("smc", "arm")


@contextmanager
def _progress(enabled: bool, n_runs: int):
    """Yield ``callback_for(run)``; with ``enabled`` a rich progress bar in ``beta``."""
    if not enabled:
        yield lambda run: None
        return
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("beta {task.completed:.3f}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns) as bar:
        tasks = [bar.add_task(f"SMC run {r}", total=1.0) for r in range(n_runs)]

        def callback_for(run):
            def update(beta, stage):
                bar.update(tasks[run], completed=beta, description=f"SMC run {run}, stage {stage}")

            return update

        yield callback_for


def _posterior(space, runs) -> xr.Dataset:
    """One chain per run, from each run's final particles."""
    chains = [
        _constrained_dataset(space, info["x"]).assign_coords(chain=[r])
        for r, info in enumerate(runs)
    ]
    return xr.concat(chains, dim="chain")


def _attrs(settings: SMCSettings, method, n_particles, n_runs, base) -> dict:
    attrs = {
        "n_particles": int(n_particles),
        "n_runs": int(n_runs),
        "base_kind": str(base.kind),
        "arm": bool(method == "arm"),
        "se_kind": "spread over independent runs (delta method on mean Z)",
    }
    for key in ("target_ess", "resample_threshold", "resampling", "n_leapfrog", "n_moves"):
        attrs[key] = getattr(settings, key)
    if method == "arm":
        attrs.update(arm_threshold=settings.arm_threshold, max_expansions=settings.max_expansions)
    if isinstance(settings.schedule, str):
        attrs["schedule"] = settings.schedule
    else:
        attrs.update(schedule="fixed", schedule_betas=np.asarray(settings.schedule, float))
    return attrs


def _log_evidence_group(method, runs, settings, n_particles, base, nonfinite) -> xr.Dataset:
    log_z = np.array([lz for lz, _ in runs])
    infos = [info for _, info in runs]
    moves = np.array([info["n_particle_moves"] for info in infos], dtype=float)
    n_stages = np.array([info["n_stages"] for info in infos], dtype=float)
    diagnostics = {
        "mean_n_stages": float(np.mean(n_stages)),
        "n_particle_moves": float(np.sum(moves)),
        "mean_particles_per_stage": float(
            np.mean([np.mean(info["n_particles"][1:]) for info in infos])
        ),
        "n_density_calls": float(sum(info["n_density_calls"] for info in infos)),
    }
    proxy = np.array([info["variance_proxy"] for info in infos])
    est = smc_log_evidence(log_z, proxy, method=method, diagnostics=diagnostics)
    est = with_run_checks(est, nonfinite=nonfinite)
    return estimate_to_dataset(
        est,
        chain_dim="run",
        chain_values={"variance_proxy": proxy, "n_stages": n_stages, "n_particle_moves": moves},
        stage_values={key: [info[key] for info in infos] for key in STAGE_KEYS},
        attrs=_attrs(settings, method, n_particles, len(infos), base),
    )


def run_smc(
    model,
    method: str,
    *,
    draws: int,
    tune: int,
    chains: int,
    cores,
    random_seed,
    progressbar: bool,
    base="advi",
    base_kwargs: dict | None = None,
    potentials: str | None = None,
    n_particles: int | None = None,
    n_runs: int | None = None,
    schedule="adaptive",
    target_ess: float = 0.8,
    resample_threshold: float = 0.5,
    resampling: str = "systematic",
    n_leapfrog: int = 10,
    n_moves: int = 10,
    arm_threshold: float = 0.7,
    max_expansions: int = 3,
    max_stages: int = 500,
):
    """Tempered resample-move SMC (``"smc"``) or ARM (``"arm"``); returns the results.

    Mapping of the sampling arguments: ``draws`` is the number of particles per run (unless
    ``n_particles`` is given) and ``chains`` the number of independent runs (unless
    ``n_runs`` is given); each run's final particles become one chain of ``posterior``.
    ``tune`` and ``cores`` are accepted for a uniform signature and not used: the kernels
    are tuned between stages, and the runs share one process (each run evaluates all its
    particles in one batched call).

    Parameters
    ----------
    model : pm.Model
    method : {"smc", "arm"}
        ``"arm"`` expands hard steps (Fraccaro, Paquet & Winther); it differs from
        ``"smc"`` only with a fixed ``schedule`` or when ``arm_threshold > target_ess``.
    draws, tune, chains, cores, random_seed, progressbar
        As described above; ``progressbar`` shows one bar per run, in ``beta``.
    base, base_kwargs, potentials
        As for the CT methods (``"advi"``, ``"fullrank_advi"``, ``"prior"`` or a base).
    n_particles, n_runs : int, optional
        ``R`` per run and the number of independent runs (the se needs at least 2).
    schedule : "adaptive" or array_like
        Bisection on the conditional ESS, or a fixed schedule from 0 to 1.
    target_ess, resample_threshold, resampling, n_leapfrog, n_moves, arm_threshold,
    max_expansions, max_stages
        See :class:`~pymc_evidence.engines.smc.SMCSettings`.

    Returns
    -------
    InferenceData or DataTree
        ``posterior`` and ``log_evidence``: per run (dim ``run``) ``log Z``, its i.i.d.
        variance proxy, stages and particle moves; per run and stage (dims ``(run,
        stage)``, NaN-padded) ``beta``, ``log_increment``, ``ess``, ``cess``, ``gamma``,
        ``n_particles``, ``n_expansions``, ``resampled``, ``acceptance``, ``step_size``.
        The reported se is the spread over runs (see
        :func:`~pymc_evidence.estimators.smc.smc_log_evidence`).

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> with pm.Model() as model:
    ...     p = pm.Beta("p", 1, 1)
    ...     _ = pm.Bernoulli("y", p, observed=np.array([1, 0, 1, 1]))
    >>> idata = run_smc(model, "smc", draws=500, tune=0, chains=4, cores=None,
    ...                 random_seed=1, progressbar=False, base="prior")
    >>> from pymc_evidence.compat import get_group
    >>> group = get_group(idata, "log_evidence")
    >>> bool(abs(float(group["log_marginal_likelihood"]) - np.log(1 / 20)) < 0.1)
    True
    """
    if method not in SMC_METHODS:
        raise ValueError(f"method must be one of {SMC_METHODS}, got {method!r}")
    n_particles = int(draws if n_particles is None else n_particles)
    n_runs = int(chains if n_runs is None else n_runs)
    if n_particles < 2 or n_runs < 1:
        raise ValueError("n_particles must be >= 2 and n_runs >= 1")
    settings = SMCSettings(
        schedule=schedule,
        target_ess=target_ess,
        resample_threshold=resample_threshold,
        resampling=resampling,
        n_leapfrog=n_leapfrog,
        n_moves=n_moves,
        arm=method == "arm",
        arm_threshold=arm_threshold,
        max_expansions=max_expansions,
        max_stages=max_stages,
    )
    settings.checked_schedule()  # fail before fitting the base
    rng = np.random.default_rng(random_seed)
    space = model_space(model)
    base = resolve_base(base, model, rng, potentials=potentials, base_kwargs=base_kwargs)
    density = batched_log_densities(model, base)
    runs, counts = [], density.counts()
    with _progress(progressbar, n_runs) as callback_for:
        for r, run_rng in enumerate(rng.spawn(n_runs)):
            x0 = base_particles(space, base, n_particles, run_rng)
            runs.append(run_resample_move(density, x0, run_rng, settings, callback=callback_for(r)))
    nonfinite = density.nonfinite_fraction(counts)
    group = _log_evidence_group(method, runs, settings, n_particles, base, nonfinite)
    posterior = _posterior(space, [info for _, info in runs])
    return new_idata({"posterior": posterior, "log_evidence": group})
