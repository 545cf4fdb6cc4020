"""Start training under torchrun, follow it, stop it: used by the CLI and the train job.

torchrun runs as a subprocess with an argument list (never a shell), in its own process
group; its per-epoch metrics are streamed to a progress callback, and a cancel sends it
SIGTERM, which every rank turns into a clean stop with a usable checkpoint.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from worker.pipeline.choices import COMPILE_MODES, OPTIMIZERS, TRAIN_MODELS
from worker.pipeline.errors import InputError
from worker.pipeline.progress import Cancelled, ProgressFn, report
from worker.pipeline.storage.rundir import RunDir, save_npy, write_text
from worker.train.config import TrainConfig, check_numbers, with_defaults
from worker.train.convergence import with_convergence
from worker.train.data import correctable, pruned_sizes, select_subset, subset_indices
from worker.train.plan import Plan, resolve
from worker.train.subsets import parse_subset

# How long an interrupted launch waits for the training to stop at SIGTERM (and write its
# checkpoint: trainer.py) before it kills it.
STOP_SECONDS = 20


def validate(cfg: TrainConfig) -> None:
    """One-line errors for arguments that cannot work, before anything starts."""
    import torch

    check_numbers(cfg)

    if cfg.model not in TRAIN_MODELS:
        raise InputError(f"unknown model {cfg.model!r}: choose one of "
                         f"{', '.join(TRAIN_MODELS)}")
    parse_subset(cfg.subset)  # an unknown name is refused in one line
    world = cfg.nproc * cfg.nnodes
    if cfg.batch_size is not None and cfg.batch_size < world:
        raise InputError(f"--batch-size {cfg.batch_size} is smaller than the {world} "
                         "processes: each needs at least one sample per step")
    use_cuda = torch.cuda.is_available() and cfg.device != "cpu"
    have = torch.cuda.device_count() if use_cuda else (os.cpu_count() or 1)
    if cfg.nproc > have:
        what = "GPUs" if use_cuda else "CPU cores and no GPU"
        raise InputError(f"cannot run {cfg.nproc} processes on this host: it has {have} {what}")
    if cfg.device.startswith("cuda") and not torch.cuda.is_available():
        raise InputError("--device cuda requested but CUDA is not available; use cpu")
    if cfg.optimizer not in OPTIMIZERS:
        raise InputError(f"unknown optimizer {cfg.optimizer!r}: use {', '.join(OPTIMIZERS)}")
    if cfg.compile not in COMPILE_MODES:
        raise InputError(f"unknown --compile {cfg.compile!r}: use {', '.join(COMPILE_MODES)}")
    if cfg.compile != "off" and not compiler_found(use_cuda):
        # torch would fail at the first step, deep in a traceback (slim images have none)
        raise InputError(f"--compile {cfg.compile} needs a C/C++ compiler on PATH (g++ "
                         "on a CPU, cc for Triton on a GPU): install one, or use --compile off")


def compiler_found(cuda: bool) -> bool:
    """Whether torch.compile's backend finds its compiler: Inductor's C++ on a CPU
    (``CXX`` or g++/c++/clang++), Triton's launcher on a GPU (``CC`` or cc/gcc/clang)."""
    import shutil

    names = ("CC", "cc", "gcc", "clang") if cuda else ("CXX", "g++", "c++", "clang++")
    env = os.environ.get(names[0])
    return any(shutil.which(n) for n in ((env,) if env else ()) + names[1:])


# What may differ between a training's config.json and a repeated request for it (the
# subset's key says which images with which labels, whichever version they came from).
_NOT_IDENTITY = ("extra", "store_revision", "version", "warnings", "total_steps",
                 "subset_seconds")


def trained_version(cfg: TrainConfig) -> str | None:
    """The version whose frozen curation ``cfg``'s curated subset trains on (``extra``'s
    ``version``, set by ``curator experiment --version``), or None for the live one."""
    return (cfg.extra or {}).get("version")


