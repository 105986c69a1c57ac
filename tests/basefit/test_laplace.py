"""Multi-start mode finding with Laplace masses (pymc_evidence.basefit.laplace)."""

from __future__ import annotations

import numpy as np
import pymc as pm
from scipy import stats
from scipy.special import logsumexp

from pymc_evidence.basefit.laplace import find_modes
from pymc_evidence.runtime import model_space
from pymc_evidence.testing import bimodal_1d


def test_gaussian_posterior_mode_and_mass_are_exact():
    """Normal prior, normal likelihood: the Laplace approximation is exact."""
    y = np.array([0.4, 1.1, -0.2])
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 2.0)
        pm.Normal("y", mu, 1.0, observed=y)
    modes = find_modes(model_space(model), np.array([[-5.0], [0.0], [7.0]]))
    assert len(modes) == 1
    precision = 1 / 4 + y.size
    assert np.isclose(modes[0].mean[0], y.sum() / precision, atol=1e-6)
    assert np.isclose(modes[0].cov[0, 0], 1 / precision, rtol=1e-4)
    truth = stats.multivariate_normal(np.zeros(3), np.eye(3) + 4.0).logpdf(y)
    assert np.isclose(modes[0].log_zeta, truth, atol=1e-6)


def test_both_modes_of_a_symmetric_posterior():
    """y ~ N(theta^2, 1): two mirror modes of equal mass; together close to the exact Z."""
    case = bimodal_1d()
    modes = find_modes(model_space(case.model), np.linspace(-6.0, 6.0, 9)[:, None])
    assert len(modes) == 2
    assert np.isclose(modes[0].mean[0], -modes[1].mean[0], atol=1e-5)
    assert np.isclose(modes[0].log_zeta, modes[1].log_zeta, atol=1e-6)
    # locally the likelihood is Gaussian in theta: Laplace is within a few hundredths
    assert abs(logsumexp([m.log_zeta for m in modes]) - case.log_z) < 0.05


def _check_rounds(widths, monkeypatch):
    """``_fits_settle`` with ADVI replaced by fits of the given width ratio per round (two
    fits, the first always settled); returns its verdict and the rounds it ran."""
    from types import SimpleNamespace

    import pymc_evidence.basefit.laplace_first as lf
    from pymc_evidence.base.gaussian import GaussianBase

    mode = GaussianBase(np.zeros(2), 0.01 * np.eye(2), log_zeta=0.0, kind="laplace")
    calls = []

    def fake_advi(density, starts, **kwargs):
        ratio = widths[len(calls)]
        unit = 1.0 if calls else 0.01  # later rounds run in the Laplace Gaussian's scale
        calls.append(len(starts))
        chols = np.stack([unit * np.eye(2) * r for r in [1.0, ratio][-len(starts) :]])
        return SimpleNamespace(
            means=np.zeros((len(starts), 2)), chols=chols, errors=[None] * len(starts)
        )

    monkeypatch.setattr(lf, "run_advi", fake_advi)
    starts = np.zeros((2, 2))
    verdict = lf._fits_settle(None, mode, starts, None, fullrank=True, progressbar=False)
    return verdict, calls


def test_a_fit_nearly_settled_after_the_patient_rounds_goes_on(monkeypatch):
    """A fit just outside the bounds after CHECK_PATIENCE rounds (the 50 000-row regression's
    at 2.23 times the Laplace width) goes on; settled later, the check passes; still
    outside after CHECK_ROUNDS rounds, it fails."""
    from pymc_evidence.basefit.laplace_first import CHECK_PATIENCE, CHECK_ROUNDS

    slow = [5.7] + [2.23] * (CHECK_PATIENCE - 1)
    assert _check_rounds([*slow, 1.56], monkeypatch) == (True, [2] + [1] * CHECK_PATIENCE)
    never = slow + [2.1] * (CHECK_ROUNDS - CHECK_PATIENCE)
    assert _check_rounds(never, monkeypatch) == (False, [2] + [1] * (CHECK_ROUNDS - 1))


def test_a_fit_far_outside_after_the_patient_rounds_stops_the_check(monkeypatch):
    """A fit on a broad component (Skilling's bump: 10 times the spike's width) stays there:
    after CHECK_PATIENCE rounds the check fails; a fit settled earlier passes."""
    from pymc_evidence.basefit.laplace_first import CHECK_PATIENCE

    far = [10.0] * CHECK_PATIENCE + [1.0]
    assert _check_rounds(far, monkeypatch) == (False, [2] + [1] * (CHECK_PATIENCE - 1))
    assert _check_rounds([3.0, 1.5, 1.0], monkeypatch) == (True, [2, 1])
