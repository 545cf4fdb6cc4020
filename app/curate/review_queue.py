"""The review queue: every flagged or decided sample across classes, as rows of a grid.

Plain functions of (run data, state), tested without a browser; ``app/pages/curate.py``
sends the rows to a dash-ag-grid, which sorts and filters them in the browser, and calls
the actions here with the samples the grid shows.

A row's ``state`` is one word a reviewer reads as a badge:

- ``flagged``: the rule or a finding's default drops it and nobody has looked yet;
- ``proposed``: a finding lists it below its kind's drop cut: kept until someone decides;
- ``kept`` / ``dropped``: a reviewer kept or dropped it (with its label as it is);
- ``relabelled``: a reviewer gave it another class; it trains with that class.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import numpy as np

from app.caching import lookup, memoized
from app.run_data import RunData, RunState, current_state, run_data
from worker.pipeline.errors import InputError
from worker.pipeline.findings import View, kinds, marks, sample_findings
from worker.pipeline.findings.testsplit import read_test_paths
from worker.pipeline.storage.curation_store import open_store
from worker.pipeline.storage.decision_log import Decided, last_decisions

STATES = {"flagged": "flagged: dropped by default, not reviewed yet",
          "proposed": "proposed: a finding lists it, kept until you decide",
          "kept": "kept by you", "dropped": "dropped by you",
          "relabelled": "relabelled by you: trains with the new class"}
# The state word of a sample the store holds a decision for, by the decision's reason
# (anything else listed is "flagged" when dropped, "proposed" when kept).
STATE_OF_REASON = {"override_keep": "kept", "override_drop": "dropped", "relabel": "relabelled"}
# Bulk actions on the rows the grid shows, as (label, what it does) for their buttons.
BULK = {"accept": "Accept suggestions", "keep": "Keep all", "drop": "Drop all",
        "drop_duplicates": "Drop duplicates (keep one per group)", "drop_leaks": "Drop leaks"}
CONFUSION_TOP = 12
ISLAND_SHOWN = 24  # an island's members the side-by-side view shows (the focused one first)


def finding_marks(data: RunData, state: RunState) -> dict[str, np.ndarray]:
    """Which samples each finding kind marks at ``state`` (bool (N,) by kind name): the
    label rule's flags and every other registered kind's (worker/pipeline/findings)."""
    s = data.samples
    view = View(s.paths, s.classes, s.labels, (), state.decisions.flagged, data.findings)
    return marks(data.findings, view)


def queue_samples(data: RunData, state: RunState) -> np.ndarray:
    """Every sample a finding kind marks (the label rule's flags included) or a reviewer
    decided, most likely wrong first.

    Returns
    -------
    ndarray of int64, shape (m,): sample indices, by mislabel score descending (index
    order for runs without one)
    """
    d = state.decisions
    member = d.flagged.copy()
    for marked in finding_marks(data, state).values():
        member |= marked
    decided = np.fromiter(state.decided, dtype=np.int64, count=len(state.decided))
    member[decided[(decided >= 0) & (decided < len(member))]] = True
    chosen = np.flatnonzero(member)
    if data.score is not None:
        chosen = chosen[np.argsort(-data.score[chosen], kind="stable")]
    return chosen


def row_states(state: RunState, samples: np.ndarray) -> list[str]:
    """The badge word of each sample in ``samples`` (see the module docstring)."""
    reason, kept = state.decisions.reason, state.decisions.kept
    # A relabelled sample another kind still drops (a duplicate copy) shows as relabelled:
    # its class is what the reviewer set; the finding column says why it is listed.
    return [STATE_OF_REASON.get(str(reason[s]), "proposed" if kept[s] else "flagged")
            for s in samples]


def queue_rows(data: RunData, state: RunState, run_id: str) -> list[dict]:
    """The grid's rows, one per :func:`queue_samples` sample (:func:`sample_rows`)."""
    return sample_rows(data, state, run_id, queue_samples(data, state))


def sample_rows(data: RunData, state: RunState, run_id: str, samples: np.ndarray,
                distances: list[float] | None = None) -> list[dict]:
    """Grid rows for ``samples`` (int64 (m,)), in that order.

    Each row: ``id`` (the sample as a string, the grid's row id), ``sample``, ``thumb``
    (its image URL), ``given`` (class name), ``suggested`` (the evidence's class when it
    differs from the given one, else ""), ``score`` (3 decimals, or None), ``finding``
    (the kinds that mark it, e.g. "label,duplicate"; "" for a sample no kind marks),
    ``state``, ``now`` (the class it trains with, "" when dropped), ``decided`` (who made
    the last decision standing on it, and when; "" for none) and ``distance`` (from
    ``distances``, the "similar to" list's (m,) distances; None in the queue).
    """
    signed = last_decisions(open_store(data.run))
    s = data.samples
    samples = np.asarray(samples, np.int64)
    found = sample_findings(finding_marks(data, state), len(s))
    classes = s.classes
    given = s.labels[samples]
    suggested = (data.suggested[samples] if data.suggested is not None
                 else given)
    scores = (np.round(data.score[samples].astype(float), 3) if data.score is not None
              else [None] * len(samples))
    far = [None] * len(samples) if distances is None else [round(float(d), 4)
                                                            for d in distances]
    run = quote(run_id, safe="")
    rows = []
    for i, g, sg, sc, st, dist in zip(samples.tolist(), given.tolist(), suggested.tolist(),
                                      list(scores), row_states(state, samples), far,
                                      strict=True):
        now = "" if st in ("flagged", "dropped") else classes[state.relabels.get(i, g)]
        rows.append({"id": str(i), "sample": i, "thumb": f"/thumb/{run}/{i}.png",
                     "given": classes[g], "suggested": classes[sg] if sg != g else "",
                     "score": sc, "finding": found[i], "state": st, "now": now,
                     "decided": _signed(signed.get(i)), "distance": dist})
    return rows


def _signed(decided: Decided | None) -> str:
    """A decided row's "NAME · 11-29 03:24" (UTC), or ""."""
    return "" if decided is None else f"{decided.author} · {decided.at[5:16].replace('T', ' ')}"


def _rows_key(data: RunData, run_id: str, revision: int) -> tuple:
    return ("queue-rows", str(data.run.path), data.stamp, run_id, revision)


def cached_rows(data: RunData, state: RunState, run_id: str) -> list[dict]:
    """:func:`queue_rows` at ``state``'s revision, computed once per revision
    (app/caching.py), so the next revision's :func:`row_changes` can start from them."""
    return memoized(_rows_key(data, run_id, state.revision),
                    lambda: queue_rows(data, state, run_id))


def rows_at(data: RunData, run_id: str, revision: int) -> list[dict] | None:
    """The rows :func:`cached_rows` kept for store revision ``revision``, or None when they
    are no longer kept (or outside the app)."""
    return lookup(_rows_key(data, run_id, revision))


def row_changes(before: list[dict], after: list[dict]) -> dict:
    """The grid transaction from rows ``before`` to rows ``after`` (by ``id``): the rows
    added, the rows whose values changed, and the ids removed. Applied at once
    (``async`` False), so the rows are current when the next action reads them.
    """
    old = {r["id"]: r for r in before}
    new_ids = {r["id"] for r in after}
    return {"add": [r for r in after if r["id"] not in old],
            "update": [r for r in after if r["id"] in old and old[r["id"]] != r],
            "remove": [{"id": i} for i in old if i not in new_ids], "async": False}


def finding_counts(rows: list[dict]) -> dict[str, int]:
    """How many rows each finding kind marks, in registry order."""
    counts = Counter(k for r in rows for k in r["finding"].split(",") if k)
    return {k.name: counts[k.name] for k in kinds() if counts[k.name]} | \
        {k: n for k, n in counts.items() if k not in {kind.name for kind in kinds()}}


def state_counts(rows: list[dict]) -> dict[str, int]:
    """How many rows are in each state, in :data:`STATES` order (states with none left
    out)."""
    counts = Counter(r["state"] for r in rows)
    return {s: counts[s] for s in STATES if counts[s]}


def confusion(rows: list[dict], top: int = CONFUSION_TOP) -> list[dict]:
    """The most frequent given → suggested pairs among ``rows`` (queue rows), largest
    first: ``[{"given", "suggested", "count"}]``, at most ``top``."""
    pairs = Counter((r["given"], r["suggested"]) for r in rows if r["suggested"])
    return [{"given": g, "suggested": sg, "count": n} for (g, sg), n in pairs.most_common(top)]


@dataclass(frozen=True)
class BulkPlan:
    """What a bulk action would store: per-sample values for
    ``CurationStore.set_sample_values`` and how many samples it changes."""

    values: dict[str, dict[int, object]]
    changes: int
    description: str


def bulk_plan(data: RunData, state: RunState, samples: list[int], action: str,
              min_score: float | None = None) -> BulkPlan:
    """What ``action`` does to ``samples`` (the rows the grid shows), without storing it.

    - ``accept``: every sample with a suggestion and a score ≥ ``min_score`` takes the
      suggested class (kept with it; a drop override is cleared);
    - ``keep`` / ``drop``: every sample is kept / dropped, relabels stay as they are.

    Returns
    -------
    BulkPlan; ``changes`` counts the samples whose stored decision or class changes.
    """
    if action not in BULK:
        raise InputError(f"no bulk action {action!r}: use one of {', '.join(BULK)}")
    n = len(data.samples)
    chosen = sorted({int(s) for s in samples if 0 <= int(s) < n})
    if action == "drop_duplicates":
        return _keep_one_per_group(data, state, chosen)
    if action == "drop_leaks":
        leak = data.findings.get("leak")
        todo = [s for s in chosen if leak is not None and leak.issue[s]
                and state.overrides.get(s) != "drop"]
        return BulkPlan({"overrides": dict.fromkeys(todo, "drop")}, len(todo),
                        f"drop {len(todo)} leak(s) into the test split")
    if action in ("keep", "drop"):
        todo = [s for s in chosen if state.overrides.get(s) != action]
        return BulkPlan({"overrides": dict.fromkeys(todo, action)}, len(todo),
                        f"{action} {len(todo)} listed sample(s)")
    if data.suggested is None or data.score is None:
        raise InputError("this run has no suggestions: re-run 'curator cluster RUN'")
    if min_score is None or not 0.0 <= float(min_score) <= 1.0:
        raise InputError("the score threshold must be a number from 0 to 1")
    labels = data.samples.labels
    relabels: dict[int, object] = {}
    overrides: dict[int, object] = {}
    for s in chosen:
        code = int(data.suggested[s])
        if code == labels[s] or data.score[s] < float(min_score):
            continue
        if state.relabels.get(s) != code:
            relabels[s] = code
        if state.overrides.get(s) == "drop":
            overrides[s] = None
    changed = len(set(relabels) | set(overrides))
    return BulkPlan({"relabels": relabels, "overrides": overrides}, changed,
                    f"accept {changed} suggestion(s) with score ≥ {float(min_score):g}")


def group_members(data: RunData, sample: int) -> np.ndarray:
    """The members of ``sample``'s duplicate group (itself alone when it has none)."""
    dup = data.findings.get("duplicate")
    group = None if dup is None else dup.facts.get("group")
    if group is None or group[sample] < 0:
        return np.array([sample], np.int64)
    return np.flatnonzero(group == group[sample])


def island_members(data: RunData, sample: int) -> np.ndarray:
    """The members of ``sample``'s outlier island (findings/detectors/outlier.py
    ``islands``; empty when it is in none), itself included."""
    out = data.findings.get("outlier")
    island = None if out is None else out.facts.get("island")
    if island is None or island[sample] < 0:
        return np.empty(0, np.int64)
    return np.flatnonzero(island == island[sample])


def decide_island(runs_root: Path, run_id: str, sample: int, decision: str) -> int:
    """Keep or drop every member of ``sample``'s outlier island: one undoable step (the
    ``i`` and ``Shift+I`` keys). Returns how many samples changed."""
    data = run_data(runs_root, run_id)
    members = island_members(data, sample)
    if not len(members):
        raise InputError(f"#{sample} is in no island of outliers: nothing to decide together")
    overrides = current_state(data).overrides
    values = {"overrides": {int(m): decision for m in members
                            if overrides.get(int(m)) != decision}}
    if not values["overrides"]:
        done = "dropped" if decision == "drop" else "kept"
        raise InputError(f"every member of #{sample}'s island is already {done}")
    open_store(data.run).set_sample_values(
        values, f"{decision} the island of {len(members)} outliers around #{sample}",
        n_samples=len(data.samples), n_classes=len(data.samples.classes))
    return len(values["overrides"])


def _keep_one_per_group(data: RunData, state: RunState, chosen: list[int]) -> BulkPlan:
    """Every duplicate group with a listed member keeps one member (the one a reviewer
    kept, else the representative) and drops the others, as explicit decisions."""
    dup = data.findings.get("duplicate")
    group = None if dup is None else dup.facts.get("group")
    if group is None:
        raise InputError("this run has no duplicate groups: run 'curator findings RUN'")
    rep = dup.facts["representative"]
    overrides: dict[int, object] = {}
    groups = {int(group[s]) for s in chosen if group[s] >= 0}
    for g in sorted(groups):
        members = np.flatnonzero(group == g).tolist()
        kept = [m for m in members if state.overrides.get(m) == "keep"]
        keep = kept[0] if kept else int(rep[members[0]])
        for m in members:
            want = "keep" if m == keep else "drop"
            if state.overrides.get(m) != want:
                overrides[m] = want
    return BulkPlan({"overrides": overrides}, len(overrides),
                    f"keep one of each of {len(groups)} duplicate group(s), drop the others")


def keep_member(runs_root: Path, run_id: str, sample: int) -> int:
    """Keep ``sample`` as its duplicate group's copy and drop the group's others: one
    undoable step (the side-by-side view's ``m`` key)."""
    data = run_data(runs_root, run_id)
    members = group_members(data, sample)
    if len(members) < 2:
        raise InputError(f"#{sample} has no near-duplicates: nothing to choose between")
    values = {"overrides": {int(m): "keep" if m == sample else "drop" for m in members}}
    return open_store(data.run).set_sample_values(
        values, f"keep #{sample} of its {len(members)} near-duplicates",
        n_samples=len(data.samples), n_classes=len(data.samples.classes))


def related_images(data: RunData, state: RunState, sample: int, run_id: str) -> list[dict]:
    """What the side-by-side view shows for ``sample``: its duplicate group's members
    (itself first), or its outlier island's (up to ``ISLAND_SHOWN``), and, for a leak, the
    test image it nearly copies. Each item: ``{"src", "caption", "kept"}`` (kept None for
    a test image); [] when it has none of them."""
    run = quote(run_id, safe="")
    classes, labels, kept = data.samples.classes, data.samples.labels, state.decisions.kept
    items = []
    members = group_members(data, sample)
    if len(members) < 2:
        members = island_members(data, sample)[:ISLAND_SHOWN]
    if len(members) > 1:
        for m in [sample, *[int(x) for x in members if x != sample]]:
            items.append({"src": f"/thumb/{run}/{m}.png", "kept": bool(kept[m]),
                          "caption": f"#{m} {classes[labels[m]]}"})
    leak = data.findings.get("leak")
    if leak is not None and leak.issue[sample]:
        j = int(leak.related[sample])
        if not items:
            items.append({"src": f"/thumb/{run}/{sample}.png", "kept": bool(kept[sample]),
                          "caption": f"#{sample} {classes[labels[sample]]}"})
        paths = read_test_paths(data.run)
        items.append({"src": f"/testthumb/{run}/{j}.png", "kept": None,
                      "caption": f"test: {paths[j] if j < len(paths) else j}"})
    return items


def bulk_apply(runs_root: Path, run_id: str, samples: list[int], action: str,
               min_score: float | None = None) -> int:
    """Store :func:`bulk_plan` as one undoable step; returns how many samples changed."""
    data = run_data(runs_root, run_id)
    plan = bulk_plan(data, current_state(data), samples, action, min_score)
    if not plan.changes:
        raise InputError("nothing to change: every listed sample is already like that")
    open_store(data.run).set_sample_values(plan.values, plan.description,
                                           n_samples=len(data.samples),
                                           n_classes=len(data.samples.classes))
    return plan.changes


def relabel_to(runs_root: Path, run_id: str, samples: list[int], label: str) -> int:
    """Give ``samples`` the class named ``label`` and keep them, as one undoable step:
    relabelling means "this belongs, as ``label``", so a drop override is cleared.
    A sample relabelled to its given class loses its relabel. Returns how many changed."""
    data = run_data(runs_root, run_id)
    s = data.samples
    if label not in s.classes:
        raise InputError(f"no class {label!r} in this run: pick one from the list")
    if not samples:
        raise InputError("select rows first, then pick the class to relabel them to")
    chosen = sorted({int(i) for i in samples})
    if not 0 <= chosen[0] <= chosen[-1] < len(s):
        raise InputError(f"no sample {chosen[0] if chosen[0] < 0 else chosen[-1]} in this run")
    state = current_state(data)
    code = s.classes.index(label)
    values = {"relabels": {i: None if code == s.labels[i] else code for i in chosen},
              "overrides": {i: None for i in chosen if state.overrides.get(i) == "drop"}}
    changed = open_store(data.run).set_sample_values(
        values, f"relabel {len(chosen)} sample(s) to {label}", n_samples=len(s),
        n_classes=len(s.classes))
    if not changed:
        raise InputError(f"nothing to change: already {label}")
    return changed
