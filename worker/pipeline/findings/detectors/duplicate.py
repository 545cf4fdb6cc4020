"""``duplicate``: exact and near copies of one picture, in groups with one kept.

- Exact copies share a hash of their decoded pixels (sources/pixel_hash.py).
- Near copies are found among each sample's ``K_CANDIDATES`` nearest samples in the
  map's PCA space (the stored neighbour index) that lie within ``CANDIDATE_RATIO`` × the
  data's typical nearest-neighbour distance (:attr:`~.index.FeatureSpace.scale`). A
  candidate pair is a copy when its pixel match (findings/pixels.py: small grey images,
  best over mirroring and one-pixel shifts) reaches the cut, or, for runs without
  images, when its feature distance is within ``FEATURE_ONLY`` × the typical. The cut is
  ``threshold`` or, where more is needed, what different pictures of this dataset
  reach: the 99.9th percentile of the match between each sample and its 10th to 20th
  nearest samples (rarely copies). Tiny or uniform images (8-px digits) match their
  neighbours closely (0.97 there against 0.87 on CIFAR-10), and the cut follows. Features
  alone cannot tell a re-encoded copy from a close but different picture (a JPEG-and-
  resize copy of a CIFAR image lies at 0.86× the typical distance, and 1% of different
  pictures lie closer than 0.48×: docs/benchmarks.md); pixels can.
- Copies that a crop, a stretch, a rotation or a blur moved out of that reach are found by
  a second test (findings/warps.py): candidates also from a copy-robust index of small
  mirror-invariant grey keys, matched over warped views (zooms, stretches, shifts,
  rotations, refined past the grid) with its own tail and ratio tests. It never decides a
  drop: that rests on the pixel match to the kept copy (below), so a copy only the warp
  match recognises is proposed.
- Groups are stars, not chains: the sample with the most near copies (ties: the lowest
  index) takes every copy not yet grouped, then the next; every member is a copy of its
  group's centre, so A≈B≈C never joins A and C when they are not alike (single-linkage
  components would).
- One member per group is kept: the one whose label the evidence supports best (lowest
  mislabel score), ties to the lowest index; the others are marked. A marked copy is
  dropped by default when its pixels equal the kept copy's, or when its match to the kept
  copy reaches the drop cut (``drop_threshold``, raised as the cut is) and passes the
  stricter ratio test (copies.py ``RATIO_DROP``); the others are proposed: listed, kept
  until a person decides.
- A group whose members carry different labels is also a label finding (label.py).
"""

from __future__ import annotations

import numpy as np

from worker.pipeline.findings.base import DROP, FindingKind, FindingTable, View
from worker.pipeline.findings.context import FindingContext
from worker.pipeline.findings.copies import (
    RATIO_DROP,
    TAIL_DROP,
    TAIL_PROPOSE,
    copy_pairs,
    stands_out,
)
from worker.pipeline.findings.kind_registry import register
from worker.pipeline.findings.pixels import match_pairs
from worker.pipeline.findings.warps import (
    RATIO_WARP,
    TAIL_WARP,
    listed,
    warp_match,
    warped_words,
)
from worker.pipeline.metrics import f1_of, prf


def exact_units(hashes: np.ndarray | None, n: int) -> np.ndarray:
    """Each sample's unit: the lowest index among the samples with its pixel hash
    (itself when it has no exact copy). int64 (N,)."""
    unit = np.arange(n, dtype=np.int64)
    if hashes is None:
        return unit
    order = np.argsort(hashes, kind="stable")
    h = hashes[order]
    starts = np.flatnonzero(np.r_[True, h[1:] != h[:-1]])
    first = order[starts]  # stable sort: the lowest index of each run of equal hashes
    unit[order] = np.repeat(first, np.diff(np.r_[starts, n]))
    return unit


