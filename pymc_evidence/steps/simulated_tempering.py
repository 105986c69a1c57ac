"""Simulated tempering as a PyMC step method, with Rao-Blackwellized evidence (RTS).

Carlson, Stinson, Pakman & Paninski (2016). The chain moves on ``(x, k)`` with
``f_k = f^beta_k q^(1 - beta_k)`` on a ladder ``0 = beta_0 < ... < beta_{K-1} = 1``: a NUTS
transition of ``x`` at ``beta_k``, then an exact draw of ``k`` from
``softmax(beta_k Delta(x) + log r_k - log Zhat_k)``, ``Delta = log f - log q``. Every draw
records the K conditional probabilities; their means estimate the level occupancies and, by
eq. 12, ``log Z``.

PyMC's trace backends store only scalar statistics, so the K conditionals are recorded as
the scalar statistics ``st_q_0 ... st_q_{K-1}``; :func:`pymc_evidence.st_evidence` gathers
them into a ``level`` dimension.
"""

from __future__ import annotations

import copy
from dataclasses import field

import numpy as np
import pymc as pm
from pymc.step_methods.compound import Competence
from pymc.step_methods.hmc.nuts import NUTSState
from pymc.step_methods.state import dataclass_state

from ..basefit.fit import fit_base
from ..estimators.rts import (
    adaptation_converged,
    default_ladder,
    level_log_conditionals,
    rts_update,
    validate_ladder,
)
from ..transforms.tempered_draws import warn_tempered_draws
from .tempered import OwnVariablesStep, continuous_model, initial_potential, tempered_density

__all__ = ["SimulatedTempering", "SimulatedTemperingState", "q_stat_names"]


def q_stat_names(n_levels: int) -> list[str]:
    """Names of the per-level conditional-probability statistics."""
    return [f"st_q_{k}" for k in range(n_levels)]


@dataclass_state
class SimulatedTemperingState(NUTSState):
    """Per-chain state of :class:`SimulatedTempering`, on top of NUTS's own.

    PyMC saves a step's ``sampling_state`` before the first chain and restores it before
    every chain it runs in the same process (``cores=1``); without these fields the level,
    the adapted weights and the adaptation block of one chain leaked into the next.
    The ladder and the target occupancies are frozen: a state only fits its own ladder.
    """

    betas: np.ndarray = field(metadata={"frozen": True})
    log_r: np.ndarray = field(metadata={"frozen": True})
    level: int
    log_zhat: np.ndarray
    _adapting: bool
    _c_sum: np.ndarray
    _n_block: int
    _band_step_sizes: list


