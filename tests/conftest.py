"""Shared fixtures: real images from scikit-learn's digits and ../shared/data.

``CURATOR_SHARED_DATA`` points at the shared data folder (default ``../shared/data`` from
the project root); tests that need it skip, saying why, when it is missing.
"""

from __future__ import annotations

import os
import sys

# One BLAS kernel on every x86-64 machine, so the seeded runs' golden values
# (tests/golden.py) hold on any CPU: OpenBLAS picks its kernel by CPU model (SkylakeX on
# most AVX-512 parts, Haswell on others, AMD Zen 5 included), the kernels round
# differently, and t-SNE carries that into the map (DBSCAN noise on the digits demo: 237
# flags with the SkylakeX kernel, 227 with Haswell's). Haswell's runs on every x86-64 CPU
# with AVX2. Set before numpy loads OpenBLAS; the `curator` subprocesses inherit it.
# `make test` sets it too, before pytest (and any plugin) imports numpy.
if "numpy" in sys.modules and "OPENBLAS_CORETYPE" not in os.environ:  # pragma: no cover
    sys.exit("tests: run them through `make test`, or set OPENBLAS_CORETYPE=Haswell first "
             "(numpy was imported before tests/conftest.py could set it)")
os.environ.setdefault("OPENBLAS_CORETYPE", "Haswell")
# Idle OpenMP threads sleep instead of spinning. Two pytest workers and their subprocesses
# share 2 cores, and torch's spinning threads took the CPU the other process needed: two
# ResNet-18 forward loops side by side took 12.0 s each, 7.2 s with PASSIVE (4.1-4.7 s
# alone, with either policy; docs/benchmarks.md, "The suite's time"). Numbers are unchanged.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pickle  # noqa: E402 - after the BLAS kernel is chosen
import tarfile  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from PIL import Image  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("CURATOR_SHARED_DATA", ROOT.parent / "shared" / "data")).resolve()

# The files that take longest run first (about 9, 6, 4 and 3 minutes of a worker's time,
# docs/benchmarks.md), so that the many short ones fill both pytest workers' ends instead of
# one long file running alone while the other worker idles: `make test` hands whole files
# out in this order (xdist's --dist loadfile --no-loadscope-reorder).
LONGEST_FIRST = ("test_jobs.py", "test_ui.py", "test_train.py", "test_scale.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The files in LONGEST_FIRST first, the rest as collected (a stable sort)."""
    def rank(item: pytest.Item) -> int:
        name = item.path.name
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)


def shared_file(name: str) -> Path:
    path = SHARED / name
    if not path.exists():
        pytest.skip(f"{path} is missing (set CURATOR_SHARED_DATA to the shared data folder)")
    return path


@pytest.fixture(scope="session")
def cifar_mini(tmp_path_factory) -> Path:
    """The 3,000-image CIFAR-10 JPEG folder: cifar10-mini/{train,test}/<class>/NNNN.jpg."""
    archive = shared_file("cifar10-jpeg-mini.tar.gz")
    out = tmp_path_factory.mktemp("cifar-mini")
    with tarfile.open(archive) as tar:
        tar.extractall(out, filter="data")
    return out / "cifar10-mini"


def train_photos(cifar_mini: Path, per_class: int) -> np.ndarray:
    """The first ``per_class`` CIFAR-10 mini train photographs of each class, classes in
    name order: uint8 (10 · per_class, 32, 32, 3)."""
    from PIL import Image

    out = []
    for cls in sorted(p.name for p in (cifar_mini / "train").iterdir()):
        for f in sorted((cifar_mini / "train" / cls).glob("*.jpg"))[:per_class]:
            out.append(np.asarray(Image.open(f).convert("RGB")))
    return np.stack(out)


