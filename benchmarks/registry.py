#!/usr/bin/env python
"""The benchmarks' one model registry: every name a script's ``--models`` takes.

:func:`build` turns a name into ``(model, log_z)``: a PyMC model and its log Z computed
without the package's estimators (closed forms, enumeration, quadrature, importance sampling
on a few coordinates; NaN where none is known). The names, by family:

* ``analytic``: systems of :mod:`pymc_evidence.testing` and the radon models
  (``conj_d5``, ``hier_centered``, ``radon_vi``, ...; the radon truths are the quadratures
  of ``radon_reference.py``): ``compare_smc.py``, ``calibration.py``, ``evidence_cost.py``;
* ``first_call``: models as users write them (``first_call_models.py``), the set of
  ``first_call.py``;
* ``more`` and ``user``: more of them (``more_models.py``, ``user_models.py``);
* ``hard``: :data:`pymc_evidence.testing.HARD_MODELS` and the radon slopes
  (``hard_models.py``);
* ``identity``: the two models of ``bit_identity.py`` that no other family holds;
* sized names ``kind:J`` (:data:`KINDS`, ``sizes.py``: hierarchies of ``J`` groups, a
  logistic regression of ``J`` rows) and ``bambi:J`` (bambi's ``y ~ 1 + x + (1|g)``);
* any other factory of :mod:`pymc_evidence.testing` by its name (``egg_box``, ...).

Run this file to list a family's names with their dimensions and truths::

    PYTHONPATH=. .venv/bin/python benchmarks/registry.py first_call
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from sizes import KINDS, sized  # noqa: E402

#: A builder: ``truth`` -> ``(model, log_z)`` (``truth=False`` may skip a costly truth: NaN)
Builder = Callable[[bool], tuple]
FAMILIES = ("analytic", "first_call", "more", "user", "hard", "identity")


def _system(factory: Callable, **kwargs) -> Builder:
    """A builder of a :mod:`pymc_evidence.testing` system (an ``AnalyticModel``)."""

    def build(truth: bool = True):
        system = factory(**kwargs)
        return system.model, float(system.log_z)

    return build


def _radon(key: str) -> Builder:
    def build(truth: bool = True):
        from pymc_evidence.datasets import radon_models

        ref = math.nan
        if truth and key != "varying_intercept_slope":
            from radon_reference import radon_reference_log_z

            ref = radon_reference_log_z(key)
        return radon_models()[key], ref

    return build


def _plain(factory: Callable[[], tuple]) -> Builder:
    """A builder of a ``(model, log_z)`` factory whose truth always comes with it."""
    return lambda truth=True: factory()


def analytic() -> dict[str, tuple[str, Builder]]:
    """The ``analytic`` family: name -> (description, builder)."""
    from pymc_evidence.testing import models as m

    return {
        "conj_d5": ("conjugate_regression(d=5)", _system(m.conjugate_regression, d=5)),
        "conj_d50": ("conjugate_regression(d=50)", _system(m.conjugate_regression, d=50)),
        "hier_centered": (
            "hierarchical_normal() (centered funnel, J=8)",
            _system(m.hierarchical_normal),
        ),
        "beta_bernoulli": ("beta_bernoulli() (n=50)", _system(m.beta_bernoulli)),
        "mixture": ("mixture_likelihood()", _system(m.mixture_likelihood)),
        "normalized_density": ("normalized_density()", _system(m.normalized_density)),
        "radon_vi": (
            "radon_models()['varying_intercept'] (reference log Z by 2-D quadrature)",
            _radon("varying_intercept"),
        ),
        "radon_pooled": (
            "radon_models()['pooled'] (reference log Z by 1-D quadrature)",
            _radon("pooled"),
        ),
        "radon_unpooled": (
            "radon_models()['unpooled'] (reference log Z by 1-D quadrature)",
            _radon("unpooled"),
        ),
        "radon_vis": (
            "radon_models()['varying_intercept_slope'] (no reference log Z)",
            _radon("varying_intercept_slope"),
        ),
    }


def first_call() -> dict[str, Builder]:
    """The ``first_call`` family, in the benchmark's order."""
    import first_call_models as f

    return {
        "regression_5": _plain(f.regression),
        "regression_50": _plain(lambda: f.regression(d=50, n=120)),
        "logistic_20k": _plain(f.logistic),
        "hierarchy_300": _plain(f.hierarchy),
        "mixture_2": _plain(f.mixture),
        "mixture_3": _plain(lambda: f.mixture(k=3, n=10)),
        "lkj_cholesky": _plain(f.lkj_cholesky),
        "gp_latent": _plain(f.gp_latent),
        "dirichlet_multinomial": _plain(f.dirichlet_multinomial),
        "ar1": _plain(f.ar1),
        "zero_sum": _plain(f.zero_sum),
        "censored": _plain(f.censored),
    }


def more() -> dict[str, Builder]:
    """The ``more`` family."""
    import first_call_models as f
    import more_models as m

    return {
        "random_walk_60": _plain(m.random_walk),
        "noncentred_500": _plain(lambda: f.hierarchy(J=500, centred=False)),
        "centred_500": _plain(lambda: f.hierarchy(J=500)),
        "student_t": _plain(m.student_t),
        "rows_50k": _plain(lambda: f.regression(d=8, n=50_000)),
        "simplex_10": _plain(lambda: f.dirichlet_multinomial(k=10, m=5, trials=30)),
        "gp_latent_30": _plain(lambda: f.gp_latent(n=30)),
        "gp_latent_40": _plain(lambda: f.gp_latent(n=40)),
        "mixture_4": _plain(lambda: f.mixture(k=4, n=9)),
    }


