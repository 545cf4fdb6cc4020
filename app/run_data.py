"""Read a run for the app, fast: cached immutable arrays, per-class labels and the state
of each store revision.

The array caches hold only data derived from files that never change in place (each is
replaced by an atomic rename, which changes its mtime), keyed by path and mtime; the
state cache is keyed by the store's revision, which grows with every change. They are
safe with several server processes: each process fills its own, and none holds state a
user can change. Everything a user changes lives in the run's SQLite store. All are
cachetools caches, process-local: the arrays and states here, the computed labels and
figures in app/caching.py.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from cachetools import LRUCache, cached

from app.caching import keep, lookup, memoized
from app.caching import labels as labels_cache
from app.map_extent import extent
from worker.pipeline.curation.rule_evidence import (
    agreement_path,
    cut_rule_inputs,
    evidence_paths,
    load_agreement,
    load_evidence,
    members_of,
    neighbours_path,
    rule_inputs,
)
from worker.pipeline.curation.snapshot import read_curation, recorded_clusters, summary_rows
from worker.pipeline.errors import InputError
from worker.pipeline.findings import default_drops, load_findings, proposals
from worker.pipeline.findings.files import files_stamp
from worker.pipeline.map.clustering import (
    Decisions,
    RuleInputs,
    class_members,
    decide,
    feature_neighbours,
    map_classes,
)
from worker.pipeline.storage.curation_store import open_store
from worker.pipeline.storage.rundir import RunDir
from worker.pipeline.storage.sample_table import SampleTable
from worker.run_catalog import resolve_run


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
    # (order, starts) of clustering.class_members: members[c] is order[starts[c]:starts[c+1]]
    grouping: tuple[np.ndarray, np.ndarray]
    stamp: tuple[int, ...]  # mtimes of the files above: the key of every derived cache
    # clusters.npy and each class's parameters then (curation.recorded_clusters), or None
    recorded: tuple[np.ndarray, dict[int, tuple[float, int]]] | None = None
    # (x0, x1, y0, y1) the map and its backdrop cover (background.extent): once per run,
    # not per class switch (a scan of every point)
    bounds: tuple[float, float, float, float] = (0.0, 1.0, 0.0, 1.0)
    # Every finding kind's table (worker/pipeline/findings), and per sample the kind
    # whose default drops it ('' none), which decide() applies before the overrides.
    findings: dict = field(default_factory=dict)
    drops: np.ndarray | None = None
    # per sample the kind that marks it without dropping it ('' none): the map's proposed
    proposals: np.ndarray | None = None


# The arrays of the last few runs opened, keyed by path and stamp. The condition makes a
# request for a run that another request is loading wait for that load, not load it twice.
RUNS_KEPT = 8


@cached(LRUCache(maxsize=RUNS_KEPT), condition=threading.Condition())
def _load(path: str, stamp: tuple[int, ...]) -> RunData:
    run = RunDir(path)
    samples = run.read_samples()
    emb = run.load_embedding()
    # The cluster step saves feature-space neighbours; older runs get them computed here.
    nn = run.load_array(neighbours_path(run), "cluster") if neighbours_path(run).is_file() else \
        feature_neighbours(run.load_features())
    evidence = load_evidence(run)
    inputs = rule_inputs(load_agreement(run), evidence)
    order, starts = class_members(samples.labels, len(samples.classes))  # one sort, not C masks
    members = tuple(members_of(order, starts))
    findings = load_findings(run, len(samples))
    return RunData(run, samples, emb, inputs, evidence and evidence["score"],
                   evidence and evidence["suggested"], nn[:, :10], members, (order, starts),
                   stamp,
                   recorded_clusters(run, samples), extent(emb), findings,
                   default_drops(findings, len(samples)), proposals(findings, len(samples)))


def _stamp(run: RunDir) -> tuple[int, ...]:
    return tuple(_mtime(p) for p in (run.samples_csv, run.embedding, run.features,
                                     run.path / "clusters.npy", run.run_json,
                                     agreement_path(run), neighbours_path(run),
                                     *evidence_paths(run).values())) + files_stamp(run)


def run_data(runs_root: Path, run_id: str) -> RunData:
    """Cached :class:`RunData` for ``run_id``; refreshed when the run's files change."""
    run = resolve_run(runs_root, run_id)
    if not run.exists():
        raise InputError(f"no run {run_id!r} in the runs root: pick one on the Runs page")
    if not run.embedding.is_file():
        raise InputError(f"run {run_id} has no embedding yet: run its pipeline first")
    return _load(str(run.path), _stamp(run))


