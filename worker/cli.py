"""The ``curator`` command line.

Each step reads and writes a run directory. User mistakes print one line starting with
``error:`` and exit with status 2; there is no traceback for them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

# Only light modules at the top: `curator --help` must not import torch, numpy or sklearn
# (each command imports what it needs when it runs).
from .pipeline.errors import InputError
from .pipeline.names import (
    DEFAULT_IMAGE_MODEL,
    DEFAULT_RULE,
    MODEL_NAMES,
    NOISE_KINDS,
    PRECISIONS,
    RULES,
    SUBSETS,
)
from .pipeline.params import check, cli_type
from .pipeline.progress import Cancelled, TqdmProgress
from .settings import AUTO_SHARD_MIN, SHARDS_PER_WORKER

if TYPE_CHECKING:
    from .pipeline.rundir import RunDir


def _rundir(path: Path) -> RunDir:
    from .pipeline.rundir import RunDir

    return RunDir(path)


# --------------------------------------------------------------------------- arguments
def _dataset_args(p: argparse.ArgumentParser, required: bool) -> None:
    g = p.add_argument_group("dataset")
    g.add_argument("--dataset", required=required, metavar="SPEC",
                   help="digits | cifar10:DIR | folder:DIR")
    g.add_argument("--split", default="train", choices=["train", "test"])
    g.add_argument("--labels", type=Path, metavar="CSV", help="CSV with path,label columns")
    g.add_argument("--label-column", default="label", help="label column of --labels")
    g.add_argument("--true-label-column", help="column of --labels holding clean labels")
    g.add_argument("--inject-noise", type=cli_type("inject_noise"), default=0.0, metavar="RATE",
                   help="flip this fraction of labels (true labels are recorded)")
    g.add_argument("--noise-kind", default="symmetric", choices=NOISE_KINDS,
                   help="symmetric: to any other class; pairs: each class to one fixed "
                        "partner (cat↔dog, automobile↔truck, …)")
    g.add_argument("--seed", type=cli_type("seed"), default=0,
                   help="for noise injection and sampling")
    g.add_argument("--inject-duplicates", type=cli_type("inject_duplicates"), default=0.0,
                   metavar="RATE", help="add this fraction of near copies of random samples "
                                        "(truth recorded in injected.csv)")
    g.add_argument("--duplicate-strength", default="mixed",
                   choices=["exact", "light", "medium", "strong", "mixed"],
                   help="how injected copies differ: exact pixels; light (JPEG, resize); "
                        "medium (mirror, shift, brightness); strong (crop, mirror, colour, "
                        "JPEG); mixed cycles through all four")
    g.add_argument("--inject-outliers", type=cli_type("inject_outliers"), default=0,
                   metavar="N", help="add N images from other sources (digits, photographs, "
                                     "noise, blank) with random labels")


def _model_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("features")
    g.add_argument("--model", default=None, choices=MODEL_NAMES, metavar="NAME",
                   help=f"one of: {', '.join(MODEL_NAMES)} (default {DEFAULT_IMAGE_MODEL}, "
                        "ImageNet-pretrained, for images; pixels for digits)")
    g.add_argument("--input-size", type=cli_type("input_size"), default=None, metavar="PX",
                   help="side images are resized to for the network (default: the model's "
                        "own, 160 for efficientnet-lite0)")
    g.add_argument("--weights", type=Path, metavar="FILE", help="local weights file")
    g.add_argument("--finetune", type=cli_type("finetune"), default=0, metavar="EPOCHS",
                   help="fine-tune on the dataset before extraction")
    g.add_argument("--batch-size", type=cli_type("extract_batch"), default=256,
                   help="images per extraction batch")
    g.add_argument("--device", default=None, help="auto | cpu | cuda[:N]")
    g.add_argument("--workers", type=cli_type("workers"), default=None, help="DataLoader workers")
    g.add_argument("--precision", default="auto", choices=PRECISIONS,
                   help="inference precision; auto = bf16 on CUDA and on CPUs with native "
                        "bf16, else fp32")


def _embed_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("embedding")
    g.add_argument("--perplexity", type=cli_type("perplexity"), default=30.0,
                   help="t-SNE perplexity")
    g.add_argument("--pca-dims", type=cli_type("pca_dims"), default=50, help="PCA before t-SNE")
    g.add_argument("--n-iter", type=cli_type("n_iter"), default=300,
                   help="t-SNE iterations after early exaggeration (default 300)")
    g.add_argument("--exaggeration-iter", type=cli_type("exaggeration_iter"), default=150,
                   help="early-exaggeration iterations (default 150)")
    g.add_argument("--gradient", default="auto", choices=["auto", "fft", "bh"])


def _cluster_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("clustering")
    g.add_argument("--eps", type=cli_type("eps"), help="DBSCAN eps (default: automatic per class)")
    g.add_argument("--min-samples", type=cli_type("min_samples"),
                   help="DBSCAN min_samples (default 5)")
    g.add_argument("--rule", choices=RULES, help=f"flagging rule (default {DEFAULT_RULE})")


def _finding_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("findings (distances relative to the data's typical "
                             "nearest-neighbour distance; docs/method.md)")
    g.add_argument("--duplicate-threshold", type=cli_type("duplicate_threshold"),
                   metavar="T", help="a near copy's pixel match to its group's kept copy "
                   "reaches T (default 0.9, raised to what different pictures of the "
                   "dataset reach; docs/method.md)")
    g.add_argument("--leak-threshold", type=cli_type("leak_threshold"), metavar="T",
                   help="a train image leaks when its pixel match to a test image reaches T "
                        "(default 0.9, raised as for duplicates)")
    g.add_argument("--outlier-threshold", type=cli_type("outlier_threshold"), metavar="T",
                   help="outliers lie T times farther from the nearest class than its own "
                        "images do (default 2.5; docs/method.md)")


def _thresholds(a: argparse.Namespace) -> dict[str, float]:
    """The finding cuts given on the command line, by kind name."""
    return {k: v for k in ("duplicate", "leak", "outlier")
            if (v := getattr(a, f"{k}_threshold", None)) is not None}


# --------------------------------------------------------------------------- builders
def _dataset_opts(a: argparse.Namespace):
    from .pipeline.datasets import has_split, open_dataset, parse_spec
    from .pipeline.ingest import DatasetOptions

    if not a.dataset:
        return None
    spec = parse_spec(a.dataset, a.split)
    if not has_split(spec, a.split):  # refused before --out is touched (the reason: one line)
        open_dataset(spec)
    return DatasetOptions(spec, a.labels, a.label_column, a.true_label_column, a.inject_noise,
                          a.seed, a.noise_kind, a.inject_duplicates, a.inject_outliers,
                          a.duplicate_strength)


def _feature_opts(a: argparse.Namespace):
    from .pipeline.features import FeatureOptions
    from .pipeline.models import random_weights_warning
    from .settings import load_settings

    s = load_settings()
    warning = random_weights_warning(a.model, a.weights)
    if warning:
        print(warning, file=sys.stderr, flush=True)
    return FeatureOptions(model=a.model, weights=a.weights, finetune_epochs=a.finetune,
                          batch_size=a.batch_size, device=a.device or s.device,
                          num_workers=a.workers if a.workers is not None else s.num_workers,
                          seed=a.seed, precision=a.precision, input_size=a.input_size)


def _embed_opts(a: argparse.Namespace):
    from .pipeline.embedding import EmbeddingOptions

    return EmbeddingOptions(pca_dims=a.pca_dims, perplexity=a.perplexity, n_iter=a.n_iter,
                            exaggeration_iter=a.exaggeration_iter,
                            seed=getattr(a, "seed", 0), gradient=a.gradient)


def _print_summary(run: RunDir) -> None:
    from .pipeline.curation import current_decisions, format_table, summary_rows

    samples, decisions, _ = current_decisions(run)
    print(format_table(summary_rows(samples, decisions)))


# --------------------------------------------------------------------------- commands
def _dispatcher_for(out: Path):
    """(dispatcher, run id): Celery when CURATOR_BROKER_URL is set, else in-process."""
    from dataclasses import replace

    from .jobs.dispatchers import CeleryDispatcher, EmbeddedDispatcher
    from .runs import run_id_for
    from .settings import load_settings

    settings = load_settings()
    if settings.broker_url:
        dispatcher = CeleryDispatcher(settings)
        dispatcher.check_broker()
        return dispatcher, run_id_for(settings.runs_root, out)
    # Embedded: the run's parent folder is the runs root of the in-process worker.
    out = out.resolve()
    return EmbeddedDispatcher(replace(settings, runs_root=out.parent)), out.name


def _run_job_and_wait(dispatcher, run: RunDir, run_id: str, kind: str, params: object) -> dict:
    """Submit a job (``params``: its kind's typed parameters, worker.jobs.params), show its
    progress, and wait; Ctrl-C cancels it cleanly."""
    from .jobs.client import wait_for, waiting_notice

    job_id = dispatcher.submit(run_id, kind, params)
    bar = TqdmProgress()
    told: set[str] = set()
    seen = {"attempts": 0, "worker": None}

    def notice(job: dict, waited_s: float) -> None:
        text = waiting_notice(dispatcher.settings, job, waited_s)
        # A restart can fall between two polls; the attempt count says it happened anyway.
        if job["attempts"] > seen["attempts"] > 0:
            text = (f"the worker running this job ({seen['worker']}) stopped answering; the "
                    f"job was re-queued and runs again (attempt {job['attempts']})")
        seen.update(attempts=job["attempts"], worker=job["worker"])
        if text and text not in told:
            told.add(text)
            print(f"\nnote: {text}", file=sys.stderr)

    try:
        job = wait_for(run, job_id, bar, on_wait=notice)
    except KeyboardInterrupt:
        print(f"\ncancelling job {job_id}…", file=sys.stderr)
        dispatcher.cancel(run_id, job_id)
        job = wait_for(run, job_id)
    finally:
        bar.close()
    if job["status"] == "failed":
        raise InputError(f"{kind} job {job_id} failed: {job['error']}")
    if job["status"] == "cancelled":
        raise Cancelled(f"{kind} job {job_id} was cancelled")
    return job


def cmd_pipeline(a: argparse.Namespace) -> None:
    from .pipeline.runlock import PIPELINE_LOCK, claim_out_dir, run_lock
    from .pipeline.runner import run_pipeline

    run = _rundir(a.out)  # --eps and --min-samples were checked as they were parsed
    dataset = _dataset_opts(a)
    claim_out_dir(run.path, dataset.spec.class_root if dataset else None)
    dispatcher, run_id = _dispatcher_for(a.out)
    if a.shards and not dispatcher.settings.broker_url:
        raise InputError("--shards needs a broker: set CURATOR_BROKER_URL and start workers "
                         "with 'curator worker'")
    if a.shards and a.shards > 1 and a.finetune:
        raise InputError("a fine-tuned extraction runs as one job: leave out --shards")
    # Held for the whole command, so a second pipeline on this --out is refused at once
    # rather than racing this one (the steps' own jobs take the step lock).
    bar = TqdmProgress()  # the findings step's (the other steps' jobs show their own)
    with run_lock(run, f"curator pipeline (pid {os.getpid()})", PIPELINE_LOCK):
        try:
            run_pipeline(run, dataset, _feature_opts(a), _embed_opts(a), rule=a.rule,
                         min_samples=a.min_samples, eps=a.eps,
                         steps=_JobSteps(dispatcher, run_id, a.shards),
                         thresholds=_thresholds(a), progress=bar)
        finally:
            bar.close()
    print(f"run: {run.path}  ({run.read_meta()['n_samples']} samples, {_skipped_text(run)})")
    _print_summary(run)
    print(_findings_line(run))


def _findings_line(run: RunDir) -> str:
    """'findings: label 188 · duplicate 3 · leak 0 (no test split) · outlier 12'."""
    from .pipeline.findings.report import counts_line

    return counts_line(run)


def cmd_findings(a: argparse.Namespace) -> None:
    from .pipeline.findings import ensure_findings, get_kind
    from .pipeline.findings.report import findings_report, format_findings

    run = _rundir(a.run).require()
    if a.kind:
        get_kind(a.kind)  # an unknown kind is one line before any work
    bar = TqdmProgress()
    try:
        ensure_findings(run, _thresholds(a), redo=a.redo, progress=bar)
    finally:
        bar.close()
    report = findings_report(run, a.kind, a.top)
    print(json.dumps(report, indent=2) if a.json else format_findings(report))


class _JobSteps:
    """The chain's heavy steps as jobs (worker.pipeline.runner.Steps), each followed with a
    progress bar: features as one ``extract`` job or, with a broker, shared out across the
    gpu queue's workers (worker.extract_shards) once an ``ingest`` job has counted the
    images; then an ``embed`` job, and an ``extract-test`` job for the test split's
    features where the dataset has one. Each job takes the run's step lock itself."""

    def __init__(self, dispatcher, run_id: str, shards: int | None) -> None:  # noqa: ANN001
        self.dispatcher, self.run_id, self.shards = dispatcher, run_id, shards

    def held(self, run: RunDir) -> contextlib.nullcontext:
        return contextlib.nullcontext()

    def features(self, run: RunDir, dataset, opts) -> None:  # noqa: ANN001
        from .extract_shards import shard_count, sharded
        from .jobs.params import ExtractParams, IngestParams

        d, shards = self.dispatcher, 0
        if d.settings.broker_url and self.shards != 0 and not opts.finetune_epochs:
            _run_job_and_wait(d, run, self.run_id, "ingest", IngestParams(dataset))
            shards = shard_count(self.shards, run.read_meta()["n_samples"],
                                 len(d.consumers("gpu")))
        if shards < 2:
            _run_job_and_wait(d, run, self.run_id, "extract", ExtractParams(dataset, opts))
            return
        from .pipeline.features import extract
        from .pipeline.ingest import open_run_dataset

        bar = TqdmProgress()
        try:
            extract(run, open_run_dataset(run), opts, bar,
                    compute=sharded(d, self.run_id, shards))
        finally:
            bar.close()

    def embedding(self, run: RunDir, opts) -> None:  # noqa: ANN001
        _run_job_and_wait(self.dispatcher, run, self.run_id, "embed", opts)

    def test_split(self, run: RunDir) -> None:
        from .jobs.params import TestSplitParams
        from .pipeline.findings.testsplit import test_spec

        if test_spec(run) is not None:  # the leak kind's input, on the gpu queue
            _run_job_and_wait(self.dispatcher, run, self.run_id, "extract-test",
                              TestSplitParams())


def _skipped_text(run) -> str:
    """How many files ingest left out, and why: '0 files skipped', or '3 skipped
    (2 unreadable, 1 links outside the dataset folder; see skipped.csv)'."""
    from collections import Counter

    from .pipeline.datasets import EMPTY, OUTSIDE

    rows = run.read_skipped()
    if not rows:
        return "0 files skipped"
    why = Counter(r if r in (OUTSIDE, EMPTY) else "unreadable" for _, r in rows)
    parts = ", ".join(f"{n} {reason}" for reason, n in why.items())
    return f"{len(rows)} files skipped ({parts}; see skipped.csv)"


def cmd_extract(a: argparse.Namespace) -> None:
    from .pipeline.features import extract
    from .pipeline.runlock import claim_out_dir, run_lock
    from .pipeline.runner import ensure_ingested

    run = _rundir(a.out)
    dataset = _dataset_opts(a)
    if dataset is None and not run.exists():  # before the lock makes the folder
        raise InputError(f"{run.path} is not a run yet: give --dataset SPEC to create it")
    claim_out_dir(run.path, dataset.spec.class_root if dataset else None)
    opts = _feature_opts(a)  # bad options are refused before minutes of ingest
    bar = TqdmProgress()
    with run_lock(run, f"curator extract (pid {os.getpid()})"):
        ds = ensure_ingested(run, dataset, bar)
        feats = extract(run, ds, opts, bar)
    print(f"features: {run.features} {feats.shape[0]}×{feats.shape[1]}; {_skipped_text(run)}")


def cmd_embed(a: argparse.Namespace) -> None:
    from .pipeline.runlock import run_lock
    from .pipeline.runner import ensure_embedded

    run = _rundir(a.run).require()
    with run_lock(run, f"curator embed (pid {os.getpid()})"):
        ensure_embedded(run, _embed_opts(a), TqdmProgress())
    print(f"embedding: {run.embedding}")


def cmd_cluster(a: argparse.Namespace) -> None:
    from .pipeline.curation import class_code, cluster_step, set_cut

    run = _rundir(a.run).require()
    if a.cut is not None and not a.cls:
        raise InputError("--cut is per class: name it with --class NAME")
    cluster_step(run, eps=a.eps, min_samples=a.min_samples, classes=a.cls, rule=a.rule,
                 auto=a.auto)
    if a.cut is not None:
        samples = run.read_samples()
        for name in a.cls:
            set_cut(run, class_code(samples, name), None if a.cut == "rule" else a.cut,
                    samples=samples)
    _print_summary(run)


def cmd_export(a: argparse.Namespace) -> None:
    from .jobs.execution import run_here
    from .jobs.params import ExportParams

    run = _rundir(a.run).require()
    bar = TqdmProgress()
    try:  # a job of this process, in the run's job store: the Jobs page lists it
        result = run_here(run, "export", ExportParams(a.dest, a.format), bar)
    finally:
        bar.close()
    print(f"export: {run.path / result['export']}")


def cmd_evaluate(a: argparse.Namespace) -> None:
    from .pipeline.evaluation import evaluate, format_report

    result = evaluate(_rundir(a.run).require(), with_cleanlab=not a.no_cleanlab)
    print(json.dumps(result, indent=2) if a.json else format_report(result))


def cmd_serve(a: argparse.Namespace) -> None:
    from dataclasses import replace

    from .settings import load_settings

    settings = load_settings()
    settings = replace(settings, runs_root=a.runs_root or settings.runs_root,
                       host=a.host or settings.host, port=a.port or settings.port)
    if settings.broker_url:
        from .jobs.dispatchers import check_broker

        try:
            check_broker(settings.broker_url)
        except InputError as exc:
            # Curation needs no broker: serve anyway; job buttons show this error until
            # Redis is back.
            print(f"warning: {exc}", file=sys.stderr)
    from app.server import serve

    _check_port_free(settings.host, settings.port)  # before printing a URL that won't answer
    token = f"?token={settings.auth_token}" if settings.auth_token else ""
    base = f"http://{settings.host}:{settings.port}"
    print(f"tsne-curator: {base}/{token} (runs root {settings.runs_root.resolve()})", flush=True)
    run_id = _run_to_open(settings.runs_root)
    if run_id:
        print(f"curate {run_id}: {base}/curate/{run_id}{token}", flush=True)
    serve(settings, debug=a.debug)


def _check_port_free(host: str, port: int) -> None:
    """Refuse a port another program holds, in one line (the server used to print its URL
    and only then fail)."""
    import errno
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds
        try:
            s.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise InputError(f"port {port} on {host} is in use: stop the program holding "
                                 "it, or pick another with --port or CURATOR_PORT") from None
            raise InputError(f"cannot listen on {host}:{port} ({exc.strerror}): check "
                             "--host/CURATOR_HOST and --port") from None


def _run_to_open(runs_root: Path) -> str | None:
    """The run to point a new user at: ``demo`` when it is ready, else the most recently
    clustered run, else None."""
    from .runs import list_runs

    ready = [e for e in list_runs(runs_root) if e.error is None
             and e.meta.get("steps", {}).get("cluster", {}).get("status") == "done"]
    if any(e.id == "demo" for e in ready):
        return "demo"
    return max(ready, key=lambda e: (e.path / "run.json").stat().st_mtime).id if ready else None


def cmd_worker(a: argparse.Namespace) -> None:
    from .jobs.dispatchers import check_broker
    from .jobs.recovery import recover_stale_jobs, watch_stale_jobs
    from .settings import load_settings

    settings = load_settings()
    if not settings.broker_url:
        raise InputError("curator worker needs CURATOR_BROKER_URL (e.g. redis://127.0.0.1:6379/0)")
    check_broker(settings.broker_url)
    queues = [q for q in a.queues.split(",") if q]
    if not queues or set(queues) - {"gpu", "cpu"}:
        raise InputError(f"--queues must name gpu and/or cpu, got {a.queues!r}")
    settings.runs_root.mkdir(parents=True, exist_ok=True)
    for line in recover_stale_jobs(settings):
        print(line, file=sys.stderr)
    # Not only at start-up: a replacement started the moment after a crash must still
    # re-queue the dead worker's job once its heartbeat goes stale.
    watch_stale_jobs(settings)
    from .celery_app import make_celery

    argv = ["worker", "-Q", ",".join(queues), "--concurrency", str(a.concurrency),
            "--loglevel", a.loglevel, "--hostname", a.name or f"curator-{os.getpid()}@%h"]
    make_celery(settings).worker_main(argv)


def cmd_jobs(a: argparse.Namespace) -> None:
    from .jobs.recovery import fail_dead_jobs
    from .pipeline.jobstore import JobStore
    from .settings import load_settings

    run = _rundir(a.run).require_jobs()
    fail_dead_jobs(load_settings(), run)
    jobs = JobStore(run.store).list()
    if a.json:
        print(json.dumps(jobs, indent=2))
        return
    print(f"{'id':<14}{'kind':<10}{'status':<11}{'progress':>16}  {'worker':<24}message / error")
    for j in jobs:
        prog = f"{j['done']}/{j['total']}" if j["total"] else "-"
        note = j["error"] or j["message"]
        print(f"{j['id']:<14}{j['kind']:<10}{j['status']:<11}{prog:>16}  "
              f"{(j['worker'] or '-')[:23]:<24}{note[:80]}")


def cmd_cancel(a: argparse.Namespace) -> None:
    from .jobs.client import find_job
    from .jobs.dispatchers import get_dispatcher
    from .settings import load_settings

    settings = load_settings()
    if a.run:
        from dataclasses import replace

        path = _rundir(a.run).require_jobs().path.resolve()  # never creates the folder
        settings = replace(settings, runs_root=path.parent)
        run_id = path.name
    else:
        run_id, _ = find_job(settings.runs_root, a.job)
    status = get_dispatcher(settings).cancel(run_id, a.job)
    if status is None:
        raise InputError(f"no job {a.job} in run {run_id}")
    note = " (stops at its next progress step)" if status == "running" else ""
    print(f"job {a.job}: {status}{note}")


def _train_config(a: argparse.Namespace, **over):
    from .train.launch import TrainConfig

    def pick(name: str, default=None):  # noqa: ANN001, ANN202
        return over[name] if name in over else getattr(a, name, default)

    return TrainConfig(
        subset=pick("subset", "filtered"), model=a.model, epochs=a.epochs,
        batch_size=pick("batch_size"), nproc=a.nproc, lr=a.lr,
        weight_decay=a.weight_decay, label_smoothing=a.label_smoothing,
        optimizer=a.optimizer, warmup_epochs=a.warmup_epochs, seed=pick("seed", 0),
        device=a.device, name=pick("name"),
        nnodes=a.nnodes, node_rank=a.node_rank, rdzv_endpoint=a.rdzv_endpoint,
        rdzv_id=a.rdzv_id)


def _train_printer():
    """Print a training's plan, its warnings (on stderr) and one line per finished epoch;
    the per-step position is for the job pages."""
    last = {"epoch": None}

    def show(done: int, total: int, message: str) -> bool:
        if message.startswith("warning:"):
            print(message, file=sys.stderr, flush=True)
            return False
        head, _, epoch = message.partition(" | ")
        line = epoch or (None if head.startswith("train: epoch") else head)
        if line and line != last["epoch"]:
            print(line, flush=True)
            last["epoch"] = line
        return False
    return show


def cmd_retrain(a: argparse.Namespace) -> None:
    from .jobs.execution import run_here
    from .train.launch import validate

    run = _rundir(a.run).require()
    cfg = _train_config(a)
    validate(cfg)  # settings that can never run are refused before a job is recorded
    # A job of this process, in the run's job store: the Jobs page lists and can cancel it.
    summary = run_here(run, "train", cfg, _train_printer())
    print(f"{summary['status']}: test acc {summary['final_test_acc']:.4f} "
          f"({summary['test_source']}, {summary['train_size']} training images, "
          f"{summary['images_per_s_per_process']:.0f} img/s per process) → "
          f"{run.path / summary['train_dir']}")


def cmd_experiment(a: argparse.Namespace) -> None:
    from .jobs.execution import run_here
    from .jobs.params import ExperimentParams
    from .train.experiment import verdict_report
    from .train.launch import validate

    run = _rundir(a.run).require()
    subsets = [s for s in a.subsets.split(",") if s]
    batch_sizes = [None if b.strip() == "auto" else check("train_batch", b)
                   for b in a.batch_sizes.split(",") if b.strip()]
    configs = [_train_config(a, subset=s, batch_size=b, seed=seed, name=None)
               for s in subsets for b in batch_sizes for seed in range(a.seeds)]
    for cfg in configs:  # refused before a job is recorded, as in cmd_retrain
        validate(cfg)
    result = run_here(run, "experiment", ExperimentParams(a.name or "comparison",
                                                          tuple(configs)), _train_printer())
    out = run.path / result["experiment"]
    print((out / "results.csv").read_text())
    print(verdict_report(out))
    print(f"table: {out / 'summary.csv'}\nplot: {out / 'accuracy_vs_batch.png'}")


def cmd_params(a: argparse.Namespace) -> None:
    from .pipeline.curation import current_decisions, format_table, summary_rows

    samples, decisions, params = current_decisions(_rundir(a.run).require())
    by_name = {samples.classes[c]: (float(eps), int(ms)) for c, (eps, ms) in params.items()}
    rows = summary_rows(samples, decisions)
    if a.json:
        eps_ms = {name: {"eps": e, "min_samples": m} for name, (e, m) in by_name.items()}
        print(json.dumps([{**r, **eps_ms.get(r["class"], {})} for r in rows], indent=2))
    else:
        print(format_table(rows, by_name))


def cmd_undo(a: argparse.Namespace) -> None:
    from .pipeline.curation import open_store

    store = open_store(_rundir(a.run))
    done = store.redo() if a.redo else store.undo()
    print(f"{'redid' if a.redo else 'undid'}: {done}" if done else "nothing to do")


def cmd_override(a: argparse.Namespace) -> None:
    from .pipeline.curation import open_store

    decision = None if a.decision == "clear" else a.decision
    run = _rundir(a.run).require()
    n = open_store(run).set_overrides(a.samples, decision,
                                      n_samples=len(run.read_samples()))
    print(f"{n} sample(s) changed")


def cmd_relabel(a: argparse.Namespace) -> None:
    from .pipeline.curation import current_decisions, open_store

    run = _rundir(a.run).require()
    samples = run.read_samples()
    if a.label != "clear" and a.label not in samples.classes:
        raise InputError(f"no class {a.label!r} in this run: use one of "
                         f"{', '.join(samples.classes)} (or 'clear')")
    code = None if a.label == "clear" else samples.classes.index(a.label)
    n = open_store(run).set_relabels(a.samples, code, f"relabel {len(a.samples)} to {a.label}",
                                     n_samples=len(samples), n_classes=len(samples.classes))
    flagged = current_decisions(run)[1].flagged
    for i in a.samples[:20]:  # what changed, so a wrong index shows at once
        given = samples.classes[samples.labels[i]]
        print(f"sample {i}: {given} → {given if code is None else a.label}"
              + (" (its label again)" if code is None else ""))
        if code is not None and not flagged[i]:
            print(f"warning: sample {i} was not flagged (its label {given} looked right): "
                  f"check the index; `curator undo {a.run}` takes this back", file=sys.stderr)
    print(f"{n} sample(s) changed")


# --------------------------------------------------------------------------- parser
class _Help(argparse.RawDescriptionHelpFormatter):
    """Keeps the example's line breaks and shows each option's default (when it has one
    and its help does not already say it)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (action.default not in (None, False, argparse.SUPPRESS) and action.option_strings
                and "default" not in text):
            text += " (default: %(default)s)"
        return text


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tsne-curator")
    except PackageNotFoundError:  # running from a source tree that was not installed
        return "unknown"


EXAMPLES = {
    "pipeline": "curator pipeline --dataset digits --inject-noise 0.1 --out runs/demo",
    "extract": "curator extract --dataset folder:data/pets --model resnet18 --weights r18.pth "
               "--out runs/pets",
    "embed": "curator embed runs/demo --perplexity 50",
    "cluster": "curator cluster runs/demo --class 3 --eps 1.2 --min-samples 8",
    "export": "curator export runs/demo --format imagefolder --dest v1",
    "evaluate": "curator evaluate runs/demo",
    "findings": "curator findings runs/cifar --kind duplicate --top 20",
    "override": "curator override runs/demo drop 17 42",
    "retrain": "curator retrain runs/demo --subset filtered",
    "experiment": "curator experiment runs/demo --seeds 3",
    "serve": "curator serve --runs-root runs",
    "worker": "CURATOR_BROKER_URL=redis://127.0.0.1:6379/0 curator worker --queues gpu",
    "jobs": "curator jobs runs/demo",
    "cancel": "curator cancel 3f2a9c1d0b7e --run runs/demo",
    "undo": "curator undo runs/demo",
    "params": "curator params runs/demo",
    "relabel": "curator relabel runs/demo 3 13",
}


class _Parser(argparse.ArgumentParser):
    """An argument mistake is one line and exit status 2, like every other bad input
    (argparse's default prints its usage block first). ``-h`` still shows the usage."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"error: {message} (see '{self.prog} -h')\n")


# add(name, command, help) -> the command's subparser (build_parser's helper)
_Add = Callable[[str, Callable, str], argparse.ArgumentParser]


def _step_commands(add: _Add) -> None:
    """pipeline, extract, embed, cluster: the steps that build a run."""
    sp = add("pipeline", cmd_pipeline, "all steps: ingest, extract, embed, cluster, findings")
    sp.add_argument("--out", required=True, type=Path, help="run directory")
    _dataset_args(sp, required=False)
    _model_args(sp)
    sp.add_argument("--shards", type=cli_type("shards"), metavar="N",
                    help="share feature extraction out as N Celery jobs to 'curator worker' "
                         "processes (needs CURATOR_BROKER_URL; 0 = one job; default: "
                         f"{SHARDS_PER_WORKER} per worker on the gpu queue from "
                         f"{AUTO_SHARD_MIN:,} images when two or more consume it)")
    _embed_args(sp)
    _cluster_args(sp)
    _finding_args(sp)

    sp = add("extract", cmd_extract, "create a run (if needed) and extract features")
    sp.add_argument("--out", required=True, type=Path, help="run directory")
    _dataset_args(sp, required=False)
    _model_args(sp)

    sp = add("embed", cmd_embed, "PCA + t-SNE of the run's features")
    sp.add_argument("run", type=Path)
    sp.add_argument("--seed", type=cli_type("seed"), default=0, help="PCA and t-SNE seed")
    _embed_args(sp)

    sp = add("cluster", cmd_cluster, "per-class DBSCAN; print the summary table")
    sp.add_argument("run", type=Path)
    _cluster_args(sp)
    sp.add_argument("--class", dest="cls", action="append", metavar="NAME",
                    help="apply --eps/--min-samples to this class only (repeatable)")
    sp.add_argument("--auto", action="store_true", help="recompute eps from the k-distance knee")
    count = cli_type("cut")
    sp.add_argument("--cut", type=lambda text: "rule" if text == "rule" else count(text),
                    metavar="N|rule",
                    help="flag the N highest mislabel scores of each --class and no others, "
                         "whatever DBSCAN says (rule adaptive); 'rule' gives the class back "
                         "to the rule (undo: curator undo)")

def _output_commands(add: _Add) -> None:
    """export and evaluate."""
    sp = add("export", cmd_export, "write the kept subset to <run>/exports/NAME")
    sp.add_argument("run", type=Path)
    sp.add_argument("--format", default="csv", choices=["csv", "imagefolder", "indices"])
    sp.add_argument("--dest", required=True, metavar="NAME", help="export name")

    sp = add("findings", cmd_findings,
             "every kind of finding (wrong labels, near-duplicates, leaks into the test "
             "split, outliers): counts and the top items with why")
    sp.add_argument("run", type=Path)
    sp.add_argument("--kind", metavar="KIND", help="only this kind (label, duplicate, leak, "
                                                   "outlier)")
    sp.add_argument("--top", type=cli_type("top"), default=10, metavar="N",
                    help="items listed per kind (default 10)")
    sp.add_argument("--redo", action="store_true", help="compute every kind again")
    sp.add_argument("--json", action="store_true")
    _finding_args(sp)

    sp = add("evaluate", cmd_evaluate,
             "estimated noise per class; precision/recall/F1 against true labels, with cleanlab")
    sp.add_argument("run", type=Path)
    sp.add_argument("--json", action="store_true")
    sp.add_argument("--no-cleanlab", action="store_true", help="skip the cleanlab baseline")

def _curation_commands(add: _Add) -> None:
    """override, relabel, params, undo: curation from a shell."""
    sp = add("override", cmd_override, "force samples to be kept or dropped")
    sp.add_argument("run", type=Path)
    sp.add_argument("decision", choices=["keep", "drop", "clear"])
    sp.add_argument("samples", type=int, nargs="+", metavar="INDEX")

    sp = add("relabel", cmd_relabel,
             "give samples a corrected label (exports and retraining of the filtered subset "
             "use it); 'clear' removes it")
    sp.add_argument("run", type=Path)
    sp.add_argument("label", metavar="CLASS", help="a class name of the run, or clear")
    sp.add_argument("samples", type=int, nargs="+", metavar="INDEX")

    sp = add("params", cmd_params,
             "each class's eps and min_samples, with its size and flagged/kept counts")
    sp.add_argument("run", type=Path)
    sp.add_argument("--json", action="store_true", help="one JSON object per class")

    sp = add("undo", cmd_undo, "undo the last curation change (--redo to redo)")
    sp.add_argument("run", type=Path)
    sp.add_argument("--redo", action="store_true")

def _train_args(sp: argparse.ArgumentParser) -> None:
    g = sp.add_argument_group("training")
    g.add_argument("--model", default="resnet18",
                   help="torchvision ResNet (resnet18…152) or cifar-resnet20/32/44/56")
    g.add_argument("--epochs", type=cli_type("epochs"),
                   help="default: enough for 600 optimizer steps, 10 to 100")
    g.add_argument("--nproc", type=cli_type("nproc"), default=1,
                   help="processes (GPUs) per node")
    g.add_argument("--lr", type=cli_type("lr"),
                   help="at batch 256, scaled linearly (default 0.1)")
    g.add_argument("--weight-decay", type=cli_type("weight_decay"), default=5e-4,
                   help="L2 penalty")
    g.add_argument("--label-smoothing", type=cli_type("label_smoothing"), default=0.0,
                   help="0 to <1")
    g.add_argument("--optimizer", default="sgd", choices=["sgd", "lars"],
                   help="lars for global batches of 4k and more")
    g.add_argument("--warmup-epochs", type=cli_type("warmup_epochs"), default=1,
                   help="linear warm-up before the cosine decay")
    g.add_argument("--device", default="auto", help="auto | cpu | cuda")
    g.add_argument("--name", help="output name under RUN/train (or RUN/experiments)")
    m = sp.add_argument_group("multi-node (torchrun c10d rendezvous)")
    m.add_argument("--nnodes", type=cli_type("nnodes"), default=1, help="hosts taking part")
    m.add_argument("--node-rank", type=cli_type("node_rank"))
    m.add_argument("--rdzv-endpoint", help="HOST:PORT of the rendezvous")
    m.add_argument("--rdzv-id", help="job id shared by all nodes")


def _training_commands(add: _Add) -> None:
    """retrain and experiment."""
    sp = add("retrain", cmd_retrain, "train with DDP on a subset of a run (torchrun)")
    sp.add_argument("run", type=Path)
    sp.add_argument("--subset", default="filtered", choices=SUBSETS,
                    help="filtered (kept samples), full, random (filtered's size), or "
                         "corrected (filtered plus the flagged samples whose suggested label "
                         "is confident, relabelled)")
    sp.add_argument("--batch-size", type=cli_type("train_batch"),
                    help="global batch (default: a power of two ≤ images/32, 16 to 256)")
    sp.add_argument("--seed", type=cli_type("seed"), default=0, help="training seed")
    _train_args(sp)

    sp = add("experiment", cmd_experiment, "the paper's comparison: subsets × batch sizes × seeds")
    sp.add_argument("run", type=Path)
    sp.add_argument("--subsets", default="full,filtered,random", help="comma-separated")
    sp.add_argument("--batch-sizes", default="auto",
                    help="comma-separated global batches; 'auto' chooses from the subset size")
    sp.add_argument("--seeds", type=cli_type("seeds"), default=3,
                    help="seeds per subset and batch size")
    _train_args(sp)

def _service_commands(add: _Add) -> None:
    """serve, worker, jobs, cancel: the app, the workers and their jobs."""
    sp = add("serve", cmd_serve, "start the web app (default http://127.0.0.1:8050)")
    sp.add_argument("--runs-root", type=Path, help="default: CURATOR_RUNS_ROOT or ./runs")
    sp.add_argument("--host", help="default 127.0.0.1 (CURATOR_HOST)")
    sp.add_argument("--port", type=cli_type("port"), help="default 8050 (CURATOR_PORT)")
    sp.add_argument("--debug", action="store_true",
                    help="Dash dev tools and reloader, and the Curate page's test hooks "
                         "(as CURATOR_DEBUG_HOOKS=1)")

    sp = add("worker", cmd_worker, "start a Celery worker (needs CURATOR_BROKER_URL)")
    sp.add_argument("--queues", default="gpu,cpu", help="comma-separated: gpu, cpu")
    sp.add_argument("--concurrency", type=cli_type("concurrency"), default=1, help="jobs at a time")
    sp.add_argument("--loglevel", default="INFO", help="Celery log level")
    sp.add_argument("--name", help="worker node name (default curator-PID@host)")

    sp = add("jobs", cmd_jobs, "list a run's jobs")
    sp.add_argument("run", type=Path)
    sp.add_argument("--json", action="store_true")

    sp = add("cancel", cmd_cancel, "cancel a job (it stops at its next progress step)")
    sp.add_argument("job")
    sp.add_argument("--run", type=Path, help="the job's run (default: search the runs root)")

def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="curator", formatter_class=_Help,
        description="tsne-curator: find training images that hurt a model (t-SNE + per-class "
                    "DBSCAN + label evidence), curate them, export, and retrain to check.",
        epilog="example:\n  curator pipeline --dataset digits --inject-noise 0.1 --out "
               "runs/demo\n  curator serve    # then open the printed Curate URL")
    p.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, fn: Callable, help_: str) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help_, description=help_, formatter_class=_Help,
                            epilog=f"example:\n  {EXAMPLES[name]}")
        sp.set_defaults(fn=fn)
        return sp

    for commands in (_step_commands, _output_commands, _curation_commands,
                     _training_commands, _service_commands):
        commands(add)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.fn(args)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except PermissionError as exc:  # one the commands' own checks did not name
        print(f"error: permission denied: {exc.filename}: give this user access to it, or "
              "choose another path", file=sys.stderr)
        return 2
    except Cancelled as exc:
        print(f"cancelled: {exc}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
