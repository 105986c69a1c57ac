"""PyTensor's Python linker for functions called a few times per call: no JIT to compile,
each op its numpy implementation (see :func:`~pymc_evidence.runtime._compile.compile_fn`)."""

from __future__ import annotations

import pytensor.tensor as pt

__all__ = ["no_jit_mode"]


def no_jit_mode():
    """PyTensor's Python linker with PyMC's rewrites but no fusion (a fused ``Composite``
    runs element by element in Python; its parts run as numpy ufuncs), ``clip`` as two
    ``switch`` es (see :func:`_clip_as_switch`) and ``softplus`` by ufuncs
    (:func:`_softplus_by_ufuncs`)."""
    from pytensor.compile.mode import Mode
    from pytensor.graph.rewriting.basic import in2out

    mode = Mode(linker="py", optimizer="fast_run").excluding("fusion")
    mode = mode.register((in2out(_clip_as_switch(), name="pme_clip_as_switch"), 48.5))
    return mode.register((in2out(_softplus_by_ufuncs(), name="pme_softplus_ufuncs"), 48.6))


def _clip_as_switch():
    """A rewrite of ``clip(x, lo, hi)`` to ``switch(x < lo, lo, switch(x > hi, hi, x))``,
    the same values (NaN and ``lo > hi`` included) by numpy ufuncs: PyTensor's ``Clip`` has
    no numpy function, so the Python linker runs it element by element (a latent GP's
    ``ExpQuad`` kernel clips its squared distances: millions of Python calls to draw the
    GP's values back for thousands of posterior draws)."""
    import pytensor.scalar as ps
    from pytensor.graph.rewriting.basic import node_rewriter
    from pytensor.tensor.elemwise import Elemwise

    @node_rewriter([Elemwise])
    def clip_as_switch(fgraph, node):
        if not isinstance(node.op.scalar_op, ps.Clip):
            return None
        x, lo, hi = node.inputs
        out = pt.switch(pt.lt(x, lo), lo, pt.switch(pt.gt(x, hi), hi, x))
        return [out.astype(node.outputs[0].type.dtype)]

    return clip_as_switch


def _softplus_by_ufuncs():
    """A rewrite of ``softplus(x)`` (``log(1 + exp(x))``, every Bernoulli-logit and binomial
    likelihood's) to ``max(x, 0) + log1p(exp(-|x|))``: PyTensor's ``Softplus`` has no numpy
    function, and the Python linker ran it element by element (most of a nested Bernoulli
    hierarchy's rule check, :mod:`~pymc_evidence.transforms.group_nested_quadrature`)."""
    from pytensor.graph.rewriting.basic import node_rewriter
    from pytensor.scalar.math import Softplus
    from pytensor.tensor.elemwise import Elemwise

    @node_rewriter([Elemwise])
    def softplus_by_ufuncs(fgraph, node):
        if not isinstance(node.op.scalar_op, Softplus):
            return None
        (x,) = node.inputs
        out = pt.maximum(x, 0.0) + pt.log1p(pt.exp(-pt.abs(x)))
        return [out.astype(node.outputs[0].type.dtype)]

    return softplus_by_ufuncs
