"""A product rule for the truths' outer integrals over a few hyperparameters.

Part of :mod:`pymc_evidence.testing`; numpy only. A hierarchy's truth is closed form given
its scales (and correlations), and an integral over those of a density whose log-scale
axes have an exponential tail toward a scale of zero: a group scale's prior density is
finite at zero, so in ``t = log s`` the integrand is ``s`` times a smooth function of ``s``.
:func:`box_rule` composes Gauss-Legendre rules over ``mode ± width sd`` (the peak within
``± 2 sd`` its own segment) and closes each log-scale axis down to a scale of zero by a
rule in the scale itself, which converges where one in ``log s`` would not.
"""

from __future__ import annotations

import numpy as np

__all__ = ["box_rule"]


def _axis(m, s, width, x, w, log_scale: bool, clip):
    """One axis's nodes and weights."""
    cuts = np.array([m - width * s, m - 2.0 * s, m + 2.0 * s, m + width * s])
    if clip is not None:
        cuts = np.clip(cuts, -clip, clip)
    lo, hi = cuts[:-1], cuts[1:]
    nodes = (lo[:, None] + 0.5 * (hi - lo)[:, None] * (x + 1.0)).ravel()
    weights = (0.5 * (hi - lo)[:, None] * w).ravel()
    if log_scale:
        scale = 0.5 * np.exp(cuts[0]) * (x + 1.0)  # the rule in s on [0, exp(lo)]: dt = ds / s
        nodes = np.concatenate([np.log(scale), nodes])
        weights = np.concatenate([0.5 * np.exp(cuts[0]) * w / scale, weights])
    return nodes, weights


def box_rule(mode, sd, width, points, log_scales=(), clip=None):
    """Nodes ``(..., d)`` and log weights ``(...)`` of a product of composite Gauss-Legendre
    rules: axis ``k`` over ``mode[k] ± width sd[k]`` in three segments, cut at ``± 2 sd``,
    ``points`` nodes each; the axes in ``log_scales`` (log scales) also over a scale of
    zero to ``exp(lo)`` by a rule in the scale; ``clip`` (``{axis: c}``) bounds an axis to
    ``[-c, c]``.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import special, stats
    >>> nodes, log_w = box_rule([0.0], [1.0], 10.0, 20)
    >>> abs(float(special.logsumexp(stats.norm.logpdf(nodes[..., 0]) + log_w))) < 1e-10
    True
    >>> nodes, log_w = box_rule([np.log(0.5)], [0.5], 10.0, 20, log_scales=(0,))
    >>> t = nodes[..., 0]                       # half-normal scale, in log s
    >>> abs(float(special.logsumexp(stats.halfnorm.logpdf(np.exp(t)) + t + log_w))) < 1e-6
    True
    """
    x, w = np.polynomial.legendre.leggauss(points)
    clip = clip or {}
    axes = [
        _axis(m, s, width, x, w, k in log_scales, clip.get(k))
        for k, (m, s) in enumerate(zip(mode, sd, strict=True))
    ]
    d = len(axes)
    nodes = np.stack(np.meshgrid(*(n for n, _ in axes), indexing="ij"), axis=-1)
    log_w = sum(
        np.log(wk).reshape([-1 if i == k else 1 for i in range(d)])
        for k, (_, wk) in enumerate(axes)
    )
    return nodes, log_w
