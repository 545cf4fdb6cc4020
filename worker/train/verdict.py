"""The paper's comparison, read: filtered against full and random, over seeds.

For each batch size, every subset gets its mean test accuracy and standard deviation over
seeds; every subset gets its difference against full and against its random control
(``random`` for filtered and corrected, ``random@F`` for ``pruned@F``), with
the standard error of that difference, and a Welch t-test (scipy) decides whether the
difference is outside the seed-to-seed noise (p < 0.05). With one seed per subset there
is no spread to compare against, and the verdict says so. While a compared training had
not converged (worker/train/convergence.py, the plateau rule), the verdict names no
winner: it says which run was still learning, by how much, and what to run instead.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from worker.train.convergence import MIN_WINDOW, Convergence, window_of
from worker.train.subsets import parse_subset

ALPHA = 0.05


@dataclass(frozen=True)
class Difference:
    """``a − b`` in test accuracy (fractions), its standard error and Welch's p-value
    (``se``/``p`` are None with fewer than two seeds on either side)."""

    diff: float
    se: float | None
    p: float | None

    @property
    def clear(self) -> bool:
        """True when the difference is outside the noise (p < 0.05)."""
        return self.p is not None and self.p < ALPHA

    def text(self) -> str:
        spread = f" ± {100 * self.se:.2f}" if self.se is not None else ""
        return f"{100 * self.diff:+.2f}{spread} pp"


@dataclass(frozen=True)
class SubsetResult:
    """One subset at one batch size: accuracies over seeds and the comparisons."""

    subset: str
    batch_size: int
    images: int
    accs: tuple[float, ...]
    vs_full: Difference | None
    vs_random: Difference | None
    # Whether every seed's training converged (None: not recorded, an experiment from
    # before the rule), the reading of the seed still learning fastest, and the epochs.
    converged: bool | None = None
    lagging: Convergence | None = None
    epochs: int = 0
    steps: int = 0  # optimizer steps of one training (0: not recorded)

    def still_learning(self) -> str:
        """'filtered still gained 3.1 pp over its last 4 epochs' ('' when converged)."""
        return self.lagging.reason(self.subset) if self.lagging is not None else ""

    @property
    def mean(self) -> float:
        return statistics.mean(self.accs)

    @property
    def sd(self) -> float:
        return statistics.stdev(self.accs) if len(self.accs) > 1 else 0.0


def difference(a: list[float] | tuple[float, ...], b: list[float] | tuple[float, ...]
               ) -> Difference:
    """``mean(a) − mean(b)`` with the standard error of the difference and Welch's test."""
    diff = statistics.mean(a) - statistics.mean(b)
    if len(a) < 2 or len(b) < 2:
        return Difference(diff, None, None)
    se = math.sqrt(statistics.variance(a) / len(a) + statistics.variance(b) / len(b))
    if se == 0:  # identical accuracies on every seed: no spread to test against
        return Difference(diff, 0.0, 1.0 if diff == 0 else 0.0)
    from scipy.stats import ttest_ind

    return Difference(diff, se, float(ttest_ind(a, b, equal_var=False).pvalue))


def compare(rows: list[dict]) -> list[SubsetResult]:
    """Rows of an experiment's ``results.csv`` (subset, batch_size, final_test_acc,
    train_size) → one result per (batch size, subset), sorted by batch then subset."""
    groups: dict[tuple[int, str], list[dict]] = {}
    for r in rows:
        groups.setdefault((int(r["batch_size"]), r["subset"]), []).append(r)
    accs = {key: tuple(float(r["final_test_acc"]) for r in rs) for key, rs in groups.items()}

    def against(batch: int, subset: str, other: str | None) -> Difference | None:
        ref = accs.get((batch, other))
        return None if ref is None or other == subset else difference(accs[batch, subset], ref)

    return [SubsetResult(subset, batch, round(statistics.mean(int(r["train_size"]) for r in rs)),
                         accs[batch, subset], against(batch, subset, "full"),
                         against(batch, subset, control_of(subset)), *_convergence(rs),
                         max(int(_number(r.get("steps")) if r.get("steps") else 0) for r in rs))
            for (batch, subset), rs in sorted(groups.items())]


def control_of(subset: str) -> str | None:
    """The random subset ``subset`` is compared with: ``random@F`` for a ``pruned@F``
    (its size and class counts), ``random`` (filtered's) for the rest; None for a random
    subset, itself a control."""
    name = parse_subset(subset)
    if name.kind == "random":
        return None
    return f"random@{name.fraction:g}" if name.kind == "pruned" else "random"


