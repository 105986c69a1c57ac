"""The fused jax leapfrog trajectories against the numpy path they replace.

A trajectory run as one jitted ``jax.lax.fori_loop`` (:mod:`pymc_evidence.engines.leapfrog`)
must land where the numpy loop of density calls lands, report the same values there, and
count the same calls, points and non-finite points; a density it cannot fuse must fall back
to the numpy loop.
"""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

from pymc_evidence.base import GaussianBase, MixtureBase
from pymc_evidence.engines import batched_log_densities, hmc_step, init_state
from pymc_evidence.engines.leapfrog import (
    FUSED_MIN_ROWS,
    MIXTURE_FORM_MAX_DIM,
    DenseStep,
    leapfrogs,
)

pytest.importorskip("jax")

N = 300  # above FUSED_MIN_ROWS, padded to 512 rows


def _model():
    """Three coordinates, one of them cut at 1.5 by a potential: trajectories that cross
    the cut meet a log density of -inf (non-finite points to count)."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0, shape=2)
        s = pm.HalfNormal("s", 1.0)
        pm.Potential("cut", pt.switch(mu[0] > 1.5, -np.inf, 0.0))
        pm.Normal("y", mu.sum(), s, observed=[0.3, -0.2, 0.5, 1.1])
    return model


def _bases():
    rng = np.random.default_rng(3)
    a = rng.normal(size=(3, 3))
    full = GaussianBase(
        np.array([0.2, -0.1, 0.0]), np.linalg.cholesky(a @ a.T + np.eye(3)), 0.0, "moments"
    )
    diagonal = GaussianBase(np.zeros(3), np.diag([0.5, 1.0, 2.0]), 0.0, "moments")
    parts = [full, diagonal, full.with_values(mean=np.ones(3))]
    mixture = MixtureBase.from_components(parts, np.log([0.5, 0.3, 0.2]), log_zeta=0.0)
    return {"full": full, "mean_field": diagonal, "mixture": mixture}


def _numpy_path(density, n):
    """The same density with no fused trajectory (the numpy loop of density calls)."""

    class Plain:
        def __call__(self, x):
            return density(x)

    assert getattr(Plain(), "fused_trajectory", None) is None
    return Plain()


def _assert_same(fused, plain, n=None):
    """Two trajectories' ends ``(x, p, (log f, log q, grad f, grad q))``: the same points
    with finite densities, equal there to 1e-9 (``plain`` cut to its first ``n`` rows). A
    point whose density overflowed diverged on both paths, its coordinates ``nan`` on one
    and huge on the other (a Gaussian base runs as a one-component mixture in a fused
    trajectory, whose weight is ``nan`` where its density overflowed)."""
    fused = [fused[0], fused[1], *fused[2]]
    plain = [v[:n] for v in (plain[0], plain[1], *plain[2])]
    ok = [np.isfinite(v[2]) & np.isfinite(v[3]) for v in (fused, plain)]
    np.testing.assert_array_equal(ok[0], ok[1])
    for a, b in zip(fused, plain, strict=True):
        np.testing.assert_allclose(a[ok[0]], b[ok[0]], rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("kind", ["full", "mean_field", "mixture"])
def test_fused_matches_numpy(kind):
    base = _bases()[kind]
    density = batched_log_densities(_model(), base, backend="jax")
    assert density.fused_trajectory(N) is not None
    rng = np.random.default_rng(1)
    x = base.sample(N, rng)
    p = rng.standard_normal(x.shape)
    beta = rng.uniform(size=N)
    eps_s = 0.2 * np.array([1.0, 0.5, 2.0])
    fused = leapfrogs(density, x, p, beta, eps_s, 7)
    with np.errstate(all="ignore"):  # trajectories that run off, as HMC meets them
        plain = leapfrogs(_numpy_path(density, N), x, p, beta, eps_s, 7)
    _assert_same(fused[:3], plain[:3])
    assert np.any(~np.isfinite(fused[2][0]))  # some trajectories crossed the cut
    assert fused[3] == plain[3]  # what each met, returned as values: calls, points
    assert fused[3].n_calls == 7 and fused[3].n_points == 7 * N and fused[3].n_nonfinite > 0


def test_fused_matches_numpy_with_a_dense_inverse_mass():
    """A :class:`DenseStep` (step sizes per particle, a Cholesky factor): the fused
    trajectory lands where the numpy loop does."""
    base = _bases()["full"]
    density = batched_log_densities(_model(), base, backend="jax")
    rng = np.random.default_rng(5)
    x = base.sample(N, rng)
    p, beta = rng.standard_normal(x.shape), rng.uniform(size=N)
    step = DenseStep(rng.uniform(0.05, 0.2, (N, 1)), base.chol)
    fused = leapfrogs(density, x, p, beta, step, 6)
    with np.errstate(all="ignore"):
        plain = leapfrogs(_numpy_path(density, N), x, p, beta, step, 6)
    _assert_same(fused[:3], plain[:3])
    assert fused[3] == plain[3]
    # a diagonal factor is the diagonal scale
    s = np.array([0.3, 0.5, 1.2])
    diag = leapfrogs(_numpy_path(density, N), x, p, beta, DenseStep(0.1, np.diag(s)), 6)
    with np.errstate(all="ignore"):
        elementwise = leapfrogs(_numpy_path(density, N), x, p, beta, 0.1 * s, 6)
    _assert_same(diag[:3], elementwise[:3])


def test_hmc_step_fused_and_counted():
    """A fused HMC step: the same step as the numpy path, and the same counts returned."""
    base = _bases()["full"]
    density = batched_log_densities(_model(), base, backend="jax")
    state = init_state(base.sample(N, np.random.default_rng(2)), density)
    fused, info = hmc_step(state, 0.7, density, 0.3, 5, np.random.default_rng(4))
    plain, plain_info = hmc_step(
        state, 0.7, _numpy_path(density, N), 0.3, 5, np.random.default_rng(4)
    )
    assert info.counts == plain_info.counts and info.counts.n_calls == 5
    assert info.counts.n_trajectories == N
    np.testing.assert_array_equal(info.accepted, plain_info.accepted)
    np.testing.assert_allclose(fused.x, plain.x, rtol=1e-9, atol=1e-9)


def test_not_fused_where_it_cannot_be():
    """Too few particles, PyTensor's default linker, or a base with no jax form: None."""
    base = _bases()["full"]
    density = batched_log_densities(_model(), base, backend="jax")
    assert density.fused_trajectory(FUSED_MIN_ROWS - 1) is None
    assert batched_log_densities(_model(), base, backend="default").fused_trajectory(N) is None


