"""Dataset specs, label sources and label noise.

A *spec* names where images come from:

- ``digits``: scikit-learn's bundled 8×8 digits (1,797 images, the embedded default);
- ``cifar10:DIR``: the standard torchvision ``cifar-10-batches-py`` folder;
- ``folder:DIR``: one subfolder per class, or ``DIR/<split>/<class>/…`` when DIR holds split
  folders (``train/``, ``test/`` or both; see :func:`has_split`);
- ``features:FILE.npy``: bring your own embeddings, an (N, D) float16/float32 array, with a
  labels CSV of N rows in the same order (:func:`read_features_labels`). Image paths in
  its optional ``path`` column are relative to FILE's folder; without them the run has
  no images (no thumbnails, image-folder export or retraining).

Every sample gets a path relative to the spec's DIR. Array datasets (digits, CIFAR pickles)
get virtual paths such as ``train/00042`` so that labels CSVs and manifests can name them.
Labels are integer codes into ``classes``; an unknown true label is -1.
"""

from __future__ import annotations

import csv
import os
import pickle
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from PIL import Image

from worker.pipeline.errors import InputError
from worker.pipeline.names import NOISE_KINDS
from worker.pipeline.ranges import check

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp", ".tif", ".tiff"}
SPLITS = ("train", "test")


@dataclass(frozen=True)
class DatasetSpec:
    """A parsed ``--dataset`` value."""

    kind: str  # "digits" | "cifar10" | "folder" | "features"
    root: Path | None  # the images' folder (for features: the features file's folder)
    split: str = "train"
    file: Path | None = None  # the features file

    @property
    def class_root(self) -> Path | None:
        """The folder whose class subfolders a run folder inside it would join (none for a
        features file)."""
        return None if self.kind == "features" else self.root

    def __str__(self) -> str:
        if self.file is not None:
            return f"{self.kind}:{self.file}"
        return self.kind if self.root is None else f"{self.kind}:{self.root}"


def parse_spec(text: str, split: str = "train") -> DatasetSpec:
    """Parse ``digits``, ``cifar10:DIR`` or ``folder:DIR`` into a :class:`DatasetSpec`.

    Raises
    ------
    InputError
        For an unknown kind, a missing directory or an unknown split, or the test split of
        a features file (:func:`has_split` says which splits a dataset has).
    """
    _check_split(split)
    if "\x00" in text:
        raise InputError("dataset spec has a NUL character: give 'digits', 'cifar10:DIR', "
                         "'folder:DIR' or 'features:FILE.npy'")
    kind, _, rest = text.partition(":")
    if kind == "digits" and not rest:
        return DatasetSpec("digits", None, split)
    if kind == "features" and rest:
        file = Path(rest).expanduser().resolve()
        if not file.is_file() or file.suffix != ".npy":
            raise InputError(f"features file not found: {rest} (give an existing .npy file of "
                             "shape N×D)")
        return _features_split(DatasetSpec("features", file.parent, split, file))
    if kind in ("cifar10", "folder") and rest:
        root = Path(rest).expanduser().resolve()
        if not root.is_dir():
            raise InputError(f"dataset folder not found: {rest} (give an existing directory)")
        return DatasetSpec(kind, root, split)
    raise InputError(
        f"unknown dataset spec {text!r}: use 'digits', 'cifar10:DIR', 'folder:DIR' or "
        "'features:FILE.npy'"
    )


def _check_split(split: str) -> None:
    if split not in SPLITS:
        raise InputError(f"unknown split {split!r}: use one of {', '.join(SPLITS)}")


def _features_split(spec: DatasetSpec) -> DatasetSpec:
    """``spec`` unchanged; a features spec for the test split is refused.

    A features file is one set of rows: reading it as the test split would give the
    training rows under another name, so it is refused where the spec is made, before any
    run is started.
    """
    if spec.kind == "features" and spec.split != "train":
        name = spec.file.name if spec.file is not None else str(spec)
        raise InputError(f"features file {name} has no {spec.split} split (a features file is "
                         "read whole): use --split train")
    return spec


