"""Copies: how a copy's evidence differs from the closest *different* picture's, on data
with no copies and data with injected ones, and what the findings mark and drop there.

    PYTHONPATH=. .venv/bin/python -m bench.copy_evidence [--out /tmp/copy_evidence]
        [--sheet docs/copies-cifar-test.png]

Sets (each a real ``curator pipeline`` run, reused when its findings step is done):

- ``digits``: scikit-learn's 1,797 digits, all different pictures (no two identical; the
  closest pair differs by a summed L1 of 16 over 64 pixels of 0–16);
- ``digits-jpeg``: the same digits written as a folder of 8-px JPEG files (quality 90);
- ``cifar-test``: CIFAR-10 mini's test split (1,000 photographs) as a dataset of its own;
  every pair it marks, and the 12 closest pairs it does not, go on a contact sheet
  (``--sheet``) for a person to judge;
- ``cifar-mixed``: CIFAR-10 mini's 2,000 train images with 5% injected copies of our four
  strengths (exact, light, medium, strong: sources/inject.py).

For each: the best pixel match of every sample among its 5 nearest (the closest picture it
resembles), the ratio test's value ``(1 − match) / distinctness`` (findings/copies.py), for
the samples of no injected family and for each strength's copies; then what the findings
step marks, proposes and drops. The ratios (``RATIO_PROPOSE``, ``RATIO_DROP``) were chosen
on ``digits`` and ``cifar-mixed``; ``digits-jpeg`` and ``cifar-test`` were not looked at
when they were chosen.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from bench.common import ROOT, SHARED, cifar_mini_folder, curator_pipeline, machine


def _digits_jpeg(dest: Path) -> Path:
    from PIL import Image
    from sklearn.datasets import load_digits

    if (dest / ".done").is_file():
        return dest
    d = load_digits()
    for i, (img, y) in enumerate(zip(d.images, d.target, strict=True)):
        (dest / str(y)).mkdir(parents=True, exist_ok=True)
        Image.fromarray(np.round(img * 255 / 16).astype(np.uint8)).save(
            dest / str(y) / f"{i:04d}.jpg", quality=90)
    (dest / ".done").write_text("")
    return dest


def evidence(run_path: Path) -> dict:
    """The distributions (module docstring) and the step's counts, for one run."""
    from worker.pipeline.findings import get_kind
    from worker.pipeline.findings.context import FindingContext
    from worker.pipeline.findings.copies import K_CANDIDATES, TAIL_DROP, TAIL_PROPOSE
    from worker.pipeline.findings.files import load_findings
    from worker.pipeline.findings.pixels import match_pairs
    from worker.pipeline.sources.inject import read_truth
    from worker.pipeline.storage.rundir import RunDir

    run = RunDir(run_path)
    samples = run.read_samples()
    ctx = FindingContext(run, samples)
    n, nb = len(samples), ctx.space.neighbours
    k = min(K_CANDIDATES, nb.shape[1])
    m = match_pairs(ctx.grey, np.repeat(np.arange(n), k), ctx.grey,
                    nb[:, :k].ravel()).reshape(n, k)
    best = m.max(1)
    ratio = (1 - best) / ctx.near.distinct
    truth = [r for r in read_truth(run.path) if r["kind"] == "duplicate"]
    family = np.zeros(n, bool)
    for r in truth:
        family[[r["index"], r["source"]]] = True
    q = [0.5, 0.9, 0.99, 0.999, 1.0]
    out = {"n": n, "propose_cut": round(float(ctx.copy_cut(0.9, TAIL_PROPOSE)), 4),
           "drop_cut": round(float(ctx.copy_cut(0.95, TAIL_DROP)), 4),
           "others_best_match": dict(zip(map(str, q), np.round(np.quantile(best[~family], q),
                                                               4).tolist(), strict=True)),
           "others_ratio_low": dict(zip(["0.001", "0.01", "0.1", "0.5"], np.round(np.quantile(
               ratio[~family], [0.001, 0.01, 0.1, 0.5]), 3).tolist(), strict=True)),
           "others_ratio_min": round(float(ratio[~family].min()), 3)}
    for how in ("exact", "light", "medium", "strong"):
        rows = [r for r in truth if r["how"] == how]
        if rows:
            a = np.array([r["index"] for r in rows])
            b = np.array([r["source"] for r in rows])
            mm = match_pairs(ctx.grey, a, ctx.grey, b)
            rr = (1 - mm) / ctx.near.distinct[a]
            out[f"copies_{how}"] = {"match_median": round(float(np.median(mm)), 4),
                                    "ratio_median": round(float(np.median(rr)), 3),
                                    "ratio_90pct": round(float(np.quantile(rr, 0.9)), 3)}
    tables = load_findings(run, n)
    for name in ("duplicate", "outlier"):
        t, kind = tables[name], get_kind(name)
        out[f"{name}_marked"] = int(t.issue.sum())
        out[f"{name}_dropped"] = int(kind.dropping(t).sum())
    return out


