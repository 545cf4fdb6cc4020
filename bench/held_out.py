"""Held-out rows: the findings' cuts on the injections they were chosen on, beside
injections made after they were chosen (issue 46, item 2).

    PYTHONPATH=. .venv/bin/python -m bench.held_out [--out /tmp/held_out] [--full]

Two ``curator pipeline`` runs on the shared CIFAR-10 JPEG archive (the mini: 2,000 train /
1,000 test; ``--full``: 50,000 / 10,000), default backbone (EfficientNet-Lite0, ImageNet-
pretrained: it never saw CIFAR's labels), reused when done:

- ``chosen``:   ``--inject-duplicates 0.05 --duplicate-strength mixed --inject-outliers K``
  (exact, light, medium, strong copies; digits, photograph, noise and blank outliers): the
  rows the cuts were chosen on;
- ``held-out``: ``--inject-duplicates 0.05 --duplicate-strength held-out --inject-outliers K
  --outlier-sources held-out`` (crop, rotate, jitter, blur, jpeg, overlay and aspect copies;
  grey photographs, line drawings, textures, shapes and noisy colours): made afterwards,
  never looked at when a cut was chosen.

For each run and kind: P/R/F1 of what it marks (dropped and proposed) and of what it drops
by default, recall per strength or source, the outlier score's AUROC; and the gap between
the rows (a cut is kept only if the held-out F1 stays within 0.05 of the chosen-on F1).
Prints one JSON object per row and writes ``OUT/results.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import numpy as np

from bench.common import ROOT, SHARED, machine

CURATOR = ROOT / ".venv" / "bin" / "curator"
ENV = {**os.environ, "OPENBLAS_CORETYPE": "Haswell", "PYTHONPATH": str(ROOT)}
SIZES = {"mini": ("cifar10-jpeg-mini.tar.gz", "cifar10-mini", 40),
         "full": ("cifar10-jpeg.tar.gz", "cifar10", 400)}
ROWS = {"chosen": ["--duplicate-strength", "mixed"],
        "held-out": ["--duplicate-strength", "held-out", "--outlier-sources", "held-out"]}


def _data(out: Path, size: str) -> Path | None:
    archive, folder, _ = SIZES[size]
    root = out / "data" / folder
    if (root / ".unpacked").is_file():
        return root
    if not (SHARED / archive).is_file():
        return None
    with tarfile.open(SHARED / archive) as tar:
        tar.extractall(out / "data", filter="data")
    (root / ".unpacked").write_text("")
    return root


def _run(run: Path, data: Path, row: str, outliers: int) -> None:
    meta = run / "run.json"
    if meta.is_file() and json.loads(meta.read_text()).get("steps", {}).get(
            "findings", {}).get("status") == "done":
        print(f"  reusing {run}", flush=True)
        return
    shutil.rmtree(run, ignore_errors=True)
    run.parent.mkdir(parents=True, exist_ok=True)
    cmd = [str(CURATOR), "pipeline", "--dataset", f"folder:{data}", "--seed", "0",
           "--inject-duplicates", "0.05", "--inject-outliers", str(outliers), *ROWS[row],
           "--out", str(run)]
    print("  $ " + " ".join(cmd), flush=True)
    with open(run.parent / f"{row}.log", "w") as fh:
        if subprocess.run(cmd, cwd=ROOT, env=ENV, stdout=fh, stderr=subprocess.STDOUT).returncode:
            raise SystemExit(f"pipeline failed: see {run.parent / (row + '.log')}")


def _prf(hit: int, marked: int, truth: int) -> dict:
    p = hit / marked if marked else 0.0
    r = hit / truth if truth else 0.0
    return {"precision": round(p, 3), "recall": round(r, 3),
            "f1": round(2 * p * r / (p + r), 3) if p + r else 0.0}


def score(run_path: Path) -> dict:
    """Each injected kind's scores (module docstring) for one run."""
    from worker.pipeline.evaluation.run_report import evaluate
    from worker.pipeline.findings import get_kind
    from worker.pipeline.findings.files import load_findings
    from worker.pipeline.sources.inject import read_truth
    from worker.pipeline.storage.rundir import RunDir

    run = RunDir(run_path)
    found = evaluate(run, with_cleanlab=False)["findings"]
    n = len(run.read_samples())
    tables = load_findings(run, n)
    out = {}
    for kind in ("duplicate", "outlier"):
        s = found[kind]
        row = {"marked": s["marked"], **{k: s[k] for k in ("precision", "recall", "f1")},
               "dropped": {k: s["dropped"][k] for k in ("marked", "precision", "recall",
                                                         "f1")}}
        if kind == "duplicate":
            row["recall_by"] = s["recall_by_strength"]
        else:
            row["auroc"] = s["auroc"]
            truth = [r for r in read_truth(run.path) if r["kind"] == "outlier"]
            table = tables["outlier"]
            dropping = get_kind("outlier").dropping(table)
            by = {}
            for how in sorted({r["how"] for r in truth}):
                idx = np.array([r["index"] for r in truth if r["how"] == how])
                by[how] = {"marked": round(float(table.issue[idx].mean()), 3),
                           "dropped": round(float(dropping[idx].mean()), 3)}
            row["recall_by"] = by
        out[kind] = row
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("/tmp/held_out"))
    ap.add_argument("--full", action="store_true")
    a = ap.parse_args()
    size = "full" if a.full else "mini"
    print(machine(), flush=True)
    data = _data(a.out, size)
    if data is None:
        print(f"no {SIZES[size][0]} in {SHARED}: nothing to measure")
        return
    results = {}
    for row in ROWS:
        print(row, flush=True)
        _run(a.out / size / row, data, row, SIZES[size][2])
        results[row] = score(a.out / size / row)
        print("  " + json.dumps(results[row]), flush=True)
    gap = {k: round(results["held-out"][k]["f1"] - results["chosen"][k]["f1"], 3)
           for k in ("duplicate", "outlier")}
    results["gap_f1"] = gap
    print("held-out F1 − chosen-on F1: " + json.dumps(gap))
    (a.out / f"results-{size}.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
