"""The record every integration of continuous latent variables hands back: the model
without them, and what their posterior draws need.

Each integration (:mod:`.gaussian_latent`, :mod:`.group_effects`, :mod:`.group_pair_effects`,
:mod:`.group_nested`, :mod:`.group_nested_quadrature`) subclasses :class:`IntegratedOut`
with its own draws; :func:`pymc_evidence.api.discrete.with_discrete_draws` evaluates the
tables at the posterior's draws of the remaining variables and calls :meth:`~IntegratedOut.draw`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["IntegratedOut"]


@dataclass(frozen=True)
class IntegratedOut:
    """A model with continuous latent variables integrated out, and how to draw them back.

    Attributes
    ----------
    model : pm.Model
        The copy, the latents fixed and a potential holding their integral.
    names : tuple of str
        The integrated variables' names.
    shapes : tuple of tuple
        Their shapes.
    moments : tuple of TensorVariable
        On ``model``'s value variables: the graphs each subclass's :meth:`draw` needs at a
        posterior draw (empty where every draw takes proposals instead).

    Examples
    --------
    >>> IntegratedOut(None, ("a",), ((3,),), ()).tables
    ()
    """

    model: object
    names: tuple
    shapes: tuple
    moments: tuple

    @property
    def tables(self) -> tuple:
        """The graphs :meth:`draw` needs at each posterior draw."""
        return self.moments

    def draw(self, tables: list, rng: np.random.Generator) -> dict:
        """Draws ``name -> (n, *shape)`` of the integrated variables, one per row of the
        tables (each subclass's own)."""
        raise NotImplementedError(type(self).__name__)
