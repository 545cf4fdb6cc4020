"""The curation store (worker/pipeline/storage/curation_store.py): persistence, undo and
redo of decisions, relabels and cuts, values checked before a step is written, snapshots
at one revision, and stores written by earlier versions."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from worker.pipeline.errors import InputError
from worker.pipeline.storage.curation_store import CurationStore


def test_a_store_made_before_the_pipeline_mark_keeps_its_clustering(tmp_path):
    """A store whose history predates the ``pipeline`` column: its cluster step's rows
    are marked when it is opened, so undo passes them by there too."""
    import sqlite3

    path = tmp_path / "curation.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript(
            "CREATE TABLE history (id INTEGER PRIMARY KEY AUTOINCREMENT, description TEXT "
            "NOT NULL, changes TEXT NOT NULL, undone INTEGER NOT NULL DEFAULT 0, created_at "
            "TEXT NOT NULL);"
            "CREATE TABLE class_params (label INTEGER PRIMARY KEY, eps REAL NOT NULL, "
            "min_samples INTEGER NOT NULL, updated_at TEXT NOT NULL);"
            "INSERT INTO class_params VALUES (0, 0.5, 5, 'then');")
        db.execute("INSERT INTO history (description, changes, created_at) VALUES (?, ?, ?)",
                   ("automatic parameters",
                    json.dumps([["class_params", 0, None, [0.5, 5]]]), "then"))
    store = CurationStore(path)
    assert store.undo() is None and store.class_params() == {0: (0.5, 5)}
    assert store.history()[0]["pipeline"]


def test_store_keeps_cuts_with_undo_and_redo(tmp_path):
    store = CurationStore(tmp_path / "c.sqlite")
    assert store.set_class_cut(3, 4) == 1 and store.cuts() == {3: 4}
    assert store.set_class_cut(3, 4) == 0  # no change, no history entry
    store.set_class_cut(3, 0, "flag none in class 3")
    assert store.snapshot().cuts == {3: 0}
    assert store.undo() == "flag none in class 3" and store.cuts() == {3: 4}
    store.set_class_cut(3, None)  # back to the rule: no row
    assert store.cuts() == {}
    store.undo()
    store.redo()
    assert store.cuts() == {}
    for bad in (0.5, -1):
        with pytest.raises(InputError, match="--cut must be a whole number from 0"):
            store.set_class_cut(1, bad)
    assert store.cuts() == {}


def test_store_checks_every_value_of_a_multi_value_step(tmp_path):
    store = CurationStore(tmp_path / "c.sqlite")
    with pytest.raises(InputError, match="class code 12 is out of range"):
        store.set_sample_values({"relabels": {1: 12}}, "x", n_samples=10, n_classes=10)
    with pytest.raises(InputError, match="sample index 10 is out of range"):
        store.set_sample_values({"overrides": {10: "keep"}}, "x", n_samples=10)
    with pytest.raises(InputError, match="override must be"):
        store.set_sample_values({"overrides": {1: "maybe"}}, "x")
    assert store.revision() == 0 and store.history() == []
    assert store.set_sample_values({"overrides": {1: "drop"}, "relabels": {1: 3, 2: 4}},
                                   "mixed {n}") == 3
    assert store.history()[0]["description"] == "mixed 3"


def test_overrides_persist_and_undo_redo(tmp_path):
    store = CurationStore(tmp_path / "c.sqlite")
    store.set_class_params({0: (0.5, 5)})
    assert store.set_overrides([3, 1], "drop") == 2
    assert store.set_overrides([1], "keep") == 1
    assert store.set_overrides([1], "keep") == 0  # no change, no history entry
    store.set_class_params({0: (0.7, 5)})
    reopened = CurationStore(tmp_path / "c.sqlite")  # a server restart
    assert reopened.overrides() == {1: "keep", 3: "drop"}
    assert reopened.undo() is not None and reopened.class_params() == {0: (0.5, 5)}
    assert reopened.undo() is not None and reopened.overrides() == {1: "drop", 3: "drop"}
    assert reopened.redo() is not None and reopened.overrides() == {1: "keep", 3: "drop"}
    reopened.set_overrides([3], None)  # a new action clears the redo stack
    assert reopened.redo() is None and reopened.overrides() == {1: "keep"}
    while reopened.undo():
        pass
    # The class's first parameters are never taken away: without them it has no clustering.
    assert reopened.overrides() == {} and reopened.class_params() == {0: (0.5, 5)}
    assert not reopened.can_undo()


def test_params_survive_and_bad_values_are_refused(tmp_path):
    store = CurationStore(tmp_path / "c.sqlite")
    with pytest.raises(InputError):
        store.set_class_params({0: (0.0, 5)})
    with pytest.raises(InputError):
        store.set_class_params({0: (1.0, 0)})
    with pytest.raises(InputError):
        store.set_overrides([1], "maybe")
    assert store.class_params() == {} and store.revision() == 0


def test_snapshot_reads_everything_at_one_revision(tmp_path):
    store = CurationStore(tmp_path / "c.sqlite")
    store.set_class_params({0: (1.0, 5)})
    store.set_overrides([3], "drop")
    store.set_setting("rule", "dbscan")
    store.set_relabels([4], 2)
    snap = store.snapshot()
    assert snap.params == {0: (1.0, 5)} and snap.overrides == {3: "drop"}
    assert snap.relabels == {4: 2}
    assert snap.settings["rule"] == "dbscan" and snap.revision == store.revision() == 4


def test_relabels_undo_and_redo_like_overrides(tmp_path):
    store = CurationStore(tmp_path / "c.sqlite")
    assert store.set_relabels([5, 7], 3, n_samples=10, n_classes=4) == 2
    assert store.set_relabels([5], 3) == 0  # no change, no history entry
    store.set_relabels([7], 1)
    assert store.relabels() == {5: 3, 7: 1}
    assert store.undo() and store.relabels() == {5: 3, 7: 3}
    assert store.undo() and store.relabels() == {}
    assert store.redo() and store.relabels() == {5: 3, 7: 3}
    store.set_relabels([5], None)
    assert store.relabels() == {7: 3}
    with pytest.raises(InputError, match="class code 9 is out of range"):
        store.set_relabels([1], 9, n_classes=4)
    with pytest.raises(InputError, match="sample index 10 is out of range"):
        store.set_relabels([10], 1, n_samples=10)


# -- undo and the pipeline's own steps ---------------------------------------------------
def _old_store(path: Path, params: dict[int, list], rows: list[tuple[str, list, int]],
               overrides: dict[int, str] | None = None, column: bool = False) -> None:
    """A store as the cluster step wrote it before the history marked the pipeline's rows:
    ``rows`` are (description, changes, undone), oldest first; ``column``: the ``pipeline``
    column already there, nothing marked (a store opened by the first marking code)."""
    with sqlite3.connect(path) as db:
        db.executescript(
            "CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
            "INSERT INTO settings VALUES ('revision', '7');"
            "CREATE TABLE class_params (label INTEGER PRIMARY KEY, eps REAL NOT NULL, "
            "min_samples INTEGER NOT NULL, updated_at TEXT NOT NULL);"
            "CREATE TABLE overrides (sample INTEGER PRIMARY KEY, decision TEXT NOT NULL, "
            "updated_at TEXT NOT NULL);"
            "CREATE TABLE history (id INTEGER PRIMARY KEY AUTOINCREMENT, description TEXT "
            "NOT NULL, changes TEXT NOT NULL, undone INTEGER NOT NULL DEFAULT 0, created_at "
            "TEXT NOT NULL" + (", pipeline INTEGER NOT NULL DEFAULT 0" if column else "") + ");")
        db.executemany("INSERT INTO class_params VALUES (?, ?, ?, 'then')",
                       [(c, e, m) for c, (e, m) in params.items()])
        db.executemany("INSERT INTO overrides VALUES (?, ?, 'then')",
                       list((overrides or {}).items()))
        db.executemany("INSERT INTO history (description, changes, undone, created_at) "
                       "VALUES (?, ?, ?, 'then')",
                       [(d, json.dumps(ch), u) for d, ch, u in rows])


@pytest.mark.parametrize("column", [False, True])
def test_an_old_first_clustering_with_given_parameters_is_never_undone(tmp_path, column):
    """``curator pipeline --eps`` (or ``--auto``) once recorded a run's first clustering as
    "cluster: set parameters" from no parameters at all: undo passed "automatic
    parameters" by but took every class's parameters away there."""
    path = tmp_path / "c.sqlite"
    first = [["class_params", 0, None, [0.5, 5]], ["class_params", 1, None, [0.6, 5]]]
    _old_store(path, {0: [0.5, 5], 1: [0.6, 5]},
               [("cluster: set parameters", first, 0),
                ("drop 1 sample(s)", [["overrides", 3, None, "drop"]], 0)],
               {3: "drop"}, column)
    store = CurationStore(path)
    assert [h["pipeline"] for h in store.history()] == [False, True]
    assert store.undo() == "drop 1 sample(s)" and store.overrides() == {}
    assert not store.can_undo() and store.undo() is None
    assert store.class_params() == {0: (0.5, 5), 1: (0.6, 5)}


