"""Whether a training had finished learning when it stopped: the plateau rule.

A comparison of under-trained runs compares how fast each subset learns, not what it
learns: on one H200 at batch 8192 with LARS, filtered lost to full by 8.1 pp after 20
epochs and won by 10.5 pp after 60, with filtered still gaining 1–2 pp an epoch at 20
(issue 47). So every training says whether it converged, and a verdict names no winner
while a compared run has not.

**The plateau rule.** Over the last ``WINDOW_SHARE`` of its epochs (at least
``MIN_WINDOW``), a training has converged when the least-squares trend of its test
accuracy gains at most ``MAX_GAIN_PP`` percentage points across the window, and the trend
of its training loss falls by at most ``MAX_LOSS_DROP`` of the loss at the window's start.
A trend, not the first and last epochs' difference, so that one noisy evaluation neither
hides nor invents a gain. A training with fewer than ``MIN_WINDOW + 1`` epochs is not
judged converged: there is no window to judge by.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

WINDOW_SHARE = 0.2
MIN_WINDOW = 3
MAX_GAIN_PP = 0.5
MAX_LOSS_DROP = 0.02
RULE = (f"plateau: over its last {WINDOW_SHARE:.0%} of epochs (at least {MIN_WINDOW}), "
        f"test accuracy's trend gains ≤ {MAX_GAIN_PP} pp and training loss's trend falls "
        f"≤ {MAX_LOSS_DROP:.0%}")


@dataclass(frozen=True)
class Convergence:
    """The plateau rule's reading of one training.

    Attributes
    ----------
    converged : bool
    window : epochs judged (the last ones); 0 when there were too few
    gain_pp : the test accuracy's trend across the window, percentage points
    loss_drop : the training loss's trend across the window, as a fraction of its start
    """

    converged: bool
    window: int
    gain_pp: float
    loss_drop: float

    def reason(self, who: str = "it") -> str:
        """Why not converged, in words ('' when converged)."""
        if self.converged:
            return ""
        if self.window == 0:
            return f"{who} trained too few epochs to judge (at least {MIN_WINDOW + 1})"
        parts = []
        if self.gain_pp > MAX_GAIN_PP:
            parts.append(f"still gained {self.gain_pp:.1f} pp")
        if self.loss_drop > MAX_LOSS_DROP:
            parts.append(f"its loss still fell {100 * self.loss_drop:.0f}%")
        return f"{who} {' and '.join(parts)} over its last {self.window} epochs"


def window_of(epochs: int) -> int:
    """The epochs the rule looks at for a training of ``epochs`` (0: too few)."""
    w = max(MIN_WINDOW, math.ceil(WINDOW_SHARE * epochs))
    return w if epochs > w else 0


def _trend(values: np.ndarray) -> float:
    """The least-squares line's change from the first to the last point."""
    x = np.arange(len(values), dtype=np.float64)
    slope = np.polyfit(x, values.astype(np.float64), 1)[0]
    return float(slope * (len(values) - 1))


def convergence(rows: list[dict]) -> Convergence:
    """The plateau rule (module docstring) over a training's per-epoch rows (its
    ``metrics.jsonl``: ``test_acc`` a fraction, ``loss``), in epoch order."""
    w = window_of(len(rows))
    if w == 0:
        return Convergence(False, 0, math.nan, math.nan)
    last = rows[-(w + 1):]  # the window's epochs and the one before: w steps of change
    acc = np.array([r["test_acc"] for r in last])
    loss = np.array([r["loss"] for r in last])
    gain = 100.0 * _trend(acc)
    start = float(loss[0])
    drop = -_trend(loss) / start if start > 0 else 0.0
    return Convergence(gain <= MAX_GAIN_PP and drop <= MAX_LOSS_DROP, w, round(gain, 3),
                       round(drop, 4))


def convergence_record(rows: list[dict]) -> dict:
    """``converged`` and ``convergence`` (window, gain_pp, loss_drop, rule) for a
    training's ``summary.json``, from its per-epoch rows."""
    c = convergence(rows)
    return {"converged": c.converged,
            "convergence": {"window": c.window, "gain_pp": _number(c.gain_pp),
                            "loss_drop": _number(c.loss_drop), "rule": RULE}}


def with_convergence(summary: dict, rows: list[dict]) -> dict:
    """``summary`` with :func:`convergence_record`'s keys, computed from ``rows`` when a
    training from before the rule lacks them."""
    return summary if "converged" in summary else {**summary, **convergence_record(rows)}


def _number(x: float) -> float | None:
    return None if math.isnan(x) else x
