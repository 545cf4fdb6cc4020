"""bench/stress.py's summary: the worst cell is taken over the cells no cut was chosen on,
and recall lost to a higher copy rate is read off the plain copy cells only."""

from __future__ import annotations

from bench.stress import GRIDS, recall_drop, step_seconds, worst


def _copy(name: str, f1: float, recall: float, chosen: bool = False, **more) -> dict:
    return {"cell": name, "kind": "copies", "chosen": chosen, "f1": f1, "precision": 1.0,
            "recall": recall, **more}


def test_the_worst_cell_leaves_out_the_cells_a_cut_was_chosen_on():
    rows = [_copy("copies-5pct-mixed", 0.1, 0.1, chosen=True),
            _copy("copies-10pct-mixed", 0.9, 0.95, leak_recall=0.8, leak_precision=1.0),
            _copy("copies-20pct-mixed", 0.95, 0.9, leak_recall=0.9, leak_precision=0.9),
            {"cell": "clean-cifar", "kind": "clean", "chosen": False, "marked": 4},
            {"cell": "outliers-20-grey", "kind": "outliers", "chosen": False, "f1": 0.7,
             "auroc": 0.99, "queue2x": 0.85}]
    out = worst(rows)
    assert out["worst_copy_f1"] == 0.9 and out["median_copy_f1"] == 0.925
    assert out["worst_leak_recall"] == 0.8 and out["worst_leak_precision"] == 0.9
    assert out["worst_outlier_f1"] == 0.7 and out["most_clean_marks"] == 4
    # recall from 10% to 20% fell by 0.05; the chosen 5% cell counts for the drop too
    assert abs(out["copy_recall_drop"] - 0.05) < 1e-9


def test_recall_drop_reads_the_plain_copy_cells_only():
    rows = [_copy("copies-1pct-mixed", 1.0, 1.0), _copy("copies-50pct-mixed", 1.0, 0.99),
            _copy("copies-20pct-mixed-family10", 0.5, 0.2),
            _copy("photos-copies-35pct-mixed", 0.5, 0.2)]
    assert abs(recall_drop(rows) - 0.01) < 1e-9


def test_a_step_resumed_from_before_says_nothing_of_its_time():
    meta = {"steps": {"cluster": {"at": "2026-11-28T10:00:00+00:00"},
                      "findings": {"at": "2026-11-28T10:00:30+00:00"}}}
    start = 1_700_000_000.0  # long before
    assert step_seconds(meta, "findings", start) == 30.0
    assert step_seconds(meta, "findings", 4_000_000_000.0) is None


def test_every_grid_names_its_cells_once():
    for cells in GRIDS.values():
        names = [c.name for c in cells]
        assert len(names) == len(set(names))
