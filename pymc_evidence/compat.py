"""The one place that knows which PyMC / ArviZ stack is running.

Two containers hold sampling results, depending on the installed stack:

* PyMC 5 / ArviZ 0.x: ``pm.sample`` returns an ``arviz.InferenceData``, a flat mapping of
  group name to :class:`xarray.Dataset`. Groups are added with ``add_groups`` (which refuses to
  overwrite) and replaced by attribute assignment.
* PyMC 6 / ArviZ 1.x: ``pm.sample`` returns an :class:`xarray.DataTree` whose children are the
  groups. ``arviz.InferenceData`` still exists there but only as a deprecated shim, so this
  module never touches it on that stack.

Every other module reads and writes groups through the functions below and never checks
types or versions itself. The functions dispatch on the type of the object they are given, so
a :class:`xarray.DataTree` is accepted on either stack; :data:`IS_DATATREE` only decides what
:func:`new_idata` and :func:`from_netcdf` build. Files are written and read with the
``h5netcdf`` engine on both stacks and share one layout (one netCDF group per group), so a file
written on one stack can be read on the other.
"""

from __future__ import annotations

import os
from importlib import metadata
from typing import Any

import xarray as xr

__all__ = [
    "IS_DATATREE",
    "from_netcdf",
    "get_group",
    "group_names",
    "linalg_op",
    "new_idata",
    "set_group",
    "to_netcdf",
]

_ENGINE = "h5netcdf"


def _pymc_major() -> int:
    try:
        return int(metadata.version("pymc").split(".")[0])
    except (metadata.PackageNotFoundError, ValueError):  # pragma: no cover - broken install
        return 6


IS_DATATREE: bool = _pymc_major() >= 6
"""True when ``pm.sample`` returns an :class:`xarray.DataTree` (PyMC 6 / ArviZ 1.x)."""


def linalg_op(name: str) -> type:
    """A linear-algebra ``Op`` class of PyTensor by name (``"Cholesky"``,
    ``"SolveTriangular"``): from ``pytensor.tensor.linalg`` where it is (PyTensor 3.3 and
    later deprecate ``slinalg``), else from ``pytensor.tensor.slinalg`` (PyMC 5's PyTensor).

    Examples
    --------
    >>> linalg_op("Cholesky").__name__
    'Cholesky'
    """
    try:
        from pytensor.tensor import linalg
    except ImportError:  # pragma: no cover - older PyTensor
        linalg = None
    if linalg is not None and hasattr(linalg, name):
        return getattr(linalg, name)
    from pytensor.tensor import slinalg

    return getattr(slinalg, name)


def _inference_data_type() -> type | None:
    """``arviz.InferenceData`` on the PyMC 5 stack, ``None`` on the DataTree stack."""
    if IS_DATATREE:
        return None
    from arviz import InferenceData

    return InferenceData


def _kind(idata: Any) -> str:
    if isinstance(idata, xr.DataTree):
        return "datatree"
    inference_data = _inference_data_type()
    if inference_data is not None and isinstance(idata, inference_data):
        return "inferencedata"
    expected = "xarray.DataTree" if IS_DATATREE else "arviz.InferenceData or xarray.DataTree"
    raise TypeError(f"Expected {expected}, got {type(idata).__name__}.")


def group_names(idata: Any) -> list[str]:
    """Names of the groups of a results container, in storage order.

    Parameters
    ----------
    idata : arviz.InferenceData or xarray.DataTree
        Results container.

    Returns
    -------
    list of str

    Examples
    --------
    >>> import xarray as xr
    >>> from pymc_evidence import compat
    >>> idata = compat.new_idata({"posterior": xr.Dataset({"x": ("draw", [0.1, 0.2])})})
    >>> compat.group_names(idata)
    ['posterior']
    """
    if _kind(idata) == "datatree":
        return [str(name) for name in idata.children]
    return list(idata.groups())


def get_group(idata: Any, name: str) -> xr.Dataset:
    """One group of a results container as an :class:`xarray.Dataset`.

    Parameters
    ----------
    idata : arviz.InferenceData or xarray.DataTree
        Results container.
    name : str
        Group name, e.g. ``"posterior"`` or ``"log_evidence"``.

    Returns
    -------
    xarray.Dataset

    Raises
    ------
    KeyError
        If the group does not exist; the message lists the groups that do.

    Examples
    --------
    >>> import xarray as xr
    >>> from pymc_evidence import compat
    >>> idata = compat.new_idata({"posterior": xr.Dataset({"x": ("draw", [0.1, 0.2])})})
    >>> float(compat.get_group(idata, "posterior")["x"].sum())
    0.30000000000000004
    """
    names = group_names(idata)
    if name not in names:
        raise KeyError(f"No group {name!r} in the results; available groups: {names}.")
    if isinstance(idata, xr.DataTree):
        return idata[name].to_dataset()
    return idata[name]


