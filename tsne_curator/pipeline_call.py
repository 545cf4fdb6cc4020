"""``tc.pipeline``: the ``curator pipeline`` chain, run in this process.

The keywords are ``curator pipeline``'s options, checked against the declarations the CLI
adds its flags from (:mod:`tsne_curator.options`), and turned into the steps' options by
the functions the CLI uses too (:mod:`worker.step_options`).
The steps run here (:class:`~worker.pipeline.runner.LocalSteps`: each under the run's step
lock) inside the pipeline lock ``curator pipeline`` holds, so a second pipeline on the same
folder, from a shell or another notebook, is refused at once. Every finished step is
skipped on the next call, so a call stopped with Ctrl-C (or the notebook's stop button)
resumes where it stopped: each file is written under a temporary name and renamed into
place, so a stopped step leaves nothing half-written.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from tsne_curator.bars import progress_bar
from tsne_curator.options import expand_thresholds, keywords
from tsne_curator.run_handle import Run
from worker.pipeline.sources.ingest import DatasetOptions
from worker.pipeline.storage.rundir import RunDir
from worker.pipeline.storage.runlock import PIPELINE_LOCK, claim_out_dir, run_lock
from worker.step_options import dataset_options, embedding_options, feature_options, finding_cuts

# Why the API does not take ``--shards``: it runs every step in this process.
SHARDS = ("the Python API runs every step in this process; to share extraction out across "
          "workers, use 'curator pipeline --shards N' with CURATOR_BROKER_URL set")


def pipeline(dataset: str | None, out: str | os.PathLike, **options: Any) -> Run:
    """Make (or finish) a run: ingest → extract → embed → cluster → findings.

    Parameters
    ----------
    dataset : str or None
        A ``--dataset`` spec: ``"digits"``, ``"folder:DIR"``, ``"cifar10:DIR"`` or
        ``"features:FILE.npy"`` (with ``labels="FILE.csv"``). None re-runs the steps of
        the existing run at ``out``.
    out : str or path
        The run folder (``--out``): new or empty, or a run made with the same dataset
        options (its finished steps are skipped).
    **options
        Every other ``curator pipeline`` option by its name with ``_`` for ``-``:
        ``inject_noise``, ``seed``, ``model``, ``weights``, ``finetune``, ``perplexity``,
        ``n_iter``, ``eps``, ``min_samples``, ``rule``, ``duplicate_threshold``, … and
        ``thresholds={"duplicate": 0.95}`` for the findings' cuts. ``shards`` is the
        CLI's alone.

    Returns
    -------
    Run

    Raises
    ------
    TypeError
        An unknown keyword (the message lists the valid ones).
    InputError
        A value the CLI would refuse, named by its keyword; nothing is written then.
    """
    v = keywords("pipeline", expand_thresholds(options), "pipeline",
                 fixed={"dataset": dataset, "out": out}, refused={"shards": SHARDS})
    run = RunDir(v["out"])
    ds = dataset_options(v)  # a bad spec or bad data is refused before out is touched
    run_in_process(run, v, ds)
    return Run(run.path)


def run_in_process(run: RunDir, v: Mapping[str, Any],
                   dataset: DatasetOptions | Callable[[], DatasetOptions] | None) -> None:
    """The chain on ``run`` with ``curator pipeline``'s option values ``v``
    (:func:`~tsne_curator.options.keywords`), under the pipeline lock.

    ``dataset``: the dataset's options, None to finish the run at ``run`` as it was made,
    or a function that makes them once the lock is held (``tc.from_arrays`` writes its
    arrays into the run first). The steps' options are made and the run's folder is
    claimed (:func:`~worker.pipeline.runner.claim_run`) before anything is written, so a
    bad option, or no dataset for a folder that is not a run, leaves nothing behind.
    """
    # loads torch: only when run
    from worker.pipeline.runner import ClusterOptions, claim_run, run_pipeline

    features, embedding = feature_options(v), embedding_options(v)
    cluster = ClusterOptions(v["rule"], v["min_samples"], v["eps"], finding_cuts(v))
    if callable(dataset):
        claim_out_dir(run.path)  # arrays: a features file, no class folder to keep out of
    else:
        claim_run(run, dataset)
    bar = progress_bar()
    try:
        with run_lock(run, f"tsne_curator.pipeline (pid {os.getpid()})", PIPELINE_LOCK):
            run_pipeline(run, dataset() if callable(dataset) else dataset, features,
                         embedding, cluster, progress=bar)
    finally:
        bar.close()
