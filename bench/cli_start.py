"""How long ``curator --help`` and ``curator override --help`` take to start, and the
processes that submit or list jobs: ``curator jobs RUN`` and the app's start.

Baselines, measured in the same run: the same help printed after importing what the CLI
imported at its top before its imports were made lazy (torch via the model list,
scikit-learn and scipy via the rule list, numpy and PIL via the run directory); the same
``curator jobs`` and app start after importing what they loaded before the job
parameters, the training launcher and the job handlers stopped loading torch. Prints the
median of REPEAT runs of each, ``cli_start_ratio=`` and ``job_client_start_ratio=``
(baseline / now, the smaller of each pair).

    python -m bench.cli_start [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import machine

EAGER = ("import worker.pipeline.map.clustering, worker.pipeline.sources.datasets, "
         "worker.pipeline.features.backbones, worker.pipeline.storage.rundir; ")
# What `curator jobs` and the app loaded at their start before (through FeatureOptions in
# the extraction module, TRAIN_MODELS in the training model module, the handlers' imports).
TORCH_BEFORE = "import worker.pipeline.features.extraction, worker.train.model; "


def median_s(argv: list[str], repeat: int, env: dict[str, str] | None = None) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True, env=env)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    a = ap.parse_args()
    print(f"# curator start-up · {machine()}")
    ratios = []
    for args in (["--help"], ["override", "--help"]):
        run = f"import sys; from worker.cli import main; sys.argv = ['curator', *{args!r}]; main()"
        now = median_s([sys.executable, "-c", run], a.repeat)
        before = median_s([sys.executable, "-c", EAGER + run], a.repeat)
        ratios.append(before / now)
        print(f"curator {' '.join(args)}: {now:.3f} s (eager imports: {before:.3f} s, "
              f"{before / now:.1f}x)")
    print(f"cli_start_ratio={min(ratios):.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        print(f"job_client_start_ratio={_job_clients(Path(tmp), a.repeat):.1f}")


def _job_clients(root: Path, repeat: int) -> float:
    """``curator jobs`` on a run with one job, and the app's start on a runs root."""
    from worker.pipeline.storage.job_store import JobStore

    (root / "run").mkdir()
    JobStore(root / "run" / "curation.sqlite").create("export", {"format": "csv", "name": "x"})
    env = {**os.environ, "CURATOR_RUNS_ROOT": str(root), "CURATOR_BROKER_URL": ""}
    jobs = ("import sys; from worker.cli import main; "
            f"sys.argv = ['curator', 'jobs', {str(root / 'run')!r}]; main()")
    app = "from app.server import create_app; create_app()"
    ratios = []
    for name, code in (("curator jobs RUN", jobs), ("the app's start", app)):
        now = median_s([sys.executable, "-c", code], repeat, env)
        before = median_s([sys.executable, "-c", TORCH_BEFORE + code], repeat, env)
        ratios.append(before / now)
        print(f"{name}: {now:.3f} s (with torch loaded, as before: {before:.3f} s, "
              f"{before / now:.1f}x)")
    return min(ratios)


if __name__ == "__main__":
    main()