def has_split(spec: DatasetSpec, split: str) -> bool:
    """Whether ``spec``'s dataset has ``split``, so that reading it is not refused for
    want of that split.

    ``digits`` and a features file have only ``train`` (all their samples); a
    ``cifar10:`` folder has each split whose batch files and ``batches.meta`` are there;
    a ``folder:`` DIR of class folders has only ``train`` (the whole folder), one of split
    folders has those of ``train/`` and ``test/`` that exist, and one that mixes split and
    class folders has neither (:func:`open_dataset` refuses it).

    Parameters
    ----------
    spec : DatasetSpec
        The dataset; its own ``split`` plays no part.
    split : str
        ``"train"`` or ``"test"``; any other value has no split (False).

    Returns
    -------
    bool
    """
    if split not in SPLITS:
        return False
    if spec.kind in ("digits", "features") or spec.root is None:
        return split == "train"
    if spec.kind == "cifar10":
        batch_dir, names = _cifar_files(spec.root, split)
        return all((batch_dir / n).is_file() for n in [*names, "batches.meta"])
    try:
        _split_base(spec.root, split)
    except InputError:
        return False
    return True


def split_spec(spec: DatasetSpec, split: str) -> DatasetSpec:
    """The same dataset as ``spec``, for ``split``.

    Checked as :func:`parse_spec` checks (an unknown split, a features file's test split),
    so that the spec round-trips through a run's record; whether the dataset has the
    split is :func:`has_split`'s question, and :func:`open_dataset` refuses one it lacks.

    Raises
    ------
    InputError
        For an unknown split, or the test split of a features file.
    """
    _check_split(split)
    return _features_split(replace(spec, split=split))


@dataclass
class SampleTable:
    """One row per sample, in sample order (the row order of ``features.npy``).

    Attributes
    ----------
    paths : list of str, length N
        Path relative to the dataset root (virtual for array datasets).
    labels : ndarray of int64, shape (N,)
        Given label, an index into ``classes``.
    true_labels : ndarray of int64, shape (N,)
        Known true label, or -1 where unknown.
    classes : list of str
        Class names; ``classes[k]`` is the name of label code k.
    """

    paths: list[str]
    labels: np.ndarray
    true_labels: np.ndarray
    classes: list[str]

    def __len__(self) -> int:
        return len(self.paths)

    @property
    def has_truth(self) -> bool:
        return bool((self.true_labels >= 0).any())

    def subset(self, keep: np.ndarray) -> SampleTable:
        """Rows where the boolean mask ``keep`` (shape (N,)) is True, order kept."""
        idx = np.flatnonzero(keep)
        return SampleTable([self.paths[i] for i in idx], self.labels[idx],
                           self.true_labels[idx], self.classes)


@dataclass
class Dataset:
    """Samples plus a way to read their pixels.

    For array datasets ``arrays`` holds the uint8 images, shape (N, H, W) or (N, H, W, 3);
    for folders it is None and images are read from ``root / path``. ``extra`` (M, S, S, 3)
    uint8 holds injected images (worker/pipeline/sources/inject.py): the last M samples.
    """

    spec: DatasetSpec
    samples: SampleTable
    arrays: np.ndarray | None = None
    skipped: list[tuple[str, str]] = field(default_factory=list)
    has_images: bool = True  # False: a features file without image paths
    extra: np.ndarray | None = None

    def _extra_row(self, i: int) -> int:
        """Row of sample i in ``extra``, or -1 when it is one of the dataset's own."""
        if self.extra is None:
            return -1
        k = i - (len(self.samples) - len(self.extra))
        return k if k >= 0 else -1

    def file_path(self, i: int) -> Path | None:
        """The image file of sample i, or None for array datasets and injected images."""
        if self.arrays is not None or self.spec.root is None or not self.has_images \
                or self._extra_row(i) >= 0:
            return None
        return self.spec.root / self.samples.paths[i]

    def pixels(self, i: int) -> np.ndarray:
        """Sample i's uint8 pixels, (H, W) or (H, W, 3), as stored."""
        k = self._extra_row(i)
        if k >= 0:
            return self.extra[k]
        if self.arrays is not None:
            return self.arrays[i]
        return np.asarray(self.load_image(i))

    def load_image(self, i: int) -> Image.Image:
        """Sample i as an RGB PIL image (grayscale is expanded to three channels)."""
        k = self._extra_row(i)
        if k >= 0:
            return Image.fromarray(self.extra[k]).convert("RGB")
        if self.arrays is not None:
            return Image.fromarray(self.arrays[i]).convert("RGB")
        with Image.open(self.file_path(i)) as img:
            return img.convert("RGB")


