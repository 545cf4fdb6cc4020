"""The paper's comparison, read: filtered against full and random, over seeds.

For each batch size, every subset gets its mean test accuracy and standard deviation over
seeds; every subset gets its difference against full and against its random control
(``random`` for filtered and corrected, ``random@F`` for ``pruned@F``), with
the standard error of that difference, and a Welch t-test (scipy) decides whether the
difference is outside the seed-to-seed noise (p < 0.05). With one seed per subset there
is no spread to compare against, and the verdict says so.

A training that had not converged (worker/train/convergence.py, the plateau rule) withholds
the winner only where longer training could overturn it (:func:`decide`): a subset still
learning that is behind the winner by less than it would gain at its current rate over
as many epochs again (the run the verdict asks for next). A winner that is itself still
learning is named, with the caveat: its lead over converged rivals can only grow.
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
                         max(_whole(r.get("steps")) for r in rs))
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


def _whole(value: object) -> int:
    """A count from results.csv (``steps``); 0 when absent or not a finite number."""
    x = _number(value)
    return int(x) if math.isfinite(x) else 0


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
    # A seed the rule could not judge (too few epochs, no gain recorded) could gain
    # anything: it is the one still learning fastest.
    worst = max(lagging, key=lambda c: math.inf if c.window == 0 or math.isnan(c.gain_pp)
                else c.gain_pp)
    return False, worst, epochs


@dataclass(frozen=True)
class Decision:
    """What to ship at one batch size: ``ship`` (None: no subset named), the caveat that goes
    with it, and, when withheld by a training still learning, why."""

    ship: str | None
    caveat: str = ""
    withheld: str = ""  # a training still learning could overturn the winner
    reason: str = ""  # why there is nothing to name, with or without learning


def reach_pp(r: SubsetResult) -> float:
    """How much more ``r`` could gain, in pp: its last window's gain at the same rate over
    as many epochs again as it trained (the ``--epochs`` the verdict asks for next). A
    concave learning curve gains less, so this errs towards withholding. ``inf`` when the
    rule could not judge the run (too few epochs)."""
    c = r.lagging
    if c is None:
        return 0.0
    if c.window == 0 or math.isnan(c.gain_pp):
        return math.inf
    return max(c.gain_pp, 0.0) * max(r.epochs, c.window) / c.window


def decide(results: list[SubsetResult], batch_size: int) -> Decision:
    """The subset to ship at ``batch_size`` and how sure that is.

    The winner is the best mean among the curated subsets that beat full clearly (Welch
    p < 0.05, two or more seeds), else full. Trainings still learning change
    that only where they could: a rival on the other side of the choice (full against a
    curated winner, a curated subset against full) still learning and behind the winner by
    no more than :func:`reach_pp` withholds it. A winner still learning is named with a
    caveat, for its lead can only grow; random controls are judged against, never shipped,
    and do not withhold.
    """
    here = [r for r in results if r.batch_size == batch_size]
    judged = [r for r in here if curated(r.subset)
              and r.vs_full is not None and r.vs_full.p is not None]
    full = next((r for r in here if r.subset == "full"), None)
    if full is None:
        return Decision(None, reason="no full training to compare with")
    if not judged:
        return Decision(None, reason="one seed is no spread to judge a difference by "
                                     "(run 2 or more)")
    # Among the curated subsets that beat full clearly, the best mean; without a test
    # between them. None beating it clearly: full.
    better = [r for r in judged if r.vs_full.clear and r.vs_full.diff > 0]
    winner = max(better, key=lambda r: r.mean) if better else full
    # What could overturn the choice is the other side of it: full, when a curated subset
    # wins; a curated subset, when full does.
    rivals = [full] if better else [r for r in here if curated(r.subset)]
    threats = [r for r in rivals if r.converged is False
               and 100 * (winner.mean - r.mean) <= reach_pp(r)]
    if threats:
        return Decision(None, withheld="; ".join(
            f"{r.subset} could still overtake {winner.subset} "
            f"({100 * (winner.mean - r.mean):.1f} pp behind)" for r in threats))
    caveat = (f"{winner.subset} was still learning: the gap can only grow"
              if winner.converged is False else "")
    name = winner.subset if better else "full (no curated subset is clearly better)"
    return Decision(name, caveat)


def recommend(results: list[SubsetResult], batch_size: int) -> str | None:
    """The subset to ship at ``batch_size`` (:func:`decide`), or None where none can be
    named: no full training and curated one with two or more seeds to compare, or a
    training still learning that could overturn the winner."""
    return decide(results, batch_size).ship


def verdict(results: list[SubsetResult], batch_size: int) -> str:
    """One line on what curation did at ``batch_size``: each curated subset (filtered,
    corrected, pruned@F) against full and its random control, whether each difference is
    inside the noise, which trainings were still learning, and which subset to ship
    (:func:`decide`)."""
    judged = [r for r in results if r.batch_size == batch_size and curated(r.subset)]
    if not judged:
        return (f"batch {batch_size}: no curated training (filtered, corrected, pruned@F) "
                "to judge")
    decision = decide(results, batch_size)
    lagging = [r for r in results if r.batch_size == batch_size and r.converged is False]
    learning = "; ".join(r.still_learning() for r in lagging)
    if decision.withheld or (decision.ship is None and lagging):
        # --epochs is full's (the largest subset's) under the steps budget, and every
        # subset's under the epochs budget: the fewest epochs at this batch is what was given.
        epochs = min(r.epochs for r in results if r.batch_size == batch_size)
        return (f"batch {batch_size}: not converged: {learning}; no winner named: "
                f"{decision.withheld or decision.reason}: "
                f"run with --epochs {max(2 * epochs, MIN_WINDOW + 1)}")
    parts = [_comparison(r, other, d) for r in judged
             for other, d in (("full", r.vs_full), (control_of(r.subset), r.vs_random))
             if d is not None]
    line = f"batch {batch_size}: " + ("; ".join(parts) or "nothing to compare against")
    if lagging:
        line += f"; still learning: {learning}"
    if decision.ship:
        line += f"; ship: {decision.ship}" + (f" ({decision.caveat})" if decision.caveat else "")
    return line


def _comparison(r: SubsetResult, other: str | None, d: Difference) -> str:
    """``r`` against ``other`` in words: better or worse (p), inside the noise, or one seed."""
    if d.p is None:
        return (f"{r.subset} − {other} = {d.text()} (one seed: no spread to judge it by; run "
                "2 or more seeds)")
    if d.clear:
        return f"{r.subset} is {'better' if d.diff > 0 else 'worse'} than {other} by " \
               f"{d.text()} (p = {d.p:.3f})"
    return f"{r.subset} − {other} = {d.text()}: inside the noise (p = {d.p:.2f})"


def mean_without_leaks(rows: list[dict], subset: str, batch: int) -> float | None:
    """Mean final accuracy of ``subset`` at ``batch`` on the test split without the test
    images a train image nearly copies (results.csv's ``final_test_acc_without_leaks``;
    None for experiments run before it was measured)."""
    accs = [float(r["final_test_acc_without_leaks"]) for r in rows
            if r["subset"] == subset and int(r["batch_size"]) == batch
            and r.get("final_test_acc_without_leaks") not in (None, "")]
    return sum(accs) / len(accs) if accs else None
