"""Per-class DBSCAN on the shared embedding, automatic eps, and flagging rules.

Label conventions: cluster ids are per class, 0, 1, …; noise = -1.

Rules for which points are *flagged* (proposed for removal):

- ``adaptive`` (default): confident learning, fed with iterated neighbour-vote and
  cross-validated probabilities (:mod:`.evidence`), estimates how many labels are wrong,
  twice; the samples whose labels the evidence supports least, as many as the smaller
  estimate, are flagged, and those up to the larger one are flagged when DBSCAN calls them
  noise in their class. How many are flagged follows the noise rate estimated from the
  data; DBSCAN on the map decides the band between the two estimates.
- ``dbscan`` (the paper): every DBSCAN noise point.
- ``dbscan-knn`` (the previous default): DBSCAN noise whose label most of its ``K_AGREE`` nearest
  neighbours in feature space do not share, plus any point whose label almost none of them
  share (fewer than ``AGREE_STRONG``). Isolated but correctly labelled points (rare poses,
  odd crops) stay; mislabeled points, which sit among another class, go, even when enough
  of them gather to form a small DBSCAN cluster of their own (common with human label
  noise, where the same confusion repeats). Figures in docs/benchmarks.md.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree

from worker.pipeline.choices import DEFAULT_RULE, RULES
from worker.pipeline.errors import InputError
from worker.pipeline.map.dbscan import check_params, dbscan_once
from worker.pipeline.map.embedding import pca_reduce
from worker.pipeline.map.evidence import K_EVIDENCE
from worker.pipeline.map.neighbours import exact_neighbours

DEFAULT_MIN_SAMPLES = 5
K_AGREE = 10
AGREE_MIN = 0.5  # noise is flagged when fewer than half of its neighbours agree
AGREE_STRONG = 0.2  # any point is flagged when fewer than 2 in 10 neighbours agree
FALLBACK_EPS = 1.0


def check_rule(rule: str) -> str:
    if rule not in RULES:
        raise InputError(f"unknown flagging rule {rule!r}: use one of {', '.join(RULES)}")
    return rule


def k_distances(points: np.ndarray, k: int) -> np.ndarray:
    """Distance from each point to its k-th nearest other point, shape (n,); needs n > k."""
    d, _ = cKDTree(points).query(points, k=k + 1)
    return np.asarray(d)[:, k] if k > 0 else np.zeros(len(points))


def auto_eps(points: np.ndarray, min_samples: int) -> float | None:
    """eps at the knee of the sorted k-distance curve (k = min_samples - 1), no labels used.

    The knee is the point of the normalised, ascending curve farthest below the chord from
    its first to its last point (the "Kneedle" construction): past it, distances grow fast,
    so those points sit apart from their class.

    Parameters
    ----------
    points : ndarray, shape (n, 2)

    Returns
    -------
    float or None
        None when the class is too small (n ≤ k) or all its points coincide.
    """
    check_params(1.0, min_samples)
    k = max(1, min_samples - 1)
    if len(points) <= k:
        return None
    kd = np.sort(k_distances(np.asarray(points, np.float64), k))
    span = kd[-1] - kd[0]
    if span <= 0:
        return float(kd[0]) if kd[0] > 0 else None
    x = np.linspace(0.0, 1.0, len(kd))
    eps = float(kd[int(np.argmax(x - (kd - kd[0]) / span))])
    return eps if eps > 0 else None


def auto_params(embedding: np.ndarray, labels: np.ndarray, n_classes: int,
                min_samples: int = DEFAULT_MIN_SAMPLES) -> dict[int, tuple[float, int]]:
    """Auto eps for every class; classes too small for a k-distance curve get the median
    eps of the others (they are all noise anyway, since no point can be core)."""
    order, starts = class_members(labels, n_classes)
    found = {c: auto_eps(embedding[order[starts[c]:starts[c + 1]]], min_samples)
             for c in range(n_classes)}
    fallback = fallback_eps(found.values())
    return {c: (e if e is not None else fallback, min_samples) for c, e in found.items()}


def fallback_eps(found: Iterable[float | None]) -> float:
    """eps for a class with no automatic one: the median of the automatic eps found for
    the others (FALLBACK_EPS when there are none)."""
    known = [e for e in found if e is not None]
    return float(np.median(known)) if known else FALLBACK_EPS


def feature_neighbours(features: np.ndarray, k: int = K_EVIDENCE) -> np.ndarray:
    """Each sample's k nearest other samples in feature space (PCA-50), nearest first.

    Returns
    -------
    ndarray of int64, shape (N, min(k, N-1))
    """
    if len(features) < 2:
        return np.empty((len(features), 0), dtype=np.int64)
    return exact_neighbours(pca_reduce(features, 50), k)[0]


def knn_agreement(neighbours: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Fraction of each sample's first ``K_AGREE`` neighbours (of shape (N, k)) that share
    its label.

    Returns
    -------
    ndarray of float32, shape (N,), in [0, 1]; 1 where there are no neighbours.
    """
    neighbours = neighbours[:, :K_AGREE]
    if neighbours.shape[1] == 0:
        return np.ones(len(labels), dtype=np.float32)
    return (labels[neighbours] == labels[:, None]).mean(axis=1).astype(np.float32)


