"""retrain and experiment: training on a run's subsets under torchrun."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from worker.cli.arguments import (
    Add,
    add_options,
    rundir,
    train_args,
    train_config,
)
from worker.option_table import EXPERIMENT_OWN, RUN

# Only light modules at the top: `curator --help` must not import torch, numpy or sklearn
# (each command imports what it needs when it runs).
from worker.pipeline.number_params import cli_type
from worker.step_options import experiment_params
from worker.train.subsets import subset_arg

# "train: epoch 3/10, …" alone; "train [full@1024 s0]: epoch 3/10, …" among several at once
_TAGGED = re.compile(r"train( \[[^\]]*\])?:")


def _train_printer():
    """Print a training's plan, its warnings (on stderr) and one line per finished epoch;
    the per-step position is for the job pages."""
    last: dict[str, str] = {}  # per training ("" alone, its tag among several at once)

    def show(done: int, total: int, message: str) -> bool:
        if message.startswith("warning:"):
            print(message, file=sys.stderr, flush=True)
            return False
        head, _, epoch = message.partition(" | ")
        tagged = _TAGGED.match(head)
        tag = (tagged.group(1) or "") if tagged else ""
        live = tagged is not None and head[tagged.end():].startswith(" epoch ")
        line = f"{tag} {epoch}".strip() if epoch else (None if live else head)
        if line and line != last.get(tag):
            print(line, flush=True)
            last[tag] = line
        return False
    return show


def cmd_retrain(a: argparse.Namespace) -> None:
    from worker.jobs.execution import run_here
    from worker.train.launch import validate

    run = rundir(a.run).require()
    cfg = train_config(a)
    validate(cfg)  # settings that can never run are refused before a job is recorded
    # A job of this process, in the run's job store: the Jobs page lists and can cancel it.
    summary = run_here(run, "train", cfg, _train_printer())
    print(f"{summary['status']}: test acc {summary['final_test_acc']:.4f} "
          f"({summary['test_source']}, {summary['train_size']} training images, "
          f"{summary['images_per_s_per_process']:.0f} img/s per process) → "
          f"{run.path / summary['train_dir']}")


def cmd_experiment(a: argparse.Namespace) -> None:
    from worker.jobs.execution import run_here
    from worker.train.experiment import on_version, verdict_report

    run = rundir(a.run).require()
    params = experiment_params(vars(a))
    # --version: the curated subsets train on that version's frozen curation (an unknown
    # one is refused here, before a job is recorded)
    params = params.model_copy(update={"configs": on_version(run, params.configs, a.version)})
    result = run_here(run, "experiment", params, _train_printer())
    out = run.path / result["experiment"]
    print((out / "results.csv").read_text())
    print(verdict_report(out))
    print(f"table: {out / 'summary.csv'}\nplot: {out / 'accuracy_vs_batch.png'}")


def register(add: Add) -> None:
    """retrain and experiment."""
    sp = add("retrain", cmd_retrain, "train with DDP on a subset of a run (torchrun)")
    sp.add_argument("run", type=Path)
    sp.add_argument("--subset", default="filtered", type=subset_arg,
                    help="filtered (kept samples), full, random (filtered's size), "
                         "corrected (filtered plus the flagged samples whose suggested label "
                         "is confident, relabelled), pruned@F (the fraction F of filtered, "
                         "by value) or random@F (its random control)")
    sp.add_argument("--batch-size", type=cli_type("train_batch"),
                    help="global batch (default: a power of two ≤ images/32, 16 to 256)")
    sp.add_argument("--seed", type=cli_type("seed"), default=0, help="training seed")
    train_args(sp)

    sp = add("experiment", cmd_experiment, "the paper's comparison: subsets × batch sizes × seeds")
    add_options(sp, (RUN, *EXPERIMENT_OWN))
    train_args(sp)
