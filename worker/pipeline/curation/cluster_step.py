"""The cluster step: DBSCAN's parameters per class, on the shared map, written through the
store's undo history, then ``clusters.npy`` and the rules' evidence; and a class's cut."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from worker.pipeline.curation.rule_evidence import ensure_evidence, evidence_paths
from worker.pipeline.curation.snapshot import current_decisions, recorded_clusters
from worker.pipeline.errors import InputError
from worker.pipeline.map.clustering import (
    DEFAULT_MIN_SAMPLES,
    DEFAULT_RULE,
    Decisions,
    check_rule,
    class_members,
    cluster_classes,
    fallback_eps,
    map_classes,
)
from worker.pipeline.map.dbscan import check_params
from worker.pipeline.storage.curation_store import PIPELINE_DESCRIPTION, CurationStore, open_store
from worker.pipeline.storage.rundir import RunDir, save_npy
from worker.pipeline.storage.sample_table import SampleTable


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
    store = open_store(run, create=True)
    if rule is not None:
        store.set_setting("rule", check_rule(rule))
    # Parameters are distances on one map: after a new embedding (other features, other
    # t-SNE settings) every class's eps is derived again, one undoable edit.
    on_map = _map_identity(run)
    stored = store.class_params() if store.setting("params_map") in (None, on_map) else {}
    plan = _plan(samples, stored, eps, min_samples, classes, auto)
    clusters, params = _cluster(run, samples, stored, plan)
    _store_params(store, params, plan)
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


@dataclass(frozen=True)
class _Plan:
    """What the cluster step sets: per class code, ``(eps, min_samples)`` where eps None
    means "automatic, at this min_samples" (``wanted``); ``missing``: the classes that had
    no parameters on this map."""

    wanted: dict[int, tuple[float | None, int]]
    missing: list[int]


def _plan(samples: SampleTable, stored: dict[int, tuple[float, int]], eps: float | None,
          min_samples: int | None, classes: list[str] | None, auto: bool) -> _Plan:
    """The parameters each class should get, checked before anything is stored."""
    n_classes = len(samples.classes)
    ms_default = min_samples if min_samples is not None else DEFAULT_MIN_SAMPLES
    targets = list(range(n_classes)) if not classes else [class_code(samples, c) for c in classes]
    if eps is not None or min_samples is not None:
        check_params(1.0 if eps is None else eps, ms_default,
                     largest=int(np.bincount(samples.labels, minlength=n_classes)[targets].max()))
    missing = [c for c in range(n_classes) if c not in stored]
    wanted: dict[int, tuple[float | None, int]] = dict.fromkeys(missing, (None, ms_default))
    if eps is not None or min_samples is not None or auto:
        for c in targets:
            ms = min_samples if min_samples is not None else stored.get(c, (0, ms_default))[1]
            e = eps if eps is not None else None if auto or c not in stored else stored[c][0]
            wanted[c] = (e, ms)
    return _Plan(wanted, missing)


def _cluster(run: RunDir, samples: SampleTable, stored: dict[int, tuple[float, int]],
             plan: _Plan) -> tuple[np.ndarray, dict[int, tuple[float, int]]]:
    """DBSCAN on the classes whose parameters change or whose recorded clusters are not of
    their stored ones; returns clusters (N,) int64 and every class's parameters."""
    embedding = run.load_embedding()
    recorded = recorded_clusters(run, samples)
    work = [(c, *p) for c, p in plan.wanted.items()] + [
        (c, *p) for c, p in stored.items()
        if c not in plan.wanted and (recorded is None or recorded[1].get(c) != p)]
    order, starts = class_members(samples.labels, len(samples.classes))
    done = map_classes(embedding, order, starts, work)
    # Classes with no automatic eps (too few points, or all at one spot) take the median of
    # the others', as before; they have no core point at it unless all points coincide.
    fallback = fallback_eps([e for c, (e, _) in done.items() if c in plan.wanted])
    clusters = recorded[0].copy() if recorded is not None else \
        np.full(len(samples), -1, dtype=np.int64)
    params = dict(stored)
    for c, (e, labels) in done.items():
        ms = plan.wanted[c][1] if c in plan.wanted else stored[c][1]
        if e is None:
            e = fallback
            labels = cluster_classes(embedding, order, starts, [(c, e, ms)])[c][1]
        params[c] = (float(e), int(ms))
        clusters[order[starts[c]:starts[c + 1]]] = labels
    return clusters, params


def _store_params(store: CurationStore, params: dict[int, tuple[float, int]],
                  plan: _Plan) -> None:
    """The parameters of classes that had none on this map are the pipeline's own step,
    given values included (curator pipeline --eps): undo passes it by, for a class
    without parameters has no clustering (curation_store, "History semantics"). Changed
    ones are one undoable edit."""
    if plan.missing:
        store.set_class_params({c: params[c] for c in plan.missing}, PIPELINE_DESCRIPTION,
                               pipeline=True)
    if set(plan.wanted) - set(plan.missing):
        store.set_class_params({c: params[c] for c in plan.wanted if c not in plan.missing},
                               "cluster: set parameters")


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
