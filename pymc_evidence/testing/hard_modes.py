"""A multimodal system whose lighter mode has a small basin.

Part of :mod:`pymc_evidence.testing.hard`. A Gaussian prior and a likelihood that is a
mixture of two Gaussian bumps of different widths: the narrow, lighter bump's basin of
attraction holds only a small share of the prior mass, so optimisation or variational fits
started from a few prior draws all land in the broad bump, and a method that tempers from
such a fit reports the broad bump alone (``log`` of its share of ``Z``), with a small se.
``log_z`` is a closed form (each bump convolved with the prior).
"""

from __future__ import annotations

import math

import numpy as np
import pymc as pm
from scipy import special, stats

from pymc_evidence.testing.hard_geometry import observe_bumps
from pymc_evidence.testing.models import AnalyticModel, as_data, f64

__all__ = ["unequal_modes"]


def unequal_modes(
    d: int = 5,
    *,
    weight: float = 0.3,
    offset: float = 2.0,
    sigmas: tuple[float, float] = (0.3, 0.5),
    prior_sigma: float = 2.0,
) -> AnalyticModel:
    r"""Two well-separated posterior modes of unequal mass and width.

    .. math::

        x \sim N(0, s_0^2 I_d), \qquad
        L(x) = w\, N(x; c\mathbf 1, s_1^2 I) + (1 - w)\, N(x; -c\mathbf 1, s_2^2 I),

    written as a ``pm.Mixture`` of two ``MvNormal`` observed at ``y = 0``. Exactly,
    :math:`Z = w\, N(c\mathbf 1; 0, (s_0^2 + s_1^2) I) + (1 - w)\, N(-c\mathbf 1; 0,
    (s_0^2 + s_2^2) I)`. With the defaults the narrow mode holds 30 % of ``Z`` but its basin
    only about 16 % of the prior mass: the eight ADVI restarts of a default base often all
    missed it before prior draws also started the mode search (measured in
    :doc:`/hard_models`, "Modes of unequal mass and basin").

    Parameters
    ----------
    d : int, default 5
        Dimension.
    weight : float, default 0.3
        Mixture weight ``w`` of the narrow bump at ``+c``.
    offset : float, default 2.0
        Every coordinate of the bump centres ``+-c``.
    sigmas : (float, float), default (0.3, 0.5)
        Widths ``s_1`` (the bump at ``+c``) and ``s_2``.
    prior_sigma : float, default 2.0
        Prior standard deviation ``s_0``.

    Returns
    -------
    AnalyticModel
        Free ``x``; ``data`` holds the settings and ``narrow_share`` (the exact share of
        ``Z`` of the bump at ``+c``).

    Examples
    --------
    >>> system = unequal_modes()
    >>> round(system.log_z, 4), round(system.data["narrow_share"], 3)
    (-10.5638, 0.301)
    """
    d, c = int(d), float(offset)
    s1, s2 = (float(s) for s in sigmas)
    if d < 1 or not 0.0 < weight < 1.0 or min(s1, s2, prior_sigma) <= 0:
        raise ValueError("need d >= 1, 0 < weight < 1 and positive widths")
    terms = np.array(
        [
            math.log(weight) + d * stats.norm.logpdf(c, 0.0, math.hypot(prior_sigma, s1)),
            math.log1p(-weight) + d * stats.norm.logpdf(-c, 0.0, math.hypot(prior_sigma, s2)),
        ]
    )
    log_z = float(special.logsumexp(terms))
    share = float(np.exp(terms[0] - log_z))

    with pm.Model(coords={"dim": np.arange(d)}) as model:
        x = pm.Normal("x", mu=f64(0.0), sigma=f64(prior_sigma), dims="dim")
        observe_bumps(x, d, [c, -c], [s1, s2], [weight, 1.0 - weight])

    description = (
        f"x ~ N(0, {prior_sigma:g}^2 I_{d}); L = {weight:g} N(x; {c:g}, {s1:g}^2 I) + "
        f"{1 - weight:g} N(x; -{c:g}, {s2:g}^2 I): a narrow mode with {share:.3f} of Z whose "
        "basin holds a small share of the prior. Closed form."
    )
    data = as_data(
        weight=float(weight), offset=c, sigmas=(s1, s2), prior_sigma=float(prior_sigma),
        narrow_share=share,
    )  # fmt: skip
    return AnalyticModel("unequal_modes", model, log_z, description, data)
