"""Every finding kind at scale: time and peak memory of the findings step alone.

The findings read what the pipeline's earlier steps leave (features, the neighbour index
the embed step saves, the label evidence); the t-SNE optimisation itself (26 minutes at
1.28M, bench/scale.py) plays no part, so this bench makes the run's features with
``curator extract`` (synthetic class-structured features, bench/synth.py, as
``features:``), builds the neighbour index exactly as the embed step does (PCA to 50
dims, openTSNE's Annoy above 60,000 points; its recall against exact search:
bench/knn_recall.py) with the first two PCA components standing in for the map (no
finding kind reads the map; the cluster step needs one for DBSCAN), runs ``curator
cluster`` (the label kind's evidence), then times ``curator findings RUN`` in a child
process (wall time and ``ru_maxrss``). Printed against the targets: 15 minutes and the
12 GB budget.

    python -m bench.findings_scale                 # 1,281,167 x 512 float16, 1,000 classes
    python -m bench.findings_scale --n 100000 --classes 100
    python -m bench.findings_scale --keep     # leave the run; --reuse times findings again
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

import numpy as np

from bench.common import machine
from bench.scale import BUDGET_GB, run_step
from bench.synth import SynthSpec, write_synthetic

TARGET_S = 15 * 60


def neighbour_index(run: Path) -> float:
    """neighbours.npy as the embed step writes it; returns its seconds."""
    from worker.pipeline.map.embedding import EXACT_KNN_MAX, annoy_neighbours, pca_reduce
    from worker.pipeline.map.evidence import K_EVIDENCE
    from worker.pipeline.map.neighbours import exact_neighbours
    from worker.pipeline.storage.rundir import RunDir, save_npy

    r = RunDir(run)
    t0 = time.perf_counter()
    x = pca_reduce(np.load(r.features, mmap_mode="r"), 50)
    k = 90  # the t-SNE's 3 x perplexity
    knn = exact_neighbours(x, k) if len(x) <= EXACT_KNN_MAX else annoy_neighbours(x, k)
    save_npy(r.path / "neighbours.npy", knn[0][:, :K_EVIDENCE])
    save_npy(r.embedding, np.ascontiguousarray(x[:, :2]))  # a stand-in map (docstring)
    r.mark_step("embed", pca_dims=50, seed=0)  # an index-only run: no map was made
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=SynthSpec.n)
    ap.add_argument("--classes", type=int, default=SynthSpec.classes)
    ap.add_argument("--work", type=Path, default=Path("/tmp/curator-scale"))
    ap.add_argument("--keep", action="store_true", help="leave the run in --work")
    ap.add_argument("--reuse", action="store_true",
                    help="time the findings of a run a --keep run left (its index built)")
    args = ap.parse_args()
    offset = 0.2 if args.classes <= 100 else 0.5
    spec = SynthSpec(n=args.n, classes=args.classes, class_offset=offset)
    tag = f"{spec.n}x{spec.dim}-c{spec.classes}-o{offset:g}"
    feats, labels = write_synthetic(args.work / f"data-{tag}", spec)
    run = args.work / f"findings-{tag}"
    print(f"# findings at scale: {spec.n:,} x {spec.dim} ({spec.dtype}), {spec.classes} "
          f"classes · {machine()}", flush=True)
    clustered = (run / "run.json").is_file() and \
        "cluster" in json.loads((run / "run.json").read_text()).get("steps", {})
    if not (args.reuse and clustered):
        shutil.rmtree(run, ignore_errors=True)
        made = run_step("ingest + copy features", [
            "extract", "--dataset", f"features:{feats}", "--labels", str(labels),
            "--true-label-column", "true_label", "--out", str(run)])
        print(f"{made.name:<28} {made.seconds:8.1f} s   peak RSS {made.peak_gb:6.2f} GB",
              flush=True)
        print(f"{'neighbour index (as embed)':<28} {neighbour_index(run):8.1f} s", flush=True)
        label = run_step("cluster (label evidence)", ["cluster", str(run)])
        print(f"{label.name:<28} {label.seconds:8.1f} s   peak RSS {label.peak_gb:6.2f} GB",
              flush=True)
    step = run_step("findings (every kind)", ["findings", str(run), "--top", "0", "--redo"])
    budget = BUDGET_GB * spec.n / SynthSpec.n if spec.n < SynthSpec.n else BUDGET_GB
    print(f"{step.name:<28} {step.seconds:8.1f} s   peak RSS {step.peak_gb:6.2f} GB")
    print(f"findings time / target ({TARGET_S} s): {step.seconds / TARGET_S:.3f}x")
    print(f"findings peak RSS / budget ({budget:.2f} GB): {step.peak_gb / budget:.3f}x")
    if not args.keep:
        shutil.rmtree(run, ignore_errors=True)


if __name__ == "__main__":
    main()
