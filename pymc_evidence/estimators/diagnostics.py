"""The standard warning texts of an estimate's diagnostics (:func:`evidence_messages`).

The warning categories, :class:`~pymc_evidence.record.WarningMessage`, :func:`tagged` and
:func:`warn_user` live in :mod:`pymc_evidence.record`, below the estimators, so that the
results schema can use them without importing an estimator; they are imported here too,
so that ``pymc_evidence.estimators.diagnostics.WeightWarning`` and its kin keep working.

Pure numpy/scipy; nothing here knows about PyMC or xarray.
"""

from __future__ import annotations

import numpy as np

from ..record import (
    WARNING_CATEGORIES,
    BaseFitWarning,
    ConvergenceWarning,
    CrossCheckWarning,
    EvidenceWarning,
    ModelWarning,
    SamplingWarning,
    WarningMessage,
    WeightWarning,
    add_messages,
    tagged,
    warn_user,
)

__all__ = [
    "WARNING_CATEGORIES",
    "BaseFitWarning",
    "ConvergenceWarning",
    "CrossCheckWarning",
    "EvidenceWarning",
    "ModelWarning",
    "SamplingWarning",
    "WarningMessage",
    "WeightWarning",
    "checked",
    "evidence_messages",
    "tagged",
    "warn_user",
]

#: Warning thresholds used by :func:`evidence_messages`.
END_FRACTION_MIN = 0.01
CHAIN_PVALUE_MIN = 0.01
ESS_W1_MIN = 50.0
ESS_W1_MIN_FRACTION = 0.01
BASE_MOMENT_Z_MAX = 5.0
NONFINITE_FRACTION_MAX = 0.01
#: Share of diverging HMC trajectories above which a particle method warns. On the
#: eight-schools model at defaults the non-centred form (estimates right) diverged below it,
#: the centred form (estimates low) above it.
DIVERGING_FRACTION_MAX = 0.02


def checked(est, diagnostics: dict, extra_messages=()):
    """``est`` with run-level ``diagnostics`` (divergences, non-finite densities, ...) added
    and the warnings they call for (:func:`evidence_messages`), with ``extra_messages``,
    emitted once (:func:`~pymc_evidence.record.add_messages`).

    Examples
    --------
    >>> from pymc_evidence.record import EvidenceEstimate
    >>> checked(EvidenceEstimate(-1.0, 0.1, "demo"), {"n_draws": 100.0}).diagnostics
    {'n_draws': 100.0}
    """
    messages = evidence_messages(diagnostics, est.se) + list(extra_messages)
    return add_messages(est, messages, diagnostics=diagnostics)


def evidence_messages(diag: dict, se: float) -> list[WarningMessage]:
    """Warning texts for the standard diagnostics of a tempering-type estimator.

    Each check runs only if its keys are in ``diag``:

    * ``frac_beta_lt_0.1`` / ``frac_beta_gt_0.9`` below ``END_FRACTION_MIN`` (0.01): the
      base / target end of the temperature range is (almost) never visited;
    * ``chain_disagreement`` (a p-value) below ``CHAIN_PVALUE_MIN`` (0.01), reported with
      ``chain_max_z``;
    * ``ess_w1`` below ``ESS_W1_MIN`` (50) or below ``ESS_W1_MIN_FRACTION`` (1%) of ``n_draws``;
    * a non-finite standard error ``se``;
    * ``n_divergences`` above zero (NUTS divergences after tuning);
    * ``base_moment_max_mean_z`` or ``base_moment_max_var_z`` above ``BASE_MOMENT_Z_MAX`` (5):
      the base-moment check of Graham & Storkey's eq. 22 fails;
    * ``diverging_fraction`` above ``DIVERGING_FRACTION_MAX`` (2%): that share of a particle
      method's HMC trajectories diverged (energy error above 1000, as NUTS counts them);
    * ``nonfinite_fraction`` above ``NONFINITE_FRACTION_MAX`` (1%): that share of the log
      densities met by a particle method's HMC trajectories was not finite (the particle
      analogue of NUTS divergences);
    * ``posterior_diverging_fraction`` above ``DIVERGING_FRACTION_MAX``: that share of the
      moves after SMC's last reweighting diverged, which touches the draws, not log Z.

    Parameters
    ----------
    diag : dict of str to float
    se : float

    Returns
    -------
    list of WarningMessage
        Strings tagged with their category: the end fractions and ``ess_w1`` give
        :class:`WeightWarning`, chain disagreement and the se :class:`ConvergenceWarning`,
        divergences and non-finite densities :class:`SamplingWarning`, the base-moment
        check :class:`BaseFitWarning`.

    Examples
    --------
    >>> messages = evidence_messages({"frac_beta_lt_0.1": 0.2, "frac_beta_gt_0.9": 0.001}, 0.01)
    >>> [(m[:50], m.category.__name__) for m in messages]
    [('beta rarely visits the target end (fraction beta>0', 'WeightWarning')]
    """
    return [
        *_weight_messages(diag),
        *_convergence_messages(diag, se),
        *_sampling_messages(diag),
        *_base_messages(diag),
    ]


