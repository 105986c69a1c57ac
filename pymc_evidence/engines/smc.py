"""Tempered resample-move SMC and adaptive resample-move (ARM) on the geometric path.

The path runs from the normalized base ``q`` (``beta = 0``, ``Z_0 = 1``) to the model's
joint density ``f`` (``beta = 1``, ``Z_1 = Z``): ``log pi_beta = beta log f + (1 - beta)
log q``. One run (:func:`run_resample_move`) keeps ``R`` weighted particles targeting
``pi_{beta_n}`` and, per stage,

1. moves every particle by at least ``n_moves`` batched HMC steps at ``beta_n`` (none at
   ``beta_0 = 0``: exact base draws), then more, up to ``max_moves``, while the ranks of
   ``log f - log q`` (what the weights are functions of) still correlate with their values
   before the moves by more than ``decorrelation``;
2. picks ``beta_{n+1}``: the next value of a fixed schedule, or by bisection so that the
   conditional ESS fraction is ``target_ess`` (Zhou, Johansen & Aston 2016);
3. reweights by ``W = exp((beta_{n+1} - beta_n)(log f - log q))`` and adds
   ``log sum w~ W`` to ``log Zhat`` (eq. 5 of Fraccaro, Paquet & Winther);
4. resamples back to ``R`` particles when ``ESS / R_n < resample_threshold``.

**ARM** (Algorithm 2 of the paper): when the ESS per particle ``gamma = CESS / R_n`` of a
step is below ``arm_threshold``, copies of the moved set are moved ``n_moves`` more steps by
the same ``pi_{beta_n}``-invariant kernel (continuing their chains), merged with weights by
counts (Proposition 1, :func:`~pymc_evidence.estimators.smc.merge_log_weights`), and
``gamma`` is recomputed, up to ``max_expansions`` times. The initially moved set is kept
(so ``R <= R_n <= (max_expansions + 1) R``); an expanded set is always resampled back to
``R``. ``gamma`` is the conditional ESS per particle: it equals the paper's ESS per particle
whenever the incoming weights are equal, and otherwise leaves out the degeneracy inherited
from earlier stages, so that only the difficulty of the current step triggers expansion.

When each helps: on a run's own adaptive schedule every step has ``CESS / R = target_ess``
(0.8 > ``arm_threshold`` 0.7), so ARM equals plain SMC; on a fixed schedule it spends extra
particles where ``Delta beta * sqrt(Var(log f - log q))`` is large.

Kernel tuning (:mod:`pymc_evidence.engines.smc_kernel`): the HMC scale is the weighted
standard deviation of the particles at the start of the stage; the step size is settled
before the stage's first move (halved while trial trajectories diverge) and multiplied by
``exp(step_gain * (acceptance - target_accept))`` after each stage and between the extra
blocks of moves. Adapting kernels
to the particle population is standard practice in SMC; it makes ``Zhat`` slightly biased at
finite ``R``. An adaptive schedule does the same, more strongly in many dimensions, so the
methods layer fixes the schedule from a pilot run by default (:mod:`pymc_evidence.methods.smc`).
"""

from __future__ import annotations

import numpy as np

from ..estimators.logspace import (
    kish_ess,
    normalize_log_weights,
    resample_indices,
)
from ..estimators.smc import (
    conditional_ess,
    log_increment,
    merge_log_weights,
    next_beta,
    smc_variance_proxy,
)
from .counts import Counts
from .hmc import State, init_state
from .records import REWEIGHT_KEYS, STAGE_KEYS, SMCRunInfo
from .settings import SMCSettings
from .smc_kernel import (
    MOVE_BLOCK,
    Kernel,
    concat,
    log_incr,
    log_ratio,
    put,
    repeats,
    spread,
    take,
)

__all__ = ["MOVE_BLOCK", "STAGE_KEYS", "SMCSettings", "run_resample_move"]


