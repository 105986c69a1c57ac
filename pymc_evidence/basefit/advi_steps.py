"""ADVI's optimizer and learning-rate schedule (Adam on parameter rows; a constant rate, then a
cosine decay, with Polyak averaging of the last iterates), shared by
:func:`~pymc_evidence.basefit.advi.run_advi`'s numpy steps and its jitted blocks."""

from __future__ import annotations

import numpy as np

__all__ = ["Adam", "Schedule"]


class Adam:
    """Adam ascent on parameter rows, each row with its own step count."""

    def __init__(self, shape, lr, b1=0.9, b2=0.999, eps=1e-8):
        self.m, self.v, self.t = np.zeros(shape), np.zeros(shape), np.zeros(shape[0])
        self.lr, self.b1, self.b2, self.eps = lr, b1, b2, eps

    def ascend(self, params, grad, lr_scale, rows):
        """Update ``params[rows]`` in place with the gradient rows ``grad`` (one per row);
        ``rows`` is an index array, or ``slice(None)`` for all rows (faster)."""
        t = self.t[rows] + 1.0
        m = self.b1 * self.m[rows] + (1 - self.b1) * grad
        v = self.b2 * self.v[rows] + (1 - self.b2) * grad * grad
        self.t[rows], self.m[rows], self.v[rows] = t, m, v
        step = (self.lr * lr_scale / (1 - self.b1**t))[:, None] * m
        params[rows] += step / (np.sqrt(v / (1 - self.b2**t)[:, None]) + self.eps)


#: The shortest decay, as a fraction of ``n_steps`` (a 60-d mean-field fit whose decay
#: was as short as a 600-step constant phase came out visibly wider).
_MIN_DECAY = 0.25


class Schedule:
    """Learning-rate scale and Polyak window: a constant rate until ``decay_start`` (half
    the steps, or earlier with ``early_stop`` once the ELBO has plateaued, see
    :meth:`check`), then a cosine decay to 5% over as many steps as the constant phase
    took (between a quarter and half of the steps); the iterates of the last 40% of the
    decay are averaged.

    An easy model plateaus after a few hundred steps and needs no 2500-step decay to settle
    (the decay averages the Monte Carlo noise down): a one-parameter model now stops far
    sooner.
    """

    def __init__(self, n_steps: int, early_stop: bool):
        self.n_steps, self.early_stop = n_steps, early_stop
        self.decay_start = self.n_decay = n_steps / 2
        self.window = max(25, n_steps // 16)

    @property
    def end(self) -> int:
        """Number of steps run."""
        return int(np.ceil(self.decay_start + self.n_decay))

    @property
    def tail_from(self) -> int:
        """The first step whose iterate joins the Polyak average."""
        return int(self.end - 0.4 * self.n_decay)

    def in_tail(self, step: int) -> bool:
        """Whether the iterate after ``step`` joins the Polyak average."""
        return step >= self.tail_from

    def lr_scale(self, step: int) -> float:
        """Multiplier of the initial learning rate at ``step``."""
        if step < self.decay_start:
            return 1.0
        return 0.05 + 0.95 * 0.5 * (1 + np.cos(np.pi * (step - self.decay_start) / self.n_decay))

    def check(self, traces: np.ndarray, active: np.ndarray, step: int) -> None:
        """End the constant phase after ``step`` when no active fit's ELBO rises any more:
        the mean noisy ELBO of its last window exceeds that of the window before by less
        than two standard errors of the difference."""
        w, done = self.window, step + 1
        if not self.early_stop or done % w or done < 2 * w or done >= self.decay_start:
            return
        last, var_last = _mean_and_var(traces[active, done - w : done])
        prev, var_prev = _mean_and_var(traces[active, done - 2 * w : done - w])
        if last.size and np.all(last - prev < 2.0 * np.sqrt(var_last + var_prev)):
            self.decay_start = done
            self.n_decay = max(done, self.n_steps * _MIN_DECAY)


def _mean_and_var(x):
    """Row means of ``x`` over its finite entries, and their squared standard errors."""
    n = np.sum(np.isfinite(x), axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.nansum(x, axis=1) / n
        return mean, np.nansum((x - mean[:, None]) ** 2, axis=1) / n**2
