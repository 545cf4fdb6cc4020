"""The cluster step shared out to Celery workers: 1 vs 2 workers against the command alone.

On an existing run, times ``curator cluster RUN --auto`` (automatic eps and DBSCAN for
every class) three ways, with the machine's Redis as broker and real ``curator worker``
subprocesses on the ``cpu`` queue:

- baseline: ``--shards 0``, the work on the command's own threads;
- 1 worker: ``--shards 4``, one worker process;
- 2 workers: ``--shards 8``, two worker processes.

Each is the median of ``--repeat`` runs (the first of each is also printed), and the
clusters are checked identical. Prints ``ratio=`` (baseline / 2 workers).

    python -m bench.shards --run /tmp/curator-scale/run-1281167x512-c1000-o0.5
"""

from __future__ import annotations

import argparse
import hashlib
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.common import machine

CURATOR = str(Path(sys.executable).parent / "curator")
BROKER = "redis://127.0.0.1:6379/14"


def _cluster(run: Path, env: dict, shards: int) -> tuple[float, str]:
    t0 = time.perf_counter()
    subprocess.run([CURATOR, "cluster", str(run), "--auto", "--shards", str(shards)], env=env,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seconds = time.perf_counter() - t0
    return seconds, hashlib.sha256((run / "clusters.npy").read_bytes()).hexdigest()


def _start_workers(env: dict, n: int) -> list[subprocess.Popen]:
    procs = []
    for k in range(n):
        log = open(f"/tmp/bench-shards-worker{k}.log", "w")  # noqa: SIM115 - lives with the proc
        procs.append(subprocess.Popen(
            [CURATOR, "worker", "--queues", "cpu", "--concurrency", "1", "--name",
             f"bench{k}@%h"], env=env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True))
    end = time.monotonic() + 60
    while time.monotonic() < end:
        logs = [Path(f"/tmp/bench-shards-worker{k}.log").read_text() for k in range(n)]
        if all(" ready." in text for text in logs):
            return procs
        time.sleep(0.3)
    raise SystemExit("workers did not start: see /tmp/bench-shards-worker*.log")


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        os.killpg(p.pid, signal.SIGTERM)
    for p in procs:
        p.wait(30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", type=Path, required=True)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    run = args.run.resolve()
    import redis

    redis.Redis.from_url(BROKER).flushdb()
    env = {**os.environ, "CURATOR_BROKER_URL": BROKER, "CURATOR_RUNS_ROOT": str(run.parent)}
    results: dict[str, list[float]] = {}
    digests = set()
    for name, workers, shards in (("baseline (no worker, threads)", 0, 0),
                                  ("1 worker", 1, 4), ("2 workers", 2, 8)):
        procs = _start_workers(env, workers) if workers else []
        try:
            for _ in range(args.repeat):
                seconds, digest = _cluster(run, env, shards)
                results.setdefault(name, []).append(seconds)
                digests.add(digest)
        finally:
            _stop(procs)
    n = sum(1 for _ in open(run / "samples.csv")) - 1
    print(f"# cluster --auto on {n:,} samples ({run.name}) · {machine()}")
    for name, values in results.items():
        print(f"{name:<32} median {statistics.median(values):7.1f} s   "
              f"runs {', '.join(f'{v:.1f}' for v in values)}")
    print(f"identical clusters in every run: {len(digests) == 1}")
    base = statistics.median(results["baseline (no worker, threads)"])
    one, two = (statistics.median(results[k]) for k in ("1 worker", "2 workers"))
    print(f"baseline / 1 worker: {base / one:.2f}x   baseline / 2 workers: {base / two:.2f}x")
    print(f"ratio={base / two:.2f}")


if __name__ == "__main__":
    main()
