"""A normalized mixture of Gaussians on the raveled unconstrained space.

``fit_base(..., restarts=R, combine="mixture")`` keeps the distinct ADVI fits of a
multimodal posterior as the components of a :class:`MixtureBase`, instead of one Gaussian
moment-matched to them: each mode keeps its own shape, and the base has no mass in the gaps
between the modes where the moment-matched Gaussian puts most of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import ClassVar

import numpy as np
import pytensor.tensor as pt
from scipy.linalg import solve_triangular

from ..estimators.logspace import logsumexp
from .gaussian import (
    LOG_2PI,
    GaussianBase,
    assign_shared,
    make_shared,
    moment_match,
    shared_structure,
)
from .stats import FitStats

__all__ = ["MixtureBase", "mixture_logp_grad_jax"]


@dataclass(frozen=True, eq=False)
class MixtureBase:
    """``sum_k w_k N(means[k], chols[k] @ chols[k].T)`` on the raveled unconstrained space.

    Parameters
    ----------
    log_weights : ndarray, shape (K,)
        Log mixture weights; normalized on construction (they need not sum to one).
    means : ndarray, shape (K, d)
    chols : ndarray, shape (K, d, d)
        Lower-triangular Cholesky factors of the component covariances.
    log_zeta : float
        The current guess of ``log Z`` that goes with this base.
    kind : str
        ``"mixture"``.
    names, sizes : tuple
        Layout of the space it lives on.
    elbo, elbo_se : float
        Monte Carlo ELBO of the mixture and its standard error.
    info : dict
        Provenance: how the base was made.
    component_log_zeta : tuple of float
        The evidence estimates ``log_zeta`` of the distinct fits that are its components,
        one per component, where it was made of fits (empty otherwise: modes added to a
        fit, a defensive component).
    stats : FitStats
        The fit's statistics (per-component ELBO, importance-sampling ESS, ...).

    Examples
    --------
    >>> import numpy as np
    >>> base = MixtureBase(np.log([0.25, 0.75]), np.array([[-2.0], [2.0]]),
    ...                    np.ones((2, 1, 1)), log_zeta=0.0)
    >>> x = np.array([[-2.0], [2.0]])
    >>> np.round(np.exp(base.logp(x)), 4)
    array([0.0998, 0.2992])
    >>> mean, cov = base.moments()
    >>> round(float(mean[0]), 12), round(float(cov[0, 0]), 12)
    (1.0, 4.0)
    """

    exact_moments: ClassVar[bool] = True

    log_weights: np.ndarray
    means: np.ndarray
    chols: np.ndarray
    log_zeta: float
    kind: str = "mixture"
    names: tuple = ()
    sizes: tuple = ()
    elbo: float = float("nan")
    elbo_se: float = float("nan")
    info: dict = field(default_factory=dict)
    component_log_zeta: tuple = ()
    stats: FitStats = FitStats()

    def __post_init__(self):
        log_w = np.atleast_1d(np.asarray(self.log_weights, dtype=float))
        means = np.atleast_2d(np.asarray(self.means, dtype=float))
        chols = np.asarray(self.chols, dtype=float)
        k, d = means.shape
        if log_w.shape != (k,) or chols.shape != (k, d, d):
            raise ValueError(
                f"log_weights {log_w.shape}, means {means.shape} and chols {chols.shape} "
                "do not describe K components of one dimension"
            )
        if not all(np.isfinite(a).all() for a in (log_w, means, chols)):
            raise ValueError("mixture base has non-finite weights, means or Cholesky factors")
        if np.any(np.diagonal(chols, axis1=1, axis2=2) <= 0):
            raise ValueError("Cholesky factors must have a positive diagonal")
        object.__setattr__(self, "log_weights", log_w - logsumexp(log_w))
        object.__setattr__(self, "means", means)
        object.__setattr__(self, "chols", np.tril(chols))
        object.__setattr__(self, "component_log_zeta", tuple(map(float, self.component_log_zeta)))

    @classmethod
    def from_components(cls, components, log_weights, *, log_zeta, kind="mixture", **kwargs):
        """A mixture of :class:`GaussianBase` components with (unnormalized) log weights."""
        return cls(
            log_weights=np.asarray(log_weights, dtype=float),
            means=np.stack([c.mean for c in components]),
            chols=np.stack([c.chol for c in components]),
            log_zeta=float(log_zeta),
            kind=kind,
            **kwargs,
        )

    @property
    def ndim(self) -> int:
        """Dimension of the space."""
        return self.means.shape[1]

    @property
    def n_components(self) -> int:
        """Number of components ``K``."""
        return self.means.shape[0]

    @property
    def weights(self) -> np.ndarray:
        """Normalized mixture weights."""
        return np.exp(self.log_weights)

    @cached_property
    def _parts(self) -> list[GaussianBase]:
        return self.components()

    def components(self) -> list[GaussianBase]:
        """The components as Gaussian bases (each with this base's ``log_zeta`` and layout)."""
        return [
            GaussianBase(m, c, self.log_zeta, "moments", names=self.names, sizes=self.sizes)
            for m, c in zip(self.means, self.chols, strict=True)
        ]

    def _component_logps(self, x: np.ndarray) -> np.ndarray:
        """``log w_k + log N_k(x_i)``, shape ``(K, n)``."""
        out = np.empty((self.n_components, x.shape[0]))
        for k, (m, c) in enumerate(zip(self.means, self.chols, strict=True)):
            z = solve_triangular(c, (x - m).T, lower=True)
            log_det = np.sum(np.log(np.diag(c)))
            out[k] = self.log_weights[k] - 0.5 * np.sum(z**2, axis=0) - log_det
        return out - 0.5 * self.ndim * LOG_2PI

    def logp(self, x: np.ndarray) -> np.ndarray:
        """Normalized log density at each row of ``x`` (shape ``(n, d)``)."""
        x = np.atleast_2d(np.asarray(x, dtype=float))
        return logsumexp(self._component_logps(x), axis=0)

    def logp_grad(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(log q (n,), grad log q (n, d))`` at the rows of ``x``: the components'
        gradients weighted by their responsibilities."""
        x = np.atleast_2d(np.asarray(x, dtype=float))
        logps, grads = zip(*(c.logp_grad(x) for c in self._parts), strict=True)
        terms = np.asarray(logps) + self.log_weights[:, None]  # (K, n)
        logp = logsumexp(terms, axis=0)
        weights = np.exp(terms - logp)
        return logp, np.einsum("kn,knd->nd", weights, np.asarray(grads))

    def jax_logp_grad(self, min_components: int = 1):
        """``(function, parameters)``: :meth:`logp_grad` as a jax function
        ``function(x, parameters)``, one object for every mixture base (see
        :meth:`GaussianBase.jax_logp_grad`).

        The parameters are the components' means, inverse Cholesky factors and log
        normalizers plus log weights, stacked and padded to a power of two (at least
        ``min_components``) with copies of the first, and the number of real components:
        jitted code compiles once per padded count, and its loop runs over the real
        components only (every component in the full-rank form, diagonal or not, so that
        fits of one model with 3 and 4 components share one compilation)."""
        parts = [c.jax_logp_grad(full_rank=True)[1] for c in self._parts]
        k = self.n_components
        size = max(1 << max(k - 1, 0).bit_length(), int(min_components))
        parts += parts[:1] * (size - k)
        means, inverses, consts = (np.stack([part[i] for part in parts]) for i in range(3))
        terms = consts + np.concatenate([self.log_weights, np.full(size - k, -np.inf)])
        return mixture_logp_grad_jax, (means, inverses, terms, np.int32(k))

    def responsibilities(self, x: np.ndarray) -> np.ndarray:
        """Posterior component probabilities at each row of ``x``, shape ``(n, K)``."""
        x = np.atleast_2d(np.asarray(x, dtype=float))
        terms = self._component_logps(x)
        return np.exp(terms - logsumexp(terms, axis=0)).T

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` exact draws, shape ``(n, d)``: a component by weight, then its Gaussian."""
        n = int(n)
        which = rng.choice(self.n_components, size=n, p=self.weights)
        eps = rng.standard_normal((n, self.ndim))
        x = np.empty((n, self.ndim))
        for k, (m, c) in enumerate(zip(self.means, self.chols, strict=True)):
            rows = which == k
            x[rows] = m + eps[rows] @ c.T
        return x

    def moments(self) -> tuple[np.ndarray, np.ndarray]:
        """Mean and covariance of the mixture (exact)."""
        covs = np.einsum("kij,klj->kil", self.chols, self.chols)
        return moment_match(self.log_weights, self.means, covs)

    @property
    def scale(self) -> np.ndarray:
        """Per-coordinate standard deviation of the mixture."""
        return np.sqrt(np.diag(self.moments()[1]))

    def with_values(self, **changes) -> MixtureBase:
        """A copy with some fields replaced."""
        return replace(self, **changes)

    # -- graph side -----------------------------------------------------------------------
    @cached_property
    def _shared_values(self) -> dict:
        # z_k = L_k^-1 (x - m_k) = A_k (x - c) - A_k (m_k - c), stacked over k; centring at
        # the mixture mean c keeps the subtraction well conditioned.
        d, eye = self.ndim, np.eye(self.ndim)
        center = self.moments()[0]
        inv = np.stack([solve_triangular(c, eye, lower=True) for c in self.chols])
        shift = np.einsum("kij,kj->ki", inv, self.means - center)
        log_det = np.sum(np.log(np.diagonal(self.chols, axis1=1, axis2=2)), axis=1)
        return {
            "log_zeta": np.float64(self.log_zeta),
            "center": center,
            "chol_invs": inv.reshape(-1, d),
            "shifts": shift.reshape(-1),
            "log_norms": self.log_weights - log_det - 0.5 * d * LOG_2PI,
        }

    @property
    def structure(self) -> tuple:
        """``("MixtureBase", parameter shapes...)``: equal for mixtures with the same ``K``
        and ``d``, which can share one graph."""
        return shared_structure(self)

    def make_shared(self) -> dict:
        """Shared variables holding ``log_zeta`` and the parameters (``center``,
        ``chol_invs`` (K d, d), ``shifts`` (K d,), ``log_norms`` (K,))."""
        return make_shared(self._shared_values)

    def assign(self, shared: dict) -> None:
        """Write this base's parameters and ``log_zeta`` into ``shared`` (from
        :meth:`make_shared` of a mixture with the same ``K`` and ``d``)."""
        assign_shared(shared, self._shared_values, self)

    def logp_graph(self, model, shared: dict, x):
        """Symbolic normalized ``log q`` at the raveled value vector ``x`` (``model`` unused)."""
        k, d = self.n_components, self.ndim
        z = (pt.dot(shared["chol_invs"], x - shared["center"]) - shared["shifts"]).reshape((k, d))
        terms = shared["log_norms"] - 0.5 * pt.sum(z**2, axis=1)
        top = pt.max(terms)
        return top + pt.log(pt.sum(pt.exp(terms - top)))


def mixture_logp_grad_jax(x, parameters):
    """``(log q, grad log q)`` of a mixture base at the rows of ``x``, in jax (parameters
    from :meth:`MixtureBase.jax_logp_grad`).

    One pass over the real components (a ``jax.lax.fori_loop`` whose count is an argument)
    keeps a running maximum of the components' log terms, the sum of their exponentials
    and the sum of their gradients weighted by them, rescaling both when the maximum grows
    (a streaming log-sum-exp); the padding components are never evaluated. On the
    3-component ``NormalMixture`` (a base of 4 components padded to 8) a fused trajectory
    was faster this way than with all 8 evaluated and masked by their weights (measured in
    :doc:`/performance`, "What a user meets: the first call on a new model").
    """
    import jax
    import jax.numpy as jnp

    means, inverses, terms, k = parameters
    n = x.shape[0]

    def component(i, carry):
        top, total, grad = carry
        z = (x - means[i]) @ inverses[i].T
        term = terms[i] - 0.5 * jnp.sum(z * z, axis=1)
        new_top = jnp.maximum(top, term)
        shift = jnp.where(jnp.isfinite(new_top), new_top, 0.0)
        rescale, weight = jnp.exp(top - shift), jnp.exp(term - shift)
        grad = grad * rescale[:, None] - weight[:, None] * (z @ inverses[i])
        return new_top, total * rescale + weight, grad

    start = (jnp.full(n, -jnp.inf, dtype=x.dtype), jnp.zeros(n, x.dtype), jnp.zeros_like(x))
    top, total, grad = jax.lax.fori_loop(0, k, component, start)
    return top + jnp.log(total), grad / total[:, None]
