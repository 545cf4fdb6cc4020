"""The regression guard: measure what earlier work won and fail when a figure falls past
its floor (``make guard``, run by ``.ci/run`` after the tests).

The floors live in one file, ``bench/floors.toml``: each figure with its floor
(``at_most`` or ``at_least``), the date the floor was set and what was seen then, so that
raising a floor is a one-line change and lowering one shows in review. Each figure is
measured by one probe:

- ``ui``: the Curate page in headless Chromium on 20,000 CIFAR-10 train photographs with
  their CIFAR-10N human labels (2,000 a class) and 2,000 test photographs, ResNet-56
  features (the shared weights, trained on CIFAR-10's true labels; the page's speed does
  not depend on that), built in about 2 minutes.
  The eps change typed into the box, through the server alone and as the page does it
  (re-clustered in the browser), as the ratio of their p95s; the class switch and the
  triage key as p95s in frames of the same page left alone; the review list's sort and
  filter against the same sort of its rows in plain JavaScript, taken between them
  (bench/ui_latency.py times each the same way).
- ``detection``: the digits demo (``make demo``'s run): the label rule's F1, its ratio to
  cleanlab's best, and the duplicates it marks (digits holds no copies); the default
  backbone's row on ``cifar10-mini`` (40% pairs noise, bench/detection.py
  ``lite-mini-pair40``): our F1 over the best peer's on the same features.
- ``stress``: the findings' cells of bench/stress.py at its ``ci`` size: copies at 5% and
  at 26.5% of the images, at 20% in families of up to ten, a batch of 40 grey photographs
  among the colour ones.
- ``startup``: ``curator --help``, ``import tsne_curator`` and the digits demo's pipeline
  on its finished run (every step reused) against a bare ``python -c pass`` (the same
  interpreter, in the same run), and the CLI's start against the eager imports it had
  before they were made lazy (bench/cli_start.py).

Every ratio has its baseline measured in the same run, so a busy machine moves both sides;
the few absolute figures (F1s, counts) do not depend on the machine's speed.

    python -m bench.regression_guard [--only ui,detection,stress,startup] [--floors FILE]
        [--work DIR] [--repeat N] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from bench.common import ROOT, bench_env, curator_cmd, machine

FLOORS = ROOT / "bench" / "floors.toml"


@dataclass(frozen=True)
class Floor:
    """One guarded figure: ``bound`` is the floor, ``upper`` True for ``at_most``."""

    name: str
    probe: str
    bound: float
    upper: bool
    set: date
    seen: str
    what: str

    def holds(self, value: float | None) -> bool:
        """Whether ``value`` is on the right side of the floor (a missing value is not)."""
        if value is None or value != value:  # None or NaN: not measured
            return False
        return value <= self.bound if self.upper else value >= self.bound

    def text(self) -> str:
        return f"{'≤' if self.upper else '≥'} {self.bound:g}"


def read_floors(path: Path = FLOORS) -> list[Floor]:
    """The floors file's figures, in its order.

    Raises
    ------
    ValueError
        A figure without exactly one of ``at_most`` / ``at_least``, without its ``set``
        date, or naming a probe the guard does not have.
    """
    data = tomllib.loads(path.read_text())
    out = []
    for name, f in data.get("figures", {}).items():
        bounds = [k for k in ("at_most", "at_least") if k in f]
        if len(bounds) != 1:
            raise ValueError(f"{path}: figure {name} needs one of at_most or at_least")
        if not isinstance(f.get("set"), date):
            raise ValueError(f"{path}: figure {name} needs the date its floor was set (set = "
                             "YYYY-MM-DD)")
        if f.get("probe") not in PROBES:
            raise ValueError(f"{path}: figure {name} names probe {f.get('probe')!r}; probes "
                             f"are {', '.join(PROBES)}")
        out.append(Floor(name, f["probe"], float(f[bounds[0]]), bounds[0] == "at_most",
                         f["set"], str(f.get("seen", "")), str(f.get("what", ""))))
    return out


def p95(values: list[float]) -> float:
    from bench.ui_latency import pct

    return pct(values, 0.95)


# ----------------------------------------------------------------------------- probes
# The Curate page's run: CIFAR-10 photographs with their CIFAR-10N human labels, 2,000 a
# class and a test split (so every finding kind marks and proposes samples, as on a real
# dataset: a run without proposed samples hid a preview that counted them wrong).
UI_PER_CLASS = 2000


def probe_ui(work: Path) -> dict[str, float]:
    """The Curate page's figures on a CIFAR-10 run of 20,000 photographs (module doc)."""
    from bench.common import SHARED, cifar_folder, cifar_subset
    from bench.ui_latency import (
        class_switches,
        eps_changes,
        idle_frames,
        open_page,
        review_list,
        served_run,
        show_class_listed,
        triage_ms,
    )

    run = work / "runs" / "ui"
    folder, labels = cifar_subset(cifar_folder(), UI_PER_CLASS, UI_PER_CLASS // 10)
    subprocess.run([*curator_cmd(), "pipeline", "--dataset", f"folder:{folder}", "--split",
                    "train", "--labels", str(labels), "--label-column", "aggre_label",
                    "--true-label-column", "clean_label", "--model", "cifar-resnet56",
                    "--weights", str(SHARED / "weights" / "resnet56-4bfd9763.th"),
                    "--out", str(run)], check=True, capture_output=True, env=bench_env())
    with served_run(run, "guard-ui-") as (server, driver):
        _, base = open_page(driver, server)
        eps = eps_changes(driver, base, 15, "0.6,1.4")
        frame = p95(idle_frames(driver, 2.0))
        switches, _ = class_switches(driver, run, 10, 0.15)
        show_class_listed(driver, 1)
        triage, _ = triage_ms(driver, 15)
        review = review_list(driver, 12)
    sort, filter_, plain = (next(v for k, v in review.items() if k.endswith(what))
                            for what in (": sort", ": filter", "(baseline)"))
    return {"eps_browser_over_server": p95(eps["eps change"]) / p95(eps["eps change, server path"]),
            "class_switch_frames": p95(switches["class switch"]) / frame,
            "triage_frames": p95(triage["triage step"]) / frame,
            "review_sort_over_plain": p95(sort) / p95(plain),
            "review_filter_over_plain": p95(filter_) / p95(plain)}


def demo_pipeline(work: Path) -> list[str]:
    """``make demo``'s pipeline command, its run under ``work``."""
    return [*curator_cmd(), "pipeline", "--dataset", "digits", "--inject-noise", "0.1",
            "--seed", "0", "--out", str(work / "runs" / "demo")]


def probe_detection(work: Path) -> dict[str, float]:
    """The digits demo's label figures and the default backbone's row against the peers."""
    from bench.detection import mini_rows, score_row
    from worker.pipeline.evaluation.run_report import evaluate
    from worker.pipeline.storage.rundir import RunDir

    demo = work / "runs" / "demo"
    subprocess.run(demo_pipeline(work), check=True, capture_output=True, env=bench_env())
    report = evaluate(RunDir(demo))
    ours = report["current"]["f1"]
    peer = max(m["f1"] for m in report["cleanlab"].values())
    row = score_row(next(r for r in mini_rows() if r.name == "lite-mini-pair40"),
                    work / "runs")
    return {"digits_label_f1": ours, "digits_label_over_cleanlab": ours / peer,
            "digits_duplicate_marks": float(report["findings"]["duplicate"]["marked"]),
            "default_backbone_over_best_peer": row["ratio"]}


def probe_stress(work: Path) -> dict[str, float]:
    """bench/stress.py's ``ci`` cells."""
    from bench.stress import GRIDS, run_cell

    cells = {c.name: run_cell(c, "ci", work / "runs" / "stress") for c in GRIDS["ci"]}
    return {"copies_5pct_f1": cells["copies-5pct-mixed"]["f1"],
            "copies_26pct_f1": cells["copies-26.5pct-mixed"]["f1"],
            "copies_26pct_precision": cells["copies-26.5pct-mixed"]["precision"],
            "copies_families_f1": cells["copies-20pct-mixed-family10"]["f1"],
            "outliers_batch40_queue2x": cells["outliers-40-grey"]["queue2x"],
            "outliers_batch40_auroc": cells["outliers-40-grey"]["auroc"],
            "outliers_batch40_f1": cells["outliers-40-grey"]["f1"]}


def probe_startup(work: Path, repeat: int = 7) -> dict[str, float]:
    """Start-up times as ratios against a bare interpreter and the old eager imports; the
    pipeline's: ``make demo``'s pipeline again on its finished run (every step reused, the
    summary printed), what a user pays before any step has work to do."""
    from bench.cli_start import EAGER, median_s

    env = bench_env()
    subprocess.run(demo_pipeline(work), check=True, capture_output=True, env=env)
    bare = median_s([sys.executable, "-c", "pass"], repeat, env)
    resume = median_s(demo_pipeline(work), min(repeat, 3), env)
    cli = "import sys; from worker.cli import main; sys.argv = ['curator', '--help']; main()"
    now = median_s([sys.executable, "-c", cli], repeat, env)
    eager = median_s([sys.executable, "-c", EAGER + cli], repeat, env)
    api = median_s([sys.executable, "-c", "import tsne_curator"], repeat, env)
    return {"cli_help_over_bare": now / bare, "api_import_over_bare": api / bare,
            "cli_eager_over_lazy": eager / now, "pipeline_resume_over_bare": resume / bare}


PROBES: dict[str, Callable[[Path], dict[str, float]]] = {
    "ui": probe_ui, "detection": probe_detection, "stress": probe_stress,
    "startup": probe_startup}


# ------------------------------------------------------------------------------ verdict
def judge(floors: list[Floor], figures: dict[str, float]) -> list[tuple[Floor, float | None,
                                                                        bool]]:
    """Each floor with its measured figure (None where not measured) and whether it holds."""
    return [(f, figures.get(f.name), f.holds(figures.get(f.name))) for f in floors]


def report(verdicts: list[tuple[Floor, float | None, bool]]) -> str:
    lines = [f"{'figure':<34} {'value':>9}  {'floor':<10} {'set':<10}  verdict"]
    for f, value, ok in verdicts:
        shown = "—" if value is None else f"{value:.3f}"
        lines.append(f"{f.name:<34} {shown:>9}  {f.text():<10} {f.set.isoformat():<10}  "
                     f"{'ok' if ok else 'FAILED'}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help=f"comma-separated probes ({', '.join(PROBES)})")
    ap.add_argument("--floors", type=Path, default=FLOORS)
    ap.add_argument("--work", type=Path, default=None,
                    help="where the probes' runs go (kept; reused when finished); default "
                         "a temporary folder")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    ap.add_argument("--repeat", type=int, default=7,
                    help="start-up: processes timed per figure (their median)")
    args = ap.parse_args()
    floors = read_floors(args.floors)
    only = [p for p in args.only.split(",") if p] or list(PROBES)
    unknown = sorted(set(only) - set(PROBES))
    if unknown:
        ap.error(f"unknown probe {', '.join(unknown)}: probes are {', '.join(PROBES)}")
    floors = [f for f in floors if f.probe in only]
    print(f"# regression guard · {machine()}", flush=True)
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="guard-") as tmp:
        work = args.work or Path(tmp)
        for probe in only:
            t = time.perf_counter()
            got = (probe_startup(work, args.repeat) if probe == "startup"
                   else PROBES[probe](work))
            figures.update(got)
            print(f"{probe}: {time.perf_counter() - t:.0f} s · "
                  + " · ".join(f"{k} {v:.3f}" for k, v in got.items()), flush=True)
    verdicts = judge(floors, figures)
    print(report(verdicts))
    unguarded = sorted(set(figures) - {f.name for f in floors})
    if unguarded:
        print(f"measured without a floor: {', '.join(unguarded)}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))
    failed = [f.name for f, _, ok in verdicts if not ok]
    if failed:
        print(f"past their floors: {', '.join(failed)}")
    print(f"guard: {len(verdicts) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
