"""Whether a training had finished learning when it stopped: the plateau rule.

A comparison of under-trained runs compares how fast each subset learns, not what it
learns: on one H200 at batch 8192 with LARS, filtered lost to full by 8.1 pp after 20
epochs and won by 10.5 pp after 60, with filtered still gaining 1–2 pp an epoch at 20.
So every training says whether it converged, and a verdict names no winner while a
compared run has not.

**The plateau rule.** Over its last ``WINDOW_SHARE`` of epochs (at least ``MIN_WINDOW``),
a training has converged when its test accuracy's trend gains at most ``MAX_GAIN_PP``
percentage points across the window, or at most what its test set can tell apart (one
binomial standard error of the accuracy, ``100·√(p(1−p)/n)`` pp for ``n`` test images,
where that is larger: 0.94 pp on the digits demo's 359-image hold-out, 0.43 pp on
CIFAR-10's 10,000 test images at 75%). The trend is Theil–Sen's (the median of the slopes
between every two epochs of the window), so that one lucky or unlucky evaluation neither
hides nor invents a gain. A training of ``MIN_WINDOW`` epochs or fewer is not judged
converged: there is no window to judge by.

The training loss's trend over the window is recorded beside it but does not decide:
cosine decay to zero lowers the training loss over the last epochs of every run (the
digits demo's default training: −6.5% over its last 3 epochs, while its test accuracy
moved 0.3 pp), so the loss says where the schedule is, not whether learning has stopped.
docs/training.md has the measurements the numbers were chosen by.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

WINDOW_SHARE = 0.2
MIN_WINDOW = 3
MAX_GAIN_PP = 0.5
RULE = (f"plateau: over its last {WINDOW_SHARE:.0%} of epochs (at least {MIN_WINDOW}), "
        f"test accuracy's trend (Theil–Sen) gains ≤ {MAX_GAIN_PP} pp, or ≤ one standard "
        "error of the accuracy on its test set where that is larger")


@dataclass(frozen=True)
class Convergence:
    """The plateau rule's reading of one training.

    Attributes
    ----------
    converged : bool
    window : epochs judged (the last ones); 0 when there were too few
    gain_pp : the test accuracy's trend across the window, percentage points
    cut_pp : the largest gain still called converged: ``MAX_GAIN_PP`` or the test set's
        standard error, the larger
    loss_drop : the training loss's trend across the window, as a fraction of its start
        (recorded, not judged: module docstring)
    """

    converged: bool
    window: int
    gain_pp: float
    loss_drop: float
    cut_pp: float = MAX_GAIN_PP  # the gain it was judged by (module docstring)

    def reason(self, who: str = "it") -> str:
        """Why not converged, in words ('' when converged)."""
        if self.converged:
            return ""
        if self.window == 0:
            return f"{who} trained too few epochs to judge (at least {MIN_WINDOW + 1})"
        return f"{who} still gained {self.gain_pp:.1f} pp over its last {self.window} epochs"


def window_of(epochs: int) -> int:
    """The epochs the rule looks at for a training of ``epochs`` (0: too few)."""
    w = max(MIN_WINDOW, math.ceil(WINDOW_SHARE * epochs))
    return w if epochs > w else 0


def _trend(values: np.ndarray) -> float:
    """Theil–Sen's line's change from the first to the last point: the median slope
    between every two points, times the points' span."""
    i, j = np.triu_indices(len(values), 1)
    slopes = (values[j] - values[i]) / (j - i)
    return float(np.median(slopes) * (len(values) - 1))


def convergence(rows: list[dict], test_size: int | None = None) -> Convergence:
    """The plateau rule (module docstring) over a training's per-epoch rows (its
    ``metrics.jsonl``: ``test_acc`` a fraction, ``loss``), in epoch order; ``test_size``:
    its test images (None: ``MAX_GAIN_PP`` alone)."""
    w = window_of(len(rows))
    if w == 0:
        return Convergence(False, 0, math.nan, math.nan)
    last = rows[-w:]
    acc = np.array([r["test_acc"] for r in last], np.float64)
    loss = np.array([r["loss"] for r in last], np.float64)
    gain = 100.0 * _trend(acc)
    drop = -_trend(loss) / loss[0] if loss[0] > 0 else 0.0
    p = float(np.clip(acc.mean(), 0.0, 1.0))
    cut = MAX_GAIN_PP if not test_size else max(MAX_GAIN_PP,
                                                100.0 * math.sqrt(p * (1 - p) / test_size))
    return Convergence(gain <= cut, w, round(gain, 3), round(float(drop), 4), round(cut, 3))


def convergence_record(rows: list[dict], test_size: int | None) -> dict:
    """``converged`` and ``convergence`` (window, gain_pp, cut_pp, loss_drop, rule) for a
    training's ``summary.json``, from its per-epoch rows and its test images."""
    c = convergence(rows, test_size)
    return {"converged": c.converged,
            "convergence": {"window": c.window, "gain_pp": _number(c.gain_pp),
                            "cut_pp": c.cut_pp, "loss_drop": _number(c.loss_drop),
                            "rule": RULE}}


def with_convergence(summary: dict, rows: list[dict]) -> dict:
    """``summary`` with :func:`convergence_record`'s keys computed now from ``rows``: a
    training from before the rule, or from before a change of it, is read by today's."""
    return {**summary, **convergence_record(rows, summary.get("test_size"))}


def _number(x: float) -> float | None:
    return None if math.isnan(x) else x
