"""The plateau rule (worker/train/convergence.py) against what longer training says.

    PYTHONPATH=. .venv/bin/python -m bench.convergence [--run RUN] [--epochs 2,4,8,16,32]
        [--model resnet18] [--out /tmp/convergence]

Trains ``full`` and ``filtered`` on a run (default: the digits demo, made with ``curator
pipeline --dataset digits --inject-noise 0.1 --seed 0`` under OUT) at each number of
epochs, each its own training with its own schedule (warm-up, cosine decay to zero), plus
the defaults (epochs from the rule of worker/train/plan.py). For each: the final test
accuracy, whether the plateau rule calls it converged, its gain and loss drop over the
window; and for each number of epochs, the sign of filtered − full beside the sign at the
longest training: a rule that calls a run converged should not see its comparison turn
over when training goes on.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from dataclasses import replace
from pathlib import Path

from bench.common import bench_env, curator_cmd, machine


def main() -> None:
    from worker.pipeline.storage.rundir import RunDir
    from worker.train.config import TrainConfig
    from worker.train.launch import launch

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path)
    ap.add_argument("--epochs", default="2,4,8,16,32")
    ap.add_argument("--model", default="resnet18")
    ap.add_argument("--out", type=Path, default=Path("/tmp/convergence"))
    a = ap.parse_args()
    print(machine(), flush=True)
    run_path = a.run or a.out / "demo"
    if a.run is None and not (run_path / "embedding.npy").is_file():
        subprocess.run([*curator_cmd(), "pipeline", "--dataset", "digits", "--inject-noise",
                        "0.1", "--seed", "0", "--out", str(run_path)], check=True,
                       env=bench_env(), stdout=subprocess.DEVNULL)
    run = RunDir(run_path)
    rows = []
    for epochs in [None, *(int(e) for e in a.epochs.split(","))]:
        accs = {}
        for subset in ("full", "filtered"):
            cfg = replace(TrainConfig(subset=subset, model=a.model, epochs=epochs), seed=0)
            s = launch(run, cfg)
            c = s["convergence"]
            row = {"epochs": s["epochs_done"], "default": epochs is None, "subset": subset,
                   "test_acc": round(100 * s["final_test_acc"], 2),
                   "converged": s["converged"], "gain_pp": c["gain_pp"],
                   "loss_drop": c["loss_drop"], "seconds": round(s["seconds"], 1)}
            rows.append(row)
            accs[subset] = row["test_acc"]
            print(json.dumps(row), flush=True)
        rows[-1]["filtered_minus_full"] = round(accs["filtered"] - accs["full"], 2)
    # the row of each pair that carries the difference (filtered's)
    longest = max((r for r in rows if not r["default"] and "filtered_minus_full" in r),
                  key=lambda r: r["epochs"])
    sign = longest["filtered_minus_full"] > 0
    for r in rows:
        if "filtered_minus_full" in r:
            r["same_sign_as_longest"] = (r["filtered_minus_full"] > 0) == sign
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "results.json").write_text(json.dumps(rows, indent=2))
    print(f"results: {a.out / 'results.json'}")


if __name__ == "__main__":
    main()