def star_groups(units: np.ndarray, pairs: np.ndarray, n: int) -> np.ndarray:
    """Group ids (-1: no group) from exact ``units`` (N,) and near pairs (P, 2) of sample
    indices: stars around the unit with the most partners (module docstring)."""
    group = np.full(n, -1, np.int64)
    u = units[pairs] if len(pairs) else np.empty((0, 2), np.int64)
    u = u[u[:, 0] != u[:, 1]]
    both = np.unique(np.sort(np.concatenate([u, u[:, ::-1]]), axis=1), axis=0) if len(u) \
        else u
    partners: dict[int, list[int]] = {}
    for a, b in both.tolist():
        partners.setdefault(a, []).append(b)
        partners.setdefault(b, []).append(a)
    centre_of = np.full(n, -1, np.int64)
    for c in sorted(partners, key=lambda x: (-len(partners[x]), x)):
        free = [p for p in partners[c] if centre_of[p] < 0]
        if centre_of[c] >= 0 or not free:  # taken, or its partners all are: not a centre
            continue
        centre_of[c] = c
        centre_of[free] = c
    # Exact copies: every sample follows its unit (a unit alone with copies is a group).
    multi = np.bincount(units, minlength=n) > 1
    centre_of[multi & (centre_of < 0)] = np.flatnonzero(multi & (centre_of < 0))
    centre = centre_of[units]
    grouped = np.flatnonzero(centre >= 0)
    _, ids = np.unique(centre[grouped], return_inverse=True)
    group[grouped] = ids
    return group


# Scored against injected copies (FindingKind.score_truth): a source and its injected
# copies (one, or up to ten with --duplicate-family) form a family. A marked sample is
# right when its kept copy is of its own family (whichever member was kept), or when it
# shares a group with another member of its family; a copy is found when it shares a group
# with another member of its family and one of the two is marked (both may be dropped for
# a third, nearly identical sample). Recall is over copies: with one copy each, over
# families. Natural duplicates the dataset already held count against precision, so
# precision is a lower bound.
def duplicate_scores(marked: np.ndarray, related: np.ndarray, truth_rows: list[dict],
                     group: np.ndarray | None = None) -> dict:
    """P/R/F1 of duplicate marks against injected copies, and recall per strength
    (``group``: the duplicate kind's group per sample, -1 none)."""
    n = len(marked)
    family = np.arange(n)
    copies = [r for r in truth_rows if r["kind"] == "duplicate"]  # its own rows
    for r in copies:
        family[r["index"]] = r["source"]
    group = np.full(n, -1) if group is None else group
    found = np.flatnonzero(marked)
    grouped = {(int(group[r["index"]]), r["source"]) for r in copies
               if group[r["index"]] >= 0 and group[r["index"]] == group[r["source"]]
               and (marked[r["index"]] or marked[r["source"]])}
    together = {f for _, f in grouped}
    right = found[((related[found] >= 0)
                   & (family[found] == family[np.maximum(related[found], 0)]))
                  | np.isin(family[found], list(together))]
    members: dict[int, list[int]] = {}
    for r in copies:
        members.setdefault(r["source"], [r["source"]]).append(r["index"])

    def found_copy(i: int, source: int) -> bool:
        g = group[i]
        return bool(g >= 0 and any(group[m] == g and (marked[i] or marked[m])
                                   for m in members[source] if m != i))

    hit = np.array([found_copy(r["index"], r["source"]) for r in copies], bool)
    out = prf(len(right), len(found), len(copies))
    # Recall is over copies, not marks: it replaces prf's, and F1 follows it (from the
    # rounded precision and recall, as the published tables were computed).
    out["recall"] = round(float(hit.mean()), 4) if copies else 0.0
    out["f1"] = round(f1_of(out["precision"], out["recall"]), 4)
    how = np.array([c["how"] for c in copies])
    out["recall_by_strength"] = {h: round(float(hit[how == h].mean()), 4)
                                 for h in sorted(set(how.tolist()))}
    return out


def near_copy_pairs(ctx: FindingContext, cut: float, warp_cut: np.ndarray | None
                    ) -> tuple[np.ndarray, np.ndarray]:
    """The candidate pairs that are copies by the pixel test at ``cut`` or, where there are
    images, by the warp test at ``warp_cut`` (findings/warps.py): int64 (P, 2); and each
    sample's best pixel match among its candidates (copies.py ``copy_pairs``), (N,)."""
    sp, near = ctx.space, ctx.near
    pairs, best = copy_pairs(sp.neighbours, sp.distances / sp.scale, ctx.grey, ctx.grey,
                             cut, near and near.distinct)
    if ctx.warp is not None:  # copies that move: a second test
        pairs = np.unique(np.concatenate([pairs, ctx.warp.pairs(warp_cut, RATIO_WARP)]),
                          axis=0)
    return pairs, best


