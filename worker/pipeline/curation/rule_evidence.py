"""The per-sample files the rules read besides DBSCAN: the feature neighbours, kNN label
agreement and the adaptive rule's label evidence (``score``, ``suggested``, ``issue``,
``suspect``), each written once per input (:func:`ensure_evidence`) and read back here."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from worker.pipeline.curation.gauge import Gauge, judge, neighbour_agreement
from worker.pipeline.map.clustering import RuleInputs, cut_bands, feature_neighbours, knn_agreement
from worker.pipeline.map.embedding import run_pca
from worker.pipeline.map.evidence import DENSE_MAX, EVIDENCE_VERSION, knn_evidence, label_evidence
from worker.pipeline.storage.rundir import RunDir, save_npy
from worker.pipeline.storage.sample_table import SampleTable


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
    """The run's feature-quality gauge (worker.pipeline.curation.gauge), or None before the
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
