"""The paper's comparison: filtered vs full vs random, across batch sizes and seeds.

Writes ``<run>/experiments/<name>/``: ``results.csv`` (one row per training),
``summary.csv`` (mean and standard deviation of the final test accuracy per subset and
batch size), ``accuracy_vs_batch.png`` (the paper's Fig. 6–7 style) and ``curation.json``
(the store revision, how many samples were dropped, and how many each finding kind only
proposed: those train in ``filtered``). Trainings that
already finished are reused, so an interrupted experiment continues where it stopped.

An experiment on a version (``curator experiment --version NAME``, :func:`on_version`)
trains the curated subsets on the version's frozen kept set and labels; without one, it
trains on the live curation and records the version whose frozen kept set and labels are
the live ones, if any. Either way ``curation.json``, ``results.csv`` and ``summary.csv``
name it in a ``version`` column (empty: none).
"""

from __future__ import annotations

import csv
import json
import math
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import replace
from pathlib import Path

from worker.pipeline.choices import BUDGETS
from worker.pipeline.curation.snapshot import current_snapshot
from worker.pipeline.curation.versions import (
    FrozenVersion,
    matching_version,
    read_version,
    train_key,
)
from worker.pipeline.errors import InputError
from worker.pipeline.export import check_export_name
from worker.pipeline.progress import ProgressFn, report
from worker.pipeline.storage.rundir import RunDir, atomic_path
from worker.train.data import select_subset
from worker.train.launch import TrainConfig, launch, trained_version, validate
from worker.train.plan import resolve, steps_per_epoch
from worker.train.verdict import compare, mean_without_leaks, verdict

RESULT_FIELDS = ["subset", "batch_size", "seed", "final_test_acc", "best_test_acc",
                 "final_test_acc_without_leaks", "test_leaked", "train_size", "test_source",
                 "epochs", "steps", "budget", "seconds", "images_per_s", "train_dir",
                 "converged", "gain_pp", "loss_drop", "subset_seconds", "compile", "version"]


def _write_csv(path: Path, fields: list[str], rows: list[dict]) -> None:
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as fh:
        w = csv.DictWriter(fh, fields)
        w.writeheader()
        w.writerows(rows)


def summarise(rows: list[dict], version: str | None = None) -> list[dict]:
    """Per (subset, batch size): images, seeds, mean ± std of the final test accuracy, and
    the difference against full and random with its standard error and Welch p-value
    (:mod:`.verdict`); ``version``: the version the curated subsets trained on (None:
    none)."""
    def cols(name: str, d) -> dict:  # noqa: ANN001 - Difference | None
        return {f"diff_vs_{name}": d and round(d.diff, 5), f"se_vs_{name}": d and d.se,
                f"p_vs_{name}": d and d.p}

    return [{"subset": r.subset, "batch_size": r.batch_size, "images": r.images,
             "n": len(r.accs), "mean_test_acc": r.mean, "std_test_acc": r.sd,
             "converged": r.converged,
             "mean_test_acc_without_leaks": mean_without_leaks(rows, r.subset, r.batch_size),
             **cols("full", r.vs_full), **cols("random", r.vs_random), "version": version}
            for r in compare(rows)]


def on_version(run: RunDir, configs: Sequence[TrainConfig], version: str | None
               ) -> tuple[TrainConfig, ...]:
    """``configs`` training their curated subsets on version ``version``'s frozen kept set
    and labels (``extra``'s ``version``, which the job record carries); unchanged for
    None (the live curation).

    Raises
    ------
    InputError
        No such version, before any job is recorded.
    """
    if version is None:
        return tuple(configs)
    read_version(run, version)
    return tuple(replace(c, extra={**(c.extra or {}), "version": version}) for c in configs)


