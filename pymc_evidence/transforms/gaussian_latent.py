"""A Gaussian latent vector seen only through a Gaussian likelihood, integrated out.

``pm.gp.Latent`` with Gaussian noise writes ``v ~ N(0, I)``, ``f = m + L(θ) v`` and
``y ~ N(f, σ)``: a latent vector that enters one Normal likelihood linearly. Its integral is
exact, ``y | θ ~ N(b + A μ_v, A diag(σ_v²) A^T + diag(σ_y²))`` with ``A = ∂μ_y/∂v`` and
``b = μ_y(v = 0)``, and the evidence does not change. Annealing in the joint space instead
meets a posterior of ``v`` whose correlations change with ``θ`` (the kernel's lengthscale):
the default was slower than ``pm.sample_smc`` on a 20-point GP, and low, in minutes, at
30-40 points (measured in :doc:`/hard_models`, "Latent Gaussian values integrated out:
latent GPs").

:func:`integrate_gaussian_latent` finds such a variable by the graph alone: a free ``Normal``
``v`` whose only dependent term is one observed ``Normal`` ``y``, whose scale does not depend
on ``v`` and whose mean is affine in ``v`` (the gradient of ``sum(μ_y * u)`` with respect to
``v`` no longer refers to ``v`` once PyTensor's shape rewrites have run). The copy fixes
``v`` at zero with :func:`pymc.do` and adds the potential ``log N(y; marginal) - log N(y;
μ_y(0), σ_y)``, as :mod:`~pymc_evidence.transforms.marginal` does for discrete variables;
the posterior draws of ``v`` come back from its Gaussian conditional given ``θ`` and ``y``
(:meth:`GaussianOut.draw`). Several such latents of the same ``y`` are integrated
together, where its mean is jointly affine in them.
The marginal costs a Cholesky factor of order ``min(ny, nv)`` per evaluation; above
:data:`MAX_COST` the latents are left in the model, and so they are where the loadings ``A``
do not depend on the other free variables (hierarchies and regressions: see
:func:`_varying`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.graph.replace import graph_replace, vectorize_graph
from pytensor.graph.rewriting.utils import rewrite_graph
from pytensor.graph.traversal import ancestors
from pytensor.tensor.basic import get_underlying_scalar_constant_value
from pytensor.tensor.exceptions import NotScalarConstantError
from pytensor.tensor.random.basic import NormalRV

from ..compat import linalg_op
from .discrete_values import to_new_values
from .integrated import IntegratedOut

__all__ = [
    "MAX_COST",
    "MAX_ROWS",
    "GaussianOut",
    "dependents",
    "free_of",
    "integrate_gaussian_latent",
    "static_size",
]

#: The most floating-point work (:func:`_cost`) of one evaluation of the marginal: a
#: Cholesky factor of order 64 with ``n = nv = 64`` (a 64-point latent GP). Above it the
#: latents stay in the model (a 300-group hierarchy with one observation per group would
#: cost a factor of order 300 per particle and evaluation).
MAX_COST = 2 * 64**3
#: The most rows of ``y`` whose loadings are built (from an ``(ny, ny)`` identity, 128 MiB
#: here): a latent GP's observations are far fewer.
MAX_ROWS = 4096


@dataclass(frozen=True)
class GaussianOut(IntegratedOut):
    """A model with a Gaussian latent vector integrated out, and how to draw it back.

    Attributes
    ----------
    model : pm.Model
        The copy (the latent fixed at zero by :func:`pymc.do`, plus the potential
        ``"integrated_gaussian_latent"``).
    names : tuple of str
        The latent variables' names.
    shapes : tuple of tuple
        Their shapes.
    moments : tuple of TensorVariable
        On ``model``'s value variables: ``A (ny, nv)``, ``y - b (ny,)``, the latent's prior
        mean and precision ``(nv,)`` and the likelihood's precision ``(ny,)``.
    """

    def draw(self, tables: list, rng: np.random.Generator) -> dict:
        """Draws of the latent from ``N(m, P^-1)``, ``P = diag(p_v) + A^T diag(p_y) A``,
        ``m = P^-1 (p_v μ_v + A^T p_y (y - b))``, one per row of the tables."""
        a, resid, mean_v, prec_v, prec_y = (np.asarray(t, dtype=float) for t in tables)
        n, nv = len(a), a.shape[-1]
        prec_v, mean_v = np.broadcast_to(prec_v, (n, nv)), np.broadcast_to(mean_v, (n, nv))
        prec_y = np.broadcast_to(prec_y, resid.shape)
        at = np.swapaxes(a, 1, 2)
        precision = at @ (prec_y[:, :, None] * a) + prec_v[:, :, None] * np.eye(nv)
        chol = np.linalg.cholesky(precision)
        rhs = prec_v * mean_v + (at @ (prec_y * resid)[:, :, None])[:, :, 0]
        mean = np.linalg.solve(precision, rhs[:, :, None])[:, :, 0]
        z = rng.standard_normal((n, nv))
        noise = np.linalg.solve(np.swapaxes(chol, 1, 2), z[:, :, None])[:, :, 0]
        draws, start = {}, 0
        for name, shape in zip(self.names, self.shapes, strict=True):
            size = int(np.prod(shape, dtype=int))
            draws[name] = (mean + noise)[:, start : start + size].reshape((n, *shape))
            start += size
        return draws


def static_size(var) -> int:
    """The number of elements of ``var`` from its static shape (0 where it is not static)."""
    shape = var.type.shape
    return 0 if None in shape else int(np.prod(shape, dtype=int))


def dependents(model: pm.Model, rv) -> list:
    """The model's random variables and potentials whose graphs depend on ``rv``."""
    others = [r for r in model.basic_RVs if r is not rv] + list(model.potentials)
    return [r for r in others if rv in ancestors([r])]


