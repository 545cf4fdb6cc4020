"""The class list's grid rows (app/curate/class_list.py): each class's code, counts and
shares, and the total row apart."""

from __future__ import annotations

from app.curate import class_list


def test_class_grid_rows_carry_codes_counts_and_shares():
    rows = [{"class": f"c{c:04d}", "size": 100 + c % 7, "flagged": c % 13, "overridden": 1,
             "relabelled": c % 2, "kept": 90, "proposed": c % 3} for c in range(1000)]
    rows.append({"class": "total", "size": 0, "flagged": 0, "overridden": 0, "relabelled": 0,
                 "kept": 0, "proposed": 0})
    grid, total = class_list.grid_rows(rows)
    assert [r["code"] for r in grid] == list(range(1000))
    assert [r["id"] for r in grid[:3]] == ["0", "1", "2"]  # the grid's row ids
    assert grid[12]["share"] == round(100 * 12 / 105, 1) and grid[12]["relabelled"] == 0
    assert (total["id"], total["class"], total["share"]) == ("all", "All classes", 0.0)
