"""More like this at scale: the search behind the Curate page's s key, ``curator similar``
and ``run.similar`` (:func:`worker.pipeline.map.similar.nearest_samples`), on runs of
synthetic class-structured features (bench/synth.py) ingested by ``curator extract``.

For each size it prints the search's p50/p95 per query, in the process that serves the
page (the run's rows already loaded by a first query), against a baseline timed in the
same run on the same vectors: the same exact search by faiss's flat index (built once,
outside the timing), with how many of the answers agree. It also prints what an
approximate index would give: faiss's IVF-Flat (``nlist`` ≈ 4√N) at two ``nprobe``, with
its time per query and its recall@k against the exact answer, so the choice of exact
search stays a measured one.

    python -m bench.similar_search [--sizes 50000,1281167] [--queries 100] [--k 20]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from bench.common import machine
from bench.synth import SynthSpec, write_synthetic

CURATOR = str(Path(sys.executable).parent / "curator")


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q * 100))


def build_run(work: Path, n: int, dim: int, classes: int) -> Path:
    """An extract-only run of ``n`` synthetic samples (reused when already built)."""
    spec = SynthSpec(n=n, classes=classes, dim=dim)
    tag = f"{n}x{dim}-c{classes}"
    feats, labels = write_synthetic(work / f"data-{tag}", spec)
    run = work / f"run-{tag}"
    if not (run / "features.npy").is_file():
        env = {**os.environ, "CURATOR_BROKER_URL": ""}
        subprocess.run([CURATOR, "extract", "--dataset", f"features:{feats}", "--labels",
                        str(labels), "--out", str(run)], env=env, check=True,
                       stdout=subprocess.DEVNULL)
    return run


def timed(fn, queries: np.ndarray) -> tuple[list[float], list[np.ndarray]]:
    """``fn(q)`` for each query: ms each and what each returned."""
    times, out = [], []
    for q in queries.tolist():
        t0 = time.perf_counter()
        out.append(fn(q))
        times.append((time.perf_counter() - t0) * 1000)
    return times, out


def faiss_flat(x: np.ndarray, queries: np.ndarray, k: int):
    """The baseline: faiss's exact flat index over ``x`` (built before the timing): ms per
    query and the answers (itself left out)."""
    import faiss

    index = faiss.IndexFlatL2(x.shape[1])
    index.add(x)

    def one(i: int) -> np.ndarray:
        _, idx = index.search(x[i:i + 1], k + 1)
        return idx[0][idx[0] != i][:k]

    return timed(one, queries)


def ivf_search(x: np.ndarray, queries: np.ndarray, k: int, nprobe: int):
    """faiss IVF-Flat over ``x``: ms per query and the answers (itself left out)."""
    import faiss

    nlist = int(4 * np.sqrt(len(x)))
    quantizer = faiss.IndexFlatL2(x.shape[1])
    index = faiss.IndexIVFFlat(quantizer, x.shape[1], nlist)
    train = x[np.random.default_rng(0).choice(len(x), min(len(x), 64 * nlist), replace=False)]
    index.train(train)
    index.add(x)
    index.nprobe = nprobe

    def one(i: int) -> np.ndarray:
        _, idx = index.search(x[i:i + 1], k + 1)
        return idx[0][idx[0] != i][:k]

    return timed(one, queries), nlist


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="50000,1281167")
    ap.add_argument("--dim", type=int, default=128,
                    help="feature width before the PCA to 50 (the search's space)")
    ap.add_argument("--classes", type=int, default=100)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--k", type=int, default=20)
    ap.add_argument("--work", type=Path, default=Path("/tmp/curator-similar"))
    args = ap.parse_args()
    from worker.pipeline.map.embedding import run_pca
    from worker.pipeline.map.similar import SPACE_DIMS, nearest_samples
    from worker.pipeline.storage.rundir import RunDir

    print(f"# more like this: one query's k={args.k} nearest, exact, in the PCA-{SPACE_DIMS} "
          f"space · {machine()}")
    print("| samples | search p50 | search p95 | faiss flat p95 (baseline) | ratio | "
          "same answers | IVF nprobe | IVF p95 | IVF recall@k |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in (int(s) for s in args.sizes.split(",")):
        run = RunDir(build_run(args.work, n, args.dim, args.classes))
        queries = np.random.default_rng(1).choice(n, args.queries, replace=False)
        nearest_samples(run, int(queries[0]), args.k)  # the PCA fitted, cached, loaded
        ours, answers = timed(lambda i, run=run: nearest_samples(run, i, args.k)[0], queries)
        x = np.ascontiguousarray(run_pca(run, SPACE_DIMS).x)
        base, flat = faiss_flat(x, queries, args.k)
        same = np.mean([len(set(a.tolist()) & set(f.tolist())) / args.k
                        for a, f in zip(answers, flat, strict=True)])
        cells = []
        for nprobe in (8, 32):
            (ivf, got), nlist = ivf_search(x, queries, args.k, nprobe)
            recall = np.mean([len(set(a.tolist()) & set(g.tolist())) / args.k
                              for a, g in zip(answers, got, strict=True)])
            cells.append(f"{nprobe} of {nlist} | {pct(ivf, 0.95):.1f} ms | {recall:.3f}")
        for j, cell in enumerate(cells):
            head = (f"| {n:,} | {pct(ours, 0.5):.1f} ms | **{pct(ours, 0.95):.1f} ms** | "
                    f"{pct(base, 0.95):.1f} ms | {pct(base, 0.95) / pct(ours, 0.95):.2f}x | "
                    f"{same:.3f}" if j == 0 else "| | | | | |")
            print(f"{head} | {cell} |", flush=True)
    print(f"queries per size: {args.queries}; ratio = baseline p95 / search p95 (above 1: "
          "the search is faster than faiss's flat index); same answers: the share of the "
          "search's k that faiss's flat index also returns (1.000: both exact)")


if __name__ == "__main__":
    main()