def free_of(graph, variables) -> bool:
    """True when ``graph`` refers to none of ``variables`` once PyTensor's shape rewrites
    have replaced what only needed their (static) shapes."""
    graph = rewrite_graph(graph, include=("canonicalize", "ShapeOpt"))
    return not set(variables) & set(ancestors([graph]))


def _affine_parts(latents: list, y, others: list):
    """``(A, b)`` with ``μ_y = A [v_1; v_2; ...] + b`` (``A`` of shape ``(ny, nv)``), or None
    when the mean of ``y`` is not jointly affine in the latents or its scale depends on
    them (a gradient of ``sum(μ_y * u)`` that still refers to a latent), or when the
    loadings do not depend on ``others`` (:func:`_varying`). Both are checked on the
    gradient, before ``A`` is built row by row from an ``(ny, ny)`` identity: an intercept
    of a regression of 40 000 rows made a 12.8 GB constant there."""
    mu, sigma = y.owner.op.dist_params(y.owner)
    if not free_of(sigma, latents):
        return None
    ny = static_size(y)
    mu = pt.broadcast_to(mu, y.type.shape).ravel()
    u = pt.vector("u", dtype="float64", shape=(ny,))
    grads = pt.grad(pt.sum(mu * u), latents)
    if not all(free_of(g, latents) for g in grads) or not _varying(grads, others):
        return None
    rows = vectorize_graph([g.ravel() for g in grads], replace={u: pt.eye(ny, dtype="float64")})
    zeros = {v: pt.zeros(v.type.shape) for v in latents}
    return pt.concatenate(rows, axis=1), graph_replace(mu, zeros, strict=False)


def _cost(ny: int, nv: int) -> int:
    """Floating-point work of one evaluation of the marginal (the smaller factorization)."""
    small = min(ny, nv)
    return small**3 + ny * nv * small


