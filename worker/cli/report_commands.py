"""findings, evaluate, export: what a run holds, scored, and written out."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from worker.cli.arguments import Add, add_options, finding_args, rundir, thresholds
from worker.cli.text_tables import format_rows
from worker.option_table import EXPORT_OWN, RUN, SIMILAR_OWN
from worker.pipeline.number_params import cli_type

# Only light modules at the top: `curator --help` must not import torch, numpy or sklearn
# (each command imports what it needs when it runs).
from worker.pipeline.progress import TqdmProgress


def cmd_findings(a: argparse.Namespace) -> None:
    from worker.pipeline.curation.findings_report import findings_report, format_findings
    from worker.pipeline.findings import ensure_findings, get_kind

    run = rundir(a.run).require()
    if a.kind:
        get_kind(a.kind)  # an unknown kind is one line before any work
    bar = TqdmProgress()
    try:
        ensure_findings(run, thresholds(a), redo=a.redo, progress=bar)
    finally:
        bar.close()
    report = findings_report(run, a.kind, a.top)
    print(json.dumps(report, indent=2) if a.json else format_findings(report))


def cmd_similar(a: argparse.Namespace) -> None:
    from worker.pipeline.curation.similar_rows import SIMILAR_COLUMNS, similar_rows
    from worker.pipeline.map.image_query import read_query_file

    run = rundir(a.run).require()
    # INDEX|FILE: a whole number is a sample (worker.option_table.sample_or_file)
    query = read_query_file(a.index) if isinstance(a.index, Path) else a.index
    rows = similar_rows(run, query, a.k)
    if a.json:
        print(json.dumps(rows, indent=2))
        return
    print(format_rows(rows, SIMILAR_COLUMNS))


def cmd_export(a: argparse.Namespace) -> None:
    from worker.jobs.execution import run_here
    from worker.jobs.job_params import ExportParams

    run = rundir(a.run).require()
    bar = TqdmProgress()
    try:  # a job of this process, in the run's job store: the Jobs page lists it
        dest = run.path / run_here(run, "export", ExportParams(a.dest, a.format, a.version),
                                   bar)["export"]
    finally:
        bar.close()
    print(f"export: {dest}")


def cmd_evaluate(a: argparse.Namespace) -> None:
    from worker.pipeline.evaluation.run_report import evaluate, format_report

    result = evaluate(rundir(a.run).require(), with_cleanlab=not a.no_cleanlab)
    print(json.dumps(result, indent=2) if a.json else format_report(result))


def register(add: Add) -> None:
    """similar, export and evaluate."""
    sp = add("similar", cmd_similar, "list a sample's nearest samples across every class, "
                                      "or an image file's")
    add_options(sp, (RUN, *SIMILAR_OWN))

    sp = add("export", cmd_export, "write the kept subset to <run>/exports/NAME")
    add_options(sp, (RUN, *EXPORT_OWN))

    sp = add("findings", cmd_findings,
             "every kind of finding (wrong labels, near-duplicates, leaks into the test "
             "split, outliers): counts and the top items with why")
    sp.add_argument("run", type=Path)
    sp.add_argument("--kind", metavar="KIND", help="only this kind (label, duplicate, leak, "
                                                   "outlier)")
    sp.add_argument("--top", type=cli_type("top"), default=10, metavar="N",
                    help="items listed per kind (default 10)")
    sp.add_argument("--redo", action="store_true", help="compute every kind again")
    sp.add_argument("--json", action="store_true")
    finding_args(sp)

    sp = add("evaluate", cmd_evaluate,
             "estimated noise per class; precision/recall/F1 against true labels, with cleanlab")
    sp.add_argument("run", type=Path)
    sp.add_argument("--json", action="store_true")
    sp.add_argument("--no-cleanlab", action="store_true", help="skip the cleanlab baseline")
