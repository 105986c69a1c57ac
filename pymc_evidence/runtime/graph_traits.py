"""What a graph does that decides where it runs best: :func:`gathers_data` (an index by
a data set's rows) and :func:`old_jax_solves` (a triangular solve under an old jax), read
by :func:`~pymc_evidence.runtime._compile.compile_rows` on ``backend="auto"``."""

from __future__ import annotations

import numpy as np

__all__ = ["GATHER_MIN_SIZE", "GROUP_INDEX", "gathers_data", "old_jax_solves"]


def old_jax_solves(outputs) -> bool:
    """True for a graph with a triangular solve under jax < 0.11 (0.10.2 is the last for
    Python 3.11): a GP marginal's second batched call of 512+ rows
    (:mod:`pymc_evidence.transforms.gaussian_latent`) never returned there (256 rows and
    the joint form ran). Such graphs take PyTensor's default linker on ``"auto"``."""
    import jax
    from pytensor.graph.traversal import ancestors

    from ..compat import linalg_op

    if tuple(int(p) for p in jax.__version__.split(".")[:2]) >= (0, 11):
        return False
    graphs = list(outputs) if isinstance(outputs, list | tuple) else [outputs]
    for var in ancestors(graphs):
        op = getattr(var.owner, "op", None)
        if isinstance(getattr(op, "core_op", op), linalg_op("SolveTriangular")):
            return True
    return False


#: The name of an integer index that :func:`gathers_data` does not count (the group index
#: of :mod:`~pymc_evidence.transforms.group_quadrature`).
GROUP_INDEX = "pme_group_index"
#: Fewest elements of an indexed gather (``a[idx]``) or scatter for :func:`gathers_data`.
GATHER_MIN_SIZE = 256


def gathers_data(outputs) -> bool:
    """True when the graphs index an array by an integer array of at least
    :data:`GATHER_MIN_SIZE` elements (``alpha[county_idx]`` over a data set's rows).

    Such graphs run several times slower batched on XLA's CPU backend than on PyTensor's
    numba or C linker: the batched gather's gradient is a scatter-add, and XLA's fused loops
    over data-sized arrays lose to numba's (radon's county intercepts and slopes; measured
    in :doc:`/performance`, "What a user meets: the first call on a new model"). Models
    without such indexing (regressions, mixtures, GPs, Cholesky factors) are as fast or
    faster on JAX and compile much sooner, so ``"auto"`` keeps JAX for them. Where jax has a
    GPU (:func:`~pymc_evidence.runtime.jax_rows.jax_accelerator`), ``"auto"`` keeps JAX for
    every model. A graph that integrates group effects (it holds the
    :data:`GROUP_INDEX` constant) is not counted whatever else it indexes: its cost is
    each group's quadrature over the rows, which XLA runs faster than numba and compiles
    far sooner (a crossed ``(1|county) + (1|year)`` model gathers the years' effects by row
    beside the counties' integral).
    """
    from pytensor.graph.traversal import ancestors
    from pytensor.tensor import subtensor

    names = (
        "AdvancedSubtensor",
        "AdvancedIncSubtensor",
        "AdvancedSubtensor1",
        "AdvancedIncSubtensor1",
    )
    kinds = tuple(getattr(subtensor, n) for n in names if hasattr(subtensor, n))  # *1: PyTensor 2
    graph = list(ancestors(list(outputs) if isinstance(outputs, list | tuple) else [outputs]))
    if any(var.owner is None and var.name == GROUP_INDEX for var in graph):
        return False
    for var in graph:
        node = var.owner
        if node is None or not isinstance(node.op, kinds):
            continue
        ints = [i for i in node.inputs[1:] if getattr(i.type, "dtype", "").startswith("int")]
        if any(_static_size(i) >= GATHER_MIN_SIZE and i.name != GROUP_INDEX for i in ints):
            return True
    return False


def _static_size(var) -> int:
    """The number of elements of ``var`` where its shape is static (or its value known)."""
    shape = getattr(var.type, "shape", None)
    if shape is not None and all(s is not None for s in shape):
        return int(np.prod(shape, dtype=np.int64))
    value = getattr(var, "data", None)
    if value is None and hasattr(var, "get_value"):
        value = var.get_value(borrow=True)
    return int(np.size(value)) if value is not None else 0
