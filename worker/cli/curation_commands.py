"""override, relabel, params, history, undo: curation from a shell."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from worker.cli.arguments import Add, rundir
from worker.cli.text_tables import format_rows, format_table

# Only light modules at the top: `curator --help` must not import torch, numpy or sklearn
# (each command imports what it needs when it runs).
from worker.pipeline.errors import InputError
from worker.pipeline.number_params import cli_type


def cmd_params(a: argparse.Namespace) -> None:
    from worker.pipeline.curation.snapshot import current_decisions, summary_rows

    samples, decisions, params = current_decisions(rundir(a.run).require())
    by_name = {samples.classes[c]: (float(eps), int(ms)) for c, (eps, ms) in params.items()}
    rows = summary_rows(samples, decisions)
    if a.json:
        eps_ms = {name: {"eps": e, "min_samples": m} for name, (e, m) in by_name.items()}
        print(json.dumps([{**r, **eps_ms.get(r["class"], {})} for r in rows], indent=2))
    else:
        print(format_table(rows, by_name))


def cmd_undo(a: argparse.Namespace) -> None:
    from worker.pipeline.storage.curation_store import open_store

    done = open_store(rundir(a.run)).undo_or_refuse(redo=a.redo)  # nothing to do: refused
    print(f"{'redid' if a.redo else 'undid'}: {done}")


def cmd_history(a: argparse.Namespace) -> None:
    from worker.pipeline.storage.decision_log import RUN_COLUMNS, SAMPLE_COLUMNS, history_rows

    rows = history_rows(rundir(a.run).require(), a.sample, a.limit)
    if a.json:
        print(json.dumps(rows, indent=2))
    elif not rows:
        print("no decisions yet" if a.sample is None else f"sample {a.sample}: no decisions")
    else:
        print(format_rows(rows, RUN_COLUMNS if a.sample is None else SAMPLE_COLUMNS))


def cmd_override(a: argparse.Namespace) -> None:
    from worker.pipeline.storage.curation_store import open_store

    decision = None if a.decision == "clear" else a.decision
    run = rundir(a.run).require()
    n = open_store(run).set_overrides(a.samples, decision,
                                      n_samples=len(run.read_samples()))
    print(f"{n} sample(s) changed")


def cmd_relabel(a: argparse.Namespace) -> None:
    from worker.pipeline.curation.snapshot import current_decisions
    from worker.pipeline.storage.curation_store import open_store

    run = rundir(a.run).require()
    samples = run.read_samples()
    if a.label != "clear" and a.label not in samples.classes:
        raise InputError(f"no class {a.label!r} in this run: use one of "
                         f"{', '.join(samples.classes)} (or 'clear')")
    code = None if a.label == "clear" else samples.classes.index(a.label)
    n = open_store(run).set_relabels(a.samples, code, f"relabel {len(a.samples)} to {a.label}",
                                     n_samples=len(samples), n_classes=len(samples.classes))
    flagged = current_decisions(run)[1].flagged
    for i in a.samples[:20]:  # what changed, so a wrong index shows at once
        given = samples.classes[samples.labels[i]]
        print(f"sample {i}: {given} → {given if code is None else a.label}"
              + (" (its label again)" if code is None else ""))
        if code is not None and not flagged[i]:
            print(f"warning: sample {i} was not flagged (its label {given} looked right): "
                  f"check the index; `curator undo {a.run}` takes this back", file=sys.stderr)
    print(f"{n} sample(s) changed")


def register(add: Add) -> None:
    """override, relabel, params, history, undo: curation from a shell."""
    sp = add("override", cmd_override, "force samples to be kept or dropped")
    sp.add_argument("run", type=Path)
    sp.add_argument("decision", choices=["keep", "drop", "clear"])
    sp.add_argument("samples", type=int, nargs="+", metavar="INDEX")

    sp = add("relabel", cmd_relabel,
             "give samples a corrected label (exports and retraining of the filtered subset "
             "use it); 'clear' removes it")
    sp.add_argument("run", type=Path)
    sp.add_argument("label", metavar="CLASS", help="a class name of the run, or clear")
    sp.add_argument("samples", type=int, nargs="+", metavar="INDEX")

    sp = add("params", cmd_params,
             "each class's eps and min_samples, with its size and flagged/kept counts")
    sp.add_argument("run", type=Path)
    sp.add_argument("--json", action="store_true", help="one JSON object per class")

    sp = add("history", cmd_history, "who decided what and when: the run's last changes, or "
                                     "every decision on one sample (--sample)")
    sp.add_argument("run", type=Path)
    sp.add_argument("--sample", type=cli_type("history_sample"), metavar="INDEX",
                    help="every decision on this sample, oldest first")
    sp.add_argument("--limit", type=cli_type("history_limit"), default=50, metavar="N",
                    help="the run's last N changes (default 50)")
    sp.add_argument("--json", action="store_true")

    sp = add("undo", cmd_undo, "undo the last curation change (--redo to redo)")
    sp.add_argument("run", type=Path)
    sp.add_argument("--redo", action="store_true")