def test_an_old_undone_first_clustering_is_applied_again(tmp_path):
    """A store where "automatic parameters" was undone, and a decision before it: the
    clustering comes back when the store is opened (redo passes the pipeline's rows by),
    and the decision can still be redone."""
    path = tmp_path / "c.sqlite"
    _old_store(path, {}, [
        ("automatic parameters", [["class_params", 0, None, [0.5, 5]],
                                  ["class_params", 1, None, [0.6, 5]]], 1),
        ("drop 1 sample(s)", [["overrides", 3, None, "drop"]], 1)])
    store = CurationStore(path)
    assert store.class_params() == {0: (0.5, 5), 1: (0.6, 5)}
    assert [(h["undone"], h["pipeline"]) for h in store.history()] == [(True, False),
                                                                        (False, True)]
    assert store.revision() == 8  # the parameters changed: views cached by revision redo
    assert not store.can_undo() and store.can_redo()
    assert store.redo() == "drop 1 sample(s)" and store.overrides() == {3: "drop"}
    assert CurationStore(path).class_params() == store.class_params()  # marked once


def _unchanged(store: CurationStore, step) -> None:  # noqa: ANN001 - store.undo or .redo
    """``step()`` does nothing and writes nothing: revision, history and what undo and
    redo offer stay as they were."""
    before = (store.revision(), store.history(), store.can_undo(), store.can_redo())
    assert step() is None
    assert (store.revision(), store.history(), store.can_undo(), store.can_redo()) == before


