"""Diagnostic plots of evidence results (matplotlib).

Every function takes the container returned by :func:`pymc_evidence.sample_evidence` (an
``arviz.InferenceData`` on PyMC 5, an ``xarray.DataTree`` on PyMC 6), draws on the given
``ax``/``axes`` or on a new figure, and returns the axes. Nothing here calls ``plt.show`` or
changes ``rcParams``. :func:`plot_running_log_z` and :func:`plot_compare` take the
results of every method; the method-specific plots raise ``ValueError`` for results of a
method they cannot show (the message lists those they can). matplotlib is an optional
dependency, imported when a plot is drawn.

Running estimates are recomputed from the stored raw quantities (CT ``delta``, ST level
conditionals, AIS/BAR works, LIS run ratios, SMC stage increments, bridge iterates) with the
same pure estimators that produced the final value, so the last point of
:func:`plot_running_log_z` is the stored ``log Z`` (of each run, for SMC and bridge).

The plots live in :mod:`pymc_evidence.plots.tempering` (β trace, ST levels),
:mod:`pymc_evidence.plots.running` (running log Z) and :mod:`pymc_evidence.plots.evidence`
(work overlap, model comparison); all are re-exported here.

Examples
--------
The per-function examples use results like these:

>>> import pymc as pm, pymc_evidence as pme
>>> with pm.Model():
...     mu = pm.Normal("mu", 0, 1)
...     pm.Normal("y", mu, 1, observed=[0.3, -0.5])  # exact log Z = -2.5505
...     idata = pme.sample_evidence(method="ct", chains=2)  # doctest: +SKIP
...     idata_st = pme.sample_evidence(method="st", chains=2)  # doctest: +SKIP
...     idata_bar = pme.sample_evidence(method="bar", n_particles=64)  # doctest: +SKIP
...     idata_smc = pme.sample_evidence(method="smc")  # doctest: +SKIP
"""

from __future__ import annotations

from ._common import CT_METHODS as CT_METHODS  # the method groups, kept importable here
from ._common import PARTICLE_METHODS as PARTICLE_METHODS
from ._common import SMC_METHODS as SMC_METHODS
from ._common import TEMPERING_METHODS as TEMPERING_METHODS
from .evidence import plot_compare, plot_work_overlap
from .running import plot_running_log_z
from .tempering import plot_beta_trace, plot_st_levels

__all__ = [
    "plot_beta_trace",
    "plot_compare",
    "plot_running_log_z",
    "plot_st_levels",
    "plot_work_overlap",
]
