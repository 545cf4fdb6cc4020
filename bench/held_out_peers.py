"""The peers on the held-out rows: cleanlab, fastdup and FiftyOne's rules, and plain cosine
cuts on our features, scored on the same runs and truth as ours (issue 46).

    PYTHONPATH=. .venv/bin/python -m bench.held_out_peers [--out /tmp/held_out] [--full]
        [--rows chosen,held-out,fresh]

Reads the runs ``python -m bench.held_out`` made (run it first; same ``--out``) and the
bench venv (``bash bench/peers_venv.sh``). Every peer runs with its shipped defaults,
through ``bench/peer_findings.py`` (its docstring says how; FiftyOne cannot start offline,
so its rules are applied by hand to our features, centred, cosine 0.2, as its source does).
Beside them, two cuts a user could make with no tool at all, on our features (EfficientNet-
Lite0, uncentred cosine): a sample and its nearest neighbour are copies at cosine ≥ 0.8,
and the **best single cut on this very row** (the grid 0.70–0.99: chosen on the row it is
reported on, so an upper bound no fixed cut reaches).

Scoring, per kind, on the truth ``injected.csv`` holds:

- copies: by family, as ``bench/findings.py`` scores them. Ours and FiftyOne name the kept
  copy (the related rule); cleanlab, fastdup and the cosine cuts flag whole groups (the
  group rule: a family is found when both its members share a group, and a group of k
  counts k − 1 claims). Ours are also given by the group rule, to compare like with like;
- leaks: a flagged train sample is right when it is an injected leak (which test image it
  names is not checked: peers do not say; ours by the same rule, and by its stricter own);
- outliers: P/R/F1 of the flags, AUROC of the score, recall per source.

CIFAR-10's own near-copies count as wrong for everyone: precision is a lower bound. Prints
one table per kind and writes ``OUT/peers-<size>.json``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from bench import peer_findings as pf
from bench.common import machine
from bench.findings import (
    PEERS,
    _prf,
    group_rule,
    load_table,
    peer_inputs,
    read_truth,
    run_peer,
    score_duplicates,
    score_outliers,
    test_features,
)
from bench.held_out import ROWS, _data

PLAIN_COSINE = 0.8  # the "plain cosine cut at 0.8 on our own features, uncentred"
COSINE_GRID = np.round(np.arange(0.70, 0.995, 0.01), 2)


def nearest_cosine(a: np.ndarray, b: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Each row of ``a``'s nearest row of ``b`` (of ``a`` itself, not itself, when None)
    by cosine on the raw (uncentred) features: (index (N,), cosine (N,))."""
    ua = pf._unit(a)
    idx, dist, _ = pf._cosine_search(ua, None if b is None else pf._unit(b))
    return idx[:, 0], 1.0 - dist[:, 0]


def cosine_groups(nn: np.ndarray, sim: np.ndarray, cut: float) -> np.ndarray:
    """Connected components of the pairs (i, nn[i]) with cosine ≥ ``cut``, both ends of
    a pair flagged (as fastdup flags them); -1: in no pair."""
    pairs = np.stack([np.flatnonzero(sim >= cut), nn[sim >= cut]], 1)
    ends = np.zeros(len(nn), bool)
    ends[pairs.ravel()] = True
    return pf._components(len(nn), pairs, ends)


def _leak_prf(flag: np.ndarray, leaks: np.ndarray) -> dict:
    right = int(flag[leaks].sum())
    return _prf(right, int(flag.sum()), right, len(leaks))


def score_row(run: Path, peers: dict) -> dict:
    """Every detector's scores on one run (module docstring)."""
    truth = read_truth(run)
    leaks = np.array([r["index"] for r in truth if r["kind"] == "leak"], np.int64)
    out = {"duplicate": score_duplicates(run, peers, 0.0, truth),
           "outlier": score_outliers(run, peers, 0.0, truth),
           "leak": {"ours": _leak_prf(load_table(run, "leak")["issue"].astype(bool), leaks)}}
    for peer, res in peers.items():
        out["leak"][peer] = _leak_prf(np.asarray(res["leak"]["flag"], bool), leaks)

    features = np.load(run / "features.npy", mmap_mode="r")
    nn, sim = nearest_cosine(features)
    _, tsim = nearest_cosine(features, np.load(test_features(run)))
    groups = {float(c): cosine_groups(nn, sim, c) for c in COSINE_GRID}
    by_cut = {c: group_rule(g >= 0, g, truth) for c, g in groups.items()}
    leak_by_cut = {float(c): _leak_prf(tsim >= c, leaks) for c in COSINE_GRID}
    best = max(by_cut, key=lambda c: by_cut[c]["f1"])
    best_leak = max(leak_by_cut, key=lambda c: leak_by_cut[c]["f1"])
    out["duplicate"][f"cosine {PLAIN_COSINE}"] = by_cut[PLAIN_COSINE]
    out["duplicate"]["best cosine (on this row)"] = {**by_cut[best], "cut": best}
    out["leak"][f"cosine {PLAIN_COSINE}"] = leak_by_cut[PLAIN_COSINE]
    out["leak"]["best cosine (on this row)"] = {**leak_by_cut[best_leak], "cut": best_leak}
    out["n"] = len(features)
    return out


def _cell(s: dict) -> str:
    return f"{s['precision']:.3f} / {s['recall']:.3f} / **{s['f1']:.3f}**"


def print_tables(results: dict) -> None:
    """Markdown: one table per kind, a column per row."""
    rows = [r for r in ROWS if r in results]
    for kind in ("duplicate", "leak", "outlier"):
        print(f"\n{kind}: P / R / F1" + (", AUROC" if kind == "outlier" else ""))
        print("| detector | " + " | ".join(rows) + " |")
        print("|---|" + "---|" * len(rows))
        names = list(results[rows[0]][kind])
        for name in names:
            cells = []
            for r in rows:
                s = results[r][kind][name]
                cell = _cell(s)
                if kind == "outlier":
                    cell += f", {s['auroc'] if s['auroc'] is not None else '–'}"
                if "cut" in s:
                    cell += f" (cut {s['cut']:.2f})"
                cells.append(cell)
            print(f"| {name} | " + " | ".join(cells) + " |")
        if kind == "duplicate":
            print("| ours, group rule | " + " | ".join(
                _cell(results[r][kind]["ours"]["group_rule"]) for r in rows) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("/tmp/held_out"))
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--rows", default=",".join(ROWS), help="of " + ", ".join(ROWS))
    a = ap.parse_args()
    size = "full" if a.full else "mini"
    print(machine(), flush=True)
    results = {}
    for row in a.rows.split(","):
        run = a.out / size / row
        if not (run / "findings" / "duplicate.npz").is_file():
            raise SystemExit(f"{run}: no findings: run python -m bench.held_out "
                             f"--rows {row}{' --full' if a.full else ''} --out {a.out} first")
        print(row, flush=True)
        # the same images the run was made from (_data unpacks nothing that is there)
        inputs = peer_inputs(run, _data(row, size, a.out), a.out / size / f"{row}-peers",
                             leak=True)
        n = len(inputs["labels"])
        peers = {p: run_peer(p, inputs["args"], a.out / size / f"{row}-peers", n, True)
                 for p in PEERS}
        results[row] = score_row(run, peers)
        results[row]["seconds"] = {p: {k: peers[p][k].get("seconds") for k in
                                       ("duplicate", "outlier", "leak")} for p in PEERS}
    (a.out / f"peers-{size}.json").write_text(json.dumps(results, indent=2))
    print_tables(results)


if __name__ == "__main__":
    main()
