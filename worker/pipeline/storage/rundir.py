"""The run directory: every durable thing a run owns, in documented formats.

Layout (see ``docs/run-directory.md``)::

    <run>/run.json          dataset spec, model, parameters, step states, package versions
    <run>/samples.csv       index,path,label,true_label   (one row per sample)
    <run>/skipped.csv       path,error                     (images that could not be read)
    <run>/thumbnails.npy    (N, S, S, 3) uint8, made once at ingest
    <run>/features.npy      (N, D) float32
    <run>/embedding.npy     (N, 2) float32
    <run>/curation.sqlite   parameters, overrides, undo history, jobs (WAL)
    <run>/cache/            features keyed by dataset, model and weights
    <run>/exports/<name>/   finished exports (written to a temp folder, then renamed)

Every file is written to a temporary name in the same folder and renamed into place, so a
reader never sees half a file, and a killed step can simply run again.
"""

from __future__ import annotations

import contextlib
import csv
import fcntl
import glob
import json
import os
import socket
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from worker.pipeline.errors import InputError
from worker.pipeline.storage.sample_table import SampleTable

# How each step's files are made again, for the messages about a missing or damaged one.
REMAKE = {
    "ingest": "make the run again from its dataset ('curator pipeline --dataset SPEC "
              "--out NEW_DIR')",
    "extract": "run 'curator extract --out RUN' to make it again",
    "embed": "run 'curator embed RUN' to make it again",
    "cluster": "run 'curator cluster RUN' to make it again",
}


def no_permission(path: Path, write: bool = False) -> InputError:
    """The one line for a run file this user may not read (or write)."""
    return InputError(f"permission denied {'writing' if write else 'reading'} {path}: give "
                      "this user access to the run folder and its files (chmod/chown), or "
                      "run as their owner")


def damaged_file(path: Path, what: str, fix: str) -> InputError:
    """The one line for a run file that exists but cannot be used."""
    return InputError(f"{path} is damaged ({what}): {fix}")


# The steps a run records in run.json's "steps", in the order they run.
# What each step's record holds besides its status and end time: the fields the step
# writes (``RunDir.mark_step``), declared once. Reading or writing a field not declared
# here is a ValueError, so a misspelt field fails loudly instead of reading as None.
# ``embed`` writes its options (map.embedding.EmbeddingOptions: a test holds the two equal).
STEP_FIELDS: dict[str, frozenset[str]] = {
    "ingest": frozenset({"n_samples", "n_skipped"}),
    "extract": frozenset({"model", "precision", "weights", "pretrained", "input_size",
                          "finetune_epochs", "finetune_lr", "cache_key", "feature_dim"}),
    "embed": frozenset({"pca_dims", "perplexity", "n_iter", "seed", "gradient",
                        "exaggeration_iter", "features_key"}),
    "evidence": frozenset({"key", "gauge"}),
    "cluster": frozenset({"rule", "params", "clusters_mtime"}),
    "findings": frozenset({"kinds", "thresholds"}),
}
STEP_NAMES = tuple(STEP_FIELDS)
RECORD_FIELDS = frozenset({"status", "at"})


def check_step(step: str) -> str:
    """``step`` when it is one (``STEP_NAMES``); else ValueError: a misspelt step never
    reads as "not run yet", nor is written."""
    if step not in STEP_FIELDS:
        raise ValueError(f"no step {step!r}: the steps are {', '.join(STEP_NAMES)}")
    return step


class StepRecord(dict):
    """What ``run.json`` holds of one step: ``status``, ``at`` and the fields the step
    writes (:data:`STEP_FIELDS`). A plain dict to JSON; reading a field the step does not
    declare raises ValueError, present or not (a record from an older version may hold
    fields no longer declared: they are kept, and never read)."""

    def __init__(self, step: str, record: dict[str, Any] | None = None) -> None:
        super().__init__(record or {})
        self.step = check_step(step)

    def _field(self, key: object) -> object:
        if key not in RECORD_FIELDS and key not in STEP_FIELDS[self.step]:
            raise ValueError(f"step {self.step!r} records no field {key!r}: it records "
                             f"{', '.join(sorted(RECORD_FIELDS | STEP_FIELDS[self.step]))}")
        return key

    def __getitem__(self, key: object) -> Any:
        return super().__getitem__(self._field(key))

    def __contains__(self, key: object) -> bool:
        return super().__contains__(self._field(key))

    def get(self, key: object, default: Any = None) -> Any:
        return super().get(self._field(key), default)


