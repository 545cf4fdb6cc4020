"""Label sources and label noise.

- A labels CSV (``path,label``, or another ``--label-column``) overrides a dataset's
  folder or batch labels (:func:`apply_labels_csv`), so noisy label sets such as
  CIFAR-10N can be studied.
- A ``features:FILE.npy`` dataset takes all its labels from a CSV of N rows in the same
  order (:func:`read_features_labels`).
- Injected noise (:func:`inject_noise`) flips a share of the labels, symmetric or
  between classes people confuse, and records the true labels so detection can be scored.
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from worker.pipeline.choices import NOISE_KINDS
from worker.pipeline.errors import InputError
from worker.pipeline.number_params import check
from worker.pipeline.sources.feature_values import MIN_MAP_SAMPLES, check_feature_values
from worker.pipeline.storage.rundir import RunDir
from worker.pipeline.storage.sample_table import SampleTable

# --------------------------------------------------------------------------- labels


_COLUMN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_ .-]{0,39}")


@contextmanager
def _label_rows(csv_path: Path) -> Iterator[csv.DictReader]:
    """A DictReader over a labels CSV (UTF-8, with or without a BOM; header names
    stripped), turning unreadable text into one InputError."""
    if not csv_path.is_file():
        raise InputError(f"labels CSV not found: {csv_path}")
    try:
        with open(csv_path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.DictReader(fh)
            reader.fieldnames = [f.strip() for f in reader.fieldnames or []]
            yield reader
    except UnicodeDecodeError:
        raise InputError(f"labels CSV {csv_path.name} is not UTF-8 text: save it as UTF-8 "
                         "(CSV UTF-8 in Excel)") from None
    except csv.Error as exc:
        raise InputError(f"labels CSV {csv_path.name} is not a valid CSV file "
                         f"({str(exc).split(':')[0]})") from None


def _columns_text(fields: list[str]) -> str:
    """The columns a CSV has, for an error message; named only when they look like column
    names: a file that is not a labels CSV must not have its first line echoed."""
    if fields and len(fields) <= 20 and all(_COLUMN_NAME.fullmatch(f) for f in fields):
        return ", ".join(fields)
    return f"{len(fields)} unnamed" if fields else "none"


def read_label_csv(csv_path: Path, column: str) -> dict[str, str]:
    """Map ``path`` → label from a CSV with a ``path`` column and ``column``.

    UTF-8 with or without a byte-order mark (Excel writes one). A row without a path or a
    label, or two rows giving one path different labels, is an error naming the lines;
    rows that repeat a path with the same label are fine. Messages never quote the file
    beyond column names and paths.
    """
    out: dict[str, str] = {}
    first_line: dict[str, int] = {}
    with _label_rows(csv_path) as reader:
        fields = reader.fieldnames
        if "path" not in fields or column not in fields:
            raise InputError(f"labels CSV {csv_path.name} needs columns 'path' and "
                             f"{column!r}; it has {_columns_text(fields)} "
                             "(pick one with --label-column)")
        for row in reader:
            line = reader.line_num
            path, label = (row.get("path") or "").strip(), (row.get(column) or "").strip()
            if not path or not label:
                raise InputError(f"labels CSV {csv_path.name} line {line} has no "
                                 f"{'path' if not path else repr(column)} value")
            if path in out and out[path] != label:
                raise InputError(f"labels CSV {csv_path.name} gives {path!r} two labels, "
                                 f"on lines {first_line[path]} and {line}: keep one")
            out[path] = label
            first_line.setdefault(path, line)
    return out


def _apply_label_map(samples: SampleTable, mapping: dict[str, str], csv_name: str,
                     column: str) -> np.ndarray:
    """Codes for every sample from ``mapping``; samples the CSV omits get -1."""
    index = {p: i for i, p in enumerate(samples.paths)}
    unknown_paths = [p for p in mapping if p not in index]
    if unknown_paths:
        raise InputError(
            f"{csv_name} names {len(unknown_paths)} paths not in the dataset (first: "
            f"{unknown_paths[0]!r}); paths must be relative to the dataset DIR"
        )
    codes = {name: k for k, name in enumerate(samples.classes)}
    unknown_classes = sorted({v for v in mapping.values() if v not in codes})
    if unknown_classes:
        raise InputError(
            f"{csv_name} column {column!r} has unknown classes {unknown_classes[:5]}; "
            f"known classes are {samples.classes}"
        )
    out = np.full(len(samples), -1, dtype=np.int64)
    for path, name in mapping.items():
        out[index[path]] = codes[name]
    return out


def apply_labels_csv(samples: SampleTable, csv_path: Path, label_column: str = "label",
                     true_label_column: str | None = None) -> SampleTable:
    """Override labels (and optionally set true labels) from a ``path,label`` CSV.

    Samples the CSV does not mention keep their folder label and an unknown true label.
    """
    labels = _apply_label_map(samples, read_label_csv(csv_path, label_column),
                              csv_path.name, label_column)
    new_labels = np.where(labels >= 0, labels, samples.labels)
    true = samples.true_labels
    if true_label_column:
        true = _apply_label_map(samples, read_label_csv(csv_path, true_label_column),
                                csv_path.name, true_label_column)
    return SampleTable(samples.paths, new_labels, true, samples.classes)


def features_shape(file: Path) -> tuple[int, ...]:
    """The shape of a features file, read from its header (nothing is loaded)."""
    try:
        arr = np.load(file, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError):
        raise InputError(f"{file.name} is not a readable .npy array: save it with numpy.save "
                         "(no pickled objects)") from None
    if arr.ndim != 2 or arr.dtype not in (np.float16, np.float32) or not len(arr):
        raise InputError(f"{file.name} must be a non-empty N×D float16 or float32 array, got "
                         f"{arr.dtype} of shape {arr.shape}")
    return arr.shape


def features_file_key(file: Path) -> str:
    """The key a run records for the ``features:`` file it copied (its path, size and
    mtime): the same key is the same file, checked when it was copied."""
    stat = file.stat()
    return hashlib.sha256(json.dumps([str(file), stat.st_size, stat.st_mtime_ns]).encode()
                          ).hexdigest()[:16]


def has_features_copy(run: RunDir, file: Path) -> bool:
    """Whether ``run`` holds its checked copy of this very features ``file``: its extract
    step recorded the file's :func:`features_file_key` and its ``features.npy`` is there.
    The extract step then skips the copy, and the door skips the check (a resume does not
    read the file again). A run.json that cannot be read says no: the check then runs,
    and whoever opens the run names the damage."""
    if not run.run_json.is_file() or not run.features.is_file():
        return False
    try:
        done = run.step("extract")
    except InputError:
        return False
    return isinstance(done, dict) and done.get("cache_key") == features_file_key(file)


def check_features_file(file: Path, run: RunDir | None = None) -> None:
    """A ``features:`` file's header (:func:`features_shape`) and values
    (:func:`~.feature_values.check_feature_values`), read block by block: the check every
    door makes before a run's folder is claimed.

    Parameters
    ----------
    file : the ``.npy`` file, shape (N, D), float16 or float32
    run : the run the file is for, when there is one: its values are not read again
        when the run holds its checked copy of this very file (:func:`has_features_copy`)

    Raises
    ------
    InputError
        Not a readable N×D float16/float32 array, or values the map cannot take.
    """
    features_shape(file)
    if run is not None and has_features_copy(run, file):
        return
    check_feature_values(np.load(file, mmap_mode="r"), f"features file {file.name}")


def check_counts(labels: np.ndarray, what: str, min_classes: int = 2) -> None:
    """Refuse a sample table the pipeline cannot curate: fewer than ``MIN_MAP_SAMPLES``
    samples (the map needs them, whatever the dataset), or fewer than ``min_classes``
    classes.

    Parameters
    ----------
    labels : ndarray of int, shape (N,): class codes
    what : how the message names the samples' source (``dataset folder:/data``)
    min_classes : 2 where the labels are the user's to give (``tc.from_arrays``'s labels;
        a labels CSV refuses one class itself); 1 for a dataset's own classes, for a
        one-class image folder makes a run (its outliers and duplicates are worth finding)

    Raises
    ------
    InputError
    """
    if len(labels) < MIN_MAP_SAMPLES:
        raise InputError(f"{what} gives {len(labels)} sample(s): the map needs at least "
                         f"{MIN_MAP_SAMPLES}")
    if len(np.unique(labels)) < min_classes:
        raise InputError(f"{what} names one class: curation needs two or more")


def _class_order(names: set[str]) -> list[str]:
    """Class names in numeric order when they are all integers, else alphabetical."""
    if all(n.lstrip("-").isdigit() for n in names):
        return sorted(names, key=int)
    return sorted(names)


def read_features_labels(csv_path: Path | None, n_rows: int, label_column: str = "label",
                         true_label_column: str | None = None) -> tuple[SampleTable, bool]:
    """The sample table of a ``features:`` dataset: one CSV row per feature row, in order.

    The CSV needs ``label_column``; a ``path`` column (image paths, relative to the
    features file's folder) and ``true_label_column`` are optional. Without paths, samples
    get virtual paths ``row/0000042``. Streams the file: 1.28M rows take a few seconds.

    Returns
    -------
    (samples, has_images)
    """
    if csv_path is None:
        raise InputError("a features: dataset needs --labels CSV with one row per feature row")
    paths: list[str] = []
    given: list[str] = []
    true: list[str] = []
    with _label_rows(csv_path) as reader:
        fields = reader.fieldnames
        wanted = [label_column] + ([true_label_column] if true_label_column else [])
        missing = [c for c in wanted if c not in fields]
        if missing:
            raise InputError(f"labels CSV {csv_path.name} needs the column {missing[0]!r}; it "
                             f"has {_columns_text(fields)} (pick one with --label-column / "
                             "--true-label-column)")
        has_paths = "path" in fields
        for row in reader:
            label = (row.get(label_column) or "").strip()
            if not label:
                raise InputError(f"labels CSV {csv_path.name} line {reader.line_num} has "
                                 f"no {label_column!r} value")
            given.append(label)
            if has_paths:
                path = (row.get("path") or "").strip()
                if not path:
                    raise InputError(f"labels CSV {csv_path.name} line {reader.line_num} "
                                     "has no 'path' value")
                paths.append(path)
            if true_label_column:
                true.append((row.get(true_label_column) or "").strip())
    if len(given) != n_rows:
        raise InputError(f"labels CSV {csv_path.name} has {len(given)} rows and the features "
                         f"file {n_rows}: give one row per feature row, in the same order")
    classes = _class_order(set(given))
    if len(classes) < 2:
        raise InputError(f"labels CSV {csv_path.name} names one class: curation needs two or "
                         "more")
    unknown = sorted({t for t in true if t and t not in classes})
    if unknown:
        raise InputError(f"labels CSV {csv_path.name} column {true_label_column!r} has classes "
                         f"that no row is labelled with: {unknown[:5]}")
    codes = {name: k for k, name in enumerate(classes)}
    labels = np.fromiter((codes[g] for g in given), np.int64, n_rows)
    true_codes = np.fromiter((codes[t] if t else -1 for t in true), np.int64, len(true)) \
        if true else np.full(n_rows, -1, np.int64)
    if not has_paths:
        paths = [f"row/{i:07d}" for i in range(n_rows)]
    return SampleTable(paths, labels, true_codes, classes), has_paths


# Pairs that people confuse, for datasets with these class names (CIFAR-10): each class
# flips to its partner. Other datasets pair classes in code order (0↔1, 2↔3, …).
HUMAN_PAIRS = (("cat", "dog"), ("automobile", "truck"), ("airplane", "ship"),
               ("deer", "horse"), ("bird", "frog"))


def noise_partners(classes: list[str]) -> np.ndarray:
    """The one class each class flips to under ``pairs`` noise, shape (C,).

    Classes named in ``HUMAN_PAIRS`` swap with their partner; the rest are paired in code
    order; with an odd count the last one left flips to the class before it.
    """
    partner = np.full(len(classes), -1, dtype=np.int64)
    for a, b in HUMAN_PAIRS:
        if a in classes and b in classes:
            partner[classes.index(a)], partner[classes.index(b)] = (classes.index(b),
                                                                    classes.index(a))
    rest = np.flatnonzero(partner < 0)
    for a, b in zip(rest[::2], rest[1::2], strict=False):
        partner[a], partner[b] = b, a
    if len(rest) % 2:
        last = rest[-1]
        partner[last] = last - 1 if last > 0 else 1
    return partner


def inject_noise(samples: SampleTable, rate: float, seed: int,
                 kind: str = "symmetric") -> SampleTable:
    """Flip ``round(rate·N)`` labels, chosen at random (seeded), to another class.

    ``symmetric``: the new class is uniform over the others. ``pairs``: each class flips to
    one fixed partner (:func:`noise_partners`), the way people confuse cats and dogs.
    True labels become the labels before flipping, unless true labels were already known.
    """
    rate = check("inject_noise", rate)
    if kind not in NOISE_KINDS:
        raise InputError(f"unknown --noise-kind {kind!r}: use one of {', '.join(NOISE_KINDS)}")
    n_classes = len(samples.classes)
    if n_classes < 2:
        raise InputError("label noise needs at least two classes")
    rng = np.random.default_rng(seed)
    n_flip = int(round(rate * len(samples)))
    flip = rng.choice(len(samples), size=n_flip, replace=False)
    labels = samples.labels.copy()
    if kind == "pairs":
        labels[flip] = noise_partners(samples.classes)[labels[flip]]
    else:
        offsets = rng.integers(1, n_classes, size=n_flip)
        labels[flip] = (labels[flip] + offsets) % n_classes
    true = samples.true_labels if samples.has_truth else samples.labels.copy()
    return SampleTable(samples.paths, labels, true, samples.classes)
