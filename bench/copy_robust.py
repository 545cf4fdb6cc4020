"""Copies that move: the warp match and the copy-robust index (findings/warps.py) beside
the pixel match alone, on finished runs (issue 46, item 3).

    PYTHONPATH=. .venv/bin/python -m bench.copy_robust RUN [RUN ...] [--sweep]
    PYTHONPATH=. .venv/bin/python -m bench.copy_robust --scale 50000
    PYTHONPATH=. .venv/bin/python -m bench.copy_robust RUN --band 3.5,4.5 --sheet PNG

RUNs are finished ``curator pipeline`` runs (``bench.held_out``'s rows, ``bench.copy_evidence``'s
no-copy sets). Per run: how often an injected copy's source is among its candidates (the
pixel match's gated feature neighbours, the warp match's feature neighbours, the key
index, both), the pairs each test marks (and how many join different families: CIFAR's
own near-copies count there too), recall overall and by strength, and the time of the
views, the key index and the matches. ``--sweep`` prints the same for a grid of the warp
test's two numbers (run it on rows a cut may be chosen on, never on held-out rows).

``--band LO,HI`` draws what a lower tail for the warp test would add on the first RUN: its
pairs of no injected family marked at LO robust spreads but not at HI, for a person to
judge (how the warp test's tail was chosen at 50,000: docs/benchmarks.md).

``--scale N`` times the second test alone on the first N of CIFAR-10's 50,000 train
photographs (the shared archive): its views, the key index, the grid's match over every
candidate pair and the refinement of the promising pairs and of the reference sample's
best (findings/warps.py ``warp_evidence``), with the key index's next
``K_FEATURE`` neighbours standing in for the feature neighbours a run would have (the same
number of candidates). It prints the time beside the pixel test's on the same pairs and
beside fastdup's time at 50,000 (docs/benchmarks.md, "Findings beside the peers": 45.9 s
at its fastest, measured on this host type, not in this run).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np


def _family(run, n: int) -> tuple[np.ndarray, list[dict]]:
    from worker.pipeline.sources.inject import read_truth

    truth = [t for t in read_truth(run.path) if t["kind"] == "duplicate"]
    family = np.arange(n)
    for t in truth:
        family[t["index"]] = t["source"]
    return family, truth


def _scores(pairs: set, family: np.ndarray, truth: list[dict]) -> dict:
    hit = {int(family[x]) for x, y in pairs if family[x] == family[y]}
    by = {}
    for how in sorted({t["how"] for t in truth}):
        fams = [t["source"] for t in truth if t["how"] == how]
        by[how] = round(sum(f in hit for f in fams) / len(fams), 2)
    return {"pairs": len(pairs),
            "other_family": sum(int(family[x] != family[y]) for x, y in pairs),
            "recall": round(len(hit) / len(truth), 3) if truth else None, "recall_by": by}


def _reach(a: np.ndarray, b: np.ndarray, truth: list[dict]) -> dict:
    have = set(zip(a.tolist(), b.tolist(), strict=True))
    by = {}
    for how in sorted({t["how"] for t in truth}):
        rows = [t for t in truth if t["how"] == how]
        by[how] = round(sum((t["index"], t["source"]) in have or (t["source"], t["index"])
                            in have for t in rows) / len(rows), 2)
    return by


def measure(run_path: Path, sweep: bool) -> dict:
    from worker.pipeline.findings.context import FindingContext
    from worker.pipeline.findings.copies import (
        CANDIDATE_RATIO,
        K_CANDIDATES,
        REFERENCE_RANK,
        TAIL_PROPOSE,
        copy_pairs,
    )
    from worker.pipeline.findings.warps import (
        K_FEATURE,
        K_KEY,
        RATIO_WARP,
        TAIL_WARP,
        VARIANTS,
        WarpOptions,
        candidates,
        copy_views,
        key_neighbours,
        listed,
        warp_evidence,
    )
    from worker.pipeline.storage.rundir import RunDir

    run = RunDir(run_path)
    samples = run.read_samples()
    ctx = FindingContext(run, samples)
    sp, n = ctx.space, len(samples)
    family, truth = _family(run, n)
    thumbs = run.load_array(run.thumbnails, "ingest", mmap=True)
    t0 = time.perf_counter()
    views = copy_views(thumbs)
    t_views = time.perf_counter() - t0
    t0 = time.perf_counter()
    keys = key_neighbours(views.key, None, K_KEY)
    t_key = time.perf_counter() - t0
    a, b = candidates(sp.neighbours[:, :K_FEATURE], keys)
    t0 = time.perf_counter()
    ev = warp_evidence(views, views, a, b, n, WarpOptions(REFERENCE_RANK, same=True))
    t_match = time.perf_counter() - t0
    kk = min(K_CANDIDATES, sp.neighbours.shape[1])
    rows, cols = np.nonzero(sp.distances[:, :kk] / sp.scale <= CANDIDATE_RATIO)
    reach = {"pixel (gated)": _reach(rows, sp.neighbours[rows, cols], truth),
             "features": _reach(*candidates(sp.neighbours[:, :K_FEATURE]), truth),
             "keys": _reach(*candidates(keys), truth), "both": _reach(a, b, truth)}
    today, _ = copy_pairs(sp.neighbours, sp.distances / sp.scale, ctx.grey, ctx.grey,
                          ctx.copy_cut(0.9, TAIL_PROPOSE), ctx.near.distinct)
    today = {(int(x), int(y)) for x, y in today}

    def tested(tail: float, ratio: float) -> dict:
        cuts = ev.cuts(0.9, tail)
        ok = ev.passing_by_variant(cuts, ratio).any(1)
        warp = {(int(x), int(y)) for x, y in zip(ev.a[ok], ev.b[ok], strict=True)}
        by_variant = {name: _scores({(int(x), int(y)) for x, y in zip(
            ev.a[p], ev.b[p], strict=True)}, family, truth)["recall"]
            for name, p in zip(VARIANTS, ((ev.match >= cuts) & (
                1 - ev.match <= ratio * ev.distinct[ev.a])).T, strict=True)}
        return {"cuts": listed(cuts), "warp": _scores(warp, family, truth),
                "recall_by_variant": by_variant,
                "union": _scores(today | warp, family, truth)}

    out = {"samples": n, "candidates": len(a), "views_s": round(t_views, 2),
           "key_s": round(t_key, 2), "match_s": round(t_match, 2), "reach": reach,
           "today": _scores(today, family, truth), "chosen": tested(TAIL_WARP, RATIO_WARP)}
    if sweep:
        out["sweep"] = {f"{tail}/{ratio}": tested(tail, ratio)["union"]
                        for tail in (3.5, 4.5, 5.5) for ratio in (0.05, 0.07, 0.1, 0.15)}
    return out


def band_sheet(run_path: Path, lo: float, hi: float, dest: Path, limit: int = 30) -> int:
    """A contact sheet of the pairs of no injected family that the warp test marks with
    its tail at ``lo`` robust spreads but not at ``hi`` (the ratio test as it is), ``limit``
    drawn at random: what lowering the tail would add, for a person to judge. Returns how
    many such pairs there are (a pair and its reverse once)."""
    from bench.held_out import pair_sheet
    from worker.pipeline.findings.context import FindingContext
    from worker.pipeline.findings.warps import RATIO_WARP
    from worker.pipeline.storage.rundir import RunDir

    run = RunDir(run_path)
    ctx = FindingContext(run, run.read_samples())
    family, _ = _family(run, len(ctx.samples))
    ev = ctx.warp
    at_lo, at_hi = (ev.passing_by_variant(ev.cuts(0.9, t), RATIO_WARP) for t in (lo, hi))
    band = at_lo.any(1) & ~at_hi.any(1) & (family[ev.a] != family[ev.b]) & (ev.a < ev.b)
    z = ev.spreads(ev.match)  # the pair's own spreads, as a row's best would have
    thumbs = run.load_array(run.thumbnails, "ingest", mmap=True)
    cells = [(thumbs[i], thumbs[j], f"#{i} | #{j}",
              f"warped {ev.match[k].max():.3f}, {z[k]:.1f} spreads")
             for k, i, j in zip(np.flatnonzero(band).tolist(), ev.a[band].tolist(),
                                ev.b[band].tolist(), strict=True)]
    return pair_sheet(cells, dest, f"{run.run_id}: {{shown}} of the {{total}} pairs of no "
                      f"injected family the warp test marks at {lo} robust spreads but not at "
                      f"{hi}. Judge by eye.", limit)


FASTDUP_50K_S = 45.9


def scale(n: int) -> dict:
    """The second test's time on ``n`` CIFAR-10 photographs (module docstring)."""
    from bench.common import cifar_train_images
    from worker.pipeline.findings.copies import REFERENCE_RANK, near_matches
    from worker.pipeline.findings.pixels import grey_views
    from worker.pipeline.findings.warps import (
        K_FEATURE,
        K_KEY,
        WarpOptions,
        candidates,
        copy_views,
        key_neighbours,
        warp_evidence,
    )

    thumbs = cifar_train_images(n)
    t = {}
    t0 = time.perf_counter()
    views = copy_views(thumbs)
    t["views"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    near = key_neighbours(views.key, None, K_KEY + K_FEATURE)
    t["key index"] = time.perf_counter() - t0
    a, b = candidates(near[:, K_KEY:], near[:, :K_KEY])
    t0 = time.perf_counter()
    warp_evidence(views, views, a, b, len(thumbs), WarpOptions(REFERENCE_RANK, same=True))
    t["grid and refinement"] = time.perf_counter() - t0
    t0 = time.perf_counter()  # the pixel test's own work on its 10 neighbours, for scale
    near_matches(grey_views(thumbs), near[:, :K_FEATURE])
    pixel_s = time.perf_counter() - t0
    total = sum(t.values())
    return {"n": len(thumbs), "candidates": len(a), **{k: round(v, 1) for k, v in t.items()},
            "second_test_s": round(total, 1), "pixel_test_s": round(pixel_s, 1),
            "ratio_to_pixel_test": round(total / pixel_s, 2),
            "ratio_to_fastdup_50k": round(total / FASTDUP_50K_S, 2)}


def main() -> None:
    from bench.common import machine
    from worker.pipeline.findings.warps import WARPS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="*", type=Path)
    ap.add_argument("--sweep", action="store_true")
    ap.add_argument("--scale", type=int, help="time the second test on N CIFAR photographs")
    ap.add_argument("--band", help="LO,HI: the first RUN's pairs the warp test marks at LO "
                    "robust spreads but not at HI, as a contact sheet (--sheet)")
    ap.add_argument("--sheet", type=Path, default=Path("/tmp/copy-band.png"))
    a = ap.parse_args()
    print(machine(), f"· {len(WARPS)} warps", flush=True)
    for run in a.runs:
        print(run, json.dumps(measure(run, a.sweep)), flush=True)
    if a.scale:
        print("scale", json.dumps(scale(a.scale)), flush=True)
    if a.band and a.runs:
        lo, hi = (float(x) for x in a.band.split(","))
        k = band_sheet(a.runs[0], lo, hi, a.sheet)
        print(f"contact sheet: {a.sheet} ({k} pairs between {lo} and {hi} spreads)")


if __name__ == "__main__":
    main()
