"""The estimate record and the warning tree: what every layer says about an estimate.

Two kinds of module need these types: the estimators, which make an
:class:`EvidenceEstimate` and tag its warnings, and the layers above them (the engines,
the methods, and :mod:`pymc_evidence.results`, which writes the record to the
``log_evidence`` group and reads it back). The schema must not depend on how an estimate
is computed, so the record cannot live among the estimators; and the estimators, the
lowest layer, cannot import anything above them. Hence this one small module below both:
pure Python and numpy, no estimator, no PyMC, no xarray. It holds the record
(:class:`EvidenceEstimate`), the warning categories (one tree under
:class:`EvidenceWarning`), :class:`WarningMessage` (a warning text that carries its
category) and the two functions that emit such texts (:func:`emit_warnings`) and add them
to a record (:func:`add_messages`). The old import paths
(``pymc_evidence.estimators.EvidenceEstimate``, ``pymc_evidence.estimators.diagnostics``'s
categories, ``pymc_evidence.estimators.logspace.emit_warnings``) re-export these names.

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
that :func:`emit_warnings` emits it under the right one.
"""

from __future__ import annotations

import os
import sys
import warnings
from dataclasses import dataclass, field, replace

import numpy as np

__all__ = [
    "WARNING_CATEGORIES",
    "BaseFitWarning",
    "ConvergenceWarning",
    "CrossCheckWarning",
    "EvidenceEstimate",
    "EvidenceWarning",
    "ModelWarning",
    "SamplingWarning",
    "WarningMessage",
    "WeightWarning",
    "add_messages",
    "emit_warnings",
    "tagged",
    "warn_user",
]


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
    :func:`emit_warnings` which warning to emit. Texts
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
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


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


def emit_warnings(messages, category=EvidenceWarning) -> tuple[WarningMessage, ...]:
    """Emit each message under its category, pointed at the user's line
    (:func:`warn_user`); return them.

    Parameters
    ----------
    messages : iterable of str
        A :class:`WarningMessage` is emitted under its own ``category``; a plain string
        under ``category``.
    category : type of Warning, default EvidenceWarning
        The category of plain strings.

    Returns
    -------
    tuple of WarningMessage
        The messages, each tagged with the category it was emitted under, ready for
        ``EvidenceEstimate.warnings`` (so that re-emitting them keeps the category).

    Examples
    --------
    >>> emit_warnings([])
    ()
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     out = emit_warnings(["few effective draws"], WeightWarning)
    >>> caught[0].category.__name__, out[0].category.__name__
    ('WeightWarning', 'WeightWarning')
    """
    messages = tuple(tagged(messages, category))
    for message in messages:
        warn_user(message, message.category)
    return messages


@dataclass(frozen=True)
class EvidenceEstimate:
    """A log marginal likelihood estimate with its uncertainty.

    Parameters
    ----------
    log_z : float
        Estimate of ``log Z = log p(y | model)``.
    se : float
        Standard error of ``log_z`` (Monte Carlo error, not posterior uncertainty).
    method : str
        Short name of the estimator, e.g. ``"ct"``.
    per_chain_log_z, per_chain_se : ndarray
        The estimate and its standard error from each chain (or independent run) alone.
    diagnostics : dict of str to float
        Scalar diagnostics (effective sample sizes, occupancies, ...).
    warnings : tuple of str
        Human-readable problems detected while estimating.

    Examples
    --------
    >>> est = EvidenceEstimate(log_z=-3.2, se=0.01, method="ct")
    >>> print(est)
    log Z = -3.200 ± 0.010 (ct)

    A cross-check (:func:`~pymc_evidence.estimators.pooling.cross_check`) prints each
    method's estimate after the pooled one:

    >>> both = EvidenceEstimate(-3.2, 0.01, "smc+bridge", np.array([-3.21, -3.2]),
    ...                         np.array([0.02, 0.012]))
    >>> print(both)
    log Z = -3.200 ± 0.010 (smc+bridge: smc -3.210 ± 0.020, bridge -3.200 ± 0.012)
    """

    log_z: float
    se: float
    method: str
    per_chain_log_z: np.ndarray = field(default_factory=lambda: np.empty(0))
    per_chain_se: np.ndarray = field(default_factory=lambda: np.empty(0))
    diagnostics: dict = field(default_factory=dict)
    warnings: tuple = ()

    @property
    def n_chains(self) -> int:
        """Number of chains or independent runs behind the estimate."""
        return int(np.size(self.per_chain_log_z))

    @property
    def per_method(self) -> dict[str, tuple[float, float]]:
        """A cross-check's estimates by method, ``{method: (log_z, se)}`` in the order run
        (empty for one method's estimate).

        >>> est = EvidenceEstimate(-3.0, 0.01, "smc+bridge", per_chain_log_z=[-3.0, -3.01],
        ...                        per_chain_se=[0.02, 0.01])
        >>> est.per_method
        {'smc': (-3.0, 0.02), 'bridge': (-3.01, 0.01)}
        """
        names = self.method.split("+")
        if len(names) < 2 or not len(names) == self.n_chains == np.size(self.per_chain_se):
            return {}
        pairs = zip(self.per_chain_log_z, self.per_chain_se, strict=True)
        return {n: (float(v), float(e)) for n, (v, e) in zip(names, pairs, strict=True)}

    @property
    def _unit(self) -> str:
        """What the per-chain entries are, for the printed estimate: ``"methods"`` (a
        cross-check, whose ``method`` joins its methods by ``+``), ``"runs"`` (independent
        runs, which the estimators of runs count in ``diagnostics["n_runs"]``) or
        ``"chains"``. Read from the record itself, not from a table of method names, so a
        record read back from a file prints the same."""
        if "+" in self.method:
            return "methods"
        return "runs" if "n_runs" in self.diagnostics else "chains"

    def __str__(self) -> str:
        text = f"log Z = {self.log_z:.3f} ± {_se_text(self.se)} ({self.method}"
        if self.per_method:
            parts = self.per_method.items()
            text += ": " + ", ".join(f"{n} {v:.3f} ± {_se_text(e)}" for n, (v, e) in parts)
        elif self.n_chains:
            text += f", {self.n_chains} {self._unit}"
        if np.isfinite(self.diagnostics.get("posterior_ess", np.nan)):
            text += f"; posterior ESS {self.diagnostics['posterior_ess']:.0f}"
        text += ")"
        for message in self.warnings:
            text += f"\n  warning: {message}"
        return text


def _se_text(se: float) -> str:
    """The se to three decimals, or to two significant digits below 0.0005 (so that a
    small se does not print as 0.000)."""
    return f"{se:.2g}" if 0 < se < 5e-4 else f"{se:.3f}"


def add_messages(est: EvidenceEstimate, messages, *, diagnostics: dict | None = None):
    """``est`` with new ``messages`` emitted (each under its category, see
    :func:`emit_warnings`) and appended, and ``diagnostics`` merged in. Messages the
    estimate already carries are not repeated.

    Examples
    --------
    >>> est = EvidenceEstimate(-1.0, 0.1, "demo", warnings=("old",))
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     new = add_messages(est, ["old", "new"], diagnostics={"ess": 10.0})
    >>> new.warnings, new.diagnostics
    (('old', 'new'), {'ess': 10.0})
    """
    new = emit_warnings([m for m in dict.fromkeys(messages) if m not in est.warnings])
    return replace(
        est,
        diagnostics={**est.diagnostics, **(diagnostics or {})},
        warnings=tuple(est.warnings) + tuple(new),
    )
