"""What the fit of a base density measured: a typed, frozen record on every base.

A fitted base (:class:`~.gaussian.GaussianBase`, :class:`~.mixture.MixtureBase`, a Laplace
``Mode``) carries its fit's statistics as :class:`FitStats` (``base.stats``), set by the
steps of :mod:`pymc_evidence.basefit` that judge or combine it and read by those that decide
what to do with it (widen it, recentre it, add the se of its weights to an estimate). The
ELBO and its se, and the current ``log_zeta``, are the base's own fields, not repeated here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = ["FitStats"]


@dataclass(frozen=True)
class FitStats:
    """The statistics of a base's fit; a field is None (or empty) where no step set it.

    Parameters
    ----------
    log_is : float, optional
        Importance-sampling ``log Z`` from fresh draws of the base (log-mean-exp of the
        weights ``log f - log q``).
    is_ess : float, optional
        Kish effective sample size of those weights.
    n_nonfinite : int, optional
        Draws of those where the model density was not finite.
    elbo_trace_tail : float, optional
        Mean ELBO over the last tenth of an ADVI fit's steps.
    log_zeta_fit, n_pooled : float and int, optional
        A fit's own ``log_zeta`` and the number of duplicate fits its ``log_zeta`` was
        pooled over (where it was).
    n_components : int, optional
        Number of distinct fits a merged or mixture base was made of.
    component_elbo : tuple of float
        Their ELBOs.
    log_zeta_sum : float, optional
        ``log`` of the sum of their evidence estimates (a mixture of fits).
    base_weights_se : float, optional
        The se of a mixture's component weights (see
        :func:`~pymc_evidence.basefit.modes.weights_se`).
    log_f : float, optional
        The model's log density at a Laplace mode.
    laplace_log_zeta : float, optional
        A mode's Laplace mass, where its ``log_zeta`` became its importance-sampling mass.
    laplace_mass : float, optional
        The Laplace mass of the mode a Laplace base was made from.
    refit_ess : float, optional
        Kish ESS of the weighted draws a base was refitted to.

    Examples
    --------
    >>> stats = FitStats(is_ess=640.0, n_nonfinite=0)
    >>> stats.is_ess, stats.base_weights_se
    (640.0, None)
    >>> stats.updated(base_weights_se=0.01).base_weights_se
    0.01
    >>> FitStats(component_elbo=[-3, -4.5]).component_elbo
    (-3.0, -4.5)
    """

    log_is: float | None = None
    is_ess: float | None = None
    n_nonfinite: int | None = None
    elbo_trace_tail: float | None = None
    log_zeta_fit: float | None = None
    n_pooled: int | None = None
    n_components: int | None = None
    component_elbo: tuple = ()
    log_zeta_sum: float | None = None
    base_weights_se: float | None = None
    log_f: float | None = None
    laplace_log_zeta: float | None = None
    laplace_mass: float | None = None
    refit_ess: float | None = None

    def __post_init__(self):
        object.__setattr__(self, "component_elbo", tuple(map(float, self.component_elbo)))

    def updated(self, **changes) -> FitStats:
        """A copy with some fields replaced."""
        return replace(self, **changes)
