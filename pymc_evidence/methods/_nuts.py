"""Starting NUTS from the base: initial values and the initial mass matrix.

The tempering methods (``ct``, ``gibbs_ct``, ``st``) sample a density that at ``beta = 0``
is the base, so the base's draws are good starting points and its variances a good first
diagonal mass matrix.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from pymc.step_methods.hmc.quadpotential import QuadPotentialDiagAdapt

from ..nuts import run_step
from ..runtime.runtime import model_space

__all__ = [
    "MAX_TEMPERING_MODES",
    "initvals_from_base",
    "potential_from_base",
    "refuse_many_modes",
    "refuse_modes_beyond_chains",
    "separated_modes",
    "sample_step",
    "with_base_weights_se",
]

#: Variance of the standard logistic distribution (the prior of the CT variable ``u``).
_LOGISTIC_VAR = np.pi**2 / 3.0
#: Most separated modes (components of a mixture base with 1 % of its weight or more) on
#: which ``ct``, ``gibbs_ct`` and ``st`` run (:func:`refuse_many_modes`).
MAX_TEMPERING_MODES = 4


def refuse_many_modes(problem, options) -> None:
    """Refuse, before any sampling, a tempering method on a posterior whose base holds more
    than :data:`MAX_TEMPERING_MODES` separated modes.

    A tempering chain moves between modes only through the hot end (``beta`` near 0),
    entering a mode at random each time it cools, so the evidence's se falls with the
    round trips per mode. With many modes (the egg-box, the two Gaussian shells, the six
    label-switched modes of a 3-component ``NormalMixture``) their errors were right within
    an se that no default length brings down to a usable size, where with two modes it is
    small (measured in :doc:`/hard_models`, "The other methods on separated modes"). The
    annealing methods move every particle through every temperature at once and keep the
    base's modes in proportion.
    """
    n_modes = separated_modes(problem.tempering_base)
    if n_modes > MAX_TEMPERING_MODES:
        raise ValueError(
            f"the base holds {n_modes} components (separated modes that its mode search "
            f"found), more than the {MAX_TEMPERING_MODES} on which tempering chains "
            "cross between modes often enough for a usable se (they cross only through "
            "the base end); use method='smc' (the default) or 'ais', which anneal "
            "every particle from the base and keep its modes in proportion ('bar', "
            f"'rais' and 'lis' too, with chains={n_modes} or more: their reverse runs start "
            "from NUTS chains, one mode each)"
        )


def separated_modes(base) -> int:
    """The separated modes a base holds: its mixture components with 1 % of its weight or
    more, or, for one Gaussian moment-matched to distinct fits (``kind="merged"``), the fits
    with 1 % of their summed evidence (its
    :attr:`~pymc_evidence.base.gaussian.GaussianBase.component_log_zeta`) or more (pass the
    fit, not its widened copy: :attr:`~pymc_evidence.basefit.pipeline.BaseFit.fit`)."""
    weights = getattr(base, "weights", None)
    if weights is None:
        log_zeta = np.asarray(getattr(base, "component_log_zeta", ()) or [0.0])
        weights = np.exp(log_zeta - np.logaddexp.reduce(log_zeta))
    return int(np.sum(np.asarray(weights, dtype=float) >= 0.01))


def refuse_modes_beyond_chains(problem, options) -> None:
    """Refuse, before any NUTS sampling, a reverse method (``rais``, ``bar``, ``lis``) whose
    base holds more separated modes than there are NUTS chains to start its reverse runs.

    A NUTS chain stays in the mode it starts in, and reverse runs from mode ``k`` estimate
    ``Z_k / Q_k`` (``Q_k`` the base's mass there), not ``Z``; the se is therefore at least
    the spread between chains, which cannot show a mode that no chain sits in. With more
    modes than chains some always go unvisited: on the two Gaussian shells and the egg-box
    ``rais``, ``bar`` and ``lis`` were off by about their (large) se where ``smc`` was close
    (measured in :doc:`/hard_models`, "The other methods on separated modes"). Draws passed
    as ``posterior=`` are the user's: they run, with the chain-spread se and its warning.
    """
    if options.given_draws is not None:
        return
    chains = int(problem.sampling.chains)
    n_modes = separated_modes(problem.fitted.fit)  # a widened base counts as its fit
    if n_modes > chains:
        raise ValueError(
            f"the base holds {n_modes} components (separated modes that its mode search "
            f"found) and the reverse runs would start from {chains} NUTS chains, each of "
            "which stays in its mode: the modes no chain reaches are missing from the "
            "estimate and its se; use method='smc' (the default) or 'ais', which anneal "
            "every particle from the base and keep its modes in proportion"
        )


def initvals_from_base(problem, chains: int, *, with_u: bool) -> list[dict]:
    """One starting point per chain, each an exact draw of the fit the NUTS methods use
    (:attr:`~pymc_evidence.problem.EvidenceProblem.tempering_base`, seeded by stream
    ``"init"``); ``with_u`` adds a standard logistic start for the CT variable ``ct_u``."""
    rng = problem.rng("init")
    points = []
    for x in problem.tempering_base.sample(chains, rng):
        point = problem.space.constrain(x)
        if with_u:
            point["ct_u"] = np.asarray(rng.logistic())
        points.append(point)
    return points


def potential_from_base(base, model) -> QuadPotentialDiagAdapt:
    """NUTS's initial diagonal mass matrix from the base, in ``model``'s value-variable order
    (variables the base does not know, like ``ct_u``, start at the logistic variance)."""
    mean, _ = base.moments()
    var = base.scale**2
    offsets = np.cumsum((0,) + tuple(base.sizes))
    where = {name: slice(offsets[i], offsets[i + 1]) for i, name in enumerate(base.names)}
    point = model_space(model).initial_point()
    means, variances = [], []
    for v in model.value_vars:
        if v.name in where:
            means.append(mean[where[v.name]])
            variances.append(var[where[v.name]])
        else:
            size = np.size(point[v.name])
            means.append(np.zeros(size))
            variances.append(np.full(size, _LOGISTIC_VAR))
    mean, var = np.concatenate(means), np.concatenate(variances)
    return QuadPotentialDiagAdapt(mean.size, mean, var, 10)


def sample_step(problem, step, *, random_seed: int, draws=None, tune=None):
    """``pm.sample`` of the problem's model with a tempering step method, every chain started
    from its own base draw (the user's ``initvals`` update them)."""
    chains = problem.sampling.chains
    return run_step(
        problem.model,
        problem.sampling,
        step,
        random_seed=random_seed,
        draws=draws,
        tune=tune,
        initvals=initvals_from_base(problem, chains, with_u=False),
    )


def with_base_weights_se(est, base):
    """``est`` with the se of a mixture base's weights added in quadrature.

    A chain that never crosses between the components of a mixture base (a spike inside a
    bump, say) estimates ``Z_k / w_k`` for the component it sits in, so its answer leans on
    the component weights, which no chain checks; their se (``base.stats.base_weights_se``,
    set by :func:`~pymc_evidence.basefit.modes.mixture_of`) then belongs in the estimate's.
    On Skilling's phase transition the batch-means se alone of ``ct``, ``gibbs_ct`` and
    ``st`` was several times smaller than their errors (measured in :doc:`/hard_models`,
    "Every method, one seed"). Bases without that statistic leave ``est`` unchanged.
    """
    extra = getattr(getattr(base, "stats", None), "base_weights_se", None)
    extra = 0.0 if extra is None else float(extra)
    if not extra > 0.0:
        return est
    diagnostics = {**est.diagnostics, "mcmc_se": est.se, "base_weights_se": extra}
    return replace(est, se=float(np.hypot(est.se, extra)), diagnostics=diagnostics)
