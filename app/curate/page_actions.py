"""What the Curate page's callbacks do, as plain functions of (runs root, run id, inputs).

Callbacks in the Curate page's components (``app/curate/``) only unpack Dash inputs and
call these, so every behaviour here is tested without a browser.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from app.caching import memoized
from app.curate.figures import MARKER_STYLE, finding_slots, look_table, override_codes, typed_array
from app.run_data import RunData, RunState, current_state, run_data
from worker.pipeline.curation.cluster_step import set_cut
from worker.pipeline.curation.snapshot import summary_rows
from worker.pipeline.errors import InputError
from worker.pipeline.findings import DROP, View, kinds
from worker.pipeline.findings.step import PERSON_DECIDED, marks
from worker.pipeline.findings.testsplit import read_test_paths
from worker.pipeline.map.clustering import ALWAYS_FLAGGED, NOISE_FLAGGED, auto_eps, flag_bits
from worker.pipeline.map.dbscan import SMALL_N, check_params, noise_until
from worker.pipeline.storage.curation_store import CurationStore, open_store
from worker.pipeline.storage.decision_log import Decided, last_decision

# Filled by str.format here and by assets/class_map.js in the browser: one wording for both.
# The finding kinds besides label (worker/pipeline/findings), each counted under its name.
FINDING_KEYS = tuple(k.name for k in kinds() if k.name != "label")
# A typed eps this close to the stored one is no change: the boxes' precision (the browser
# gets it in the model, client_model).
TYPED_TOLERANCE = 1e-4
STATUS_TEMPLATE = ("{kept} of {size} kept · {noise} DBSCAN noise · {flagged} flagged · "
                   "{proposed} proposed · {overridden} overridden · {relabelled} relabelled · "
                   "rule {rule}"
                   + "".join(f" · {{{k}}} {k}" for k in FINDING_KEYS))
# The class list's and the summary's counts, in their order. "overridden": kept or dropped
# by a reviewer with the label as it is; "relabelled": given another class; "proposed":
# kept, but a finding lists it below its kind's drop cut and nobody decided yet.
COUNT_KEYS = ("size", "flagged", "overridden", "relabelled", "kept", "proposed")


def selected_samples(selected: dict | None) -> list[int]:
    """The sample indices in Plotly's ``selectedData`` (points of the class trace)."""
    return [int(p["customdata"]) for p in (selected or {}).get("points", [])
            if p.get("customdata") is not None]


def store_for(runs_root: Path, run_id: str) -> CurationStore:
    return open_store(run_data(runs_root, run_id).run)


@dataclass
class ControlValues:
    """What the parameter controls show for one class."""

    eps: float
    min_samples: int
    eps_max: float


def control_values(data: RunData, state: RunState, code: int) -> ControlValues:
    eps, ms = state.params[code]
    return ControlValues(round(float(eps), 4), int(ms), slider_max(eps))


def control_updates(values: ControlValues, shows: dict, rescale: bool) -> dict:
    """The parameter controls that must change to show ``values``.

    Parameters
    ----------
    values : the class's stored parameters
    shows : what the controls show now: ``eps`` (slider), ``eps_box``, ``eps_max``, ``ms``
        (slider), ``ms_box``; None or text where a box is empty or being edited
    rescale : give the eps slider its range for ``values`` (a class switch). Otherwise the
        range moves only when the stored eps lies past it: a slider does not rescale
        under the user's hand.

    Returns
    -------
    dict of control name → new value, only for controls that show something else (eps to
    within 1e-4, the boxes' precision); ``eps_step`` goes with ``eps_max``
    """
    def number(shown) -> float:  # NaN where a box is empty or holds text: never equal
        try:
            return float(shown)
        except (TypeError, ValueError):
            return float("nan")

    out: dict = {}
    for key, new, tol in (("eps", values.eps, 1e-4), ("eps_box", values.eps, 1e-4),
                          ("ms", values.min_samples, 0), ("ms_box", values.min_samples, 0)):
        if not abs(number(shows.get(key)) - new) <= tol:
            out[key] = new
    past = not values.eps <= number(shows.get("eps_max"))  # the stored eps past the range
    if rescale or past:
        out["eps_max"], out["eps_step"] = values.eps_max, values.eps_max / 200
    return out


def slider_max(eps: float) -> float:
    """A slider range that leaves room to triple eps, in round numbers."""
    top = max(3.0 * eps, 0.5)
    magnitude = 10 ** np.floor(np.log10(top))
    return float(np.ceil(top / magnitude) * magnitude)


