"""Duplicate, train/test-leak and outlier findings of three peers, for the benchmark.

Run with the bench venv's python (``bash bench/peers_venv.sh`` builds it), as a subprocess::

    .bench-venv/bin/python bench/peer_findings.py --peer {cleanlab,fastdup,fiftyone} \\
        --features F.npy --labels L.npy --images LIST.txt --out OUT.json \\
        [--test-features T.npy] [--test-images TLIST.txt] [--work DIR]

F.npy: (N, D) float32 features (the ones our tool uses); L.npy: (N,) int labels; LIST.txt: one
absolute image path per line, in feature-row order (fastdup reads the images, the others the
features). OUT.json holds, for each finding kind the peer supports, per-sample lists of length N
(the *train* samples, also for ``leak``)::

    {"peer", "version", "n", "n_test",
     "duplicate": {"flag": [bool], "score": [float], "group": [int, -1 = none], "seconds", ...},
     "outlier":   {"flag": [bool], "score": [float], "seconds", ...},
     "leak":      {"flag": [bool], "score": [float], "seconds", ...}}   # only with a test split

``score`` is always "higher = more likely a duplicate / outlier / leak". ``seconds`` is the wall
time of the peer's own work (imports and the venv start excluded). Every peer runs with its
shipped defaults; the rules, with their sources, are:

cleanlab 2.9.0 (Datalab; ``cleanlab/datalab/internal/issue_manager/duplicate.py``, ``outlier.py``)
  duplicate: ``Datalab(data={"label": labels}, label_name="label").find_issues(features=F,
      issue_types={"near_duplicate": {}})``. Defaults (``NearDuplicateIssueManager.__init__``):
      k=10, threshold=0.13, metric decided by ``cleanlab/internal/neighbor/metric.py``
      (cosine when D > HIGH_DIMENSION_CUTOFF=3, else euclidean). j is in i's near-duplicate set
      when j is among i's 10 nearest neighbours at distance < 0.13 * median nearest-neighbour
      distance; sets are made symmetric; flag = ``is_near_duplicate_issue`` (every member of
      a set, the original included). score = 1 - ``near_duplicate_score`` (the score is
      1 - exp(-d_nn / median d_nn)). group = connected component of the ``near_duplicate_sets``
      graph (the sets are per sample and overlap; the components are ours).
  outlier: ``find_issues(features=F, issue_types={"outlier": {}})``, defaults k=10, threshold
      0.37037 (``OutlierIssueManager.DEFAULT_THRESHOLDS["features"]``): flag when the mean
      distance to the 10 nearest neighbours > Q3 + (1/0.37037 - 1) * IQR of those means.
      score = 1 - ``outlier_score``.
  leak: Datalab has no train/test check, so ``near_duplicate`` (defaults) runs on the
      concatenation [train; test] (``Datalab(data={"split": ...})``, no labels: the issue type
      ignores them); a train sample leaks when its near-duplicate set holds a test index.
      score = exp(-d / median d_nn) for d the distance to the nearest *test* sample among its
      k=10 neighbours in cleanlab's kNN graph (0 when none is there) -- our read-out of
      cleanlab's graph, not a cleanlab score.

fastdup 2.54 (``fastdup/__init__.py`` ``run()``, ``fastdup/fastdup_controller.py``
``set_fastdup_kwargs``): ``fastdup.create(work_dir, input_dir=[absolute paths]).run()`` with
every default: bundled model ``UndisclosedFastdupModel.ort`` (d=576, CPU, no download),
cosine, nearest_neighbors_k=2, threshold=0.9 (pairs written to similarity.csv),
ccthreshold=0.96 (connected components), lower_threshold=0.05 (outliers). The only change is
the environment variable SENTRY_OPT_OUT=1 (fastdup/sentry.py: crash-report telemetry; this
machine is offline).
  duplicate: flag = the sample is in a similarity.csv pair with similarity >= 0.96, fastdup's
      default duplicate threshold (turi_param ccthreshold "groups very similar images together,
      for example identical images ..." and ``remove_duplicates(distance=0.96)``; galleries
      filter ``df['distance'] >= threshold``). Both ends of a pair are flagged.
      group = fastdup ``component_id`` of the non-singleton components of
      connected_components.csv (``connected_components()``), renumbered 0..G-1.
      score = cosine similarity to the nearest other image in fastdup's own embeddings
      (atrain_features.dat, brute force here; fastdup only writes pairs >= 0.9).
  outlier: flag = the image is an ``outlier`` in ``outliers()`` (outliers.csv: the bottom
      lower_threshold=5% of nearest-neighbour similarities). score = 1 - that nearest-neighbour
      cosine similarity in fastdup's embeddings (brute force here, for every sample).
  leak: a second fastdup run on the train and test images together (same defaults); a train
      sample leaks when a similarity.csv pair with similarity >= 0.96 joins it to a test image.
      score = max cosine similarity to a test image in that run's embeddings.
  duplicate and outlier come from one run: both report its wall time. Brute-force scores are
  not counted in ``seconds``. Images fastdup cannot read are listed under ``unread``.

FiftyOne Brain (github voxel51/fiftyone-brain, tree 7238036b, Aug 2026; FiftyOne cannot start
offline, so its rules are applied here to the same features, with numpy):
  Embeddings are centred on their mean, then cosine distance (sklearn backend,
  ``fiftyone/brain/internal/core/sklearn.py`` ``NeighborsHelper._build_dists`` /
  ``_build_neighbors``; above ``_MAX_PRECOMPUTE_DISTS``=15000 it uses Euclidean distance on the
  unit-normalised centred embeddings, sqrt(2 * cosine distance), with the radius rescaled the
  same way, so the duplicate sets are identical).
  duplicate: ``compute_near_duplicates(threshold=0.2)`` (``fiftyone/brain/__init__.py``) ->
      ``DuplicatesMixin.find_duplicates`` / ``_remove_duplicates_thresh``
      (``fiftyone/brain/similarity.py``): walk the samples in order; a still-kept sample removes
      every later sample within distance <= 0.2. flag = removed (``duplicate_ids``: all but one
      per group). Each removed sample is attached to its nearest kept sample (``neighbors_map``:
      a NearestNeighbors index on the kept samples, re-centred on their mean and unit-normalised,
      queried with the duplicates centred on the full mean only; reproduced here). group = that
      kept sample's row (for it and its duplicates); score = 1 - distance to the nearest other
      sample.
  outlier: no outlier rule in FiftyOne; score = ``compute_uniqueness``
      (``fiftyone/brain/internal/core/uniqueness.py`` ``_compute_uniqueness``): K=3, the K+1
      nearest other samples' distances, drop the first, weights [0.6, 0.3, 0.1], mean over the 3,
      divided by the maximum over the dataset. flag all False (see ``note``).
  leak: ``compute_leaky_splits(threshold=0.2)``
      (``fiftyone/brain/internal/core/leaky_splits.py`` ``LeakySplitsIndex.find_leaks``):
      ``find_duplicates(0.2)`` on the whole collection, [train; test] in that order (centred on
      the joint mean); for every kept sample whose attached duplicates include another split,
      it and those duplicates are leaks. flag = train sample among the leaks.
      score = 1 - distance to the nearest test sample (ours).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

PEERS = ("cleanlab", "fastdup", "fiftyone")
FASTDUP_DUPLICATE_SIMILARITY = 0.96  # fastdup's default ccthreshold (module docstring)
FIFTYONE_THRESHOLD = 0.2  # compute_near_duplicates / compute_leaky_splits default
FIFTYONE_MAX_PRECOMPUTE_DISTS = 15000  # fiftyone/brain/internal/core/sklearn.py
BLOCK_ENTRIES = 16_000_000  # rows x columns of one similarity block (64 MB of float32)


# ----------------------------------------------------------------------------- shared helpers


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def _cosine_search(a: np.ndarray, b: np.ndarray | None = None, k: int = 1,
                   radius: float | None = None) -> tuple[np.ndarray, np.ndarray, list]:
    """k nearest rows of ``b`` (default ``a``, self excluded) to each row of unit-norm ``a`` by
    cosine distance 1 - a.b clipped to [0, 2], as sklearn's ``cosine_distances``. Returns
    (idx (n, k), dist (n, k), within) where ``within[i]`` holds every j with dist <= radius."""
    same = b is None
    b = a if same else b
    n, m = len(a), len(b)
    k = min(k, m - 1 if same else m)
    idx = np.zeros((n, max(k, 0)), np.int64)
    dist = np.zeros((n, max(k, 0)), np.float32)
    within: list = []
    step = max(1, BLOCK_ENTRIES // max(m, 1))
    for s in range(0, n, step):
        d = np.clip(1.0 - a[s:s + step] @ b.T, 0.0, 2.0)
        if same:
            rows = np.arange(d.shape[0])
            d[rows, s + rows] = np.inf
        if k > 0:
            part = np.argpartition(d, k - 1, axis=1)[:, :k]
            pd_ = np.take_along_axis(d, part, axis=1)
            order = np.argsort(pd_, axis=1, kind="stable")
            idx[s:s + step] = np.take_along_axis(part, order, axis=1)
            dist[s:s + step] = np.take_along_axis(pd_, order, axis=1)
        if radius is not None:
            within.extend(np.flatnonzero(row <= radius) for row in d)
    return idx, dist, within


def _components(n: int, pairs: np.ndarray, members: np.ndarray) -> np.ndarray:
    """Connected-component id (0..G-1, in order of first row) of every row in ``members``
    under the edges ``pairs`` (E, 2); -1 elsewhere."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    group = np.full(n, -1, np.int64)
    if len(pairs) == 0 or not members.any():
        return group
    graph = coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(n, n))
    _, comp = connected_components(graph, directed=False)
    remap: dict[int, int] = {}
    for i in np.flatnonzero(members):
        group[i] = remap.setdefault(int(comp[i]), len(remap))
    return group


