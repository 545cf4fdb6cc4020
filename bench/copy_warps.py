"""A candidate for issue 46's item 3, measured, not in the pipeline: a second copy test on
*warped* views (zoom, stretch, shift, rotation), beside today's matcher.

    PYTHONPATH=. .venv/bin/python -m bench.copy_warps RUN [RUN ...]

RUNs are finished runs (``bench.held_out``'s ``chosen`` and ``held-out``,
``bench.copy_evidence``'s no-copy sets). Today's matcher (findings/pixels.py) compares 16-px
grey views over mirroring and one-pixel shifts; a crop, a stretch or a rotation moves a copy
out of its reach. The candidate: each image's grey thumbnail sampled through ``len(WARPS)``
affine warps (zooms to 90/80/70% at nine centres, stretches along either side, rotations of
±5° and ±10°, shifts of two pixels) into 16×16 views; a pair's warp match is the best
normalised correlation of one image's full view (or its mirror) with the other's warps, both
ways. Its own tail and ratio tests (findings/copies.py) decide, with their own cuts
(``TAIL_WARP`` spreads, ratio ``RATIO_WARP``) since more warps lift what different pictures
reach too. A pair is a copy when today's test **or** the warp test passes.

Prints, per run: the pairs today's test marks, the pairs the union marks, the pairs of
different families among them (CIFAR-10's own near-copies count here too), recall by
strength, and the time of the views and matches on this host.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

TAIL_WARP, RATIO_WARP = 4.5, 0.07
SIDE = 16


def warps() -> list[tuple[float, float, float, float, float]]:
    """(scale x, scale y, shift x, shift y, degrees), shifts in the input's [-1, 1] units."""
    out = [(1.0, 1.0, 0.0, 0.0, 0.0)]
    for s in (0.9, 0.8, 0.7):
        m = 1 - s
        out += [(s, s, tx, ty, 0.0) for tx in (-m, 0, m) for ty in (-m, 0, m)]
    for sx, sy in ((0.8, 1.0), (1.0, 0.8), (0.7, 1.0), (1.0, 0.7)):
        m = 1 - min(sx, sy)
        out += [(sx, sy, t if sx < 1 else 0.0, t if sy < 1 else 0.0, 0.0) for t in (-m, 0, m)]
    out += [(0.9, 0.9, 0.0, 0.0, a) for a in (-10, -5, 5, 10)]
    out += [(1.0, 1.0, dx, dy, 0.0) for dx, dy in ((0.125, 0), (-0.125, 0), (0, 0.125),
                                                  (0, -0.125))]
    return out


WARPS = warps()


def warped_views(thumbs: np.ndarray, block: int = 1024):
    """Normalised warped grey views, torch float32 (N, len(WARPS), SIDE²), and the
    mirrored full view (N, SIDE²)."""
    import torch
    import torch.nn.functional as F

    th = []
    for sx, sy, tx, ty, a in WARPS:
        r = math.radians(a)
        c, s = math.cos(r), math.sin(r)
        th.append([[sx * c, -sy * s, tx], [sx * s, sy * c, ty]])
    theta = torch.tensor(th, dtype=torch.float32)
    t = len(WARPS)
    out = torch.empty(len(thumbs), t, SIDE * SIDE)
    for start in range(0, len(thumbs), block):
        x = torch.from_numpy(np.array(thumbs[start:start + block])).float()
        g = (x[..., 0] * 0.299 + x[..., 1] * 0.587 + x[..., 2] * 0.114)[:, None]
        if g.shape[-1] > 2 * SIDE:  # area first: the warps then sample without aliasing
            g = F.adaptive_avg_pool2d(g, (2 * SIDE, 2 * SIDE))
        n = len(g)
        grid = F.affine_grid(theta, (t, 1, SIDE, SIDE), align_corners=False)  # (T, S, S, 2)
        grid = grid.reshape(1, t * SIDE, SIDE, 2).expand(n, -1, -1, -1)
        w = F.grid_sample(g, grid, mode="bilinear", padding_mode="border",
                          align_corners=False).reshape(n, t, SIDE * SIDE)
        w = w - w.mean(-1, keepdim=True)
        out[start:start + n] = w / w.norm(dim=-1, keepdim=True).clamp_min(1e-3)
    full = out[:, 0].reshape(-1, SIDE, SIDE)
    return out, torch.flip(full, dims=[-1]).reshape(len(thumbs), -1)


