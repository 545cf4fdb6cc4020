"""Real services for integration tests: Redis at 127.0.0.1:6379 (started if stopped),
``curator worker`` subprocesses, and a throw-away Redis on another port for outage tests.

Tests use Redis database 15 and flush it before and after, so they never touch data in
the database an app on this machine uses.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

TEST_DB_URL = "redis://127.0.0.1:6379/15"
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