def kept_members(group: np.ndarray, support: np.ndarray) -> np.ndarray:
    """Each grouped sample's kept member (-1: no group): the one whose label the evidence
    supports best (lowest mislabel ``support``), then the lowest index. int64 (N,)."""
    rep = np.full(len(group), -1, np.int64)
    members = np.flatnonzero(group >= 0)
    if not len(members):
        return rep
    order = members[np.lexsort((members, support[members], group[members]))]
    firsts = order[np.r_[True, group[order][1:] != group[order][:-1]]]
    rep_of_group = np.empty(group.max() + 1, np.int64)
    rep_of_group[group[firsts]] = firsts
    rep[members] = rep_of_group[group[members]]
    return rep


def group_facts(ctx: FindingContext, group: np.ndarray, rep: np.ndarray,
                units: np.ndarray) -> dict[str, np.ndarray]:
    """What the why-lines and the drop read of each grouped sample against its kept member
    (N,) each: ``ratio`` (feature distance over the typical), ``match`` (pixel match),
    ``warped`` (warp match), ``exact`` (same pixels), ``group_size`` and
    ``label_conflict`` (its group holds other labels, its kept member's among them)."""
    n, labels, x = len(group), ctx.samples.labels, ctx.space.x
    members = np.flatnonzero(group >= 0)
    diff = x[members] - x[rep[members]]
    ratio = np.zeros(n, np.float32)
    ratio[members] = np.sqrt((diff * diff).sum(1)) / ctx.space.scale
    match = np.zeros(n, np.float32)
    warped = np.zeros(n, np.float32)
    if ctx.grey is not None and len(members):
        match[members] = match_pairs(ctx.grey, members, ctx.grey, rep[members])
        copies = members[rep[members] != members]  # not the kept copy with itself
        warped[copies] = warp_match(ctx.views, copies, ctx.views, rep[copies]).max(1)
    exact = np.zeros(n, bool)
    exact[members] = units[members] == units[rep[members]]
    size = np.zeros(n, np.int64)
    n_labels = np.zeros(n, np.int64)
    if len(members):
        size[members] = np.bincount(group[members])[group[members]]
        pairs_gl = np.unique(np.stack([group[members], labels[members]], 1), axis=0)
        n_labels[members] = np.bincount(pairs_gl[:, 0])[group[members]]
    conflict = (n_labels > 1) & (rep >= 0) & (labels != labels[np.maximum(rep, 0)])
    return {"ratio": ratio, "match": match, "warped": warped, "exact": exact,
            "group_size": size, "label_conflict": conflict}


def copy_scores(ctx: FindingContext, best: np.ndarray, units: np.ndarray) -> np.ndarray:
    """What copies are ranked by (N,): how far their evidence lies above what different
    pictures here reach (robust spreads, the larger of the pixel and warp tests'); without
    images, ``best`` (feature distance). An exact copy ranks first."""
    near, warp = ctx.near, ctx.warp
    score = best.copy() if near is None else \
        np.maximum(near.spreads(best), warp.spreads(warp.best))
    exact_any = np.bincount(units, minlength=len(units))[units] > 1
    score[exact_any] = 1.0 if near is None else float(score.max(initial=0.0)) + 1.0
    return score


