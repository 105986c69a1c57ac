"""Correlated random intercepts and slopes: one ``(J, 2)`` group effect integrated out.

A random intercept and slope with a full covariance (``pm.LKJCholeskyCov``) are one
``(J, 2)`` variable of a model, written in one of two ways:

- non-centred: ``z ~ N(m, s)`` of shape ``(J, 2)``, ``eff = pt.dot(z, L.T)`` (or
  ``z @ L.T``), the rows reading ``eff[g, 0]`` and ``eff[g, 1]`` (or ``z[g, k]`` itself);
- centred: ``eff ~ MvNormal(mu, cov)`` (or ``chol=L``) of shape ``(J, 2)``, the rows
  reading ``eff[g, k]``, the covariance the same for every group.

Both are the two-effect integral of :mod:`.group_pairs` once each group's two effects are
written in coordinates with independent Normal priors. Non-centred, these are the columns of
``z``, and ``(z @ M)[g, c]`` in the rows becomes ``z[g, 0] M[0, c] + z[g, 1] M[1, c]``.
Centred, they are ``u_j ~ N(0, I)`` with ``eff_j = mu_j + L u_j`` for ``L`` the Cholesky
factor of the covariance: ``eff``'s density is ``u``'s over ``det L``, which the change of
variables cancels, so the integral over ``eff_j`` is the integral over ``u_j``, and
``eff[g, c]`` becomes ``mu[g, c] + L[c, 0] u_0 + L[c, 1] u_1``. From there the rows must
be elementwise in the two coordinates, as :mod:`.group_rows` checks for vector effects.

The posterior draws of the matrix are the pair's, stacked as its columns and, centred,
mapped back by ``mu + u Lᵀ`` at each draw's hyperparameters (:class:`MatrixBack`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.distributions.multivariate import MvNormalRV
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import ancestors
from pytensor.tensor.random.basic import NormalRV

from .gaussian_latent import dependents
from .group_pair_effects import pair_terms
from .group_rows import constant_index, elementwise_rows, length, shape_of

__all__ = ["MatrixBack", "find_matrix_effect"]

#: Ops of a matrix product ``z @ M`` (``pt.dot``, ``@``), by name (a ``Blockwise``'s core op).
MATMUL = ("Dot", "Dot22", "Matmul")


@dataclass(frozen=True)
class MatrixBack:
    """How a ``(J, 2)`` effect's draws come from its pair's.

    Attributes
    ----------
    graphs : tuple of TensorVariable
        On the model's value variables: for a centred effect its means ``(J, 2)`` and the
        covariance's Cholesky factor ``(2, 2)``; none for a non-centred one.
    """

    graphs: tuple

    @property
    def count(self) -> int:
        """The number of tables that :meth:`assemble` takes before the pair's."""
        return len(self.graphs)

    def assemble(self, extra: list, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Draws ``(n, J, 2)`` of the matrix from the pair's (``(n, J)`` each), given the
        tables of :attr:`graphs` (with a leading draw dimension)."""
        u = np.stack([a, b], axis=-1)
        if not extra:
            return u
        mean, chol = (np.asarray(t, dtype=float) for t in extra)
        return mean + np.einsum("njk,nck->njc", u, chol)


@dataclass(frozen=True)
class _Coordinates:
    """A ``(J, 2)`` effect in coordinates with independent Normal priors: each
    coordinate's prior ``(mean, sd)`` (``(J,)`` each, in the model's value variables),
    and, centred, the effect's means and Cholesky factor."""

    priors: tuple
    mean: object = None
    chol: object = None

    def column(self, c: int, group: np.ndarray, us) -> object:
        """The effect's column ``c`` at the rows (``(n,)``), in the row coordinates ``us``."""
        if self.chol is None:
            return us[c]
        return self.mean[group, c] + self.chol[c, 0] * us[0] + self.chol[c, 1] * us[1]


def find_matrix_effect(model: pm.Model, min_groups: int):
    """``(effect, PairTerms, MatrixBack)`` of the largest ``(J, 2)`` effect of at least
    ``min_groups`` groups that qualifies (see the module's docstring), or None.

    Examples
    --------
    >>> import numpy as np, pymc as pm, pytensor.tensor as pt
    >>> g = np.repeat(np.arange(100), 3)
    >>> x, y = np.tile([-1.0, 0.0, 1.0], 100), np.zeros(300)
    >>> with pm.Model() as model:
    ...     chol, _, _ = pm.LKJCholeskyCov("chol", n=2, eta=2.0,
    ...                                    sd_dist=pm.HalfNormal.dist(1.0, shape=2))
    ...     z = pm.Normal("z", 0.0, 1.0, shape=(100, 2))
    ...     eff = pt.dot(z, chol.T)
    ...     _ = pm.Normal("y", eff[g, 0] + eff[g, 1] * x, 1.0, observed=y)
    >>> effect, terms, back = find_matrix_effect(model, 100)
    >>> effect.name, terms.gaussian, back.count
    ('z', True, 0)
    """
    best = None
    for rv in model.free_RVs:
        shape = shape_of(rv) if rv.type.ndim == 2 else None
        if shape is None or shape[1] != 2 or shape[0] < min_groups:
            continue
        if model.rvs_to_transforms.get(rv) or (best and best[1].rows.n_groups >= shape[0]):
            continue
        coords = _coordinates(model, rv, shape[0])
        terms = dependents(model, rv) if coords is not None else []
        if len(terms) != 1 or terms[0] not in model.observed_RVs:
            continue
        found = _matrix_terms(model, rv, terms[0], coords, shape[0])
        if found is not None:
            back = () if coords.chol is None else (coords.mean, coords.chol)
            best = (rv, found, MatrixBack(back))
    return best


