"""``curator findings``: counts per kind and the top items with their why-lines."""

from __future__ import annotations

import numpy as np

from worker.pipeline.curation.snapshot import current_snapshot
from worker.pipeline.findings.kind_registry import get_kind, kinds
from worker.pipeline.findings.step import DROPPED, PROPOSED, marks, sample_decisions
from worker.pipeline.findings.testsplit import read_test_paths
from worker.pipeline.storage.rundir import RunDir


def findings_report(run: RunDir, kind: str | None = None, top: int = 10) -> dict:
    """Every kind (or ``kind``) at the run's current state.

    Returns
    -------
    dict with ``run`` and ``kinds``: per kind its ``name``, ``title``, ``decision``,
    ``advice``, ``count`` (marked now), ``info`` (cut, scale…) and ``top``: the ``top``
    marked samples by score, each ``{sample, path, label, score, related, kept, decision,
    why}``; ``dropped`` and ``proposed``: how many of its marks are dropped or proposed now
    (step.py ``sample_decisions``).
    """
    snap = current_snapshot(run)
    view = snap.view(read_test_paths(run))
    marked = marks(snap.findings, view)
    decision = sample_decisions(snap.decisions.kept, snap.decisions.reason, marked)
    chosen = [get_kind(kind)] if kind else kinds()
    out = []
    for k in chosen:
        table, m = snap.findings[k.name], marked[k.name]
        idx = np.flatnonzero(m)
        idx = idx[np.argsort(-table.score[idx], kind="stable")][:top]
        out.append({
            "name": k.name, "title": k.title, "decision": k.decision, "advice": k.advice,
            "count": int(m.sum()), "info": table.info,
            "dropped": int((m & (decision == DROPPED)).sum()),
            "proposed": int((m & (decision == PROPOSED)).sum()),
            "top": [{"sample": int(i), "path": snap.samples.paths[i],
                     "label": snap.samples.classes[int(snap.samples.labels[i])],
                     "score": round(float(table.score[i]), 4),
                     "related": int(table.related[i]), "kept": bool(snap.decisions.kept[i]),
                     "decision": str(decision[i]),
                     "why": k.why(table, int(i), view)} for i in idx.tolist()]})
    return {"run": run.run_id, "n_samples": len(snap.samples), "kinds": out}


def _note(info: dict) -> str:
    """A kind's note on its run, or why it looked at nothing (``skipped``)."""
    if info.get("skipped"):
        return f" (skipped: {info['skipped']})"
    return f" ({info['note']})" if info.get("note") else ""


def counts_line(run: RunDir) -> str:
    """One line of counts per kind: 'findings: label 188 · duplicate 3 · …'."""
    report = findings_report(run, top=0)
    return "findings: " + " · ".join(f"{k['name']} {k['count']}{_proposed(k)}{_note(k['info'])}"
                                     for k in report["kinds"])


def _proposed(kind: dict) -> str:
    return f" ({kind['proposed']} proposed)" if kind["proposed"] else ""


def format_findings(report: dict) -> str:
    """Text of :func:`findings_report`."""
    lines = [f"{report['run']}: {report['n_samples']} samples"]
    for k in report["kinds"]:
        info = k["info"]
        cut = info.get("threshold")
        cut_text = f", cut {cut:g}" if isinstance(cut, int | float) else ""
        if "pixel_cut" in info:  # copies: the pixel match used, or features alone
            cut_text = f", pixel match ≥ {info['pixel_cut']:.3g}" \
                if info["pixel_cut"] is not None else ", feature distance ≤ 0.3× the typical " \
                "(no images)"
        if isinstance(info.get("drop_cut"), int | float):
            cut_text += f", dropped from {info['drop_cut']:.3g}"
        lines += ["", f"{k['name']} ({k['title']}): {k['count']} marked: {k['dropped']} dropped, "
                      f"{k['proposed']} proposed{cut_text}{_note(k['info'])}"]
        if k["advice"]:
            lines.append(f"  what to do: {k['advice']}")
        for item in k["top"]:
            lines.append(f"  #{item['sample']:<7} {item['label'][:12]:<12} "
                         f"{item['score']:>7.3f} {item['decision']:<8} {item['path']}")
            lines.append(f"           {item['why']}")
    return "\n".join(lines)