def set_params(runs_root: Path, run_id: str, code: int | None, eps: float | None,
               min_samples: int | None, all_classes: bool = False,
               tolerance: float = 0.0) -> int:
    """Store (eps, min_samples) for class ``code`` (or every class); returns the revision.

    A class whose stored eps is within ``tolerance`` of ``eps`` (and whose min_samples is
    the same) is left alone: controls echo rounded values, which are not user changes.
    """
    data = run_data(runs_root, run_id)
    store = open_store(data.run)
    params = store.class_params()
    # A number box holding an out-of-range value (eps −3) sends None, like an empty one.
    if eps is None:
        raise InputError("eps must be a number greater than 0: the eps box is empty or "
                         "out of range")
    if min_samples is None:
        raise InputError("min_samples must be a whole number of at least 1: the box is "
                         "empty or out of range")
    if not all_classes and not (isinstance(code, int) and not isinstance(code, bool)
                                and 0 <= code < len(data.samples.classes)):
        raise InputError(f"no class {code!r} in this run: pick one from the class list")
    targets = range(len(data.samples.classes)) if all_classes else [code]
    eps, min_samples = check_params(eps, min_samples,
                                    largest=max(len(data.members[c]) for c in targets))
    what = "all classes" if all_classes else f"class {data.samples.classes[int(code)]}"

    def unchanged(c: int) -> bool:
        old = params.get(c)
        return old is not None and old[1] == int(min_samples) and abs(old[0] - eps) <= tolerance

    store.set_class_params({c: (float(eps), int(min_samples)) for c in targets
                            if not unchanged(c)},
                           f"eps={eps:g}, min_samples={min_samples} for {what}")
    return store.revision()


@dataclass(frozen=True)
class RuleFacts:
    """What the rule makes of one class, for the panel under its parameters.

    ``low``–``high``: the evidence's estimate of how many of its labels are wrong (the
    rule's own issues and suspects; None without a score); ``flagged``: flagged now;
    ``band``: samples whose flag DBSCAN decides; ``by_dbscan``: flagged ones among them;
    ``cut``: how many highest scores a reviewer's cut flags (None: the rule decides);
    ``step``: how far one "flag more / fewer" moves it (1% of the class); ``eps_from`` to
    ``eps_to``: the eps range over which DBSCAN changes the band's flags
    (dbscan.noise_until; inf: never at this min_samples)."""

    rule: str
    size: int
    low: int | None
    high: int | None
    flagged: int
    band: int
    by_dbscan: int
    cut: int | None
    step: int
    eps: float
    min_samples: int
    eps_from: float
    eps_to: float
    eps_half: float  # from this eps, half of the band is no longer noise

    @property
    def can_cut(self) -> bool:
        return self.rule == "adaptive" and self.low is not None

    def sentences(self) -> list[str]:
        """The panel's lines, in words."""
        out = []
        if self.low is not None and self.size:
            pct = f"{100 * self.low / self.size:.1f}–{100 * self.high / self.size:.1f}%"
            out.append(f"Estimated wrong labels: {self.low}–{self.high} of {self.size} ({pct}).")
        out.append(f"{self.flagged} flagged: {self.flagged - self.by_dbscan} whatever DBSCAN "
                   f"says, {self.by_dbscan} because DBSCAN calls them noise (of {self.band} "
                   "it decides).")
        instead = " Flag more or fewer moves the cut instead." if self.can_cut else ""
        if self.cut is not None:
            out.append(f"Cut set by a reviewer: the {self.cut} highest scores are flagged, "
                       "so eps and min_samples cannot change this class's flags. \"Rule's "
                       "cut\" gives them back to the rule and DBSCAN.")
        elif self.band == 0:
            out.append(f"eps and min_samples cannot change this class's flags under rule "
                       f"{self.rule}: none of its flags depends on DBSCAN here.{instead}")
        elif not np.isfinite(self.eps_from):
            out.append(f"At min_samples {self.min_samples} no sample of this class can join "
                       f"a cluster: the {self.band} DBSCAN decides stay flagged whatever eps.")
        else:
            where = (f"from {self.eps_from:.3g} to {self.eps_to:.3g}"
                     if self.eps_to > self.eps_from else f"at {self.eps_from:.3g}")
            half = (f", from {self.eps_half:.3g} half of them"
                    if self.eps_from < self.eps_half < self.eps_to else "")
            out.append(f"eps changes this class's flags only {where} (min_samples "
                       f"{self.min_samples}): below {self.eps_from:.3g} all {self.band} "
                       f"samples DBSCAN decides are flagged{half}, from {self.eps_to:.3g} "
                       f"none. Now eps {self.eps:.3g}."
                       + (instead if self.eps < self.eps_from else ""))
        if not self.can_cut:
            out.append(f"Rule {self.rule} has no score ranking to cut along: its flags "
                       "follow eps and min_samples.")
        return out


