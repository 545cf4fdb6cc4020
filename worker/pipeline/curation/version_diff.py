"""How two curation states differ: two versions of a run, or a version and ``current``
(the live curation), sample by sample (``curator diff``, ``run.diff``).

A sample changes when it is kept in A and dropped in B (``dropped``), dropped in A and kept
in B (``kept back``), or trains with another label in B than in A (``relabelled``, from →
to as class names); a sample can be both dropped and relabelled, one row each. Each row
says why: the finding kinds that mark the sample and the reason of the side that decided
it (B's for dropped and relabelled, A's for kept back, where B's is only "kept"), and who
decided it in B (``decided_by``: "" where no person did, the rule and the findings'
defaults decided).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from worker.pipeline.curation.versions import Outcome, version_or_current, version_samples
from worker.pipeline.storage.rundir import RunDir
from worker.pipeline.storage.sample_table import SampleTable

DROPPED, KEPT_BACK, RELABELLED = "dropped", "kept back", "relabelled"
CHANGES = (DROPPED, KEPT_BACK, RELABELLED)
DIFF_COLUMNS = ("sample", "path", "change", "from", "to", "kinds", "reason", "decided_by")
SUMMARY_COLUMNS = ("change", "kind", "decided_by", "samples")


def _names(outcome: Outcome, i: int) -> str:
    bits = int(outcome.findings[i])
    return ",".join(k for j, k in enumerate(outcome.kinds) if bits >> j & 1)


def diff_outcomes(samples: SampleTable, a: Outcome, b: Outcome) -> list[dict[str, Any]]:
    """The rows of :data:`DIFF_COLUMNS` from outcome ``a`` to outcome ``b`` (both of
    ``samples``' N samples): dropped, then kept back, then relabelled, each by sample.

    Returns
    -------
    list of dict: ``sample`` (int), ``path``, ``change`` (:data:`CHANGES`), ``from`` and
    ``to`` (class names, relabelled rows only; "" otherwise), ``kinds`` (the finding
    kinds that mark it, comma-separated), ``reason``, ``decided_by``.
    """
    names = samples.classes
    masks = {DROPPED: a.kept & ~b.kept, KEPT_BACK: ~a.kept & b.kept,
             RELABELLED: a.labels != b.labels}
    rows = []
    for change in CHANGES:
        why = a if change == KEPT_BACK else b
        for i in np.flatnonzero(masks[change]).tolist():
            relabel = change == RELABELLED
            rows.append({"sample": i, "path": samples.paths[i], "change": change,
                         "from": names[a.labels[i]] if relabel else "",
                         "to": names[b.labels[i]] if relabel else "",
                         "kinds": _names(why, i), "reason": str(why.reason[i]),
                         "decided_by": str(b.decided_by[i])})
    return rows


def diff_versions(run: RunDir, a: str, b: str) -> list[dict[str, Any]]:
    """The samples whose fate differs from version ``a`` to version ``b`` (either may be
    ``current``, the live curation): :func:`diff_outcomes`'s rows.

    Raises
    ------
    InputError
        A name that is no version of the run (the line names those there are).
    """
    first, second = version_or_current(run, a), version_or_current(run, b)
    samples, _ = version_samples(run, first)
    version_samples(run, second)
    return diff_outcomes(samples, first.outcome, second.outcome)


def diff_summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows counted by change, kind and author: ``change``, ``kind`` (the finding
    kinds, or the reason where no kind marks the sample), ``decided_by``, ``samples``;
    in :data:`CHANGES` order, the largest groups first."""
    counted = Counter((r["change"], r["kinds"] or r["reason"], r["decided_by"]) for r in rows)
    order = sorted(counted.items(), key=lambda kv: (CHANGES.index(kv[0][0]), -kv[1], kv[0]))
    return [{"change": c, "kind": k, "decided_by": who, "samples": n}
            for (c, k, who), n in order]