def _check_group_arguments(name: str, ds: xr.Dataset) -> None:
    if not isinstance(name, str) or not name or "/" in name:
        raise ValueError(f"Group name must be a non-empty string without '/', got {name!r}.")
    if not isinstance(ds, xr.Dataset):
        raise TypeError(f"Group {name!r} must be an xarray.Dataset, got {type(ds).__name__}.")


def set_group(idata: Any, name: str, ds: xr.Dataset) -> None:
    """Add a group to a results container, or replace it, in place.

    Parameters
    ----------
    idata : arviz.InferenceData or xarray.DataTree
        Results container, modified in place.
    name : str
        Group name (no ``/``).
    ds : xarray.Dataset
        Group contents.

    Examples
    --------
    >>> import xarray as xr
    >>> from pymc_evidence import compat
    >>> idata = compat.new_idata({"posterior": xr.Dataset({"x": ("draw", [0.1, 0.2])})})
    >>> compat.set_group(idata, "log_evidence", xr.Dataset({"log_marginal_likelihood": -1.0}))
    >>> compat.group_names(idata)
    ['posterior', 'log_evidence']
    """
    _check_group_arguments(name, ds)
    if _kind(idata) == "datatree":
        idata[name] = xr.DataTree(ds)
    elif name in idata.groups():
        setattr(idata, name, ds)  # how ArviZ itself replaces a group (InferenceData.map)
    else:
        idata.add_groups({name: ds}, warn_on_custom_groups=False)


def new_idata(groups: dict[str, xr.Dataset]) -> Any:
    """Build the results container of the running stack from datasets.

    Parameters
    ----------
    groups : dict of str to xarray.Dataset
        Group name to contents, in the order wanted.

    Returns
    -------
    arviz.InferenceData or xarray.DataTree
        ``xarray.DataTree`` when :data:`IS_DATATREE`, else ``arviz.InferenceData``.

    Examples
    --------
    >>> import xarray as xr
    >>> from pymc_evidence import compat
    >>> idata = compat.new_idata({"log_evidence": xr.Dataset({"log_marginal_likelihood": 0.0})})
    >>> compat.group_names(idata)
    ['log_evidence']
    """
    for name, ds in groups.items():
        _check_group_arguments(name, ds)
    if IS_DATATREE:
        return xr.DataTree.from_dict(dict(groups))
    return _inference_data_type()(warn_on_custom_groups=False, **groups)


def to_netcdf(idata: Any, path: str | os.PathLike) -> str:
    """Write a results container to a netCDF-4 file (``h5netcdf`` engine).

    Parameters
    ----------
    idata : arviz.InferenceData or xarray.DataTree
        Results container; every group becomes a netCDF group.
    path : str or path-like
        Destination file, overwritten if present.

    Returns
    -------
    str
        The path written.

    Examples
    --------
    >>> import os, tempfile
    >>> import xarray as xr
    >>> from pymc_evidence import compat
    >>> idata = compat.new_idata({"log_evidence": xr.Dataset({"log_marginal_likelihood": 0.0})})
    >>> path = os.path.join(tempfile.mkdtemp(), "run.nc")
    >>> compat.group_names(compat.from_netcdf(compat.to_netcdf(idata, path)))
    ['log_evidence']
    """
    path = os.fspath(path)
    if _kind(idata) == "datatree":
        idata.to_netcdf(path, mode="w", engine=_ENGINE)
    else:
        idata.to_netcdf(path, engine=_ENGINE)
    return path


def from_netcdf(path: str | os.PathLike) -> Any:
    """Read a results container written by :func:`to_netcdf` (or by ArviZ), fully loaded.

    The data are loaded into memory and the file is closed, so it may be overwritten or
    deleted afterwards.

    Parameters
    ----------
    path : str or path-like
        netCDF-4 file with one netCDF group per results group.

    Returns
    -------
    arviz.InferenceData or xarray.DataTree
        The container type of the running stack (see :func:`new_idata`).

    Examples
    --------
    See :func:`to_netcdf`.
    """
    path = os.fspath(path)
    if IS_DATATREE:
        with xr.open_datatree(path, engine=_ENGINE) as tree:
            return tree.load()
    import arviz as az

    with az.rc_context({"data.load": "eager"}):
        return az.from_netcdf(path, engine=_ENGINE)
