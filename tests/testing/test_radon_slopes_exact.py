"""Exact log Z of the radon varying-intercepts-and-slopes model, checked independently.

:func:`radon_slopes_log_lik` (rank-2 Woodbury per county, O(K) per point) is compared with the
dense ``n x n`` Gaussian density; :func:`radon_slopes_log_z` (Simpson's rule in log scales)
with a brute-force product Gauss-Legendre rule in the natural scales using dense covariances;
and the two builders' models with a hand computation of their log density.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from pymc_evidence.testing import centred_radon_slopes, noncentred_radon_slopes
from pymc_evidence.testing.hard_hierarchical import _default_radon_slopes_log_z
from pymc_evidence.testing.radon_exact import county_stats
from pymc_evidence.testing.radon_slopes_exact import radon_slopes_log_lik, radon_slopes_log_z

#: Regression value. Cross-checked during development by a product Gauss-Legendre rule in
#: (sigma_alpha, sigma_beta, sigma_y) themselves (agreement 2e-11) and by SMC on the
#: non-centred model (-1063.155 +- 0.025).
RADON_VIS_REFERENCE = -1063.1095917


def _cov_parts(idx, x, k):
    """``(Z Z^T, W W^T, 10^2 (1 1^T + x x^T))``, ``Z`` county indicators and ``W = Z * x``."""
    z = np.zeros((x.size, k))
    z[np.arange(x.size), idx] = 1.0
    w = z * x[:, None]
    return z @ z.T, w @ w.T, 100.0 * (1.0 + np.outer(x, x))


@pytest.mark.heavy
def test_log_lik_matches_dense_gaussian(radon):
    idx, x, y, k = radon["idx"], radon["x"], radon["y"], radon["k"]
    stats_c = county_stats(idx, x, y)
    points = ((0.32, 0.32, 0.72), (0.05, 1.2, 1.3), (1.5, 0.01, 0.5))
    got = radon_slopes_log_lik(stats_c, *np.array(points).T)  # vectorised over points
    zz, ww, fixed = _cov_parts(idx, x, k)
    for (a, b, s), value in zip(points, got, strict=True):
        cov = s**2 * np.eye(y.size) + a**2 * zz + b**2 * ww + fixed
        dense = stats.multivariate_normal(np.zeros(y.size), cov).logpdf(y)
        assert float(value) == pytest.approx(dense, rel=1e-8)


def _small_data():
    """4 counties x 3 houses, simulated from the model (mixed floors in most counties)."""
    rng = np.random.default_rng(7)
    county = np.repeat(np.arange(4), 3)
    x = np.array([0, 0, 1, 0, 1, 1, 1, 0, 0, 0, 1, 0], dtype=float)
    alpha, beta = 1.0 + rng.normal(0, 0.5, 4), -0.6 + rng.normal(0, 0.3, 4)
    y = alpha[county] + beta[county] * x + rng.normal(0, 0.4, 12)
    return pd.DataFrame({"county": [f"c{c}" for c in county], "floor": x, "log_radon": y})


def _gauss_legendre(edges, n):
    u, w = np.polynomial.legendre.leggauss(n)
    lo, hi = np.asarray(edges[:-1])[:, None], np.asarray(edges[1:])[:, None]
    return (0.5 * (hi - lo) * u + 0.5 * (hi + lo)).ravel(), (0.5 * (hi - lo) * w).ravel()


def test_log_z_matches_brute_force_small():
    """Product Gauss-Legendre over (a, b, s) themselves (not logs), dense 12 x 12 densities."""
    data = _small_data()
    idx, x, y = np.repeat(np.arange(4), 3), data["floor"].to_numpy(), data["log_radon"].to_numpy()
    scales, w_ab = _gauss_legendre([0, 0.5, 1, 2, 4, 7], 12)  # HalfNormal(1) mass > 7: 3e-12
    s_nodes, w_s = _gauss_legendre([0, 0.25, 0.5, 1, 2, 4, 10, 30], 12)  # HalfNormal(5) > 30: 2e-9
    bb, ss = np.meshgrid(scales, s_nodes, indexing="ij")
    zz, ww, fixed = _cov_parts(idx, x, 4)
    rest = ss[..., None, None] ** 2 * np.eye(y.size) + bb[..., None, None] ** 2 * ww + fixed
    log_f = []
    for a in scales:
        cov = rest + a**2 * zz  # (len(scales), len(s_nodes), 12, 12)
        _, logdet = np.linalg.slogdet(cov)
        solved = np.linalg.solve(cov, np.broadcast_to(y[:, None], cov.shape[:-1] + (1,)))
        quad = np.einsum("i,...i->...", y, solved[..., 0])
        log_lik = -0.5 * (y.size * math.log(2 * math.pi) + logdet + quad)
        prior = stats.halfnorm.logpdf(a) + stats.halfnorm.logpdf(bb)
        log_f.append(log_lik + prior + stats.halfnorm.logpdf(ss, scale=5.0))
    log_f = np.array(log_f)
    peak = log_f.max()
    brute = peak + math.log(np.einsum("ijk,i,j,k->", np.exp(log_f - peak), w_ab, w_ab, w_s))
    assert radon_slopes_log_z(data) == pytest.approx(brute, abs=1e-5)


@pytest.mark.heavy
def test_log_z_stable_under_refinement(monkeypatch):
    """Tighter ``tol`` on finer grids (3 and 3.5 points per sd; the default stops at 2.5) over
    a wider box (faces 36 nats down, not 30) reproduces the default value."""
    import pymc_evidence.testing.radon_slopes_exact as exact

    default = _default_radon_slopes_log_z()  # tol=1e-6, shared with the builders
    monkeypatch.setattr(exact, "EDGE_DROP", 36.0)
    monkeypatch.setattr(exact, "_RESOLUTIONS", (3.0, 3.5))
    fine = exact.radon_slopes_log_z(tol=1e-9)
    assert default == pytest.approx(fine, abs=1e-7)
    assert fine == pytest.approx(RADON_VIS_REFERENCE, abs=1e-6)


def test_builders_share_log_z_and_compile():
    before = _default_radon_slopes_log_z.cache_info().misses
    s_c, s_n = centred_radon_slopes(), noncentred_radon_slopes()
    assert _default_radon_slopes_log_z.cache_info().misses - before <= 1  # computed at most once
    assert s_c.log_z == s_n.log_z == pytest.approx(RADON_VIS_REFERENCE, abs=1e-6)
    assert {"alpha", "beta"} <= {rv.name for rv in s_c.model.free_RVs}
    assert {"z_alpha", "z_beta"} <= {rv.name for rv in s_n.model.free_RVs}
    for system in (s_c, s_n):
        model = system.model
        assert np.isfinite(model.compile_logp()(model.initial_point()))


def test_centred_logp_matches_hand(radon):
    """The centred model's priors are those of the non-centred one (hence the same log Z)."""
    model = centred_radon_slopes().model
    idx, x, y, k = radon["idx"], radon["x"], radon["y"], radon["k"]
    rng = np.random.default_rng(3)
    vals = {"mu_alpha": 1.4, "sigma_alpha": 0.3, "mu_beta": -0.6, "sigma_beta": 0.2}
    vals |= {"sigma_y": 0.75, "alpha": 1.4 + 0.3 * rng.normal(size=k)}
    vals["beta"] = -0.6 + 0.2 * rng.normal(size=k)
    point = {}
    for rv in model.free_RVs:
        value = np.asarray(vals[rv.name], dtype=np.float64)
        transform = model.rvs_to_transforms.get(rv)
        if transform is not None:
            value = transform.forward(value, *rv.owner.inputs).eval()
        point[model.rvs_to_values[rv].name] = value
    hand = (
        stats.norm.logpdf([vals["mu_alpha"], vals["mu_beta"]], 0, 10).sum()
        + stats.halfnorm.logpdf([vals["sigma_alpha"], vals["sigma_beta"]]).sum()
        + stats.halfnorm.logpdf(vals["sigma_y"], scale=5)
        + stats.norm.logpdf(vals["alpha"], vals["mu_alpha"], vals["sigma_alpha"]).sum()
        + stats.norm.logpdf(vals["beta"], vals["mu_beta"], vals["sigma_beta"]).sum()
        + stats.norm.logpdf(y, vals["alpha"][idx] + vals["beta"][idx] * x, vals["sigma_y"]).sum()
    )
    assert float(model.compile_logp(jacobian=False)(point)) == pytest.approx(hand, abs=1e-8)
