"""Every in-process cache of the app on a copy of the digits run: a repeat is a hit, it
holds at most its size (the least recently used entry goes first), and a run whose files
change is read again (each key holds the mtimes of the files its value comes from; the
pipeline replaces a file by renaming a new one into place)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from app import caching
from app import run_data as run_data_module
from app.curate import page_actions
from app.image_routes import _run_dataset, background_png, image_png, thumbnail_png
from app.run_data import cached_figure, class_labels, current_state, run_data
from worker.settings import Settings

pytestmark = pytest.mark.usefixtures("empty_caches")  # tests/conftest.py

HOST = {"Host": "127.0.0.1"}


def replace(path: Path, data: bytes | None = None) -> None:
    """Write ``path`` again as the pipeline does (a new file renamed into place), with an
    mtime a second later than the old one's."""
    old = path.stat().st_mtime_ns
    tmp = path.with_name(path.name + ".new")
    tmp.write_bytes(path.read_bytes() if data is None else data)
    os.utime(tmp, ns=(old + 10**9, old + 10**9))
    os.replace(tmp, path)


def fill(cache, n: int) -> None:
    """``n`` unrelated entries, each used after everything already in ``cache``."""
    for k in range(n):
        caching.keep(("filler", k), object(), cache)


def test_thumbnails_hit_evict_at_their_size_and_follow_the_run(fresh_run):
    from app.server import create_app

    client = create_app(Settings(runs_root=fresh_run.path.parent)).server.test_client()
    key = (str(fresh_run.path), 3, fresh_run.thumbnails.stat().st_mtime_ns)
    first = thumbnail_png(*key)
    assert thumbnail_png(*key) is first  # made once
    assert client.get("/thumb/digits/3.png", headers=HOST).data == first
    fill(caching.files, caching.files.maxsize)
    again = thumbnail_png(*key)
    assert again == first and again is not first  # evicted, so made again
    thumbs = np.load(fresh_run.thumbnails)
    thumbs[3] = 255 - thumbs[3]
    np.save(fresh_run.path / "swap.npy", thumbs)
    replace(fresh_run.thumbnails, (fresh_run.path / "swap.npy").read_bytes())
    assert client.get("/thumb/digits/3.png", headers=HOST).data != first  # the new pixels


def test_the_png_makers_share_the_files_cache_under_their_own_names(fresh_run):
    path = str(fresh_run.path)
    mtime = fresh_run.samples_csv.stat().st_mtime_ns
    mtimes = (fresh_run.embedding.stat().st_mtime_ns, mtime)
    made = (thumbnail_png(path, 3, fresh_run.thumbnails.stat().st_mtime_ns),
            image_png(path, 3, mtime), background_png(path, mtimes))
    assert sorted(key[0] for key in caching.files) == ["background", "image", "thumbnail"]
    assert (thumbnail_png(path, 3, fresh_run.thumbnails.stat().st_mtime_ns),
            image_png(path, 3, mtime), background_png(path, mtimes)) == made
    assert len(caching.files) == 3


def test_the_backdrop_follows_the_embedding(fresh_run):
    from app.server import create_app

    client = create_app(Settings(runs_root=fresh_run.path.parent)).server.test_client()
    first = client.get("/background/digits.png", headers=HOST)
    assert first.status_code == 200 and first.mimetype == "image/png"
    emb = np.load(fresh_run.embedding)
    np.save(fresh_run.path / "swap.npy", emb[:, ::-1].copy())  # the map turned over
    replace(fresh_run.embedding, (fresh_run.path / "swap.npy").read_bytes())
    assert client.get("/background/digits.png", headers=HOST).data != first.data
    assert len(caching.files) == 2  # one per embedding


def test_run_datasets_hit_evict_at_their_size_and_follow_samples_csv(fresh_run):
    path = str(fresh_run.path)
    mtime = fresh_run.samples_csv.stat().st_mtime_ns
    first = _run_dataset(path, mtime)
    assert _run_dataset(path, mtime) is first
    for k in range(1, _run_dataset.cache.maxsize):
        _run_dataset(path, mtime + k)  # as if samples.csv had been rewritten k times
    assert _run_dataset(path, mtime) is first  # 4 kept: still there, and now the newest
    _run_dataset(path, mtime + 99)
    assert (path, mtime + 1) not in _run_dataset.cache  # the least recently used went
    replace(fresh_run.samples_csv)
    assert _run_dataset(path, fresh_run.samples_csv.stat().st_mtime_ns) is not first


def test_run_data_hits_evicts_at_its_size_and_follows_the_runs_files(fresh_run):
    root = fresh_run.path.parent
    data = run_data(root, "digits")
    assert run_data(root, "digits") is data
    replace(fresh_run.embedding)
    fresh = run_data(root, "digits")
    assert fresh is not data and fresh.stamp != data.stamp
    for k in range(run_data_module.RUNS_KEPT - 1):
        run_data_module._load(str(fresh_run.path), (*fresh.stamp, k))  # other versions
    assert run_data(root, "digits") is fresh  # the eighth: kept
    run_data_module._load(str(fresh_run.path), (*fresh.stamp, "ninth"))
    assert run_data(root, "digits") is fresh  # used just now: the least recent went
    assert (str(fresh_run.path), (*fresh.stamp, 0)) not in run_data_module._load.cache
    assert len(run_data_module._load.cache) == run_data_module.RUNS_KEPT


def test_states_hit_evict_at_their_size_and_follow_the_store(fresh_run):
    root = fresh_run.path.parent
    data = run_data(root, "digits")
    first = current_state(data)
    assert current_state(data) is first
    revision = page_actions.set_decision(root, "digits", 1, "drop")
    later = current_state(data)
    assert later.revision == revision and later is not first
    for k in range(2, 2 + run_data_module.STATES_KEPT):
        page_actions.set_decision(root, "digits", k, "drop")
        current_state(data)
    assert len(run_data_module._STATES) == run_data_module.STATES_KEPT
    assert (str(data.run.path), data.stamp, first.revision) not in run_data_module._STATES
    replace(fresh_run.embedding)
    moved = run_data(root, "digits")
    assert current_state(moved) is not current_state(data)  # a new stamp, a new state


def test_labels_hit_evict_at_their_size_and_follow_the_run(fresh_run):
    root = fresh_run.path.parent
    data = run_data(root, "digits")
    eps, ms = current_state(data).params[2]
    params = {2: (eps * 0.9, ms)}  # not what clusters.npy was made with: computed
    first = class_labels(data, params)[2]
    assert class_labels(data, params)[2] is first
    fill(caching.labels, caching.labels.maxsize)
    again = class_labels(data, params)[2]
    assert (again == first).all() and again is not first
    replace(fresh_run.embedding)
    assert class_labels(run_data(root, "digits"), params)[2] is not again


def test_figures_hit_evict_at_their_size_and_follow_the_run(fresh_run):
    root = fresh_run.path.parent
    built = []

    def figure(data, state) -> dict:
        return cached_figure(data, state, ("class", 0),
                             lambda: built.append(state.revision) or {"n": len(built)})

    data = run_data(root, "digits")
    state = current_state(data)
    assert figure(data, state) is figure(data, state) and len(built) == 1
    fill(caching.derived, caching.derived.maxsize)
    figure(data, state)
    assert len(built) == 2  # evicted, so built again
    page_actions.set_decision(root, "digits", 3, "drop")
    figure(data, current_state(data))
    assert len(built) == 3  # a new revision
    replace(fresh_run.embedding)
    moved = run_data(root, "digits")
    figure(moved, current_state(moved))
    assert len(built) == 4  # a new stamp
