"""How long ``curator --help`` and ``curator override --help`` take to start.

Baseline, measured in the same run: the same help printed after importing what the CLI
imported at its top before its imports were made lazy (torch via the model list,
scikit-learn and scipy via the rule list, numpy and PIL via the run directory). Prints
the median of REPEAT runs of each and ``cli_start_ratio=`` (baseline / now).

    python -m bench.cli_start [--repeat 7]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from bench.common import machine

EAGER = ("import worker.pipeline.map.clustering, worker.pipeline.sources.datasets, "
         "worker.pipeline.features.backbones, worker.pipeline.storage.rundir; ")


def median_s(argv: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True)
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


if __name__ == "__main__":
    main()
