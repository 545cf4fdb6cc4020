"""A sample's nearest samples, or an image file's, as the review list shows a row: class,
the label the evidence suggests, the findings that mark it and its fate now, from one
snapshot of the run. ``curator similar`` and ``run.similar`` print and return these rows."""

from __future__ import annotations

from worker.pipeline.curation.rule_evidence import load_evidence
from worker.pipeline.curation.snapshot import current_snapshot
from worker.pipeline.findings import marks, sample_decisions
from worker.pipeline.findings.testsplit import read_test_paths
from worker.pipeline.map.image_query import nearest_to_image
from worker.pipeline.map.similar import nearest_samples
from worker.pipeline.storage.rundir import RunDir

SIMILAR_COLUMNS = ("rank", "index", "distance", "path", "label", "suggested_label",
                   "findings", "decision")


def similar_rows(run: RunDir, query: int | bytes, k: int) -> list[dict]:
    """The ``k`` samples nearest ``query``, nearest first (:data:`SIMILAR_COLUMNS`):
    ``label`` the given class, ``suggested_label`` the class the label evidence suggests
    where it flags a label issue ("" elsewhere), ``findings`` the kinds that mark the
    sample now (comma-separated), ``decision`` kept, proposed or dropped.

    ``query`` is a sample index (the sample itself is left out:
    :func:`~worker.pipeline.map.similar.nearest_samples`) or an image file's contents
    (through the run's own network and PCA: :func:`~worker.pipeline.map.image_query.
    nearest_to_image`; a sample's own file comes first, at distance 0)."""
    indices, distances = nearest_to_image(run, bytes(query), k) \
        if isinstance(query, bytes | bytearray | memoryview) else \
        nearest_samples(run, query, k)
    snap = current_snapshot(run)
    marked = marks(snap.findings, snap.view(read_test_paths(run)))
    words = sample_decisions(snap.decisions.kept, snap.decisions.reason, marked)
    evidence = load_evidence(run)
    classes = snap.samples.classes

    def suggested(i: int) -> str:
        if evidence is None or not evidence["issue"][i]:
            return ""
        return classes[int(evidence["suggested"][i])]

    return [{"rank": rank, "index": int(i), "distance": round(float(d), 4),
             "path": snap.samples.paths[i], "label": classes[int(snap.labels[i])],
             "suggested_label": suggested(i),
             "findings": ",".join(name for name, m in marked.items() if m[i]),
             "decision": str(words[i])}
            for rank, (i, d) in enumerate(zip(indices.tolist(), distances.tolist(),
                                              strict=True), start=1)]