def _step(size: int) -> int:
    """How far one "flag more / fewer" moves a class's cut: 1% of it, at least 1."""
    return max(1, round(size / 100))


def rule_facts(data: RunData, state: RunState, code: int) -> RuleFacts:
    idx = data.members[code]
    bits = flag_bits(state.inputs.take(idx), state.rule, len(idx))
    band = (bits & NOISE_FLAGGED > 0) & (bits & ALWAYS_FLAGGED == 0)
    flagged = state.decisions.flagged[idx]
    known = data.score is not None and data.inputs.issue is not None
    low = int(data.inputs.issue[idx].sum()) if known else None
    high = int(data.inputs.suspect[idx].sum()) if known else None
    eps, ms = state.params[code]
    cut = state.cuts.get(code)
    # Per class, rule, cut and min_samples: keeps, drops and eps do not move it.
    until = memoized(("noise_until", str(data.run.path), data.stamp, code, state.rule, cut,
                      int(ms)),
                     lambda: noise_until(data.embedding[idx], np.flatnonzero(band), int(ms)))
    return RuleFacts(state.rule, len(idx), low, high, int(flagged.sum()), int(band.sum()),
                     int((band & flagged).sum()), cut, _step(len(idx)), float(eps), int(ms),
                     *(map(float, np.percentile(until, [0, 100, 50])) if len(until)
                       else (np.inf,) * 3))


def move_cut(runs_root: Path, run_id: str, code: int | None, direction: int) -> int:
    """Flag one step more (``direction`` 1) or fewer (-1) of class ``code``'s highest
    scores, starting from what is flagged now, or give the class back to the rule (0);
    one undoable step (:func:`~worker.pipeline.curation.cluster_step.set_cut`). Returns the
    revision."""
    data = run_data(runs_root, run_id)
    if not (isinstance(code, int) and 0 <= code < len(data.members)):
        raise InputError("pick a class first: the cut is per class")
    state = current_state(data)
    size = len(data.members[code])
    now = state.cuts.get(code)
    base = int(state.decisions.flagged[data.members[code]].sum()) if now is None else now
    cut = None if direction == 0 else min(max(base + direction * _step(size), 0), size)
    name = data.samples.classes[code]
    if direction and cut == base:
        raise InputError(f"class {name}: {'all' if direction > 0 else 'none'} of its "
                         f"{size} samples {'are' if direction > 0 else 'is'} flagged already")
    what = f"flag {'more' if direction > 0 else 'fewer'}: top {cut}" if direction else \
        "the rule's cut"
    set_cut(data.run, code, cut, f"{what} in class {name}", data.samples)
    return open_store(data.run).revision()


def auto_eps_for(runs_root: Path, run_id: str, code: int, min_samples: int) -> int:
    """Set class ``code``'s eps from its k-distance knee; returns the revision."""
    data = run_data(runs_root, run_id)
    check_params(1.0, min_samples)
    eps = auto_eps(data.embedding[data.members[code]], int(min_samples))
    if eps is None:
        raise InputError(f"class {data.samples.classes[code]} has too few points for an "
                         f"automatic eps at min_samples={min_samples}")
    # Stored as computed: rounding it (as the box shows it) could flip a borderline flag.
    return set_params(runs_root, run_id, code, eps, min_samples)


def set_decision(runs_root: Path, run_id: str, sample: int, decision: str) -> int:
    """Keep or drop one sample (as an override); returns the revision."""
    data = run_data(runs_root, run_id)
    store = open_store(data.run)
    store.set_overrides([sample], decision, f"{decision} sample {sample}",
                        n_samples=len(data.samples))
    return store.revision()


def bulk(runs_root: Path, run_id: str, samples: list[int], decision: str | None) -> int:
    """Keep, drop or clear (None) many samples at once; returns the revision."""
    data = run_data(runs_root, run_id)
    store = open_store(data.run)
    if not samples:
        raise InputError("select points first (lasso or box), then choose Keep, Drop or Clear")
    store.set_overrides(samples, decision, f"{decision or 'clear'} {len(samples)} selected",
                        n_samples=len(data.samples))
    return store.revision()