def curated(subset: str) -> bool:
    """A subset the curation chose (filtered, corrected, pruned@F): the verdict judges
    these against full and their random control."""
    return parse_subset(subset).curated


def _flag(value: object) -> bool | None:
    """results.csv's ``converged`` (a bool, or its text) → bool, None when not recorded."""
    if isinstance(value, bool):
        return value
    return {"true": True, "false": False}.get(str(value or "").strip().lower())


def _number(value: object) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _convergence(rows: list[dict]) -> tuple[bool | None, Convergence | None, int]:
    """(every seed converged, the reading of the seed still learning fastest, epochs)."""
    flags = [_flag(r.get("converged")) for r in rows]
    epochs = max(int(r.get("epochs") or 0) for r in rows)
    if any(f is None for f in flags):
        return None, None, epochs
    readings = [Convergence(bool(f), window_of(int(r.get("epochs") or 0)),
                            _number(r.get("gain_pp")), _number(r.get("loss_drop")))
                for r, f in zip(rows, flags, strict=True)]
    lagging = [c for c in readings if not c.converged]
    if not lagging:
        return True, None, epochs
    worst = max(lagging, key=lambda c: -math.inf if math.isnan(c.gain_pp) else c.gain_pp)
    return False, worst, epochs


def verdict(results: list[SubsetResult], batch_size: int) -> str:
    """One line on what curation did at ``batch_size``: each curated subset (filtered,
    corrected, pruned@F) against full and its random control, whether each difference is inside the
    noise, and which subset to ship (:func:`recommend`)."""
    judged = [r for r in results if r.batch_size == batch_size and curated(r.subset)]
    if not judged:
        return (f"batch {batch_size}: no curated training (filtered, corrected, pruned@F) "
                "to judge")
    lagging = [r for r in results if r.batch_size == batch_size and r.converged is False]
    if lagging:
        # --epochs is full's (the largest subset's) under the steps budget, and every
        # subset's under the epochs budget: the fewest epochs at this batch is what was given.
        epochs = min(r.epochs for r in results if r.batch_size == batch_size)
        return (f"batch {batch_size}: not converged: "
                + "; ".join(r.still_learning() for r in lagging)
                + f"; no winner named: run with --epochs {max(2 * epochs, MIN_WINDOW + 1)}")
    parts = []
    for r in judged:
        for other, d in (("full", r.vs_full), (control_of(r.subset), r.vs_random)):
            if d is None:
                continue
            if d.p is None:
                parts.append(f"{r.subset} − {other} = {d.text()} (one seed: no spread to "
                             "judge it by; run 2 or more seeds)")
            elif d.clear:
                word = "better" if d.diff > 0 else "worse"
                parts.append(f"{r.subset} is {word} than {other} by {d.text()} "
                             f"(p = {d.p:.3f})")
            else:
                parts.append(f"{r.subset} − {other} = {d.text()}: inside the noise "
                             f"(p = {d.p:.2f})")
    ship = recommend(results, batch_size)
    return (f"batch {batch_size}: " + ("; ".join(parts) or "nothing to compare against")
            + (f"; ship: {ship}" if ship else ""))


def recommend(results: list[SubsetResult], batch_size: int) -> str | None:
    """The subset to ship at ``batch_size``: the curated subset with the best mean accuracy
    when it beats full clearly (Welch p < 0.05), else ``full``; None without a full
    training and a curated one with two or more seeds to compare, or while a training at
    ``batch_size`` had not converged."""
    judged = [r for r in results if r.batch_size == batch_size and curated(r.subset)
              and r.vs_full is not None and r.vs_full.p is not None]
    if not judged or any(r.converged is False for r in results if r.batch_size == batch_size):
        return None
    best = max(judged, key=lambda r: r.mean)
    if best.vs_full.clear and best.vs_full.diff > 0:
        return best.subset
    return "full (no curated subset is clearly better)"


def mean_without_leaks(rows: list[dict], subset: str, batch: int) -> float | None:
    """Mean final accuracy of ``subset`` at ``batch`` on the test split without the test
    images a train image nearly copies (results.csv's ``final_test_acc_without_leaks``;
    None for experiments run before it was measured)."""
    accs = [float(r["final_test_acc_without_leaks"]) for r in rows
            if r["subset"] == subset and int(r["batch_size"]) == batch
            and r.get("final_test_acc_without_leaks") not in (None, "")]
    return sum(accs) / len(accs) if accs else None
