"""PyTensor's Python linker for functions called a few times per call: no JIT to compile,
each op its numpy implementation (see :func:`~pymc_evidence.runtime._compile.compile_fn`)."""

from __future__ import annotations

import pytensor.tensor as pt

__all__ = ["no_jit_mode"]


def no_jit_mode():
    """PyTensor's Python linker with PyMC's rewrites but no fusion (a fused ``Composite``
    runs element by element in Python; its parts run as numpy ufuncs), and ``clip`` as
    two ``switch`` es (see :func:`_clip_as_switch`)."""
    from pytensor.compile.mode import Mode
    from pytensor.graph.rewriting.basic import in2out

    mode = Mode(linker="py", optimizer="fast_run").excluding("fusion")
    return mode.register((in2out(_clip_as_switch(), name="pme_clip_as_switch"), 48.5))


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
