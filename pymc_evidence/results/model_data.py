"""A result in the user's words: the model's data groups, and a posterior without the
variables that only the transformed model has.

:func:`pymc_evidence.sample_evidence` works on a transformed model (the non-centred form of
:func:`~pymc_evidence.transforms.reparametrize`, the discrete variables summed out), whose
free variables include internal ones such as ``theta_z`` or ``y_unobserved_z``; the
variables the user wrote are deterministics there. :func:`as_written` drops the internal
variables from ``posterior`` and writes ``observed_data`` and ``constant_data`` as
:func:`pymc.sample` would, for every method (the particle methods run no ``pm.sample``).
"""

from __future__ import annotations

import pymc as pm
import xarray as xr
from pymc.backends.arviz import (
    coords_and_dims_for_inferencedata,
    dict_to_dataset,
    find_constants,
    find_observations,
)

from ..compat import IS_DATATREE

__all__ = ["as_written", "internal_names", "model_data_groups"]


def _dataset(data: dict, coords: dict, dims: dict) -> xr.Dataset:
    """``dict_to_dataset`` without sample dims, in the keywords of the running PyMC."""
    if IS_DATATREE:
        return dict_to_dataset(data, inference_library=pm, coords=coords, dims=dims, sample_dims=[])
    return dict_to_dataset(data, library=pm, coords=coords, dims=dims, default_dims=[])


def dims_of(model: pm.Model, name: str, shape: tuple) -> tuple:
    """The dims of a draw of ``name`` of ``shape`` (beyond chain and draw): the model's, where
    their number and sizes match the draw; else ``{name}_dim_i`` (bambi's intercept-only
    ``mu`` has the rows' dim but one element)."""
    dims = tuple(model.named_vars_to_dims.get(name, ()) or ())
    sizes = [len(model.coords[d]) if model.coords.get(d) is not None else n
             for d, n in zip(dims, shape, strict=False)]  # fmt: skip
    if len(dims) != len(shape) or sizes != list(shape):
        dims = tuple(f"{name}_dim_{i}" for i in range(len(shape)))
    return dims


def model_data_groups(model: pm.Model) -> dict[str, xr.Dataset]:
    """``observed_data`` and ``constant_data`` of ``model``, as :func:`pymc.sample` writes
    them (a group is left out when the model has nothing for it).

    Examples
    --------
    >>> import pymc as pm
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu", 0, 1)
    ...     _ = pm.Normal("y", mu, 1, observed=[0.3, -0.1])
    >>> groups = model_data_groups(model)
    >>> list(groups), groups["observed_data"]["y"].values.tolist()
    (['observed_data'], [0.3, -0.1])
    """
    coords, dims = coords_and_dims_for_inferencedata(model)
    out = {}
    observed = find_observations(model)
    if observed:
        out["observed_data"] = _dataset(observed, coords, dims)
    constants = find_constants(model)
    if constants:
        ds = _dataset(constants, coords, dims)
        for name, value in constants.items():  # scalars stay scalars, as PyMC keeps them
            if getattr(value, "ndim", 1) == 0 and f"{name}_dim_0" in ds.sizes:
                ds = ds.squeeze(f"{name}_dim_0", drop=True)
        out["constant_data"] = ds
    return out


def internal_names(model: pm.Model, source: pm.Model) -> list[str]:
    """Free variables of the transformed ``model`` that the ``source`` model does not name
    (``theta_z`` of a non-centred ``theta``, ...), in the model's order."""
    written = set(source.named_vars)
    return [rv.name for rv in model.free_RVs if rv.name not in written]


def _without(post: xr.Dataset, drop: list[str]) -> xr.Dataset:
    """``post`` without the variables ``drop`` and the dimensions only they used."""
    post = post.drop_vars(drop)
    used = {dim for var in post.data_vars.values() for dim in var.dims}
    orphans = [n for n in post.coords if post[n].dims and set(post[n].dims).isdisjoint(used)]
    return post.drop_vars(orphans)


def as_written(groups: dict, model: pm.Model, source: pm.Model) -> dict:
    """``groups`` (a new dict) with the internal variables of ``model`` dropped from
    ``posterior`` and ``source``'s ``observed_data``/``constant_data`` written in.

    Only ``posterior`` is cleaned: ``extended_posterior`` (tempering methods) and
    ``sample_stats`` describe the run as it was sampled, in the transformed coordinates.
    """
    out = dict(groups)
    if "posterior" in out:
        post = out["posterior"]
        drop = [name for name in internal_names(model, source) if name in post]
        if drop:
            out["posterior"] = _without(post, drop)
    out.update(model_data_groups(source))
    return out