def _expand(kernel: Kernel, state, log_w, ratio, d_beta, beta, gamma, acc):
    """ARM's generate loop: merged state, log weights and log increments, expansions, gamma."""
    s = kernel.settings
    states, weights, incrs = [state], [log_w], [log_incr(ratio, d_beta)]
    current, i = state, 0
    while gamma < s.arm_threshold and i < s.max_expansions:
        current, more = kernel.move(current, beta)  # continue the chains of the base set
        acc.extend(more)
        states.append(current)
        weights.append(log_w)  # a copy keeps the weights of the set it was made from
        incrs.append(log_incr(log_ratio(current), d_beta))
        merged = np.concatenate(merge_log_weights(weights))
        gamma = conditional_ess(merged, np.concatenate(incrs)) / merged.size
        i += 1
    merged = np.concatenate(merge_log_weights(weights))
    return concat(states), merged, np.concatenate(incrs), i, gamma


def _reweight(kernel: Kernel, state, log_w, beta, new_beta, acc, rec):
    """Steps 3-4 (with ARM's expansion): returns the state and normalized log weights."""
    s, n = kernel.settings, log_w.size
    ratio = log_ratio(state)
    incr = log_incr(ratio, new_beta - beta)
    gamma = conditional_ess(log_w, incr) / n
    n_exp = 0
    if s.arm and gamma < s.arm_threshold and s.max_expansions > 0:
        state, log_w, incr, n_exp, gamma = _expand(
            kernel, state, log_w, ratio, new_beta - beta, beta, gamma, acc
        )
    if not np.any(np.isfinite(log_w + incr)):
        raise RuntimeError(f"every particle has weight zero at beta = {new_beta:.6g}")
    cess = conditional_ess(log_w, incr)
    increment = log_increment(log_w, incr)
    log_w = normalize_log_weights(log_w + incr)
    ess = kish_ess(log_w)
    resampled = log_w.size > n or ess < s.resample_threshold * log_w.size
    row = (new_beta, increment, ess, cess, gamma, log_w.size, n_exp, resampled)
    for key, value in zip(REWEIGHT_KEYS, row, strict=True):
        rec[key].append(float(value))
    if resampled:
        state = take(state, resample_indices(log_w, n, kernel.rng, s.resampling))
        log_w = np.full(n, -np.log(n))
    return state, log_w


def _stage(kernel: Kernel, state, log_w, beta, fixed, rec):
    """One stage from ``beta = rec["beta"][-1]``: move, next beta, reweight, resample."""
    k = len(rec["beta"]) - 1
    acc = []
    rec["step_size"].append(kernel.step_size)
    if k > 0:  # at beta = 0 the particles are exact base draws
        state, acc = kernel.move(state, beta)
    if fixed is not None:
        new_beta = float(fixed[k + 1])
    else:
        new_beta = next_beta(beta, log_ratio(state), log_w, kernel.settings.target_ess)
    state, log_w = _reweight(kernel, state, log_w, beta, new_beta, acc, rec)
    rec["acceptance"].append(float(np.mean(acc)) if acc else np.nan)
    rec["n_moves"].append(float(len(acc)))
    kernel.scale = spread(state.x, log_w, kernel.scale)
    kernel.tune(acc)
    return state, log_w, new_beta


def _finish(kernel: Kernel, state, log_w, rec) -> State:
    """At ``beta = 1``: resample to equal weights (if needed), then move the copies
    resampling made until they have moved apart
    (:meth:`~pymc_evidence.engines.smc_kernel.Kernel.refresh`); a particle drawn once keeps
    its place (it already follows the posterior), so equal weights move nothing."""
    n, acc, copies = log_w.size, [], np.zeros(0, dtype=int)
    if np.ptp(log_w) > 0:
        index = resample_indices(log_w, n, kernel.rng, kernel.settings.resampling)
        state = take(state, index)
        kernel.scale = spread(state.x, np.zeros(n), kernel.scale)
        copies = repeats(index)
    rec["step_size"].append(kernel.step_size)
    if copies.size:
        moved, acc = kernel.refresh(take(state, copies), 1.0, rows=n)
        state = put(state, copies, moved)
    rec["acceptance"].append(float(np.mean(acc)) if acc else np.nan)
    rec["n_moves"].append(float(len(acc)))
    return state