def undo_redo(runs_root: Path, run_id: str, redo: bool) -> tuple[int, str]:
    """Undo (or redo) the run's last decision, as ``curator undo`` and ``Run.undo`` do.

    Returns
    -------
    (revision, description)
        The store's revision after it, and what was undone (or redone).

    Raises
    ------
    InputError
        Nothing to undo (or redo): the same line every door gives, and nothing written.
    """
    store = store_for(runs_root, run_id)
    what = store.undo_or_refuse(redo=redo)
    return store.revision(), what


def class_counts(data: RunData, state: RunState) -> list[dict]:
    """Per-class and total counts (the paper's Table I), for the class list and summary:
    made with the state, once per revision. Read-only: shared by every request."""
    return state.rows or summary_rows(data.samples, state.decisions)


def noise_per_class(data: RunData, state: RunState) -> list[int]:
    """DBSCAN noise points in each class (before the rule and overrides)."""
    noise = state.decisions.clusters == -1
    return np.bincount(data.samples.labels[noise], minlength=len(data.members)).tolist()


def status_text(rows: list[dict], noise: list[int], rule: str) -> str:
    """The one-line run summary over the page: ``rows`` from :func:`class_counts`."""
    return STATUS_TEMPLATE.format(noise=sum(noise), rule=rule,
                                  **{k: rows[-1].get(k, 0) for k in COUNT_KEYS + FINDING_KEYS})


def listed_open(data: RunData, state: RunState, idx: np.ndarray) -> np.ndarray:
    """bool (len(idx),): which of samples ``idx`` a finding lists whatever DBSCAN makes of
    them and no person decided. Such a sample is *proposed* wherever the rule keeps it, so
    the browser's re-cluster counts it so from its look alone (the label rule's own flags
    are dropped, never proposed, and are left out here: they are what the re-cluster
    changes). Only the class's rows are compared by reason: a class switch on a 1.28M-point
    run pays for its class, not for the run."""
    s = data.samples
    view = View(s.paths, s.classes, s.labels, (), np.zeros(len(s), bool), data.findings)
    listed = np.zeros(len(idx), bool)
    for marked in marks(data.findings, view).values():
        listed |= marked[idx]
    return listed & ~np.isin(state.decisions.reason[idx], PERSON_DECIDED)


def client_model(data: RunData, state: RunState, code: int, noise: list[int]) -> dict:
    """What the browser needs to re-cluster class ``code`` itself (assets/class_map.js).

    The coordinates are not repeated: the browser reads them from the plotted trace. The
    rule is not repeated either: each point comes with its look (a row of
    :data:`~app.curate.figures.LOOKS`) for both DBSCAN outcomes, so the browser only re-clusters
    and looks up.

    Returns
    -------
    dict with the stored ``eps`` and ``ms``, the store ``revision`` it reflects, ``looks``
    (:func:`~app.curate.figures.look_table` flattened: a uint8 typed array of shape (2 n_c,),
    point i's look in a cluster at 2i, as noise at 2i + 1), ``listed`` (uint8 (n_c,),
    :func:`listed_open`: a point the rule keeps is proposed where it is 1), the per-class
    ``noise`` the page shows, the status template, the look table itself (``style``) and the typed
    eps's ``tolerance``. The counts
    come from the class list's rows in the browser (assets/classlist.js). ``exact`` is
    False for classes small enough that the server hands them to scikit-learn, whose
    brute-force distances could differ in the last bit.
    """
    idx = data.members[code]
    eps, ms = state.params[code]
    bits = flag_bits(state.inputs.take(idx), state.rule, len(idx))
    looks = look_table(bits, override_codes(idx, state.marks),
                       finding_slots(state.decisions.reason[idx], None if data.proposals
                                     is None else data.proposals[idx]))
    return {"class": code, "n": len(idx), "eps": float(eps), "ms": int(ms),
            "revision": state.revision, "rule": state.rule, "exact": len(idx) >= SMALL_N,
            "looks": typed_array(looks.ravel(), "u1"),
            "listed": typed_array(listed_open(data, state, idx).astype(np.uint8), "u1"),
            "noise": noise, "status": STATUS_TEMPLATE, "style": MARKER_STYLE,
            "tolerance": TYPED_TOLERANCE}


