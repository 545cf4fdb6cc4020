"""Detection scores on fixed inputs: precision, recall, F1 and AUROC, including the cases
that divide by zero (nothing marked, no truth, neither).

The expected values were computed by the hand-written formulas these functions replaced
(the counts' precision/recall/F1 and the arrays' own), so a change of implementation
cannot move a published number.
"""

from __future__ import annotations

import numpy as np
import pytest

from worker.pipeline.findings import get_kind
from worker.pipeline.findings.base import FindingTable
from worker.pipeline.findings.detectors.duplicate import duplicate_scores
from worker.pipeline.metrics import auroc, detection_scores, f1_of, prf


def _bools(*values: int) -> np.ndarray:
    return np.array(values, bool)


def _random() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    flag, noisy = rng.random(200) < 0.3, rng.random(200) < 0.2
    return flag, noisy, rng.random(200) + noisy * 0.3


NONE, ALL = np.zeros(10, bool), np.ones(10, bool)


@pytest.mark.parametrize(("flagged", "noisy", "expected"), [
    (*_random()[:2], (0.2281, 0.2766, 0.25, 57, 47, 13)),
    (NONE, ALL, (0.0, 0.0, 0.0, 0, 10, 0)),  # nothing flagged
    (ALL, NONE, (0.0, 0.0, 0.0, 10, 0, 0)),  # nothing noisy
    (NONE, NONE, (0.0, 0.0, 0.0, 0, 0, 0)),  # neither
    (_bools(1, 1, 0, 0), _bools(0, 0, 1, 1), (0.0, 0.0, 0.0, 2, 2, 0)),  # disjoint
    (_bools(1, 0, 1), _bools(1, 0, 1), (1.0, 1.0, 1.0, 2, 2, 2)),
    (_bools(1, 1, 1, 0, 0, 0), _bools(1, 0, 0, 1, 1, 1), (0.3333, 0.25, 0.2857, 3, 4, 1)),
])
def test_detection_scores_of_label_arrays_are_unchanged(flagged, noisy, expected):
    keys = ("precision", "recall", "f1", "flagged", "noisy", "true_positives")
    assert detection_scores(flagged, noisy) == dict(zip(keys, expected, strict=True))


@pytest.mark.parametrize(("counts", "expected"), [
    ((0, 0, 0), (0.0, 0.0, 0.0)),
    ((0, 5, 0), (0.0, 0.0, 0.0)),
    ((0, 0, 5), (0.0, 0.0, 0.0)),
    ((3, 7, 11), (0.4286, 0.2727, 0.3333)),
    ((5, 5, 5), (1.0, 1.0, 1.0)),
    ((0, 4, 9), (0.0, 0.0, 0.0)),
    ((2, 3, 1000), (0.6667, 0.002, 0.004)),
])
def test_prf_of_counts_is_unchanged(counts, expected):
    tp, marked, truth = counts
    assert prf(tp, marked, truth) == {
        "precision": expected[0], "recall": expected[1], "f1": expected[2],
        "marked": marked, "truth": truth, "true_positives": tp}


def test_f1_of_zero_precision_and_recall_is_zero():
    assert f1_of(0.0, 0.0) == 0.0
    assert f1_of(0.5, 1 / 3) == pytest.approx(0.4)


def test_auroc_is_unchanged_and_none_for_one_kind():
    _, noisy, score = _random()
    assert auroc(score, noisy) == 0.7735
    assert auroc(score, np.zeros(200, bool)) is None
    assert auroc(score, np.ones(200, bool)) is None
    assert auroc(np.array([0.1, 0.1, 0.5, 0.5, 0.9]), _bools(0, 1, 0, 1, 1)) == 0.6667


# Eight samples: injected copies 4 of 0 (weak), 5 of 1 and 6 of 2 (strong); 7 is no copy.
MARKED = _bools(0, 0, 0, 0, 1, 1, 0, 1)


RELATED = np.array([-1, -1, -1, -1, 0, 3, -1, 2])


GROUP = np.array([0, 1, 2, -1, 0, 1, -1, 2])


COPIES = [{"kind": "duplicate", "index": 4, "source": 0, "how": "weak"},
          {"kind": "duplicate", "index": 5, "source": 1, "how": "strong"},
          {"kind": "duplicate", "index": 6, "source": 2, "how": "strong"}]


def _prf(p: float, r: float, f1: float, marked: int, truth: int, tp: int) -> dict:
    return {"precision": p, "recall": r, "f1": f1, "marked": marked, "truth": truth,
            "true_positives": tp}


def test_duplicate_scores_are_unchanged():
    assert duplicate_scores(MARKED, RELATED, COPIES, GROUP) == {
        **_prf(0.6667, 0.6667, 0.6667, 3, 3, 2),
        "recall_by_strength": {"strong": 0.5, "weak": 1.0}}
    assert duplicate_scores(_bools(0, 0, 0, 0, 1, 0, 0, 1), RELATED, COPIES, GROUP) == {
        **_prf(0.5, 0.3333, 0.4, 2, 3, 1), "recall_by_strength": {"strong": 0.0, "weak": 1.0}}
    assert duplicate_scores(np.zeros(8, bool), RELATED, COPIES, GROUP) == {
        **_prf(0.0, 0.0, 0.0, 0, 3, 0), "recall_by_strength": {"strong": 0.0, "weak": 0.0}}
    assert duplicate_scores(MARKED, RELATED, [], GROUP) == {
        **_prf(0.0, 0.0, 0.0, 3, 0, 0), "recall_by_strength": {}}


SCORE = np.array([0.9, 0.1, 0.8, 0.2, 0.7, 0.3, 0.05, 0.6], np.float32)


def test_outlier_scores_are_unchanged():
    kind, table = get_kind("outlier"), FindingTable(MARKED, SCORE, np.full(8, -1))
    truth = [{"kind": "outlier", "index": i} for i in (0, 4, 6)]
    assert kind.score_truth(table, MARKED, truth) == {
        **_prf(0.3333, 0.3333, 0.3333, 3, 3, 1), "auroc": 0.6, "queue2x": 2 / 3}
    assert kind.score_truth(table, np.zeros(8, bool), truth[:1]) == {
        **_prf(0.0, 0.0, 0.0, 0, 1, 0), "auroc": 1.0, "queue2x": 1.0}


def test_leak_scores_are_unchanged():
    kind = get_kind("leak")
    table = FindingTable(MARKED, SCORE, np.array([-1, -1, -1, -1, 10, 11, 12, -1]))
    leaks = [{"kind": "leak", "index": 4, "source": 10, "how": "exact"},
             {"kind": "leak", "index": 5, "source": 99, "how": "warp"},
             {"kind": "leak", "index": 6, "source": 12, "how": "warp"}]
    assert kind.score_truth(table, MARKED, leaks) == {
        **_prf(0.3333, 0.3333, 0.3333, 3, 3, 1),
        "recall_by_strength": {"exact": 1.0, "warp": 0.0}, "queue_recall_at_2x": 0.6667}
    assert kind.score_truth(table, np.zeros(8, bool), leaks) == {
        **_prf(0.0, 0.0, 0.0, 0, 3, 0),
        "recall_by_strength": {"exact": 0.0, "warp": 0.0}, "queue_recall_at_2x": 0.6667}