def _weight_messages(diag: dict) -> list[WarningMessage]:
    out = []
    if diag.get("frac_beta_lt_0.1", 1.0) < END_FRACTION_MIN:
        out.append(
            f"beta rarely visits the base end (fraction beta<0.1 = {diag['frac_beta_lt_0.1']:.2g})"
            ": log zeta is probably far below log Z, or the base is far from the target"
        )
    if diag.get("frac_beta_gt_0.9", 1.0) < END_FRACTION_MIN:
        out.append(
            f"beta rarely visits the target end (fraction beta>0.9 = {diag['frac_beta_gt_0.9']:.2g}"
            "): log zeta is probably far above log Z, or the base is far from the target"
        )
    ess, n = diag.get("ess_w1", np.inf), diag.get("n_draws", 0.0)
    if ess < ESS_W1_MIN or ess < ESS_W1_MIN_FRACTION * n:
        out.append(
            f"Kish ESS of the w1 (target-end) weights is {ess:.1f} of {n:.0f} draws: the target"
            " end is poorly represented"
        )
    return tagged(out, WeightWarning)


def _convergence_messages(diag: dict, se: float) -> list[WarningMessage]:
    out = []
    if diag.get("chain_disagreement", 1.0) < CHAIN_PVALUE_MIN:
        out.append(
            "per-chain estimates disagree beyond their standard errors (chi-square p = "
            f"{diag['chain_disagreement']:.2g}, max |z| = {diag.get('chain_max_z', np.nan):.1f}):"
            " chains may not have mixed (or are too short for reliable errors); the se may be"
            " too small"
        )
    if not np.isfinite(se):
        out.append("the standard error could not be estimated (too few draws per chain)")
    return tagged(out, ConvergenceWarning)


def _sampling_messages(diag: dict) -> list[WarningMessage]:
    out = []
    if diag.get("n_divergences", 0.0) > 0:
        out.append(
            f"{diag['n_divergences']:.0f} divergent NUTS transitions after tuning: the sampler"
            " may have missed part of the tempered target, biasing the estimate beyond its se;"
            " raise target_accept or reparameterize (e.g. non-centred hierarchies)"
        )
    if diag.get("diverging_fraction", 0.0) > DIVERGING_FRACTION_MAX:
        out.append(
            f"{100 * diag['diverging_fraction']:.1f}% of the HMC trajectories diverged (energy"
            " error above 1000): the kernels do not explore part of the path (a funnel's"
            " neck?), so the estimate may be biased beyond its se; keep reparam='auto' or"
            " reparameterize (e.g. non-centred hierarchies)"
        )
    if diag.get("nonfinite_fraction", 0.0) > NONFINITE_FRACTION_MAX:
        out.append(
            f"{100 * diag['nonfinite_fraction']:.1f}% of the log densities met by the HMC"
            " trajectories were not finite (diverging trajectories): the kernels do not"
            " explore part of the path, so the estimate may be biased beyond its se;"
            " reparameterize (e.g. non-centred hierarchies)"
        )
    bad = max(diag.get("posterior_diverging_fraction", 0.0), 0.0)
    if bad > DIVERGING_FRACTION_MAX:
        out.append(
            f"{100 * bad:.1f}% of the HMC moves at beta = 1 after the last reweighting diverged"
            ": the posterior draws may miss the region where they did (the evidence is not"
            " affected); compare their tails with a NUTS run before relying on them"
        )
    return tagged(out, SamplingWarning)


def _base_messages(diag: dict) -> list[WarningMessage]:
    moment_z = max(diag.get("base_moment_max_mean_z", 0.0), diag.get("base_moment_max_var_z", 0.0))
    if moment_z > BASE_MOMENT_Z_MAX:
        return tagged(
            [
                f"the w0-weighted draws do not reproduce the base's moments (max |z| = "
                f"{moment_z:.1f}): the base end is not explored as it should be, so the"
                " estimate is unreliable"
            ],
            BaseFitWarning,
        )
    return []