# Why a sample flagged only as DBSCAN noise is flagged, by rule (clustering.flag_bits).
NOISE_WHY = {"dbscan": "flagged: DBSCAN noise",
             "dbscan-knn": "flagged: DBSCAN noise whose neighbours disagree with its label",
             "adaptive": "flagged: DBSCAN noise, and among the labels the evidence doubts"}


def why(data: RunData, state: RunState, sample: int) -> str:
    """Why the sample is kept or dropped, in the words a reviewer checks it by, e.g.
    ``flagged: its label looks wrong · 7 of 10 nearest neighbours are labelled dog ·
    suggested: dog · score 0.93 · DBSCAN: noise in cat``.

    The neighbours are the nearest in feature space (PCA-50), where the label evidence
    lives; DBSCAN's verdict is on the 2-D map, within the sample's own class."""
    s, d = data.samples, state.decisions
    classes, label = s.classes, int(s.labels[sample])
    reason = str(d.reason[sample])
    if sample in state.relabels and reason == "relabel":
        head = f"relabelled to {classes[state.relabels[sample]]} by a reviewer"
    elif reason == "override_drop":
        head = "dropped by a reviewer"
    elif reason == "override_keep":
        head = "kept by a reviewer"
    elif d.flagged[sample]:
        bits = int(flag_bits(state.inputs.take(np.array([sample])), state.rule, 1)[0])
        head = ("flagged: its label looks wrong" if bits & ALWAYS_FLAGGED
                else NOISE_WHY[state.rule])
    elif reason != "cluster":  # another finding kind's default drops it
        head = f"dropped by default: {reason}"
    else:
        head = "kept by the rule"
    nn = data.neighbours[sample]
    votes = np.bincount(s.labels[nn], minlength=len(classes))
    top = int(votes.argmax())
    parts = [head, f"{votes[top]} of {len(nn)} nearest neighbours are labelled {classes[top]}"]
    suggested = suggestion(data, state, sample)
    if suggested is not None:
        parts.append(f"suggested: {suggested}")
    if data.score is not None:
        parts.append(f"score {float(data.score[sample]):.2f}")
    cluster = int(d.clusters[sample])
    parts.append(f"DBSCAN: noise in {classes[label]}" if cluster == -1
                 else f"DBSCAN: cluster {cluster} of {classes[label]}")
    return " · ".join([*finding_lines(data, state, sample), *parts])


def finding_lines(data: RunData, state: RunState, sample: int) -> list[str]:
    """The why-line of every kind other than ``label`` that marks ``sample`` (the label
    rule's own words follow in :func:`why`); a reviewer's decision is said first."""

    s = data.samples
    view = View(s.paths, s.classes, s.labels, read_test_paths(data.run),
                state.decisions.flagged, data.findings)
    out = []
    for kind in kinds():
        table = data.findings.get(kind.name)
        if kind.name != "label" and table is not None and kind.current(table, view)[sample]:
            line = kind.why(table, sample, view)
            if kind.decision == DROP and not kind.dropping(table, view)[sample]:
                line += " (proposed: below its drop cut, kept until you decide)"
            out.append(line)
    return out


def suggestion(data: RunData, state: RunState, sample: int) -> str | None:
    """The class the evidence suggests for a flagged sample, if it differs from its label."""
    if data.suggested is None or not state.decisions.flagged[sample]:
        return None
    code = int(data.suggested[sample])
    return None if code == data.samples.labels[sample] else data.samples.classes[code]


def hover_info(data: RunData, state: RunState, sample: int) -> dict:
    """What the hover tooltip shows for one sample."""
    s = data.samples
    d = state.decisions
    return {
        "index": sample, "path": s.paths[sample], "label": s.classes[s.labels[sample]],
        "true_label": s.classes[s.true_labels[sample]] if s.true_labels[sample] >= 0 else None,
        "cluster": int(d.clusters[sample]), "kept": bool(d.kept[sample]),
        "reason": str(d.reason[sample]),
        "score": None if data.score is None else round(float(data.score[sample]), 3),
        "suggested": suggestion(data, state, sample),
        "neighbours": [s.classes[s.labels[j]] for j in data.neighbours[sample][:5]],
        "why": why(data, state, sample),
        "decided": decided_text(last_decision(open_store(data.run), sample)),
    }


def decided_text(decided: Decided | None) -> str:
    """"decided by NAME, 2026-11-29 03:24 UTC", or "" for a sample nobody decided."""
    if decided is None:
        return ""
    return f"decided by {decided.author}, {decided.at[:16].replace('T', ' ')} UTC"
