"""Create a run: list the dataset, apply labels and noise, decode every image once.

Decoding every image at ingest finds corrupt files before any model sees them and gives
the thumbnails that hover previews use, so nothing is decoded at request time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from worker.pipeline.choices import DUPLICATE_STRENGTHS, OUTLIER_SOURCES
from worker.pipeline.errors import InputError
from worker.pipeline.number_params import check
from worker.pipeline.progress import ProgressFn, report
from worker.pipeline.sources.datasets import (
    Dataset,
    DatasetSpec,
    has_split,
    open_dataset,
    parse_spec,
    split_spec,
)
from worker.pipeline.sources.decoding import host_cores, open_rgb, ordered_map
from worker.pipeline.sources.inject import (
    InjectionPlan,
    TestImages,
    TrainImages,
    inject,
    truth_path,
    write_truth,
)
from worker.pipeline.sources.labels import (
    apply_labels_csv,
    check_counts,
    check_features_file,
    features_shape,
    inject_noise,
    read_features_labels,
)
from worker.pipeline.sources.pixel_hash import pixel_digest
from worker.pipeline.storage.rundir import (
    NpyRows,
    RunDir,
    atomic_path,
    package_versions,
    save_npy,
)
from worker.pipeline.storage.sample_table import SampleTable

MAX_THUMB = 64
# Each image's stored (width, height), int64 (N, 2) in sample order (docs/run-directory.md).
IMAGE_SIZE_FILE = "image_size.npy"


@dataclass(frozen=True)
class DatasetOptions:
    """Everything that decides which samples a run has and what their labels are."""

    spec: DatasetSpec
    labels_csv: Path | None = None
    label_column: str = "label"
    true_label_column: str | None = None
    inject_noise: float = 0.0
    seed: int = 0
    noise_kind: str = "symmetric"
    # Injected copies and outliers whose truth is recorded (sources/inject.py).
    inject_duplicates: float = 0.0
    inject_outliers: int = 0
    duplicate_strength: str = "mixed"
    outlier_sources: str = "mixed"
    inject_leaks: int = 0  # copies of test images put into train
    duplicate_family: int = 1  # copies per chosen source: 1 to this many
    duplicate_across: float = 0.0  # share of the copies labelled as another class

    def __post_init__(self) -> None:
        # Checked when the options are made (CLI, form, job record), before any ingest.

        object.__setattr__(self, "inject_noise", check("inject_noise", self.inject_noise))
        object.__setattr__(self, "seed", check("seed", self.seed))
        object.__setattr__(self, "inject_duplicates",
                           check("inject_duplicates", self.inject_duplicates))
        object.__setattr__(self, "inject_outliers", check("inject_outliers",
                                                          self.inject_outliers))
        object.__setattr__(self, "inject_leaks", check("inject_leaks", self.inject_leaks))
        object.__setattr__(self, "duplicate_family",
                           check("duplicate_family", self.duplicate_family))
        object.__setattr__(self, "duplicate_across",
                           check("duplicate_across", self.duplicate_across))
        if self.duplicate_strength not in DUPLICATE_STRENGTHS:
            raise InputError(f"--duplicate-strength must be one of "
                             f"{', '.join(DUPLICATE_STRENGTHS)}, got {self.duplicate_strength!r}")
        if self.outlier_sources not in OUTLIER_SOURCES:
            raise InputError(f"--outlier-sources must be one of "
                             f"{', '.join(OUTLIER_SOURCES)}, got {self.outlier_sources!r}")
        if (self.inject_duplicates or self.inject_outliers or self.inject_leaks) \
                and self.spec.kind == "features":
            raise InputError("--inject-duplicates, --inject-outliers and --inject-leaks need "
                             "images: a features: dataset has none")
        if self.inject_leaks and (self.spec.split != "train"
                                  or not has_split(self.spec, "test")):
            raise InputError("--inject-leaks copies test images into train: give a dataset "
                             "with a test split (a folder with train/ and test/, or cifar10:)")

    def to_json(self) -> dict[str, Any]:
        return {
            "spec": str(self.spec),
            "split": self.spec.split,
            "labels_csv": str(self.labels_csv.resolve()) if self.labels_csv else None,
            "label_column": self.label_column,
            "true_label_column": self.true_label_column,
            "inject_noise": self.inject_noise,
            "noise_kind": self.noise_kind,
            "seed": self.seed,
            "inject_duplicates": self.inject_duplicates,
            "inject_outliers": self.inject_outliers,
            "duplicate_strength": self.duplicate_strength,
            "outlier_sources": self.outlier_sources,
            "inject_leaks": self.inject_leaks,
            "duplicate_family": self.duplicate_family,
            "duplicate_across": self.duplicate_across,
        }

    @staticmethod
    def from_json(d: dict[str, Any]) -> DatasetOptions:
        return DatasetOptions(
            spec=parse_spec(d["spec"], d.get("split", "train")),
            labels_csv=Path(d["labels_csv"]) if d.get("labels_csv") else None,
            label_column=d.get("label_column", "label"),
            true_label_column=d.get("true_label_column"),
            inject_noise=float(d.get("inject_noise", 0.0)),
            seed=int(d.get("seed", 0)),
            noise_kind=d.get("noise_kind", "symmetric"),
            inject_duplicates=float(d.get("inject_duplicates", 0.0)),
            inject_outliers=int(d.get("inject_outliers", 0)),
            duplicate_strength=d.get("duplicate_strength", "mixed"),
            outlier_sources=d.get("outlier_sources", "mixed"),
            inject_leaks=int(d.get("inject_leaks", 0)),
            duplicate_family=int(d.get("duplicate_family", 1)),
            duplicate_across=float(d.get("duplicate_across", 0.0)),
        )


def check_dataset(opts: DatasetOptions, run: RunDir | None = None) -> None:
    """The checks that read a dataset's data, made at every door (``curator pipeline`` and
    ``extract``, ``tc.pipeline``, the New-run form) before a run's folder is claimed, so
    that bad data leaves nothing behind: a ``features:`` file's values
    (:func:`~.labels.check_features_file`) and its labels CSV (rows, classes,
    counts). Other datasets are listed and counted by ingest itself (listing a large
    folder twice would cost minutes).

    Parameters
    ----------
    opts : the dataset's options
    run : the run they are for (``--out``), when given: a features file the run holds its
        checked copy of is not read again (a resume)

    Raises
    ------
    InputError
    """
    if opts.spec.kind == "features":
        check_features_file(opts.spec.file, run)  # type: ignore[arg-type]
        load_labelled_dataset(opts)


def load_labelled_dataset(opts: DatasetOptions) -> Dataset:
    """Open the dataset and apply the labels CSV and injected noise, in that order.

    Raises
    ------
    InputError
        Among others, fewer samples than the map needs (:func:`~.labels.check_counts`):
        refused here, before ingest writes anything. One class is a dataset's own
        (a one-class folder), and makes a run.
    """
    if opts.spec.kind == "features":  # every label comes from the CSV, row by row
        samples, has_images = read_features_labels(
            opts.labels_csv, features_shape(opts.spec.file)[0], opts.label_column,
            opts.true_label_column)
        ds = Dataset(opts.spec, samples, has_images=has_images)
    else:
        ds = open_dataset(opts.spec)
        if opts.labels_csv is not None:
            ds.samples = apply_labels_csv(ds.samples, opts.labels_csv, opts.label_column,
                                          opts.true_label_column)
        elif opts.true_label_column:
            raise InputError("--true-label-column needs --labels CSV")
    if opts.inject_noise != 0 or opts.noise_kind != "symmetric":
        ds.samples = inject_noise(ds.samples, opts.inject_noise, opts.seed, opts.noise_kind)
    if opts.inject_duplicates or opts.inject_outliers or opts.inject_leaks:
        _inject(ds, opts)
    check_counts(ds.samples.labels, f"dataset {opts.spec}", min_classes=1)
    return ds


# Injected images are kept in the run at the dataset's image size, at most this side.
MAX_INJECTED = 256


def _inject(ds: Dataset, opts: DatasetOptions) -> None:
    """Append injected copies and outliers to ``ds`` (sources/inject.py); their truth is
    written at ingest (``injected.csv``)."""
    if ds.arrays is not None:
        size, grey = max(ds.arrays.shape[1:3]), ds.arrays.ndim == 3
    else:
        size, grey = min(MAX_INJECTED, _thumb_size(ds, limit=MAX_INJECTED)), False
    s = ds.samples
    train = TrainImages(ds.load_image if not grey else lambda i: Image.fromarray(ds.arrays[i]),
                        s.labels, s.true_labels, len(s.classes), opts.spec.kind, size, grey)
    plan = InjectionPlan(opts.inject_duplicates, opts.inject_outliers, opts.duplicate_strength,
                         opts.seed, opts.outlier_sources, opts.inject_leaks,
                         opts.duplicate_family, opts.duplicate_across)
    made = inject(train, plan, _test_images(opts.spec, s.classes) if opts.inject_leaks else None)
    ds.samples = SampleTable(s.paths + made.paths, np.concatenate([s.labels, made.labels]),
                             np.concatenate([s.true_labels, made.true_labels]), s.classes)
    ds.extra = made.images
    ds.injected = made  # type: ignore[attr-defined]  # written by ingest


def _test_images(spec: DatasetSpec, classes: list[str]) -> TestImages:
    """The test split of ``spec``, to copy leaks from: its loader and its labels as codes
    of the train split's ``classes`` (a test class train lacks is refused)."""
    test = open_dataset(split_spec(spec, "test"))
    missing = sorted(set(test.samples.classes) - set(classes))
    if missing:
        raise InputError(f"the test split has classes the train split lacks: "
                         f"{', '.join(missing[:5])}")
    codes = np.array([classes.index(c) for c in test.samples.classes], np.int64)
    return TestImages(test.load_image, codes[test.samples.labels])


