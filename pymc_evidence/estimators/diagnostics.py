"""Warning categories, warning texts and small scalar diagnostics shared by every layer.

The package's warnings form one tree under :class:`EvidenceWarning` (itself a
:class:`UserWarning`, so existing ``UserWarning`` filters keep working)::

    UserWarning
    └── EvidenceWarning
        ├── SamplingWarning      the sampler or kernels did not explore the target
        ├── ConvergenceWarning   chains or iterations disagree; the se is unreliable
        ├── WeightWarning        importance weights degenerate; the path is poorly covered
        ├── BaseFitWarning       the base distribution (ADVI, Laplace, ...) is poor
        ├── CrossCheckWarning    estimates that should agree do not
        └── ModelWarning         the model could not be handled the fast/preferred way

Warnings travel as plain strings in ``EvidenceEstimate.warnings`` (and in netCDF
attributes); a :class:`WarningMessage` is such a string that also carries its category, so
that :func:`~pymc_evidence.estimators.logspace.emit_warnings` emits it under the right one.

Pure numpy/scipy; nothing here knows about PyMC or xarray.
"""

from __future__ import annotations

import os
import sys
import warnings

import numpy as np

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


class EvidenceWarning(UserWarning):
    """A problem detected while estimating a marginal likelihood; the root of the tree.

    Every warning of the package is of a subclass of this category, so
    ``warnings.simplefilter("error", EvidenceWarning)`` turns all of them into errors and
    ``warnings.simplefilter("ignore", SamplingWarning)`` silences one kind only. Estimators
    return the same messages in ``EvidenceEstimate.warnings``.

    Examples
    --------
    >>> issubclass(SamplingWarning, EvidenceWarning), issubclass(EvidenceWarning, UserWarning)
    (True, True)
    """


class SamplingWarning(EvidenceWarning):
    """The sampler or the HMC kernels did not explore (part of) the target.

    Divergent NUTS transitions, a share of diverging HMC trajectories, non-finite log
    densities met by the kernels or at bridge proposals. The estimate may be biased beyond
    its se: reparameterize (non-centred hierarchies), raise ``target_accept``.
    """


class ConvergenceWarning(EvidenceWarning):
    """Chains, runs or an iteration did not converge; the standard error is unreliable.

    Per-chain estimates that disagree beyond their se, a non-finite se, too few effective
    draws, a single SMC run, an iterative estimator (bridge, BAR, histogram) that stopped
    before converging. Draw more or longer chains, more runs, or raise ``maxiter``.
    """


class WeightWarning(EvidenceWarning):
    """Importance weights degenerate or the path from base to target is poorly covered.

    A low Kish ESS of importance or run weights, a temperature end or level that is
    (almost) never visited, adjacent distributions that barely overlap, a temperature
    ladder too coarse for thermodynamic integration. Use more intermediate distributions,
    more particles or runs, or a base closer to the posterior.
    """


class BaseFitWarning(EvidenceWarning):
    """The base distribution (ADVI, Laplace, moments, prior) is a poor fit.

    A fit that failed and fell back to a simpler one, or weighted draws that do not
    reproduce the base's moments. Try another ``base`` or more ADVI steps/restarts.
    """


class CrossCheckWarning(EvidenceWarning):
    """Estimates that should agree (or bracket ``log Z``) do not, or are compared as if.

    Methods of a cross-check that disagree beyond their se, forward AIS above reverse AIS,
    estimates of different methods compared in a Bayes factor. At least one estimate
    missed part of the posterior; trust none of them until the cause is found.
    """


class ModelWarning(EvidenceWarning):
    """The model could not be handled the preferred way; results stay valid.

    A variable that reparametrization left alone, a log density or prior draw that could
    not be vectorized (rows are evaluated one at a time, much slower).
    """


#: The categories below :class:`EvidenceWarning`, in the order the docs list them.
WARNING_CATEGORIES = (
    SamplingWarning,
    ConvergenceWarning,
    WeightWarning,
    BaseFitWarning,
    CrossCheckWarning,
    ModelWarning,
)


def _check_category(category) -> type:
    if not (isinstance(category, type) and issubclass(category, Warning)):
        raise TypeError(f"a warning category must be a Warning subclass, got {category!r}")
    return category


class WarningMessage(str):
    """A warning text that carries its category (``.category``); otherwise a plain ``str``.

    It compares, hashes, prints and is stored exactly like the text, so
    ``EvidenceEstimate.warnings`` keeps holding strings; the category only tells
    :func:`~pymc_evidence.estimators.logspace.emit_warnings` which warning to emit. Texts
    read back from a file are plain strings (emitted as :class:`EvidenceWarning`).

    Parameters
    ----------
    text : str
    category : type of Warning, default EvidenceWarning

    Examples
    --------
    >>> m = WarningMessage("chains disagree", ConvergenceWarning)
    >>> m == "chains disagree", m.category.__name__
    (True, 'ConvergenceWarning')
    """

    category: type

    def __new__(cls, text, category=EvidenceWarning):
        self = super().__new__(cls, text)
        self.category = _check_category(category)
        return self

    def __reduce__(self):
        return type(self), (str(self), self.category)


#: The package's directory: frames in files under it are the package's own.
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def warn_user(message, category=EvidenceWarning) -> None:
    """:func:`warnings.warn` pointed at the first frame outside this package: the user's line
    that called into it, however deep the call that warns. Every warning of the package goes
    through here; no call site counts stack levels. Python 3.12 and later skip the package's
    frames themselves (``skip_file_prefixes``, with ``stacklevel=2``); on 3.11 the frames
    are counted here.

    Examples
    --------
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_user("few effective draws", WeightWarning)
    >>> caught[0].category.__name__, caught[0].filename.startswith(_PACKAGE_DIR)
    ('WeightWarning', False)
    """
    if sys.version_info >= (3, 12):
        warnings.warn(message, category, stacklevel=2, skip_file_prefixes=(_PACKAGE_DIR,))
        return
    frame, level = sys._getframe(1), 2  # level 1 is this function, 2 its caller
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


def tagged(messages, category=EvidenceWarning) -> list[WarningMessage]:
    """``messages`` as :class:`WarningMessage`; plain strings get ``category``, tagged ones
    keep theirs.

    Examples
    --------
    >>> [m.category.__name__ for m in tagged(["a", WarningMessage("b", ModelWarning)],
    ...                                      WeightWarning)]
    ['WeightWarning', 'ModelWarning']
    """
    _check_category(category)
    out = []
    for message in messages:
        if not isinstance(message, str):
            raise TypeError(f"warning messages must be strings, got {message!r}")
        out.append(
            message if isinstance(message, WarningMessage) else WarningMessage(message, category)
        )
    return out


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