def warp_match(views, mirrored, a: np.ndarray, b: np.ndarray, block: int = 20_000
               ) -> np.ndarray:
    """Each pair's best correlation of one full view (or its mirror) with the other's
    warps, both ways: float32 (P,)."""
    import torch

    out = np.empty(len(a), np.float32)
    for s in range(0, len(a), block):
        ia = torch.from_numpy(a[s:s + block])
        ib = torch.from_numpy(b[s:s + block])
        best = None
        for one, other in ((ia, ib), (ib, ia)):
            both = torch.stack([views[one, 0], mirrored[one]], 1)  # (P, 2, D)
            m = torch.bmm(both, views[other].transpose(1, 2)).amax((1, 2))
            best = m if best is None else torch.maximum(best, m)
        out[s:s + block] = best.numpy()
    return out


def measure(run_path: Path) -> dict:
    from worker.pipeline.findings.context import FindingContext
    from worker.pipeline.findings.copies import (
        CANDIDATE_RATIO,
        K_CANDIDATES,
        K_REFERENCE,
        REFERENCE_RANK,
        TAIL_PROPOSE,
        copy_pairs,
    )
    from worker.pipeline.sources.inject import read_truth
    from worker.pipeline.storage.rundir import RunDir

    run = RunDir(run_path)
    samples = run.read_samples()
    ctx = FindingContext(run, samples)
    sp, n = ctx.space, len(samples)
    thumbs = run.load_array(run.thumbnails, "ingest", mmap=True)
    t0 = time.perf_counter()
    views, mirrored = warped_views(thumbs)
    t_views = time.perf_counter() - t0
    k = min(K_REFERENCE, sp.neighbours.shape[1])
    t0 = time.perf_counter()
    m = warp_match(views, mirrored, np.repeat(np.arange(n), k),
                   sp.neighbours[:, :k].ravel()).reshape(n, k)
    t_match = time.perf_counter() - t0
    best = m.max(1)
    distinct = np.maximum(1 - (-np.partition(-m, REFERENCE_RANK, 1)[:, REFERENCE_RANK]), 1e-3)
    z = np.arctanh(np.clip(best, -0.9999, 0.9999))
    q1, mid, q3 = np.quantile(z, [0.25, 0.5, 0.75])
    cut_b = max(0.9, float(np.tanh(mid + TAIL_WARP * (q3 - q1) / 1.349)))
    kk = min(K_CANDIDATES, k)
    r = sp.distances[:, :kk] / sp.scale
    rows, cols = np.nonzero(r <= CANDIDATE_RATIO)
    mb = m[rows, cols]
    ok = (mb >= cut_b) & ((1 - mb) / distinct[rows] <= RATIO_WARP)
    pairs_b = {(int(x), int(sp.neighbours[x, c])) for x, c in zip(rows[ok], cols[ok],
                                                                   strict=True)}
    pairs_a, _ = copy_pairs(sp.neighbours, sp.distances / sp.scale, ctx.grey, ctx.grey,
                            ctx.copy_cut(0.9, TAIL_PROPOSE), ctx.near.distinct)
    pairs_a = {(int(x), int(y)) for x, y in pairs_a}
    truth = [t for t in read_truth(run.path) if t["kind"] == "duplicate"]
    family = np.arange(n)
    for t in truth:
        family[t["index"]] = t["source"]
    out = {"samples": n, "warp_cut": round(cut_b, 4), "views_s": round(t_views, 2),
           "match_s": round(t_match, 2)}
    for name, pairs in (("today", pairs_a), ("union", pairs_a | pairs_b)):
        hit = {int(family[x]) for x, y in pairs if family[x] == family[y]}
        by = {}
        for how in sorted({t["how"] for t in truth}):
            fams = [t["source"] for t in truth if t["how"] == how]
            by[how] = round(sum(f in hit for f in fams) / len(fams), 2)
        out[name] = {"pairs": len(pairs),
                     "other_family": sum(int(family[x] != family[y]) for x, y in pairs),
                     "recall": round(len(hit) / len(truth), 3) if truth else None,
                     "recall_by": by}
    return out


def main() -> None:
    import json

    from bench.common import machine

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path)
    a = ap.parse_args()
    print(machine(), f"· {len(WARPS)} warps", flush=True)
    for run in a.runs:
        print(run, json.dumps(measure(run)), flush=True)


if __name__ == "__main__":
    main()
