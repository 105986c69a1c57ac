""":func:`~pymc_evidence.compare`'s and :func:`~pymc_evidence.compare_methods`' tables as
they print: every column, the log Z columns rounded to the precision of their standard
errors, and a sentence that says which model the data favour, by how much (or whether a
cross-check's methods agree).

A :class:`pandas.DataFrame` subclass, so that everything a user does with a data frame
works on it (selection, sorting, ``to_csv``); only its ``print`` and notebook display
change. A slice without the comparison's columns prints as a plain frame.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd

from .estimators.pooling import CROSS_CHECK_Z

__all__ = ["ComparisonTable", "decimals_of"]

#: The columns a table needs to print as a comparison of models or of one model's methods.
_KINDS = {
    "models": ("log_z", "se", "log_z_minus_best", "post_prob", "prior_prob"),
    "methods": ("log_z", "se", "log_z_minus_combined", "log_z_minus_combined_se"),
}

#: Columns printed to the precision of a standard error, and the se column that sets it.
_TIED = {"log_z": "se", "log_z_minus_best": "se", "log_z_minus_combined": "se"}

#: Names the columns had before they said their sign, and what replaced them.
_RENAMED = {
    "d_log_z": "-table['log_z_minus_best'] (best minus this model)",
    "d_log_z_se": "'log_z_minus_best_se'",
    "log_bf": "'log_z_minus_best' (this model minus the best: its log BF against the best)",
}


def _number(value: float, decimals: int = 3) -> str:
    """``decimals`` decimals; a positive value that would print as zero (an se) as
    ``<0.001`` (at three decimals). A negative one keeps its sign: ``-0.000``.

    >>> _number(0.0002), _number(0.0002, 4), _number(-0.0002), _number(0.0)
    ('<0.001', '0.0002', '-0.000', '0.000')
    """
    if not np.isfinite(value):
        return str(value)
    if 0 < value < 0.5 * 10.0**-decimals:
        return f"<{10.0**-decimals:.{decimals}f}"
    return f"{value:.{decimals}f}"


def decimals_of(se) -> int:
    """Decimals that show the digit a standard error makes uncertain, and one more (as
    ArviZ's ``round_to="auto"`` ties a table's rounding to its errors): of the smallest
    positive se, between 1 and 6; 3 where none is positive.

    >>> decimals_of([0.025, 0.3]), decimals_of([0.0004]), decimals_of([0.0])
    (3, 5, 3)
    """
    se = np.asarray(se, dtype=float)
    se = se[np.isfinite(se) & (se > 0)]
    if se.size == 0:
        return 3
    return int(np.clip(1 - np.floor(np.log10(se.min())), 1, 6))


class ComparisonTable(pd.DataFrame):
    """The models compared, best first (or a cross-check's methods, nearest the combined
    estimate first): a data frame that prints rounded, with a sentence.

    Examples
    --------
    >>> from pymc_evidence.estimators.record import EvidenceEstimate
    >>> from pymc_evidence import compare
    >>> table = compare({"a": EvidenceEstimate(-10.0, 0.02, "smc"),
    ...                  "b": EvidenceEstimate(-12.0, 0.03, "smc")})
    >>> print(table.summary())  # doctest: +NORMALIZE_WHITESPACE
    The data favour 'a' over 'b' by log BF 2.000 ± 0.036 (BF 7.39); posterior probability
    of 'a' 0.881 ± 0.004 under equal prior probabilities. log_z_minus_best is each model's
    log Bayes factor against the best.
    """

    @property
    def _constructor(self):
        return ComparisonTable

    def _shown(self) -> pd.DataFrame:
        """The frame with its numbers as printed."""
        shown = pd.DataFrame(self).copy()
        for column in shown.columns:
            values = shown[column]
            if column == "rank":
                shown[column] = ["" if pd.isna(v) else str(int(v)) for v in values]
            elif pd.api.types.is_float_dtype(values):
                tied = _TIED.get(column)
                places = decimals_of(self[tied]) if tied in self.columns else 3
                shown[column] = [_number(v, places) for v in values]
        return shown

    def _kind(self) -> str | None:
        """``"models"``, ``"methods"`` or ``None`` (a slice without a comparison's columns)."""
        for kind, needed in _KINDS.items():
            if set(needed) <= set(self.columns):
                return kind
        return None

    def summary(self) -> str:
        """One sentence: the best model, its log Bayes factor over the next one and its
        posterior probability; for a cross-check's methods, whether they agree."""
        kind = self._kind()
        if kind is None or len(self) == 0:
            return ""
        names = [str(name) for name in self.index]
        flagged = [n for n, w in zip(names, self.get("warning", [False] * len(self)), strict=True)
                   if w is True or w is np.True_]  # fmt: skip
        if kind == "methods":
            head = self._methods_head(names)
            if flagged:
                head += f" Flagged: {', '.join(map(repr, flagged))}."
            return head + " log_z_minus_combined is each method's log Z minus the combined one."
        head = self._models_head(names)
        if flagged:
            head += f" With warnings (see each result's): {', '.join(map(repr, flagged))}."
        return head + " log_z_minus_best is each model's log Bayes factor against the best."

    def _models_head(self, names: list[str]) -> str:
        best = self.iloc[0]
        if len(self) == 1:
            return f"One model, '{names[0]}': log Z {best.log_z:.3f} ± {best.se:.3f}."
        second = self.iloc[1]
        log_bf = best.log_z - second.log_z
        se = float(np.hypot(best.se, second.se))
        priors = self["prior_prob"].to_numpy(dtype=float)
        prior = "equal prior probabilities" if np.ptp(priors) < 1e-12 else "the given priors"
        return (
            f"The data favour '{names[0]}' over '{names[1]}' by log BF {log_bf:.3f} ± "
            f"{se:.3f} (BF {np.exp(log_bf):.3g}); posterior probability of '{names[0]}' "
            f"{best.post_prob:.3f} ± {best.get('post_prob_se', np.nan):.3f} under {prior}."
        )

    def _methods_head(self, names: list[str]) -> str:
        """The combined estimate (kept in ``attrs``) and the two methods furthest apart."""
        places = decimals_of(self["se"])
        combined = self.attrs.get("combined")
        head = ""
        if combined:
            head = (
                f"Combined ({combined['method']}): log Z {combined['log_z']:.{places}f} ± "
                f"{combined['se']:.{places}f}. "
            )
            if combined.get("n_warnings"):
                head += f"It carries {combined['n_warnings']} warning(s) (print the result). "
        log_z, se = self["log_z"].to_numpy(float), self["se"].to_numpy(float)
        if len(self) < 2:
            return head + f"One method, '{names[0]}'."
        with np.errstate(invalid="ignore", divide="ignore"):
            z = np.abs(log_z[:, None] - log_z) / np.hypot(se[:, None], se)
        z = np.nan_to_num(z, nan=-1.0)
        np.fill_diagonal(z, -1.0)
        i, j = sorted(int(k) for k in np.unravel_index(np.argmax(z), z.shape))
        which = "" if len(self) == 2 else "The furthest apart, "
        verdict = (
            "within their errors"
            if z[i, j] <= CROSS_CHECK_Z
            else "beyond their errors: at least one missed part of the posterior or has an "
            "optimistic se"
        )
        return head + (
            f"{which}'{names[i]}' and '{names[j]}' differ by {log_z[i] - log_z[j]:.{places}f}"
            f" ± {np.hypot(se[i], se[j]):.{places}f} ({z[i, j]:.1f} combined se), {verdict}."
        )

    def __getitem__(self, key):
        """As a data frame's; a column's name from before the rename says what replaced it."""
        try:
            return super().__getitem__(key)
        except KeyError:
            keys = [key] if isinstance(key, str) else key if isinstance(key, list) else []
            old = [k for k in keys if isinstance(k, str) and k in _RENAMED]
            if not old or set(old) & set(self.columns):
                raise
            hints = "; ".join(f"{k!r} is now {_RENAMED[k]}" for k in old)
            raise KeyError(f"renamed columns, each saying its sign: {hints}") from None

    def __repr__(self) -> str:
        if self._kind() is None:
            return pd.DataFrame(self).__repr__()
        return f"{self._shown().to_string()}\n{textwrap.fill(self.summary(), 88)}"

    def _repr_html_(self) -> str:
        if self._kind() is None:
            return pd.DataFrame(self)._repr_html_()
        return f"{self._shown().to_html()}<p>{self.summary()}</p>"