@dataclass
class Prepared:
    """A training's folder and settings, ready to start or to reuse.

    Attributes
    ----------
    out : Path, ``<run>/train/<name>/``
    cfg : TrainConfig, every setting resolved (none left None)
    plan : Plan, steps per epoch and in all, and warnings
    reused : str or None, which training is reused, None for a new one
    """

    out: Path
    cfg: TrainConfig
    plan: Plan
    reused: str | None


def plan_for(run: RunDir, cfg: TrainConfig, labels: np.ndarray, kept: np.ndarray,
             train_labels: np.ndarray | None = None) -> Plan:
    """What ``cfg`` would do on the subset that ``kept`` (shape (N,), the curation's
    decisions as the caller already holds them) gives: a preview, nothing written.
    ``train_labels`` (default ``labels``): the given labels with the reviewers' relabels,
    by which ``pruned@F`` counts its classes."""
    validate(cfg)
    run.require_images("retraining")
    name = parse_subset(cfg.subset)
    if name.fraction is not None:  # counted as the training counts, without scoring
        y = labels if train_labels is None else train_labels
        n = pruned_sizes(run, labels, kept, y, (name.fraction,))[name.fraction]
        return resolve(cfg, n)[1]
    # The preview counts every rule-dropped sample the evidence can correct; a reviewer's
    # drop is only told apart when the job takes its snapshot (select_subset).
    rescued = None
    if name.kind == "corrected":
        from worker.pipeline.curation.rule_evidence import load_evidence

        rescued = correctable(labels, ~kept, load_evidence(run))
    return resolve(cfg, len(subset_indices(run, labels, kept, cfg.subset, cfg.seed,
                                           rescued)))[1]


def prepare(run: RunDir, cfg: TrainConfig) -> Prepared:
    """Create ``<run>/train/<name>/`` with its config and subset, or find the identical
    training (to resume it, or to return its result).

    A training is tied to the exact subset it trains on: the default name ends with the
    subset's key (a hash of its indices and labels), and ``config.json`` records the key,
    the store revision and the version it was drawn from (None: the live curation). A
    repeated request after the curation changed therefore trains anew; one for the same
    subset reuses the training and says so; a ``--name`` that exists for another subset
    or other settings is refused.

    Settings left as None are chosen from the subset's size first (:mod:`.plan`), so the
    name and the identity are those of the settings that actually train.
    """
    validate(cfg)
    run.require_images("retraining")
    if run.thumbnails.is_file():  # damaged, it is named here, not in the trainer's traceback
        run.load_array(run.thumbnails, "ingest", mmap=True)
    from worker.pipeline.export import check_export_name

    began = time.perf_counter()
    chosen = select_subset(run, cfg.subset, cfg.seed, trained_version(cfg))
    # What choosing the subset cost (pruned@F scores every kept sample): the Results page
    # adds it to the training's time.
    subset_seconds = round(time.perf_counter() - began, 3)
    cfg, plan = resolve(cfg, len(chosen.indices))
    name = cfg.name or f"{cfg.default_name()}-{chosen.key[:8]}"
    check_export_name(run, name)  # the same safe-name rule as exports
    out = run.path / "train" / name
    config = {**asdict(cfg), "name": name, "run": str(run.path.resolve()),
              "subset_key": chosen.key, "subset_size": len(chosen.indices),
              "store_revision": chosen.revision, "version": chosen.version,
              "total_steps": plan.total_steps,
              "warnings": list(plan.warnings), "subset_seconds": subset_seconds}
    if (out / "config.json").is_file():
        old = with_defaults(json.loads((out / "config.json").read_text()))
        same = {k: v for k, v in old.items() if k not in _NOT_IDENTITY} == \
            {k: v for k, v in config.items() if k not in _NOT_IDENTITY}
        if not same:
            why = "another subset" if old.get("subset_key") != chosen.key else "other settings"
            raise InputError(f"training {name!r} exists for {why}; pass another --name")
        return Prepared(out, cfg, plan, (
            f"reusing training {name} of store revision {old.get('store_revision')} "
            f"(the same {len(chosen.indices)} images and labels)"))
    out.mkdir(parents=True, exist_ok=True)
    save_npy(out / "subset.npy", chosen.indices)
    save_npy(out / "subset_labels.npy", chosen.labels)
    write_text(out / "config.json", json.dumps(config, indent=2) + "\n")
    return Prepared(out, cfg, plan, None)


