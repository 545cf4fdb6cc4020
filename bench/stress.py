"""Findings where the data is most broken: a grid of conditions, one score per cell, and
the worst cell per kind.

Each cell is one ``curator pipeline`` run with the default backbone, copies, leaks or
outliers injected as the cell says (``--inject-duplicates``, ``--inject-leaks``,
``--inject-outliers``; the truth is in the run's ``injected.csv``), scored by ``curator
evaluate``'s findings scores:

- a **copy** cell gives the duplicate kind's precision, recall and F1 (a family of copies
  counts once) and recall per strength; every copy cell also holds leaks (copies of test
  images put into train, at the cell's strength), scored by the leak kind's recall and
  precision;
- a **clean** cell (no copies injected) gives the duplicate marks: on digits none are
  right; on CIFAR photographs a mark may be one of the dataset's own copies (a person
  judges them on the contact sheet of ``bench/copy_evidence.py``);
- an **outlier** cell gives the outlier kind's F1 at the default cut, AUROC and
  ``queue2x`` (the share of the outliers among the first 2× their number of rows by
  score).

Data: ``cifar`` is the shared ``cifar10-mini`` folder (2,000 train photographs, 1,000
test) at size ``2k``, and CIFAR-10's 50,000 train and 10,000 test images at size
``50k``; ``digits`` is scikit-learn's digits; ``photos`` is a folder of 2,000 square JPEGs of
256–500 px made from CIFAR photographs (bench/jpeg_folder.py), with 1,000 made from
CIFAR-10 mini's test split beside it (square: the injector stores a copy as a square
image, so a copy of a non-square photograph would be squashed, not a copy).

Sizes:

- ``ci``: the cells the regression guard (bench/regression_guard.py) runs in CI's time:
  copies at 5% and at 26.5% of the images (530 copies of 2,000 photographs: 42% of the
  images in a copy pair), at 20% in families of up to ten copies of one photograph, and
  one batch of 40 grey photographs among the colour ones.
- ``2k``: the grid at 2,000 images: copy rates 0–50% (one copy each, families of up to
  ten, a share filed in another class), our four strengths and the seven held-out ones
  (inject.py), on photographs and 256–500 px JPEGs; digits without copies and with 20%
  (only exact copies are told apart at 8 px: docs/benchmarks.md); outliers alone
  (five, one of each held-out source) and in batches of 20, 100 and 400 from four
  sources no outlier cut was chosen on.
- ``50k``: CIFAR-10's train split at 5% and 50% copies, and a batch of 400 grey outliers
  (a GPU host's size: the first two each make 52,500 and 75,000 images).

``chosen`` marks the cells a cut was chosen looking at (the copy tests' tails were
re-expressed on ``copies-5pct-mixed`` and on data without copies: digits, digits as JPEG,
CIFAR-10 mini's test split; docs/benchmarks.md, "Copies at any rate"). The ``worst_*``
lines are over the cells a cut was not chosen on: ``worst_copy_f1=``,
``worst_copy_precision=``, ``worst_leak_recall=``, ``worst_outlier_queue2x=``,
``worst_outlier_auroc=``, ``worst_outlier_f1=``, and ``copy_recall_drop=``, the most
recall lost from one copy rate to a higher one (mixed strengths, one copy each).

    python -m bench.stress [--size ci|2k|50k] [--runs DIR] [--json FILE] [--only NAME…]
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from bench.common import bench_env, cifar_folder, cifar_mini_folder, curator_cmd, machine

LEAKS = 50  # leaks in each copy cell at 2,000 images (scaled with the size)


@dataclass(frozen=True)
class Cell:
    """One condition: ``kind`` is ``copies``, ``clean`` or ``outliers``; ``data`` names the
    images (module docstring); ``flags`` the injection's ``curator pipeline`` flags;
    ``chosen`` whether a cut was chosen looking at it."""

    name: str
    kind: str
    flags: tuple[str, ...]
    data: str = "cifar"
    chosen: bool = False


def copies(rate: float, strength: str = "mixed", data: str = "cifar", family: int = 1,
           across: float = 0.0, leaks: int = LEAKS, chosen: bool = False) -> Cell:
    name = f"copies-{rate * 100:g}pct-{strength}"
    flags = ["--inject-duplicates", str(rate), "--duplicate-strength", strength]
    if family > 1:
        name += f"-family{family}"
        flags += ["--duplicate-family", str(family)]
    if across:
        name += f"-across{across * 100:g}"
        flags += ["--duplicate-across", str(across)]
    if leaks:
        flags += ["--inject-leaks", str(leaks)]
    return Cell(name if data == "cifar" else f"{data}-{name}", "copies", tuple(flags), data,
                chosen)


def outliers(n: int, source: str, data: str = "cifar") -> Cell:
    return Cell(f"outliers-{n}-{source}", "outliers",
                ("--inject-outliers", str(n), "--outlier-sources", source), data)


def clean(data: str, chosen: bool = False) -> Cell:
    return Cell(f"clean-{data}", "clean", (), data, chosen)


SOURCES = ("grey", "lines", "texture", "shapes")  # held-out outlier sources (inject.py)
GRIDS = {
    "ci": (copies(0.05, leaks=0), copies(0.265, leaks=0), copies(0.2, family=10, leaks=0),
           outliers(40, "grey")),
    "2k": (clean("digits", chosen=True), clean("cifar"),
           *(copies(r, chosen=r == 0.05) for r in (0.01, 0.05, 0.1, 0.2, 0.35, 0.5)),
           copies(0.05, "held-out"), copies(0.35, "held-out"),
           copies(0.2, family=10), copies(0.1, across=0.5),
           copies(0.05, data="photos"), copies(0.35, data="photos"),
           copies(0.2, data="digits", leaks=0),
           outliers(5, "held-out"),
           *(outliers(n, s) for s in SOURCES for n in (20, 100)),
           outliers(400, "grey"), outliers(400, "shapes")),
    "50k": (copies(0.05, leaks=500), copies(0.5, leaks=500), outliers(400, "grey")),
}


def dataset(data: str, size: str) -> str:
    """The ``--dataset`` spec of ``data`` at ``size`` (module docstring)."""
    if data == "digits":
        return "digits"
    if data == "photos":
        return f"folder:{photo_folder()}"
    return f"folder:{cifar_folder() if size == '50k' else cifar_mini_folder()}"


@functools.cache
def photo_folder() -> Path:
    """The square photographs' folder (module docstring), written once per process (the
    files already there are kept)."""
    from bench.jpeg_folder import write_folder

    root = Path("runs") / "stress-data"
    mini = cifar_mini_folder()
    # Square files: the injector stores a copy as a square image, so a copy of a
    # 400×300 photograph would be squashed, not the copy a user's folder holds.
    photos = root / "photos-square"
    write_folder(photos / "train", 2000, mini, square=True)
    as_train = root / "mini-test" / "train"  # write_folder reads a source's train/
    if not as_train.exists():
        as_train.parent.mkdir(parents=True, exist_ok=True)
        as_train.symlink_to((mini / "test").resolve())
    write_folder(photos / "test", 1000, as_train.parent, square=True)
    return photos


def run_cell(cell: Cell, size: str, runs: Path) -> dict:
    """The cell's pipeline (resumed when finished: only what changed is computed again)
    and its scores."""
    from worker.pipeline.evaluation.run_report import evaluate
    from worker.pipeline.storage.rundir import RunDir

    out = runs / cell.name
    split = () if cell.data == "digits" else ("--split", "train")
    cmd = [*curator_cmd(), "pipeline", "--dataset", dataset(cell.data, size), *split,
           *cell.flags, "--seed", "0", "--out", str(out)]
    t, since = time.perf_counter(), time.time()
    subprocess.run(cmd, check=True, capture_output=True, env=bench_env())
    seconds = time.perf_counter() - t
    meta = RunDir(out).read_meta()
    found = evaluate(RunDir(out), with_cleanlab=False)["findings"]
    row = {"cell": cell.name, "kind": cell.kind, "chosen": cell.chosen,
           "n": meta.get("n_samples"), "seconds": round(seconds, 1),
           "findings_s": step_seconds(meta, "findings", since)}
    if cell.kind == "outliers":
        o = found["outlier"]
        row |= {"marked": o["marked"],
                **{k: o.get(k) for k in ("precision", "recall", "f1", "auroc", "queue2x")}}
    else:
        d = found["duplicate"]
        row["marked"] = d["marked"]
        if cell.kind == "copies":
            row |= {k: d.get(k) for k in ("precision", "recall", "f1")}
            row["recall_by"] = d.get("recall_by_strength")
            leak = found.get("leak", {})
            if leak.get("recall") is not None and any(f == "--inject-leaks" for f in cell.flags):
                row |= {"leak_recall": leak["recall"], "leak_precision": leak["precision"]}
    return row


def step_seconds(meta: dict, step: str, since: float) -> float | None:
    """How long ``step`` took in a run's record: from the end of the step before it to its
    own end, when both ended after ``since`` (a POSIX time; None otherwise: a run resumed
    from earlier steps does not say)."""
    from datetime import datetime

    ends = sorted((datetime.fromisoformat(v["at"]).timestamp(), k)
                  for k, v in meta.get("steps", {}).items() if isinstance(v, dict) and "at" in v)
    for (before, _), (at, name) in zip(ends, ends[1:], strict=False):
        if name == step and before >= since - 1:
            return round(at - before, 1)
    return None


def recall_drop(results: list[dict]) -> float | None:
    """The most recall lost from one copy rate to a higher one, over the mixed-strength
    one-copy cells of CIFAR photographs."""
    plain = sorted((float(r["cell"].split("-")[1][:-3]), r["recall"]) for r in results
                   if r["kind"] == "copies" and r["cell"].startswith("copies-")
                   and r["cell"].endswith("pct-mixed"))
    drops = [max(0.0, lo[1] - hi[1]) for i, lo in enumerate(plain) for hi in plain[i + 1:]]
    return max(drops) if drops else None


def worst(results: list[dict]) -> dict[str, float]:
    """The worst held-out cell per kind and figure (cells a cut was chosen on left out),
    and the median beside it."""
    held = [r for r in results if not r["chosen"]]
    out = {}
    for kind, name, figures in (("copies", "copy", ("f1", "precision")),
                                ("copies", "leak", ("leak_recall", "leak_precision")),
                                ("outliers", "outlier", ("queue2x", "auroc", "f1"))):
        cells = [r for r in held if r["kind"] == kind]
        for f in figures:
            values = [r[f] for r in cells if r.get(f) is not None]
            if values:
                key = f.removeprefix("leak_")
                out[f"worst_{name}_{key}"] = min(values)
                out[f"median_{name}_{key}"] = statistics.median(values)
    marks = [r["marked"] for r in held if r["kind"] == "clean"]
    if marks:
        out["most_clean_marks"] = max(marks)
    drop = recall_drop(results)
    if drop is not None:
        out["copy_recall_drop"] = drop
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", choices=sorted(GRIDS), default="ci")
    ap.add_argument("--runs", type=Path, default=None,
                    help="where the cells' runs go (default runs/stress-SIZE)")
    ap.add_argument("--json", type=Path, default=None, help="also write the results here")
    ap.add_argument("--only", nargs="+", default=None, help="these cells alone (by name)")
    args = ap.parse_args()
    runs = args.runs or Path("runs") / f"stress-{args.size}"
    cells = [c for c in GRIDS[args.size] if args.only is None or c.name in args.only]
    print(f"# findings under stress, size {args.size} · {machine()}", flush=True)
    print("# chosen on: " + (", ".join(c.name for c in cells if c.chosen) or "none"))
    results = []
    t = time.perf_counter()
    for cell in cells:
        r = run_cell(cell, args.size, runs)
        results.append(r)
        print(" · ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}"
                         for k, v in r.items()), flush=True)
        if args.json:  # as it goes: a run stopped at a time limit keeps what it measured
            args.json.write_text(json.dumps({"cells": results}, indent=1))
    lines = worst(results)
    for k, v in lines.items():
        print(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}")
    print(f"# {len(results)} cells in {time.perf_counter() - t:.0f} s")
    if args.json:
        args.json.write_text(json.dumps({"cells": results, "worst": lines}, indent=1))


if __name__ == "__main__":
    main()
