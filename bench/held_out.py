"""Held-out rows: the findings' cuts on the injections they were chosen on, beside
injections made after they were chosen (issue 46, item 2).

    PYTHONPATH=. .venv/bin/python -m bench.held_out [--out /tmp/held_out] [--full]

Two ``curator pipeline`` runs on the shared CIFAR-10 JPEG archive (the mini: 2,000 train /
1,000 test; ``--full``: 50,000 / 10,000), default backbone (EfficientNet-Lite0, ImageNet-
pretrained: it never saw CIFAR's labels), reused when done:

- ``chosen``:   ``--inject-duplicates 0.05 --duplicate-strength mixed --inject-outliers K
  --inject-leaks L`` (exact, light, medium, strong copies of train and of test images;
  digits, photograph, noise and blank outliers): the rows the cuts were chosen on;
- ``held-out``: ``--inject-duplicates 0.05 --duplicate-strength held-out --inject-outliers K
  --outlier-sources held-out --inject-leaks L`` (crop, rotate, jitter, blur, jpeg, overlay
  and aspect copies; grey photographs, line drawings, textures, shapes and noisy colours):
  made afterwards, never looked at when a cut was chosen;
- ``fresh``: the held-out transformations and sources again, with another seed, on 2,000
  other CIFAR-10 train images (200 a class, from the 3,001st of each class in the full
  archive, unpacked under /tmp/curator-bench) and 1,000 test images (the first 100 of
  each class: perhaps the mini's, copied as leaks with another seed): written after the
  warp test's numbers were fixed (findings/warps.py), so that no number of any detector
  was chosen looking at it. Needs the full archive.

Leaks (copies of test images in train, 5% of the test split) use the duplicate kind's cuts:
the leak rows are held out as a whole, since no leak cut was chosen on injected leaks.

For each run and kind: P/R/F1 of what it marks (dropped and proposed) and of what it drops
by default, recall per strength or source, the outlier score's AUROC, the leak review
queue's recall in its first 2× as many rows; and the gap between
the rows (a cut is kept only if the held-out F1 stays within 0.05 of the chosen-on F1).
Prints one JSON object per row and writes ``OUT/results-mini.json`` (``-full``);
``--sheet PNG`` draws the fresh row's duplicate and leak marks that join no injected
family, for a person to judge.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from bench.common import (
    SHARED,
    cifar_folder,
    cifar_mini_folder,
    cifar_subset,
    curator_pipeline,
    machine,
)

# size → (archive, unpacking, outliers injected, test images copied into train)
SIZES = {"mini": ("cifar10-jpeg-mini.tar.gz", cifar_mini_folder, 40, 50),
         "full": ("cifar10-jpeg.tar.gz", cifar_folder, 400, 500)}
KINDS = ("duplicate", "leak", "outlier")
HELD_OUT = ["--duplicate-strength", "held-out", "--outlier-sources", "held-out"]
ROWS = {"chosen": ["--duplicate-strength", "mixed"], "held-out": HELD_OUT,
        "fresh": [*HELD_OUT, "--seed", "1"]}
FRESH_OFFSET = 3000  # train images skipped per class: none of the mini's, nor the pruning's


def _data(row: str, size: str, out: Path) -> Path:
    """The images of ``row``: the mini (or full) archive, or for ``fresh`` other images."""
    _, unpacked, _, _ = SIZES[size]
    if row != "fresh":
        return unpacked(out / "data")
    per_class, test_per_class = (200, 100) if size == "mini" else (2000, 1000)
    return cifar_subset(cifar_folder(), per_class, test_per_class, FRESH_OFFSET)[0]


def _run(run: Path, data: Path, row: str, outliers: int, leaks: int) -> None:
    curator_pipeline(run, f"folder:{data}", "--inject-duplicates", "0.05",
                     "--inject-outliers", str(outliers), "--inject-leaks", str(leaks),
                     *ROWS[row])


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
    for kind in KINDS:
        s = found[kind]
        row = {"marked": s["marked"], **{k: s[k] for k in ("precision", "recall", "f1")},
               "dropped": {k: s["dropped"][k] for k in ("marked", "precision", "recall",
                                                         "f1")}}
        if kind in ("duplicate", "leak"):
            row["recall_by"] = s["recall_by_strength"]
            if kind == "leak":
                row["queue_recall_at_2x"] = s["queue_recall_at_2x"]
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


def unmatched_sheet(run_path: Path, dest: Path, limit: int = 48, dropped: bool = False
                    ) -> int:
    """A contact sheet of the duplicate and leak marks (``dropped``: only those dropped by
    default) that join no injected family (the scores count these as wrong: CIFAR-10's own
    near-copies among them), for a person to judge: all of them, or ``limit`` drawn at
    random. Returns how many there are."""
    from worker.pipeline.findings import get_kind
    from worker.pipeline.findings.files import load_findings
    from worker.pipeline.findings.testsplit import test_thumbnails
    from worker.pipeline.sources.inject import read_truth
    from worker.pipeline.storage.rundir import RunDir

    run = RunDir(run_path)
    n = len(run.read_samples())
    tables = load_findings(run, n)
    truth = read_truth(run.path)
    family = np.arange(n)
    for r in truth:
        if r["kind"] == "duplicate":
            family[r["index"]] = r["source"]
    thumbs = np.load(run.thumbnails, mmap_mode="r")
    test = np.load(test_thumbnails(run), mmap_mode="r")
    dup = tables["duplicate"]
    group = dup.facts["group"]
    cells = []
    marks = {k: get_kind(k).dropping(tables[k]) if dropped else tables[k].issue
             for k in ("duplicate", "leak")}
    for i in np.flatnonzero(marks["duplicate"]).tolist():
        mates = np.flatnonzero((group == group[i]) & (np.arange(n) != i))
        if not (family[mates] == family[i]).any():
            cells.append((thumbs[i], thumbs[dup.related[i]], f"duplicate #{i} | #{dup.related[i]}",
                          dup.facts["match"][i], dup.facts["warped"][i]))
    leak = tables["leak"]
    source = {r["index"]: r["source"] for r in truth if r["kind"] == "leak"}
    for i in np.flatnonzero(marks["leak"]).tolist():
        if source.get(i) != leak.related[i]:
            cells.append((thumbs[i], test[leak.related[i]], f"leak #{i} | test #{leak.related[i]}",
                          leak.facts["match"][i], leak.facts["warped"][i]))
    what = "drops" if dropped else "marks"
    return pair_sheet([(a, b, label, f"pixel {m:.3f}, warped {w:.3f}")
                       for a, b, label, m, w in cells], dest,
                      f"{run.run_id}: {{shown}} of the {{total}} duplicate and leak {what} that "
                      "join no injected family (scored as wrong). Judge by eye.", limit)


def pair_sheet(cells: list[tuple], dest: Path, title: str, limit: int = 48) -> int:
    """Draw pairs of pictures for a person to judge: ``cells`` of (image a, image b (H, W,
    3) uint8, a caption, a detail line in red), all or ``limit`` drawn at random (seed 0),
    three to a row, under ``title`` (``{shown}`` and ``{total}`` filled in). Returns how
    many cells there were."""
    from PIL import Image, ImageDraw, ImageFont

    total = len(cells)
    if total > limit:
        keep = np.sort(np.random.default_rng(0).choice(total, limit, replace=False))
        cells = [cells[k] for k in keep]
    side, cols, head = 96, 3, 40
    cell_w, cell_h = 2 * side + 34, side + 40
    img = Image.new("RGB", (cols * cell_w + 10, head + max(1, -(-len(cells) // cols)) * cell_h),
                    "white")
    draw = ImageDraw.Draw(img)
    font = ImageFont.load_default()
    draw.text((10, 6), title.format(shown=len(cells), total=total), fill="black", font=font)
    for k, (a, b, caption, detail) in enumerate(cells):
        x0, y0 = 10 + (k % cols) * cell_w, head + (k // cols) * cell_h
        for q, im in enumerate((a, b)):
            img.paste(Image.fromarray(np.asarray(im)).resize((side, side),
                                                             Image.Resampling.NEAREST),
                      (x0 + q * (side + 4), y0))
        draw.text((x0, y0 + side + 3), caption, fill="#555", font=font)
        draw.text((x0, y0 + side + 17), detail, fill="#b00", font=font)
    dest.parent.mkdir(parents=True, exist_ok=True)
    img.save(dest)
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("/tmp/held_out"))
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--rows", default=",".join(ROWS), help="of " + ", ".join(ROWS))
    ap.add_argument("--sheet", type=Path, help="the fresh row's unmatched marks, as a PNG")
    a = ap.parse_args()
    size = "full" if a.full else "mini"
    print(machine(), flush=True)
    archive, _, outliers, leaks = SIZES[size]
    if not (SHARED / archive).is_file():
        print(f"no {archive} in {SHARED}: nothing to measure")
        return
    results = {}
    for row in a.rows.split(","):
        if row == "fresh" and not (SHARED / SIZES["full"][0]).is_file():
            print(f"no {SIZES['full'][0]} in {SHARED}: no fresh row")
            continue
        print(row, flush=True)
        _run(a.out / size / row, _data(row, size, a.out), row, outliers, leaks)
        results[row] = score(a.out / size / row)
        print("  " + json.dumps(results[row]), flush=True)
    for row in ("held-out", "fresh"):
        if row in results and "chosen" in results:
            gap = {k: round(results[row][k]["f1"] - results["chosen"][k]["f1"], 3)
                   for k in KINDS}
            results[f"gap_f1_{row}"] = gap
            print(f"{row} F1 − chosen-on F1: " + json.dumps(gap))
    (a.out / f"results-{size}.json").write_text(json.dumps(results, indent=2))
    if a.sheet and "fresh" in results:
        k = unmatched_sheet(a.out / size / "fresh", a.sheet)
        print(f"contact sheet: {a.sheet} ({k} marks that join no injected family)")


if __name__ == "__main__":
    main()
