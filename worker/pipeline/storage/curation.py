"""A run's curation state: store parameters + embedding + overrides → decisions.

This is the one place that turns what is stored into what each sample's fate is; the CLI,
export and evaluation call :func:`current_decisions`; the app (app/run_data.py) reads the same
store through :func:`read_curation` and keeps what it derives per store revision.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from worker.pipeline.errors import InputError
from worker.pipeline.evaluation.gauge import Gauge, judge, neighbour_agreement
from worker.pipeline.findings import (
    PROPOSED,
    View,
    default_drops,
    kinds,
    load_findings,
    marks,
    sample_decisions,
)
from worker.pipeline.map.clustering import (
    DEFAULT_MIN_SAMPLES,
    DEFAULT_RULE,
    Decisions,
    RuleInputs,
    check_rule,
    class_members,
    cluster_all,
    cluster_classes,
    cut_bands,
    decide,
    fallback_eps,
    feature_neighbours,
    knn_agreement,
    map_classes,
)
from worker.pipeline.map.dbscan import check_params
from worker.pipeline.map.embedding import run_pca
from worker.pipeline.map.evidence import DENSE_MAX, EVIDENCE_VERSION, knn_evidence, label_evidence
from worker.pipeline.sources.datasets import SampleTable
from worker.pipeline.storage.curation_store import PIPELINE_DESCRIPTION, CurationStore
from worker.pipeline.storage.rundir import RunDir, save_npy


def check_store(run: RunDir) -> None:
    """A clustered run whose store has gone is an error, not a silent fresh store: its
    parameters and overrides would be lost without a word. Anything that would create the
    store file (a job record too) checks this first. A run not made yet passes."""
    if not run.store.is_file() and run.step_done("cluster"):
        raise InputError(f"{run.store} is missing: the run's curation is lost; restore it, or "
                         f"run 'curator cluster {run.path}' to start a new one")


def open_store(run: RunDir, create: bool = False) -> CurationStore:
    """The run's curation store (:func:`check_store`); ``create`` (the cluster step)
    starts a new one."""
    run.require()
    if not create:
        check_store(run)
    return CurationStore(run.store)


def agreement_path(run: RunDir) -> Path:
    return run.path / "knn_agreement.npy"


def neighbours_path(run: RunDir) -> Path:
    return run.path / "neighbours.npy"


# The adaptive rule's per-sample evidence (worker/pipeline/map/evidence.py), one documented
# .npy file each (docs/run-directory.md) so cleanlab, FiftyOne or a notebook can read them.
EVIDENCE_FILES = {"score": "score.npy", "suggested": "suggested_label.npy",
                  "issue": "label_issue.npy", "suspect": "label_suspect.npy"}


def evidence_paths(run: RunDir) -> dict[str, Path]:
    return {k: run.path / name for k, name in EVIDENCE_FILES.items()}


def _evidence_key(run: RunDir, labels: np.ndarray) -> str:
    """What the derived per-sample files were computed from: the features (their cache
    key), the neighbours file, the labels and the evidence's own version. A
    re-extraction, a new embedding, new labels or a new rule change it, so stale evidence
    is never read."""
    h = hashlib.sha256(str(run.step("extract").get("cache_key")).encode())
    h.update(EVIDENCE_VERSION.encode())
    if len(labels) * len(run.read_meta()["classes"]) > DENSE_MAX:
        h.update(b"knn-only")  # the other method (evidence.knn_evidence)
    nn = neighbours_path(run)
    h.update(str(nn.stat().st_mtime_ns if nn.is_file() else 0).encode())
    h.update(np.ascontiguousarray(labels, dtype=np.int64).tobytes())
    return h.hexdigest()[:16]


def ensure_evidence(run: RunDir, samples: SampleTable) -> None:
    """Write ``neighbours.npy``, ``knn_agreement.npy`` and the evidence files unless they
    are current (:func:`_evidence_key`)."""
    derived = [agreement_path(run), *evidence_paths(run).values()]
    step = run.step("evidence")
    if all(p.is_file() for p in derived) and neighbours_path(run).is_file() \
            and step.get("key") == _evidence_key(run, samples.labels):
        if "gauge" not in step:  # clustered before the gauge existed: add it once
            gauge = run_gauge(run)
            run.mark_step("evidence", key=step["key"], gauge=gauge and gauge.value)
        return
    features = run.load_array(run.features, "extract", mmap=True)
    neighbours = run.load_array(neighbours_path(run), "cluster") \
        if neighbours_path(run).is_file() else None
    if neighbours is None or len(neighbours) != len(samples):
        neighbours = feature_neighbours(features)
        save_npy(neighbours_path(run), neighbours)
    n_classes = len(samples.classes)
    if len(samples) * n_classes > DENSE_MAX:  # the dense views would not fit (evidence.py)
        ev = knn_evidence(neighbours, samples.labels, n_classes)
    else:
        ev = label_evidence(run_pca(run, 50).x, neighbours, samples.labels, n_classes)
    save_npy(agreement_path(run), knn_agreement(neighbours, samples.labels))
    for key, path in evidence_paths(run).items():
        save_npy(path, getattr(ev, key))
    value = neighbour_agreement(neighbours, samples.labels, ev.issue, ev.suggested, n_classes)
    run.mark_step("evidence", key=_evidence_key(run, samples.labels), gauge=round(value, 4))


def run_gauge(run: RunDir) -> Gauge | None:
    """The run's feature-quality gauge (worker.pipeline.evaluation.gauge), or None before the
    cluster step. Runs clustered before the gauge existed get it from their files."""
    done, extract = run.step("evidence"), run.step("extract") or None
    if isinstance(done.get("gauge"), int | float):
        return judge(float(done["gauge"]), extract)
    evidence = load_evidence(run)
    if evidence is None or not neighbours_path(run).is_file():
        return None
    samples = run.read_samples()
    return judge(neighbour_agreement(run.load_array(neighbours_path(run), "cluster"),
                                     samples.labels,
                                     evidence["issue"].astype(bool), evidence["suggested"],
                                     len(samples.classes)), extract)


def class_code(samples: SampleTable, name: str) -> int:
    """Class code for a class name (or a code given as text)."""
    if name in samples.classes:
        return samples.classes.index(name)
    raise InputError(f"unknown class {name!r}: classes are {', '.join(samples.classes)}")


def _map_identity(run: RunDir) -> str:
    """Which map the class parameters were set on: the embed step's record (the features
    it was made from and when)."""
    done = run.step("embed")
    return f"{done.get('features_key')}@{done.get('at')}"


def cluster_step(run: RunDir, eps: float | None = None, min_samples: int | None = None,
                 classes: list[str] | None = None, rule: str | None = None,
                 auto: bool = False) -> Decisions:
    """Set DBSCAN parameters and write ``clusters.npy`` and the rules' per-sample evidence
    (:func:`ensure_evidence`).

    Classes without stored parameters get automatic ones, and so does every class after a
    new embedding (its stored eps measured another map). ``eps``/``min_samples`` apply to
    ``classes`` (all when None); a missing eps with ``auto=True`` re-derives it from the
    k-distance knee at the (new) min_samples. Changes go through the store's history, so
    they can be undone like any edit made in the app. The per-class work (automatic eps,
    DBSCAN) runs on this machine's cores (:func:`~.clustering.map_classes`): 10.8 s at
    1.28M samples, faster than sharing it out to workers was (docs/benchmarks.md).
    """
    samples = run.read_samples()
    embedding = run.load_embedding()
    store = open_store(run, create=True)
    if rule is not None:
        store.set_setting("rule", check_rule(rule))
    n_classes = len(samples.classes)
    stored = store.class_params()
    # Parameters are distances on one map: after a new embedding (other features, other
    # t-SNE settings) every class's eps is derived again, one undoable edit.
    on_map = _map_identity(run)
    if store.setting("params_map") not in (None, on_map):
        stored = {}
    ms_default = min_samples if min_samples is not None else DEFAULT_MIN_SAMPLES
    targets = list(range(n_classes)) if not classes else [class_code(samples, c) for c in classes]
    if eps is not None or min_samples is not None:  # before anything is stored
        check_params(1.0 if eps is None else eps, ms_default,
                     largest=int(np.bincount(samples.labels, minlength=n_classes)[targets].max()))
    missing = [c for c in range(n_classes) if c not in stored]
    # What each class should get: eps None means "automatic, at this min_samples".
    wanted: dict[int, tuple[float | None, int]] = dict.fromkeys(missing, (None, ms_default))
    if eps is not None or min_samples is not None or auto:
        for c in targets:
            ms = min_samples if min_samples is not None else stored.get(c, (0, ms_default))[1]
            e = eps if eps is not None else None if auto or c not in stored else stored[c][0]
            wanted[c] = (e, ms)
    recorded = recorded_clusters(run, samples)
    work = [(c, *p) for c, p in wanted.items()] + [
        (c, *p) for c, p in stored.items()
        if c not in wanted and (recorded is None or recorded[1].get(c) != p)]
    order, starts = class_members(samples.labels, n_classes)
    done = map_classes(embedding, order, starts, work)
    # Classes with no automatic eps (too few points, or all at one spot) take the median of
    # the others', as before; they have no core point at it unless all points coincide.
    fallback = fallback_eps([e for c, (e, _) in done.items() if c in wanted])
    clusters = recorded[0].copy() if recorded is not None else \
        np.full(len(samples), -1, dtype=np.int64)
    params = dict(stored)
    for c, (e, labels) in done.items():
        ms = wanted[c][1] if c in wanted else stored[c][1]
        if e is None:
            e = fallback
            labels = cluster_classes(embedding, order, starts, [(c, e, ms)])[c][1]
        params[c] = (float(e), int(ms))
        clusters[order[starts[c]:starts[c + 1]]] = labels
    # The parameters of classes that had none on this map are the pipeline's own step,
    # given values included (curator pipeline --eps): undo passes it by, for a class
    # without parameters has no clustering (curation_store, "History semantics").
    if missing:
        store.set_class_params({c: params[c] for c in missing}, PIPELINE_DESCRIPTION,
                               pipeline=True)
    if set(wanted) - set(missing):
        store.set_class_params({c: params[c] for c in wanted if c not in missing},
                               "cluster: set parameters")
    store.set_setting("params_map", on_map)
    ensure_evidence(run, samples)
    _, decisions, params = current_decisions(run, (clusters, params))
    save_npy(run.path / "clusters.npy", decisions.clusters)
    # The mtime ties these params to this very file (recorded_clusters checks it): after a
    # crash between the two writes, neither is trusted.
    run.mark_step("cluster", rule=store.setting("rule", DEFAULT_RULE),
                  params={samples.classes[c]: list(p) for c, p in params.items()},
                  clusters_mtime=(run.path / "clusters.npy").stat().st_mtime_ns)
    return decisions


def recorded_clusters(run: RunDir, samples: SampleTable
                      ) -> tuple[np.ndarray, dict[int, tuple[float, int]]] | None:
    """``clusters.npy`` and the parameters each class had when the cluster step wrote it,
    or None when there is none, when it is older than the embedding (it may describe
    another map), or when run.json's record is not of this very file."""
    path = run.path / "clusters.npy"
    step = run.step("cluster")
    if not path.is_file() or not run.embedding.is_file() \
            or path.stat().st_mtime_ns < run.embedding.stat().st_mtime_ns \
            or step.get("clusters_mtime") != path.stat().st_mtime_ns:
        return None
    params = step.get("params", {})
    clusters = run.load_array(path, "cluster")
    if len(clusters) != len(samples):
        return None
    codes = {name: c for c, name in enumerate(samples.classes)}
    return clusters, {codes[n]: (float(p[0]), int(p[1])) for n, p in params.items()
                      if n in codes}