def thumbnail(img: Image.Image, size: int) -> np.ndarray:
    """Fit ``img`` into a size×size RGB square (aspect kept, black padding)."""
    img = img.convert("RGB")
    if img.size != (size, size):
        img.thumbnail((size, size), Image.Resampling.LANCZOS)
        canvas = Image.new("RGB", (size, size))
        canvas.paste(img, ((size - img.width) // 2, (size - img.height) // 2))
        img = canvas
    return np.asarray(img, dtype=np.uint8)


def decoded(decode: Callable[[], Any]) -> Any:
    """``decode()``, or, when it fails in any way, why, as one line of text: the check
    that keeps an unreadable image out of a run (ingest lists it in ``skipped.csv``;
    ``tc.from_arrays`` refuses it, :func:`image_errors`)."""
    try:
        return decode()
    except Exception as exc:  # noqa: BLE001 - any decoder failure means "skip this file"
        return f"{type(exc).__name__}: {exc}".replace("\n", " ")[:300]


def _decode(ds: Dataset, i: int, size: int
            ) -> tuple[np.ndarray, tuple[int, int], bool, int] | str:
    """(thumbnail, stored (width, height), thumbnail is exact, hash of the decoded pixels)
    of sample i, or the error text.

    A JPEG larger than twice ``size`` decodes at a reduced scale (sources/decoding.py),
    so its hash is of those pixels: equal files still hash equal.
    """
    def decode() -> tuple[np.ndarray, tuple[int, int], bool, int]:
        img, stored = ds.decode(i, min_side=size)
        return (thumbnail(img, size), stored, stored == (size, size),
                pixel_digest(np.asarray(img)))

    return decoded(decode)


def image_errors(files: Sequence[Path], part: int = 128) -> dict[int, str]:
    """Which of the image ``files`` cannot be decoded, by index, and why: each decoded as
    ingest decodes a folder's images (:func:`decoded`, at thumbnail scale), by every core.

    Parameters
    ----------
    files : the image files, in the order their indices name
    part : files per task handed to a core (each task sends back only the errors' text)

    Returns
    -------
    dict[int, str]
        Index in ``files`` → why that file does not decode, one line; empty when all do.
    """
    def check_part(k: int) -> list[str | None]:
        found = (decoded(lambda f=f: open_rgb(f, MAX_THUMB))
                 for f in files[k * part:(k + 1) * part])
        return [r if isinstance(r, str) else None for r in found]  # no pixels go back

    errors = {}
    for k, results in enumerate(ordered_map(check_part, -(-len(files) // part), host_cores())):
        errors.update({k * part + j: e for j, e in enumerate(results) if e is not None})
    return errors


def _thumb_size(ds: Dataset, limit: int = MAX_THUMB) -> int:
    """Thumbnail side: the first readable image's longer side, at most ``limit``."""
    if ds.arrays is not None:
        return min(limit, max(ds.arrays.shape[1:3]))
    for i in range(min(len(ds.samples), 50)):
        try:
            return min(limit, max(ds.load_image(i).size))
        except Exception:  # noqa: BLE001, S112 - corrupt files are reported by ingest itself
            continue
    return limit


def ingest(run: RunDir, opts: DatasetOptions, progress: ProgressFn | None = None) -> Dataset:
    """Create ``run`` from ``opts``: samples.csv, skipped.csv, thumbnails.npy and run.json.

    Images that cannot be decoded are left out of the sample table and listed in
    ``skipped.csv``; every kept row keeps its path, so no index shifts silently.

    Returns
    -------
    Dataset
        The dataset restricted to readable images, in sample order.
    """
    ds = load_labelled_dataset(opts)
    with _run_in_the_making(run, opts, ds):
        if opts.spec.kind == "features":
            _write_run(run, opts, ds)
        else:
            _decode_all(run, opts, ds, progress)
    return ds


@dataclass
class Decoded:
    """What :func:`decode_thumbnails` learned of N images: which were readable (bool (N,)),
    their stored (width, height) (int64 (N, 2), as the file holds them: the image-quality
    kinds' ``odd_size`` reads them), whether the thumbnail is the image (bool (N,)), their
    pixel hashes (uint64 (N,)) and each unreadable one's error text, by index."""

    ok: np.ndarray
    dims: np.ndarray
    exact: np.ndarray
    hashes: np.ndarray
    errors: dict[int, str]


def decode_thumbnails(ds: Dataset, size: int, dest: Path, progress: ProgressFn | None = None,
                      what: str = "ingest: decoding images") -> Decoded:
    """Decode every sample of ``ds`` once into ``dest``: an .npy (M, size, size, 3) uint8 of
    the M readable ones' thumbnails, written atomically (none when no image is readable).

    Every core decodes, in processes (sources/decoding.py); this process only writes,
    through the file block by block: 1.28M images at 64 px are 15.7 GB, more than the
    machine's memory (storage/rundir.NpyRows).
    """
    n = len(ds.samples)
    d = Decoded(np.ones(n, bool), np.zeros((n, 2), np.int64), np.zeros(n, bool),
                np.zeros(n, np.uint64), {})
    part = 128  # images per task: one task per tiny image costs more than its decode

    def decode_part(k: int) -> list[tuple[np.ndarray, int, bool, int] | str]:
        return [_decode(ds, j, size) for j in range(k * part, min(n, (k + 1) * part))]

    with atomic_path(dest, ".npy") as tmp:
        with NpyRows(tmp, (n, size, size, 3), np.uint8) as thumbs:
            for k, results in enumerate(ordered_map(decode_part, -(-n // part), host_cores())):
                block = np.zeros((len(results), size, size, 3), np.uint8)
                for j, res in enumerate(results):
                    i = k * part + j
                    if isinstance(res, str):
                        d.ok[i], d.errors[i] = False, res
                    else:
                        block[j], d.dims[i], d.exact[i], d.hashes[i] = res
                thumbs.write(block)
                report(progress, min(n, (k + 1) * part), n, what)
    if not d.ok.any():
        dest.unlink()
    elif not d.ok.all():  # keep only the readable images' rows, block by block
        with atomic_path(dest, ".npy") as kept:
            _copy_rows(np.load(dest, mmap_mode="r"), d.ok, kept)
    return d


def _decode_all(run: RunDir, opts: DatasetOptions, ds: Dataset,
                progress: ProgressFn | None) -> None:
    """Decode every image into ``thumbnails.npy``, drop the unreadable ones from ``ds`` and
    write the run's tables (:func:`ingest`)."""
    d = decode_thumbnails(ds, _thumb_size(ds), run.thumbnails, progress)
    if not d.ok.any():
        raise InputError(f"none of the {len(d.ok)} images in {opts.spec} could be read")
    ok = d.ok
    save_npy(run.path / "pixel_hash.npy", d.hashes[ok])
    save_npy(run.path / IMAGE_SIZE_FILE, d.dims[ok])
    skipped = [(ds.samples.paths[i], e) for i, e in sorted(d.errors.items())]
    ds.samples = ds.samples.subset(ok)
    if ds.arrays is not None:
        ds.arrays = ds.arrays[ok[:len(ds.arrays)]]
    ds.skipped = [*ds.skipped, *skipped]  # after the links the listing left out
    _write_run(run, opts, ds, exact=bool(d.exact[ok].all()),
               native_size=int(np.median(d.dims[ok].max(1))))


def _copy_rows(rows: np.ndarray, ok: np.ndarray, dest: Path, block: int = 4096) -> None:
    """Write the ``ok`` rows of ``rows`` to a new .npy file ``dest``, in order, a block at a
    time (``rows`` may be larger than memory)."""
    keep = np.flatnonzero(ok)
    with NpyRows(dest, (len(keep), *rows.shape[1:]), rows.dtype) as out:
        for start in range(0, len(keep), block):
            out.write(rows[keep[start:start + block]])


@contextmanager
def _run_in_the_making(run: RunDir, opts: DatasetOptions, ds: Dataset) -> Iterator[None]:
    """Make a new ``run`` a run (run.json, no ingest step yet) for the slow decode: a crash
    then leaves a run in the making, which a retry ingests again, not a folder holding an
    unknown ``thumbnails.npy`` that ``--out`` would refuse. Bad input (an InputError)
    takes the new run.json away again: nothing to list, nothing to resume."""
    if run.exists():
        yield
        return
    run.path.mkdir(parents=True, exist_ok=True)
    with run.update_meta() as meta:
        meta.update({"format": 1, "dataset": opts.to_json(), "classes": ds.samples.classes,
                     "steps": {}})
    try:
        yield
    except InputError:
        run.run_json.unlink(missing_ok=True)
        raise


def _write_run(run: RunDir, opts: DatasetOptions, ds: Dataset, exact: bool = False,
               native_size: int = 0) -> None:
    """run.json, the samples table and skipped.csv (thumbnails.npy is written before)."""
    run.path.mkdir(parents=True, exist_ok=True)
    with run.update_meta() as meta:
        meta.update({
            "format": 1,
            "dataset": opts.to_json(),
            "classes": ds.samples.classes,
            "n_samples": len(ds.samples),
            "n_skipped": len(ds.skipped),
            # Exact thumbnails (every image square and of the thumbnail's side) double as
            # the decoded-image cache for feature extraction.
            "thumbnails_exact": exact,
            "native_size": native_size,
            "has_images": ds.has_images,
            "versions": package_versions(),
        })
        meta.setdefault("steps", {})
    run.write_samples(ds.samples)
    run.write_skipped(ds.skipped)
    made = getattr(ds, "injected", None)
    if made is not None:  # the injected images and their truth (sources/inject.py)

        save_npy(run.path / "injected.npy", made.images)
        with atomic_path(truth_path(run.path)) as tmp:
            write_truth(tmp, len(ds.samples) - len(made.images), made)
    run.mark_step("ingest", n_samples=len(ds.samples), n_skipped=len(ds.skipped))


def open_run_dataset(run: RunDir) -> Dataset:
    """Re-open the dataset of an existing run, restricted and labelled as at ingest."""
    meta = run.read_meta()
    opts = DatasetOptions.from_json(meta["dataset"])
    if opts.spec.kind == "features":
        return Dataset(opts.spec, run.read_samples(), has_images=meta.get("has_images", False))
    ds = open_dataset(opts.spec)
    samples = run.read_samples()
    injected = run.path / "injected.npy"
    extra = run.load_array(injected, "ingest") if injected.is_file() else None
    own = len(samples) - (0 if extra is None else len(extra))
    if ds.arrays is not None:
        index = {p: i for i, p in enumerate(ds.samples.paths)}
        ds.arrays = ds.arrays[[index[p] for p in samples.paths[:own]]]
    ds.samples = samples
    ds.extra = extra
    ds.skipped = run.read_skipped()
    return ds
