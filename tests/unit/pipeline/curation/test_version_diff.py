"""How two outcomes differ (worker/pipeline/curation/version_diff.py): dropped, kept back
and relabelled samples with the side that explains each, counted by change, kind and
author."""

from __future__ import annotations

import numpy as np

from worker.pipeline.curation.version_diff import diff_outcomes, diff_summary
from worker.pipeline.curation.versions import Outcome
from worker.pipeline.storage.sample_table import SampleTable


def _outcome(kept, labels, reason, bits, who) -> Outcome:  # noqa: ANN001
    kept = np.asarray(kept, bool)
    return Outcome(kept, np.asarray(labels, np.int32),
                   np.where(kept, "kept", "dropped"), np.asarray(reason),
                   np.asarray(bits, np.uint64), ["label", "outlier"], np.asarray(who))


SAMPLES = SampleTable([f"img/{i}.png" for i in range(5)], np.array([0, 0, 1, 1, 2]),
                      np.full(5, -1), ["cat", "dog", "fox"])


def test_a_diff_lists_drops_keep_backs_and_relabels_with_their_reasons():
    a = _outcome([1, 1, 0, 1, 1], [0, 0, 1, 1, 2], ["cluster", "cluster", "noise", "cluster",
                                                   "cluster"], [0, 2, 1, 0, 0],
                 ["", "", "", "", ""])
    b = _outcome([1, 0, 1, 0, 1], [0, 0, 0, 1, 1], ["cluster", "outlier", "relabel",
                                                   "override_drop", "relabel"], [0, 2, 1, 0, 1],
                 ["", "", "ben", "ana", "ben"])
    rows = diff_outcomes(SAMPLES, a, b)
    assert [(r["sample"], r["change"], r["from"], r["to"], r["kinds"], r["reason"],
             r["decided_by"]) for r in rows] == [
        (1, "dropped", "", "", "outlier", "outlier", ""),
        (3, "dropped", "", "", "", "override_drop", "ana"),
        (2, "kept back", "", "", "label", "noise", "ben"),  # A's why, B's author
        (2, "relabelled", "dog", "cat", "label", "relabel", "ben"),
        (4, "relabelled", "fox", "dog", "label", "relabel", "ben")]
    assert rows[0]["path"] == "img/1.png"
    assert diff_summary(rows) == [
        {"change": "dropped", "kind": "outlier", "decided_by": "", "samples": 1},
        {"change": "dropped", "kind": "override_drop", "decided_by": "ana", "samples": 1},
        {"change": "kept back", "kind": "label", "decided_by": "ben", "samples": 1},
        {"change": "relabelled", "kind": "label", "decided_by": "ben", "samples": 2}]
    assert diff_outcomes(SAMPLES, a, a) == [] and diff_summary([]) == []