def sheet(run_path: Path, dest: Path, closest: int = 12) -> int:
    """Every pair the duplicate kind marks in the run (copy | kept copy, with the match),
    then the ``closest`` best-matching pairs it does not mark, for a person to judge both
    sides of the cut."""
    from PIL import Image, ImageDraw, ImageFont

    from worker.pipeline.findings import get_kind
    from worker.pipeline.findings.context import FindingContext
    from worker.pipeline.findings.files import load_findings
    from worker.pipeline.findings.pixels import match_pairs
    from worker.pipeline.storage.rundir import RunDir

    run = RunDir(run_path)
    samples = run.read_samples()
    t = load_findings(run, len(samples))["duplicate"]
    drop = get_kind("duplicate").dropping(t)
    pairs = [(i, int(t.related[i]), float(t.facts["match"][i]),
              "dropped" if drop[i] else "proposed") for i in np.flatnonzero(t.issue).tolist()]
    ctx = FindingContext(run, samples)
    nb = ctx.space.neighbours[:, :5]
    n = len(nb)
    m = match_pairs(ctx.grey, np.repeat(np.arange(n), 5), ctx.grey, nb.ravel()).reshape(n, 5)
    j = m.argmax(1)
    order = np.argsort(-m.max(1), kind="stable")
    seen = {frozenset(p[:2]) for p in pairs}
    wanted = len(pairs) + closest
    for i in order.tolist():
        if len(pairs) >= wanted:
            break
        b = int(nb[i, j[i]])
        if frozenset((i, b)) not in seen and not t.issue[i]:
            seen.add(frozenset((i, b)))
            pairs.append((i, b, float(m[i, j[i]]), "not marked"))
    thumbs = np.load(run.thumbnails, mmap_mode="r")
    side, gap, cols = 96, 4, 4
    cell_w, cell_h = 2 * side + gap + 30, side + 40
    head = 44
    img = Image.new("RGB", (cols * cell_w + 10, head + max(1, -(-len(pairs) // cols)) * cell_h
                            + 6), "white")
    draw = ImageDraw.Draw(img)
    font = ImageFont.load_default()
    marked = int(t.issue.sum())
    draw.text((10, 6), f"{run.run_id}: {marked} samples marked as near-duplicates "
                       f"({int(drop.sum())} dropped by default), then the {closest} closest "
                       "pairs not marked", fill="black", font=font)
    draw.text((10, 24), "Left: the sample; right: its marked kept copy, or its best match. "
                        "Judge by eye.", fill="#444", font=font)
    for p, (a, b, match, what) in enumerate(pairs):
        x0, y0 = 10 + (p % cols) * cell_w, head + (p // cols) * cell_h
        for q, s in enumerate((a, b)):
            im = Image.fromarray(np.asarray(thumbs[s])).resize((side, side),
                                                               Image.Resampling.NEAREST)
            img.paste(im, (x0 + q * (side + gap), y0))
        draw.text((x0, y0 + side + 3), f"match {match:.3f} · {what}",
                  fill="#b00" if what != "not marked" else "black", font=font)
        draw.text((x0, y0 + side + 17), f"#{a} | #{b}", fill="#555", font=font)
    dest.parent.mkdir(parents=True, exist_ok=True)
    img.save(dest)
    return marked


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("/tmp/copy_evidence"))
    ap.add_argument("--sheet", type=Path, default=ROOT / "docs" / "copies-cifar-test.png")
    a = ap.parse_args()
    out = a.out
    print(machine(), flush=True)
    sets = {"digits": ("digits",), "digits-jpeg": (f"folder:{_digits_jpeg(out / 'digits-jpeg')}",)}
    cifar = cifar_mini_folder(out / "data") \
        if (SHARED / "cifar10-jpeg-mini.tar.gz").is_file() else None
    if cifar is not None:
        test_only = out / "data" / "cifar-test"  # the test split as a dataset of its own
        if not test_only.exists():
            test_only.symlink_to(cifar / "test", target_is_directory=True)
        sets["cifar-test"] = (f"folder:{test_only}",)
        sets["cifar-mixed"] = (f"folder:{cifar}", "--inject-duplicates", "0.05",
                               "--duplicate-strength", "mixed")
    results = {}
    for name, args in sets.items():
        print(name, flush=True)
        curator_pipeline(out / "runs" / name, *args)
        results[name] = evidence(out / "runs" / name)
        print("  " + json.dumps(results[name]), flush=True)
    if "cifar-test" in results:
        n = sheet(out / "runs" / "cifar-test", a.sheet)
        print(f"contact sheet: {a.sheet} ({n} marked, and the closest pairs not marked)")
    (out / "results.json").write_text(json.dumps(results, indent=2))
    print(f"results: {out / 'results.json'}")


if __name__ == "__main__":
    main()
