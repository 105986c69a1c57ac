"""The ``log_evidence`` group: one schema for every estimator.

Data variables of the group (an :class:`xarray.Dataset`), all ``float64``:

* ``log_marginal_likelihood``, ``log_marginal_likelihood_se`` -- dims ``()``: log Z and its SE.
* ``log_marginal_likelihood_chain``, ``log_marginal_likelihood_chain_se`` -- dims ``(chain,)``
  (or ``(run,)`` for independent runs), with an integer coordinate ``0 .. n-1`` (a
  cross-check's runs also a string coordinate ``method``, the one non-numeric variable).
* ``diag_<name>`` -- dims ``()``: one per scalar diagnostic. Data variables rather than
  attributes: floats (NaN included) survive netCDF exactly and stay visible to xarray tools.
* ``<name>`` from ``chain_values`` -- ``(chain,)``; from ``stage_values`` -- ``(stage,)`` or
  ``(chain, stage)`` (ladder, increments, ESS, ...); ``extra_dims`` as given; ragged
  inputs NaN-padded.

Attributes: ``method``, ``library_version``, ``created_at`` (ISO 8601, UTC) -- str;
``schema_version``, ``n_warnings`` -- int; ``warnings`` -- one str, the messages joined by
``"\\n"`` (newlines inside a message become spaces). h5netcdf does not round-trip lists of
strings (a one-element list reads back as a str, an empty one as a float array), hence one
string plus a count. Estimator settings passed as ``attrs`` sit next to these, as netCDF-safe
values: str, int, float (bool as 0/1), 1-D numeric arrays (length 1 reads back a scalar).
"""

from __future__ import annotations

import datetime
import importlib.metadata
from collections.abc import Mapping
from typing import Any

import numpy as np
import xarray as xr

from pymc_evidence import compat
from pymc_evidence.record import EvidenceEstimate

__all__ = [
    "CHAIN_DIMS",
    "GROUP",
    "dataset_to_estimate",
    "estimate_to_dataset",
    "log_evidence",
    "validate_log_evidence",
]

GROUP = "log_evidence"
SCHEMA_VERSION = 1
LOG_Z = "log_marginal_likelihood"
LOG_Z_SE = "log_marginal_likelihood_se"
CHAIN_LOG_Z = "log_marginal_likelihood_chain"
CHAIN_LOG_Z_SE = "log_marginal_likelihood_chain_se"
DIAG_PREFIX = "diag_"
CHAIN_DIMS = ("chain", "run")
_CORE_VARS = (LOG_Z, LOG_Z_SE, CHAIN_LOG_Z, CHAIN_LOG_Z_SE)
_STRING_ATTRS = ("method", "library_version", "created_at", "warnings")
_INT_ATTRS = ("n_warnings", "schema_version")
_RESERVED_ATTRS = _STRING_ATTRS + _INT_ATTRS
_NUMERIC_KINDS = "biuf"


def _library_version() -> str:
    """The installed version, from the metadata (this layer never imports the package)."""
    try:
        return importlib.metadata.version("pymc_evidence")
    except importlib.metadata.PackageNotFoundError:  # e.g. run from a source tree
        return "unknown"


def _numeric(value: Any, label: str) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype.kind not in _NUMERIC_KINDS:
        raise TypeError(f"{label} must be real numbers, got dtype {arr.dtype}.")
    return arr.astype(np.float64)


def _scalar(value: Any, label: str) -> float:
    if (arr := _numeric(value, label)).ndim:
        raise TypeError(f"{label} must be a scalar, got shape {arr.shape}.")
    return float(arr)


def _rectangular(value: Any, label: str) -> np.ndarray:
    """Float array from an array, or from a ragged list of 1-D arrays padded with NaN."""
    if isinstance(value, list | tuple) and value and all(np.ndim(v) >= 1 for v in value):
        rows = [_numeric(row, label) for row in value]
        if any(row.ndim != 1 for row in rows):
            raise ValueError(f"{label}: a list of arrays must hold 1-D arrays only.")
        out = np.full((len(rows), max(row.size for row in rows)), np.nan)
        for i, row in enumerate(rows):
            out[i, : row.size] = row
        return out
    return _numeric(value, label)