@dataclass(frozen=True)
class StoredCuration:
    """What the store says now: per-class parameters, overrides, rule, and the revision
    all of them belong to."""

    params: dict[int, tuple[float, int]]
    overrides: dict[int, str]
    rule: str
    revision: int
    relabels: dict[int, int] = field(default_factory=dict)
    cuts: dict[int, int] = field(default_factory=dict)  # class code → flagged by a cut


def read_curation(run: RunDir, n_classes: int) -> StoredCuration:
    """Read the store in one transaction (:meth:`CurationStore.snapshot`), so the app can
    cache figures under the revision it read.

    Raises :class:`InputError` when some class has no parameters yet.
    """
    snap = open_store(run).snapshot()
    if any(c not in snap.params for c in range(n_classes)):
        raise InputError(f"{run.path} has no clustering yet: run 'curator cluster {run.path}'")
    return StoredCuration(snap.params, snap.overrides, snap.settings.get("rule") or DEFAULT_RULE,
                          snap.revision, snap.relabels, snap.cuts)


def corrected_labels(labels: np.ndarray, relabels: dict[int, int]) -> np.ndarray:
    """``labels`` (class codes, shape (N,)) with each reviewer's relabel applied: what
    exports and retraining use. The given labels stay in the samples table."""
    out = labels.copy()
    for sample, code in relabels.items():
        if 0 <= sample < len(out):
            out[sample] = code
    return out