def _assert_one_compilation(densities, x, n_leapfrog):
    """Every density's fused trajectory from ``x`` equals the numpy path's, and all of them
    ran on one jitted trajectory compiled once (the densities share one model)."""
    p = np.random.default_rng(5).standard_normal(x.shape)
    for density in densities:
        fused = leapfrogs(density, x, p, 0.5, 0.1, n_leapfrog)
        plain = leapfrogs(_numpy_path(density, N), x, p, 0.5, 0.1, n_leapfrog)
        _assert_same(fused, plain, N)
    (jitted,) = densities[0]._fn._fn.fused.values()
    assert jitted._cache_size() == 1


def test_mixture_padding_shares_compilation():
    """Mixtures of 3 and 6 components and a Gaussian base (a mixture of one) are padded to
    ``MIXTURE_MIN_COMPONENTS`` (up to ``MIXTURE_FORM_MAX_DIM`` dimensions): one jitted
    trajectory for all three, compiled once (the 3-component NormalMixture's bases have 2 to
    6 components by seed, and are Gaussian on some models and seeds); each still gives the
    numpy path's trajectory (the loop over the real components skips the padding)."""
    bases = _bases()
    three = bases["mixture"]
    six = MixtureBase.from_components([*three.components()] * 2, np.zeros(6), log_zeta=0.0)
    model = _model()
    densities = [
        batched_log_densities(model, b, backend="jax") for b in (three, six, bases["full"])
    ]
    _assert_one_compilation(densities, three.sample(N, np.random.default_rng(0)), 2)


def test_large_mixtures_share_compilation():
    """Above ``MIXTURE_FORM_MAX_DIM`` a mixture base is padded too (a Gaussian keeps its own
    form): mixtures of 2 and 3 components in 17 dimensions share one compilation, and the
    fused trajectory is the numpy path's."""
    d = MIXTURE_FORM_MAX_DIM + 1
    with pm.Model() as model:
        pm.Normal("x", 0.0, 1.0, shape=d)
    parts = [GaussianBase(np.full(d, m), np.eye(d), 0.0, "moments") for m in (-1.0, 0.0, 1.0)]
    two, three = (MixtureBase.from_components(parts[:k], np.zeros(k), log_zeta=0.0) for k in (2, 3))
    densities = [batched_log_densities(model, b, backend="jax") for b in (two, three)]
    _assert_one_compilation(densities, three.sample(N, np.random.default_rng(1)), 3)


def test_subset_padded_to_its_set():
    """A run's copies (a subset of its particles) are padded to the whole set's rows where
    that at most doubles them: the same trajectory as unpadded, and no shape compiled
    beyond the set's; a subset a quarter of the set's size is not padded to it, and 65-127
    copies run at the pilot's 256 rows, not on a 128-row density of their own."""
    base = _bases()["full"]
    density = batched_log_densities(_model(), base, backend="jax")
    rng = np.random.default_rng(2)
    x = base.sample(N, rng)
    p = rng.standard_normal(x.shape)
    whole = leapfrogs(density, x, p, 0.6, 0.1, 3)
    (jitted,) = density._fn._fn.fused.values()
    compiled = jitted._cache_size()
    for n in (FUSED_MIN_ROWS // 2, 257, N - 1):  # alone: 64 rows (numpy), 512, 512
        part = leapfrogs(density, x[:n], p[:n], 0.6, 0.1, 3, rows=2 * N)  # a set of 1024
        _assert_same(part, whole, n)
    assert jitted._cache_size() == compiled + 1  # 1024 rows
    leapfrogs(density, x[:200], p[:200], 0.6, 0.1, 3, rows=2 * N)  # 256: not padded to 1024
    assert jitted._cache_size() == compiled + 2
    plain = density._fn._fn.fn._cache_size()
    part = leapfrogs(density, x[:86], p[:86], 0.6, 0.1, 3, rows=2 * N)  # the pilot's 256 rows
    _assert_same(part, whole, 86)
    assert jitted._cache_size() == compiled + 2
    assert density._fn._fn.fn._cache_size() == plain  # no 128-row density either
