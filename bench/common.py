"""Helpers shared by the benchmark scripts: paths, timing, machine description."""

from __future__ import annotations

import os
import platform
import shutil
import sys
import tarfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from worker.pipeline.features.feature_options import FeatureOptions
    from worker.pipeline.sources.ingest import DatasetOptions

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("CURATOR_SHARED_DATA", ROOT.parent / "shared" / "data")).resolve()


def curator_cmd() -> list[str]:
    """``curator`` of this checkout's venv, or ``python -m app.cli`` where there is none
    (a GPU host runs the working tree as it is: ../shared/gpu-host/README.md)."""
    venv = ROOT / ".venv" / "bin" / "curator"
    return [str(venv)] if venv.is_file() else [sys.executable, "-m", "app.cli"]


def bench_env() -> dict[str, str]:
    """The environment for a ``curator`` subprocess: this checkout first on the path, any
    path already set (a GPU host's carried wheels) after it."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "OPENBLAS_CORETYPE": "Haswell", "PYTHONPATH": path}


def machine() -> str:
    """One line: date, CPU count, platform, GPU if any."""
    import torch

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    return f"{date.today()} · {os.cpu_count()} cores · {platform.machine()} · {gpu}"


def timed(fn: Callable, repeat: int = 1) -> tuple[float, object]:
    """Best wall time of ``repeat`` calls, and the last result."""
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def _unpacked(folder: str, archive_name: str, dest: Path) -> Path:
    """``dest/folder``, unpacked once from the shared archive ``archive_name``."""
    root = dest / folder
    if not (root / "train").is_dir():
        archive = SHARED / archive_name
        if not archive.is_file():
            raise SystemExit(f"{archive} is missing: set CURATOR_SHARED_DATA")
        dest.mkdir(parents=True, exist_ok=True)
        with tarfile.open(archive) as tar:
            tar.extractall(dest, filter="data")
    return root


def cifar_folder(dest: Path = Path("/tmp/curator-bench")) -> Path:
    """The shared CIFAR-10 JPEG folder, unpacked once under ``dest``."""
    return _unpacked("cifar10", "cifar10-jpeg.tar.gz", dest)


def cifar_train_images(n: int):  # noqa: ANN201 - numpy stays out of the bench's import
    """The first ``n`` of CIFAR-10's train photographs (file order), uint8 (n, 32, 32, 3)."""
    import numpy as np
    from PIL import Image

    files = sorted((cifar_folder() / "train").rglob("*.jpg"))[:n]
    return np.stack([np.asarray(Image.open(f).convert("RGB")) for f in files])


def cifar_mini_folder(dest: Path = Path("/tmp/curator-bench")) -> Path:
    """The shared 3,000-image ``cifar10-mini`` folder, unpacked once under ``dest``."""
    return _unpacked("cifar10-mini", "cifar10-jpeg-mini.tar.gz", dest)


def findings_done(run: Path) -> bool:
    """Whether ``run``'s pipeline got through its findings step."""
    import json

    try:
        meta = json.loads((run / "run.json").read_text())
    except (OSError, ValueError):
        return False
    return meta.get("steps", {}).get("findings", {}).get("status") == "done"


def curator_pipeline(run: Path, dataset: str, *extra: str) -> None:
    """``curator pipeline --dataset DATASET --seed 0 EXTRA --out RUN`` as a subprocess
    (``OPENBLAS_CORETYPE=Haswell``), its output in ``RUN.log`` beside it; a run whose
    findings step is done is reused."""
    import subprocess

    if findings_done(run):
        print(f"  reusing {run}", flush=True)
        return
    shutil.rmtree(run, ignore_errors=True)
    run.parent.mkdir(parents=True, exist_ok=True)
    cmd = [*curator_cmd(), "pipeline", "--dataset", dataset, "--seed", "0", *extra,
           "--out", str(run)]
    print("  $ " + " ".join(cmd), flush=True)
    log = run.parent / f"{run.name}.log"
    with open(log, "w") as fh:
        if subprocess.run(cmd, cwd=ROOT, env=bench_env(), stdout=fh,
                          stderr=subprocess.STDOUT).returncode:
            raise SystemExit(f"curator pipeline failed for {run}: see {log}")