# --------------------------------------------------------------------------- readers


def _read_digits(split: str) -> tuple[np.ndarray, np.ndarray, list[str], list[str]]:
    from sklearn.datasets import load_digits

    digits = load_digits()
    # Digits pixels run 0..16; scale to 0..255 so they are ordinary 8-bit images.
    images = np.round(digits.images * (255.0 / 16.0)).astype(np.uint8)
    labels = digits.target.astype(np.int64)
    if split == "test":
        raise InputError("digits has no test split: use --split train")
    paths = [f"train/{i:05d}" for i in range(len(labels))]
    return images, labels, [str(c) for c in range(10)], paths


def _cifar_files(root: Path, split: str) -> tuple[Path, list[str]]:
    """The folder holding a CIFAR-10 dataset's batch files, and ``split``'s batch names."""
    batch_dir = root / "cifar-10-batches-py" if (root / "cifar-10-batches-py").is_dir() else root
    if split == "test":
        return batch_dir, ["test_batch"]
    return batch_dir, [f"data_batch_{k}" for k in range(1, 6)]


def _read_cifar10(root: Path, split: str) -> tuple[np.ndarray, np.ndarray, list[str], list[str]]:
    batch_dir, names = _cifar_files(root, split)
    meta_file = batch_dir / "batches.meta"
    missing = [n for n in [*names, "batches.meta"] if not (batch_dir / n).is_file()]
    if missing:
        raise InputError(
            f"{batch_dir} is not a cifar-10-batches-py folder (missing {', '.join(missing)})"
        )
    with open(meta_file, "rb") as fh:
        classes = [c.decode() if isinstance(c, bytes) else c
                   for c in pickle.load(fh, encoding="bytes")[b"label_names"]]
    chunks, labels = [], []
    for name in names:
        with open(batch_dir / name, "rb") as fh:
            batch = pickle.load(fh, encoding="bytes")
        chunks.append(np.asarray(batch[b"data"], dtype=np.uint8).reshape(-1, 3, 32, 32))
        labels.extend(batch[b"labels"])
    images = np.concatenate(chunks).transpose(0, 2, 3, 1).copy()
    paths = [f"{split}/{i:05d}" for i in range(len(images))]
    return images, np.asarray(labels, dtype=np.int64), classes, paths


OUTSIDE = "links outside the dataset folder"
EMPTY = "class folder holds no images"


def _leaves(link: Path, root: Path) -> bool:
    """Whether ``link`` (a symbolic link) resolves outside ``root`` (resolved)."""
    return not link.resolve().is_relative_to(root)


def _is_flat_class(folder: Path) -> bool:
    """Whether ``folder`` holds images and no subfolders: a class folder even when it is
    named ``train`` or ``test`` (CIFAR-100 has a class named train). A split folder holds
    class folders; so may a class folder, and then the name decides."""
    has_image = False
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.name.startswith("."):
                continue
            if entry.is_dir():
                return False
            has_image = has_image or Path(entry.name).suffix.lower() in IMAGE_SUFFIXES
    return has_image