def plot(summary: list[dict], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    for subset in sorted({r["subset"] for r in summary}):
        pts = sorted((r for r in summary if r["subset"] == subset), key=lambda r: r["batch_size"])
        ax.errorbar([p["batch_size"] for p in pts], [100 * p["mean_test_acc"] for p in pts],
                    yerr=[100 * p["std_test_acc"] for p in pts], marker="o", capsize=3,
                    label=subset)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("global batch size")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    with atomic_path(path, ".png") as tmp:
        fig.savefig(tmp, format="png")
    plt.close(fig)


def budgeted(run: RunDir, cfg: TrainConfig, n_full: int, budget: str
             ) -> tuple[TrainConfig, int]:
    """``cfg`` (resolved for the full subset's ``n_full`` images) and its optimizer steps;
    with ``budget`` "steps", its epochs raised so that its subset gets at least the steps
    full gets at ``cfg.epochs`` (filtered at 93% of full: 10 epochs become 11)."""
    world = cfg.nproc * cfg.nnodes
    n = len(select_subset(run, cfg.subset, cfg.seed, trained_version(cfg)).indices)
    per_epoch = max(1, steps_per_epoch(n, cfg.batch_size, world))
    if budget == "steps":
        target = steps_per_epoch(n_full, cfg.batch_size, world) * cfg.epochs
        cfg = replace(cfg, epochs=max(cfg.epochs, math.ceil(target / per_epoch)))
    return cfg, per_epoch * cfg.epochs


def plan_lines(planned: list[tuple[TrainConfig, int]], budget: str) -> list[str]:
    """'experiment: plan: batch 64 (SGD), the same optimizer steps: full 10 epochs = 220
    steps; filtered 12 epochs = 228 steps; …', one line per batch size."""
    by_batch: dict[int, dict[str, tuple[int, int]]] = {}
    optimizer = {}
    for cfg, steps in planned:
        by_batch.setdefault(cfg.batch_size, {})[cfg.subset] = (cfg.epochs, steps)
        optimizer[cfg.batch_size] = cfg.optimizer.upper()
    what = "the same optimizer steps" if budget == "steps" else "the same epochs"
    return [f"experiment: plan: batch {b} ({optimizer[b]}), {what}: " + "; ".join(
        f"{subset} {e} epochs = {s:,} steps" for subset, (e, s) in arms.items())
        for b, arms in by_batch.items()]


def run_experiment(run: RunDir, name: str, configs: list[TrainConfig],
                   progress: ProgressFn | None = None, budget: str = "steps",
                   parallel: int = 1) -> Path:
    """Train every config and write the results. Trainings keep their default names, which
    end with their subset's key, so one identical to an earlier training (any experiment's)
    is reused and a changed subset is trained anew. ``budget`` (:data:`BUDGETS`): hold the
    optimizer steps equal across subsets (a smaller subset trains more epochs: the
    default) or the epochs. ``parallel``: trainings at once (each with its share of the CPU
    cores; a gain only where one training leaves the device idle)."""
    if budget not in BUDGETS:
        raise InputError(f"--budget must be one of {', '.join(BUDGETS)}, got {budget!r}")
    check_export_name(run, name)
    if not configs:
        raise InputError("nothing to run: give at least one subset, batch size and seed")
    for cfg in configs:
        validate(cfg)
    if parallel > 1 and any(c.nnodes > 1 or c.rdzv_endpoint for c in configs):
        raise InputError("--parallel runs trainings side by side on this host: it cannot be "
                         "combined with --nnodes or --rdzv-endpoint")
    if len({trained_version(c) for c in configs}) > 1:
        raise InputError("an experiment trains on one curation: give its trainings one "
                         "version")
    run.require_images("an experiment (retraining)")  # before its folder is made
    out = run.path / "experiments" / name
    out.mkdir(parents=True, exist_ok=True)
    version = _write_curation(run, out, trained_version(configs[0]))
    # Settings left to the rule are chosen once, from the full subset's size, so that every
    # subset of a comparison trains with the same batch; with the steps budget a smaller
    # subset then trains more epochs, to as many optimizer steps as full's.
    n_full = len(select_subset(run, "full", 0).indices)
    planned = [budgeted(run, resolve(replace(cfg, name=None), n_full)[0], n_full, budget)
               for cfg in configs]
    for line in plan_lines(planned, budget):
        report(progress, 0, 1, line)
    rows: list[dict | None] = [None] * len(planned)
    lock, stop = threading.Lock(), threading.Event()
    share = max(1, min(parallel, len(planned)))
    # One lock per training: two identical configs (--batch-sizes 64,64) train once, the
    # second reusing the first (launch), never both at once in one folder.
    same = {repr(cfg): threading.Lock() for cfg, _ in planned}

    def train(i: int) -> None:
        cfg, steps = planned[i]
        with same[repr(cfg)]:
            if stop.is_set():  # another training failed or the user interrupted
                return
            summary = launch(run, cfg, _tagged(progress, cfg, lock, stop) if share > 1
                             else progress, share=share)
        with lock:
            rows[i] = {**_result_row(cfg, steps, budget, summary), "version": version}
            _write_csv(out / "results.csv", RESULT_FIELDS, [r for r in rows if r])

    _map(train, len(planned), share, stop)
    rows = [r for r in rows if r]
    summary_rows = summarise(rows, version)
    _write_csv(out / "summary.csv", list(summary_rows[0]), summary_rows)
    plot(summary_rows, out / "accuracy_vs_batch.png",
         f"{run.run_id}: {configs[0].model}, {rows[0]['epochs']} epochs")
    return out


def _result_row(cfg: TrainConfig, steps: int, budget: str, summary: dict) -> dict:
    """One training's row of ``results.csv`` (:data:`RESULT_FIELDS`)."""
    return {"subset": cfg.subset, "batch_size": cfg.batch_size, "seed": cfg.seed,
            "final_test_acc": summary["final_test_acc"],
            "best_test_acc": summary["best_test_acc"],
            "final_test_acc_without_leaks": summary.get("final_test_acc_without_leaks"),
            "test_leaked": summary.get("test_leaked", 0),
            "train_size": summary["train_size"], "test_source": summary["test_source"],
            "epochs": cfg.epochs, "steps": summary.get("steps", steps),
            "budget": budget, "seconds": round(summary["seconds"], 2),
            "images_per_s": round(summary["images_per_s"] or 0, 1),
            "train_dir": f"train/{summary['config']['name']}",
            # The plateau rule (worker/train/convergence.py): a verdict names no
            # winner while a compared training was still learning.
            "converged": summary["converged"],
            "gain_pp": summary["convergence"]["gain_pp"],
            "loss_drop": summary["convergence"]["loss_drop"],
            # choosing the subset (pruned@F's scoring): part of its wall-clock time
            "subset_seconds": summary["config"].get("subset_seconds", 0.0),
            # how it was computed (torch.compile's mode): its seconds are not an eager run's
            "compile": summary["config"].get("compile", "off")}


def _tagged(progress: ProgressFn | None, cfg: TrainConfig, lock: threading.Lock,
            stop: threading.Event) -> ProgressFn:
    """``progress`` for one of several trainings at once: each message names its training
    ("train [filtered@1024 s0]: epoch …"), one call at a time, and a ``stop`` (another
    training failed, the user interrupted) stops this one too."""
    tag = f"train [{cfg.subset}@{cfg.batch_size} s{cfg.seed}]:"

    def tagged(done: int, total: int, message: str) -> bool:
        if message.startswith("train:"):
            message = tag + message.removeprefix("train:")
        with lock:
            asked = progress is not None and progress(done, total, message)
        return bool(asked) or stop.is_set()
    return tagged


def _map(fn: Callable[[int], None], n: int, parallel: int,
         stop: threading.Event | None = None) -> None:
    """``fn(i)`` for i < n, ``parallel`` at a time (in order when 1). On the first error,
    or an interrupt (Ctrl-C), ``stop`` is set, so that the trainings under way stop at
    their next progress report and none begins; the error is raised once they have
    ended."""
    if parallel <= 1:
        for i in range(n):
            fn(i)
        return
    stop = stop or threading.Event()

    def guarded(i: int) -> None:
        try:
            fn(i)
        except BaseException:
            stop.set()  # before this thread takes the next one: it finds stop set
            raise

    pool = ThreadPoolExecutor(parallel)
    futures = [pool.submit(guarded, i) for i in range(n)]
    try:
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        failed = [f for f in futures if f in done and f.exception() is not None]
        if failed:
            raise failed[0].exception()
    except BaseException:
        stop.set()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _write_curation(run: RunDir, out: Path, version: str | None = None) -> str | None:
    """What the curated subsets left in: the samples a finding only proposes (below its
    drop cut, no person decided) train in ``filtered``; ``curation.json`` says how many,
    so the verdict can say so, and which version they trained on: ``version``, or without
    one the version whose frozen kept set and labels are the live ones (None: none).
    Returns that version."""
    if version is not None:
        frozen = read_version(run, version)
        counts = frozen.counts
        info = {"store_revision": frozen.store_revision, "version": version,
                "proposed": {k: n for k, n in _proposed(frozen).items() if n},
                "dropped": int(counts["dropped"])}
    else:
        snap = current_snapshot(run)
        version = matching_version(run, train_key=train_key(snap.decisions.kept, snap.labels))
        info = {"store_revision": snap.stored.revision, "version": version,
                "proposed": snap.proposed(), "dropped": int((~snap.decisions.kept).sum())}
    with atomic_path(out / "curation.json") as tmp:
        tmp.write_text(json.dumps(info, indent=2) + "\n")
    return version


def _proposed(frozen: FrozenVersion) -> dict[str, int]:
    """How many samples each finding kind proposes in a version (kept, listed by the kind,
    nobody decided), by kind name: :meth:`CurationSnapshot.proposed` of its outcome."""
    listed = frozen.outcome.decision == "proposed"
    return {k: int((listed & m).sum()) for k, m in frozen.outcome.marked().items()}


def curation_line(folder: Path, subsets: set[str]) -> str:
    """'filtered kept 21 samples that findings only propose (duplicate 18, outlier 3) …'
    for filtered and corrected among ``subsets`` (which keep every such sample; a
    ``pruned@F`` keeps some of them), or '' when neither was trained, none kept such
    samples, or the experiment predates ``curation.json``."""
    path = folder / "curation.json"
    names = [s for s in ("filtered", "corrected") if s in subsets]
    if not names or not path.is_file():
        return ""
    proposed = json.loads(path.read_text()).get("proposed", {})
    if not proposed:
        return ""
    kinds = ", ".join(f"{k} {n}" for k, n in proposed.items())
    return (f"{' and '.join(names)} kept {sum(proposed.values())} samples that findings "
            f"only propose ({kinds}): review them on the Curate page to drop them")


def read_results(folder: Path) -> list[dict]:
    """An experiment's ``results.csv`` rows (empty before its first training ends)."""
    if not (folder / "results.csv").is_file():
        return []
    with open(folder / "results.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def verdict_report(folder: Path) -> str:
    """The comparison table and one verdict line per batch size, as plain text."""
    results = compare(read_results(folder))
    lines = [f"{'batch':>6}  {'subset':<9}{'images':>8}{'epochs':>7}{'steps':>8}{'seeds':>6}  "
             f"{'test acc':<16}{'vs full':<18}{'vs random':<18}converged"]
    for r in results:
        done = {True: "yes", False: "no", None: "-"}[r.converged]
        lines.append(f"{r.batch_size:>6}  {r.subset:<9}{r.images:>8}{r.epochs:>7}"
                     f"{r.steps or '-':>8}{len(r.accs):>6}  "
                     f"{100 * r.mean:6.2f} ± {100 * r.sd:5.2f}  "
                     f"{r.vs_full.text() if r.vs_full else '-':<18}"
                     f"{r.vs_random.text() if r.vs_random else '-':<18}{done}")
    lines += [verdict(results, b) for b in sorted({r.batch_size for r in results})]
    note = curation_line(folder, {r.subset for r in results})
    return "\n".join([*lines, note] if note else lines)
