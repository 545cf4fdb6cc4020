"""Read a run for the app, fast: cached immutable arrays and per-class DBSCAN indexes.

The caches here hold only data derived from files that never change in place (each is
replaced by an atomic rename, which changes its mtime), keyed by path and mtime. They are
safe with several server processes: each process fills its own, and none holds state a
user can change. Everything a user changes lives in the run's SQLite store. The arrays
and indexes are process-local ``lru_cache`` entries (an index holds a lock and is widened
in place, so it cannot be pickled); computed labels go to Flask-Caching (app/caching.py).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from worker.jobs import resolve_run
from worker.pipeline.clustering import (
    ClassClusterer,
    Decisions,
    RuleInputs,
    decide,
    feature_neighbours,
)
from worker.pipeline.curation import (
    agreement_path,
    evidence_paths,
    load_agreement,
    load_evidence,
    neighbours_path,
    read_curation,
    recorded_clusters,
    rule_inputs,
)
from worker.pipeline.datasets import SampleTable
from worker.pipeline.errors import InputError
from worker.pipeline.rundir import RunDir

from .caching import labels as labels_cache
from .caching import memoized


def _mtime(path: Path) -> int:
    return path.stat().st_mtime_ns if path.exists() else 0


@dataclass(frozen=True)
class RunData:
    """Immutable arrays of one run, shared by every request for it."""

    run: RunDir
    samples: SampleTable
    embedding: np.ndarray  # (N, 2) float32
    inputs: RuleInputs  # what the rules read besides DBSCAN, each (N,) or None
    score: np.ndarray | None  # (N,) float32 mislabel score, None for older runs
    suggested: np.ndarray | None  # (N,) int64 suggested class code
    neighbours: np.ndarray  # (N, 10) int64, nearest samples in feature space (PCA-50)
    members: tuple[np.ndarray, ...]  # per class code, sample indices (ascending)
    stamp: tuple[int, ...]  # mtimes of the files above: the key of every derived cache
    # clusters.npy and each class's parameters then (curation.recorded_clusters), or None
    recorded: tuple[np.ndarray, dict[int, tuple[float, int]]] | None = None


@functools.lru_cache(maxsize=8)
def _load(path: str, stamp: tuple[int, ...]) -> RunData:
    run = RunDir(path)
    samples = run.read_samples()
    emb = run.load_embedding()
    # The cluster step saves feature-space neighbours; older runs get them computed here.
    nn = np.load(neighbours_path(run)) if neighbours_path(run).is_file() else \
        feature_neighbours(run.load_features())
    evidence = load_evidence(run)
    inputs = rule_inputs(samples.labels, load_agreement(run), evidence)
    members = tuple(np.flatnonzero(samples.labels == c) for c in range(len(samples.classes)))
    return RunData(run, samples, emb, inputs, evidence and evidence["score"],
                   evidence and evidence["suggested"], nn[:, :10], members, stamp,
                   recorded_clusters(run, samples))


def _stamp(run: RunDir) -> tuple[int, ...]:
    return tuple(_mtime(p) for p in (run.samples_csv, run.embedding, run.features,
                                     run.path / "clusters.npy", run.run_json,
                                     agreement_path(run), neighbours_path(run),
                                     *evidence_paths(run).values()))


def run_data(runs_root: Path, run_id: str) -> RunData:
    """Cached :class:`RunData` for ``run_id``; refreshed when the run's files change."""
    run = resolve_run(runs_root, run_id)
    if not run.exists():
        raise InputError(f"no run {run_id!r} in the runs root: pick one on the Runs page")
    if not run.embedding.is_file():
        raise InputError(f"run {run_id} has no embedding yet: run its pipeline first")
    return _load(str(run.path), _stamp(run))


@functools.lru_cache(maxsize=64)
def _clusterer(path: str, stamp: tuple[int, ...], code: int) -> ClassClusterer:
    data = _load(path, stamp)
    # Radius 0: the index widens itself to 1.5 × the first eps asked for, and again when a
    # larger one comes, and serves every smaller eps as it is (same labels), so one index
    # per class suffices. Keying it by eps bucket made the first move below a bucket edge
    # rebuild it (~130 ms on a 5,314-point class).
    return ClassClusterer(data.embedding[data.members[code]], 0.0)


def class_labels(data: RunData, code: int, eps: float, min_samples: int) -> np.ndarray:
    """DBSCAN labels of class ``code``'s points, shape (n_c,), memoized per parameters."""
    path, eps, min_samples = str(data.run.path), float(eps), int(min_samples)
    if data.recorded is not None and data.recorded[1].get(code) == (eps, min_samples):
        return data.recorded[0][data.members[code]]  # as the cluster step saved them
    return memoized(("labels", path, data.stamp, code, eps, min_samples),
                    lambda: _clusterer(path, data.stamp, code).labels(eps, min_samples),
                    cache=labels_cache)


@dataclass
class RunState:
    """Everything the Curate page draws for one store revision."""

    decisions: Decisions
    params: dict[int, tuple[float, int]]
    overrides: dict[int, str]
    revision: int
    rule: str
    relabels: dict[int, int] = field(default_factory=dict)

    @property
    def marks(self) -> dict[int, str]:
        """What the map marks per sample: a relabelled sample shows as kept (it trains,
        with its new label) unless an override says otherwise."""
        return {**{s: "keep" for s in self.relabels}, **self.overrides}

    @property
    def decided(self) -> set[int]:
        """Samples a reviewer has acted on (kept, dropped or relabelled)."""
        return set(self.overrides) | set(self.relabels)


def current_state(data: RunData) -> RunState:
    """Decisions for every sample at the stored parameters and overrides."""
    stored = read_curation(data.run, len(data.samples.classes))
    clusters = np.full(len(data.samples), -1, dtype=np.int64)
    for code, idx in enumerate(data.members):
        if len(idx):
            clusters[idx] = class_labels(data, code, *stored.params[code])
    return RunState(decide(clusters, data.inputs, stored.overrides, stored.rule,
                           stored.relabels),
                    stored.params, stored.overrides, stored.revision, stored.rule,
                    stored.relabels)


def cached_figure(data: RunData, state: RunState, what: tuple, build) -> dict:
    """A figure (or trace) dict for this run and store revision, from Flask-Caching.

    ``what`` names the figure (e.g. ``("class", 3)``); ``build()`` makes it on a miss.
    """
    return memoized(("figure", str(data.run.path), data.stamp, state.revision, state.rule,
                     *what), build)
