"""How a run shows itself: ``repr`` in a shell, ``_repr_html_`` in Jupyter.

Both show the run's name and folder, its size, the feature-quality gauge
(:func:`~worker.pipeline.curation.rule_evidence.run_gauge`) and how many samples each finding
kind marks now (:func:`~worker.pipeline.curation.findings_report.findings_report`, as ``curator
findings`` counts them). Everything that comes from the user (the folder, class and kind
notes) is escaped in the HTML.
"""

from __future__ import annotations

from html import escape

from worker.pipeline.curation.findings_report import findings_report
from worker.pipeline.curation.rule_evidence import run_gauge
from worker.pipeline.errors import InputError
from worker.pipeline.storage.rundir import RunDir


def describe(run: RunDir) -> dict:
    """What a run's display shows.

    Returns
    -------
    dict with ``name``, ``path``, ``n_samples``, ``n_classes``, ``gauge`` (a
    :class:`~worker.pipeline.curation.gauge.Gauge` or None), ``kinds`` (per kind: name,
    title, count, decision, note) and ``error`` (why the findings cannot be read yet, or
    None).
    """
    meta = run.read_meta()
    out = {"name": run.run_id, "path": str(run.path), "n_samples": meta.get("n_samples", 0),
           "n_classes": len(meta.get("classes") or []), "gauge": None, "kinds": [],
           "error": None}
    try:
        out["gauge"] = run_gauge(run)
        out["kinds"] = [{"name": k["name"], "title": k["title"], "count": k["count"],
                         "decision": k["decision"], "note": k["info"].get("note") or ""}
                        for k in findings_report(run, top=0)["kinds"]]
    except InputError as exc:  # not clustered yet, or a damaged file: say so, do not fail
        out["error"] = str(exc)
    return out


def repr_text(run: RunDir) -> str:
    """Three lines: the run, its gauge, its findings."""
    d = describe(run)
    lines = [f"<tsne_curator.Run {d['name']!r}: {d['n_samples']:,} samples, "
             f"{d['n_classes']} classes, at {d['path']}>"]
    if d["gauge"] is not None:
        lines.append(d["gauge"].line)
    if d["kinds"]:
        lines.append("findings: " + " · ".join(
            f"{k['name']} {k['count']}" + (f" ({k['note']})" if k["note"] else "")
            for k in d["kinds"]))
    if d["error"]:
        lines.append(f"not ready: {d['error']}")
    return "\n".join(lines)


def repr_html(run: RunDir) -> str:
    """The same as :func:`repr_text`, as a small HTML block with a table of the kinds."""
    d = describe(run)
    parts = [f"<div><b>tsne_curator.Run</b> <code>{escape(d['name'])}</code>: "
             f"{d['n_samples']:,} samples, {d['n_classes']} classes "
             f"<small>({escape(d['path'])})</small>"]
    if d["gauge"] is not None:
        g = d["gauge"]
        parts.append(f"<br>feature quality <b>{g.value:.2f}</b> ({escape(g.level)}): "
                     f"{escape(g.advice)}")
    if d["kinds"]:
        rows = "".join(
            f"<tr><td>{escape(k['name'])}</td><td>{escape(k['title'])}</td>"
            f"<td style='text-align:right'>{k['count']:,}</td>"
            f"<td>{escape(k['decision'])}</td><td>{escape(k['note'])}</td></tr>"
            for k in d["kinds"])
        parts.append("<table><thead><tr><th>kind</th><th>finding</th><th>marked</th>"
                     f"<th>default</th><th>note</th></tr></thead><tbody>{rows}</tbody>"
                     "</table>")
    if d["error"]:
        parts.append(f"<br>not ready: {escape(d['error'])}")
    return "".join(parts) + "</div>"
