"""The run's images: ``/thumb/<run>/<index>.png`` (a sample's thumbnail),
``/testthumb/<run>/<index>.png`` (a test-split image, for the side-by-side view of a leak)
and ``/background/<run>.png`` (the class view's backdrop of every point).

Each PNG is made once and kept in the files cache (app/caching.py) under the mtime of the
file it comes from, so a run made again is drawn again. The run comes through the ``run``
converter (app/url_converters.py), inside the runs root; a sample's own image file is read
only when it lies inside its dataset's folder.
"""

from __future__ import annotations

import io
import threading
from pathlib import Path

import numpy as np
from cachetools import LRUCache, cached
from flask import Response, abort, current_app
from PIL import Image

from app.caching import cached_file
from app.curate.backdrop import render_png
from app.responses import png_response, subtree_blueprint
from worker.pipeline.sources.datasets import Dataset
from worker.pipeline.sources.ingest import MAX_THUMB, open_run_dataset, thumbnail
from worker.pipeline.storage.rundir import RunDir, load_npy

images = subtree_blueprint("images", __name__, "/thumb", "/testthumb", "/background")

THUMB_MAX_AGE = 86400  # seconds a browser keeps a thumbnail: they never change for a run
BACKGROUND_MAX_AGE = 3600
# What a sample without an image shows: a features: run made without image paths.
NO_IMAGE = (200, 200, 200)


@cached_file("thumbnail")
def thumbnail_png(run_path: str, index: int, mtime: int, name: str = "thumbnails.npy") -> bytes:
    """PNG bytes of one thumbnail (cached: thumbnails never change for a run); ``name``:
    ``test_thumbnails.npy`` for the test split's images (findings/testsplit.py)."""
    thumbs = load_npy(Path(run_path) / name, "ingest", mmap=True)
    if not 0 <= index < len(thumbs):
        abort(404)
    buf = io.BytesIO()
    Image.fromarray(np.asarray(thumbs[index])).save(buf, format="PNG")
    return buf.getvalue()


# The last few runs' datasets, read once per mtime of their samples.csv; the condition
# makes a request for a dataset another request is opening wait for it.
@cached(LRUCache(maxsize=4), condition=threading.Condition())
def _run_dataset(run_path: str, mtime: int) -> Dataset:
    """The run's dataset (its samples table read once per ``mtime`` of samples.csv)."""
    return open_run_dataset(RunDir(Path(run_path)))


@cached_file("image")
def image_png(run_path: str, index: int, mtime: int) -> bytes:
    """PNG bytes of one sample's thumbnail, decoded from its image file: for runs made from
    a features file, which have no thumbnails.npy. The file must lie inside the dataset's
    folder (the features file's); a sample without one gets a plain grey square."""
    ds = _run_dataset(run_path, mtime)
    if not 0 <= index < len(ds.samples):
        abort(404)
    img = Image.new("RGB", (MAX_THUMB, MAX_THUMB), NO_IMAGE)
    path = ds.file_path(index)
    if path is not None and path.resolve().is_relative_to(ds.spec.root.resolve()):
        try:
            img = Image.fromarray(thumbnail(ds.load_image(index), MAX_THUMB))
        except Exception:  # noqa: BLE001 - a missing or corrupt file shows as no image
            current_app.logger.warning("cannot read the image of sample %d of %s", index,
                                       run_path)
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


@cached_file("background")
def background_png(run_path: str, mtimes: tuple[int, int]) -> bytes:
    """The class view's backdrop of every point, tinted by class (cached per embedding
    and samples table: ``mtimes`` are theirs)."""
    run = RunDir(Path(run_path))
    samples = run.read_samples()
    return render_png(run.load_embedding(), samples.labels, samples.classes)


@images.get("/thumb/<run:run>/<int:index>.png")
def thumb(run: RunDir, index: int) -> Response:
    if run.thumbnails.is_file():
        png = thumbnail_png(str(run.path), index, run.thumbnails.stat().st_mtime_ns)
    elif run.exists():  # a features: run: its images, if it has paths, read on demand
        png = image_png(str(run.path), index, run.samples_csv.stat().st_mtime_ns)
    else:
        abort(404)
    return png_response(png, THUMB_MAX_AGE)


@images.get("/testthumb/<run:run>/<int:index>.png")
def test_thumb(run: RunDir, index: int) -> Response:
    path = run.path / "test_thumbnails.npy"
    if not path.is_file():
        abort(404)
    png = thumbnail_png(str(run.path), index, path.stat().st_mtime_ns, path.name)
    return png_response(png, THUMB_MAX_AGE)


@images.get("/background/<run:run>.png")
def background(run: RunDir) -> Response:
    if not run.embedding.is_file():
        abort(404)
    png = background_png(str(run.path), (run.embedding.stat().st_mtime_ns,
                                         run.samples_csv.stat().st_mtime_ns))
    return png_response(png, BACKGROUND_MAX_AGE)
