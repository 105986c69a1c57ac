"""Continuous tempering against exactly known log Z, at default settings and fixed seeds.

Each case asserts |log_z - truth| <= 4 se AND <= 0.1, and se <= 0.1 (``_accuracy.py``), the
acceptance rule of the project; the truths come from closed forms or quadrature in
``pymc_evidence.testing.models``, never from this package's estimators.
"""

import numpy as np
import pytest

import pymc_evidence as pme
from pymc_evidence.testing import models as tm
from tests._accuracy import ACCURACY_SEED as SEED
from tests._accuracy import FAST_CASES, check_method, fast_case


@pytest.mark.parametrize("method", ["ct", "gibbs_ct"])
@pytest.mark.parametrize("name", FAST_CASES)
def test_exact_log_z_at_defaults(name, method):
    check_method(fast_case(name), method)


@pytest.mark.parametrize("method", [pytest.param("ct", marks=pytest.mark.heavy), "gibbs_ct"])
def test_bimodal_with_prior_base(method):
    """Far-apart modes: the prior base (power-posterior path) sees both at beta = 0.

    The prior is a poorer base than ADVI's, so the se at 1000 draws is about 0.11; three
    times the draws bring it under 0.1. The error bound is issue 23's 0.15 nats: at 0.1 it
    was 1.5 se of this run, and ``ct`` failed at one seed by 0.001 (-0.101 +- 0.067) once
    numba's fast-math was turned off, which moved the NUTS draws.
    """
    check_method(tm.mixture_likelihood(), method, base="prior", draws=3000, abs_tol=0.15)


def test_bimodal_posterior_mass_split():
    """Both modes are found, with the exact posterior weights (0.674 / 0.326)."""
    case = tm.mixture_likelihood()
    idata = pme.sample_evidence(
        case.model, method="ct", base="prior", random_seed=SEED, progressbar=False
    )
    from scipy import stats

    from pymc_evidence.compat import get_group

    data = case.data
    y, a, w = np.asarray(data["y"]), np.asarray(data["offset"]), data["weight"]
    s0, s = data["prior_sigma"], data["noise_sigma"]
    sd = np.sqrt(s0**2 + s**2)
    log_mass = np.array(
        [
            np.log(w) + stats.norm.logpdf(y, a, sd).sum(),
            np.log1p(-w) + stats.norm.logpdf(y, -a, sd).sum(),
        ]
    )
    exact = np.exp(log_mass[0] - np.logaddexp(*log_mass))
    shrink = s0**2 / (s0**2 + s**2)
    centre_plus, centre_minus = shrink * (y - a), shrink * (y + a)
    x = get_group(idata, "posterior")["x"].values.reshape(-1, y.size)
    near_plus = np.linalg.norm(x - centre_plus, axis=1) < np.linalg.norm(x - centre_minus, axis=1)
    assert abs(near_plus.mean() - exact) < 0.08, (near_plus.mean(), exact)


@pytest.mark.heavy
def test_regression_d50_joint():
    """Where pm.sample_smc drifts by about a nat, CT stays within its error bar."""
    check_method(tm.conjugate_regression(d=50), "ct")


@pytest.mark.slow
def test_regression_d50_gibbs():
    check_method(tm.conjugate_regression(d=50), "gibbs_ct")


FUNNEL_OPTIONS = {"draws": 4000, "target_accept": 0.99}


@pytest.mark.slow
@pytest.mark.parametrize("method", ["ct", "gibbs_ct"])
def test_centered_funnel(method):
    """Centred hierarchical normal (a funnel), exact log Z by 1-D quadrature over tau.

    At default settings the estimate is within its tolerance on some seeds but not all
    (error up to 0.2 with se 0.06-0.12 and NUTS divergences, which are warned about), so
    this check uses more draws and a careful NUTS; see the closing note of issue 2.
    """
    check_method(tm.hierarchical_normal(), method, **FUNNEL_OPTIONS)


def test_many_modes_are_refused_before_sampling():
    """More separated modes than tempering chains cross often enough (the egg-box's 18:
    se 0.3-0.4 at defaults) is refused once the base is known, naming the methods to use."""
    from types import SimpleNamespace

    from pymc_evidence.base import MixtureBase
    from pymc_evidence.methods._nuts import (
        MAX_TEMPERING_MODES,
        refuse_many_modes,
        refuse_modes_beyond_chains,
    )
    from pymc_evidence.methods.ct import CTOptions
    from pymc_evidence.methods.noneq import ReverseAISOptions

    def problem(k, small=0):
        weights = np.r_[np.ones(k), np.full(small, 1e-3)]
        base = MixtureBase(
            np.log(weights), np.zeros((k + small, 1)), np.ones((k + small, 1, 1)), log_zeta=0.0
        )
        return SimpleNamespace(tempering_base=base)

    refuse_many_modes(problem(MAX_TEMPERING_MODES, small=5), CTOptions())  # tiny ones not counted
    many = problem(MAX_TEMPERING_MODES + 1)
    with pytest.raises(ValueError, match="method='smc'") as info:
        refuse_many_modes(many, CTOptions())
    # what it advises is accepted: 'bar' only with a chain per mode
    needed = MAX_TEMPERING_MODES + 1
    assert f"chains={needed} or more" in str(info.value)
    many.fitted = SimpleNamespace(fit=many.tempering_base)
    many.sampling = SimpleNamespace(chains=needed)
    refuse_modes_beyond_chains(many, ReverseAISOptions())
    many.sampling = SimpleNamespace(chains=needed - 1)
    with pytest.raises(ValueError, match="NUTS chains"):
        refuse_modes_beyond_chains(many, ReverseAISOptions())

    system = pme.testing.egg_box()  # the shells' 7 components (PyMC 6) are 4 or fewer on 5
    for method in ("ct", "gibbs_ct", "st"):
        with pytest.raises(ValueError, match="separated modes"):
            pme.sample_evidence(system.model, method=method, random_seed=1, progressbar=False)


@pytest.mark.parametrize("method", [pytest.param("ct", marks=pytest.mark.heavy), "st"])
def test_separated_modes_get_a_mixture_of_the_fits_as_tempering_base(method):
    """Two mirror-image modes: ADVI's distinct fits merged into one Gaussian over both made
    the tempering chains' answer depend on which mode they sat in (se 0.07-0.11 at seed 1,
    and on a 2-component mixture ct +0.10 on average, st coverage 0.33); the fits as a
    mixture weigh each mode by its evidence, and the estimate is within 0.03 nats."""
    from pymc_evidence.base import MixtureBase
    from pymc_evidence.problem import EvidenceProblem

    system = pme.testing.bimodal_1d()
    problem = EvidenceProblem.build(system.model, random_seed=1, fit="tempering")
    assert problem.base.kind == "merged"  # smc keeps the merged Gaussian
    assert isinstance(problem.tempering_base, MixtureBase)
    assert problem.tempering_base is problem.tempering_base  # fitted once
    check_method(system, method, abs_tol=0.03, se_max=0.03, random_seed=1)