def load_agreement(run: RunDir) -> np.ndarray | None:
    """kNN label agreement, shape (N,) float32, or None for runs clustered before it."""
    return run.load_array(agreement_path(run), "cluster") if agreement_path(run).is_file() \
        else None


def load_evidence(run: RunDir) -> dict[str, np.ndarray] | None:
    """``score``, ``suggested``, ``issue`` and ``suspect`` arrays, shape (N,), or None for
    runs clustered before the adaptive rule (as it is now) existed."""
    paths = evidence_paths(run)
    if not all(p.is_file() for p in paths.values()):
        return None
    return {k: run.load_array(p, "cluster") for k, p in paths.items()}


def rule_inputs(agreement: np.ndarray | None,
                evidence: dict[str, np.ndarray] | None) -> RuleInputs:
    """What every rule reads besides DBSCAN, from the loaded per-sample files."""
    if evidence is None:
        return RuleInputs(agreement)
    return RuleInputs(agreement, evidence["issue"].astype(bool),
                      evidence["suspect"].astype(bool))


def load_rule_inputs(run: RunDir) -> RuleInputs:
    return rule_inputs(load_agreement(run), load_evidence(run))


def members_of(order: np.ndarray, starts: np.ndarray) -> list[np.ndarray]:
    """Per class code, its sample indices, ascending, from
    :func:`~.clustering.class_members`'s ``(order, starts)``."""
    return [order[a:b] for a, b in zip(starts[:-1], starts[1:], strict=True)]


