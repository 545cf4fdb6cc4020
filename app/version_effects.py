"""What each version did: two experiments whose curated subsets trained on different
versions, their accuracy difference beside the difference of the versions, for the
Results page ("v3 dropped 412 more and relabelled 88: filtered +0.90 ± 0.30 pp at 3
seeds, p = 0.040").

An experiment's version is its ``results.csv``'s ``version`` column
(worker/train/experiment.py): the version its curated subsets trained on, or the version
equal to the live curation they trained on; empty where none was. Each experiment on a
version is set beside the latest earlier one on another version; the accuracy difference
is Welch's test over their seeds (worker/train/verdict.py ``difference``) for each curated
subset and batch size both trained, and the versions' difference is ``curator diff``'s
(worker/pipeline/curation/version_diff.py).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from cachetools import LRUCache, cached

from worker.pipeline.curation.version_diff import CHANGES, diff_versions
from worker.pipeline.errors import InputError
from worker.pipeline.storage.rundir import RunDir
from worker.train.verdict import compare, curated, difference


@dataclass(frozen=True)
class Experiment:
    """One experiment folder's name, its version ("" when none) and its results rows."""

    name: str
    version: str
    rows: list[dict]


def experiment_version(rows: list[dict]) -> str:
    """The version an experiment's curated subsets trained on ("" when none)."""
    return next((r["version"] for r in rows if curated(r["subset"]) and r.get("version")), "")


def read_experiments(folders: list[Path], read) -> list[Experiment]:  # noqa: ANN001
    """The experiments of ``folders`` (oldest first) with their versions; ``read``: a
    folder's results rows (worker/train/experiment.py ``read_results``)."""
    out = []
    for folder in folders:
        rows = read(folder)
        out.append(Experiment(folder.name, experiment_version(rows), rows))
    return out


def changes_text(rows: list[dict]) -> str:
    """A versions' diff in words: "dropped 412 more (duplicate 400, label 12), kept back
    3, relabelled 88", or "no sample changed"."""
    if not rows:
        return "no sample changed"
    parts = []
    for change in CHANGES:
        mine = [r for r in rows if r["change"] == change]
        if not mine:
            continue
        kinds = Counter(r["kinds"] or r["reason"] or "no finding" for r in mine)
        top = ", ".join(f"{k} {n:,}" for k, n in kinds.most_common(3))
        more = " more" if change == "dropped" else ""
        parts.append(f"{change} {len(mine):,}{more} ({top})")
    return ", ".join(parts)


# Saved versions never change, and the Results page asks again every 2 s: each pair's
# words are computed once per store file (its inode: a run made again is read again).
@cached(LRUCache(maxsize=64), key=lambda run, a, b: (str(run.path), run.store.stat().st_ino,
                                                     a, b))
def versions_changes(run: RunDir, a: str, b: str) -> str:
    """:func:`changes_text` of saved versions ``a`` → ``b``, or the line that says why
    there is none (a version an experiment names that the store does not hold)."""
    try:
        return changes_text(diff_versions(run, a, b))
    except InputError as exc:
        return str(exc)


def accuracy_texts(a: Experiment, b: Experiment) -> list[str]:
    """``b`` against ``a`` for each curated subset and batch size both trained:
    "filtered at batch 64: +0.90 ± 0.30 pp at 3 seeds, p = 0.040"."""
    mine = {(r.batch_size, r.subset): r.accs for r in compare(b.rows) if curated(r.subset)}
    theirs = {(r.batch_size, r.subset): r.accs for r in compare(a.rows)}
    out = []
    for (batch, subset), accs in sorted(mine.items()):
        if (batch, subset) not in theirs:
            continue
        d = difference(list(accs), list(theirs[batch, subset]))
        n_a, n_b = len(theirs[batch, subset]), len(accs)
        seeds = f"{n_b} seed{'s' * (n_b > 1)}" if n_a == n_b else f"{n_a} and {n_b} seeds"
        p = f", p = {d.p:.3f}" if d.p is not None else " (one seed: no spread)"
        out.append(f"{subset} at batch {batch}: {d.text()} at {seeds}{p}")
    return out


def version_effects(run: RunDir, experiments: list[Experiment]) -> list[dict]:
    """Each experiment on a version beside the latest earlier one on another version:
    ``{"before", "after"}`` (experiment names), ``"versions"`` ("v2 → v3"), ``"changes"``
    (:func:`changes_text`) and ``"accuracy"`` (:func:`accuracy_texts`)."""
    out = []
    for k, b in enumerate(experiments):
        earlier = [a for a in experiments[:k] if a.version and a.version != b.version]
        if not b.version or not earlier:
            continue
        a = earlier[-1]
        out.append({"before": a.name, "after": b.name, "versions": f"{a.version} → {b.version}",
                    "changes": versions_changes(run, a.version, b.version),
                    "accuracy": accuracy_texts(a, b)})
    return out
