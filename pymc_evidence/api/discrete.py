"""Draws of the summed-out discrete variables, put back into a result's posterior.

:func:`~pymc_evidence.transforms.marginal.sum_out_discrete` leaves a continuous model; the
discrete variables' posterior draws are drawn here from their conditional ``p(z | θ, y)``
at each posterior draw of ``θ`` (exact: the conditional is the normalized vector of the
joint values' weights, or, where they were summed one at a time, each variable's in turn
given those drawn before), seeded by the problem's ``"discrete"`` stream. Deterministics of
the source model that depend on them are computed again from the completed draws.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import xarray as xr

from ..compat import get_group, group_names, set_group
from ..results.model_data import dims_of
from ..runtime._compile import no_jit_mode, without_tracebacks
from ..runtime.runtime import model_space
from ..runtime.space import in_chunks
from ..transforms.discrete_values import stale_deterministics

__all__ = ["with_discrete_draws"]


def with_discrete_draws(result, problem):
    """``result`` with the summed-out discrete variables' draws in its ``posterior`` group
    (a result without one, or a problem with nothing summed out, is returned as it is)."""
    summed = problem.summed
    if summed is None or "posterior" not in group_names(result):
        return result
    post = get_group(result, "posterior")
    space = model_space(summed.model)
    values = {rv.name: post[rv.name].values for rv in summed.model.free_RVs}
    x = np.asarray(space.unconstrain(values))
    lead = x.shape[:-1]
    draws = _draws(summed, space, x.reshape(-1, x.shape[-1]), problem.rng("discrete"))
    source = problem.source
    data = {}
    for name, value in draws.items():
        value = value.reshape(lead + value.shape[1:])
        data[name] = (("chain", "draw") + dims_of(source, name, value.shape[2:]), value)
    post = post.assign(data)
    post = _recomputed_deterministics(post, source, summed.names)
    set_group(result, "posterior", post)
    return result


def _draws(summed, space, x: np.ndarray, rng) -> dict:
    """The integrated variables' draws at the rows ``x``: the tables by one call without
    JIT, or, for an integration whose tables are ``batched`` (group effects: data-sized
    tables of every group), by the batched density's backend, ``DRAW_CHUNK`` rows at a
    time, so that the tables of only so many draws are held at once; an integration with
    a ``proposal_size`` takes that many standard normals a draw, drawn here."""
    chunk = getattr(summed, "draw_chunk", None)
    if chunk is None:
        with without_tracebacks():  # see transforms.elimination: they can double per rewrite
            tables = space.rows_function("summed tables", lambda: list(summed.tables))
            rows = tables(x)
        return summed.draw([np.asarray(r) for r in rows], rng)
    extra = getattr(summed, "proposal_size", 0)  # standard normals each draw takes
    graphs = summed.tables_of if extra else (lambda: list(summed.tables))
    tables = space.batched_rows_function("summed tables", graphs, extra)
    parts = []
    for i in range(0, len(x), chunk):
        rows = x[i : i + chunk]
        if extra:
            rows = np.concatenate([rows, rng.standard_normal((len(rows), extra))], axis=1)
        parts.append(summed.draw([np.asarray(r) for r in tables(rows)], rng))
    return {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}


def _recomputed_deterministics(post: xr.Dataset, source: pm.Model, names) -> xr.Dataset:
    """``post`` with the source's deterministics that depend on ``names`` computed again
    (the continuous model computed them at the summed-out variables' fixed values)."""
    stale = stale_deterministics(source, names)
    if not stale:
        return post
    try:  # every draw in one vectorized call, no JIT
        return post.assign(_vectorized(post, source, stale))
    except Exception:  # e.g. a discrete free variable, which the raveled space refuses
        pass
    inputs = post[[rv.name for rv in source.free_RVs]]
    with pytensor.config.change_flags(cxx=""):  # no JIT: numba was slow to compile a GP's f
        fresh = pm.compute_deterministics(
            inputs, var_names=stale, model=source, progressbar=False, merge_dataset=False,
            compile_kwargs={"mode": no_jit_mode()},
        )  # fmt: skip
    return post.assign({name: fresh[name] for name in stale})


def _vectorized(post: xr.Dataset, source: pm.Model, stale: list) -> dict:
    """The deterministics ``stale`` of ``source`` at every draw of ``post``, by one call
    vectorized over the draws (PyMC's ``compute_deterministics`` calls once per draw,
    slow for a GP's ``f`` over thousands of draws), in chunks of draws
    (:func:`~pymc_evidence.runtime.space.in_chunks`)."""
    space = model_space(source)
    x = np.asarray(space.unconstrain({rv.name: post[rv.name].values for rv in source.free_RVs}))
    fn = space.rows_function(
        ("deterministics", *stale),
        lambda: source.replace_rvs_by_values([source[name] for name in stale]),
    )
    rows = in_chunks(fn, x.reshape(-1, x.shape[-1]))
    out = {}
    for name, value in zip(stale, rows, strict=True):
        value = np.asarray(value).reshape(x.shape[:-1] + np.shape(value)[1:])
        dims = ("chain", "draw") + dims_of(source, name, value.shape[2:])
        coords = {d: np.asarray(source.coords[d]) for d in dims if source.coords.get(d) is not None}
        out[name] = xr.DataArray(value, dims=dims, coords=coords)
    return out
