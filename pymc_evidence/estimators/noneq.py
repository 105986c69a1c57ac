"""Nonequilibrium (work-based) evidence estimators: AIS, reverse AIS and BAR (Habeck 2017).

Inputs are the works of independent annealing runs, one value per run. Sign conventions:

* a **forward** work ``W_f = -log w`` is minus the log importance weight of an AIS run from
  the normalised base (``Z_0 = 1``) to the target, so ``E[exp(-W_f)] = Z``;
* a **reverse** work ``W_r`` comes from a run started at the target (posterior draws) and
  annealed back to the base, with ``E[exp(-W_r)] = 1 / Z``. This is the *physical* reverse
  work, i.e. minus Habeck's ``W[x_reverse]`` (the "sign trap" of the digest).

With ``dF = -log Z`` the Crooks theorem reads ``p_f(W) / p_r(-W) = exp(W - dF)``, and Jensen
gives the stochastic bounds ``-mean(W_f) <= log Z <= mean(W_r)`` (in expectation); their gap
``mean(W_f) + mean(W_r)`` is the symmetrised KL ("hysteresis") between the path measures.
Pure numpy/scipy.
"""

from __future__ import annotations

import numpy as np
from scipy import optimize, special

from .diagnostics import ConvergenceWarning, CrossCheckWarning, WarningMessage, WeightWarning
from .logspace import emit_warnings, kish_ess, log_mean_exp, log_mean_exp_se
from .record import EvidenceEstimate

__all__ = [
    "ais_log_evidence",
    "reverse_ais_log_evidence",
    "bar_log_evidence",
    "crossing_messages",
    "works_log_evidence",
]

#: Warn when the Kish ESS of the AIS / RAIS weights is below this fraction of the runs ...
ESS_MIN_FRACTION = 0.1
#: ... or below this absolute number.
ESS_MIN = 5.0
#: Warn when the BAR overlap (see :func:`bar_log_evidence`) is below this.
OVERLAP_MIN = 0.03


def checked_works(work, name: str, zero_weights: bool = False) -> np.ndarray:
    """The works as a 1-D float array; with ``zero_weights``, a forward work that is not
    finite (a run from a base draw where the model's density is zero or not finite) is
    ``+inf``, a run of weight zero, and at least two must be finite."""
    w = np.asarray(work, dtype=float)
    if zero_weights and w.ndim == 1:
        w = np.where(np.isfinite(w), w, np.inf)
    finite = np.isfinite(w) | (zero_weights & (w == np.inf))
    if w.ndim != 1 or np.sum(np.isfinite(w)) < 2 or not np.all(finite):
        raise ValueError(
            f"{name} must be a 1-D array of >= 2 finite works, got shape {w.shape} with "
            f"{int(np.sum(~np.isfinite(w)))} not finite (runs whose density was not finite "
            "along the way; the forward AIS estimate counts them as weight zero)"
        )
    return w


def _ess_messages(log_w: np.ndarray, label: str) -> tuple[float, list[str]]:
    ess, n = kish_ess(log_w), log_w.size
    if ess < ESS_MIN_FRACTION * n or ess < ESS_MIN:
        return ess, [
            f"Kish ESS of the {label} weights is {ess:.1f} of {n} runs (below 5 or 10%): the "
            "exponential average rests on a few runs, so the estimate is probably biased and its"
            " se unreliable; use more runs, anneal more slowly or use BAR with reverse runs"
        ]
    return ess, []