def _candidate(model: pm.Model):
    """``(latents, y, A, b)`` for the first observed ``Normal`` whose free ``Normal``
    parents enter nothing else, jointly affinely, within :data:`MAX_COST` and
    :data:`MAX_ROWS`, with loadings
    that depend on another free variable (:func:`_varying`); else None."""
    groups: dict = {}
    for rv in model.free_RVs:
        if not isinstance(rv.owner.op, NormalRV) or model.rvs_to_transforms.get(rv):
            continue
        terms = dependents(model, rv)
        if len(terms) == 1 and terms[0] in model.observed_RVs and static_size(rv):
            groups.setdefault(terms[0], []).append(rv)
    for y, latents in groups.items():
        nv = sum(static_size(v) for v in latents)
        ny = static_size(y)
        if not isinstance(y.owner.op, NormalRV) or _cost(ny, nv) > MAX_COST or ny > MAX_ROWS:
            continue
        others = [rv for rv in model.free_RVs if rv not in latents]
        parts = _affine_parts(latents, y, others) if ny else None
        if parts is not None:
            return latents, y, *parts
    return None


def _varying(grads: list, others: list) -> bool:
    """Whether the loadings ``A`` (here the gradients ``∂ sum(μ_y u) / ∂v``, ``A^T u``)
    depend on another free variable (a GP's Cholesky factor of its kernel's amplitude and
    lengthscale): the latents' conditional correlations then change across the posterior,
    which no fitted Gaussian base holds. Where only the scales vary (the group effects of a
    hierarchy, a regression's coefficients with unknown noise) the model keeps its form:
    the non-centred joint space is right there, and the 2-d marginal of eight schools,
    whose ``log tau`` has an exponential tail the bases do not reach, was low at some seeds
    (measured in :doc:`/hard_models`, "Latent Gaussian values integrated out: latent
    GPs")."""
    return not all(free_of(g, others) for g in grads)


def _log_normal(a, resid, var_v, var_y, ny: int, nv: int):
    """``log N(resid; 0, A diag(var_v) A^T + diag(var_y))`` through the smaller Cholesky
    factor: of the ``ny × ny`` covariance, or (Woodbury) of the ``nv × nv`` precision
    ``P = diag(1 / var_v) + A^T diag(1 / var_y) A`` (a regression's few coefficients)."""
    if ny <= nv:
        chol = pt.linalg.cholesky(_latent_covariance(a, var_v) + pt.diag(var_y))
        quad = pt.sum(pt.linalg.solve_triangular(chol, resid, lower=True) ** 2)
        log_det = 2.0 * pt.sum(pt.log(pt.diag(chol)))
    else:
        prec_y = 1.0 / var_y
        chol = pt.linalg.cholesky((a.T * prec_y) @ a + pt.diag(1.0 / var_v))
        w = pt.linalg.solve_triangular(chol, a.T @ (prec_y * resid), lower=True)
        quad = pt.sum(prec_y * resid**2) - pt.sum(w**2)
        log_det = pt.sum(pt.log(var_y)) + pt.sum(pt.log(var_v)) + 2 * pt.sum(pt.log(pt.diag(chol)))
    return -0.5 * (quad + log_det + ny * np.log(2 * np.pi))


def _latent_covariance(a, var_v):
    """``A diag(var_v) A^T``, as ``c S`` where ``A`` is the lower Cholesky factor of ``S``
    and the latents' prior variances are one constant ``c``: ``pm.gp.Latent`` writes
    ``f = chol(K) v`` with ``v ~ N(0, 1)``, so the marginal covariance is ``K`` itself,
    and the density and its gradient then need no Cholesky factor of ``K`` (one factor
    instead of two, with their gradients, which makes a latent GP's density faster)."""
    try:
        c = get_underlying_scalar_constant_value(rewrite_graph(var_v, include=("canonicalize",)))
    except NotScalarConstantError:
        return (a * var_v) @ a.T
    factor = _without_identity(rewrite_graph(a, include=("canonicalize", "stabilize")))
    op = factor.owner.op if factor.owner is not None else None
    core = getattr(op, "core_op", op)
    if isinstance(core, linalg_op("Cholesky")) and core.lower and factor.type.ndim == 2:
        return c * factor.owner.inputs[0]
    return (a * var_v) @ a.T


