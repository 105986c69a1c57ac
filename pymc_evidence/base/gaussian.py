"""Normalized Gaussian base densities in a model's raveled unconstrained space."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
from scipy.linalg import solve_triangular

__all__ = ["GaussianBase", "PriorBase", "moment_match"]

_LOG_2PI = float(np.log(2.0 * np.pi))


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
        How it was obtained: ``"advi"``, ``"fullrank_advi"``, ``"mixture"``, ``"moments"``.
    names, sizes : tuple
        Layout of the space it lives on (value-variable names and sizes).
    elbo, elbo_se : float
        Monte Carlo estimate of the evidence lower bound and its standard error.
    info : dict
        Fitting details (steps, restarts, convergence).

    Examples
    --------
    >>> import numpy as np
    >>> base = GaussianBase(np.zeros(2), np.eye(2), log_zeta=0.0, kind="moments")
    >>> float(base.logp(np.zeros((1, 2)))[0]) == -np.log(2 * np.pi)
    True
    """

    mean: np.ndarray
    chol: np.ndarray
    log_zeta: float
    kind: str
    names: tuple = ()
    sizes: tuple = ()
    elbo: float = float("nan")
    elbo_se: float = float("nan")
    info: dict = field(default_factory=dict)

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
        return -0.5 * np.sum(z**2, axis=0) - self.log_det_chol() - 0.5 * self.ndim * _LOG_2PI

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Draw ``n`` vectors, shape ``(n, d)``."""
        eps = rng.standard_normal((n, self.ndim))
        return self.mean + eps @ self.chol.T

    def with_values(self, **changes) -> GaussianBase:
        """A copy with some fields replaced."""
        return replace(self, **changes)

    @classmethod
    def from_moments(cls, mean, cov, *, log_zeta, kind="moments", jitter=1e-9, **kwargs):
        """Build a base from a mean and covariance (symmetrised, jittered if needed)."""
        cov = np.atleast_2d(np.asarray(cov, dtype=float))
        cov = 0.5 * (cov + cov.T)
        scale = np.mean(np.diag(cov)) if cov.size else 1.0
        for attempt in range(6):
            try:
                chol = np.linalg.cholesky(cov + (jitter * 10**attempt) * scale * np.eye(len(cov)))
                break
            except np.linalg.LinAlgError:
                continue
        else:
            raise np.linalg.LinAlgError("covariance is not positive definite, even with jitter")
        return cls(
            mean=np.asarray(mean, dtype=float),
            chol=chol,
            log_zeta=float(log_zeta),
            kind=kind,
            **kwargs,
        )


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


@dataclass(frozen=True, eq=False)
class PriorBase:
    """The model's own prior as the base density (the path is then the power posterior).

    Parameters
    ----------
    log_zeta : float
        Current guess of ``log Z``.
    names, sizes : tuple
        Layout of the space.
    """

    log_zeta: float = 0.0
    names: tuple = ()
    sizes: tuple = ()
    kind: str = "prior"
    info: dict = field(default_factory=dict)

    @property
    def ndim(self) -> int:
        """Dimension of the space."""
        return int(sum(self.sizes))

    def with_values(self, **changes) -> PriorBase:
        """A copy with some fields replaced."""
        return replace(self, **changes)