def test_an_undo_with_only_replaced_decisions_left_writes_nothing(tmp_path):
    """A decision whose only change a later pipeline step replaced (an eps measured on the
    previous map): undo has nothing to take back, and says so without marking it undone
    (the Curate page's Undo and Redo then flip-flopped)."""
    store = CurationStore(tmp_path / "c.sqlite")
    store.set_class_params({0: (0.5, 5)}, pipeline=True)
    store.set_class_params({0: (0.7, 5)})
    store.set_class_params({0: (0.9, 5)}, pipeline=True)  # a new map
    assert not store.can_undo() and not store.can_redo()
    _unchanged(store, store.undo)
    with pytest.raises(InputError, match="nothing to undo: no decision is left"):
        store.undo_or_refuse()
    assert store.class_params() == {0: (0.9, 5)}


def test_a_redo_with_only_replaced_decisions_left_writes_nothing(tmp_path):
    store = CurationStore(tmp_path / "c.sqlite")
    store.set_class_params({0: (0.5, 5)}, pipeline=True)
    store.set_class_params({0: (0.7, 5)})
    assert store.undo() is not None and store.can_redo()
    store.set_class_params({0: (0.9, 5)}, pipeline=True)  # a new map: redo has nothing
    assert not store.can_redo() and not store.can_undo()
    _unchanged(store, store.redo)
    with pytest.raises(InputError, match="nothing to redo"):
        store.undo_or_refuse(redo=True)
    # A decision undone with the replaced one is still redone; the replaced one is
    # then passed by.
    store.set_overrides([2], "drop")
    store.set_class_params({0: (1.1, 5)})
    assert store.undo() and store.undo() and store.overrides() == {}
    store.set_class_params({0: (1.3, 5)}, pipeline=True)
    assert store.can_redo() and store.redo() == "drop 1 sample(s)"
    assert not store.can_redo() and store.class_params() == {0: (1.3, 5)}
