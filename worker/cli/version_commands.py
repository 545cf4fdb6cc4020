"""version, versions, diff: named, immutable curation states and how two of them differ."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from worker.cli.arguments import Add, rundir
from worker.cli.text_tables import format_rows

# Only light modules at the top: `curator --help` must not import torch, numpy or sklearn
# (each command imports what it needs when it runs).
from worker.pipeline.number_params import cli_type
from worker.settings import load_settings

# What `curator versions` shows per version (--json gives every count).
SHOWN = ("name", "created_at", "author", "store_revision", "n_samples", "n_kept", "dropped",
         "relabelled", "decisions", "findings", "note")
# Diff rows printed without --limit (--json prints them all).
TEXT_ROWS = 50


def _counts(counts: dict[str, int]) -> str:
    """'dropped 188 · proposed 10' (zeros left out)."""
    return " · ".join(f"{k} {n}" for k, n in counts.items() if n) or "-"


def cmd_version(a: argparse.Namespace) -> None:
    from worker.pipeline.curation.versions import save_version

    settings = load_settings()  # before any work: a bad CURATOR_* variable is one line
    v = save_version(rundir(a.run).require(), a.name, a.note or "", settings.min_free_mb)
    print(f"version {v['name']} saved: {v['n_kept']} of {v['n_samples']} samples kept "
          f"({v['dropped']} dropped, {v['relabelled']} relabelled), store revision "
          f"{v['store_revision']}, by {v['author']}")


def cmd_versions(a: argparse.Namespace) -> None:
    from worker.pipeline.curation.versions import list_versions

    rows = list_versions(rundir(a.run).require())
    if a.json:
        print(json.dumps(rows, indent=2))
    elif not rows:
        print(f"no versions yet: save one with 'curator version {a.run} NAME'")
    else:
        print(format_rows([{**r, "decisions": _counts(r["decisions"]),
                            "findings": _counts(r["findings"])} for r in rows], SHOWN))


def cmd_diff(a: argparse.Namespace) -> None:
    from worker.pipeline.curation.version_diff import (
        DIFF_COLUMNS,
        SUMMARY_COLUMNS,
        diff_summary,
        diff_versions,
    )

    rows = diff_versions(rundir(a.run).require(), a.a, a.b)
    summary = diff_summary(rows)
    shown = rows[:a.limit] if a.limit is not None else rows if a.json else rows[:TEXT_ROWS]
    if a.json:
        print(json.dumps({"a": a.a, "b": a.b, "n_rows": len(rows), "summary": summary,
                          "rows": shown}, indent=2))
        return
    if not rows:
        print(f"{a.a} → {a.b}: no sample changed")
        return
    print(f"{a.a} → {a.b}: {len(rows)} change(s)")
    print(format_rows([{**s, "decided_by": s["decided_by"] or "-"} for s in summary],
                      SUMMARY_COLUMNS))
    print()
    print(format_rows([{**r, "decided_by": r["decided_by"] or "-"} for r in shown],
                      DIFF_COLUMNS))
    if len(shown) < len(rows):
        print(f"… {len(rows) - len(shown)} more (--limit N, or --json for all)")


def register(add: Add) -> None:
    """version, versions, diff."""
    sp = add("version", cmd_version,
             "freeze the run's curation as it is now under a name (a version never changes)")
    sp.add_argument("run", type=Path)
    sp.add_argument("name", metavar="NAME",
                    help="letters, digits, '.', '_' and '-', unique in the run")
    sp.add_argument("--note", metavar="TEXT", help="why it was saved")

    sp = add("versions", cmd_versions,
             "the run's versions: who saved each when, and what it keeps and drops")
    sp.add_argument("run", type=Path)
    sp.add_argument("--json", action="store_true", help="every count, as JSON")

    sp = add("diff", cmd_diff,
             "the samples dropped, kept back or relabelled from version A to version B "
             "('current': the live curation), counted by kind and author, then listed")
    sp.add_argument("run", type=Path)
    sp.add_argument("a", metavar="A", help="a version's name, or current")
    sp.add_argument("b", metavar="B", help="a version's name, or current")
    sp.add_argument("--limit", type=cli_type("history_limit"), metavar="N",
                    help=f"rows listed (default: {TEXT_ROWS}; with --json, all)")
    sp.add_argument("--json", action="store_true")