@pytest.fixture(scope="session")
def cifar_batches(cifar_mini, tmp_path_factory) -> Path:
    """A real ``cifar-10-batches-py`` folder holding the mini JPEGs (train: 5 batches)."""
    classes = sorted(p.name for p in (cifar_mini / "train").iterdir())
    out = tmp_path_factory.mktemp("cifar-py") / "cifar-10-batches-py"
    out.mkdir()

    def pack(split: str) -> tuple[np.ndarray, list[int]]:
        imgs, labels = [], []
        for k, c in enumerate(classes):
            for f in sorted((cifar_mini / split / c).glob("*.jpg"))[:40]:
                imgs.append(np.asarray(Image.open(f).convert("RGB")).transpose(2, 0, 1).ravel())
                labels.append(k)
        return np.stack(imgs), labels

    data, labels = pack("train")
    for b, chunk in enumerate(np.array_split(np.arange(len(labels)), 5), 1):
        with open(out / f"data_batch_{b}", "wb") as fh:
            pickle.dump({b"data": data[chunk], b"labels": [labels[i] for i in chunk]}, fh)
    data, labels = pack("test")
    with open(out / "test_batch", "wb") as fh:
        pickle.dump({b"data": data, b"labels": labels}, fh)
    with open(out / "batches.meta", "wb") as fh:
        pickle.dump({b"label_names": [c.encode() for c in classes]}, fh)
    return out.parent


@pytest.fixture
def small_folder(cifar_mini, tmp_path) -> Path:
    """A 3-class image folder of 30 real CIFAR JPEGs each, writable (for corrupt files)."""
    root = tmp_path / "imgs"
    for c in ("airplane", "cat", "ship"):
        (root / c).mkdir(parents=True)
        for f in sorted((cifar_mini / "train" / c).glob("*.jpg"))[:30]:
            (root / c / f.name).write_bytes(f.read_bytes())
    return root


@pytest.fixture(scope="session")
def digits_run(tmp_path_factory):
    """A complete digits run (pixels, 10% injected noise), built once per session."""
    from worker.pipeline.features.feature_options import FeatureOptions
    from worker.pipeline.map.embedding import EmbeddingOptions
    from worker.pipeline.runner import run_pipeline
    from worker.pipeline.sources.datasets import parse_spec
    from worker.pipeline.sources.ingest import DatasetOptions
    from worker.pipeline.storage.rundir import RunDir

    run = RunDir(tmp_path_factory.mktemp("runs") / "digits")
    run_pipeline(run, DatasetOptions(parse_spec("digits"), inject_noise=0.1, seed=0),
                 FeatureOptions(), EmbeddingOptions())
    return run


@pytest.fixture(scope="session")
def island_build(tmp_path_factory) -> Path:
    """A runs root holding ``digits``: scikit-learn's digits with 30 injected line drawings
    filed under random labels (an island of outliers), short map, built once per session;
    tests take a private copy (``island_root``)."""
    from worker.pipeline.features.feature_options import FeatureOptions
    from worker.pipeline.map.embedding import EmbeddingOptions
    from worker.pipeline.runner import run_pipeline
    from worker.pipeline.sources.datasets import parse_spec
    from worker.pipeline.sources.ingest import DatasetOptions
    from worker.pipeline.storage.rundir import RunDir

    root = tmp_path_factory.mktemp("islands")
    run_pipeline(RunDir(root / "digits"),
                 DatasetOptions(parse_spec("digits"), inject_outliers=30,
                                outlier_sources="lines", seed=0),
                 FeatureOptions(), EmbeddingOptions(n_iter=50, exaggeration_iter=25))
    return root


@pytest.fixture
def island_root(island_build, tmp_path) -> Path:
    """A private copy of ``island_build``'s runs root, safe to curate."""
    import shutil

    shutil.copytree(island_build, tmp_path / "island-runs")
    return tmp_path / "island-runs"


@pytest.fixture
def fresh_run(digits_run, tmp_path):
    """A private copy of the digits run, safe to curate and export."""
    import shutil

    from worker.pipeline.storage.rundir import RunDir

    dest = tmp_path / "digits"
    shutil.copytree(digits_run.path, dest)
    return RunDir(dest)
