"""The chain ingest → extract → embed → cluster on a run directory, in one place: every
step is skipped when its inputs have not changed.

Where the heavy steps run is the caller's choice (:class:`Steps`): in this process
(:class:`LocalSteps`, the default: tests, benches, the app's pipeline job), or as jobs on
Celery workers (``worker.cli``'s job steps for ``curator pipeline``, which can share
extraction out). The order, the checks before minutes of work, and the clustering are
the same either way.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Protocol

from worker.pipeline.curation.cluster_step import cluster_step
from worker.pipeline.curation.snapshot import current_decisions
from worker.pipeline.errors import InputError
from worker.pipeline.features.extraction import extract
from worker.pipeline.features.feature_options import FeatureOptions
from worker.pipeline.findings import ensure_findings
from worker.pipeline.findings.testsplit import load_test_split
from worker.pipeline.map.clustering import Decisions, check_rule
from worker.pipeline.map.dbscan import check_params
from worker.pipeline.map.embedding import EmbeddingOptions, embed
from worker.pipeline.progress import ProgressFn
from worker.pipeline.sources.datasets import Dataset
from worker.pipeline.sources.ingest import DatasetOptions, ingest, open_run_dataset
from worker.pipeline.storage.rundir import RunDir
from worker.pipeline.storage.runlock import claim_out_dir, run_lock

NOT_A_RUN = "{path} is not a run yet: give --dataset SPEC to create it"


def claim_run(run: RunDir, dataset: DatasetOptions | None) -> None:
    """Make ``run``'s folder the run of ``dataset`` (:func:`~.storage.runlock.claim_out_dir`),
    or refuse it in one line before anything is written there: a folder that is not a run
    yet and no dataset to make it from, or a place ``claim_out_dir`` refuses. Every door
    that makes a run claims its folder here (``curator pipeline`` and ``extract``,
    ``tc.pipeline``, :func:`run_pipeline`).

    Parameters
    ----------
    run : the run's folder (``--out``), a run already or not yet
    dataset : the dataset to make it from; None to go on with the run as it was made

    Raises
    ------
    InputError
        No dataset for a folder that is not a run yet (``NOT_A_RUN``); or ``--out`` is a
        file, a folder holding what is not a run's, a folder inside the dataset, or a
        place this user cannot write (:func:`~.storage.runlock.claim_out_dir`).
    """
    if dataset is None and not run.step_done("ingest"):
        raise InputError(NOT_A_RUN.format(path=run.path))
    claim_out_dir(run.path, dataset.spec.class_root if dataset else None)


def ensure_ingested(run: RunDir, opts: DatasetOptions | None,
                    progress: ProgressFn | None = None) -> Dataset:
    """Ingest ``opts`` into a new run, or re-open an existing run made from the same options.

    Raises
    ------
    InputError
        When the run exists but was made from a different dataset, or when no dataset is
        given for a new run.
    """
    if run.step_done("ingest"):
        recorded = run.read_meta()["dataset"]
        # Compare through from_json so runs recorded before an option existed still match.
        if opts is not None and opts.to_json() != DatasetOptions.from_json(recorded).to_json():
            raise InputError(f"{run.path} was made from {recorded['spec']} with other options; "
                             "choose a new --out or omit the dataset options")
        return open_run_dataset(run)
    if opts is None:
        raise InputError(NOT_A_RUN.format(path=run.path))
    return ingest(run, opts, progress)


def ensure_embedded(run: RunDir, opts: EmbeddingOptions,
                    progress: ProgressFn | None = None) -> None:
    """Embed unless ``embedding.npy`` was made from the current features with ``opts``."""
    features_key = run.step("extract").get("cache_key")
    done = run.step("embed")
    wanted = {**asdict(opts), "features_key": features_key}
    if run.embedding.is_file() and all(done.get(k) == v for k, v in wanted.items()):
        return
    embed(run, opts, progress)


class Steps(Protocol):
    """How the chain's heavy steps run."""

    def held(self, run: RunDir) -> contextlib.AbstractContextManager[None]:
        """Held around the steps and the clustering (the run's step lock, or nothing when
        each step takes it itself)."""
        ...

    def features(self, run: RunDir, dataset: DatasetOptions | None,
                 opts: FeatureOptions) -> None:
        """Ingest if need be, then extract (each skipped when current)."""
        ...

    def embedding(self, run: RunDir, opts: EmbeddingOptions) -> None:
        """Embed unless current."""
        ...

    def test_split(self, run: RunDir) -> None:
        """The test split's features for the leak kind, unless cached or there is none."""
        ...


class LocalSteps:
    """Every step in this process, under the run's step lock."""

    def __init__(self, progress: ProgressFn | None = None) -> None:
        self.progress = progress

    @contextlib.contextmanager
    def held(self, run: RunDir) -> Iterator[None]:
        with run_lock(run, "a pipeline step", wait=600.0):
            yield

    def features(self, run: RunDir, dataset: DatasetOptions | None,
                 opts: FeatureOptions) -> None:
        extract(run, ensure_ingested(run, dataset, self.progress), opts, self.progress)

    def embedding(self, run: RunDir, opts: EmbeddingOptions) -> None:
        ensure_embedded(run, opts, self.progress)

    def test_split(self, run: RunDir) -> None:
        load_test_split(run, self.progress)


@dataclass(frozen=True)
class ClusterOptions:
    """What the clustering and the findings steps use: the flagging ``rule``, DBSCAN's
    ``eps`` and ``min_samples`` (None: the run's stored or default ones) and the finding
    kinds' cuts by kind name (``thresholds``; None: each kind's defaults)."""

    rule: str | None = None
    min_samples: int | None = None
    eps: float | None = None
    thresholds: dict[str, float] | None = None


def run_pipeline(run: RunDir, dataset: DatasetOptions | None, features: FeatureOptions,
                 embedding: EmbeddingOptions, cluster: ClusterOptions | None = None,
                 progress: ProgressFn | None = None, steps: Steps | None = None) -> Decisions:
    """ingest → extract → embed → test split → cluster → findings; every step is skipped
    when already current. ``steps`` says where the heavy ones run (default: here, reporting to
    ``progress``); ``cluster``: the clustering's and the findings' choices."""
    cluster = cluster or ClusterOptions()
    eps, min_samples = cluster.eps, cluster.min_samples
    # Refuse bad clustering parameters before minutes of extraction, not after.
    check_params(eps if eps is not None else 1.0,
                 min_samples if min_samples is not None else 1)
    if cluster.rule is not None:
        check_rule(cluster.rule)
    claim_run(run, dataset)
    steps = steps or LocalSteps(progress)
    with steps.held(run):
        steps.features(run, dataset, features)
        steps.embedding(run, embedding)
        steps.test_split(run)
        # Clustering takes seconds even at 1.28M samples: always in this process.
        cluster_step(run, eps=eps, min_samples=min_samples, rule=cluster.rule)
        ensure_findings(run, cluster.thresholds, progress=progress)
        return current_decisions(run)[1]