def _coordinates(model: pm.Model, rv, n_groups: int) -> _Coordinates | None:
    """The coordinates of a ``Normal`` or ``MvNormal`` effect (None for another kind, or
    an ``MvNormal`` whose covariance differs between groups)."""
    shape = (n_groups, 2)
    if isinstance(rv.owner.op, NormalRV):
        mean, sd = rv.owner.op.dist_params(rv.owner)
        mean, sd = (pt.broadcast_to(p, shape).astype("float64") for p in (mean, sd))
        priors = model.replace_rvs_by_values([mean[:, 0], sd[:, 0], mean[:, 1], sd[:, 1]])
        return _Coordinates((tuple(priors[:2]), tuple(priors[2:])))
    if not isinstance(rv.owner.op, MvNormalRV):
        return None
    mean, cov = rv.owner.op.dist_params(rv.owner)[:2]
    if cov.type.ndim > 2 and not all(cov.type.broadcastable[:-2]):
        return None
    cov = cov.reshape((2, 2)) if cov.type.ndim > 2 else cov
    mean = pt.broadcast_to(mean, shape).astype("float64")
    mean, chol = model.replace_rvs_by_values([mean, pt.linalg.cholesky(cov)])
    zero, one = pt.zeros(n_groups, dtype="float64"), pt.ones(n_groups, dtype="float64")
    return _Coordinates(((zero, one), (zero, one)), mean, chol)


def _matrix_terms(model: pm.Model, rv, y, coords: _Coordinates, n_groups: int):
    """The :class:`~.group_pairs.PairTerms` of ``y``'s rows in the effect's coordinates,
    or None when the rows do not read the effect as ``eff[g, c]`` or ``(eff @ M)[g, c]``
    for one constant ``g``, and then elementwise."""
    logp = model.logp(vars=[y], sum=False)[0]
    n = length(y)
    value = model.rvs_to_values[rv]
    if logp.type.ndim != 1 or not n:
        return None
    us = tuple(pt.vector(f"u_row_effect_{k}", dtype="float64", shape=(n,)) for k in range(2))
    found = _reads(logp, value, n, n_groups)
    if found is None:
        return None
    group, reads = found
    columns = [coords.column(k, group, us) for k in range(2)]
    replace = {
        out: columns[c] if right is None else columns[0] * right[0, c] + columns[1] * right[1, c]
        for out, (right, c) in reads.items()
    }
    logp = graph_replace(logp, replace, strict=False)
    if value in ancestors([logp]):
        return None
    logp = elementwise_rows(logp, us)
    if logp is None:
        return None
    return pair_terms(logp, us, group, n_groups, coords.priors)


def _reads(logp, value, n: int, n_groups: int):
    """``(g, {output: (M or None, c)})``: every read of ``value`` in ``logp`` as
    ``value[g, c]`` or ``(value @ M)[g, c]`` (``M`` free of ``value``), for one constant
    group index ``g`` of ``n`` rows; None when there is another read."""
    nodes = [v.owner for v in ancestors([logp]) if v.owner is not None]
    sources = {value: None}
    for node in nodes:
        if node.inputs and node.inputs[0] is value and _is_matmul(node):
            right = node.inputs[1]
            if value in ancestors([right]) or right.type.ndim != 2:
                return None
            sources[node.outputs[0]] = right
    reads, group = {}, None
    for node in nodes:
        if not any(i in sources for i in node.inputs) or _is_matmul(node):
            continue
        index = _column_read(node, sources, n_groups)
        if index is None:
            return None
        if group is not None and not np.array_equal(group, index[0]):
            return None
        group = index[0]
        reads[node.outputs[0]] = (sources[node.inputs[0]], index[1])
    if group is None or len(group) != n:
        return None
    return group, reads


def _column_read(node, sources, n_groups: int):
    """``(g, c)`` when ``node`` is ``source[g, c]`` for constant ``g`` (a vector) and ``c``
    (0 or 1), else None."""
    if type(node.op).__name__ != "AdvancedSubtensor" or len(node.inputs) != 3:
        return None
    if node.inputs[0] not in sources or any(i in sources for i in node.inputs[1:]):
        return None
    group = constant_index(node.inputs[1], n_groups)
    column = constant_index(node.inputs[2], 2, ndim=0)
    if group is None or column is None:
        return None
    return group, int(column)


def _is_matmul(node) -> bool:
    """Whether ``node`` is a matrix product (:data:`MATMUL`)."""
    op = getattr(node.op, "core_op", node.op)
    return type(op).__name__ in MATMUL
