"""Findings where the data is most broken: a grid of conditions, one score per cell, and
the worst cell per kind.

Each cell is ``curator pipeline`` on CIFAR-10's photographs (the shared ``cifar10-mini``
train split: 2,000 images, 200 a class) with the default backbone, with copies or outliers
injected as the cell says (``--inject-duplicates`` / ``--inject-outliers``; the truth is in
the run's ``injected.csv``), scored by ``curator evaluate``'s findings scores. A copy cell
gives the duplicate kind's precision, recall and F1 (a family of copies counts once); an
outlier cell the outlier kind's F1, AUROC and ``queue2x`` (the share of the outliers among
the first 2× their number of rows by score). Finished runs are reused (the pipeline resumes).

Sizes:
- ``ci``: the cells the regression guard (bench/regression_guard.py) runs in CI's time:
  copies at 5% and at 26.5% of the images (530 copies of 2,000 photographs: 42% of the
  images in a copy pair, where the copies' calibration gives way), and one batch of 40
  grey photographs among the colour ones (a source no outlier cut was chosen on), in
  random class folders.
- ``2k``: the grid at 2,000 images: copy rates 1-50% and outlier batches of 1-100 from three
  sources (grey photographs, line drawings, digits).

No cut was chosen on any of these cells ("chosen" is printed per cell for when one is).
Prints one line per cell and ``worst_copy_f1=``, ``worst_copy_precision=``,
``worst_outlier_queue2x=``, ``worst_outlier_auroc=``, ``worst_outlier_f1=`` over the cells a
cut was not chosen on.

    python -m bench.stress [--size ci|2k] [--runs DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

from bench.common import bench_env, cifar_mini_folder, curator_cmd, machine


@dataclass(frozen=True)
class Cell:
    """One condition: ``kind`` is ``copies`` or ``outliers``; ``flags`` the injection's
    ``curator pipeline`` flags; ``chosen`` whether a cut was chosen looking at it."""

    name: str
    kind: str
    flags: tuple[str, ...]
    chosen: bool = False


def copies(rate: float, strength: str = "mixed") -> Cell:
    return Cell(f"copies-{rate * 100:g}pct-{strength}", "copies",
                ("--inject-duplicates", str(rate), "--duplicate-strength", strength))


def outliers(n: int, source: str = "digits") -> Cell:
    return Cell(f"outliers-{n}-{source}", "outliers",
                ("--inject-outliers", str(n), "--outlier-sources", source))


GRIDS = {
    "ci": (copies(0.05), copies(0.265), outliers(40, "grey")),
    "2k": (*(copies(r) for r in (0.01, 0.05, 0.1, 0.2, 0.35, 0.5)),
           *(outliers(n, source) for source in ("grey", "lines", "digits")
             for n in (1, 5, 20, 40, 100))),
}


def run_cell(cell: Cell, runs: Path) -> dict:
    """The cell's pipeline (reused when finished) and its scores."""
    from worker.pipeline.evaluation.run_report import evaluate
    from worker.pipeline.storage.rundir import RunDir

    out = runs / cell.name
    cmd = [*curator_cmd(), "pipeline", "--dataset", f"folder:{cifar_mini_folder()}",
           "--split", "train", *cell.flags, "--seed", "0", "--out", str(out)]
    subprocess.run(cmd, check=True, capture_output=True, env=bench_env())
    found = evaluate(RunDir(out), with_cleanlab=False)["findings"]
    kind = found["duplicate" if cell.kind == "copies" else "outlier"]
    keys = (("precision", "recall", "f1") if cell.kind == "copies"
            else ("precision", "recall", "f1", "auroc", "queue2x"))
    return {"cell": cell.name, "kind": cell.kind, "chosen": cell.chosen,
            "marked": kind["marked"], **{k: kind.get(k) for k in keys}}


def worst(results: list[dict]) -> dict[str, float]:
    """The worst held-out cell per kind and figure (cells a cut was chosen on left out)."""
    held = [r for r in results if not r["chosen"]]
    out = {}
    for kind, name, figures in (("copies", "copy", ("f1", "precision")),
                                ("outliers", "outlier", ("queue2x", "auroc", "f1"))):
        cells = [r for r in held if r["kind"] == kind]
        for f in figures:
            values = [r[f] for r in cells if r[f] is not None]
            if values:
                out[f"worst_{name}_{f}"] = min(values)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", choices=sorted(GRIDS), default="ci")
    ap.add_argument("--runs", type=Path, default=None,
                    help="where the cells' runs go (default runs/stress-SIZE)")
    ap.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = ap.parse_args()
    runs = args.runs or Path("runs") / f"stress-{args.size}"
    print(f"# findings under stress, size {args.size} · {machine()}")
    results = []
    for cell in GRIDS[args.size]:
        r = run_cell(cell, runs)
        results.append(r)
        print(" · ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}"
                         for k, v in r.items()), flush=True)
    lines = worst(results)
    for k, v in lines.items():
        print(f"{k}={v:.3f}")
    if args.json:
        args.json.write_text(json.dumps({"cells": results, "worst": lines}, indent=1))


if __name__ == "__main__":
    main()
