"""ADVI's Adam steps in jitted blocks, where the model's density runs on JAX.

:func:`~pymc_evidence.basefit.advi.run_advi` takes thousands of small steps: each evaluates the
model at ``R x n_mc`` points (32 by default) and updates ``R`` Gaussians. In numpy every step
is a call of the compiled density and some twenty array operations, and on small models
their fixed costs are most of the fit (a bivariate normal with an ``LKJCholeskyCov``; measured
in :doc:`/performance`, "What a user meets: the first call on a new model"). Where the density
is a :class:`~pymc_evidence.runtime.jax_rows.JaxRows`, :func:`fused_block` runs up to
:data:`BLOCK` steps in one jitted ``jax.lax.fori_loop``: the same arithmetic (points drawn
by reparameterization, the ELBO's gradient, Adam, the skipped steps and the dropped fits, the
Polyak sums), with the standard normals drawn in numpy from the same generator in the same
order. Between blocks, :func:`~pymc_evidence.basefit.advi.run_advi` keeps what looks across
steps (the collapse reference, the plateau test that ends the constant phase, the progress
bar): blocks end where those act, so they see what they saw step by step.

This is hand-written, not optax: the fits are rows of one array, each with its own Adam step
count, skipped row by row, and the step's learning-rate schedule is ADVI's own.
"""

from __future__ import annotations

import numpy as np

__all__ = ["BLOCK", "fused_block"]

#: Steps of one jitted block (the collapse reference's window: blocks start where it is renewed).
BLOCK = 50
_LOG_2PI = float(np.log(2.0 * np.pi))


def _points(params, eps, d, fullrank, tril):
    """``mean + chol @ eps`` per fit, shape ``(R, n_mc, d)``."""
    import jax.numpy as jnp

    mean, scale = params[:, None, :d], jnp.exp(params[:, d : 2 * d])
    if not fullrank:
        return mean + eps * scale[:, None, :]
    chols = jnp.zeros((params.shape[0], d, d))
    chols = chols.at[:, jnp.arange(d), jnp.arange(d)].set(scale)
    chols = chols.at[:, tril[0], tril[1]].set(params[:, 2 * d :])
    return mean + eps @ jnp.swapaxes(chols, 1, 2)


def _elbo_grad(params, eps, logps, grads, d, fullrank, tril):
    """Noisy ELBO ``(R,)`` and its reparameterization gradient ``(R, n_params)``."""
    import jax.numpy as jnp

    n_mc = eps.shape[1]
    scale = jnp.exp(params[:, d : 2 * d])
    g_mean = grads.sum(axis=1) / n_mc
    if fullrank:
        cross = jnp.swapaxes(grads, 1, 2) @ eps / n_mc
        g_log = jnp.diagonal(cross, axis1=1, axis2=2) * scale + 1.0
        grad = jnp.concatenate([g_mean, g_log, cross[:, tril[0], tril[1]]], axis=1)
    else:
        grad = jnp.concatenate([g_mean, (grads * eps).sum(axis=1) * (scale / n_mc) + 1.0], axis=1)
    elbo = logps.sum(axis=1) / n_mc + params[:, d : 2 * d].sum(axis=1) + 0.5 * d * (1.0 + _LOG_2PI)
    return elbo, grad


def _make_block(batched, d, fullrank, lr, drop, b1=0.9, b2=0.999, tiny=1e-8):
    """The jitted block of steps for one model function, dimension and kind of fit."""
    import jax
    import jax.numpy as jnp

    tril = tuple(jnp.asarray(i) for i in np.tril_indices(d, -1))

    def block(carry, eps, n_valid, first, sched, reference, max_bad, *shared):
        decay_start, n_decay, tail_from = sched

        def step(i, c):
            params, m, v, t, n_bad, active, dead_at, tail_sum, n_tail, traces = c
            s = first + i
            x = _points(params, eps[i], d, fullrank, tril)
            logp, grad = batched(x.reshape(-1, d), *shared)
            logp, grad = logp.reshape(x.shape[:2]), grad.reshape(x.shape)
            ok = jnp.isfinite(logp.sum(axis=1) + grad.sum(axis=(1, 2)))
            ok = ok & ~(jnp.mean(logp, axis=1) < reference - drop) & active
            n_bad = n_bad + (active & ~ok)
            dead = active & ~ok & (n_bad > max_bad)
            dead_at, active = jnp.where(dead, s + 1, dead_at), active & ~dead
            elbo, g = _elbo_grad(params, eps[i], logp, grad, d, fullrank, tril)
            traces = traces.at[i].set(jnp.where(ok, elbo, jnp.nan))
            cos = 0.5 * (1 + jnp.cos(jnp.pi * (s - decay_start) / n_decay))
            rate = lr * jnp.where(s < decay_start, 1.0, 0.05 + 0.95 * cos)
            t1 = t + 1.0
            m1, v1 = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g
            update = (rate / (1 - b1**t1))[:, None] * m1
            p1 = params + update / (jnp.sqrt(v1 / (1 - b2**t1)[:, None]) + tiny)
            rows = ok[:, None]
            params, m, v = (jnp.where(rows, a, b) for a, b in ((p1, params), (m1, m), (v1, v)))
            tail = ok & (s >= tail_from)
            tail_sum = tail_sum + jnp.where(tail[:, None], params, 0.0)
            c = (params, m, v, jnp.where(ok, t1, t), n_bad, active, dead_at, tail_sum,
                 n_tail + tail, traces)  # fmt: skip
            return c

        traces = jnp.full(eps.shape[:2], jnp.nan)
        return jax.lax.fori_loop(0, n_valid, step, (*carry, traces))

    return jax.jit(block)


def fused_block(rows, d: int, fullrank: bool, lr: float, drop: float):
    """The jitted block of ADVI steps for the model function ``rows`` (a
    :class:`~pymc_evidence.runtime.jax_rows.JaxRows`), kept on it: one per dimension, kind of
    fit, learning rate and collapse drop, compiled (by ``jax.jit``) once per number of fits
    and Monte Carlo points.

    The block is called as ``block(carry, eps, n_valid, first, schedule, reference,
    max_bad, *shared values)`` with ``carry = (params, m, v, t, n_bad, active, dead_at,
    tail_sum, n_tail)`` and ``eps`` of shape ``(BLOCK, R, n_mc, d)``, of which the first
    ``n_valid`` steps run; it returns the carry and the noisy ELBO trace ``(BLOCK, R)``."""
    key = ("advi", d, bool(fullrank), float(lr), float(drop))
    if key not in rows.fused:
        rows.fused[key] = _make_block(rows.batched, d, bool(fullrank), float(lr), float(drop))
    return rows.fused[key]
