"""The regression guard (bench/regression_guard.py): its floors file and its verdicts, on
figures given here."""

from __future__ import annotations

import math
from datetime import date

import pytest

from bench.regression_guard import FLOORS, PROBES, Floor, judge, read_floors


def test_every_guarded_figure_has_its_probe_floor_date_and_reading():
    floors = read_floors(FLOORS)
    assert len({f.name for f in floors}) == len(floors) >= 15
    assert {f.probe for f in floors} == set(PROBES)  # every probe guards something
    for f in floors:
        assert f.set <= date.today() and f.what and f.seen, f.name


def test_a_figure_past_its_floor_fails_and_one_at_it_holds():
    most = Floor("ratio", "ui", 0.5, True, date(2026, 11, 28), "0.3", "a ratio")
    least = Floor("f1", "stress", 0.9, False, date(2026, 11, 28), "0.95", "an F1")
    verdicts = judge([most, least], {"ratio": 0.5, "f1": 0.89})
    assert [ok for _, _, ok in verdicts] == [True, False]
    assert not most.holds(0.51) and least.holds(0.9)
    # Not measured, or measured as NaN: never a pass.
    assert not most.holds(None) and not least.holds(math.nan)
    assert judge([most], {})[0][1:] == (None, False)


@pytest.mark.parametrize("body, says", [
    ('probe = "ui"\nat_most = 1\nat_least = 0\nset = 2026-11-28', "one of at_most or at_least"),
    ('probe = "ui"\nat_most = 1', "the date its floor was set"),
    ('probe = "ui"\nat_most = 1\nset = "yesterday"', "the date its floor was set"),
    ('probe = "gpu"\nat_most = 1\nset = 2026-11-28', "names probe 'gpu'"),
])
def test_a_floor_that_cannot_be_judged_is_refused(tmp_path, body, says):
    path = tmp_path / "floors.toml"
    path.write_text(f"[figures.x]\n{body}\n")
    with pytest.raises(ValueError, match=says):
        read_floors(path)