def class_members(labels: np.ndarray, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """Samples grouped by class in one sort: class ``c``'s sample indices, ascending, are
    ``order[starts[c]:starts[c + 1]]``. A mask per class is O(N·C): seconds at 1,000
    classes of 1.28M.

    Returns
    -------
    order : ndarray of int64, shape (N,)
    starts : ndarray of int64, shape (n_classes + 1,)
    """
    order = np.argsort(labels, kind="stable").astype(np.int64)
    starts = np.searchsorted(labels[order], np.arange(n_classes + 1)).astype(np.int64)
    return order, starts


# One class's clustering work: (class code, eps or None for automatic, min_samples).
ClassWork = tuple[int, float | None, int]


def cluster_classes(embedding: np.ndarray, order: np.ndarray, starts: np.ndarray,
                    work: Iterable[ClassWork]) -> dict[int, tuple[float | None, np.ndarray]]:
    """Automatic eps where asked, then DBSCAN, for each class in ``work``: the unit that
    threads share out (:func:`map_classes`).

    Parameters
    ----------
    embedding : ndarray, shape (N, 2)
    order, starts : from :func:`class_members`

    Returns
    -------
    class code → (eps, labels of shape (n_c,)); eps is None where no automatic eps exists
    (too few points, or all at one spot): the caller picks a fallback and clusters those.
    """
    out = {}
    for code, eps, ms in work:
        pts = np.asarray(embedding[order[starts[code]:starts[code + 1]]], dtype=np.float64)
        if eps is None:
            eps = auto_eps(pts, ms)
        out[int(code)] = (eps, dbscan_once(pts, eps, ms) if eps is not None else None)
    return out


def map_classes(embedding: np.ndarray, order: np.ndarray, starts: np.ndarray,
                work: list[ClassWork]) -> dict[int, tuple[float | None, np.ndarray | None]]:
    """:func:`cluster_classes` shared over this machine's cores (KD-tree queries and Qhull
    release the GIL); the same result, in less time once there are dozens of classes."""
    threads = min(os.cpu_count() or 1, max(1, len(work) // 8))
    if threads == 1:
        return cluster_classes(embedding, order, starts, work)
    out: dict[int, tuple[float | None, np.ndarray | None]] = {}
    for part in _POOL.map(lambda w: cluster_classes(embedding, order, starts, w),
                          [work[i::threads] for i in range(threads)]):
        out.update(part)
    return out


_POOL = ThreadPoolExecutor(max_workers=os.cpu_count() or 1, thread_name_prefix="dbscan")


def cluster_all(embedding: np.ndarray, labels: np.ndarray,
                params: dict[int, tuple[float, int]],
                recorded: tuple[np.ndarray, dict[int, tuple[float, int]]] | None = None
                ) -> np.ndarray:
    """Per-class DBSCAN on the shared embedding.

    Parameters
    ----------
    embedding : ndarray, shape (N, 2)
    labels : ndarray of int, shape (N,)
    params : dict
        Class code → (eps, min_samples); every class present in ``labels`` needs one.

    ``recorded``: labels the cluster step saved (``clusters.npy``, shape (N,)) and the
    parameters each class had then; a class whose parameters are unchanged takes its
    labels from there instead of running DBSCAN again (at 1,000 classes of a 1.28M-point
    map that is minutes).

    Returns
    -------
    ndarray of int64, shape (N,): per-class cluster id, noise = -1.
    """
    out = np.full(len(labels), -1, dtype=np.int64)
    for eps, ms in params.values():
        check_params(eps, ms)
    present = np.unique(labels)
    for c in present:
        if int(c) not in params:
            raise InputError(f"no DBSCAN parameters for class {int(c)}")
    order, starts = class_members(labels, int(present.max()) + 1 if len(present) else 0)
    known, known_params = recorded if recorded is not None else (None, {})
    todo = []
    for c in present.tolist():
        members = order[starts[c]:starts[c + 1]]
        if known is not None and known_params.get(c) == params[c]:
            out[members] = known[members]  # DBSCAN of the same points at the same params
        else:
            todo.append((c, *params[c]))
    for c, (_, lab) in map_classes(embedding, order, starts, todo).items():
        out[order[starts[c]:starts[c + 1]]] = lab
    return out


# The reasons of a sample the rule alone decides: no finding kind drops it, nobody decided.
UNDECIDED_REASONS = ("cluster", "noise")


@dataclass
class Decisions:
    """What happens to each sample, all arrays shape (N,).

    ``reason`` is one of ``noise``, ``cluster``, ``relabel``, ``override_keep``,
    ``override_drop``, or the name of the finding kind whose default drops the sample
    (``duplicate``, ``leak``, ``outlier``).
    """

    clusters: np.ndarray
    flagged: np.ndarray
    kept: np.ndarray
    reason: np.ndarray


@dataclass(frozen=True)
class RuleInputs:
    """Per-sample evidence the rules read besides DBSCAN, each shape (N,) or None when the
    run was clustered before it existed.

    Attributes
    ----------
    agreement : float32, kNN label agreement (``dbscan-knn``).
    issue : bool, flagged whatever DBSCAN says (``adaptive``).
    suspect : bool, flagged if DBSCAN calls it noise (``adaptive``; a superset of issue).
    """

    agreement: np.ndarray | None = None
    issue: np.ndarray | None = None
    suspect: np.ndarray | None = None

    def take(self, idx: np.ndarray) -> RuleInputs:
        """The same inputs for the samples ``idx`` only."""
        return RuleInputs(*(None if a is None else a[idx]
                            for a in (self.agreement, self.issue, self.suspect)))


def cut_bands(inputs: RuleInputs, score: np.ndarray, members: Sequence[np.ndarray],
              cuts: dict[int, int]) -> RuleInputs:
    """The adaptive rule's bands with a reviewer's cut applied: in a class whose cut is
    set to ``k``, its ``k`` highest scores are issues (flagged whatever DBSCAN says) and
    no sample is left for DBSCAN to decide. That is the ranked rule's own control, "flag
    more / fewer", stored per class like eps; the other classes keep the rule's bands.

    Parameters
    ----------
    inputs : RuleInputs with ``issue`` and ``suspect`` (N,) bool
    score : (N,) float mislabel score; ties rank by sample index
    members : per class code, its sample indices (N_c,)
    cuts : class code → how many of its highest scores are flagged

    Returns
    -------
    RuleInputs, with new ``issue``/``suspect`` arrays when some class has a cut.
    """
    cut = {c: k for c, k in cuts.items() if 0 <= c < len(members)}
    if not cut or inputs.issue is None or inputs.suspect is None:
        return inputs
    issue, suspect = inputs.issue.copy(), inputs.suspect.copy()
    for c, k in cut.items():
        idx = members[c]
        top = idx[np.argsort(-score[idx], kind="stable")[:k]]
        issue[idx] = False
        suspect[idx] = False
        issue[top] = True
        suspect[top] = True
    return RuleInputs(inputs.agreement, issue, suspect)


# Bits of flag_bits(): a sample is flagged when it is DBSCAN noise and has NOISE_FLAGGED,
# or when it has ALWAYS_FLAGGED (see flagged_by). Every rule lives here only, whatever
# evidence it reads; the browser gets each point's look for both DBSCAN outcomes from
# app/curate/figures.py look_table, built on flagged_by.
NOISE_FLAGGED, ALWAYS_FLAGGED = 1, 2


def flagged_by(bits: np.ndarray, noise: np.ndarray | bool) -> np.ndarray:
    """Whether samples with ``bits`` (shape (n,), from :func:`flag_bits`) are flagged when
    DBSCAN calls them ``noise`` (shape (n,), or one bool for all)."""
    return (np.asarray(noise) & (bits & NOISE_FLAGGED > 0)) | (bits & ALWAYS_FLAGGED > 0)


def flag_bits(inputs: RuleInputs | None, rule: str, n: int) -> np.ndarray:
    """What the rule makes of each sample apart from its DBSCAN label.

    Parameters
    ----------
    inputs : RuleInputs or None
        Per-sample evidence, each array shape (n,); ``dbscan`` needs none.
    rule : str
    n : int

    Returns
    -------
    ndarray of uint8, shape (n,): ``NOISE_FLAGGED | ALWAYS_FLAGGED`` bits.
    """
    check_rule(rule)
    if rule == "dbscan":
        return np.full(n, NOISE_FLAGGED, dtype=np.uint8)
    inputs = inputs or RuleInputs()
    if rule == "adaptive":
        if inputs.issue is None or inputs.suspect is None:
            raise InputError("rule 'adaptive' needs label evidence; run 'curator cluster RUN'")
        return (inputs.suspect * NOISE_FLAGGED + inputs.issue * ALWAYS_FLAGGED).astype(np.uint8)
    if inputs.agreement is None:
        raise InputError("rule 'dbscan-knn' needs knn agreement; run 'curator cluster RUN'")
    return ((inputs.agreement < AGREE_MIN) * NOISE_FLAGGED
            + (inputs.agreement < AGREE_STRONG) * ALWAYS_FLAGGED).astype(np.uint8)


def decide(clusters: np.ndarray, inputs: RuleInputs | None, overrides: dict[int, str],
           rule: str = DEFAULT_RULE, relabelled: Iterable[int] = (),
           drops: tuple[np.ndarray, np.ndarray] | None = None) -> Decisions:
    """Combine DBSCAN labels, the flagging rule, relabels, the other finding kinds'
    default drops and overrides.

    A sample a reviewer relabelled is kept (reason ``relabel``): its corrected label is
    what it trains with. ``drops`` is (reason, sticky), both (N,): the finding kind whose
    default drops the sample ('' for none) and whether that drop outlasts a relabel
    (worker/pipeline/findings ``default_drops``: a relabelled duplicate copy is still a
    copy, a relabelled outlier was said to belong to a class). Keep/drop overrides win
    over everything."""
    flagged = flagged_by(flag_bits(inputs, rule, len(clusters)), clusters == -1)
    kept = ~flagged
    # A fixed-width string array built in place: object arrays and astype(str) cost
    # ~6 ms per call at 50,000 samples, and the app calls this on every edit.
    reason = np.full(len(kept), "cluster", dtype="<U13")
    reason[flagged] = "noise"
    was_relabelled = np.zeros(len(kept), bool)
    for sample in relabelled:
        if 0 <= sample < len(kept):
            kept[sample] = True
            reason[sample] = "relabel"
            was_relabelled[sample] = True
    if drops is not None:
        why, sticky = drops
        by_kind = (why != "") & (sticky | ~was_relabelled)
        kept[by_kind] = False
        reason[by_kind] = why[by_kind]
    for sample, decision in overrides.items():
        if 0 <= sample < len(kept):
            kept[sample] = decision == "keep"
            reason[sample] = f"override_{decision}"
    return Decisions(clusters, flagged, kept, reason)