def _floats(x) -> list[float]:
    return [float(v) for v in np.nan_to_num(np.asarray(x, np.float64), nan=0.0)]


def _bools(x) -> list[bool]:
    return [bool(v) for v in np.asarray(x)]


# ----------------------------------------------------------------------------------- cleanlab


def _cleanlab_sets_flags(features: np.ndarray, data: dict, label_name: str | None):
    from cleanlab import Datalab

    lab = Datalab(data=data, label_name=label_name, verbosity=0)
    lab.find_issues(features=features, issue_types={"near_duplicate": {}})
    return lab.get_issues("near_duplicate"), lab.get_info("near_duplicate")


def run_cleanlab(f: np.ndarray, labels: np.ndarray, t: np.ndarray | None) -> dict:
    import cleanlab
    from cleanlab import Datalab

    n = len(f)
    out: dict = {"version": cleanlab.__version__}

    start = time.perf_counter()
    issues, info = _cleanlab_sets_flags(f, {"label": labels}, "label")
    secs = time.perf_counter() - start
    sets = info["near_duplicate_sets"]
    pairs = np.array([(i, int(j)) for i, s in enumerate(sets) for j in s], np.int64).reshape(-1, 2)
    flag = issues["is_near_duplicate_issue"].to_numpy(bool)
    out["duplicate"] = {
        "flag": _bools(flag),
        "score": _floats(1.0 - issues["near_duplicate_score"].to_numpy()),
        "group": _components(n, pairs, flag).tolist(),
        "seconds": secs,
        "params": {"metric": str(info["metric"]), "k": info["k"], "threshold": info["threshold"],
                   "median_nn_distance": float(info["median_distance_to_nearest_neighbor"])},
    }

    start = time.perf_counter()
    lab = Datalab(data={"label": labels}, label_name="label", verbosity=0)
    lab.find_issues(features=f, issue_types={"outlier": {}})
    issues = lab.get_issues("outlier")
    secs = time.perf_counter() - start
    oinfo = lab.get_info("outlier")
    out["outlier"] = {
        "flag": _bools(issues["is_outlier_issue"].to_numpy(bool)),
        "score": _floats(1.0 - issues["outlier_score"].to_numpy()),
        "seconds": secs,
        "params": {k: (float(v) if isinstance(v, (int, float, np.floating)) else str(v))
                   for k, v in oinfo.items() if k in ("k", "t", "metric", "threshold",
                                                       "issue_threshold")},
    }

    if t is not None:
        start = time.perf_counter()
        split = np.r_[np.zeros(n, np.int64), np.ones(len(t), np.int64)]
        joint = np.concatenate([f, t]).astype(np.float32, copy=False)
        _, jinfo = _cleanlab_sets_flags(joint, {"split": split}, None)
        secs = time.perf_counter() - start
        leak = np.array([bool(np.any(np.asarray(s[:], np.int64) >= n))
                         for s in jinfo["near_duplicate_sets"][:n]])
        graph = jinfo["statistics"]["weighted_knn_graph"].tocsr()
        median = float(jinfo["median_distance_to_nearest_neighbor"])
        score = np.zeros(n)
        for i in range(n):
            lo, hi = graph.indptr[i], graph.indptr[i + 1]
            d = graph.data[lo:hi][graph.indices[lo:hi] >= n]
            if len(d):
                score[i] = np.exp(-float(d.min()) / median)
        out["leak"] = {"flag": _bools(leak), "score": _floats(score), "seconds": secs,
                       "note": "near_duplicate (defaults) on [train; test]; a train sample "
                               "leaks when its near-duplicate set holds a test index"}
    return out