def ais_log_evidence(work_f) -> EvidenceEstimate:
    """Forward AIS / Jarzynski estimate ``log Zhat = log mean exp(-W_f)``.

    ``Zhat`` is unbiased for ``Z``; ``log Zhat`` is biased low (Jensen). The se is the delta
    method for the log of that unbiased mean, ``sd(w / mean w) / sqrt(n)`` with
    ``w = exp(-W_f)``: it ignores the low bias and is itself unreliable when few runs dominate.

    Diagnostics: ``n_runs``; ``ess`` (Kish ESS of ``w``); ``lower_bound = -mean(W_f)``
    (``<= log Z`` in expectation, as is ``E[log Zhat]``); ``mean_work``; ``sd_work``.
    Warns (:class:`~.diagnostics.EvidenceWarning`, also in ``warnings``) when the ESS is below
    10% of the runs or below 5.

    Parameters
    ----------
    work_f : array_like, shape (run,)
        Forward works; one that is not finite counts as ``+inf`` (weight zero), with a
        warning, and at least two must be finite.

    Returns
    -------
    EvidenceEstimate
        ``method = "ais"``; ``per_chain_log_z`` holds each run's own estimate ``-W_f``.

    Examples
    --------
    >>> est = ais_log_evidence(np.ones(10))
    >>> est.log_z, est.se, est.diagnostics["lower_bound"]
    (-1.0, 0.0, -1.0)
    """
    w = checked_works(work_f, "work_f", zero_weights=True)
    value, se = log_mean_exp_se(-w)
    ess, messages = _ess_messages(-w, "forward AIS")
    kept = w[np.isfinite(w)]
    if kept.size < w.size:
        messages.append(
            f"{w.size - kept.size} of {w.size} forward runs met a density that is not finite "
            "and count with weight zero (their base draws fell where the model's density is "
            "zero or overflows)"
        )
    diag = {
        "n_runs": float(w.size),
        "ess": ess,
        "lower_bound": float(-kept.mean()),
        "mean_work": float(kept.mean()),
        "sd_work": float(kept.std(ddof=1)),
        "n_zero_weight": float(w.size - kept.size),
    }
    return EvidenceEstimate(
        value, se, "ais", -w, np.empty(0), diag, emit_warnings(messages, WeightWarning)
    )


def reverse_ais_log_evidence(work_r) -> EvidenceEstimate:
    """Reverse AIS (RAISE) estimate ``log Zhat = -log mean exp(-W_r)``.

    ``mean exp(-W_r)`` is unbiased for ``1 / Z``, so ``log Zhat`` is biased high. The se is
    the delta method, ``sd(v / mean v) / sqrt(n)`` with ``v = exp(-W_r)``.

    Diagnostics: ``n_runs``; ``ess`` (Kish ESS of ``v``); ``upper_bound = mean(W_r)``
    (``>= log Z`` in expectation); ``mean_work``; ``sd_work``. Warns as
    :func:`ais_log_evidence`. The reverse runs must start from exact posterior draws.

    Parameters
    ----------
    work_r : array_like, shape (run,)
        Reverse works (physical sign, ``E[exp(-W_r)] = 1/Z``), finite.

    Returns
    -------
    EvidenceEstimate
        ``method = "rais"``; ``per_chain_log_z`` holds each run's own estimate ``W_r``.

    Examples
    --------
    >>> est = reverse_ais_log_evidence(np.full(10, 2.0))
    >>> est.log_z, est.diagnostics["upper_bound"]
    (2.0, 2.0)
    """
    w = checked_works(work_r, "work_r")
    value, se = log_mean_exp_se(-w)
    ess, messages = _ess_messages(-w, "reverse AIS")
    diag = {
        "n_runs": float(w.size),
        "ess": ess,
        "upper_bound": float(w.mean()),
        "mean_work": float(w.mean()),
        "sd_work": float(w.std(ddof=1)),
    }
    return EvidenceEstimate(
        -value, se, "rais", w, np.empty(0), diag, emit_warnings(messages, WeightWarning)
    )


def _bar_terms(log_z: float, wf: np.ndarray, wr: np.ndarray, m: float):
    """Forward / reverse Fermi terms ``P(reverse | W_f,i)`` and ``P(forward | -W_r,j)``."""
    return special.expit(-(m + wf + log_z)), special.expit(m - wr + log_z)


def bar_overlap_se(log_z: float, wf: np.ndarray, wr: np.ndarray) -> tuple[float, float]:
    """Overlap ``Omega`` and asymptotic se ``sqrt((1/n_f + 1/n_r)(1/Omega - 1))``."""
    nf, nr = wf.size, wr.size
    m = np.log(nf / nr)
    x = np.concatenate([m + wf + log_z, m - wr + log_z])  # pooled, forward-work convention
    prod = np.exp(-np.logaddexp(0.0, x) - np.logaddexp(0.0, -x))  # f(x) f(-x)
    overlap = float(min(1.0, (nf + nr) / (nf * nr) * prod.sum()))
    with np.errstate(divide="ignore"):
        var = (1.0 / nf + 1.0 / nr) * (1.0 / overlap - 1.0)
    return overlap, float(np.sqrt(var))