class SimulatedTempering(OwnVariablesStep, pm.NUTS):
    """NUTS at a discrete inverse temperature ``beta_k``, with exact Gibbs draws of ``k``.

    Use it in ``pm.sample(step=...)`` and read the trace with
    :func:`pymc_evidence.st_evidence`: the evidence, the level diagnostics and posterior
    draws (resampled by the target level's weight). The trace itself is *not* a posterior
    sample: its ``posterior`` group holds the draws of every level of the ladder, so
    ``az.summary(trace)`` would describe a target much wider than the posterior
    (``pme.log_evidence(trace)`` gives the estimate alone).

    Parameters
    ----------
    base : {"advi", "fullrank_advi", "prior"} or GaussianBase or PriorBase
        Normalized base density; a string is fitted with :func:`pymc_evidence.fit_base`.
    betas : array_like, optional
        The ladder, strictly increasing from 0 to 1. Default: ``n_levels`` levels spaced
        ``(k / (K - 1)) ** power`` with ``power = 1`` for a Gaussian base (its log density
        differs from the posterior's by a roughly constant spread at every temperature) and
        ``power = 4`` for the prior base (the log likelihood varies enormously under the
        prior, so the levels crowd near ``beta = 0``).
    n_levels : int
        Number of levels when ``betas`` is not given.
    log_zhat : array_like, optional
        Starting guesses of ``log Z_k`` (default ``beta_k * base.log_zeta``).
    adapt_block : int
        During tuning, ``log Zhat`` is updated by the Rao-Blackwellized rule (eq. 12, damped)
        after every block of this many steps, each block restarting from a uniformly drawn
        level, until ``max_k |c_k - r_k| < 0.1 / K``. Weights are frozen after tuning. Every
        chain adapts on its own: chains share nothing in PyMC.
    adapt_damping : float
        Fraction of the eq. 12 step taken per block (1 = the full step).
    step_size_bands : int
        The ladder is cut into this many bands of consecutive levels, each with its own
        dual-averaging step size: hot levels (small beta) want longer steps than the
        posterior. The mass matrix is shared.
    potentials : {None, "likelihood"}
    random_seed : int, optional
        Seeds the base fit when ``base`` is a string.
    warn_tempered : bool, default True
        Emit the warning below; pass False once you read the trace with
        :func:`pymc_evidence.st_evidence` (:func:`pymc_evidence.sample_evidence` does).
    model : pm.Model, optional
    **kwargs
        Passed to :class:`pymc.NUTS`.

    Warns
    -----
    EvidenceWarning
        When the step is built: the trace will hold tempered draws, not posterior draws, and
        :func:`pymc_evidence.st_evidence` reads it. PyMC gives a step method no hook at the
        end of sampling and no mark to set on the trace, so this is the one moment a
        warning reaches the user before ``az.summary`` of the tempered draws would.

    Examples
    --------
    >>> import pymc as pm, pymc_evidence as pme
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu", 0, 1)
    ...     _ = pm.Normal("y", mu, 1, observed=[0.2, 0.4])
    ...     base = pme.fit_base("advi", random_seed=0, progressbar=False)
    ...     step = pme.SimulatedTempering(base=base, n_levels=8, warn_tempered=False)
    ...     raw = pm.sample(300, tune=300, step=step, chains=2, random_seed=0,
    ...                     progressbar=False, compute_convergence_checks=False)
    >>> idata = pme.st_evidence(raw, step)   # raw.posterior holds tempered draws
    >>> est = pme.log_evidence(idata)        # log Z and its se
    >>> posterior = idata.posterior          # resampled: az.summary(idata) works
    """

    name = "simulated_tempering"
    _state_class = SimulatedTemperingState

    def __init__(
        self,
        vars=None,
        *,
        base="advi",
        betas=None,
        n_levels: int = 32,
        log_r=None,
        log_zhat=None,
        adapt_block: int = 100,
        adapt_damping: float = 0.7,
        step_size_bands: int = 4,
        potentials: str | None = None,
        random_seed=None,
        warn_tempered: bool = True,
        model=None,
        **kwargs,
    ):
        if warn_tempered:
            warn_tempered_draws("SimulatedTempering", "pme.st_evidence(trace, step)")
        model = pm.modelcontext(model)
        target, pots = continuous_model(model, potentials)
        if isinstance(base, str):
            base = fit_base(base, model=target, random_seed=random_seed, potentials=pots)
        self._density = tempered_density(target, base, model, vars=vars, owner="SimulatedTempering")
        self.base = base
        power = 4.0 if base.kind == "prior" else 1.0
        self.betas = validate_ladder(default_ladder(n_levels, power) if betas is None else betas)
        n = self.betas.size
        self.log_r = np.full(n, -np.log(n)) if log_r is None else np.asarray(log_r, float)
        if self.log_r.shape != (n,) or not np.isclose(np.exp(self.log_r).sum(), 1.0):
            raise ValueError("log_r must have one entry per level and exp(log_r) must sum to 1")
        start = self.betas * base.log_zeta if log_zhat is None else np.asarray(log_zhat, float)
        if start.shape != (n,):
            raise ValueError(f"log_zhat must have {n} entries, got shape {start.shape}")
        self.log_zhat = start - start[0]
        self.adapt_block, self.adapt_damping = int(adapt_block), float(adapt_damping)
        if self.adapt_block < 1 or not 0 < self.adapt_damping <= 1:
            raise ValueError("adapt_block must be >= 1 and adapt_damping in (0, 1]")
        self.stats_dtypes_shapes = {
            **self.stats_dtypes_shapes,
            "st_level": (np.int64, []),
            "st_beta": (np.float64, []),
            "st_delta": (np.float64, []),
            "st_log_norm": (np.float64, []),
            **{name: (np.float64, []) for name in q_stat_names(n)},
        }
        self.stats_dtypes = [{k: dtype for k, (dtype, _) in self.stats_dtypes_shapes.items()}]
        super().__init__(
            vars=self._density.step_vars,
            model=model,
            logp_dlogp_func=self._density.logp_dlogp,
            **initial_potential(base, kwargs),
        )
        n_bands = max(1, min(int(step_size_bands), n))
        self._band_of = np.minimum((np.arange(n) * n_bands) // n, n_bands - 1)
        self._band_adapts = [copy.deepcopy(self.step_adapt) for _ in range(n_bands)]
        self.level = 0
        self._reset_block()
        self._adapting = True

    @property
    def _band_step_sizes(self) -> list:
        """Dual-averaging states of the step-size bands (part of the sampling state)."""
        return [adapt.sampling_state for adapt in self._band_adapts]

    @_band_step_sizes.setter
    def _band_step_sizes(self, states) -> None:
        for adapt, state in zip(self._band_adapts, states, strict=True):
            adapt.sampling_state = state

    # -- adaptation of log Zhat during tuning ---------------------------------------------
    def _reset_block(self):
        self._c_sum = np.zeros(self.betas.size)
        self._n_block = 0

    def _adapt(self, cond: np.ndarray) -> None:
        self._c_sum += cond
        self._n_block += 1
        if self._n_block < self.adapt_block:
            return
        c = self._c_sum / self._n_block
        if adaptation_converged(c, self.log_r):
            self._adapting = False
        else:
            self.log_zhat = rts_update(self.log_zhat, c, self.log_r, self.adapt_damping)
        self._reset_block()
        self.level = int(self.rng.integers(self.betas.size))

    def reset_tuning(self, start=None):
        """Restart step-size, mass-matrix and weight adaptation (keeps ``log Zhat``)."""
        super().reset_tuning(start)
        for adapt in self._band_adapts:
            adapt.reset()
        self._reset_block()
        self._adapting = True

    def stop_tuning(self):
        """Freeze step sizes and ``log Zhat`` for the draws."""
        super().stop_tuning()
        self._adapting = False
        self._reset_block()

    # -- one step --------------------------------------------------------------------------
    def _log_norm(self) -> float:
        return float(self.log_zhat[-1] - self.log_zhat[0] + self.log_r[0] - self.log_r[-1])

    def astep(self, q0):
        """NUTS at ``beta_k`` (with that band's step size), then an exact draw of ``k``."""
        self.step_adapt = self._band_adapts[self._band_of[self.level]]
        self._density.beta.set_value(np.float64(self.betas[self.level]))
        q, stats = super().astep(q0)
        delta = float(self._density.log_ratio(np.asarray(q.data, dtype=float)))
        log_cond = level_log_conditionals(delta, self.betas, self.log_zhat, self.log_r)
        cond = np.exp(log_cond)
        record = {
            "st_delta": delta,
            "st_log_norm": self._log_norm(),
            **dict(zip(q_stat_names(self.betas.size), cond.tolist(), strict=True)),
        }
        self.level = int(self.rng.choice(self.betas.size, p=cond / cond.sum()))
        if self.tune and self._adapting:
            self._adapt(cond)
        record.update(st_level=self.level, st_beta=float(self.betas[self.level]))
        stats[0].update(record)
        return q, stats

    @staticmethod
    def competence(var, has_grad):
        """Never assigned automatically: it changes the target distribution."""
        return Competence.INCOMPATIBLE