@register
class DuplicateKind(FindingKind):
    name = "duplicate"
    # 1: feature distance; 2: pixel match among feature candidates; 3: the ratio test,
    # proposed or dropped; 4: the warp match (findings/warps.py); 5: its tail at 3.5,
    # a caption band; 6: the tails read off the ring of 11th-20th neighbours (copies.RING); 7:
    # distinctness past a family of copies
    version = "7"
    title = "near-duplicate"
    decision = DROP
    order = 10
    columns = ("duplicate_group", "duplicate_of")
    threshold = "duplicate_threshold"
    drop_threshold = "duplicate_drop_threshold"
    symbol = "square"
    advice = ("one copy per group is kept, the others dropped unless kept: a copy costs "
              "compute every epoch and adds nothing; keep another member with 'a'")

    def score_truth(self, table: FindingTable, marked: np.ndarray, truth: list[dict]) -> dict:
        return duplicate_scores(marked, table.related, truth, table.facts.get("group"))

    def compute(self, ctx: FindingContext) -> FindingTable:
        n, t, scale = len(ctx.samples), float(self.cut(ctx)), ctx.space.scale
        units = exact_units(ctx.pixel_hash, n)
        cut = ctx.copy_cut(t, TAIL_PROPOSE) or t
        warp_cut = ctx.warp_cut(t, TAIL_WARP)
        pairs, best = near_copy_pairs(ctx, cut, warp_cut)
        group = star_groups(units, pairs, n)
        support = ctx.label_score if ctx.label_score is not None else np.zeros(n, np.float32)
        rep = kept_members(group, support)
        facts = group_facts(ctx, group, rep, units)
        issue = (rep >= 0) & (rep != np.arange(n))
        drop, drop_cut = self._drops(ctx, issue, facts, cut)
        return FindingTable(
            issue, copy_scores(ctx, best, units), np.where(issue, rep, -1),
            {"group": group, "representative": rep, **facts,
             "support": support.astype(np.float32)},
            {"threshold": t, "pixel_cut": cut if ctx.near is not None else None,
             "warp_cut": listed(warp_cut), "drop_cut": drop_cut, "scale": scale,
             "groups": int(group.max() + 1) if (group >= 0).any() else 0,
             "exact_copies": int((issue & facts["exact"]).sum())}, drop)

    def _drops(self, ctx: FindingContext, issue: np.ndarray, facts: dict[str, np.ndarray],
               cut: float) -> tuple[np.ndarray, float | None]:
        """Which marked copies are dropped by default (N,), and the drop cut: identical
        pixels, or a match to the kept copy that reaches the drop cut and stands out from
        the sample's other near pictures (copies.py); the other copies are proposed.
        Without images the feature distance decides alone (every mark is dropped)."""
        near = ctx.near
        if near is None:
            return issue.copy(), None
        drop_cut = ctx.copy_cut(max(float(self.drop_cut(ctx)), cut), TAIL_DROP)
        match = facts["match"]
        strong = (match >= drop_cut) & stands_out(match, near.distinct, RATIO_DROP)
        return issue & (facts["exact"] | strong), drop_cut

    def column_values(self, table: FindingTable, view: View) -> dict[str, list[str]]:
        group = table.facts.get("group", np.full(len(table), -1))
        rep = table.facts.get("representative", np.full(len(table), -1))
        return {"duplicate_group": ["" if g < 0 else str(g) for g in group.tolist()],
                "duplicate_of": [str(r) if m else "" for r, m in
                                 zip(rep.tolist(), table.issue.tolist(), strict=True)]}

    def why(self, table: FindingTable, i: int, view: View) -> str:
        f, labels, classes = table.facts, view.labels, view.classes
        rep, size = int(f["representative"][i]), int(f["group_size"][i])
        if rep < 0:
            return "not a duplicate"
        same = labels[i] == labels[rep]
        label_text = "same label" if same else \
            f"labelled {classes[int(labels[i])]}, the kept copy {classes[int(labels[rep])]}"
        kept_why = ("the best-supported label" if f["support"][rep] < f["support"][i]
                    else "the lowest index of equal support")
        if rep == i:
            return f"kept copy of a group of {size} near-duplicates ({kept_why})"
        how = "identical pixels to" if f["exact"][i] else "near-duplicate of"
        pixels = f", pixel match {float(f['match'][i]):.2f}" \
            if table.info.get("pixel_cut") is not None else ""
        if "warped" in f and pixels:
            pixels += warped_words(float(f["match"][i]), float(f["warped"][i]))
        dist = "" if f["exact"][i] else \
            f"{pixels}, feature distance {float(f['ratio'][i]):.2f}× the typical"
        return f"{how} #{rep} (kept: {kept_why} of {size}){dist}, {label_text}"
