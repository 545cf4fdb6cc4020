"""Dataset specs and their readers (labels from a CSV and label noise: sources/labels.py).

A *spec* names where images come from:

- ``digits``: scikit-learn's bundled 8×8 digits (1,797 images, the embedded default);
- ``cifar10:DIR``: the standard torchvision ``cifar-10-batches-py`` folder;
- ``folder:DIR``: one subfolder per class, or ``DIR/<split>/<class>/…`` when DIR holds split
  folders (``train/``, ``test/`` or both; see :func:`has_split`);
- ``features:FILE.npy``: bring your own embeddings, an (N, D) float16/float32 array, with a
  labels CSV of N rows in the same order (sources/labels.py). Image paths in
  its optional ``path`` column are relative to FILE's folder; without them the run has
  no images (no thumbnails, image-folder export or retraining).

Every sample gets a path relative to the spec's DIR. Array datasets (digits, CIFAR pickles)
get virtual paths such as ``train/00042`` so that labels CSVs and manifests can name them.
Labels are integer codes into ``classes``; an unknown true label is -1.
"""

from __future__ import annotations

import os
import pickle
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from PIL import Image

from worker.pipeline.errors import InputError
from worker.pipeline.sources.decoding import open_rgb
from worker.pipeline.storage.sample_table import SampleTable

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
        return self.decode(i)[0]

    def decode(self, i: int, min_side: int | None = None
               ) -> tuple[Image.Image, tuple[int, int]]:
        """Sample i as an RGB PIL image, and its stored size (width, height).

        With ``min_side`` a JPEG file decodes at a reduced scale that keeps both sides at
        least ``min_side`` (sources/decoding.py); arrays come whole.
        """
        k = self._extra_row(i)
        if k >= 0 or self.arrays is not None:
            img = Image.fromarray(self.extra[k] if k >= 0 else self.arrays[i]).convert("RGB")
            return img, img.size
        return open_rgb(self.file_path(i), min_side)


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


# --------------------------------------------------------------------------- entry point


def open_dataset(spec: DatasetSpec) -> Dataset:
    """List the samples of ``spec`` with their folder/batch labels (no decoding yet).

    A ``features:`` spec has no labels of its own: see
    :func:`~worker.pipeline.sources.labels.read_features_labels`.
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
