"""The curation store loses no update when two processes write at once."""

from __future__ import annotations

import multiprocessing as mp

from worker.pipeline.storage.curation_store import CurationStore


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