def step_record(meta: Any, step: str) -> StepRecord:
    """What a run's record ``meta`` (``run.json``, as read) holds of ``step``: its status,
    when it ended and the parameters it ran with; empty when it has not run, or when the
    record is not what a run writes. A name that is no step raises ValueError
    (:func:`check_step`), and so does reading a field the step does not record."""
    steps = meta.get("steps") if isinstance(meta, dict) else None
    record = steps.get(check_step(step)) if isinstance(steps, dict) else None
    return StepRecord(step, record if isinstance(record, dict) else None)


def load_npy(path: Path, step: str, mmap: bool = False) -> np.ndarray:
    """Load an .npy a run owns; a missing, damaged or forbidden file is one
    :class:`InputError` that names the file and how ``step`` (a key of ``REMAKE``) makes
    it again."""
    try:
        return np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except FileNotFoundError:
        raise InputError(f"{path.name} is missing in {path.parent}: "
                         f"{REMAKE[step]}") from None
    except PermissionError:
        raise no_permission(path) from None
    except (ValueError, OSError, EOFError):
        raise damaged_file(path, "truncated, or not a NumPy array",
                           f"move it away and {REMAKE[step]}") from None


def now_iso() -> str:
    """The current UTC time, ISO 8601, second precision."""
    return datetime.now(UTC).isoformat(timespec="seconds")


# Temp files are named for the host and process that write them, so a later writer can tell
# the leftovers of a killed process (same host, process gone) from a live writer's file,
# even when several hosts share the runs root.
_HOST = socket.gethostname().replace(".", "_")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by another user
        return True
    return True


def _sweep_stale(target: Path) -> None:
    """Remove temp files for ``target`` left by killed processes on this host."""
    prefix = f".{target.name}.{_HOST}-"
    for tmp in target.parent.glob(f"{glob.escape(prefix)}*.tmp*"):
        pid = tmp.name[len(prefix):].split(".", 1)[0]
        if pid.isdigit() and not _pid_alive(int(pid)):
            tmp.unlink(missing_ok=True)