def torchrun_argv(cfg: TrainConfig, out: Path) -> list[str]:
    # worker.train.guard: the training dies with the process that started it.
    argv = [sys.executable, "-m", "worker.train.guard", sys.executable, "-m",
            "torch.distributed.run", "--nproc_per_node", str(cfg.nproc)]
    if cfg.nnodes > 1 or cfg.rdzv_endpoint:
        argv += ["--nnodes", str(cfg.nnodes), "--rdzv_backend", "c10d",
                 "--rdzv_endpoint", cfg.rdzv_endpoint or "127.0.0.1:29400",
                 "--rdzv_id", cfg.rdzv_id or out.name]
        if cfg.node_rank is not None:
            argv += ["--node_rank", str(cfg.node_rank)]
    else:
        argv += ["--standalone"]
    return argv + ["-m", "worker.train", "--out", str(out)]


def read_metrics(out: Path) -> list[dict]:
    path = out / "metrics.jsonl"
    if not path.is_file():
        return []
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]


def read_progress(out: Path) -> dict | None:
    """Rank 0's live position (``progress.json``: epoch, step, total_steps), if any."""
    try:
        return json.loads((out / "progress.json").read_text())
    except (OSError, ValueError):
        return None


def progress_message(cfg: TrainConfig, live: dict | None, rows: list[dict]) -> str:
    """``train: epoch e/E, step s/S, loss l | epoch k: loss …, test acc …`` (``loss l``:
    the running loss of the epoch under way; the part after ``|`` is the last finished
    epoch, which the CLI prints once per epoch)."""
    epoch = (live or {}).get("epoch", len(rows)) + 1
    step, total = (live or {}).get("step", 0), (live or {}).get("total_steps", 0)
    if not total and not rows:  # torchrun still starting: no "step 0/0"
        return "train: starting the processes"
    msg = f"train: epoch {min(epoch, cfg.epochs)}/{cfg.epochs}, step {step}/{total}"
    if (live or {}).get("loss") is not None:  # the epoch's running loss, rank 0's share
        msg += f", loss {live['loss']:.3f}"
    if rows:
        last = rows[-1]
        msg += (f" | epoch {last['epoch'] + 1}: loss {last['loss']:.3f}, "
                f"test acc {last['test_acc']:.3f}")
    return msg


def launch(run: RunDir, cfg: TrainConfig, progress: ProgressFn | None = None,
           log_path: Path | None = None, share: int = 1) -> dict:
    """Train and wait; returns ``summary.json`` (plus ``reused`` when an identical
    training's result is returned). Progress is reported per optimizer step; the plan and
    its warnings are reported first, as messages starting ``train: plan`` and ``warning:``.
    A progress callback that asks to stop sends SIGTERM and raises :class:`Cancelled`
    once the ranks have checkpointed. ``share``: trainings running at once on this host
    (an experiment's ``parallel``), which divide its CPU cores."""
    prep = prepare(run, cfg)
    out, cfg, total = prep.out, prep.cfg, prep.plan.total_steps
    reused = _reused_summary(prep, progress)
    if reused is not None:
        return reused
    report(progress, 0, total, f"train: plan: {prep.plan.describe()}, {cfg.optimizer.upper()}")
    for warning in prep.plan.warnings:
        report(progress, 0, total, f"warning: {warning}")
    with open(log_path or out / "torchrun.log", "ab") as log:
        proc = subprocess.Popen(torchrun_argv(cfg, out), stdout=log, stderr=subprocess.STDOUT,
                                env=_torchrun_env(cfg, share), start_new_session=True)
        cancelled = _follow(proc, prep, progress)
    summary = _finished_summary(proc, out, cancelled)
    # the last epoch's line, which the polling above can miss when the process ends fast
    report(progress, total, total, progress_message(cfg, read_progress(out), read_metrics(out)))
    report(progress, total, total, f"train: done, test acc {summary['final_test_acc']:.3f}")
    return with_convergence(summary, read_metrics(out))