# ------------------------------------------------------------------------------------ fastdup


def _fastdup_run(files: list[str], work: Path) -> dict:
    """One fastdup run with its defaults; rows are mapped back to ``files`` order."""
    import fastdup
    import pandas as pd

    if len({os.path.realpath(p) for p in files}) != len(files):
        sys.exit("fastdup: the image lists name a file twice; rows are matched by path")
    if work.exists():
        shutil.rmtree(work)
    start = time.perf_counter()
    fd = fastdup.create(work_dir=str(work), input_dir=list(files))
    fd.run()
    sim = fd.similarity(data=False)
    cc, _ = fd.connected_components(data=False)
    outl = fd.outliers(data=False)
    secs = time.perf_counter() - start

    names, emb = fd.embeddings()
    mapping = pd.read_csv(work / "atrain_features.dat.csv")
    row_of = {os.path.realpath(p): i for i, p in enumerate(files)}
    fd2row = {int(ix): row_of.get(os.path.realpath(str(fn)), -1)
              for ix, fn in zip(mapping["index"], mapping["filename"], strict=True)}
    emb_rows = np.array([row_of.get(os.path.realpath(str(fn)), -1) for fn in names])
    ok = emb_rows >= 0
    full = np.zeros((len(files), emb.shape[1]), np.float32)
    full[emb_rows[ok]] = emb[ok]
    have = np.zeros(len(files), bool)
    have[emb_rows[ok]] = True

    def rows(col) -> np.ndarray:
        return np.array([fd2row.get(int(v), -1) for v in col], np.int64)

    pairs = np.zeros((0, 3))
    if sim is not None and len(sim):
        pairs = np.c_[rows(sim["from"]), rows(sim["to"]), sim["distance"].to_numpy(float)]
        pairs = pairs[(pairs[:, 0] >= 0) & (pairs[:, 1] >= 0)]
    comp = np.full(len(files), -1, np.int64)
    if cc is not None and len(cc):
        r = rows(cc["index"] if "index" in cc else cc["__id"])  # renamed from __id by fastdup
        comp[r[r >= 0]] = cc["component_id"].to_numpy(np.int64)[r >= 0]
    out_rows = np.zeros(0, np.int64)
    if outl is not None and len(outl) and "outlier" in outl:
        out_rows = rows(outl["outlier"])
        out_rows = out_rows[out_rows >= 0]
    return {"seconds": secs, "pairs": pairs, "component": comp, "outliers": out_rows,
            "emb": _unit(full), "have": have, "unread": np.flatnonzero(~have).tolist()}


