"""Golden values of the seeded runs the tests build, in one place.

The digits run with 10% injected noise, seed 0, pixel features (the ``digits_run``
fixture, ``make demo`` and the README's first command) is deterministic: the same flags
and scores on every run with the same BLAS kernel (the tests pin OpenBLAS's Haswell
kernel: tests/conftest.py). A change that moves these moves what users see on the demo, so a
test compares exactly and the change updates this file, saying why.
"""

from __future__ import annotations

# `curator evaluate` of the digits run (1,797 images, 180 labels flipped).
DIGITS_NOISE10 = {
    "noisy": 180,
    "true_pct": 10.02,
    # The default rule ("adaptive"): what the demo drops.
    "flagged": 188,
    "true_positives": 179,
    "f1": 0.973,
    # The other rules on the same run, for comparison in `curator evaluate`.
    # With OpenBLAS's Haswell kernel (tests/conftest.py). The map moves with the last bits
    # of its neighbours' distances, the default rule does not: torch's blocked products
    # gave (227, 0.884) and (211, 0.921), OpenBLAS's SkylakeX kernel (237, 0.863) and
    # (214, 0.914); faiss's flat index (map/neighbours.py, since 2026-11-28) gives these.
    "rules": {"dbscan": (238, 0.861), "dbscan-knn": (214, 0.914)},
}


def check_digits_evaluation(result: dict) -> None:
    """Assert that an ``evaluate`` result of the digits run is the golden one: flagged
    counts exactly, F1 to 3 decimals."""
    gold, current = DIGITS_NOISE10, result["current"]
    assert (current["flagged"], current["true_positives"], current["noisy"]) == (
        gold["flagged"], gold["true_positives"], gold["noisy"]), current
    assert round(current["f1"], 3) == gold["f1"], current
    assert result["rules"]["adaptive"]["flagged"] == gold["flagged"]
    for rule, (flagged, f1) in gold["rules"].items():
        got = result["rules"][rule]
        assert (got["flagged"], round(got["f1"], 3)) == (flagged, f1), (rule, got)