@contextlib.contextmanager
def atomic_path(target: Path, suffix: str = "", make_parent: bool = True) -> Iterator[Path]:
    """Yield a temp path beside ``target``; rename it onto ``target`` if the block succeeds.

    A process killed inside the block (SIGKILL, OOM) cannot clean up; its temp file is
    removed by the next write of the same target on the same host. With ``make_parent``
    False a missing (or removed) folder raises FileNotFoundError instead of being made.
    """
    if make_parent:
        target.parent.mkdir(parents=True, exist_ok=True)
    _sweep_stale(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.{_HOST}-{os.getpid()}.",
                               suffix=f".tmp{suffix}", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    # mkstemp makes 0600 files; runs are shared between the app and workers (often other
    # users or containers), so give them ordinary read permissions.
    os.chmod(tmp_path, 0o644)
    try:
        yield tmp_path
        os.replace(tmp_path, target)
    finally:
        tmp_path.unlink(missing_ok=True)


def save_npy(target: Path, array: np.ndarray, make_parent: bool = True) -> None:
    """Write ``array`` to ``target`` (.npy) atomically (``make_parent``: see atomic_path)."""
    with atomic_path(target, ".npy", make_parent) as tmp:
        np.save(tmp, array)


class NpyRows:
    """An .npy file of known shape, written block of rows after block of rows.

    Through the file, not a memory map: pages written through a map count in the writer's
    resident set until the kernel writes them back, and 1.28M thumbnails of 64 px are
    15.7 GB (docs/benchmarks.md, "A million files"). Use inside :func:`atomic_path`.
    """

    def __init__(self, path: Path, shape: tuple[int, ...], dtype: np.dtype | type) -> None:
        self.dtype, self.shape, self.rows = np.dtype(dtype), shape, 0
        self._fh = open(path, "wb")  # noqa: SIM115 - closed by close()
        np.lib.format.write_array_header_1_0(self._fh, {
            "descr": np.lib.format.dtype_to_descr(self.dtype), "fortran_order": False,
            "shape": tuple(shape)})

    def write(self, block: np.ndarray) -> None:
        """Append ``block`` (R, *shape[1:]) of ``dtype``."""
        np.ascontiguousarray(block, dtype=self.dtype).tofile(self._fh)
        self.rows += len(block)

    def close(self) -> None:
        self._fh.close()
        if self.rows != self.shape[0]:
            raise ValueError(f"wrote {self.rows} rows of {self.shape[0]}")

    def __enter__(self) -> NpyRows:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.close()
        else:
            self._fh.close()


def write_text(target: Path, text: str) -> None:
    """Write ``text`` to ``target`` atomically."""
    with atomic_path(target) as tmp:
        tmp.write_text(text)


def package_versions() -> dict[str, str]:
    """Versions of the packages whose behaviour shapes a run's numbers."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in ("tsne-curator", "numpy", "scikit-learn", "openTSNE", "torch", "torchvision",
                 "cleanlab"):
        with contextlib.suppress(PackageNotFoundError):
            out[name] = version(name)
    return out


class RunDir:
    """Paths and small readers/writers for one run folder."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)

    # -- paths --------------------------------------------------------------
    @property
    def run_json(self) -> Path:
        return self.path / "run.json"

    @property
    def samples_csv(self) -> Path:
        return self.path / "samples.csv"

    @property
    def skipped_csv(self) -> Path:
        return self.path / "skipped.csv"

    @property
    def thumbnails(self) -> Path:
        return self.path / "thumbnails.npy"

    @property
    def features(self) -> Path:
        return self.path / "features.npy"

    @property
    def embedding(self) -> Path:
        return self.path / "embedding.npy"

    @property
    def store(self) -> Path:
        return self.path / "curation.sqlite"

    @property
    def cache(self) -> Path:
        return self.path / "cache"

    @property
    def exports(self) -> Path:
        return self.path / "exports"

    @property
    def run_id(self) -> str:
        return self.path.name

    # -- run.json -----------------------------------------------------------
    def exists(self) -> bool:
        return self.run_json.is_file()

    def require(self) -> RunDir:
        """Raise a clear error if this folder is not a run."""
        if not self.exists():
            raise InputError(f"{self.path} is not a run (no run.json); create one with "
                             "'curator extract --dataset SPEC --out DIR'")
        return self

    def require_jobs(self) -> RunDir:
        """Like :meth:`require`, but a folder whose pipeline has started and not finished
        ingesting (a job store, no ``run.json`` yet) also counts: its jobs can be listed
        and cancelled."""
        return self if self.store.is_file() else self.require()

    def read_meta(self) -> dict[str, Any]:
        """``run.json``; damaged or forbidden, one :class:`InputError` naming it."""
        try:
            meta = json.loads(self.require().run_json.read_text())
        except PermissionError:
            raise no_permission(self.run_json) from None
        except (ValueError, UnicodeDecodeError, OSError):
            meta = None
        if not isinstance(meta, dict):
            raise damaged_file(self.run_json, "not a JSON object", "restore it from a backup, "
                               "or " + REMAKE["ingest"])
        return meta

    def require_images(self, what: str) -> RunDir:
        """Refuse ``what`` (e.g. "an image-folder export") for a run made from a features
        file without image paths."""
        meta = self.read_meta()
        if not meta.get("has_images", True):
            raise InputError(f"{what} needs images, and run {self.run_id} was made from "
                             f"{meta['dataset']['spec']} without image paths: add a 'path' "
                             "column to the labels CSV (tc.from_arrays: images=) and make a "
                             "new run")
        return self

    @contextlib.contextmanager
    def update_meta(self) -> Iterator[dict[str, Any]]:
        """Read-modify-write ``run.json`` under a file lock (several processes may write)."""
        self.path.mkdir(parents=True, exist_ok=True)
        with open(self.path / ".run.json.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            meta = json.loads(self.run_json.read_text()) if self.exists() else {}
            yield meta
            write_text(self.run_json, json.dumps(meta, indent=2, sort_keys=True) + "\n")

    def mark_step(self, step: str, **info: Any) -> None:
        """Record that ``step`` finished, with its parameters (fields of
        :data:`STEP_FIELDS`), in ``run.json``."""
        record = StepRecord(step)
        for key in info:
            record._field(key)  # an undeclared field is refused before anything is written
        with self.update_meta() as meta:
            meta.setdefault("steps", {})[step] = {"status": "done", "at": now_iso(), **info}

    def step(self, name: str) -> StepRecord:
        """What ``run.json`` records of step ``name`` (:func:`step_record`)."""
        return step_record(self.read_meta(), name)

    def step_done(self, step: str) -> bool:
        if not self.exists():
            return False
        return self.step(step).get("status") == "done"

    # -- samples ------------------------------------------------------------
    def write_samples(self, samples: SampleTable) -> None:
        with atomic_path(self.samples_csv) as tmp, open(tmp, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["index", "path", "label", "true_label"])
            for i, (p, lab, true) in enumerate(zip(samples.paths, samples.labels,
                                                   samples.true_labels, strict=True)):
                w.writerow([i, p, samples.classes[lab], samples.classes[true] if true >= 0 else ""])

    def read_samples(self) -> SampleTable:
        """``samples.csv``; damaged (a row short, a class ``run.json`` does not name, fewer
        rows than the run has samples) or forbidden, one :class:`InputError` naming it."""
        meta = self.read_meta()
        classes = meta.get("classes")
        codes = {c: k for k, c in enumerate(classes or [])}
        paths, labels, true = [], [], []
        try:
            with open(self.samples_csv, newline="", encoding="utf-8") as fh:
                for row in csv.DictReader(fh):
                    paths.append(row["path"])
                    labels.append(codes[row["label"]])
                    true.append(codes[row["true_label"]] if row["true_label"] else -1)
        except FileNotFoundError:
            raise InputError(f"samples.csv is missing in {self.path}: "
                             f"{REMAKE['ingest']}") from None
        except PermissionError:
            raise no_permission(self.samples_csv) from None
        except (KeyError, TypeError, ValueError, csv.Error):
            paths = None
        if paths is None or not classes or len(paths) != meta.get("n_samples", len(paths)):
            raise damaged_file(self.samples_csv, "rows missing or unreadable",
                               "restore it from a backup, or " + REMAKE["ingest"])
        return SampleTable(paths, np.asarray(labels, np.int64), np.asarray(true, np.int64),
                           classes)

    def write_skipped(self, skipped: list[tuple[str, str]]) -> None:
        with atomic_path(self.skipped_csv) as tmp, open(tmp, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["path", "error"])
            w.writerows(skipped)

    def read_skipped(self) -> list[tuple[str, str]]:
        if not self.skipped_csv.is_file():
            return []
        with open(self.skipped_csv, newline="") as fh:
            return [(r["path"], r["error"]) for r in csv.DictReader(fh)]

    # -- arrays -------------------------------------------------------------
    def load_array(self, path: Path, step: str, mmap: bool = False) -> np.ndarray:
        """Load an .npy the run owns (:func:`load_npy`)."""
        return load_npy(path, step, mmap)

    def load_features(self) -> np.ndarray:
        return self.load_array(self.features, "extract")

    def load_embedding(self) -> np.ndarray:
        return self.load_array(self.embedding, "embed")
