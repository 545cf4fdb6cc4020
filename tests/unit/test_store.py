"""The curation store: persistence, undo/redo, and no lost updates across processes."""

from __future__ import annotations

import multiprocessing as mp

import pytest

from worker.pipeline.errors import InputError
from worker.pipeline.storage.curation_store import CurationStore


def test_overrides_persist_and_undo_redo(tmp_path):
    store = CurationStore(tmp_path / "c.sqlite")
    assert store.set_overrides([3, 1], "drop") == 2
    assert store.set_overrides([1], "keep") == 1
    assert store.set_overrides([1], "keep") == 0  # no change, no history entry
    store.set_class_params({0: (0.5, 5)})
    reopened = CurationStore(tmp_path / "c.sqlite")  # a server restart
    assert reopened.overrides() == {1: "keep", 3: "drop"}
    assert reopened.undo() is not None and reopened.class_params() == {}
    assert reopened.undo() is not None and reopened.overrides() == {1: "drop", 3: "drop"}
    assert reopened.redo() is not None and reopened.overrides() == {1: "keep", 3: "drop"}
    reopened.set_overrides([3], None)  # a new action clears the redo stack
    assert reopened.redo() is None and reopened.overrides() == {1: "keep"}
    while reopened.undo():
        pass
    assert reopened.overrides() == {} and not reopened.can_undo()


def test_params_survive_and_bad_values_are_refused(tmp_path):
    store = CurationStore(tmp_path / "c.sqlite")
    with pytest.raises(InputError):
        store.set_class_params({0: (0.0, 5)})
    with pytest.raises(InputError):
        store.set_class_params({0: (1.0, 0)})
    with pytest.raises(InputError):
        store.set_overrides([1], "maybe")
    assert store.class_params() == {} and store.revision() == 0


def _writer(path: str, start: int, count: int, barrier) -> None:
    store = CurationStore(path)
    barrier.wait()
    for i in range(start, start + count):
        store.set_overrides([i], "drop" if i % 2 else "keep")


def test_two_processes_writing_at_once_lose_nothing(tmp_path):
    path = str(tmp_path / "c.sqlite")
    CurationStore(path)
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=_writer, args=(path, s, 150, barrier)) for s in (0, 150)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    store = CurationStore(path)
    assert len(store.overrides()) == 300
    assert len(store.history(limit=1000)) == 300
    assert store.revision() == 300


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
