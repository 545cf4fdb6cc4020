"""A run's curation state: store parameters + embedding + overrides → decisions.

This is the one place that turns what is stored into what each sample's fate is; the CLI,
export and evaluation call :func:`current_decisions`; the app (app/run_data.py) reads the same
store through :func:`read_curation` and keeps what it derives per store revision.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from worker.pipeline.curation.rule_evidence import (
    cut_rule_inputs,
    load_agreement,
    load_evidence,
    members_of,
    rule_inputs,
)
from worker.pipeline.errors import InputError
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
    DEFAULT_RULE,
    Decisions,
    class_members,
    cluster_all,
    decide,
)
from worker.pipeline.storage.curation_store import open_store
from worker.pipeline.storage.rundir import RunDir
from worker.pipeline.storage.sample_table import SampleTable


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
                     | None = None, stored: StoredCuration | None = None
                     ) -> CurationSnapshot:
    """Decisions for every sample from one read of the store: an export's ``params.json``
    and its manifest, or an evaluation's figures, describe exactly the same state.

    ``recorded``: clusters (N,) and the parameters they were made at, when the caller has
    just computed them; by default ``clusters.npy`` (:func:`recorded_clusters`).
    ``stored``: the curation to resolve, when the caller read it already (a version's
    state: worker/pipeline/curation/versions.py); by default the store's, read now."""
    samples = run.read_samples()
    if stored is None:
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