def user() -> dict[str, Builder]:
    """The ``user`` family."""
    import user_models as u

    names = ("ordered_means", "zero_inflated", "poisson_groups", "ordered_logistic",
             "missing_responses", "truncated", "hidden_markov", "beta_binomial_groups",
             "allocated_mixture", "latent_class", "negative_binomial", "change_point",
             "lkj_corr")  # fmt: skip
    return {name: _plain(getattr(u, name)) for name in names}


def hard() -> dict[str, Builder]:
    """The ``hard`` family."""
    from pymc_evidence import testing as t

    return {
        **{name: _system(factory) for name, factory in t.HARD_MODELS.items()},
        "hierarchical_normal": _system(t.hierarchical_normal, centered=True),
        "radon_slopes_centred": _system(t.centred_radon_slopes),
        "radon_slopes_noncentred": _system(t.noncentred_radon_slopes),
    }


def logistic_34():
    """A logistic regression of 34 standard normal coefficients on 200 rows."""
    import pymc as pm

    rng = np.random.default_rng(34)
    x = rng.standard_normal((200, 34))
    y = rng.binomial(1, 1.0 / (1.0 + np.exp(-x @ (0.3 * rng.standard_normal(34)))))
    with pm.Model() as model:
        beta = pm.Normal("beta", 0.0, 1.0, shape=34)
        pm.Bernoulli("y", logit_p=pm.math.dot(x, beta), observed=y)
    return model


def change_point_30():
    """Poisson counts of 30 days whose rate switches from ``early`` to ``late`` after a
    ``DiscreteUniform`` day ``s``, the data barely showing the switch."""
    import pymc as pm

    rng = np.random.default_rng(0)
    counts = np.r_[rng.poisson(3.0, 17), rng.poisson(1.0, 13)]
    with pm.Model(coords={"t": np.arange(30)}) as model:
        s = pm.DiscreteUniform("s", 0, 29)
        early = pm.Exponential("early", 1.0)
        late = pm.Exponential("late", 1.0)
        rate = pm.math.switch(s >= np.arange(30), early, late)
        pm.Deterministic("rate", rate, dims="t")
        pm.Poisson("y", rate, observed=counts, dims="t")
    return model


def identity() -> dict[str, Builder]:
    """The ``identity`` family (``bit_identity.py``'s own models, no truth)."""
    return {
        "logistic_34": lambda truth=True: (logistic_34(), math.nan),
        "change_point_30": lambda truth=True: (change_point_30(), math.nan),
    }


def family(name: str) -> dict[str, Builder]:
    """The builders of one family, by name.

    >>> list(family("first_call"))[:2]
    ['regression_5', 'regression_50']
    """
    if name == "analytic":
        return {key: build for key, (_, build) in analytic().items()}
    return {"first_call": first_call, "more": more, "user": user, "hard": hard,
            "identity": identity}[name]()  # fmt: skip


def build(name: str, truth: bool = True) -> tuple:
    """``(model, log_z)`` of a registered name (families first, then sized names, then a
    :mod:`pymc_evidence.testing` factory); ``truth=False`` may skip a costly truth.

    >>> model, log_z = build("conj_d5")
    >>> round(log_z, 3) == round(build("conjugate_regression")[1], 3)
    True
    """
    if name.startswith("bambi:"):
        return bambi(int(name.split(":")[1]), truth)
    if ":" in name:
        return sized(name, truth)
    for key in FAMILIES:
        builders = family(key)
        if name in builders:
            return builders[name](truth)
    import pymc_evidence.testing as systems

    factory = getattr(systems, name, None)
    if factory is None or name.startswith("_"):
        raise SystemExit(f"unknown model {name!r}: a name of {FAMILIES}, 'kind:J' of {KINDS} "
                         "or a factory of pymc_evidence.testing")  # fmt: skip
    system = factory()
    return system.model, float(system.log_z)


def bambi(J: int, truth: bool = True) -> tuple:
    """bambi's ``y ~ 1 + x + (1|g)`` with its default priors on ``J`` groups of 5 rows
    (``posterior_quality.py``'s data) and its exact log Z
    (:func:`pymc_evidence.testing.bambi_truth.random_intercept_truth`)."""
    import bambi as bmb
    from posterior_quality import _bambi_data

    from pymc_evidence.testing.bambi_truth import bambi_priors, random_intercept_truth

    df = _bambi_data(J=J)
    model = bmb.Model("y ~ 1 + x + (1|g)", df)
    model.build()
    if not truth:
        return model, math.nan
    priors = bambi_priors(model.backend.model)
    return model, random_intercept_truth(df["y"], df["x"], df["g"].cat.codes, priors).log_z


def model_names(text: str, default: str = "first_call") -> list[str]:
    """Comma-separated names of ``--models``: ``all`` is family ``default``, a family's name
    stands for its names.

    >>> model_names("more,gauss:300")[-1]
    'gauss:300'
    """
    out = []
    for item in text.split(","):
        item = default if item == "all" else item
        out += list(family(item)) if item in FAMILIES else [item] if item else []
    return out


def ndim(model) -> int:
    """The number of free coordinates of a PyMC model (its initial point's size)."""
    return int(sum(np.size(v) for v in model.initial_point().values()))


if __name__ == "__main__":
    for fam in sys.argv[1:] or FAMILIES:
        for key in family(fam):
            model, log_z = build(key)
            print(f"{fam:10s} {key:24s} d={ndim(model):5d} log Z = {log_z:.4f}", flush=True)