def _without_identity(x):
    """``x`` without a product by a constant identity matrix (``I @ chol(S)``: the loadings
    as older PyTensor versions leave them after rewriting)."""
    if x.owner is None or "Dot" not in type(getattr(x.owner.op, "core_op", x.owner.op)).__name__:
        return x
    left, right = x.owner.inputs
    for eye, other in ((left, right), (right, left)):
        data = getattr(eye, "data", None)
        if isinstance(data, np.ndarray) and data.ndim == 2 and other.type.ndim == 2:
            if data.shape[0] == data.shape[1] and np.array_equal(data, np.eye(len(data))):
                return other
    return x


def _prior_moments(latents):
    """The latents' prior means and variances, raveled and stacked."""
    means, variances = [], []
    for v in latents:
        mu, sigma = v.owner.op.dist_params(v.owner)
        means.append(pt.broadcast_to(mu, v.type.shape).ravel())
        variances.append(pt.broadcast_to(sigma**2, v.type.shape).ravel())
    return pt.concatenate(means), pt.concatenate(variances)


def _marginal_graphs(model, latents, y, a, b):
    """The potential and the draws' moments, on ``model``'s value variables."""
    mu_v, var_v = _prior_moments(latents)
    sigma_y = pt.broadcast_to(y.owner.op.dist_params(y.owner)[1], y.type.shape).ravel()
    observed = pt.as_tensor(model.rvs_to_values[y]).ravel().astype("float64")
    resid = observed - b
    ny, nv = static_size(y), sum(static_size(v) for v in latents)
    log_marginal = _log_normal(a, resid - a @ mu_v, var_v, sigma_y**2, ny, nv)
    log_at_zero = pm.logp(pm.Normal.dist(b, sigma_y), observed).sum()
    moments = [a, resid, mu_v, 1.0 / var_v, 1.0 / sigma_y**2]
    return model.replace_rvs_by_values([log_marginal - log_at_zero, *moments])


def integrate_gaussian_latent(model: pm.Model) -> GaussianOut | None:
    """``model`` with a Gaussian latent vector integrated out (see the module's docstring),
    or None when none qualifies.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from scipy import stats
    >>> y = np.array([0.3, -0.2, 1.1])
    >>> with pm.Model() as model:
    ...     s = pm.HalfNormal("s", 1.0)
    ...     v = pm.Normal("v", 0.0, 1.0, shape=3)
    ...     _ = pm.Normal("y", s * v, 0.5, observed=y)
    >>> out = integrate_gaussian_latent(model)
    >>> out.names, [rv.name for rv in out.model.free_RVs]
    (('v',), ['s'])
    >>> point = {"s_log__": np.log(0.7)}
    >>> exact = stats.multivariate_normal(np.zeros(3), (0.49 + 0.25) * np.eye(3)).logpdf(y)
    >>> bool(np.isclose(out.model.compile_logp(vars=out.model.potentials)(point)
    ...                 + pm.logp(pm.Normal.dist(0.0, 0.5), y).sum().eval(), exact))
    True
    """
    found = _candidate(model)
    if found is None:
        return None
    latents, y, a, b = found
    graphs = _marginal_graphs(model, latents, y, a, b)
    shapes = tuple(tuple(int(s) for s in v.type.shape) for v in latents)
    zeros = {v.name: np.zeros(s) for v, s in zip(latents, shapes, strict=True)}
    # constants, not shared variables: the likelihood's term at zero (which the potential
    # cancels) then folds away, Cholesky factor of the GP's kernel and its gradient too
    new = pm.do(model, zeros, make_interventions_shared=False)
    renamed = to_new_values(model, new, graphs)
    with new:
        pm.Potential("integrated_gaussian_latent", renamed[0])
    return GaussianOut(new, tuple(v.name for v in latents), shapes, tuple(renamed[1:]))