def run_fastdup(images: list[str], test_images: list[str] | None, work: Path) -> dict:
    os.environ["SENTRY_OPT_OUT"] = "1"  # telemetry only (fastdup/sentry.py); we are offline
    import fastdup

    n = len(images)
    out: dict = {"version": fastdup.__version__}
    r = _fastdup_run(images, work / "fastdup-train")

    dup_pairs = r["pairs"][r["pairs"][:, 2] >= FASTDUP_DUPLICATE_SIMILARITY][:, :2].astype(int)
    flag = np.zeros(n, bool)
    flag[dup_pairs.ravel()] = True
    comp = r["component"]
    group = np.full(n, -1, np.int64)
    remap: dict[int, int] = {}
    for i in np.flatnonzero(comp >= 0):
        group[i] = remap.setdefault(int(comp[i]), len(remap))
    _, nn_dist, _ = _cosine_search(r["emb"], k=1)
    nn_sim = np.where(r["have"], 1.0 - nn_dist[:, 0], 0.0)
    out["duplicate"] = {
        "flag": _bools(flag), "score": _floats(nn_sim), "group": group.tolist(),
        "seconds": r["seconds"], "unread": r["unread"],
        "params": {"similarity_threshold": FASTDUP_DUPLICATE_SIMILARITY, "threshold": 0.9,
                   "nearest_neighbors_k": 2, "ccthreshold": 0.96},
        "note": "flag: in a similarity.csv pair >= 0.96; group: fastdup connected component "
                "(ccthreshold 0.96); one fastdup run gives duplicate and outlier, same seconds",
    }
    oflag = np.zeros(n, bool)
    oflag[r["outliers"]] = True
    out["outlier"] = {
        "flag": _bools(oflag), "score": _floats(np.where(r["have"], 1.0 - nn_sim, 0.0)),
        "seconds": r["seconds"], "unread": r["unread"],
        "params": {"lower_threshold": 0.05},
    }

    if test_images is not None:
        j = _fastdup_run(images + test_images, work / "fastdup-joint")
        p = j["pairs"][j["pairs"][:, 2] >= FASTDUP_DUPLICATE_SIMILARITY][:, :2].astype(int)
        cross = p[(p[:, 0] < n) != (p[:, 1] < n)]
        leak = np.zeros(n, bool)
        leak[cross.min(axis=1)] = True  # the train end of each crossing pair
        emb = j["emb"]
        _, d, _ = _cosine_search(emb[:n], emb[n:], k=1)
        score = np.where(j["have"][:n], 1.0 - d[:, 0], 0.0)
        out["leak"] = {"flag": _bools(leak), "score": _floats(score), "seconds": j["seconds"],
                       "unread": j["unread"],
                       "note": "one fastdup run on train+test; pairs >= 0.96 crossing the split"}
    return out