def bar_log_evidence(work_f, work_r, *, tol: float = 1e-10, maxiter: int = 200) -> EvidenceEstimate:
    """Bennett acceptance ratio (BAR) estimate of ``log Z`` from forward and reverse works.

    With ``M = log(n_f / n_r)`` and ``s(t) = 1 / (1 + exp(-t))``, ``log Zhat`` is the root of

    ``g(l) = sum_i s(-(M + W_f,i + l)) - sum_j s(M - W_r,j + l)``,

    Bennett's equation ``sum_i 1/(1 + e^(M + W_f,i - dF)) = sum_j 1/(1 + e^(-M + W_r,j + dF))``
    with ``dF = -l`` (Shirts et al. 2003). It follows from Crooks,
    ``p_f(W) / p_r(-W) = exp(W - dF)``: ``s(M + W + l)`` is then the probability that a pooled
    forward-convention work ``W`` (``W_f`` or ``-W_r``) came from the forward set, and BAR is
    the maximum-likelihood fit of that logistic model. ``g`` decreases strictly from ``n_f`` to
    ``-n_r``, so the root is unique; it is bracketed from the AIS/RAIS estimates (widened
    geometrically) and found by :func:`scipy.optimize.brentq`.

    **Overlap** ``Omega = (n_f + n_r) / (n_f n_r) * sum_pooled s(x) s(-x)``, ``x = M + W + l``:
    1 when the two work distributions coincide (after the Crooks tilt), 0 without overlap. For
    two states it is pymbar's overlap, one minus the second eigenvalue of the overlap matrix.
    The asymptotic variance of Shirts et al. (2003),
    ``[sum_pooled 1/(2 + 2 cosh x)]^-1 - (1/n_f + 1/n_r)``, equals
    ``(1/n_f + 1/n_r)(1/Omega - 1)``; its square root is the se. It assumes exact posterior
    starts for the reverse runs and independent runs, and is optimistic without overlap.

    Parameters
    ----------
    work_f, work_r : array_like, shape (run,)
        Forward and reverse works (conventions in the module docstring); counts may differ.
    tol : float, default 1e-10
        Absolute tolerance on ``log Z`` for the root finder.
    maxiter : int, default 200
        Iteration cap of :func:`scipy.optimize.brentq`.

    Returns
    -------
    EvidenceEstimate
        ``method = "bar"``. Diagnostics: ``n_f``, ``n_r``, ``log_z_ais``, ``log_z_rais``,
        ``lower_bound``, ``upper_bound``, ``hysteresis`` (``mean W_f + mean W_r``),
        ``overlap``, ``converged`` (1.0 / 0.0), ``iterations``.

    Raises
    ------
    RuntimeError
        If the root cannot be bracketed (e.g. works so extreme that ``g`` is not finite).

    Warns
    -----
    EvidenceWarning
        When ``overlap < 0.03`` or the root finder did not converge.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> wf = rng.normal(2.0 + 0.5, 1.0, 2000)  # log Z = -2, sigma = 1
    >>> wr = rng.normal(-2.0 + 0.5, 1.0, 1000)
    >>> est = bar_log_evidence(wf, wr)
    >>> abs(est.log_z + 2.0) < 4 * est.se
    True
    """
    wf, wr = checked_works(work_f, "work_f"), checked_works(work_r, "work_r")
    nf, nr = wf.size, wr.size
    m = float(np.log(nf / nr))
    lz_f, lz_r = log_mean_exp(-wf), -log_mean_exp(-wr)

    def g(log_z: float) -> float:
        a, b = _bar_terms(log_z, wf, wr, m)
        return float((a.sum() - b.sum()) / (nf + nr))

    lo, hi = min(lz_f, lz_r), max(lz_f, lz_r)
    # Beyond these g has the sign of n_f (resp. -n_r) up to e^-40 relative terms.
    far_lo = min(-(m + wf.max()), wr.min() - m) - 40.0
    far_hi = max(-(m + wf.min()), wr.max() - m) + 40.0
    step = max(1.0, hi - lo)
    while g(lo) <= 0.0 and lo > far_lo:
        lo, step = max(lo - step, far_lo), 2.0 * step
    step = max(1.0, hi - lo)
    while g(hi) >= 0.0 and hi < far_hi:
        hi, step = min(hi + step, far_hi), 2.0 * step
    g_lo, g_hi = g(lo), g(hi)
    if not (g_lo > 0.0 > g_hi):
        raise RuntimeError(
            f"BAR root not bracketed: g({lo:.6g}) = {g_lo:.3g}, g({hi:.6g}) = {g_hi:.3g}; "
            "the works are non-finite or too extreme for double precision"
        )
    root, info = optimize.brentq(g, lo, hi, xtol=tol, maxiter=maxiter, full_output=True, disp=False)
    converged, iterations = bool(info.converged), info.iterations
    overlap, se = bar_overlap_se(root, wf, wr)
    diag = {
        "n_f": float(nf),
        "n_r": float(nr),
        "log_z_ais": lz_f,
        "log_z_rais": lz_r,
        "lower_bound": float(-wf.mean()),
        "upper_bound": float(wr.mean()),
        "hysteresis": float(wf.mean() + wr.mean()),
        "overlap": overlap,
        "converged": float(converged),
        "iterations": float(iterations),
    }
    messages = []
    if overlap < OVERLAP_MIN:
        messages.append(
            f"forward and reverse work distributions barely overlap (overlap = {overlap:.3g} < "
            f"{OVERLAP_MIN:g}, hysteresis = {diag['hysteresis']:.3g} nats): the BAR estimate and "
            "its se are unreliable; anneal more slowly"
        )
    if not converged:
        text = f"BAR root finder did not converge in {maxiter} iterations"
        messages.append(WarningMessage(text, ConvergenceWarning))
    messages = emit_warnings(messages, WeightWarning)
    return EvidenceEstimate(float(root), se, "bar", np.empty(0), np.empty(0), diag, messages)


