"""retrain and experiment: training on a run's subsets under torchrun."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from worker.cli.arguments import LIST_METAVAR_END, Add, rundir, train_args, train_config

# Only light modules at the top: `curator --help` must not import torch, numpy or sklearn
# (each command imports what it needs when it runs).
from worker.pipeline.names import BUDGETS
from worker.pipeline.ranges import check, cli_type
from worker.train.subsets import subset_arg, subsets_arg

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


def experiment_params(a: argparse.Namespace):  # noqa: ANN201 - ExperimentParams
    """``curator experiment``'s job parameters from its parsed options (the CLI's and the
    API's ``Run.experiment``): one config per subset, batch size and seed, each refused
    before a job is recorded, as in cmd_retrain."""
    from worker.jobs.job_params import ExperimentParams
    from worker.train.launch import validate

    # Refused before a job is recorded, as the job itself refuses it (run_experiment).
    rundir(a.run).require_images("an experiment (retraining)")
    subsets = subsets_arg(a.subsets).split(",")
    batch_sizes = [None if b.strip() == "auto" else check("train_batch", b)
                   for b in a.batch_sizes.split(",") if b.strip()]
    configs = [train_config(a, subset=s, batch_size=b, seed=seed, name=None)
               for s in subsets for b in batch_sizes for seed in range(a.seeds)]
    for cfg in configs:
        validate(cfg)
    return ExperimentParams(a.name or "comparison", tuple(configs), a.budget, a.parallel)


def cmd_experiment(a: argparse.Namespace) -> None:
    from worker.jobs.execution import run_here
    from worker.train.experiment import verdict_report

    run = rundir(a.run).require()
    result = run_here(run, "experiment", experiment_params(a), _train_printer())
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
    sp.add_argument("run", type=Path)
    sp.add_argument("--subsets", default="full,filtered,random", type=subsets_arg,
                    metavar=f"NAME{LIST_METAVAR_END}",
                    help="comma-separated: full, filtered, random, corrected, pruned@F, "
                         "random@F (e.g. full,pruned@0.5,random@0.5,pruned@0.3,random@0.3)")
    sp.add_argument("--batch-sizes", default="auto", metavar=f"BATCH{LIST_METAVAR_END}",
                    help="comma-separated global batches; 'auto' chooses from the subset size")
    sp.add_argument("--seeds", type=cli_type("seeds"), default=3,
                    help="seeds per subset and batch size")
    sp.add_argument("--budget", default="steps", choices=BUDGETS,
                    help="what every subset gets the same of: optimizer steps (default: a "
                         "smaller subset trains more epochs, so a comparison is not one of "
                         "training lengths) or epochs (--epochs applies to every subset)")
    sp.add_argument("--parallel", type=cli_type("parallel"), default=1,
                    help="trainings at once (default 1): pays only where one training "
                         "leaves the GPU idle (1.02x for ResNet-18 at batch >= 1024 on an "
                         "H200); on a CPU they share its cores")
    train_args(sp)
