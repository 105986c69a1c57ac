"""Two nested-sampling benchmarks as PyMC users would write them: the egg-box and the shells.

Both have a uniform prior and a likelihood written as a :class:`pymc.CustomDist` observed at
zero, so their evidence is ``(1 / box volume) * integral of L``; each ``log_z`` comes from
quadrature written here with scipy/numpy, independent of PyMC and of this package.
"""

from __future__ import annotations

import math

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy import integrate, special

from .analytic import AnalyticModel, f64

__all__ = ["egg_box", "gaussian_shells"]


def _egg_box_log_z(width: float, power: float, n: int = 4001) -> float:
    """``log`` of the box average of ``exp((2 + cos(x/2) cos(y/2))^power)`` by product Simpson.

    The integrand factorises over nothing, but it is smooth and periodic, so a fine product
    rule is exact to far below the tolerances of any test (checked against ``n = 8001``).
    """
    u = np.linspace(0.0, width, n)
    w = np.full(n, 2.0)
    w[1:-1:2] = 4.0
    w[0] = w[-1] = 1.0
    w *= (u[1] - u[0]) / 3.0
    c = np.cos(u / 2.0)
    log_f = (2.0 + np.outer(c, c)) ** power
    log_w = np.log(w)[:, None] + np.log(w)[None, :]
    return float(special.logsumexp(log_f + log_w) - 2.0 * math.log(width))


def egg_box(power: float = 5.0, periods: int = 5) -> AnalyticModel:
    r"""The egg-box likelihood of Feroz et al.: many equal, evenly spaced modes.

    :math:`x, y \sim U(0, 2\pi p)` and :math:`\log L = (2 + \cos(x/2)\cos(y/2))^{5}`. With
    ``periods = 5`` there are 18 modes of equal height (some on the box's edges), each
    ``3^5 - 1^5 = 242`` nats above the troughs: a base density fitted to some of them, and
    runs started from it, see nothing of the rest.

    Examples
    --------
    >>> from pymc_evidence.testing.nested_benchmarks import egg_box
    >>> round(egg_box().log_z, 3)
    235.856
    """
    width = 2.0 * math.pi * int(periods)
    power = float(power)
    log_z = _egg_box_log_z(width, power)

    def logp(value, x, y):
        return (2.0 + pt.cos(x / 2.0) * pt.cos(y / 2.0)) ** power + 0.0 * value

    with pm.Model() as model:
        x = pm.Uniform("x", lower=f64(0.0), upper=f64(width))
        y = pm.Uniform("y", lower=f64(0.0), upper=f64(width))
        pm.CustomDist("egg", x, y, logp=logp, observed=f64(0.0))
    description = (
        f"x, y ~ U(0, {width:.4g}); log L = (2 + cos(x/2) cos(y/2))^{power:g}: the egg-box, "
        "many equal modes. log Z by a 4001 x 4001 Simpson rule."
    )
    return AnalyticModel("egg_box", model, log_z, description, {"width": width, "power": power})


def _log_shell_mass(d: int, radius: float, width: float) -> float:
    """``log`` of the integral over R^d of ``N(|x - c|; r, w^2)`` (one shell's likelihood).

    In polar coordinates it is the sphere's area times a one-dimensional integral over the
    radius, done by adaptive quadrature on ``r +- 12 w`` (the rest is below 1e-30).
    """
    log_area = math.log(2.0) + d / 2.0 * math.log(math.pi) - special.gammaln(d / 2.0)
    lo, hi = max(0.0, radius - 12.0 * width), radius + 12.0 * width

    def f(rho):
        return rho ** (d - 1) * math.exp(-0.5 * ((rho - radius) / width) ** 2)

    val, _ = integrate.quad(f, lo, hi, epsabs=0.0, epsrel=1e-12, limit=200)
    return log_area + math.log(val) - 0.5 * math.log(2.0 * math.pi * width**2)


def gaussian_shells(
    d: int = 5, radius: float = 2.0, width: float = 0.1, centre: float = 3.5, half: float = 6.0
) -> AnalyticModel:
    r"""Two thin Gaussian shells (Feroz et al.): mass on two curved, disjoint surfaces.

    :math:`x \sim U(-h, h)^d`, :math:`L = \sum_{k=1,2} N(\lVert x - c_k\rVert; r, w^2)` with
    centres :math:`c_{1,2} = (\mp 3.5, 0, \dots)`. Each shell lies inside the box (its edge
    is at least ``5 w`` from the walls), so ``Z = 2 M / (2h)^d`` with ``M`` one shell's mass
    over R^d, a one-dimensional radial integral.

    Examples
    --------
    >>> from pymc_evidence.testing.nested_benchmarks import gaussian_shells
    >>> round(float(gaussian_shells().log_z), 3)
    -5.674
    """
    d = int(d)
    if centre + radius + 5.0 * width > half:
        raise ValueError("the shells must lie inside the box")
    log_z = math.log(2.0) + _log_shell_mass(d, radius, width) - d * math.log(2.0 * half)
    c = np.zeros((2, d))
    c[:, 0] = [-centre, centre]
    log_norm = -0.5 * math.log(2.0 * math.pi * width**2)

    def logp(value, x):
        dist = pt.sqrt(pt.sum((x[None, :] - c) ** 2, axis=-1))
        return pt.logsumexp(log_norm - 0.5 * ((dist - radius) / width) ** 2) + 0.0 * value

    with pm.Model(coords={"dim": np.arange(d)}) as model:
        x = pm.Uniform("x", lower=f64(-half), upper=f64(half), dims="dim")
        pm.CustomDist("shells", x, logp=logp, signature="(n)->()", observed=f64(0.0))
    description = (
        f"x ~ U(-{half:g}, {half:g})^{d}; L = sum of two Gaussian shells, radius {radius:g}, "
        f"width {width:g}, centres (+-{centre:g}, 0, ...). log Z by radial quadrature."
    )
    data = {"radius": radius, "width": width, "centre": centre, "half": half}
    return AnalyticModel("gaussian_shells", model, log_z, description, data)