def class_labels(data: RunData, params: dict[int, tuple[float, int]]) -> dict[int, np.ndarray]:
    """DBSCAN labels of each class's points at its parameters, memoized per parameters.

    Parameters
    ----------
    params : class code → (eps, min_samples)

    Returns
    -------
    class code → ndarray of int64, shape (n_c,); -1 = noise

    Labels come, in order of preference, from ``clusters.npy`` (when the class still has
    the parameters the cluster step used), from the labels cache (app/caching.py), or
    from a one-shot DBSCAN whose cost does not grow with eps (a per-class pair index grew
    with eps and made "Apply to all" take minutes on a 1,000-class map:
    docs/benchmarks.md; the browser re-clusters while a slider moves, and the server only
    answers the value it settles on). Misses are shared over the cores
    (:func:`~worker.pipeline.map.clustering.map_classes`).
    """
    path = str(data.run.path)
    out: dict[int, np.ndarray] = {}
    todo: list[tuple[int, float, int, tuple]] = []
    for code, (eps, min_samples) in params.items():
        eps, min_samples = float(eps), int(min_samples)
        if data.recorded is not None and data.recorded[1].get(code) == (eps, min_samples):
            out[code] = data.recorded[0][data.members[code]]  # as the cluster step saved
            continue
        key = ("labels", path, data.stamp, code, eps, min_samples)
        hit = lookup(key, labels_cache)
        if hit is None:
            todo.append((code, eps, min_samples, key))
        else:
            out[code] = hit
    computed = map_classes(data.embedding, *data.grouping,
                           [(c, e, m) for c, e, m, _ in todo]) if todo else {}
    for code, _, _, key in todo:
        out[code] = computed[code][1]
        keep(key, out[code], labels_cache)
    return out


@dataclass(frozen=True)
class RunState:
    """Everything the Curate page draws for one store revision."""

    decisions: Decisions
    params: dict[int, tuple[float, int]]
    overrides: dict[int, str]
    revision: int
    rule: str
    relabels: dict[int, int] = field(default_factory=dict)
    # What the rule read at this revision: the run's evidence with the per-class cuts
    # (curation.cut_rule_inputs) applied.
    inputs: RuleInputs = field(default_factory=RuleInputs)
    cuts: dict[int, int] = field(default_factory=dict)  # class code → flagged by a cut
    # Per-class and total counts (curation.summary_rows), made once per revision: every
    # repaint shows them, and they cost a pass over every sample.
    rows: list[dict] = field(default_factory=list)

    @property
    def marks(self) -> dict[int, str]:
        """What the map marks per sample: a relabelled sample shows as kept (it trains,
        with its new label) unless an override says otherwise."""
        return {**{s: "keep" for s in self.relabels}, **self.overrides}

    @property
    def decided(self) -> set[int]:
        """Samples a reviewer has acted on (kept, dropped or relabelled)."""
        return set(self.overrides) | set(self.relabels)

    def train_labels(self, given: np.ndarray) -> np.ndarray:
        """(N,) the classes the curated subsets train with: ``given`` with the reviewers'
        relabels."""
        out = given.copy()
        if self.relabels:
            out[list(self.relabels)] = list(self.relabels.values())
        return out


# A few recent states (one run's ~50 MB at 1.28M samples), oldest dropped first.
STATES_KEPT = 4
_STATES: LRUCache = LRUCache(maxsize=STATES_KEPT)
_STATES_LOCK = threading.Lock()


def current_state(data: RunData) -> RunState:
    """Decisions for every sample at the stored parameters and overrides.

    Kept per store revision in this process: putting the clusters together and deciding
    costs a pass over every sample (docs/benchmarks.md), and every request of the Curate
    page asks for it. The revision is read first (one small query); the state is built from one
    snapshot and kept under that snapshot's own revision.
    """
    key = (str(data.run.path), data.stamp, open_store(data.run).revision())
    with _STATES_LOCK:  # a hit counts as a use: the least recently used goes first
        state = _STATES.get(key)
    if state is not None:
        return state
    stored = read_curation(data.run, len(data.samples.classes))
    clusters = np.full(len(data.samples), -1, dtype=np.int64)
    for code, labels in class_labels(data, {c: stored.params[c] for c, idx
                                            in enumerate(data.members) if len(idx)}).items():
        clusters[data.members[code]] = labels
    inputs = cut_rule_inputs(data.inputs, data.score, data.members, stored.cuts)
    decisions = decide(clusters, inputs, stored.overrides, stored.rule, stored.relabels,
                       data.drops)
    for array in vars(decisions).values():  # shared by every request: read-only
        array.flags.writeable = False
    state = RunState(decisions,
                     stored.params, stored.overrides, stored.revision, stored.rule,
                     stored.relabels, inputs, stored.cuts,
                     summary_rows(data.samples, decisions, data.findings))
    with _STATES_LOCK:  # under the snapshot's own revision, which may be newer than key's
        _STATES[key[:2] + (stored.revision,)] = state
    return state


def cached_figure(data: RunData, state: RunState, what: tuple, build) -> dict:
    """A figure (or trace) dict for this run and store revision, from the figures' cache
    (app/caching.py).

    ``what`` names the figure (e.g. ``("class", 3)``); ``build()`` makes it on a miss.
    """
    return memoized(("figure", str(data.run.path), data.stamp, state.revision, state.rule,
                     *what), build)
