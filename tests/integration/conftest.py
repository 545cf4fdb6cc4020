"""What the integration tests share: real runs built once (scikit-learn's digits, images
from ../shared/data), the ``curator`` command run as a user runs it, and real services:
Redis at 127.0.0.1:6379 (started if stopped), ``curator worker`` subprocesses, and a
throw-away Redis on another port for outage tests.

``CURATOR_SHARED_DATA`` points at the shared data folder (default ``../shared/data`` from
the project root); tests that need it skip, saying why, when it is missing.

Tests use Redis database 15 and flush it before and after, so they never touch data in
the database an app on this machine uses; each further pytest-xdist process uses its own
(14, 13, …): a worker one test started must never take another test's job off a shared
queue (it would find no such run in its runs root and drop it), and one process's flush
must not empty another's queue.
"""

from __future__ import annotations

import os
import pickle
import shutil
import signal
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.conftest import ROOT

SHARED = Path(os.environ.get("CURATOR_SHARED_DATA", ROOT.parent / "shared" / "data")).resolve()
_XDIST_INDEX = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
TEST_DB_URL = f"redis://127.0.0.1:6379/{15 - _XDIST_INDEX % 15}"
BIN = Path(sys.executable).parent
CURATOR = str(BIN / "curator")
REDIS_START = ["redis-server", "--daemonize", "yes", "--bind", "127.0.0.1", "-::1", "--port",
               "6379", "--save", "", "--appendonly", "no"]


def redis_alive(url: str) -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except (redis.RedisError, OSError):
        return False


@pytest.fixture(scope="session")
def redis_url() -> str:
    """The test database of the machine's Redis; starts Redis if it is stopped."""
    import redis

    if not redis_alive(TEST_DB_URL):
        if not shutil.which("redis-server"):
            pytest.skip("Redis is not running and redis-server is not installed")
        subprocess.run(REDIS_START, check=True, capture_output=True)
        for _ in range(50):
            if redis_alive(TEST_DB_URL):
                break
            time.sleep(0.1)
    client = redis.Redis.from_url(TEST_DB_URL)
    client.flushdb()
    yield TEST_DB_URL
    client.flushdb()


class Worker:
    """A ``curator worker`` subprocess in its own process group, with its log captured."""

    def __init__(self, env: dict[str, str], name: str, queues: str = "gpu,cpu") -> None:
        self.name = name
        self.log: list[str] = []
        self.proc = subprocess.Popen(
            [CURATOR, "worker", "--queues", queues, "--concurrency", "1", "--name",
             f"{name}@%h", "--loglevel", "INFO"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.log.append(line.rstrip())

    def wait_ready(self, timeout: float = 60) -> Worker:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if any(" ready." in ln for ln in self.log):
                return self
            if self.proc.poll() is not None:
                break
            time.sleep(0.2)
        raise AssertionError(f"worker {self.name} did not start:\n" + "\n".join(self.log[-40:]))

    def kill_all(self) -> None:
        """SIGKILL the worker and its pool processes (a crashed host)."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.kill_all()


@pytest.fixture
def runs_root(tmp_path) -> Path:
    root = tmp_path / "runs"
    root.mkdir()
    return root


@pytest.fixture
def broker_env(redis_url, runs_root) -> dict[str, str]:
    env = dict(os.environ)
    env.update(CURATOR_BROKER_URL=redis_url, CURATOR_RUNS_ROOT=str(runs_root),
               CURATOR_STALE_AFTER="3", PYTHONUNBUFFERED="1")
    return env


@pytest.fixture
def start_worker(broker_env):
    """Start workers for one test; all are stopped at its end."""
    workers: list[Worker] = []

    def start(name: str, queues: str = "gpu,cpu", env: dict | None = None) -> Worker:
        w = Worker(env or broker_env, name, queues)
        workers.append(w)
        return w.wait_ready()

    yield start
    for w in workers:
        w.stop()


def curator(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``curator ARGS...`` in a subprocess, as a user runs it: its exit status and output."""
    return subprocess.run([CURATOR, *args], capture_output=True, text=True, cwd=cwd,
                          timeout=600)


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
    """A complete digits run (pixels, 10% injected noise), built once per test process."""
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
    filed under random labels (an island of outliers), short map, built once per test process;
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