def cut_rule_inputs(inputs: RuleInputs, score: np.ndarray | None,
                    members: Sequence[np.ndarray], cuts: dict[int, int]) -> RuleInputs:
    """``inputs`` with the store's per-class cuts applied (:func:`~.clustering.cut_bands`);
    runs without a score (clustered before the adaptive rule) have no cut to move."""
    return inputs if score is None else cut_bands(inputs, score, members, cuts)


def set_cut(run: RunDir, code: int, flagged: int | None, description: str = "",
            samples: SampleTable | None = None) -> int:
    """Flag class ``code``'s ``flagged`` highest scores and no others, or give the class
    back to the rule with None (:func:`~.clustering.cut_bands`); one undoable step. Only
    the ``adaptive`` rule ranks by score: under another rule, or in a run without scores,
    it is an :class:`InputError`. ``samples``: the run's, when the caller has them
    loaded (the app), else read here. Returns how many values changed (0 or 1)."""
    store = open_store(run)
    rule = store.setting("rule") or DEFAULT_RULE
    if rule != "adaptive" or not evidence_paths(run)["score"].is_file():
        raise InputError(f"rule {rule} has no score ranking to cut along: change eps or "
                         f"min_samples instead (or 'curator cluster {run.path} --rule "
                         "adaptive')")
    samples = samples if samples is not None else run.read_samples()
    size = int((samples.labels == code).sum())
    if flagged is not None and flagged > size:
        raise InputError(f"--cut {flagged} is more than class {samples.classes[code]}'s "
                         f"{size} samples")
    what = "the rule's cut" if flagged is None else f"flag top {flagged}"
    return store.set_class_cut(code, flagged,
                               description or f"{what} in class {samples.classes[code]}")


@dataclass(frozen=True)
class CurationSnapshot:
    """The samples, what happens to each, and the one store read it all comes from;
    ``findings``: every finding kind's table (worker/pipeline/findings)."""

    samples: SampleTable
    decisions: Decisions
    stored: StoredCuration
    findings: dict = field(default_factory=dict)

    def view(self, test_paths: Sequence[str] = ()):  # noqa: ANN201 - findings.View
        """What the finding kinds' columns and why-lines read, at this snapshot."""
        return View(self.samples.paths, self.samples.classes, self.samples.labels,
                    test_paths, self.decisions.flagged, self.findings)

    @property
    def labels(self) -> np.ndarray:
        """Class codes after the reviewers' relabels, shape (N,)."""
        return corrected_labels(self.samples.labels, self.stored.relabels)

    def proposed(self) -> dict[str, int]:
        """How many samples each finding kind proposes now: kept, since its evidence is
        below the kind's drop cut and no person decided (findings ``sample_decisions``),
        by kind name (kinds that propose none left out)."""
        marked = marks(self.findings, self.view())
        words = sample_decisions(self.decisions.kept, self.decisions.reason, marked)
        return {k: n for k, m in marked.items() if (n := int((m & (words == PROPOSED)).sum()))}