# ----------------------------------------------------------------------------------- fiftyone


def _fo_distances(x_centred: np.ndarray, k: int, radius: float | None):
    """FiftyOne's sklearn-backend distances on centred embeddings (module docstring)."""
    return _cosine_search(_unit(x_centred), k=k, radius=radius)


def _fo_find_duplicates(x: np.ndarray, thresh: float):
    """``find_duplicates(thresh)``: (keep mask, neighbors_map {kept row: [dup rows]},
    nearest-other distance). ``x`` rows in collection order."""
    xc = np.asarray(x, np.float32) - np.asarray(x, np.float32).mean(axis=0, keepdims=True)
    _, nn, within = _fo_distances(xc, k=1, radius=thresh)
    n = len(xc)
    keep = np.ones(n, bool)
    for i in range(n):  # _remove_duplicates_thresh
        if keep[i]:
            nb = within[i]
            keep[nb[nb > i]] = False
    dups = np.flatnonzero(~keep)
    neighbors: dict[int, list[int]] = {}
    if len(dups) and keep.any():
        kept = np.flatnonzero(keep)
        index = _unit(xc[kept] - xc[kept].mean(axis=0, keepdims=True))
        nearest = np.empty(len(dups), np.int64)
        step = max(1, BLOCK_ENTRIES // len(kept))
        for s in range(0, len(dups), step):  # Euclidean to unit rows = argmax of the dot product
            nearest[s:s + step] = kept[np.argmax(xc[dups[s:s + step]] @ index.T, axis=1)]
        for d, k in zip(dups, nearest, strict=True):
            neighbors.setdefault(int(k), []).append(int(d))
    return keep, neighbors, nn[:, 0] if n > 1 else np.zeros(n, np.float32)


def _fo_uniqueness(x: np.ndarray) -> np.ndarray:
    """``_compute_uniqueness`` on the sklearn backend."""
    kk = 3
    n = len(x)
    if n <= kk:
        return np.ones(n)
    xc = np.asarray(x, np.float32) - np.asarray(x, np.float32).mean(axis=0, keepdims=True)
    _, dists, _ = _fo_distances(xc, k=kk + 1, radius=None)
    if n > FIFTYONE_MAX_PRECOMPUTE_DISTS:  # NearestNeighbors, Euclidean on unit rows
        dists = np.sqrt(np.maximum(2.0 * dists, 0.0))
    sample = np.mean(dists[:, 1:] * np.array([0.6, 0.3, 0.1], np.float32), axis=1)
    return sample / sample.max() if sample.max() > 0 else sample


def run_fiftyone(f: np.ndarray, t: np.ndarray | None) -> dict:
    n = len(f)
    out: dict = {"version": "fiftyone-brain@7238036b rules, applied by hand (numpy)"}

    start = time.perf_counter()
    keep, neighbors, nn = _fo_find_duplicates(f, FIFTYONE_THRESHOLD)
    group = np.full(n, -1, np.int64)
    for gid, (k, dups) in enumerate(sorted(neighbors.items())):
        group[[k, *dups]] = gid
    secs = time.perf_counter() - start
    out["duplicate"] = {
        "flag": _bools(~keep), "score": _floats(1.0 - nn), "group": group.tolist(),
        "seconds": secs, "params": {"threshold": FIFTYONE_THRESHOLD, "metric": "cosine (centred)"},
        "note": "flag = find_duplicates' duplicate_ids: all but the first of each group",
    }

    start = time.perf_counter()
    uniq = _fo_uniqueness(f)
    secs = time.perf_counter() - start
    out["outlier"] = {
        "flag": [False] * n, "score": _floats(uniq), "seconds": secs,
        "note": "FiftyOne has no outlier rule: score = compute_uniqueness, no flags",
    }

    if t is not None:
        start = time.perf_counter()
        joint = np.concatenate([f, t]).astype(np.float32, copy=False)
        _, neighbors, _ = _fo_find_duplicates(joint, FIFTYONE_THRESHOLD)
        leaks: set[int] = set()
        for k, dups in neighbors.items():  # LeakySplitsIndex.find_leaks
            other = [d for d in dups if (d < n) != (k < n)]
            if other:
                leaks.add(k)
                leaks.update(other)
        secs = time.perf_counter() - start
        flag = np.zeros(n, bool)
        flag[[i for i in leaks if i < n]] = True
        jc = joint - joint.mean(axis=0, keepdims=True)
        u = _unit(jc)
        _, d, _ = _cosine_search(u[:n], u[n:], k=1)
        out["leak"] = {"flag": _bools(flag), "score": _floats(1.0 - d[:, 0]), "seconds": secs,
                       "params": {"threshold": FIFTYONE_THRESHOLD},
                       "note": "compute_leaky_splits rule on [train; test], centred jointly"}
    return out


# ---------------------------------------------------------------------------------------- CLI


def _read_list(path: str) -> list[str]:
    return [line.strip() for line in Path(path).read_text().splitlines() if line.strip()]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--peer", required=True, choices=PEERS)
    ap.add_argument("--features", required=True)
    ap.add_argument("--labels", required=True)
    ap.add_argument("--images", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--test-features")
    ap.add_argument("--test-images")
    ap.add_argument("--work", help="fastdup work folder (default: a temporary one, removed)")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    f = np.load(args.features).astype(np.float32, copy=False)
    labels = np.load(args.labels).astype(np.int64)
    images = _read_list(args.images)
    if not (len(f) == len(labels) == len(images)):
        sys.exit(f"row counts differ: features {len(f)}, labels {len(labels)}, "
                 f"images {len(images)}")
    t = np.load(args.test_features).astype(np.float32, copy=False) if args.test_features else None
    test_images = _read_list(args.test_images) if args.test_images else None
    if t is not None and test_images is not None and len(t) != len(test_images):
        sys.exit(f"test row counts differ: features {len(t)}, images {len(test_images)}")

    if args.peer == "cleanlab":
        result = run_cleanlab(f, labels, t)
    elif args.peer == "fiftyone":
        result = run_fiftyone(f, t)
    else:
        if t is not None and test_images is None:
            sys.exit("fastdup reads images: --test-features needs --test-images")
        work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="peer-fastdup-"))
        work.mkdir(parents=True, exist_ok=True)
        try:
            result = run_fastdup(images, test_images, work.resolve())
        finally:
            if not args.work:
                shutil.rmtree(work, ignore_errors=True)

    n_test = len(test_images) if args.peer == "fastdup" and test_images else (
        len(t) if t is not None else 0)
    payload = {"peer": args.peer, "n": len(f), "n_test": n_test, **result}
    Path(args.out).write_text(json.dumps(payload))
    summary = {k: int(np.sum(v["flag"])) for k, v in result.items() if isinstance(v, dict)}
    print(f"{args.peer}: flagged {summary}; seconds "
          f"{ {k: round(v['seconds'], 3) for k, v in result.items() if isinstance(v, dict)} }")
    return 0


if __name__ == "__main__":
    sys.exit(main())
