"""Duplicates, outliers and train/test leaks: our findings beside three peers, on the same images.

    PYTHONPATH=. .venv/bin/python -m bench.findings [--full] [--features lite0|resnet56|both]
        [--only ROW[,ROW]] [--out /tmp/findings_bench] [--no-sheet]

Data: the shared CIFAR-10 JPEG archive (``$CURATOR_SHARED_DATA``, default ``../shared/data``):
``cifar10-jpeg-mini.tar.gz`` (2,000 train / 1,000 test) or, with ``--full``,
``cifar10-jpeg.tar.gz`` (50,000 / 10,000), unpacked once under ``OUT/data``. Missing archive:
one line, exit 0.

Our runs are made by the real CLI, as subprocesses (``OPENBLAS_CORETYPE=Haswell``)::

    .venv/bin/curator pipeline --dataset folder:DIR --seed 0 --out RUN [injection] [model]

one run per row, kept under ``OUT/<size>-<features>/<row>/run`` (its peers' inputs and outputs
under ``.../<row>/peers``). A run whose findings step is done is reused (delete it to redo).

Rows (rate 0.05 = 100 copies on the mini, 2,500 on --full):
1. ``exact``:   ``--inject-duplicates 0.05 --duplicate-strength exact``
2-4. ``light``, ``medium``, ``strong``: the same at each strength (sources/inject.py)
5. ``outliers``: ``--inject-outliers 40`` (400 with --full): digits, photo crops, noise, blank
6. ``leak``:    no injection; CIFAR-10 train against its test split. No truth: counts,
   pairwise Jaccard of the flagged train sets, and a contact sheet of our top 24 leak pairs
   (``docs/leaks.png``: train thumbnail, test image, the pixel match of the pair shown) for a
   person to judge.

Features: ``lite0`` = EfficientNet-Lite0, ImageNet-pretrained, the default backbone (never saw
CIFAR labels). ``resnet56`` = ``--model cifar-resnet56 --weights ../shared/data/weights/
resnet56-4bfd9763.th``: trained on CIFAR-10's *true* labels, which flatters every detector
that reads features; every figure built on them is marked ``*``.

Peers (bench/peer_findings.py, run with ``.bench-venv/bin/python`` as subprocesses; cleanlab
Datalab, fastdup, FiftyOne Brain's rules): cleanlab and FiftyOne get our run's ``features.npy``
(the same features) and the labels of ``samples.csv``; fastdup reads images with its own bundled
model, so every sample's image is laid out in row order in ``peers/images/``: the dataset's
originals as symbolic links, the injected ones (``RUN/injected.npy``) written as PNG. For the
leak row they also get the test split's features from our run's cache
(``RUN/cache/test-features-*.npy``, rows in ``RUN/test_samples.csv`` order) and its image
files.

Scoring against ``injected.csv`` (index, path, kind, source, how):

- Duplicates, ours and FiftyOne's (both mark all but one member of a group and name the kept
  one): exactly as worker/pipeline/findings/detectors/duplicate.py: an injected copy and its source
  form a
  family; a marked sample is right when its related sample (ours: ``related``, the kept copy;
  FiftyOne: the kept sample of its group) is of its own family; precision = right / marked;
  recall = families with a right mark / families.
- Duplicates, cleanlab and fastdup (they flag *every* member of a group, the original too, and
  do not say which to keep) are scored by the *group rule*: their groups (cleanlab: connected
  components of ``near_duplicate_sets``; fastdup: its connected components) restricted to their
  flagged samples. A group of g >= 2 flagged samples claims g - 1 pairs (the removals keeping
  one per group implies); a flagged sample with no flagged group-mate claims 1 pair. A claim is
  right for each injected family whose two members both lie in one group. precision = right /
  claims, recall = families with both members in one group / families. This is as generous as
  the best choice of the kept member per group (or more: two families in one group both
  count), so it does not favour us. Ours and FiftyOne are scored by the group rule as well
  (their groups: ours ``fact_group``, FiftyOne the kept sample with its attached duplicates), in
  the column ``F1 grp``; the ratio uses each detector's own rule (the first F1 column).
  Natural duplicates already in CIFAR-10 count against precision for everyone.
- Outliers: P/R/F1 of each detector's flags against the injected outliers and the AUROC of its
  score (FiftyOne has no outlier rule, only ``compute_uniqueness``: AUROC only).
- Targets, printed as ratios: our F1 / the best peer's F1 per duplicate and outlier row
  (>= 1.0, and >= 1.05 where the best peer's F1 is below 0.9); our outlier AUROC / the best
  peer's; with --full, our findings time / the fastest peer's time for the row's kind at 50k.
  Our time = ``curator findings RUN --redo`` alone, wall clock of the subprocess (every stored
  kind: duplicate, leak, outlier; the test features are cached by then), peers' = the
  ``seconds`` of that kind in their JSON (their own compute; fastdup's includes its embedding
  of the images, which it does not separate). Beside it, in brackets: the step's in-process
  time (:func:`ours_breakdown`: the same computation without the CLI's start-up, split into
  the shared inputs and each kind), which is what the peers' seconds measure for them.
- Our duplicate misses are broken down by cause (:func:`duplicate_misses`): the source was
  not among the copy's candidates (5 nearest in the PCA space, either way round), or beyond
  the 1.5x distance gate, or the pixel match was under the cut, or the pair was grouped with
  another family's kept member.

Everything also goes to ``OUT/results.json``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import numpy as np

from bench.common import findings_done

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("CURATOR_SHARED_DATA", ROOT.parent / "shared" / "data")).resolve()
CURATOR = ROOT / ".venv" / "bin" / "curator"
BENCH_PY = ROOT / ".bench-venv" / "bin" / "python"
PEER_SCRIPT = ROOT / "bench" / "peer_findings.py"
PEERS = ("cleanlab", "fastdup", "fiftyone")
ENV = {**os.environ, "OPENBLAS_CORETYPE": "Haswell", "SENTRY_OPT_OUT": "1"}

SIZES = {
    "mini": {"archive": "cifar10-jpeg-mini.tar.gz", "folder": "cifar10-mini", "outliers": 40},
    "full": {"archive": "cifar10-jpeg.tar.gz", "folder": "cifar10", "outliers": 400},
}
FEATURES = {
    "lite0": {"args": [], "title": "EfficientNet-Lite0, ImageNet-pretrained (never saw CIFAR "
                                   "labels)", "flag": ""},
    "resnet56": {"args": ["--model", "cifar-resnet56", "--weights",
                          str(SHARED / "weights" / "resnet56-4bfd9763.th")],
                 "title": "ResNet-56* trained on CIFAR-10's TRUE labels: flatters every "
                          "detector that reads features", "flag": "*"},
}
DUP_RATE = 0.05
STRENGTHS = ("exact", "light", "medium", "strong")
ROWS = (*STRENGTHS, "outliers", "leak")
SHEET_PAIRS = 24


def log(msg: str) -> None:
    print(msg, flush=True)


# --------------------------------------------------------------------------------- data, runs


def unpack(size: str, dest: Path) -> Path | None:
    """The dataset folder (with train/ and test/), unpacked once; None when the archive is
    missing."""
    spec = SIZES[size]
    root = dest / spec["folder"]
    if (root / "train").is_dir() and (root / "test").is_dir() and (root / ".unpacked").is_file():
        return root
    archive = SHARED / spec["archive"]
    if not archive.is_file():
        return None
    log(f"unpacking {archive} into {dest} ...")
    t = time.perf_counter()
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")
    (root / ".unpacked").write_text("")
    log(f"  {time.perf_counter() - t:.0f} s")
    return root


def row_args(row: str, size: str) -> list[str]:
    if row in STRENGTHS:
        return ["--inject-duplicates", str(DUP_RATE), "--duplicate-strength", row]
    if row == "outliers":
        return ["--inject-outliers", str(SIZES[size]["outliers"])]
    return []


def make_run(run: Path, data: Path, row: str, size: str, feats: str) -> dict:
    """Our pipeline for one row (reused when done). Returns what was run and its time."""
    cmd = [str(CURATOR), "pipeline", "--dataset", f"folder:{data}", *row_args(row, size),
           "--seed", "0", *FEATURES[feats]["args"], "--out", str(run)]
    info = {"command": " ".join(cmd)}
    if findings_done(run):
        log(f"  reusing {run}")
        info["reused"] = True
        prev = run.parent / "pipeline.json"
        if prev.is_file():
            info["seconds"] = json.loads(prev.read_text()).get("seconds")
        return info
    if run.exists():
        shutil.rmtree(run)
    run.parent.mkdir(parents=True, exist_ok=True)
    log(f"  $ {info['command']}")
    t = time.perf_counter()
    with open(run.parent / "pipeline.log", "w") as fh:
        p = subprocess.run(cmd, cwd=ROOT, env=ENV, stdout=fh, stderr=subprocess.STDOUT)
    info["seconds"] = round(time.perf_counter() - t, 2)
    if p.returncode:
        tail = (run.parent / "pipeline.log").read_text()[-3000:]
        raise SystemExit(f"curator pipeline failed ({p.returncode}) for {row}:\n{tail}")
    (run.parent / "pipeline.json").write_text(json.dumps(info))
    log(f"  pipeline {info['seconds']:.1f} s")
    return info


def time_findings(run: Path) -> float:
    """Wall time of ``curator findings RUN --redo`` alone (the findings step's own time)."""
    cmd = [str(CURATOR), "findings", str(run), "--redo", "--top", "0"]
    t = time.perf_counter()
    with open(run.parent / "findings.log", "w") as fh:
        p = subprocess.run(cmd, cwd=ROOT, env=ENV, stdout=fh, stderr=subprocess.STDOUT)
    secs = time.perf_counter() - t
    if p.returncode:
        raise SystemExit(f"curator findings failed: {(run.parent / 'findings.log').read_text()}")
    return round(secs, 2)


def load_table(run: Path, kind: str) -> dict[str, np.ndarray]:
    with np.load(run / "findings" / f"{kind}.npz", allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def read_truth(run: Path) -> list[dict]:
    path = run / "injected.csv"
    if not path.is_file():
        return []
    return [{**r, "index": int(r["index"]), "source": int(r["source"])} for r in read_csv(path)]


# ------------------------------------------------------------------------------------- peers


def peer_inputs(run: Path, data: Path, peers_dir: Path, leak: bool) -> dict:
    """Labels, the image list in row order (links to the originals, PNGs of the injected) and,
    for the leak row, the test features and images. Returns the peer_findings arguments."""
    from PIL import Image

    peers_dir.mkdir(parents=True, exist_ok=True)
    meta = json.loads((run / "run.json").read_text())
    codes = {c: k for k, c in enumerate(meta["classes"])}
    samples = read_csv(run / "samples.csv")
    labels = np.array([codes[r["label"]] for r in samples], np.int64)
    np.save(peers_dir / "labels.npy", labels)
    img_dir = peers_dir / "images"
    if img_dir.exists():
        shutil.rmtree(img_dir)
    img_dir.mkdir()
    injected = np.load(run / "injected.npy") if (run / "injected.npy").is_file() else None
    n_own = len(samples) - (0 if injected is None else len(injected))
    paths = []
    for i, r in enumerate(samples):
        if i < n_own:
            src = (data / r["path"]).resolve()
            dest = img_dir / f"{i:06d}{src.suffix}"
            dest.symlink_to(src)
        else:
            dest = img_dir / f"{i:06d}.png"
            Image.fromarray(injected[i - n_own]).save(dest)
        paths.append(str(dest))
    (peers_dir / "images.txt").write_text("\n".join(paths) + "\n")
    args = ["--features", str(run / "features.npy"), "--labels", str(peers_dir / "labels.npy"),
            "--images", str(peers_dir / "images.txt")]
    if leak:
        test = test_features(run)
        test_rows = read_csv(run / "test_samples.csv")
        tfeat = np.load(test, mmap_mode="r")
        if len(tfeat) != len(test_rows):
            raise SystemExit(f"{test}: {len(tfeat)} rows, test_samples.csv {len(test_rows)}")
        (peers_dir / "test_images.txt").write_text(
            "\n".join(str((data / r["path"]).resolve()) for r in test_rows) + "\n")
        args += ["--test-features", str(test),
                 "--test-images", str(peers_dir / "test_images.txt")]
    return {"args": args, "labels": labels}


def test_features(run: Path) -> Path:
    """The run's cached test-split features (the newest, as the leak kind last wrote)."""
    tests = sorted((run / "cache").glob("test-features-*.npy"), key=lambda p: p.stat().st_mtime)
    if not tests:
        raise SystemExit(f"{run}: no cached test features (the leak kind found no test split)")
    return tests[-1]


def run_peer(peer: str, args: list[str], peers_dir: Path, n: int, leak: bool) -> dict:
    out = peers_dir / f"{peer}.json"
    if out.is_file():
        got = json.loads(out.read_text())
        if got.get("n") == n and (not leak or "leak" in got):
            log(f"  reusing {out}")
            return got
    cmd = [str(BENCH_PY), str(PEER_SCRIPT), "--peer", peer, *args, "--out", str(out)]
    if peer == "fastdup":
        cmd += ["--work", str(peers_dir / "fastdup-work")]
    log(f"  peer {peer} ...")
    t = time.perf_counter()
    with open(peers_dir / f"{peer}.log", "w") as fh:
        p = subprocess.run(cmd, cwd=ROOT, env=ENV, stdout=fh, stderr=subprocess.STDOUT)
    wall = time.perf_counter() - t
    if p.returncode:
        tail = (peers_dir / f"{peer}.log").read_text()[-3000:]
        raise SystemExit(f"peer {peer} failed ({p.returncode}):\n{tail}")
    got = json.loads(out.read_text())
    got["wall_seconds"] = round(wall, 2)
    out.write_text(json.dumps(got))
    log(f"    {wall:.1f} s wall")
    return got


# ----------------------------------------------------------------------------------- scoring


def _prf(right: int, marked: int, truth_found: int, truth: int) -> dict:
    p = right / marked if marked else 0.0
    r = truth_found / truth if truth else 0.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return {"precision": round(p, 4), "recall": round(r, 4), "f1": round(f1, 4),
            "marked": marked, "right": right, "found": truth_found, "truth": truth}


def families(n: int, truth: list[dict]) -> tuple[np.ndarray, list[dict]]:
    family = np.arange(n)
    copies = [r for r in truth if r["kind"] == "duplicate"]
    for r in copies:
        family[r["index"]] = r["source"]
    return family, copies


def related_rule(marked: np.ndarray, related: np.ndarray, truth: list[dict]) -> dict:
    """worker/pipeline/findings/detectors/duplicate.py ``duplicate_scores``, reproduced."""
    family, copies = families(len(marked), truth)
    found = np.flatnonzero(marked)
    right = found[(related[found] >= 0) & (family[found] == family[np.maximum(related[found], 0)])]
    hit = set(family[right].tolist())
    out = _prf(len(right), len(found), len(hit), len(copies))
    out["rule"] = "related"
    out["recall_by_strength"] = _by_strength(hit, copies)
    return out


def group_rule(flag: np.ndarray, group: np.ndarray, truth: list[dict]) -> dict:
    """The group rule for detectors that flag every member of a group (module docstring)."""
    family, copies = families(len(flag), truth)
    sources = {c["source"] for c in copies}
    members = np.flatnonzero(flag)
    claims = right = 0
    hit: set[int] = set()
    alone = members[group[members] < 0]
    claims += len(alone)
    grouped = members[group[members] >= 0]
    order = grouped[np.argsort(group[grouped], kind="stable")]
    if len(order):
        cuts = np.flatnonzero(np.diff(group[order])) + 1
        for g in np.split(order, cuts):
            claims += max(len(g) - 1, 1)
            fam, cnt = np.unique(family[g], return_counts=True)
            # a family is at most 2 samples (copy + source); only injected ones share an id
            whole = [int(f) for f in fam[cnt >= 2] if int(f) in sources]
            right += len(whole)
            hit.update(whole)
    out = _prf(right, claims, len(hit), len(copies))
    out["rule"] = "group"
    out["flagged_samples"] = int(flag.sum())
    out["recall_by_strength"] = _by_strength(hit, copies)
    return out


def _by_strength(hit: set[int], copies: list[dict]) -> dict:
    by = {}
    for how in sorted({c["how"] for c in copies}):
        fams = [c["source"] for c in copies if c["how"] == how]
        by[how] = round(sum(f in hit for f in fams) / len(fams), 4)
    return by


def auroc(score: np.ndarray, truth: np.ndarray) -> float | None:
    from sklearn.metrics import roc_auc_score

    if truth.all() or not truth.any():
        return None
    return round(float(roc_auc_score(truth, np.nan_to_num(np.asarray(score, float)))), 4)


def fiftyone_related(flag: np.ndarray, group: np.ndarray) -> np.ndarray:
    """FiftyOne's kept sample for each of its duplicates (the unflagged member of the group)."""
    related = np.full(len(flag), -1, np.int64)
    kept = np.flatnonzero(~flag & (group >= 0))
    rep = dict(zip(group[kept].tolist(), kept.tolist(), strict=True))
    for i in np.flatnonzero(flag):
        related[i] = rep.get(int(group[i]), -1)
    return related


def score_duplicates(run: Path, peers: dict, ours_secs: float, truth: list[dict]) -> dict:
    t = load_table(run, "duplicate")
    out = {}
    ours = related_rule(t["issue"], t["related"], truth)
    ours["group_rule"] = group_rule(t["fact_group"] >= 0, t["fact_group"], truth)
    ours["seconds"] = ours_secs
    out["ours"] = ours
    for peer, res in peers.items():
        d = res["duplicate"]
        flag, group = np.asarray(d["flag"], bool), np.asarray(d["group"], np.int64)
        if peer == "fiftyone":
            s = related_rule(flag, fiftyone_related(flag, group), truth)
            s["group_rule"] = group_rule(group >= 0, group, truth)
        else:
            s = group_rule(flag, group, truth)
        s["seconds"] = round(float(d["seconds"]), 3)
        s["flagged_samples"] = int(flag.sum())
        out[peer] = s
    return out


def score_outliers(run: Path, peers: dict, ours_secs: float, truth: list[dict]) -> dict:
    t = load_table(run, "outlier")
    n = len(t["issue"])
    is_out = np.zeros(n, bool)
    is_out[[r["index"] for r in truth if r["kind"] == "outlier"]] = True
    how = {r["index"]: r["how"] for r in truth if r["kind"] == "outlier"}

    def one(flag: np.ndarray, score: np.ndarray) -> dict:
        tp = int((flag & is_out).sum())
        s = _prf(tp, int(flag.sum()), tp, int(is_out.sum()))
        s["auroc"] = auroc(score, is_out)
        s["recall_by_source"] = {h: round(float(np.mean([flag[i] for i, k in how.items()
                                                         if k == h])), 4)
                                 for h in sorted(set(how.values()))}
        return s

    out = {"ours": {**one(t["issue"].astype(bool), t["score"]), "seconds": ours_secs}}
    for peer, res in peers.items():
        o = res["outlier"]
        s = one(np.asarray(o["flag"], bool), np.asarray(o["score"], float))
        s["seconds"] = round(float(o["seconds"]), 3)
        if peer == "fiftyone":
            s["note"] = "no outlier rule: flags none; AUROC of compute_uniqueness"
        out[peer] = s
    return out


def score_leaks(run: Path, peers: dict, ours_secs: float) -> dict:
    t = load_table(run, "leak")
    sets = {"ours": np.asarray(t["issue"], bool)}
    out = {"ours": {"flagged": int(t["issue"].sum()), "seconds": ours_secs,
                    "test_images": int(len(np.unique(t["related"][t["issue"]])))}}
    for peer, res in peers.items():
        lk = res["leak"]
        flag = np.asarray(lk["flag"], bool)
        sets[peer] = flag
        out[peer] = {"flagged": int(flag.sum()), "seconds": round(float(lk["seconds"]), 3)}
    names = list(sets)
    jac = {}
    for a in names:
        for b in names:
            inter, union = int((sets[a] & sets[b]).sum()), int((sets[a] | sets[b]).sum())
            jac.setdefault(a, {})[b] = round(inter / union, 4) if union else None
    return {"detectors": out, "jaccard": jac,
            "overlap_with_ours": {p: int((sets[p] & sets["ours"]).sum()) for p in names}}


# ---------------------------------------------------------------- our side: misses and timing


def ours_breakdown(run: Path) -> dict:
    """In-process seconds of the findings step's parts, without the CLI's start (imports):
    the shared inputs (PCA space, grey views, pixel hashes, test split), then each stored
    kind's ``compute`` in registry order, as ``curator findings --redo`` runs them. Nothing
    is written."""
    from worker.pipeline.findings import kinds
    from worker.pipeline.findings.context import FindingContext
    from worker.pipeline.storage.rundir import RunDir

    rd = RunDir(run)
    out: dict = {}
    t0 = time.perf_counter()
    ctx = FindingContext(rd, rd.read_samples())
    for part in ("space", "grey", "pixel_hash", "label_score", "test", "test_grey"):
        t = time.perf_counter()
        getattr(ctx, part)
        out[f"input:{part}"] = round(time.perf_counter() - t, 3)
    for kind in kinds():
        if getattr(kind, "stored", True):
            t = time.perf_counter()
            kind.compute(ctx)
            out[f"kind:{kind.name}"] = round(time.perf_counter() - t, 3)
    out["total"] = round(time.perf_counter() - t0, 3)
    return out


def duplicate_misses(run: Path, truth: list[dict]) -> dict:
    """Why our duplicate kind missed each injected family it missed: the source is not
    among the copy's candidates (the 5 nearest in the map's PCA space, within 1.5x the
    typical nearest-neighbour distance, either way round), or it is and the pixel match is
    under the cut, or the pair is a copy but the group kept a member of another family."""
    from worker.pipeline.findings.context import FindingContext
    from worker.pipeline.findings.detectors import duplicate as dup
    from worker.pipeline.findings.pixels import match_pairs
    from worker.pipeline.storage.rundir import RunDir

    rd = RunDir(run)
    ctx = FindingContext(rd, rd.read_samples())
    sp = ctx.space
    k = getattr(dup, "K_CANDIDATES", 5)
    ratio_max = getattr(dup, "CANDIDATE_RATIO", 1.5)
    meta = json.loads((run / "run.json").read_text())
    cut = meta["steps"]["findings"]["kinds"]["duplicate"].get("pixel_cut")
    t = load_table(run, "duplicate")
    family, copies = families(len(t["issue"]), truth)
    marked = np.flatnonzero(t["issue"])
    rel = t["related"][marked]
    right = marked[(rel >= 0) & (family[marked] == family[np.maximum(rel, 0)])]
    hit = set(family[right].tolist())
    grey = ctx.grey
    reasons: dict[str, list] = {"not among the nearest": [], "beyond the distance gate": [],
                                "pixel match under the cut": [], "grouped with another family":
                                []}
    matches_missed, matches_found = [], []
    for c in copies:
        a, b = c["index"], c["source"]
        m = float(match_pairs(grey, np.array([a]), grey, np.array([b]))[0]) \
            if grey is not None else float("nan")
        if b in hit:
            matches_found.append(m)
            continue
        matches_missed.append(m)
        ranks, ratios = [], []
        for x, y in ((a, b), (b, a)):
            row = sp.neighbours[x, :k].tolist()
            if y in row:
                j = row.index(y)
                ranks.append(j)
                ratios.append(float(sp.distances[x, j] / sp.scale))
        if not ranks:
            why = "not among the nearest"
        elif min(ratios) > ratio_max:
            why = "beyond the distance gate"
        elif cut is not None and m < cut:
            why = "pixel match under the cut"
        else:
            why = "grouped with another family"
        reasons[why].append({"copy": a, "source": b, "match": round(m, 4),
                             "rank": min(ranks) + 1 if ranks else None,
                             "ratio": round(min(ratios), 3) if ratios else None})
    return {"missed": len(copies) - len(hit), "families": len(copies), "pixel_cut": cut,
            "k_candidates": k, "candidate_ratio": ratio_max,
            "counts": {r: len(v) for r, v in reasons.items()},
            "match_missed_median": round(float(np.nanmedian(matches_missed)), 4)
            if matches_missed else None,
            "match_found_median": round(float(np.nanmedian(matches_found)), 4)
            if matches_found else None,
            "detail": reasons}


# ------------------------------------------------------------------------------ contact sheet


def contact_sheet(run: Path, dest: Path, title: str, k: int = SHEET_PAIRS) -> dict:
    """Our top ``k`` leak pairs by score (train thumbnail | test image, pixel match under)."""
    from PIL import Image, ImageDraw, ImageFont

    from worker.pipeline.findings.pixels import grey_views, match_pairs

    t = load_table(run, "leak")
    issue, score, related = t["issue"].astype(bool), t["score"], t["related"]
    idx = np.flatnonzero(issue)
    idx = idx[np.argsort(-score[idx], kind="stable")][:k]
    thumbs = np.load(run / "thumbnails.npy", mmap_mode="r")
    tthumbs = np.load(run / "test_thumbnails.npy", mmap_mode="r")
    samples = read_csv(run / "samples.csv")
    tests = read_csv(run / "test_samples.csv")
    a, b = idx, related[idx]
    match = match_pairs(grey_views(thumbs[a]), np.arange(len(a)), grey_views(tthumbs[b]),
                        np.arange(len(b))) if len(a) else np.zeros(0)
    try:
        font = ImageFont.load_default(size=12)
        big = ImageFont.load_default(size=15)
    except TypeError:  # Pillow without FreeType sizes
        font = big = ImageFont.load_default()
    side, gap, cols = 96, 4, 4
    cell_w, cell_h = 2 * side + gap + 36, side + 52
    rows_n = max(1, -(-len(a) // cols))
    head = 44
    sheet = Image.new("RGB", (cols * cell_w + 10, head + rows_n * cell_h + 6), "white")
    draw = ImageDraw.Draw(sheet)
    draw.text((10, 6), title, fill="black", font=big)
    draw.text((10, 26), f"{int(issue.sum())} train images marked; top {len(a)} by pixel match. "
              "Left: train; right: the test image it leaks to.", fill="#444", font=font)
    for p, (i, j, m) in enumerate(zip(a.tolist(), b.tolist(), match.tolist(), strict=True)):
        x0 = 10 + (p % cols) * cell_w
        y0 = head + (p // cols) * cell_h
        for q, img in enumerate((thumbs[i], tthumbs[j])):
            im = Image.fromarray(np.asarray(img)).resize((side, side), Image.Resampling.NEAREST)
            sheet.paste(im, (x0 + q * (side + gap), y0))
        li, lj = samples[i]["label"], tests[j]["label"]
        draw.text((x0, y0 + side + 3), f"match {m:.3f}" + ("" if li == lj else "  LABELS DIFFER"),
                  fill="black" if li == lj else "#b00", font=font)
        who = f"#{i} | test {j} · {li}" if li == lj else f"#{i} {li} | test {j} {lj}"
        draw.text((x0, y0 + side + 17), who, fill="#333", font=font)
        draw.text((x0, y0 + side + 31), Path(samples[i]["path"]).name + " | "
                  + tests[j]["path"].split("/", 1)[-1], fill="#777", font=font)
    dest.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(dest)
    return {"path": str(dest), "pairs": [{"train": int(i), "test": int(j), "match": round(m, 4),
                                          "train_path": samples[i]["path"],
                                          "test_path": tests[j]["path"]}
                                         for i, j, m in zip(a.tolist(), b.tolist(),
                                                            match.tolist(), strict=True)]}


# -------------------------------------------------------------------------------------- print


def _f(x, nd: int = 3) -> str:
    return "—" if x is None else f"{x:.{nd}f}"


def print_dup_table(row: str, res: dict, mark: str) -> None:
    log(f"| detector{mark} | rule | marked | P | R | F1 | R {row} | F1 grp | seconds |")
    log("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, s in res.items():
        grp = s.get("group_rule", s) if s["rule"] == "related" else s
        log(f"| {name} | {s['rule']} | {s['marked']} | {_f(s['precision'])} | "
            f"{_f(s['recall'])} | {_f(s['f1'])} | {_f(s['recall_by_strength'].get(row))} | "
            f"{_f(grp['f1'])} | {_f(s['seconds'], 2)} |")


def print_outlier_table(res: dict, mark: str) -> None:
    log(f"| detector{mark} | flagged | P | R | F1 | AUROC | seconds | recall by source |")
    log("|---|---:|---:|---:|---:|---:|---:|---|")
    for name, s in res.items():
        by = ", ".join(f"{k} {v:.2f}" for k, v in s["recall_by_source"].items())
        log(f"| {name} | {s['marked']} | {_f(s['precision'])} | {_f(s['recall'])} | "
            f"{_f(s['f1'])} | {_f(s['auroc'])} | {_f(s['seconds'], 2)} | {by} |")


def print_leak_table(res: dict, mark: str) -> None:
    log(f"| detector{mark} | train flagged | both with ours | seconds |")
    log("|---|---:|---:|---:|")
    for name, s in res["detectors"].items():
        log(f"| {name} | {s['flagged']} | {res['overlap_with_ours'][name]} | "
            f"{_f(s['seconds'], 2)} |")
    names = list(res["jaccard"])
    log("")
    log("Jaccard of the flagged train sets:")
    log("| | " + " | ".join(names) + " |")
    log("|---|" + "---:|" * len(names))
    for a in names:
        log(f"| {a} | " + " | ".join(_f(res["jaccard"][a][b]) for b in names) + " |")


def targets(rows: dict, full: bool, mark: str) -> list[dict]:
    """Our F1 / best peer F1 per row, outlier AUROC, and (full) time ratios."""
    out = []
    for row, r in rows.items():
        s = r.get("scores")
        if not s:
            continue
        if row in STRENGTHS or row == "outliers":
            peers = {k: v for k, v in s.items() if k != "ours"}
            best = max(peers, key=lambda k: peers[k]["f1"])
            pf, of = peers[best]["f1"], s["ours"]["f1"]
            need = 1.05 if pf < 0.9 else 1.0
            ratio = of / pf if pf else (float("inf") if of else None)
            out.append({"row": row, "what": "F1", "ours": of, "best_peer": best,
                        "peer": pf, "ratio": ratio, "target": need,
                        "pass": ratio is not None and ratio >= need})
        if row == "outliers":
            peers = {k: v for k, v in s.items() if k != "ours" and v["auroc"] is not None}
            best = max(peers, key=lambda k: peers[k]["auroc"])
            oa, pa = s["ours"]["auroc"], peers[best]["auroc"]
            ratio = oa / pa if pa else None
            out.append({"row": row, "what": "AUROC", "ours": oa, "best_peer": best, "peer": pa,
                        "ratio": ratio, "target": 1.0,
                        "pass": ratio is not None and ratio >= 1.0})
        peers_t = {}
        if row == "leak":
            det = s["detectors"]
            ours_t = det["ours"]["seconds"]
            peers_t = {k: v["seconds"] for k, v in det.items() if k != "ours"}
        else:
            ours_t = s["ours"]["seconds"]
            peers_t = {k: v["seconds"] for k, v in s.items() if k != "ours"}
        fastest = min(peers_t, key=peers_t.get)
        comp = (r.get("findings_compute_seconds") or {}).get("total")
        pt = max(peers_t[fastest], 1e-9)
        out.append({"row": row, "what": "time", "ours": ours_t, "best_peer": fastest,
                    "peer": peers_t[fastest], "ratio": ours_t / pt,
                    "ours_in_process": comp, "ratio_in_process": comp / pt if comp else None,
                    "target": 1.0 if full else None,
                    "pass": (ours_t / pt <= 1.0) if full else None})
    log("")
    log(f"targets{mark} (ours / best peer; time: ours / fastest peer, lower is better):")
    for t in out:
        if t["what"] == "time":
            verdict = ("PASS" if t["pass"] else "FAIL") if t["target"] else "(target on --full)"
            log(f"  {t['row']:<9} time   {t['ours']:8.2f} s / {t['peer']:8.2f} s "
                f"({t['best_peer']}) = {t['ratio']:.2f}  target <= 1.00 at 50k  {verdict}"
                f"  [in-process {_f(t['ours_in_process'], 2)} s: {_f(t['ratio_in_process'], 2)}]")
        else:
            r = "inf" if t["ratio"] == float("inf") else _f(t["ratio"])
            log(f"  {t['row']:<9} {t['what']:<6} {_f(t['ours'])} / {_f(t['peer'])} "
                f"({t['best_peer']}) = {r}  target >= {t['target']:.2f}  "
                f"{'PASS' if t['pass'] else 'FAIL'}")
    return out


# --------------------------------------------------------------------------------------- main


def machine() -> str:
    load = os.getloadavg() if hasattr(os, "getloadavg") else ()
    return (f"{time.strftime('%Y-%m-%d')} · {os.cpu_count()} cores · {platform.machine()} · "
            f"load {', '.join(f'{x:.1f}' for x in load)}")


def bench_one(size: str, feats: str, data: Path, out: Path, only: list[str], sheet: bool,
              results: dict) -> dict:
    mark = FEATURES[feats]["flag"]
    base = out / f"{size}-{feats}"
    key = f"{size}-{feats}"
    rows = results.setdefault(key, {"features": FEATURES[feats]["title"], "rows": {}})["rows"]
    for row in only:
        log("")
        log(f"== {key} · {row} " + "=" * 40)
        rdir = base / row
        run = rdir / "run"
        info = make_run(run, data, row, size, feats)
        ours_secs = time_findings(run)
        parts = ours_breakdown(run)
        split = ", ".join(f"{k.split(':')[1]} {v:.2f}" for k, v in parts.items() if ":" in k)
        log(f"  curator findings --redo: {ours_secs:.2f} s; in-process {parts['total']:.2f} s "
            f"({split})")
        truth = read_truth(run)
        n = len(read_csv(run / "samples.csv"))
        leak = row == "leak"
        inp = peer_inputs(run, data, rdir / "peers", leak)
        peers = {p: run_peer(p, inp["args"], rdir / "peers", n, leak) for p in PEERS}
        r: dict = {"run": str(run), "pipeline": info, "n_samples": n,
                   "findings_seconds": ours_secs, "findings_compute_seconds": parts,
                   "peer_versions": {p: v.get("version") for p, v in peers.items()},
                   "peer_wall_seconds": {p: v.get("wall_seconds") for p, v in peers.items()}}
        n_dup = sum(t["kind"] == "duplicate" for t in truth)
        n_out = sum(t["kind"] == "outlier" for t in truth)
        log("")
        if row in STRENGTHS:
            r["scores"] = score_duplicates(run, peers, ours_secs, truth)
            log(f"### {row} copies: {n_dup} injected into {n - n_dup:,} CIFAR-10 train images "
                f"({n:,} samples) · {FEATURES[feats]['title']}")
            print_dup_table(row, r["scores"], mark)
            r["ours_misses"] = miss = duplicate_misses(run, truth)
            log(f"ours missed {miss['missed']} of {miss['families']} families: " + ", ".join(
                f"{v} {k}" for k, v in miss["counts"].items() if v)
                + f" (pixel cut {_f(miss['pixel_cut'])}; median pixel match of the missed "
                  f"copies to their source {_f(miss['match_missed_median'])}, of the found "
                  f"{_f(miss['match_found_median'])})")
        elif row == "outliers":
            r["scores"] = score_outliers(run, peers, ours_secs, truth)
            log(f"### outliers: {n_out} from other domains in {n - n_out:,} CIFAR-10 train "
                f"images · {FEATURES[feats]['title']}")
            print_outlier_table(r["scores"], mark)
        else:
            r["scores"] = score_leaks(run, peers, ours_secs)
            m = len(read_csv(run / "test_samples.csv"))
            log(f"### leaks: {n:,} CIFAR-10 train images against {m:,} test images (no "
                f"injection, no truth) · {FEATURES[feats]['title']}")
            print_leak_table(r["scores"], mark)
            if sheet:
                dest = ROOT / "docs" / "leaks.png"
                title = (f"tsne-curator leak findings: CIFAR-10 {size} train vs test "
                         f"({n:,} / {m:,}), {feats}{mark} features")
                r["contact_sheet"] = contact_sheet(run, dest, title)
                log(f"contact sheet: {dest} ({len(r['contact_sheet']['pairs'])} pairs)")
        log(f"(ours: `curator findings --redo` wall time, every kind; peers: their own "
            f"seconds for this kind; pipeline {info.get('seconds') or 0:.0f} s)")
        rows[row] = r
        (out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    results[key]["targets"] = targets(rows, size == "full", mark)
    (out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    return results


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--full", action="store_true", help="50,000 / 10,000 instead of the mini")
    ap.add_argument("--features", choices=("lite0", "resnet56", "both"), default="lite0")
    ap.add_argument("--only", default=",".join(ROWS), help=f"rows, of {','.join(ROWS)}")
    ap.add_argument("--out", default="/tmp/findings_bench")
    ap.add_argument("--no-sheet", action="store_true", help="leave docs/leaks.png alone")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    size = "full" if args.full else "mini"
    only = [r for r in args.only.split(",") if r]
    bad = [r for r in only if r not in ROWS]
    if bad:
        raise SystemExit(f"unknown rows {bad}: use {','.join(ROWS)}")
    for need in (CURATOR, BENCH_PY):
        if not need.exists():
            raise SystemExit(f"{need} is missing (make install; bash bench/peers_venv.sh)")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    data = unpack(size, out / "data")
    if data is None:
        log(f"skipped: {SHARED / SIZES[size]['archive']} is missing (set CURATOR_SHARED_DATA)")
        return 0
    path = out / "results.json"
    results = json.loads(path.read_text()) if path.is_file() else {}
    results["machine"] = machine()
    log(f"findings benchmark · {size} · {results['machine']}")
    sets = ["lite0", "resnet56"] if args.features == "both" else [args.features]
    for feats in sets:
        if feats == "resnet56" and not (SHARED / "weights" / "resnet56-4bfd9763.th").is_file():
            log("skipped resnet56: the weights are missing")
            continue
        bench_one(size, feats, data, out, only, not args.no_sheet and feats == "lite0", results)
    log(f"\nresults: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