def current_snapshot(run: RunDir, recorded: tuple[np.ndarray, dict[int, tuple[float, int]]]
                     | None = None) -> CurationSnapshot:
    """Decisions for every sample from one read of the store: an export's ``params.json``
    and its manifest, or an evaluation's figures, describe exactly the same state.

    ``recorded``: clusters (N,) and the parameters they were made at, when the caller has
    just computed them; by default ``clusters.npy`` (:func:`recorded_clusters`)."""
    samples = run.read_samples()
    stored = read_curation(run, len(samples.classes))
    clusters = cluster_all(run.load_embedding(), samples.labels, stored.params,
                           recorded if recorded is not None else recorded_clusters(run, samples))
    evidence = load_evidence(run)
    inputs = rule_inputs(load_agreement(run), evidence)
    if stored.cuts:
        inputs = cut_rule_inputs(inputs, evidence and evidence["score"],
                                 members_of(*class_members(samples.labels, len(samples.classes))),
                                 stored.cuts)

    findings = load_findings(run, len(samples))
    decisions = decide(clusters, inputs, stored.overrides, stored.rule, stored.relabels,
                       default_drops(findings, len(samples)))
    return CurationSnapshot(samples, decisions, stored, findings)


def current_decisions(run: RunDir, recorded: tuple[np.ndarray, dict[int, tuple[float, int]]]
                      | None = None
                      ) -> tuple[SampleTable, Decisions, dict[int, tuple[float, int]]]:
    """The samples, what happens to each, and the per-class parameters, as stored now
    (``recorded`` as in :func:`current_snapshot`)."""
    snap = current_snapshot(run, recorded)
    return snap.samples, snap.decisions, snap.stored.params


def summary_rows(samples: SampleTable, decisions: Decisions,
                 findings: dict | None = None) -> list[dict]:
    """Per-class and total counts in the paper's Table I format.

    ``findings``: every finding kind's table (worker/pipeline/findings); each kind other
    than label adds a count of the samples it marks, under its name.

    Returns
    -------
    list of dict with keys class, size, flagged, overridden, relabelled, kept, proposed
    (kept, but a finding lists it below its drop cut and no person decided),
    reduction_pct (and one per finding kind); the last row is the total. Classes are the
    given labels' (the ones DBSCAN ran in); ``relabelled`` counts samples a reviewer gave
    another label.
    """
    # One bincount per count: a mask per class cost 2.8 s at 1,000 classes of 1.28M.
    overridden = (decisions.reason == "override_keep") | (decisions.reason == "override_drop")
    c = len(samples.classes)

    def per_class(weights: np.ndarray | None = None) -> np.ndarray:
        counts = np.bincount(samples.labels, weights, minlength=c)
        return np.append(counts, counts.sum()).astype(np.int64)

    columns = {"size": per_class(), "flagged": per_class(decisions.flagged),
               "overridden": per_class(overridden),
               "relabelled": per_class(decisions.reason == "relabel"),
               "kept": per_class(decisions.kept)}
    columns["proposed"] = per_class(np.zeros(len(samples), bool))
    if findings:
        for kind in kinds():
            table = findings.get(kind.name)
            if kind.name != "label" and table is not None and len(table) == len(samples):
                columns[kind.name] = per_class(kind.current(table))
        view = View(samples.paths, samples.classes, samples.labels, (), decisions.flagged,
                    findings)
        words = sample_decisions(decisions.kept, decisions.reason, marks(findings, view))
        columns["proposed"] = per_class(words == PROPOSED)
    rows = []
    for k, name in enumerate([*samples.classes, "total"]):
        size, kept = int(columns["size"][k]), int(columns["kept"][k])
        rows.append({"class": name, **{key: int(v[k]) for key, v in columns.items()},
                     "reduction_pct": round(100.0 * (size - kept) / size, 2) if size else 0.0})
    return rows


def format_table(rows: list[dict], params: dict[str, tuple[float, int]] | None = None) -> str:
    """Fixed-width text rendering of :func:`summary_rows`; with ``params`` (class name →
    (eps, min_samples)) each class row also shows its DBSCAN parameters."""
    extra = f"{'eps':>10}{'min_samples':>13}" if params is not None else ""
    head = (f"{'class':<14}{extra}{'size':>8}{'flagged':>9}{'overridden':>12}"
            f"{'relabelled':>12}{'kept':>8}{'reduction':>11}")
    lines = [head, "-" * len(head)]
    for r in rows:
        cols = ""
        if params is not None:
            eps, ms = params.get(r["class"], (None, None))
            cols = f"{eps:>10.4g}{ms:>13}" if eps is not None else f"{'':>10}{'':>13}"
        lines.append(f"{r['class'][:14]:<14}{cols}{r['size']:>8}{r['flagged']:>9}"
                     f"{r['overridden']:>12}{r['relabelled']:>12}{r['kept']:>8}"
                     f"{r['reduction_pct']:>10.2f}%")
    return "\n".join(lines)