def place(src: Path, dest: Path) -> None:
    """Put ``src`` at ``dest`` as a hard link (a copy across file systems). Not a symbolic
    link: the dataset listing skips links that leave the dataset folder (issue 21)."""
    if dest.is_symlink():  # laid out by an older version of these helpers
        dest.unlink()
    if dest.exists():
        return
    try:
        os.link(src, dest)
    except OSError:
        shutil.copy2(src, dest)


def cifar_subset(root: Path, per_class: int, test_per_class: int | None = None,
                 offset: int = 0) -> tuple[Path, Path]:
    """A stratified CIFAR-10 subset of ``root`` as hard links: ``per_class`` train images
    of each class after its first ``offset`` (a set disjoint from one at offset 0), and the
    first ``test_per_class`` test images of each class (the whole clean test split when
    None); plus the CIFAR-10N labels CSV cut to it.

    Returns
    -------
    (folder, labels_csv)
    """
    import csv

    tag = f"{per_class}pc" + (f"-t{test_per_class}" if test_per_class else "") + \
        (f"-from{offset}" if offset else "")
    dest = root.parent / f"cifar10-{tag}"
    keep = set()
    for split, start, n in (("train", offset, per_class), ("test", 0, test_per_class)):
        if split == "test" and (dest / "test").is_symlink():
            (dest / "test").unlink()
        for cls in sorted(p.name for p in (root / split).iterdir()):
            (dest / split / cls).mkdir(parents=True, exist_ok=True)
            files = sorted((root / split / cls).glob("*.jpg"))
            for f in files[start:start + n if n else None]:
                place(f.resolve(), dest / split / cls / f.name)
                if split == "train":
                    keep.add(f"train/{cls}/{f.name}")
    labels = dest.parent / f"cifar10n-{tag}.csv"
    with open(SHARED / "cifar10n-train-labels.csv") as src, open(labels, "w", newline="") as out:
        reader = csv.DictReader(src)
        w = csv.DictWriter(out, reader.fieldnames)
        w.writeheader()
        w.writerows(r for r in reader if r["path"] in keep)
    return dest, labels


@dataclass(frozen=True)
class Row:
    """One benchmark row: a dataset with its labels, the features, and a one-line note."""

    name: str
    dataset: DatasetOptions
    features: FeatureOptions
    note: str


def resnet56_features() -> FeatureOptions:
    """The shared CIFAR ResNet-56 weights (trained on CIFAR-10's *true* labels, which
    flatters every detector that uses their features)."""
    from worker.pipeline.features.feature_options import FeatureOptions

    return FeatureOptions(model="cifar-resnet56",
                          weights=SHARED / "weights/resnet56-4bfd9763.th")


def _share_cached_features(row: Row, run) -> None:  # noqa: ANN001 - RunDir
    """Link a sibling bench run's cached features into ``run`` when they have the same
    key (the same images and model: features.cache_key leaves labels out), so rows that
    differ only in their labels extract once."""
    from worker.pipeline.features.extraction import cache_key
    from worker.pipeline.runner import ensure_ingested
    from worker.pipeline.storage.runlock import run_lock

    if row.features.finetune_epochs or row.dataset.spec.kind == "features":
        return
    with run_lock(run, "bench"):
        ds = ensure_ingested(run, row.dataset)
    key = cache_key(run, row.features.for_dataset(ds.spec.kind))
    mine = run.cache / f"features-{key}.npy"
    for other in run.path.parent.glob(f"*/cache/features-{key}.npy"):
        if not mine.exists() and other != mine:
            mine.parent.mkdir(parents=True, exist_ok=True)
            os.link(other, mine)
            return


def run_row(row: Row, run):  # noqa: ANN001, ANN201 - RunDir → (s, samples, decisions, noisy)
    """Run (or reuse) the pipeline of ``row`` in ``run`` with default settings; returns
    (seconds, samples, decisions, noisy) where ``noisy`` (bool, shape (N,)) marks the
    samples whose label differs from the true one."""
    from worker.pipeline.curation.snapshot import current_decisions
    from worker.pipeline.map.embedding import EmbeddingOptions
    from worker.pipeline.runner import run_pipeline

    t = time.perf_counter()
    _share_cached_features(row, run)
    run_pipeline(run, row.dataset, row.features, EmbeddingOptions())
    seconds = time.perf_counter() - t
    samples, decisions, _ = current_decisions(run)
    return seconds, samples, decisions, samples.labels != samples.true_labels
