"""``tc.from_arrays``: a run from embeddings in memory, through ``--dataset features:``.

The arrays are checked, written into the run folder (``<run>/input/``: ``features.npy``,
``labels.csv`` and, with images, ``images/NNNNNNN.png`` or copies of the files given) in a
hidden temporary folder that is renamed into place only when complete, and then the run is
made exactly as
``curator pipeline --dataset features:<run>/input/features.npy --labels
<run>/input/labels.csv`` makes it (:func:`~tsne_curator.pipeline_call.run_in_process`).
Calling it again with the same arrays resumes the run; other arrays on the same folder are
refused.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from tsne_curator.options import expand_thresholds, keywords
from tsne_curator.pipeline_call import SHARDS, run_in_process
from tsne_curator.run_handle import Run
from worker.pipeline.errors import InputError
from worker.pipeline.sources.datasets import IMAGE_SUFFIXES
from worker.pipeline.sources.feature_values import check_feature_values
from worker.pipeline.sources.ingest import DatasetOptions, image_errors
from worker.pipeline.sources.labels import check_counts
from worker.pipeline.storage.rundir import RunDir
from worker.step_options import dataset_options

INPUT = "input"  # the run's folder of the arrays given
DIGEST = "digest.txt"  # what they were: a second call with other arrays is refused

# curator pipeline's options that a features: dataset does not take: its labels, model and
# images are the arrays given here.
NOT_FOR_ARRAYS = ("dataset", "split", "labels", "label_column", "true_label_column",
                  "inject_duplicates", "duplicate_strength", "duplicate_family",
                  "duplicate_across", "inject_outliers", "inject_leaks",
                  "outlier_sources", "model",
                  "input_size", "weights", "finetune", "batch_size", "device", "workers",
                  "precision", "decode")


def _ragged(features: Any) -> str | None:
    """Where rows of ``features`` (a sequence of rows) differ in length, in words, or None
    when they do not (or it is not a sequence of sized rows)."""
    try:
        lengths = [len(row) for row in features]
    except TypeError:
        return None
    bad = next((i for i, n in enumerate(lengths) if n != lengths[0]), None)
    return None if bad is None else \
        f"row {bad} has {lengths[bad]} values and row 0 {lengths[0]}"


def check_features(features: Any) -> np.ndarray:
    """``features`` as an (N, D) float32 array (float16 stays float16).

    Raises
    ------
    InputError
        Not a 2-D array of numbers (rows of unequal length included), empty, or values
        the map cannot take (:mod:`~worker.pipeline.sources.feature_values`: NaN or inf,
        beyond float32 or too large, rows all alike), checked before the cast, so that a
        float64 value that float32 cannot hold is named as such, not as inf.
    """
    try:
        x = np.asarray(features)
    except ValueError as exc:  # numpy refuses rows of unequal length ("inhomogeneous")
        where = _ragged(features)
        raise InputError(f"features must be N rows of D numbers each: {where or exc}") \
            from None
    if x.dtype == object and (where := _ragged(features)):  # numpy < 1.24 made objects
        raise InputError(f"features must be N rows of D numbers each: {where}")
    if x.ndim != 2 or not x.size:
        raise InputError(f"features must be a non-empty N×D array, got shape {x.shape}")
    if x.dtype.kind not in "fiu":
        raise InputError(f"features must be numbers, got dtype {x.dtype}")
    check_feature_values(x)
    return x if x.dtype == np.float16 else x.astype(np.float32)


def _check_names(class_names: Sequence[str] | None) -> list[str] | None:
    if class_names is None:
        return None
    names = [str(c) for c in class_names]
    if len(set(names)) != len(names) or not all(c and c.strip() == c for c in names):
        raise InputError("class_names must be distinct, non-empty names without surrounding "
                         "spaces")
    return names


def label_names(labels: Any, n: int, class_names: Sequence[str] | None = None) -> list[str]:
    """Each sample's class name, from N labels: whole numbers (indices into
    ``class_names`` when given, else the numbers as names) or text.

    Raises
    ------
    InputError
        A count other than ``n``, labels that are neither whole numbers nor text, a number
        with no name, or fewer than two classes.
    """
    y = np.asarray(labels)
    if y.ndim != 1 or len(y) != n:
        raise InputError(f"labels must be {n} values (one per features row), got shape "
                         f"{y.shape}")
    class_names = _check_names(class_names)
    if y.dtype.kind in "iu":
        if (y < 0).any():
            raise InputError(f"labels must be ≥ 0, got {int(y.min())}")
        if class_names is None:
            names = [str(int(v)) for v in y.tolist()]
        elif int(y.max()) >= len(class_names):
            raise InputError(f"label {int(y.max())} has no name: class_names has "
                             f"{len(class_names)}")
        else:
            names = [class_names[int(v)] for v in y.tolist()]
    elif y.dtype.kind in "UO" and all(isinstance(v, str) for v in y.tolist()):
        names = y.tolist()
        bad = next((v for v in names if not v or v.strip() != v), None)
        if bad is not None:
            raise InputError(f"label {bad!r}: labels must be non-empty, without surrounding "
                             "spaces")
        if class_names is not None and set(names) - set(class_names):
            raise InputError(f"labels {sorted(set(names) - set(class_names))[:5]} are not in "
                             "class_names")
    else:
        raise InputError(f"labels must be whole numbers or text, got dtype {y.dtype} (cast "
                         "float labels with .astype(int))")
    check_counts(np.unique(names, return_inverse=True)[1], "the labels argument")
    return names


def check_images(images: Any, n: int) -> np.ndarray | list[Path] | None:
    """``images`` as (N, H, W) or (N, H, W, 3) uint8 pixels, as N image files, or None.

    Raises
    ------
    InputError
        Another shape or dtype, a count other than ``n``, a path that is not an image
        file (by its suffix, as image folders are read), or a file that does not decode
        (as ingest decodes a folder's images: a run's images are all readable).
    """
    if images is None:
        return None
    if isinstance(images, (list, tuple)) and images and \
            all(isinstance(p, (str, os.PathLike)) for p in images):
        return _image_files(images, n)
    x = np.asarray(images)
    if x.dtype.kind in "UO" and x.ndim == 1:
        return _image_files(x.tolist(), n)
    if x.dtype != np.uint8 or x.ndim not in (3, 4) or (x.ndim == 4 and x.shape[3] != 3) \
            or len(x) != n or 0 in x.shape:
        raise InputError(f"images must be {n} uint8 pictures, shape ({n}, H, W) or "
                         f"({n}, H, W, 3), or {n} image file paths, got {x.dtype} of "
                         f"shape {x.shape}")
    return x


def _image_files(paths: Sequence[Any], n: int) -> list[Path]:
    if len(paths) != n:
        raise InputError(f"images must be {n} image file paths (one per features row), "
                         f"got {len(paths)}")
    files = [Path(p).expanduser() for p in paths]
    for k, f in enumerate(files):
        if f.suffix.lower() not in IMAGE_SUFFIXES:
            raise InputError(f"images[{k}] {f}: not an image file (use "
                             f"{', '.join(sorted(IMAGE_SUFFIXES))})")
        if not f.is_file():
            raise InputError(f"images[{k}] {f}: no such file")
    errors = image_errors(files)
    if errors:
        k = min(errors)
        raise InputError(f"images[{k}] {files[k]} is not a readable image ({errors[k]}; "
                         f"{len(errors)} file(s) are not): fix or drop them first")
    return files


def _image_name(i: int, pixels: np.ndarray | list[Path]) -> str:
    """Sample ``i``'s file in ``<run>/input/images/``: a PNG of given pixels, or a copy
    of a given file under its own suffix."""
    suffix = pixels[i].suffix.lower() if isinstance(pixels, list) else ".png"
    return f"images/{i:07d}{suffix}"


def _labels_csv(names: list[str], pixels: np.ndarray | list[Path] | None) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["label"] if pixels is None else ["label", "path"])
    for i, name in enumerate(names):
        w.writerow([name] if pixels is None else [name, _image_name(i, pixels)])
    return buf.getvalue()


def _digest(features: np.ndarray, labels_csv: str,
            images: np.ndarray | list[Path] | None) -> str:
    """What the arrays are. Image files count by path, size and modification time: a
    second call on the same files resumes without reading them all again."""
    h = hashlib.sha256(f"{features.dtype}{features.shape}".encode())
    h.update(np.ascontiguousarray(features).data)
    h.update(labels_csv.encode())
    if isinstance(images, list):
        for f in images:
            st = f.stat()
            h.update(f"{f.resolve()}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    elif images is not None:
        h.update(f"{images.shape}".encode())
        h.update(np.ascontiguousarray(images).data)
    return h.hexdigest()


def _check_folder(run: RunDir, digest: str) -> bool:
    """Whether ``run`` already holds these arrays (True), or holds nothing of ours yet.

    Raises
    ------
    InputError
        The folder holds other arrays, or a run made from another dataset.
    """
    stamp = run.path / INPUT / DIGEST
    if stamp.is_file():
        if stamp.read_text().strip() == digest:
            return True
        raise InputError(f"{run.path} holds a run made from other arrays: give a new out "
                         "folder")
    if run.exists():
        raise InputError(f"{run.path} holds a run made from "
                         f"{run.read_meta().get('dataset', {}).get('spec')}: give a new out "
                         "folder")
    return False


def _write_inputs(run: RunDir, features: np.ndarray, labels_csv: str,
                  images: np.ndarray | list[Path] | None, digest: str) -> None:
    """Write ``<run>/input/`` unless it holds these arrays already: built in a hidden
    temporary folder, renamed into place when complete. Runs under the pipeline lock, so
    a temporary folder left by a stopped call is no one's and is removed."""
    if _check_folder(run, digest):
        return
    for old in run.path.glob(f".{INPUT}.*.tmp"):
        shutil.rmtree(old, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{INPUT}.", suffix=".tmp", dir=run.path))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)  # mkdtemp's 0700, to what the user's folders get
    try:
        np.save(tmp / "features.npy", features)
        (tmp / "labels.csv").write_text(labels_csv, encoding="utf-8")
        if images is not None:
            (tmp / "images").mkdir()
            for i, picture in enumerate(images):
                if isinstance(picture, Path):
                    shutil.copyfile(picture, tmp / _image_name(i, images))
                else:
                    Image.fromarray(picture).save(tmp / _image_name(i, images))
        (tmp / DIGEST).write_text(digest + "\n")
        os.rename(tmp, run.path / INPUT)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def from_arrays(features: Any, labels: Any, out: str | os.PathLike,
                class_names: Sequence[str] | None = None, images: Any = None,
                **options: Any) -> Run:
    """Make a run from embeddings in memory, as ``--dataset features:`` does from files.

    Parameters
    ----------
    features : array-like, shape (N, D)
        One row per sample, numbers without NaN or inf; stored as float32 (float16 stays
        float16).
    labels : array-like, shape (N,)
        Whole numbers (indices into ``class_names``, or names themselves when it is None)
        or class names as text.
    out : str or path
        The run folder: new or empty, or a run made from the same arrays (resumed).
    class_names : sequence of str, optional
        Names of the label numbers. Classes are listed as every ``features:`` run lists
        them: in numeric order when all names are whole numbers, else alphabetically.
    images : array-like, shape (N, H, W) or (N, H, W, 3), uint8, or N image paths, optional
        The pictures, for thumbnails, image-folder exports and retraining: pixels are
        written into the run as PNG files, files are copied into it (so the run stays
        whole when the originals move).
    **options
        ``curator pipeline``'s options that apply to a features file: ``inject_noise``,
        ``noise_kind``, ``seed``, ``pca_dims``, ``perplexity``, ``n_iter``,
        ``exaggeration_iter``, ``gradient``, ``eps``, ``min_samples``, ``rule``, the
        findings' cuts (``thresholds={...}`` or ``duplicate_threshold=...``).

    Returns
    -------
    Run

    Raises
    ------
    TypeError
        An unknown keyword (the message lists the valid ones).
    InputError
        Bad arrays or option values, in one line; nothing is written then.
    """
    v = keywords("pipeline", expand_thresholds(options), "from_arrays", fixed={"out": out},
                 exclude=NOT_FOR_ARRAYS, refused={"shards": SHARDS})
    x = check_features(features)
    names = label_names(labels, len(x), class_names)
    pixels = check_images(images, len(x))
    text = _labels_csv(names, pixels)
    digest = _digest(x, text, pixels)
    run = RunDir(v["out"])
    if run.path.is_dir():
        _check_folder(run, digest)  # before anything is written

    def dataset() -> DatasetOptions:
        _write_inputs(run, x, text, pixels, digest)
        v["dataset"] = f"features:{run.path.resolve() / INPUT / 'features.npy'}"
        v["labels"] = run.path.resolve() / INPUT / "labels.csv"
        return dataset_options(v, read=False)  # the arrays were checked above

    run_in_process(run, v, dataset)
    return Run(run.path)
