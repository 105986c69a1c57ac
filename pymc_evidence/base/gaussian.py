"""The base-density interface, and the normalized Gaussian base.

Every base density of the package (:class:`GaussianBase`, :class:`~.mixture.MixtureBase`,
:class:`~.prior.PriorBase`) implements :class:`BaseDensity`, so no caller needs to know which
one it holds: numeric ``logp``/``sample``/``moments``/``scale`` on the model's raveled
unconstrained space, and a graph side (``make_shared``/``assign``/``logp_graph``) from which
the tempering transform, the batched particle densities and the tempered step methods build
``log q`` once and update its parameters in place.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import ClassVar, Protocol, runtime_checkable

import numpy as np
import pytensor
import pytensor.tensor as pt
from scipy.linalg import solve_triangular

from .stats import FitStats

__all__ = [
    "BaseDensity",
    "GaussianBase",
    "assign_shared",
    "gaussian_logp_grad_jax",
    "make_shared",
    "moment_match",
    "safe_cholesky",
]

LOG_2PI = float(np.log(2.0 * np.pi))


@runtime_checkable
class BaseDensity(Protocol):
    """What every base density offers (a structural type; nothing to inherit).

    Attributes
    ----------
    kind : str
        ``"advi"``, ``"fullrank_advi"``, ``"merged"``, ``"moments"``, ``"mixture"``,
        ``"prior"``.
    ndim : int
    names, sizes : tuple
        Layout of the raveled unconstrained space (value-variable names and sizes).
    log_zeta : float
        Current guess of ``log Z`` that goes with the base.
    stats : FitStats
        What the base's fit measured (empty for a base not fitted).
    info : dict
        Provenance: how the base was made (an ADVI restart's index and steps, ...).
    scale : ndarray, shape (d,)
        Per-coordinate standard deviation, for HMC preconditioning and mass matrices.
    structure : tuple
        Equal for two bases exactly when one can be assigned into shared variables made by
        the other (same type, dimension and number of components).

    Methods
    -------
    logp(x)
        Normalized log density at the rows of ``x`` (n, d), shape (n,).
    sample(n, rng)
        ``n`` exact draws, shape (n, d).
    moments()
        ``(mean (d,), covariance (d, d))``.
    with_values(**changes)
        A copy of the same type with fields replaced.
    make_shared()
        A dict of PyTensor shared variables holding ``log_zeta`` and the parameters.
    assign(shared)
        Write this base's values into ``shared`` (same structure, else ``ValueError``).
    logp_graph(model, shared, x)
        Symbolic normalized ``log q`` at the raveled value vector ``x`` of ``model``.

    Examples
    --------
    >>> import numpy as np
    >>> isinstance(GaussianBase(np.zeros(1), np.eye(1), 0.0, "moments"), BaseDensity)
    True
    """

    kind: str
    names: tuple
    sizes: tuple
    log_zeta: float
    stats: FitStats
    info: dict
    #: True when :meth:`moments` is exact (False: estimated from draws).
    exact_moments: bool

    @property
    def ndim(self) -> int: ...

    @property
    def scale(self) -> np.ndarray: ...

    @property
    def structure(self) -> tuple: ...

    def with_values(self, **changes): ...

    def logp(self, x: np.ndarray) -> np.ndarray: ...

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray: ...

    def moments(self) -> tuple[np.ndarray, np.ndarray]: ...

    def make_shared(self) -> dict: ...

    def assign(self, shared: dict) -> None: ...

    def logp_graph(self, model, shared: dict, x): ...


def make_shared(values: dict) -> dict:
    """Shared variables (named ``base_<key>``) holding copies of ``values``."""
    return {
        key: pytensor.shared(np.array(value, dtype=np.float64), name=f"base_{key}")
        for key, value in values.items()
    }


def assign_shared(shared: dict, values: dict, owner) -> None:
    """Write ``values`` into ``shared``; refuse, before writing anything, when the keys or
    shapes differ (a base of another type, dimension or number of components)."""
    if set(shared) != set(values):
        raise ValueError(
            f"cannot assign a {type(owner).__name__} (parameters {sorted(values)}) into shared "
            f"variables made for parameters {sorted(shared)}: the base type differs"
        )
    for key, value in values.items():
        old = np.shape(shared[key].get_value(borrow=True))
        if old != np.shape(value):
            raise ValueError(
                f"cannot assign a {type(owner).__name__} into shared variables of another "
                f"structure: {key!r} has shape {np.shape(value)}, the graph expects {old} "
                "(a different dimension or number of components needs a new graph)"
            )
    for key, value in values.items():
        shared[key].set_value(np.array(value, dtype=np.float64))


def graph_form(base) -> str:
    """Name of the class whose graph ``base`` builds (a subclass such as a Laplace ``Mode``
    that keeps its parent's ``logp_graph`` shares the parent's compiled graph)."""
    return next(c for c in type(base).__mro__ if "logp_graph" in vars(c)).__name__


def shared_structure(base) -> tuple:
    shapes = tuple(sorted((k, np.shape(v)) for k, v in base._shared_values.items()))
    return (graph_form(base), *shapes)


@dataclass(frozen=True, eq=False)
class GaussianBase:
    """A Gaussian ``N(mean, chol @ chol.T)`` on the raveled unconstrained space.

    Parameters
    ----------
    mean : ndarray, shape (d,)
    chol : ndarray, shape (d, d)
        Lower-triangular Cholesky factor of the covariance.
    log_zeta : float
        The current guess of ``log Z`` that goes with this base (for tempering methods).
    kind : str
        How it was obtained: ``"advi"``, ``"fullrank_advi"``, ``"merged"`` (moment-matched
        to several ADVI fits), ``"moments"`` (from given moments or refitted to draws).
    names, sizes : tuple
        Layout of the space it lives on (value-variable names and sizes).
    elbo, elbo_se : float
        Monte Carlo estimate of the evidence lower bound and its standard error.
    info : dict
        Provenance: how the base was made (an ADVI restart's index and steps, ...).
    component_log_zeta : tuple of float
        The evidence estimates ``log_zeta`` of the distinct fits a ``"merged"`` base was
        moment-matched to, one per fit (empty for a base not merged from fits).
    stats : FitStats
        The fit's statistics (importance-sampling ESS, ...; empty by default).

    Examples
    --------
    >>> import numpy as np
    >>> base = GaussianBase(np.zeros(2), np.eye(2), log_zeta=0.0, kind="moments")
    >>> bool(base.logp(np.zeros((1, 2)))[0] == -np.log(2 * np.pi))
    True
    >>> base.sample(5, np.random.default_rng(0)).shape, base.scale
    ((5, 2), array([1., 1.]))
    """

    exact_moments: ClassVar[bool] = True

    mean: np.ndarray
    chol: np.ndarray
    log_zeta: float
    kind: str
    names: tuple = ()
    sizes: tuple = ()
    elbo: float = float("nan")
    elbo_se: float = float("nan")
    info: dict = field(default_factory=dict)
    component_log_zeta: tuple = ()
    stats: FitStats = FitStats()

    def __post_init__(self):
        mean = np.asarray(self.mean, dtype=float)
        chol = np.asarray(self.chol, dtype=float)
        if mean.ndim != 1 or chol.shape != (mean.size, mean.size):
            raise ValueError(f"mean {mean.shape} and chol {chol.shape} do not match")
        if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(chol))):
            raise ValueError("Gaussian base has non-finite mean or Cholesky factor")
        if np.any(np.diag(chol) <= 0):
            raise ValueError("Cholesky factor must have a positive diagonal")
        object.__setattr__(self, "mean", mean)
        object.__setattr__(self, "chol", np.tril(chol))
        object.__setattr__(self, "component_log_zeta", tuple(map(float, self.component_log_zeta)))

    @property
    def ndim(self) -> int:
        """Dimension of the space."""
        return self.mean.size

    @property
    def cov(self) -> np.ndarray:
        """Covariance matrix."""
        return self.chol @ self.chol.T

    @property
    def std(self) -> np.ndarray:
        """Marginal standard deviations."""
        return np.sqrt(np.sum(self.chol**2, axis=1))

    @property
    def scale(self) -> np.ndarray:
        """Per-coordinate standard deviation (same as :attr:`std`)."""
        return self.std

    @property
    def is_diagonal(self) -> bool:
        """True when the covariance is diagonal."""
        return bool(np.all(self.chol == np.diag(np.diag(self.chol))))

    def log_det_chol(self) -> float:
        """``log |chol|`` (half the log-determinant of the covariance)."""
        return float(np.sum(np.log(np.diag(self.chol))))

    def logp(self, x: np.ndarray) -> np.ndarray:
        """Normalized log density at each row of ``x`` (shape ``(n, d)``)."""
        x = np.atleast_2d(np.asarray(x, dtype=float))
        z = solve_triangular(self.chol, (x - self.mean).T, lower=True)
        return -0.5 * np.sum(z**2, axis=0) - self.log_det_chol() - 0.5 * self.ndim * LOG_2PI

    def logp_grad(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(log q (n,), grad log q (n, d))`` at the rows of ``x``, in closed form (the
        particle engines use it instead of compiling the base's graph). Products with the
        inverse Cholesky factor, computed once: a triangular solve per call was many times
        slower on a loaded machine (BLAS threads contending)."""
        x = np.atleast_2d(np.asarray(x, dtype=float))
        inv_std = self._inv_std
        if inv_std is not None:  # mean-field: elementwise, not two (n, d) x (d, d) products
            z = (x - self.mean) * inv_std
            grad = -(z * inv_std)
        else:
            z = (x - self.mean) @ self._inv_chol.T
            grad = -(z @ self._inv_chol)
        logp = -0.5 * np.sum(z**2, axis=1) - self.log_det_chol() - 0.5 * self.ndim * LOG_2PI
        return logp, grad

    def jax_logp_grad(self, *, full_rank: bool = False):
        """``(function, parameters)``: :meth:`logp_grad` as a jax function
        ``function(x, parameters)`` of an ``(n, d)`` array, the same arithmetic, for jitted
        code that evaluates the base inside a larger function. The function is one object for
        every Gaussian base, so that code jitted for one base serves the next (its
        parameters are arguments, not constants); ``full_rank=True`` gives a diagonal base
        the full-rank form's parameters (the same values, a matrix for the inverse)."""
        diagonal = self._inv_std is not None and not full_rank
        inverse = self._inv_std if diagonal else self._inv_chol
        const = -self.log_det_chol() - 0.5 * self.ndim * LOG_2PI
        return gaussian_logp_grad_jax, (self.mean, inverse, np.float64(const))

    @cached_property
    def _inv_std(self) -> np.ndarray | None:
        """``1 / std`` of a diagonal covariance (None otherwise): a 302-d mean-field base
        cost more than the model's own density as matrix products, where the elementwise
        form costs a small fraction of that."""
        return 1.0 / np.diag(self.chol) if self.is_diagonal else None

    @cached_property
    def _inv_chol(self) -> np.ndarray:
        if self.is_diagonal:
            return np.diag(1.0 / np.diag(self.chol))
        return solve_triangular(self.chol, np.eye(self.ndim), lower=True)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Draw ``n`` vectors, shape ``(n, d)``."""
        eps = rng.standard_normal((n, self.ndim))
        return self.mean + eps @ self.chol.T

    def moments(self) -> tuple[np.ndarray, np.ndarray]:
        """``(mean, covariance)``."""
        return self.mean.copy(), self.cov

    def with_values(self, **changes) -> GaussianBase:
        """A copy with some fields replaced."""
        return replace(self, **changes)

    # -- graph side -----------------------------------------------------------------------
    @cached_property
    def _shared_values(self) -> dict:
        d = self.ndim
        return {
            "log_zeta": np.float64(self.log_zeta),
            "mean": self.mean,
            "chol_inv": solve_triangular(self.chol, np.eye(d), lower=True),
            "log_norm": np.float64(-self.log_det_chol() - 0.5 * d * LOG_2PI),
        }

    @property
    def structure(self) -> tuple:
        """``("GaussianBase", parameter shapes...)``: equal for bases that can share a graph."""
        return shared_structure(self)

    def make_shared(self) -> dict:
        """Shared variables holding ``log_zeta`` and the parameters (``mean``, ``chol_inv``,
        ``log_norm``), set to this base's values."""
        return make_shared(self._shared_values)

    def assign(self, shared: dict) -> None:
        """Write this base's parameters and ``log_zeta`` into ``shared`` (from
        :meth:`make_shared` of a base of the same structure)."""
        assign_shared(shared, self._shared_values, self)

    def logp_graph(self, model, shared: dict, x):
        """Symbolic normalized ``log q`` at the raveled value vector ``x`` (``model`` unused)."""
        z = pt.dot(shared["chol_inv"], x - shared["mean"])
        return -0.5 * pt.sum(z**2) + shared["log_norm"]

    @classmethod
    def from_moments(cls, mean, cov, *, log_zeta, kind="moments", jitter=1e-9, **kwargs):
        """Build a base from a mean and covariance (symmetrised, jittered if needed)."""
        return cls(
            mean=np.asarray(mean, dtype=float),
            chol=safe_cholesky(cov, jitter),
            log_zeta=float(log_zeta),
            kind=kind,
            **kwargs,
        )


def safe_cholesky(cov, jitter: float = 1e-9) -> np.ndarray:
    """Cholesky factor of a symmetrised covariance, with growing jitter when needed."""
    cov = np.atleast_2d(np.asarray(cov, dtype=float))
    cov = 0.5 * (cov + cov.T)
    scale = np.mean(np.diag(cov)) if cov.size else 1.0
    for attempt in range(6):
        try:
            return np.linalg.cholesky(cov + (jitter * 10**attempt) * scale * np.eye(len(cov)))
        except np.linalg.LinAlgError:
            continue
    raise np.linalg.LinAlgError("covariance is not positive definite, even with jitter")


def moment_match(log_weights, means, covs):
    """Mean and covariance of a Gaussian mixture with weights ``exp(log_weights)`` (eq. 25).

    Examples
    --------
    >>> import numpy as np
    >>> m, c = moment_match(np.log([0.5, 0.5]), np.array([[-1.0], [1.0]]), np.ones((2, 1, 1)))
    >>> float(m[0]), float(c[0, 0])
    (0.0, 2.0)
    """
    log_weights = np.asarray(log_weights, dtype=float)
    w = np.exp(log_weights - np.max(log_weights))
    w /= w.sum()
    means = np.asarray(means, dtype=float)
    mean = w @ means
    second = np.einsum("k,kij->ij", w, np.asarray(covs) + np.einsum("ki,kj->kij", means, means))
    return mean, second - np.outer(mean, mean)


def gaussian_logp_grad_jax(x, parameters):
    """``(log q, grad log q)`` of a Gaussian base at the rows of ``x``, in jax, from the
    parameters of :meth:`GaussianBase.jax_logp_grad`: ``(mean, inverse, constant)``, the
    inverse a vector (``1 / std`` of a mean-field base) or the inverse Cholesky factor."""
    import jax.numpy as jnp

    mean, inverse, const = parameters
    if inverse.ndim == 1:
        z = (x - mean) * inverse
        grad = -(z * inverse)
    else:
        z = (x - mean) @ inverse.T
        grad = -(z @ inverse)
    return const - 0.5 * jnp.sum(z**2, axis=1), grad
