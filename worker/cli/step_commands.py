"""pipeline, extract, embed, cluster: the commands that build a run, here or as jobs."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from worker.cli.arguments import (
    Add,
    add_options,
    cluster_args,
    dataset_args,
    dataset_opts,
    embed_args,
    embed_opts,
    feature_opts,
    finding_args,
    model_args,
    rundir,
    thresholds,
)
from worker.cli.text_tables import format_table
from worker.option_table import CLUSTER_OWN, OUT, RUN, SHARDS

# Only light modules at the top: `curator --help` must not import torch, numpy or sklearn
# (each command imports what it needs when it runs).
from worker.pipeline.errors import InputError
from worker.pipeline.number_params import cli_type
from worker.pipeline.progress import Cancelled, TqdmProgress
from worker.settings import load_settings

if TYPE_CHECKING:
    from worker.pipeline.storage.rundir import RunDir


def _print_summary(run: RunDir) -> None:
    from worker.pipeline.curation.snapshot import current_decisions, summary_rows

    samples, decisions, _ = current_decisions(run)
    print(format_table(summary_rows(samples, decisions)))


def _dispatcher_for(out: Path):
    """(dispatcher, run id): Celery when CURATOR_BROKER_URL is set, else in-process."""
    from worker.jobs.dispatchers import CeleryDispatcher, EmbeddedDispatcher
    from worker.run_catalog import run_id_for

    settings = load_settings()
    if settings.broker_url:
        dispatcher = CeleryDispatcher(settings)
        dispatcher.check_broker()
        return dispatcher, run_id_for(settings.runs_root, out)
    # Embedded: the run's parent folder is the runs root of the in-process worker.
    out = out.resolve()
    return EmbeddedDispatcher(settings.changed(runs_root=out.parent)), out.name


def _run_job_and_wait(dispatcher, run: RunDir, run_id: str, kind: str, params: object) -> dict:
    """Submit a job (``params``: its kind's typed parameters, worker.jobs.job_params), show its
    progress, and wait; Ctrl-C cancels it cleanly."""
    from worker.jobs.client import wait_for, waiting_notice

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
    from worker.pipeline.runner import ClusterOptions, claim_run, run_pipeline
    from worker.pipeline.storage.runlock import PIPELINE_LOCK, run_lock

    run = rundir(a.out)  # --eps and --min-samples were checked as they were parsed
    dataset = dataset_opts(a)
    claim_run(run, dataset)
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
            run_pipeline(run, dataset, feature_opts(a), embed_opts(a),
                         ClusterOptions(a.rule, a.min_samples, a.eps, thresholds(a)),
                         steps=_JobSteps(dispatcher, run_id, a.shards), progress=bar)
        finally:
            bar.close()
    print(f"run: {run.path}  ({run.read_meta()['n_samples']} samples, {_skipped_text(run)})")
    _print_summary(run)
    print(_findings_line(run))


def _findings_line(run: RunDir) -> str:
    """'findings: label 188 · duplicate 3 · leak 0 (no test split) · outlier 12'."""
    from worker.pipeline.curation.findings_report import counts_line

    return counts_line(run)


class _JobSteps:
    """The chain's heavy steps as jobs (worker.pipeline.runner.Steps), each followed with a
    progress bar: features as one ``extract`` job or, with a broker, shared out across the
    gpu queue's workers (worker.jobs.extract_shards) once an ``ingest`` job has counted the
    images; then an ``embed`` job, and an ``extract-test`` job for the test split's
    features where the dataset has one. Each job takes the run's step lock itself."""

    def __init__(self, dispatcher, run_id: str, shards: int | None) -> None:  # noqa: ANN001
        self.dispatcher, self.run_id, self.shards = dispatcher, run_id, shards

    def held(self, run: RunDir) -> contextlib.nullcontext:
        return contextlib.nullcontext()

    def features(self, run: RunDir, dataset, opts) -> None:  # noqa: ANN001
        from worker.jobs.extract_shards import shard_count, sharded
        from worker.jobs.job_params import ExtractParams, IngestParams

        d, shards = self.dispatcher, 0
        if d.settings.broker_url and self.shards != 0 and not opts.finetune_epochs:
            _run_job_and_wait(d, run, self.run_id, "ingest", IngestParams(dataset))
            shards = shard_count(self.shards, run.read_meta()["n_samples"],
                                 len(d.consumers("gpu")))
        if shards < 2:
            _run_job_and_wait(d, run, self.run_id, "extract", ExtractParams(dataset, opts))
            return
        from worker.pipeline.features.extraction import extract
        from worker.pipeline.sources.ingest import open_run_dataset

        bar = TqdmProgress()
        try:
            extract(run, open_run_dataset(run), opts, bar,
                    compute=sharded(d, self.run_id, shards))
        finally:
            bar.close()

    def embedding(self, run: RunDir, opts) -> None:  # noqa: ANN001
        _run_job_and_wait(self.dispatcher, run, self.run_id, "embed", opts)

    def test_split(self, run: RunDir) -> None:
        from worker.jobs.job_params import TestSplitParams
        from worker.pipeline.findings.testsplit import test_spec

        if test_spec(run) is not None:  # the leak kind's input, on the gpu queue
            _run_job_and_wait(self.dispatcher, run, self.run_id, "extract-test",
                              TestSplitParams())


def _skipped_text(run) -> str:
    """How many files ingest left out, and why: '0 files skipped', or '3 skipped
    (2 unreadable, 1 links outside the dataset folder; see skipped.csv)'."""
    from collections import Counter

    from worker.pipeline.sources.datasets import EMPTY, OUTSIDE

    rows = run.read_skipped()
    if not rows:
        return "0 files skipped"
    why = Counter(r if r in (OUTSIDE, EMPTY) else "unreadable" for _, r in rows)
    parts = ", ".join(f"{n} {reason}" for reason, n in why.items())
    return f"{len(rows)} files skipped ({parts}; see skipped.csv)"


def cmd_extract(a: argparse.Namespace) -> None:
    from worker.pipeline.features.extraction import extract
    from worker.pipeline.runner import claim_run, ensure_ingested
    from worker.pipeline.storage.runlock import run_lock

    run = rundir(a.out)
    dataset = dataset_opts(a)
    claim_run(run, dataset)  # before the lock makes the folder
    opts = feature_opts(a)  # bad options are refused before minutes of ingest
    bar = TqdmProgress()
    with run_lock(run, f"curator extract (pid {os.getpid()})"):
        ds = ensure_ingested(run, dataset, bar)
        feats = extract(run, ds, opts, bar)
    print(f"features: {run.features} {feats.shape[0]}×{feats.shape[1]}; {_skipped_text(run)}")


def cmd_embed(a: argparse.Namespace) -> None:
    from worker.pipeline.runner import ensure_embedded
    from worker.pipeline.storage.runlock import run_lock

    run = rundir(a.run).require()
    with run_lock(run, f"curator embed (pid {os.getpid()})"):
        ensure_embedded(run, embed_opts(a), TqdmProgress())
    print(f"embedding: {run.embedding}")


def cmd_cluster(a: argparse.Namespace) -> None:
    from worker.pipeline.curation.cluster_step import class_code, cluster_step, set_cut

    run = rundir(a.run).require()
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


def register(add: Add) -> None:
    """pipeline, extract, embed, cluster: the steps that build a run."""
    sp = add("pipeline", cmd_pipeline, "all steps: ingest, extract, embed, cluster, findings")
    add_options(sp, (OUT,))
    dataset_args(sp, required=False)
    model_args(sp)
    add_options(sp, (SHARDS,))
    embed_args(sp)
    cluster_args(sp)
    finding_args(sp)

    sp = add("extract", cmd_extract, "create a run (if needed) and extract features")
    add_options(sp, (OUT,))
    dataset_args(sp, required=False)
    model_args(sp)

    sp = add("embed", cmd_embed, "PCA + t-SNE of the run's features")
    add_options(sp, (RUN,))
    sp.add_argument("--seed", type=cli_type("seed"), default=0, help="PCA and t-SNE seed")
    embed_args(sp)

    sp = add("cluster", cmd_cluster, "per-class DBSCAN; print the summary table")
    add_options(sp, (RUN,))
    cluster_args(sp)
    add_options(sp, CLUSTER_OWN)