def _attr_value(key: str, value: Any) -> str | int | float | np.ndarray:
    """Convert one setting to a netCDF-safe attribute value or raise TypeError."""
    if not isinstance(key, str) or not key or key in _RESERVED_ATTRS:
        raise ValueError(f"Setting name {key!r} is not a non-empty string or is reserved.")
    if isinstance(value, str):
        return value
    if isinstance(value, bool | np.bool_ | int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return float(value)
    if isinstance(value, np.ndarray | list | tuple):
        try:
            arr = np.asarray(value) if len(value) else np.empty(0)
        except ValueError:  # ragged nesting
            arr = np.empty((0, 0))
        if arr.ndim == 1 and arr.dtype.kind in _NUMERIC_KINDS:
            return arr.astype(np.float64 if arr.dtype.kind == "f" else np.int64)
    raise TypeError(
        f"Setting {key!r}={value!r} ({type(value).__name__}) cannot be stored as a netCDF "
        "attribute; use str, int, float, bool or a 1-D numeric array (join lists of "
        "strings into one string)."
    )


def _check_name(name: Any, taken: set[str]) -> str:
    if not isinstance(name, str) or not name or "/" in name:
        raise ValueError(f"Variable names must be non-empty strings without '/', got {name!r}.")
    if name in taken or name.startswith(DIAG_PREFIX):
        raise ValueError(f"Variable name {name!r} is reserved or already used in {GROUP!r}.")
    taken.add(name)
    return name


def _per_chain(est: EvidenceEstimate) -> tuple[np.ndarray, np.ndarray]:
    log_z = _numeric(est.per_chain_log_z, "per_chain_log_z").ravel()
    se = _numeric(est.per_chain_se, "per_chain_se").ravel()
    se = np.full(log_z.size, np.nan) if se.size == 0 else se
    if se.shape != log_z.shape:
        raise ValueError(f"per_chain_se has {se.size} values but per_chain_log_z has {log_z.size}.")
    return log_z, se


def _encode_warnings(messages: tuple) -> str:
    if any(not isinstance(m, str) for m in messages):
        raise TypeError(f"Warnings must be strings, got {messages!r}.")
    return "\n".join(" ".join(m.splitlines()) if m else m for m in messages)


def _variables(est, chain_dim, chain_values, stage_values, stage_dim, extra_dims) -> dict:
    log_z, se = _per_chain(est)
    data = {
        LOG_Z: ((), _scalar(est.log_z, "log_z")),
        LOG_Z_SE: ((), _scalar(est.se, "se")),
        CHAIN_LOG_Z: ((chain_dim,), log_z),
        CHAIN_LOG_Z_SE: ((chain_dim,), se),
    }
    for name, value in dict(est.diagnostics).items():
        if not isinstance(name, str) or not name or "/" in name:
            raise ValueError(f"Diagnostic names must be strings without '/', got {name!r}.")
        data[DIAG_PREFIX + name] = ((), _scalar(value, f"diagnostics[{name!r}]"))
    specs = [(name, (chain_dim,), value) for name, value in (chain_values or {}).items()]
    specs += [(name, None, value) for name, value in (stage_values or {}).items()]
    for name, (dims, value) in (extra_dims or {}).items():
        specs.append((name, (dims,) if isinstance(dims, str) else tuple(dims), value))
    taken = set(_CORE_VARS)
    for name, dims, value in specs:
        _check_name(name, taken)
        arr = _rectangular(value, name)
        if dims is None:  # stage values: (stage,) or (chain, stage)
            dims = (stage_dim,) if arr.ndim == 1 else (chain_dim, stage_dim)
        if arr.ndim != len(dims):
            raise ValueError(f"{name!r}: {arr.ndim}-D values (shape {arr.shape}) for dims {dims}.")
        data[name] = (dims, arr)
    return data


def estimate_to_dataset(
    est: EvidenceEstimate,
    *,
    chain_values: dict[str, np.ndarray] | None = None,
    stage_values: dict[str, np.ndarray] | None = None,
    stage_dim: str = "stage",
    extra_dims: dict[str, tuple[str | tuple[str, ...], np.ndarray]] | None = None,
    attrs: dict | None = None,
    chain_dim: str = "chain",
) -> xr.Dataset:
    """Build the ``log_evidence`` group from an estimate record.

    Parameters
    ----------
    est : EvidenceEstimate
        The estimate.
    chain_values : dict of str to array, optional
        Extra per-chain values, each of length ``n_chains``; stored with dim ``chain_dim``.
    stage_values : dict of str to array, optional
        Path diagnostics: 1-D arrays get dim ``(stage_dim,)``; 2-D arrays, or lists of 1-D
        arrays of possibly different lengths (NaN-padded), get ``(chain_dim, stage_dim)``.
    stage_dim : str, default "stage"
        Name of the path dimension, e.g. ``"stage"`` or ``"level"``.
    extra_dims : dict of str to (dims, array), optional
        Any other variable, with its dim name (or tuple of names) as in ``xarray``.
    attrs : dict, optional
        Estimator settings; str, int, float, bool (stored as 0/1) or 1-D numeric arrays.
    chain_dim : {"chain", "run"}, default "chain"
        Name of the dimension of the per-chain (per-run) values.

    Returns
    -------
    xarray.Dataset
        The group, already checked by :func:`validate_log_evidence`.

    Raises
    ------
    TypeError
        For non-numeric values or settings that netCDF cannot store.
    ValueError
        For name clashes, wrong shapes or inconsistent dimension sizes.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_evidence.record import EvidenceEstimate
    >>> est = EvidenceEstimate(-3.2, 0.02, "ct", np.array([-3.21, -3.19]),
    ...                        np.array([0.03, 0.03]), {"ess": 812.0})
    >>> ds = estimate_to_dataset(est, stage_values={"beta": [[0.0, 0.5, 1.0], [0.0, 1.0]]},
    ...                          attrs={"draws": 1000, "adapt": True})
    >>> float(ds["log_marginal_likelihood"]), float(ds["diag_ess"]), ds["beta"].dims
    (-3.2, 812.0, ('chain', 'stage'))
    >>> ds["beta"].values[1]
    array([ 0.,  1., nan])
    """
    if not isinstance(est, EvidenceEstimate):
        raise TypeError(f"Expected an EvidenceEstimate, got {type(est).__name__}.")
    if chain_dim not in CHAIN_DIMS:
        raise ValueError(f"chain_dim must be one of {CHAIN_DIMS}, got {chain_dim!r}.")
    if stage_dim in CHAIN_DIMS or not isinstance(stage_dim, str) or not stage_dim:
        raise ValueError(f"stage_dim must be a new dimension name, got {stage_dim!r}.")
    data = _variables(est, chain_dim, chain_values, stage_values, stage_dim, extra_dims)
    settings = {key: _attr_value(key, value) for key, value in (attrs or {}).items()}
    try:
        ds = xr.Dataset(data)
    except ValueError as err:
        raise ValueError(f"Inconsistent dimension sizes in the {GROUP!r} group: {err}") from err
    ds = ds.assign_coords({chain_dim: np.arange(ds.sizes[chain_dim])})
    ds.attrs = {
        "method": str(est.method),
        "library_version": _library_version(),
        "created_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "schema_version": SCHEMA_VERSION,
        "warnings": _encode_warnings(tuple(est.warnings)),
        "n_warnings": len(est.warnings),
        **settings,
    }
    validate_log_evidence(ds)
    return ds


def _attr_problems(attrs: Mapping) -> list[str]:
    problems = []
    for key in _STRING_ATTRS:
        if not isinstance(attrs.get(key), str):
            problems.append(f"attribute {key!r} must be a string, got {attrs.get(key)!r}")
    for key in _INT_ATTRS:
        if not isinstance(attrs.get(key), int | np.integer):
            problems.append(f"attribute {key!r} must be an integer, got {attrs.get(key)!r}")
    if not problems:
        if not attrs["method"]:
            problems.append("attribute 'method' is empty")
        text, count = attrs["warnings"], int(attrs["n_warnings"])
        if (count == 0 and text) or (count and text.count("\n") + 1 != count):
            problems.append(f"attribute 'warnings' does not hold n_warnings={count} messages")
    for key, value in attrs.items():
        ok = isinstance(value, str | int | float | np.integer | np.floating) or (
            isinstance(value, np.ndarray) and value.ndim == 1 and value.dtype.kind in "iuf"
        )
        if not ok or isinstance(value, bool | np.bool_):
            problems.append(f"attribute {key!r}={value!r} is not netCDF-safe")
    return problems


def validate_log_evidence(ds: xr.Dataset) -> None:
    """Check a ``log_evidence`` group against the schema.

    Parameters
    ----------
    ds : xarray.Dataset
        The group to check.

    Raises
    ------
    TypeError
        If ``ds`` is not a Dataset.
    ValueError
        Listing every violation found: missing or mis-shaped core variables, non-numeric
        dtypes (but a coordinate's labels), non-scalar diagnostics, unsafe attributes.

    Examples
    --------
    >>> import xarray as xr
    >>> validate_log_evidence(xr.Dataset({"log_marginal_likelihood": 0.0}))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: Invalid 'log_evidence' group:
      - missing variable 'log_marginal_likelihood_se'
    ...
    """
    if not isinstance(ds, xr.Dataset):
        raise TypeError(f"Expected an xarray.Dataset, got {type(ds).__name__}.")
    problems = []
    for name in _CORE_VARS:
        expected = 0 if name in (LOG_Z, LOG_Z_SE) else 1
        if name not in ds.data_vars:
            problems.append(f"missing variable {name!r}")
        elif ds[name].ndim != expected or (expected and ds[name].dims[0] not in CHAIN_DIMS):
            problems.append(f"{name!r} has dims {ds[name].dims}; expected {expected}-D")
    if len({ds[name].dims for name in (CHAIN_LOG_Z, CHAIN_LOG_Z_SE) if name in ds}) > 1:
        problems.append(f"{CHAIN_LOG_Z!r} and {CHAIN_LOG_Z_SE!r} have different dims")
    for name, var in ds.variables.items():
        labels = name in ds.coords and var.dtype.kind in "UO" and var.ndim == 1  # methods
        if var.dtype.kind not in _NUMERIC_KINDS and not labels:
            problems.append(f"variable {name!r} has non-numeric dtype {var.dtype}")
        elif str(name).startswith(DIAG_PREFIX) and var.ndim != 0:
            problems.append(f"diagnostic {name!r} must be a scalar, has dims {var.dims}")
    problems += _attr_problems(ds.attrs)
    if problems:
        raise ValueError(f"Invalid {GROUP!r} group:\n  - " + "\n  - ".join(problems))


def dataset_to_estimate(ds: xr.Dataset) -> EvidenceEstimate:
    """Read an estimate record back from a ``log_evidence`` group.

    Parameters
    ----------
    ds : xarray.Dataset
        A group built by :func:`estimate_to_dataset` (possibly after a netCDF round trip).

    Returns
    -------
    EvidenceEstimate
        Settings and path arrays stay in ``ds``; missing per-chain standard errors come back
        as NaN.

    Examples
    --------
    >>> from pymc_evidence.record import EvidenceEstimate
    >>> est = EvidenceEstimate(-3.2, 0.02, "ct", diagnostics={"ess": 812.0}, warnings=("low ESS",))
    >>> print(dataset_to_estimate(estimate_to_dataset(est)))
    log Z = -3.200 ± 0.020 (ct)
      warning: low ESS
    """
    validate_log_evidence(ds)
    diagnostics = {
        str(name)[len(DIAG_PREFIX) :]: float(ds[name])
        for name in ds.data_vars
        if str(name).startswith(DIAG_PREFIX)
    }
    return EvidenceEstimate(
        log_z=float(ds[LOG_Z]),
        se=float(ds[LOG_Z_SE]),
        method=str(ds.attrs["method"]),
        per_chain_log_z=ds[CHAIN_LOG_Z].values.astype(np.float64),
        per_chain_se=ds[CHAIN_LOG_Z_SE].values.astype(np.float64),
        diagnostics=diagnostics,
        warnings=tuple(str(ds.attrs["warnings"]).split("\n")) if ds.attrs["n_warnings"] else (),
    )


def log_evidence(idata: Any) -> EvidenceEstimate:
    """The log marginal likelihood estimate stored in a results container.

    Parameters
    ----------
    idata : arviz.InferenceData, xarray.DataTree, xarray.Dataset or EvidenceEstimate
        Results holding a ``log_evidence`` group, the group itself, or an estimate
        (returned unchanged). :func:`pymc_evidence.log_evidence` reads raw traces and
        ``pm.sample_smc`` results too.

    Returns
    -------
    EvidenceEstimate

    Raises
    ------
    KeyError
        If there is no ``log_evidence`` group.

    Examples
    --------
    >>> idata = compat.new_idata({})  # compat, EvidenceEstimate: this module's imports
    >>> group = estimate_to_dataset(EvidenceEstimate(-1.5, 0.1, "ais"))
    >>> compat.set_group(idata, "log_evidence", group)
    >>> log_evidence(idata).log_z
    -1.5
    """
    if isinstance(idata, EvidenceEstimate):
        return idata
    if isinstance(idata, xr.Dataset):
        return dataset_to_estimate(idata)
    names = compat.group_names(idata)
    if GROUP not in names:
        raise KeyError(
            f"These results have no {GROUP!r} group (groups: {names}). Estimate the "
            "evidence first, e.g. `pme.sample_evidence(...)`; `pme.log_evidence` also reads "
            "raw tempering traces and pm.sample_smc results."
        )
    return dataset_to_estimate(compat.get_group(idata, GROUP))