def _split_base(root: Path, split: str) -> Path:
    """The folder whose subfolders are ``split``'s classes: ``root / split`` when ``root``
    holds split folders, else ``root`` itself (the train split).

    Raises
    ------
    InputError
        When ``root`` lacks ``split``, or mixes split folders with other folders.
    """
    names = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    splits = [n for n in names if n in SPLITS and not _is_flat_class(root / n)]
    others = [n for n in names if n not in splits]
    if not splits:
        if split != "train":
            raise InputError(f"{root} has no {split}/ folder (its subfolders are the classes): "
                             "use --split train")
        return root
    # With both split folders the layout is plain (and has been read so: other folders,
    # such as val/, are not read). With one, a folder beside it could be a class as well
    # as a stray, and reading either way could be silently wrong: refuse.
    if others and len(splits) < len(SPLITS):
        shown = ", ".join(f"{n}/" for n in others[:3]) + (", …" if len(others) > 3 else "")
        raise InputError(f"{root} has {splits[0]}/ beside other folders ({shown}): keep only "
                         f"train/ and test/ in it, or give folder:{root / splits[0]}")
    if split not in splits:
        raise InputError(f"{root} has no {split}/ folder (it has {splits[0]}/): use --split "
                         f"{splits[0]}")
    return root / split


def _list_folder(root: Path, split: str
                 ) -> tuple[list[str], np.ndarray, list[str], list[tuple[str, str]]]:
    """The images of a class-per-folder dataset: (paths relative to ``root``, labels,
    classes, skipped). A class folder or file that is a link resolving outside ``root`` is
    not read: it is listed in ``skipped`` (path, reason), as unreadable images are.

    When ``root`` holds split folders it is read at ``root / split``, paths still relative
    to ``root`` (``train/cat/0001.jpg``); see :func:`_split_base`."""
    base = _split_base(root, split)
    inside = root.resolve()
    skipped: list[tuple[str, str]] = []
    classes = []
    for p in sorted(base.iterdir()):
        if not p.is_dir() or p.name.startswith("."):
            continue
        if p.is_symlink() and _leaves(p, inside):
            skipped.append((p.relative_to(root).as_posix() + "/", OUTSIDE))
        else:
            classes.append(p.name)
    if not classes:
        raise InputError(f"no class subfolders in {base}: expected {base}/<class>/<image>")
    members: dict[str, list[str]] = {}
    for name in classes:
        files = members[name] = []
        # rglob does not descend into linked folders, so only a file itself can be a link.
        for f in sorted((base / name).rglob("*")):
            if f.suffix.lower() not in IMAGE_SUFFIXES or not f.is_file():
                continue
            if f.is_symlink() and _leaves(f, inside):
                skipped.append((f.relative_to(root).as_posix(), OUTSIDE))
                continue
            files.append(f.relative_to(root).as_posix())
        if not files:  # a class of 0 images would be a class no one can review
            skipped.append(((base / name).relative_to(root).as_posix() + "/", EMPTY))
    classes = [c for c in classes if members[c]]
    paths = [p for c in classes for p in members[c]]
    labels = [code for code, c in enumerate(classes) for _ in members[c]]
    return paths, np.asarray(labels, dtype=np.int64), classes, skipped


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


# --------------------------------------------------------------------------- entry point


def open_dataset(spec: DatasetSpec) -> Dataset:
    """List the samples of ``spec`` with their folder/batch labels (no decoding yet).

    A ``features:`` spec has no labels of its own: see :func:`read_features_labels`.
    """
    if spec.kind == "features":
        raise InputError("a features: dataset takes its labels from --labels CSV")
    if spec.kind in ("digits", "cifar10"):
        reader = _read_digits(spec.split) if spec.kind == "digits" else \
            _read_cifar10(spec.root, spec.split)  # type: ignore[arg-type]
        images, labels, classes, paths = reader
        table = SampleTable(paths, labels, np.full(len(labels), -1, np.int64), classes)
        return Dataset(spec, table, arrays=images)
    paths, labels, classes, skipped = _list_folder(spec.root, spec.split)  # type: ignore[arg-type]
    if not paths:
        raise InputError(f"no images found under {spec.root} ({spec.split} split)")
    table = SampleTable(paths, labels, np.full(len(labels), -1, np.int64), classes)
    return Dataset(spec, table, skipped=skipped)
