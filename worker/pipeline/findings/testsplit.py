"""The dataset's test split, through the same backbone as the train samples.

A run made from the ``train`` split of a dataset that has a ``test`` split (``folder:``
with ``train/`` and ``test/``, or ``cifar10:``) gets the test images' features for the
``leak`` kind: decoded once into ``test_thumbnails.npy`` (the hover and side-by-side
views read them), run through the run's own model, weights, input size and precision,
and cached in ``cache/`` under a key of the train features' key and the test images.
The test images are listed in ``test_samples.csv`` (index, path, label).
"""

from __future__ import annotations

import csv
import hashlib
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from cachetools import LRUCache, cached

from worker.pipeline.features.feature_options import FeatureOptions
from worker.pipeline.progress import ProgressFn, report
from worker.pipeline.sources.datasets import (
    Dataset,
    DatasetSpec,
    has_split,
    open_dataset,
    split_spec,
)
from worker.pipeline.sources.ingest import DatasetOptions, decode_thumbnails
from worker.pipeline.storage.rundir import RunDir, atomic_path, save_npy, step_record


@dataclass
class TestSplit:
    """The test images: paths relative to the dataset folder, labels as the run's class
    codes (-1 for a class the run does not have), features (M, D) float32."""

    paths: list[str]
    labels: np.ndarray
    features: np.ndarray
    key: str


def test_paths_csv(run: RunDir) -> Path:
    return run.path / "test_samples.csv"


def test_thumbnails(run: RunDir) -> Path:
    return run.path / "test_thumbnails.npy"


def test_spec(run: RunDir) -> DatasetSpec | None:
    """The test split of the run's dataset, or None when there is none (or the run is
    itself of the test split)."""
    spec = DatasetOptions.from_json(run.read_meta()["dataset"]).spec
    if spec.split != "train" or spec.kind not in ("folder", "cifar10"):
        return None
    return split_spec(spec, "test") if has_split(spec, "test") else None


def read_test_paths(run: RunDir) -> list[str]:
    """``test_samples.csv``'s paths, in index order ([] when the run has none); read once
    per version of the file (the app asks on every focused row)."""
    path = test_paths_csv(run)
    if not path.is_file():
        return []
    return list(_read_paths(str(path), path.stat().st_mtime_ns))


# The paths of the last few test splits read, by file and mtime (a rewrite renames a new
# file into place, so a changed split is read again).
@cached(LRUCache(maxsize=8), lock=threading.Lock())
def _read_paths(path: str, mtime: int) -> tuple[str, ...]:
    with open(path, newline="", encoding="utf-8") as fh:
        return tuple(r["path"] for r in csv.DictReader(fh))


def load_test_split(run: RunDir, progress: ProgressFn | None = None) -> TestSplit | None:
    """The test split's images and features (computed once, then cached), or None when
    the dataset has no test split or the features cannot be made again the same way (a
    fine-tuned network is not kept; ``pixels`` and ``features:`` have no backbone)."""
    spec = test_spec(run)
    meta = run.read_meta()
    done = step_record(meta, "extract")
    if spec is None or done.get("finetune_epochs") or done.get("model") in (None, "pixels",
                                                                              "features"):
        return None
    ds = open_dataset(spec)
    codes = {c: k for k, c in enumerate(meta["classes"])}
    names = ds.samples.classes
    labels = np.asarray([codes.get(names[c], -1) for c in ds.samples.labels], np.int64)
    h = hashlib.sha256(str(done.get("cache_key")).encode())
    h.update(str(spec).encode())
    h.update("\n".join(ds.samples.paths).encode())
    key = h.hexdigest()[:16]
    cached = run.cache / f"test-features-{key}.npy"
    if not cached.is_file() or not test_thumbnails(run).is_file():
        feats, ok = _compute(run, ds, done, progress)
        save_npy(cached, feats)
        np.save(run.cache / f"test-readable-{key}.npy", ok)
    ok = np.load(run.cache / f"test-readable-{key}.npy") \
        if (run.cache / f"test-readable-{key}.npy").is_file() else np.ones(len(labels), bool)
    paths = [p for p, good in zip(ds.samples.paths, ok.tolist(), strict=True) if good]
    labels = labels[ok]
    if read_test_paths(run) != paths:
        with atomic_path(test_paths_csv(run)) as tmp, open(tmp, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["index", "path", "label"])
            w.writerows([i, p, meta["classes"][c] if c >= 0 else ""]
                        for i, (p, c) in enumerate(zip(paths, labels.tolist(), strict=True)))
    return TestSplit(paths, labels, run.load_array(cached, "cluster", mmap=True), key)


def _compute(run: RunDir, ds: Dataset, done: dict, progress: ProgressFn | None
             ) -> tuple[np.ndarray, np.ndarray]:
    """Decode the test images into ``test_thumbnails.npy`` and run them through the run's
    network. Returns (features of the readable images, which images were readable)."""
    from worker.pipeline.features.extraction import network_features

    size = run.load_array(run.thumbnails, "ingest", mmap=True).shape[1]
    # Decoded once, as ingest decodes (sources/ingest.decode_thumbnails), and where the
    # thumbnails are the images, the network reads them and nothing is decoded again.
    d = decode_thumbnails(ds, size, test_thumbnails(run), progress,
                          what="findings: test split images")
    ok = d.ok
    if not ok.any():
        save_npy(test_thumbnails(run), np.zeros((0, size, size, 3), np.uint8))
    thumbs = run.load_array(test_thumbnails(run), "cluster", mmap=True)
    exact = bool(d.exact[ok].all())
    report(progress, 0, int(ok.sum()), "findings: test split features")
    ds = Dataset(ds.spec, ds.samples.subset(ok), None if ds.arrays is None else ds.arrays[ok])
    opts = FeatureOptions(model=done["model"], weights=Path(done["weights"])
                          if done.get("weights") else None,
                          precision=done.get("precision") or "auto",
                          input_size=done.get("input_size"))
    native = run.read_meta().get("native_size", size)
    feats = network_features(ds, thumbs if exact else None, opts, native, progress)
    return feats, ok
