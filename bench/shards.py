"""Feature extraction shared out to Celery workers: two workers against one.

On a copy of an ingested run (e.g. ``runs/cifar10n``: 50,000 CIFAR-10 images), times the
extract step as ``curator pipeline`` runs it with a broker (worker.jobs.extract_shards: one
``extract-shard`` job per range of images, merged in row order), with real ``curator
worker`` subprocesses on the ``gpu`` queue, each limited to one thread
(``OMP_NUM_THREADS=1``):

- baseline: 1 worker, 2 shards;
- 2 workers, 4 shards.

Each is the median of ``--repeat`` runs from an empty cache. The features of every run
are checked bit-identical to each other and to an extraction in this process (on its own
threads, also timed). Prints the throughput per worker (images/s) and, last,
``ratio=`` (1 worker / 2 workers: the speed-up).

    python -m bench.shards --run runs/cifar10n --model cifar-resnet56 \\
        --weights ../shared/data/weights/resnet56-4bfd9763.th
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import machine

CURATOR = str(Path(sys.executable).parent / "curator")
BROKER = "redis://127.0.0.1:6379/14"
RUN_FILES = ("run.json", "samples.csv", "skipped.csv", "thumbnails.npy", "curation.sqlite")


def _start_workers(env: dict, n: int, logs: Path) -> list[subprocess.Popen]:
    procs = []
    for k in range(n):
        log = open(logs / f"worker{k}.log", "w")  # noqa: SIM115 - lives with the process
        procs.append(subprocess.Popen(
            [CURATOR, "worker", "--queues", "gpu", "--concurrency", "1", "--name",
             f"bench{k}@%h"], env=env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True))
    end = time.monotonic() + 120
    while time.monotonic() < end:
        if all(" ready." in (logs / f"worker{k}.log").read_text() for k in range(n)):
            return procs
        time.sleep(0.3)
    raise SystemExit(f"workers did not start: see {logs}/worker*.log")


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        os.killpg(p.pid, signal.SIGTERM)
    for p in procs:
        p.wait(60)


def _fresh(run) -> None:  # noqa: ANN001 - RunDir
    """Forget every computed feature, so the next extraction computes them all."""
    for path in run.cache.glob("features-*.npy"):
        path.unlink()
    for path in run.cache.glob("parts-*"):
        shutil.rmtree(path)
    run.features.unlink(missing_ok=True)


def _extract(run, opts, compute=None) -> tuple[float, str]:  # noqa: ANN001
    from worker.pipeline.features.extraction import extract
    from worker.pipeline.sources.ingest import open_run_dataset

    _fresh(run)
    t0 = time.perf_counter()
    extract(run, open_run_dataset(run), opts, compute=compute)
    seconds = time.perf_counter() - t0
    return seconds, hashlib.sha256(run.features.read_bytes()).hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", type=Path, required=True, help="an ingested run to copy")
    ap.add_argument("--model", default=None)
    ap.add_argument("--weights", type=Path, default=None)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-shards-"))
    root = work / "runs"
    (root / "bench").mkdir(parents=True)
    for name in RUN_FILES:
        if (args.run / name).is_file():
            shutil.copy2(args.run / name, root / "bench" / name)
    os.environ.update(CURATOR_BROKER_URL=BROKER, CURATOR_RUNS_ROOT=str(root))
    import redis

    from worker.jobs.dispatchers import CeleryDispatcher
    from worker.jobs.extract_shards import sharded
    from worker.pipeline.features.feature_options import FeatureOptions
    from worker.pipeline.storage.rundir import RunDir
    from worker.settings import load_settings

    redis.Redis.from_url(BROKER).flushdb()
    run = RunDir(root / "bench")
    opts = FeatureOptions(model=args.model, weights=args.weights.resolve() if args.weights
                          else None, batch_size=args.batch_size)
    dispatcher = CeleryDispatcher(load_settings())
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    results: dict[str, list[float]] = {}
    digests = set()
    seconds, digest = _extract(run, opts)
    results[f"in this process ({os.cpu_count()} threads)"] = [seconds]
    digests.add(digest)
    for name, workers, shards in (("1 worker, 2 shards", 1, 2), ("2 workers, 4 shards", 2, 4)):
        procs = _start_workers(env, workers, work)
        try:
            for _ in range(args.repeat):
                seconds, digest = _extract(run, opts, sharded(dispatcher, "bench", shards))
                results.setdefault(name, []).append(seconds)
                digests.add(digest)
        finally:
            _stop(procs)
    n = len(run.read_samples().paths)
    print(f"# extraction of {n:,} images, {opts.model or 'default model'}, batch "
          f"{opts.batch_size}, workers on 1 thread each · {machine()}")
    for name, values in results.items():
        med = statistics.median(values)
        print(f"{name:<28} median {med:7.1f} s  ({n / med:6.0f} images/s)   "
              f"runs {', '.join(f'{v:.1f}' for v in values)}")
    print(f"bit-identical features in every run: {len(digests) == 1}")
    one, two = (statistics.median(results[k]) for k in ("1 worker, 2 shards",
                                                        "2 workers, 4 shards"))
    print(f"ratio={one / two:.2f}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