def run_resample_move(
    density,
    x0: np.ndarray,
    rng: np.random.Generator,
    settings: SMCSettings | None = None,
    *,
    callback=None,
    finish: bool = True,
) -> tuple[float, SMCRunInfo]:
    """One run of tempered resample-move SMC (or ARM) from the base to the model.

    Parameters
    ----------
    density : BatchedDensity
        From :func:`~pymc_evidence.engines.batched_log_densities`.
    x0 : ndarray, shape (R, d)
        Exact draws from the base (see :func:`pymc_evidence.api.particles.base_particles`).
    rng : numpy.random.Generator
    settings : SMCSettings, optional
        Defaults: adaptive schedule, plain SMC (no ARM).
    callback : callable, optional
        Called as ``callback(beta, stage)`` after every stage (e.g. a progress bar).
    finish : bool, default True
        Resample to equal weights and move once more at ``beta = 1``. False stops at the
        last reweighting (``info.x`` then holds weighted particles, and the last entries
        of ``step_size``, ``acceptance`` and ``n_moves`` are NaN): a pilot run that only
        sets the schedule needs nothing more.

    Returns
    -------
    log_z : float
        ``log Zhat`` of this run, the sum of the per-stage increments.
    info : SMCRunInfo
        Per-stage arrays (``beta``, increments, ESS, CESS, ``gamma``, particle counts,
        expansions, resampling, acceptance, step size), the run's totals and its final
        equally weighted particles (see :class:`~pymc_evidence.engines.records.SMCRunInfo`).

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from pymc_evidence.base import GaussianBase
    >>> from pymc_evidence.engines import batched_log_densities
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu", 0.0, 1.0)
    ...     _ = pm.Normal("y", mu, 1.0, observed=np.array([0.5]))
    >>> base = GaussianBase(np.zeros(1), np.eye(1), log_zeta=0.0, kind="moments")
    >>> density = batched_log_densities(model, base)
    >>> rng = np.random.default_rng(0)
    >>> log_z, info = run_resample_move(density, base.sample(500, rng), rng)
    >>> exact = -0.5 * np.log(2 * np.pi * 2) - 0.25 * 0.5**2
    >>> bool(abs(log_z - exact) < 0.05), float(info.beta[-1])
    (True, 1.0)
    """
    s = settings or SMCSettings()
    fixed = s.checked_schedule()
    state = init_state(x0, density)
    n = state.x.shape[0]
    if n < 2:
        raise ValueError(f"need at least 2 particles, got {n}")
    log_w = np.full(n, -np.log(n))
    kernel = Kernel(density, rng, s, float(s.step_size), spread(state.x, log_w, None))
    kernel.counts = Counts.of_state(state)  # the base draws' evaluation
    rec = {key: [] for key in STAGE_KEYS}
    start = (0.0, np.nan, n, np.nan, np.nan, n, 0, 0)
    for key, value in zip(REWEIGHT_KEYS, start, strict=True):
        rec[key].append(float(value))
    beta = 0.0
    while beta < 1.0:
        if len(rec["beta"]) > s.max_stages:
            raise RuntimeError(
                f"the adaptive schedule needed more than {s.max_stages} stages (beta = "
                f"{beta:.3g}); raise max_stages, lower target_ess or use a better base"
            )
        state, log_w, beta = _stage(kernel, state, log_w, beta, fixed, rec)
        if callback is not None:
            callback(beta, len(rec["beta"]) - 1)
    if finish:
        state = _finish(kernel, state, log_w, rec)
    else:
        for key in ("step_size", "acceptance", "n_moves"):
            rec[key].append(np.nan)
    stages = {key: np.asarray(values, dtype=float) for key, values in rec.items()}
    info = SMCRunInfo(
        **stages,
        n_stages=len(rec["beta"]) - 1,
        variance_proxy=float(smc_variance_proxy(stages["n_particles"][1:], stages["cess"][1:])),
        n_particle_moves=int(kernel.particle_moves),
        n_density_calls=kernel.counts.n_calls,
        x=state.x,
        counts=kernel.counts,
    )
    return float(np.nansum(info.log_increment)), info