def _reused_summary(prep: Prepared, progress: ProgressFn | None) -> dict | None:
    """The summary of the identical training ``prep`` reuses, when it completed; else
    None (train)."""
    out, total = prep.out, prep.plan.total_steps
    if not (prep.reused and (out / "summary.json").is_file()):
        return None
    summary = json.loads((out / "summary.json").read_text())
    if summary["status"] != "completed":
        return None
    report(progress, total, total, f"train: {prep.reused}; test acc "
           f"{summary['final_test_acc']:.3f}")
    return {**with_convergence(summary, read_metrics(out)), "reused": prep.reused}


def _torchrun_env(cfg: TrainConfig, share: int) -> dict[str, str]:
    """torchrun's environment: this one, with the cores divided among ``cfg.nproc``
    processes of ``share`` trainings, and the device."""
    # OMP_WAIT_POLICY=PASSIVE: OpenMP threads that spin at barriers collapse when another
    # process (the app's server, a browser) holds a core. ResNet-18 steps on 2 cores with
    # one core busy elsewhere: 40 img/s spinning, 73 passive; 110-113 either way when idle.
    return {"OMP_WAIT_POLICY": "PASSIVE", **os.environ, "PYTHONUNBUFFERED": "1",
            "OMP_NUM_THREADS": str(max(1, (os.cpu_count() or 1) // (cfg.nproc * share))),
            "CURATOR_DEVICE": cfg.device}


def _follow(proc: subprocess.Popen, prep: Prepared, progress: ProgressFn | None) -> bool:
    """Report the training's progress until it ends; True when the progress callback
    asked it to stop (it was sent SIGTERM and has written its checkpoint). An interrupt
    or an error here stops it as cleanly, then goes on."""
    out, cfg, total = prep.out, prep.cfg, prep.plan.total_steps
    try:
        while proc.poll() is None:
            live = read_progress(out)
            try:
                report(progress, min(total, (live or {}).get("step", 0)), total,
                       progress_message(cfg, live, read_metrics(out)))
            except Cancelled:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(300)
                return True
            time.sleep(0.5)
    finally:
        if proc.poll() is None:  # an interrupt (Ctrl-C) or an error here: stop it cleanly,
            os.killpg(proc.pid, signal.SIGTERM)  # so that it writes its checkpoint first
            try:
                proc.wait(STOP_SECONDS)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
    return False


def _finished_summary(proc: subprocess.Popen, out: Path, cancelled: bool) -> dict:
    """The ended training's ``summary.json``; :class:`Cancelled` when it was stopped, a
    RuntimeError with torchrun's last line when it failed."""
    summary_path = out / "summary.json"
    if cancelled:
        raise Cancelled(f"training stopped after {len(read_metrics(out))} epochs; "
                        f"checkpoint kept in {out}")
    if proc.returncode != 0 or not summary_path.is_file():
        tail = (out / "torchrun.log").read_text(errors="replace").strip().splitlines()[-1:] \
            if (out / "torchrun.log").is_file() else []
        raise RuntimeError(f"training failed (exit {proc.returncode}): "
                           f"{tail[0] if tail else 'see torchrun.log'}")
    return json.loads(summary_path.read_text())
