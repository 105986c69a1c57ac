"""Bridge sampling across separated modes: clusters of chains, and a sum of their masses.

Pure numpy/scipy. Bridge sampling pools the draws of every chain and treats them as draws
of the posterior. When the posterior has separated modes and the chains do not cross
between them (each chain stays in the mode it started in), the pooled draws hold the modes
in the proportions of the chains' starting points, not of their masses, and the estimate is
biased (e.g. three chains in one of two equal modes and one in the other).

:func:`chain_clusters` groups the chains into clusters that sample the same region. Within
a cluster the proportions are whatever the chains' mixing gives; between clusters no
proportion is needed: bridge sampling each cluster's draws against its own proposal
estimates ``Z_k``, the mass of the posterior restricted to the cluster's region (the
proposal, fitted to the cluster, puts next to no mass in the other regions), and

    Z = sum_k Z_k,   Var(Z_hat) = sum_k Z_k^2 se_k^2   (independent parts),

so ``se(log Z) = sqrt(sum_k w_k^2 se_k^2)`` with ``w_k = Z_k / Z`` (delta method;
:func:`sum_of_parts`). Masses estimated otherwise (modes no chain visited) enter the sum as
further parts. :func:`combine_clusters` builds the total estimate of one bridge run.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from .logspace import logsumexp
from .record import EvidenceEstimate

__all__ = [
    "BARRIER",
    "barrier_between",
    "NEAR_PROBABILITY",
    "SEPARATION",
    "chain_clusters",
    "combine_clusters",
    "sum_of_parts",
    "summed_iterates",
]

#: Two chains sample one region when some draw of one lies inside the other's ellipsoid of
#: this probability (see :func:`chain_clusters`). Draws of one region fall inside with
#: probability about 0.999 each (Gaussian; most of them on any posterior: the squared
#: distance has mean ``d`` whatever the correlations), so "not one of a chain's draws
#: inside" does not happen to chains of one region, however high the dimension (the
#: radius is a quantile of ``chi2(d)``). Two modes split by it lie so far
#: apart that the Gaussian proposal fitted to one puts about 0.1 % of its draws on the
#: other, so per-cluster masses add up without double counting. A false split (one region
#: taken for two) would count its mass twice, a false merge only keeps the pooled estimate:
#: the rule errs towards merging (one draw inside, in either direction, is enough).
NEAR_PROBABILITY = 0.999


#: Two chains the ellipsoids join are split again when their draws lie apart: the median
#: distance from a draw of one to the nearest draw of the other exceeds this many times
#: the chains' spacing (see :func:`chain_clusters`) ...
SEPARATION = 2.0
#: ... and the log density dips more than this many nats below both ends somewhere on the
#: segment that joins their closest draws (at :data:`SEGMENT_POINTS` points).
BARRIER = 5.0
SEGMENT_POINTS = 16
#: A chain's spacing leaves out draws this close in the chain (autocorrelated neighbours).
SPACING_LAG = 20
#: Draws of each chain the spacing test looks at (the chain evenly thinned to them).
SPACING_DRAWS = 1000


def _squared_distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    d2 = np.sum(a**2, axis=1)[:, None] + np.sum(b**2, axis=1)[None, :] - 2.0 * a @ b.T
    return np.maximum(d2, 0.0)


def _spacing(z: np.ndarray, lag: float) -> float:
    """Median distance from a draw to the nearest draw of its chain more than ``lag`` draws
    away (``inf`` where a chain is too short to have one)."""
    d2 = _squared_distances(z, z)
    index = np.arange(z.shape[0])
    d2[np.abs(index[:, None] - index[None, :]) <= lag] = np.inf
    return float(np.sqrt(np.median(np.min(d2, axis=1))))


def barrier_between(a: np.ndarray, b: np.ndarray, log_density) -> bool:
    """Whether the log density dips more than :data:`BARRIER` nats below both ``a`` and
    ``b`` (or is not finite) somewhere on the segment between them.

    Examples
    --------
    >>> two = lambda p: np.logaddexp(-0.5 * (p[:, 0] + 5) ** 2, -0.5 * (p[:, 0] - 5) ** 2)
    >>> barrier_between(np.array([-5.0]), np.array([5.0]), two)  # 12 nats down at 0
    True
    >>> barrier_between(np.array([-5.0]), np.array([-3.0]), two)  # one slope, no dip
    False
    """
    t = np.linspace(0.0, 1.0, SEGMENT_POINTS + 2)[:, None]
    values = np.asarray(log_density(a + t * (b - a)), dtype=float)
    inner = np.where(np.isfinite(values[1:-1]), values[1:-1], -np.inf)
    return bool(np.min(inner) < min(values[0], values[-1]) - BARRIER)


def _apart(x: np.ndarray, log_density) -> np.ndarray:
    """``apart[i, j]``: chains ``i`` and ``j`` sample two regions with a barrier between
    them (see :func:`chain_clusters`); coordinates in units of the pooled standard
    deviation for the distances."""
    n_chain, n_draw, _ = x.shape
    apart = np.zeros((n_chain, n_chain), dtype=bool)
    if log_density is None:
        return apart
    thin = x[:, :: max(1, n_draw // SPACING_DRAWS)]
    sd = x.reshape(-1, x.shape[-1]).std(axis=0)
    z = thin / np.where(sd > 0, sd, 1.0)
    lag = SPACING_LAG * thin.shape[1] / n_draw
    spacing = [_spacing(z[i], lag) for i in range(n_chain)]
    for i in range(n_chain):
        for j in range(i + 1, n_chain):
            d2 = _squared_distances(z[i], z[j])
            cross = max(np.median(np.min(d2, axis=k)) for k in (0, 1))
            if np.sqrt(cross) <= SEPARATION * max(spacing[i], spacing[j]):
                continue
            a, b = np.unravel_index(np.argmin(d2), d2.shape)
            apart[i, j] = apart[j, i] = barrier_between(thin[i, a], thin[j, b], log_density)
    return apart


def _near(x, mean, sd, radius2) -> np.ndarray:
    """``near[i, j]``: some draw of chain ``j`` lies within ``radius2`` of chain ``i``'s
    mean in chain ``i``'s diagonal metric."""
    n_chain = x.shape[0]
    near = np.zeros((n_chain, n_chain), dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(n_chain):
            z = (x - mean[i]) / sd[i]
            d2 = np.sum(np.where(np.isnan(z), 0.0, z) ** 2, axis=-1)  # 0 / 0: same value
            near[i] = np.min(d2, axis=1) <= radius2
    return near


def chain_clusters(x, probability: float = NEAR_PROBABILITY, log_density=None) -> list[np.ndarray]:
    """Group chains into clusters of chains that sample the same region.

    Chains ``i`` and ``j`` overlap when some draw of ``j`` lies inside chain ``i``'s
    ellipsoid ``sum_k ((x_k - mean_ik) / sd_ik)^2 <= chi2.ppf(probability, d)`` (its
    per-coordinate means and sds), or some draw of ``i`` inside ``j``'s. A diagonal metric
    needs no covariance (stable whatever ``d`` and the chains' length) and leaves the
    mean of the squared distance at ``d`` on correlated posteriors too. Clusters are the
    connected components of this relation (its transitive closure), so a chain that
    crosses between two modes joins their chains into one cluster, and a chain stuck in a
    corner of another's region (a funnel's neck) joins it.

    The ellipsoids see only each chain's means and spreads. Two thin Gaussian shells in 5-D
    (radius 2, centres 7 apart, in the unconstrained coordinates of a uniform box) overlap
    by them, and chains split unevenly between the shells were pooled as one region:
    bridge sampling was low, with a large se from the chains' disagreement (measured in
    :doc:`/hard_models`, "The other methods on separated modes"). Given
    the ``log_density``, two chains the ellipsoids join are held apart where their draws
    are apart *and* a barrier lies between them:

    * the median distance from a draw of one chain to the nearest draw of the other is
      more than :data:`SEPARATION` times the chains' spacing (a chain's median distance
      from a draw to its nearest draw more than :data:`SPACING_LAG` draws away;
      coordinates in units of the pooled standard deviation). For chains of one region
      both medians measure the same thing: their ratio stayed close to 1 on mixtures,
      hierarchies (10 and 302 dimensions), an LKJ model, a latent GP and an AR(1)
      series, and was well above :data:`SEPARATION` for the shells' chains and a
      2-component mixture's;
    * the log density dips more than :data:`BARRIER` nats below both ends on the segment
      joining the two chains' closest draws, so that two slowly mixing chains of one
      connected region (a ridge each explores a part of) are not counted twice (the
      shells' barrier is far deeper).
    Parameters
    ----------
    x : array_like, shape (chain, draw, d)
        Draws of each chain.
    probability : float
        The ellipsoids' probability under a Gaussian (see :data:`NEAR_PROBABILITY`).
    log_density : callable, optional
        ``log_density(points) -> values`` on rows of the same coordinates as ``x`` (the
        model's joint log density); without it only the ellipsoids decide.

    Returns
    -------
    list of ndarray of int
        The chain indices of each cluster, ascending, clusters ordered by their first chain.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(4, 200, 2))
    >>> x[[1, 3]] += 10.0     # chains 1 and 3 sit in a second mode
    >>> [c.tolist() for c in chain_clusters(x)]
    [[0, 2], [1, 3]]
    """
    x = np.asarray(x, dtype=float)
    if x.ndim != 3 or x.shape[1] < 2:
        raise ValueError(f"x must be shaped (chain, draw >= 2, d); got {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("x has nan or infinite draws")
    if not 0 < probability < 1:
        raise ValueError(f"probability must be in (0, 1), got {probability}")
    radius2 = stats.chi2.ppf(probability, x.shape[-1])
    near = _near(x, x.mean(axis=1), x.std(axis=1, ddof=1), radius2)
    reach = ((near | near.T) & ~_apart(x, log_density)).astype(int)
    while True:  # transitive closure by repeated squaring
        wider = ((reach @ reach) > 0).astype(int)
        if np.array_equal(wider, reach):
            break
        reach = wider
    labels = np.argmax(reach, axis=1)  # the first chain each chain reaches
    return [np.flatnonzero(labels == label) for label in np.unique(labels)]


def sum_of_parts(log_z, se) -> tuple[float, float, np.ndarray]:
    """``log`` of a sum of independently estimated masses, with its delta-method se.

    Parameters
    ----------
    log_z, se : array_like, shape (k,)
        The parts' ``log Z_k`` and the standard errors of those logs.

    Returns
    -------
    log_z : float
        ``log sum_k Z_k``.
    se : float
        ``sqrt(sum_k w_k^2 se_k^2)`` with ``w_k = Z_k / Z``.
    weights : ndarray
        The shares ``w_k``.

    Examples
    --------
    >>> log_z, se, w = sum_of_parts([0.0, 0.0], [0.1, 0.1])   # two equal halves
    >>> round(log_z, 6), round(se, 6), w.tolist()
    (0.693147, 0.070711, [0.5, 0.5])
    """
    log_z, se = np.asarray(log_z, dtype=float), np.asarray(se, dtype=float)
    if log_z.ndim != 1 or log_z.size == 0 or log_z.shape != se.shape:
        raise ValueError(f"need matching 1-D log_z and se; got {log_z.shape}, {se.shape}")
    total = float(logsumexp(log_z))
    weights = np.exp(log_z - total)
    return total, float(np.sqrt(np.sum((weights * se) ** 2))), weights


def _per_chain(estimates, chains, n_chain, log_z) -> tuple[np.ndarray, np.ndarray]:
    """Each chain's estimate of the total: its cluster's mass replaced by the chain's."""
    per_z, per_se = np.full(n_chain, np.nan), np.full(n_chain, np.nan)
    for k, (est, idx) in enumerate(zip(estimates, chains, strict=True)):
        if np.size(est.per_chain_log_z) != len(idx):
            continue
        for c, z_c, se_c in zip(idx, est.per_chain_log_z, est.per_chain_se, strict=True):
            parts = np.array(log_z, dtype=float)
            parts[k] = z_c
            per_z[c] = logsumexp(parts)
            per_se[c] = se_c * np.exp(z_c - per_z[c])
    return per_z, per_se


def _summed_diagnostics(estimates, weights) -> dict:
    """The run-level diagnostics of the total: sums, extremes, and weighted ``re2``."""
    diags = [e.diagnostics for e in estimates]

    def pick(key, how, default=np.nan):
        return float(how([d.get(key, default) for d in diags]))

    w2 = weights[: len(estimates)] ** 2
    re2_post = float(np.sum(w2 * [d.get("re2_posterior", np.nan) for d in diags]))
    se2 = float(np.sum(w2 * [e.se**2 for e in estimates]))
    return {
        "converged": pick("converged", min, 1.0),
        "n_iterations": pick("n_iterations", max, 0.0),
        "last_step": pick("last_step", max, 0.0),
        "n_eff": pick("n_eff", sum),
        "n_posterior": pick("n_posterior", sum),
        "n_proposal": pick("n_proposal", sum),
        "re2_posterior": re2_post,
        "re2_proposal": se2 - re2_post,  # so that the two add up to the bridge part's se^2
        "chain_disagreement": float(
            np.nanmin([d.get("chain_disagreement", 1.0) for d in diags] + [1.0])
        ),
    }


def combine_clusters(
    estimates, chains, n_chain: int, *, extra_log_mass=(), extra_se=(), method="bridge"
) -> EvidenceEstimate:
    """The total of per-cluster bridge estimates (and of extra masses) as one estimate.

    Parameters
    ----------
    estimates : sequence of EvidenceEstimate
        One bridge estimate of ``log Z_k`` per cluster (from
        :func:`~pymc_evidence.estimators.bridge.bridge_log_evidence`).
    chains : sequence of array of int
        The chains of each cluster (as from :func:`chain_clusters`).
    n_chain : int
        Number of chains in all.
    extra_log_mass, extra_se : sequence of float
        Further independently estimated masses (e.g. of modes no chain visited) and the se
        of their logs.
    method : str

    Returns
    -------
    EvidenceEstimate
        ``log Z = log(sum_k Z_k + sum extra)``, se by :func:`sum_of_parts`. Per-chain
        values: the total with the chain's cluster mass replaced by the chain's own
        estimate (where the clusters carry per-chain values). Diagnostics: ``n_clusters``,
        ``log_z_cluster_<k>`` and ``se_cluster_<k>``, ``n_missed_modes`` and
        ``missed_mode_log_mass`` (``-inf`` when none), the clusters' ``re2_*`` weighted so
        that ``re2_proposal + re2_posterior`` is the squared se of their part, the worst
        ``converged``/``chain_disagreement`` and summed sizes. Warnings of every cluster,
        without repeats.

    Examples
    --------
    >>> halves = [EvidenceEstimate(np.log(0.5), 0.02, "bridge") for _ in range(2)]
    >>> est = combine_clusters(halves, [np.array([0]), np.array([1])], 2)
    >>> round(est.log_z, 12), round(est.se, 4), est.diagnostics["n_clusters"]
    (0.0, 0.0141, 2.0)
    """
    estimates, chains = list(estimates), [np.asarray(c, dtype=int) for c in chains]
    if not estimates or len(estimates) != len(chains):
        raise ValueError(f"need one estimate per cluster: {len(estimates)} for {len(chains)}")
    extra_log_mass, extra_se = np.atleast_1d(extra_log_mass), np.atleast_1d(extra_se)
    if extra_log_mass.shape != extra_se.shape:
        raise ValueError("extra_log_mass and extra_se must have the same length")
    log_parts = np.concatenate([[e.log_z for e in estimates], extra_log_mass])
    se_parts = np.concatenate([[e.se for e in estimates], extra_se])
    log_z, se, weights = sum_of_parts(log_parts, se_parts)
    per_z, per_se = _per_chain(estimates, chains, int(n_chain), log_parts)
    diag = _summed_diagnostics(estimates, weights)
    diag["re2_posterior"] += float(np.sum((weights[len(estimates) :] * extra_se) ** 2))
    diag["n_clusters"] = float(len(estimates))
    for k, est in enumerate(estimates):
        diag[f"log_z_cluster_{k}"], diag[f"se_cluster_{k}"] = float(est.log_z), float(est.se)
    diag["n_missed_modes"] = float(extra_log_mass.size)
    diag["missed_mode_log_mass"] = (
        float(logsumexp(extra_log_mass)) if extra_log_mass.size else -np.inf
    )
    messages = tuple(dict.fromkeys(m for e in estimates for m in e.warnings))
    return EvidenceEstimate(log_z, se, method, per_z, per_se, diag, messages)


def summed_iterates(iterates, extra_log_mass=()) -> np.ndarray:
    """The running total of several fixed-point iterations of ``log Z_k`` (plus constants).

    Parameters
    ----------
    iterates : sequence of sequence of float
        Each cluster's iterates (start first); shorter ones are held at their last value.
    extra_log_mass : sequence of float
        Constant masses added at every step.

    Returns
    -------
    ndarray
        ``log(sum_k Z_k^(t) + sum extra)`` for ``t`` up to the longest iteration.

    Examples
    --------
    >>> summed_iterates([[0.0, 1.0], [0.0]]).round(4).tolist()
    [0.6931, 1.3133]
    """
    seqs = [np.asarray(s, dtype=float) for s in iterates]
    if not seqs or min(s.size for s in seqs) == 0:
        raise ValueError("need at least one non-empty sequence of iterates")
    n = max(s.size for s in seqs)
    padded = np.stack([np.concatenate([s, np.full(n - s.size, s[-1])]) for s in seqs])
    extra = np.broadcast_to(np.atleast_1d(extra_log_mass)[:, None], (np.size(extra_log_mass), n))
    return logsumexp(np.concatenate([padded, extra]), axis=0)
