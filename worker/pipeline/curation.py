"""A run's curation state: store parameters + embedding + overrides → decisions.

This is the one place that turns what is stored into what each sample's fate is; the CLI,
export and evaluation call :func:`current_decisions`; the app (app/data.py) reads the same
store through :func:`read_curation` and clusters with its cached per-class indexes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .clustering import (
    DEFAULT_MIN_SAMPLES,
    DEFAULT_RULE,
    Decisions,
    auto_params,
    check_rule,
    cluster_all,
    decide,
    feature_neighbours,
    knn_agreement,
)
from .datasets import SampleTable
from .errors import InputError
from .rundir import RunDir, save_npy
from .store import CurationStore


def open_store(run: RunDir) -> CurationStore:
    return CurationStore(run.require().store)


def agreement_path(run: RunDir) -> Path:
    return run.path / "knn_agreement.npy"


def neighbours_path(run: RunDir) -> Path:
    return run.path / "neighbours.npy"


def class_code(samples: SampleTable, name: str) -> int:
    """Class code for a class name (or a code given as text)."""
    if name in samples.classes:
        return samples.classes.index(name)
    raise InputError(f"unknown class {name!r}: classes are {', '.join(samples.classes)}")


def cluster_step(run: RunDir, eps: float | None = None, min_samples: int | None = None,
                 classes: list[str] | None = None, rule: str | None = None,
                 auto: bool = False) -> Decisions:
    """Set DBSCAN parameters and write ``clusters.npy`` and ``knn_agreement.npy``.

    Classes without stored parameters get automatic ones. ``eps``/``min_samples`` apply to
    ``classes`` (all when None); a missing eps with ``auto=True`` re-derives it from the
    k-distance knee at the (new) min_samples. Changes go through the store's history, so
    they can be undone like any edit made in the app.
    """
    samples = run.read_samples()
    embedding = run.load_embedding()
    store = open_store(run)
    if rule is not None:
        store.set_setting("rule", check_rule(rule))
    n_classes = len(samples.classes)
    stored = store.class_params()
    ms_default = min_samples if min_samples is not None else DEFAULT_MIN_SAMPLES
    targets = list(range(n_classes)) if not classes else [class_code(samples, c) for c in classes]
    missing = [c for c in range(n_classes) if c not in stored]
    if missing:
        fresh = auto_params(embedding, samples.labels, n_classes, ms_default)
        store.set_class_params({c: fresh[c] for c in missing}, "automatic parameters")
        stored = store.class_params()
    if eps is not None or min_samples is not None or auto:
        new = {}
        for c in targets:
            ms = min_samples if min_samples is not None else stored[c][1]
            e = eps
            if e is None:
                e = auto_params(embedding, samples.labels, n_classes, ms)[c][0] if auto \
                    else stored[c][0]
            new[c] = (e, ms)
        store.set_class_params(new, "cluster: set parameters")
    if not agreement_path(run).is_file() or not neighbours_path(run).is_file():
        neighbours = feature_neighbours(run.load_features())
        save_npy(neighbours_path(run), neighbours)
        save_npy(agreement_path(run), knn_agreement(neighbours, samples.labels))
    _, decisions, params = current_decisions(run)
    save_npy(run.path / "clusters.npy", decisions.clusters)
    run.mark_step("cluster", rule=store.setting("rule", DEFAULT_RULE),
                  params={samples.classes[c]: list(p) for c, p in params.items()})
    return decisions


@dataclass(frozen=True)
class StoredCuration:
    """What the store says now: per-class parameters, overrides, rule, and the revision
    all of them belong to."""

    params: dict[int, tuple[float, int]]
    overrides: dict[int, str]
    rule: str
    revision: int


def read_curation(run: RunDir, n_classes: int) -> StoredCuration:
    """Read the store in one transaction (:meth:`CurationStore.snapshot`), so the app can
    cache figures under the revision it read.

    Raises :class:`InputError` when some class has no parameters yet.
    """
    params, overrides, settings, revision = open_store(run).snapshot()
    if any(c not in params for c in range(n_classes)):
        raise InputError(f"{run.path} has no clustering yet: run 'curator cluster {run.path}'")
    return StoredCuration(params, overrides, settings.get("rule") or DEFAULT_RULE, revision)


def load_agreement(run: RunDir) -> np.ndarray | None:
    """kNN label agreement, shape (N,) float32, or None for runs clustered before it."""
    return np.load(agreement_path(run)) if agreement_path(run).is_file() else None


def current_decisions(run: RunDir) -> tuple[SampleTable, Decisions, dict[int, tuple[float, int]]]:
    """The samples, what happens to each, and the per-class parameters, as stored now."""
    samples = run.read_samples()
    stored = read_curation(run, len(samples.classes))
    clusters = cluster_all(run.load_embedding(), samples.labels, stored.params)
    decisions = decide(clusters, load_agreement(run), stored.overrides, stored.rule)
    return samples, decisions, stored.params


def summary_rows(samples: SampleTable, decisions: Decisions) -> list[dict]:
    """Per-class and total counts in the paper's Table I format.

    Returns
    -------
    list of dict with keys class, size, flagged, overridden, kept, reduction_pct; the
    last row is the total.
    """
    overridden = np.char.startswith(decisions.reason.astype(str), "override")
    masks = [(name, samples.labels == c) for c, name in enumerate(samples.classes)]
    masks.append(("total", np.ones(len(samples), dtype=bool)))
    rows = []
    for name, m in masks:
        size = int(m.sum())
        kept = int(decisions.kept[m].sum())
        rows.append({"class": name, "size": size, "flagged": int(decisions.flagged[m].sum()),
                     "overridden": int(overridden[m].sum()), "kept": kept,
                     "reduction_pct": round(100.0 * (size - kept) / size, 2) if size else 0.0})
    return rows


def format_table(rows: list[dict]) -> str:
    """Fixed-width text rendering of :func:`summary_rows`."""
    head = f"{'class':<14}{'size':>8}{'flagged':>9}{'overridden':>12}{'kept':>8}{'reduction':>11}"
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['class'][:14]:<14}{r['size']:>8}{r['flagged']:>9}{r['overridden']:>12}"
                     f"{r['kept']:>8}{r['reduction_pct']:>10.2f}%")
    return "\n".join(lines)