def crossing_messages(work_f, work_r, z: float = 4.0) -> list[str]:
    """A warning text when the forward (AIS) estimate lies clearly above the reverse one.

    In expectation ``log Zhat_AIS <= log Z <= log Zhat_RAIS`` (Jensen); a forward estimate
    more than ``z`` combined standard errors above the reverse one means the reverse runs
    did not start from the posterior (a sampler that missed part of it) or the kernels of
    the two directions differ. Works follow the module's conventions.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> crossing_messages(rng.normal(0.5, 1.0, 500), rng.normal(0.5, 1.0, 500))
    []
    >>> len(crossing_messages(rng.normal(-2.0, 0.1, 500), rng.normal(-3.0, 0.1, 500)))
    1
    """
    wf, wr = checked_works(work_f, "work_f"), checked_works(work_r, "work_r")
    lz_f, se_f = log_mean_exp_se(-wf)
    lz_r, se_r = log_mean_exp_se(-wr)
    lz_r = -lz_r
    gap, se = lz_f - lz_r, float(np.hypot(se_f, se_r))
    if gap > z * se:
        text = (
            f"forward AIS ({lz_f:.3f}) lies {gap:.3f} nats above reverse AIS ({lz_r:.3f}), "
            f"more than {z:g} se: the reverse runs did not start from the posterior (or the "
            "kernels differ), so the BAR estimate is biased beyond its se"
        )
        return [WarningMessage(text, CrossCheckWarning)]
    return []


def works_log_evidence(work_f=None, work_r=None) -> EvidenceEstimate:
    """The estimate of the works given: forward AIS (forward works only), reverse AIS
    (reverse works only) or BAR (both).

    Parameters
    ----------
    work_f, work_r : array_like, shape (run,), optional
        Forward and (physical) reverse works, as in the module docstring. Pass only the
        works the estimate should use (a method's spec says which:
        :attr:`~pymc_evidence.methods._spec.MethodSpec.works`).

    Returns
    -------
    EvidenceEstimate
        Of :func:`ais_log_evidence`, :func:`reverse_ais_log_evidence` or
        :func:`bar_log_evidence`.

    Raises
    ------
    ValueError
        Without any works.

    Examples
    --------
    >>> works_log_evidence(work_r=np.full(10, 2.0)).log_z
    2.0
    >>> works_log_evidence(np.ones(10), np.ones(10)).method
    'bar'
    """
    if work_f is None and work_r is None:
        raise ValueError("works_log_evidence needs the forward or the reverse works, or both")
    if work_r is None:
        return ais_log_evidence(work_f)
    if work_f is None:
        return reverse_ais_log_evidence(work_r)
    return bar_log_evidence(work_f, work_r)
