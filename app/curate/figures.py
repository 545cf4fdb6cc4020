"""Plotly figures for the Curate page: the class view and the all-classes overview.

The class view draws every point faint as an image layer (the backdrop), trace 0 (invisible)
pins the axes to the whole map, and trace 1 holds the selected class. Switching class
replaces trace 1 only, and a new eps or override only its colours, symbols and sizes.
"""

from __future__ import annotations

import base64
from dataclasses import asdict, dataclass
from html import escape

import numpy as np

from app.map_extent import extent
from worker.pipeline.findings import DROP, REVIEW, kinds
from worker.pipeline.map.clustering import UNDECIDED_REASONS, Decisions, flagged_by

# Qualitative palette for clusters (Plotly's D3/T10, minus red, green and grey, which
# mean drop, keep and background here).
CLUSTER_COLOURS = ["#1f77b4", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
                   "#bcbd22", "#aec7e8", "#ffbb78", "#c5b0d5", "#c49c94", "#f7b6d2"]
CLASS_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                 "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]
NOISE_COLOUR = "#111111"
KEEP_COLOUR = "#1a9e3a"
DROP_COLOUR = "#d62728"
# Noise the rule keeps is a pale filled dot: WebGL draws an open circle without an outline
# as a filled dark dot, which read as a ✕.
UNFLAGGED_NOISE_COLOUR = "#adb5bd"
# A finding's mark below its kind's drop cut: proposed, kept until a person decides.
PROPOSED_COLOUR = "#e6b400"

# (symbols, colours, text): what the class view draws, in the same symbols and colours.
LEGEND = [
    ("●●●", CLUSTER_COLOURS[:3], "DBSCAN clusters (kept), one colour each"),
    ("●", UNFLAGGED_NOISE_COLOUR, "DBSCAN noise the rule keeps"),
    ("✕", NOISE_COLOUR, "flagged: will be dropped"),
    ("◆", KEEP_COLOUR, "kept by you (override or relabel)"),
    ("✕", DROP_COLOUR, "dropped by you"),
]


# Symbols travel as Plotly's symbol numbers and sizes as integers: a smaller response per
# eps change. Colours travel as channel arrays (:func:`channels`), not hex strings: Plotly
# parses a colour string twice per point before a WebGL trace draws, which was half of a
# class switch's repaint; integer codes through a colorscale were smaller still, but
# Plotly's colorscale path made each repaint slower (docs/benchmarks.md).
SYMBOLS = {"circle": 0, "square": 1, "diamond": 2, "x": 4, "triangle-up": 5, "star": 17}
# Samples another finding kind drops by default (worker/pipeline/findings), each kind in
# the mark it declares (FindingKind.symbol): Plotly's symbol number and the legend's glyph.
# The diamond and the ✕ are a reviewer's keep and drop, so no kind may take them.
FINDING_COLOUR = "#6f42c1"
FINDING_MARKS = {"square": (1, "■"), "triangle-up": (5, "▲"), "star": (17, "★"),
                 "hexagon": (14, "⬢"), "pentagon": (13, "⬟"), "triangle-down": (6, "▼")}
DECISION_WORDS = {DROP: "dropped by default", REVIEW: "listed for review"}
PROPOSED_WORDS = "proposed by a finding: kept until you decide"


def drawn_kinds() -> list:
    """The finding kinds drawn with their own mark, in display order: their slots."""
    return [k for k in kinds() if k.symbol]


FINDING_SYMBOLS = tuple(FINDING_MARKS[k.symbol][0] for k in drawn_kinds())
LEGEND += [(FINDING_MARKS[k.symbol][1], FINDING_COLOUR, f"{k.title}: {DECISION_WORDS[k.decision]}")
           for k in drawn_kinds()]
LEGEND.append(("".join(FINDING_MARKS[k.symbol][1] for k in drawn_kinds()), PROPOSED_COLOUR,
               PROPOSED_WORDS))
SIZES = {"point": 6, "flagged": 8, "override": 10}
OVERRIDE_CODES = {"keep": 1, "drop": 2}  # 0: no override


def channels(hex_colour: str) -> list[float]:
    """``"#rrggbb"`` as the channel array ``[r, g, b, 1]`` (each 0-1, 3 decimals), which
    Plotly takes as a colour as it is.

    Three decimals keep every channel within 0.13 of its 0-255 value, so the hex comes
    back by rounding; channels in 0-1 are never mistaken for 0-255 ones (Plotly reads an
    array whose largest channel is above 1 as 0-255).
    """
    v = int(hex_colour[1:], 16)
    return [round((v >> shift & 255) / 255, 3) for shift in (16, 8, 0)] + [1]


@dataclass(frozen=True)
class Look:
    """How one kind of point is drawn and counted. ``colour`` None: its cluster's colour."""

    name: str
    colour: str | None
    symbol: int
    size: int
    flagged: bool
    kept: bool
    overridden: bool


# Every kind of point, by code: the one table the server's markers (marker_style) and the
# browser's re-cluster (assets/class_map.js, through look_table) read. Codes: 0 cluster,
# 1 noise the rule keeps, 2 flagged, 3 + flagged kept by you, 5 + flagged dropped by you,
# 7 + 2·slot + flagged dropped by default by the finding kind in that slot, 7 + 2·slots +
# slot proposed by it (a flag by the rule wins: the sample is dropped).
LOOKS = [
    Look("cluster", None, SYMBOLS["circle"], SIZES["point"], False, True, False),
    Look("noise kept", UNFLAGGED_NOISE_COLOUR, SYMBOLS["circle"], SIZES["point"], False, True,
         False),
    Look("flagged", NOISE_COLOUR, SYMBOLS["x"], SIZES["flagged"], True, False, False),
    *(Look(f"{what}{' flagged' if flagged else ''}", colour, symbol, SIZES["override"],
           flagged, what == "keep", True)
      for what, colour, symbol in (("keep", KEEP_COLOUR, SYMBOLS["diamond"]),
                                   ("drop", DROP_COLOUR, SYMBOLS["x"]))
      for flagged in (False, True)),
    *(Look(f"finding {slot}{' flagged' if flagged else ''}", FINDING_COLOUR, symbol,
           SIZES["flagged"], flagged, False, False)
      for slot, symbol in enumerate(FINDING_SYMBOLS) for flagged in (False, True)),
    *(Look(f"finding {slot} proposed", PROPOSED_COLOUR, symbol, SIZES["flagged"], False, True,
           False) for slot, symbol in enumerate(FINDING_SYMBOLS)),
]
FIRST_FINDING_LOOK = 7
_LOOK_SYMBOL = np.array([look.symbol for look in LOOKS])
_LOOK_SIZE = np.array([look.size for look in LOOKS])


def _objects(values: list) -> np.ndarray:
    """``values`` as a 1-D object array (each element kept whole, lists included)."""
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


# The looks' colours as they are sent: channel arrays (None: the cluster's colour).
_LOOK_COLOUR = _objects([None if look.colour is None else channels(look.colour)
                         for look in LOOKS])
_CLUSTER_CHANNELS = _objects([channels(c) for c in CLUSTER_COLOURS])


def look_codes(flagged: np.ndarray, noise: np.ndarray, overrides: np.ndarray,
               finding: np.ndarray | None = None) -> np.ndarray:
    """Each point's row of LOOKS.

    Parameters
    ----------
    flagged, noise : ndarray of bool, shape (n,)
    overrides : ndarray of uint8, shape (n,): 0 or an OVERRIDE_CODES value
    finding : ndarray of uint8, shape (n,): 0; 1 + the slot of the finding kind whose
        default drops the point; or 1 + slots + the slot of the kind that proposes it
        (:func:`finding_slots`); it already yields to overrides

    Returns
    -------
    ndarray of uint8, shape (n,)
    """
    codes = np.where(flagged, 2, np.where(noise, 1, 0)).astype(np.uint8)
    for value, first in ((OVERRIDE_CODES["keep"], 3), (OVERRIDE_CODES["drop"], 5)):
        hit = overrides == value
        codes[hit] = first + flagged[hit]
    if finding is not None:
        slots = len(FINDING_SYMBOLS)
        hit = (finding > 0) & (finding <= slots)
        codes[hit] = FIRST_FINDING_LOOK + 2 * (finding[hit] - 1) + flagged[hit]
        hit = (finding > slots) & ~flagged & (overrides == 0)
        codes[hit] = FIRST_FINDING_LOOK + slots + finding[hit] - 1
    return codes


def finding_slots(reason: np.ndarray, proposal: np.ndarray | None = None) -> np.ndarray:
    """uint8 (n,): for samples whose decision ``reason`` (Decisions.reason) names a
    finding kind drawn with its own mark (:func:`drawn_kinds`), 1 + that kind's slot; for
    samples such a kind proposes (``proposal``: findings.proposals) that the rule alone
    decides (no kind drops them, no person decided), 1 + slots + its slot; else 0."""
    out = np.zeros(len(reason), np.uint8)
    drawn = drawn_kinds()
    # kept by the rule: no kind drops it (any kind, drawn or not) and no person decided
    open_ = np.isin(reason, UNDECIDED_REASONS)
    for slot, kind in enumerate(drawn):
        if proposal is not None:
            out[(proposal == kind.name) & open_] = len(drawn) + slot + 1
        out[reason == kind.name] = slot + 1
    return out


def look_table(bits: np.ndarray, overrides: np.ndarray,
               finding: np.ndarray | None = None) -> np.ndarray:
    """Each point's look for both DBSCAN outcomes, for the browser to look up after it
    re-clusters: shape (n, 2), column 0 if the point is in a cluster, 1 if it is noise.

    ``bits``: :func:`~worker.pipeline.map.clustering.flag_bits`, shape (n,); ``finding``: as
    in :func:`look_codes` (another kind's drop does not depend on DBSCAN).
    """
    return np.stack([look_codes(flagged_by(bits, noise), np.full(len(bits), noise), overrides,
                                finding) for noise in (False, True)], axis=1)


# Everything assets/class_map.js needs besides each point's look codes, colours as sent.
MARKER_STYLE = {"looks": [{**asdict(look), "colour": _LOOK_COLOUR[code]}
                          for code, look in enumerate(LOOKS)],
                "clusters": _CLUSTER_CHANNELS.tolist()}


def override_codes(idx: np.ndarray, overrides: dict[int, str]) -> np.ndarray:
    """Each sample of ``idx`` (shape (n,), ascending) as 0 (none) or an OVERRIDE_CODES value.

    Returns
    -------
    ndarray of uint8, shape (n,)
    """
    codes = np.zeros(len(idx), dtype=np.uint8)
    if overrides and len(idx):
        samples = np.fromiter(overrides, dtype=np.int64, count=len(overrides))
        values = np.array([OVERRIDE_CODES[overrides[int(s)]] for s in samples], np.uint8)
        pos = np.searchsorted(idx, samples)  # idx is ascending (RunData.members)
        hit = (pos < len(idx)) & (idx[np.minimum(pos, len(idx) - 1)] == samples)
        codes[pos[hit]] = values[hit]
    return codes


def marker_style(idx: np.ndarray, d: Decisions, overrides: dict[int, str],
                 proposal: np.ndarray | None = None
                 ) -> tuple[list[list[float]], list[int], list[int]]:
    """Colours (channel arrays, :func:`channels`), symbol numbers (values of ``SYMBOLS``)
    and sizes for the samples ``idx`` (shape (n,), ascending), from LOOKS. ``proposal``
    (str (N,), findings.proposals): the kind proposing each sample, '' for none."""
    clusters = d.clusters[idx]
    codes = look_codes(d.flagged[idx], clusters == -1, override_codes(idx, overrides),
                       finding_slots(d.reason[idx], None if proposal is None else proposal[idx]))
    colours = _LOOK_COLOUR[codes]
    own = codes == 0
    colours[own] = _CLUSTER_CHANNELS[clusters[own] % len(CLUSTER_COLOURS)]
    return colours.tolist(), _LOOK_SYMBOL[codes].tolist(), _LOOK_SIZE[codes].tolist()


def _base_layout(**extra) -> dict:
    layout = dict(
        margin=dict(l=10, r=10, t=10, b=10), plot_bgcolor="white", paper_bgcolor="white",
        dragmode="lasso", hovermode="closest", showlegend=False, uirevision="keep",
        xaxis=dict(visible=False), yaxis=dict(visible=False, scaleanchor="x"),
    )
    for key, value in extra.items():
        layout[key] = {**layout[key], **value} if isinstance(value, dict) and key in layout \
            else value
    return layout


def _points(emb: np.ndarray, idx: np.ndarray, **trace) -> dict:
    """A WebGL marker trace of samples ``idx``; ``customdata`` holds their indices.

    ``customdata`` goes as a plain list: Plotly encodes numpy arrays as typed arrays, and
    WebGL traces then leave it out of hover and click events.
    """
    return dict(type="scattergl", mode="markers", hoverinfo="none",
                x=typed_array(emb[idx, 0]), y=typed_array(emb[idx, 1]),
                customdata=idx.tolist(), **trace)


def typed_array(values: np.ndarray, dtype: str = "f4") -> dict:
    """Plotly.js's typed-array form of an array (shape (n,)): base64 of little-endian
    ``dtype`` (``f4``, ``u1``, …).

    Smaller than a JSON list and decoded without parsing, as go.Figure would send it.
    """
    raw = np.ascontiguousarray(values, dtype="<" + dtype).tobytes()
    return {"dtype": dtype, "bdata": base64.b64encode(raw).decode("ascii")}


# Figures are plain dicts, not go.Figure: Plotly's validators walk every array element
# (docs/benchmarks.md).
def class_figure(emb: np.ndarray, trace: dict, background_url: str,
                 show_background: bool = True,
                 bounds: tuple[float, float, float, float] | None = None) -> dict:
    """The class view: every point faint as an image layer, the class (``trace``, from
    :func:`class_trace`) on top.

    Trace 0 is invisible and only pins the axes to the whole map (``bounds``, when the
    caller has them: :func:`~app.map_extent.extent` of ``emb``); trace 1 is the class.
    """
    x0, x1, y0, y1 = bounds or extent(emb)
    pin = dict(type="scattergl", x=[x0, x1], y=[y0, y1], mode="markers", hoverinfo="skip",
               marker=dict(size=1, opacity=0), name="extent")
    layout = _base_layout(
        images=[dict(source=background_url, xref="x", yref="y", x=x0, y=y1, sizex=x1 - x0,
                     sizey=y1 - y0, sizing="stretch", layer="below",
                     visible=bool(show_background))],
        xaxis=dict(range=[x0, x1]), yaxis=dict(range=[y0, y1]))
    return dict(data=[pin, trace], layout=layout)


def class_trace(emb: np.ndarray, idx: np.ndarray, d: Decisions,
                overrides: dict[int, str], proposal: np.ndarray | None = None) -> dict:
    """Trace 1 of the class view (``proposal``: as in :func:`marker_style`)."""
    colours, symbols, sizes = marker_style(idx, d, overrides, proposal)
    return _points(emb, idx, name="class",
                   marker=dict(color=colours, symbol=symbols, size=sizes, line=dict(width=0)),
                   selected=dict(marker=dict(opacity=1.0)),
                   unselected=dict(marker=dict(opacity=0.35)))


# Above this many points, or this many classes, the overview is the class-tinted raster
# (the class view's backdrop) with only the points to be dropped drawn on top: one WebGL
# trace per class of 1.28M points would send megabytes and draw for seconds, and 1,000
# traces draw slowly even with few points each (docs/benchmarks.md).
OVERVIEW_POINTS_MAX = 200_000
OVERVIEW_CLASSES_MAX = 60


def overview_figure(emb: np.ndarray, labels: np.ndarray, classes: list[str],
                    d: Decisions, background_url: str | None = None) -> dict:
    """All classes coloured by class, with the points to be dropped marked; for runs over
    OVERVIEW_POINTS_MAX points or OVERVIEW_CLASSES_MAX classes, the raster at
    ``background_url`` instead of the points."""
    if (len(emb) > OVERVIEW_POINTS_MAX or len(classes) > OVERVIEW_CLASSES_MAX) \
            and background_url:
        dropped = _points(emb, np.flatnonzero(~d.kept), name="dropped",
                          marker=dict(size=5, symbol="x", color=NOISE_COLOUR))
        fig = class_figure(emb, dropped, background_url)
        fig["layout"]["dragmode"] = "zoom"
        return fig
    # Plotly reads a subset of HTML in trace names (<a href>, <b>, ...); a class name is
    # text, so its markup is escaped (Plotly shows the entities as the characters).
    data = [_points(emb, np.flatnonzero(labels == code), name=escape(name, quote=False),
                    marker=dict(size=3, color=CLASS_COLOURS[code % len(CLASS_COLOURS)]))
            for code, name in enumerate(classes)]
    data.append(_points(emb, np.flatnonzero(~d.kept), name="dropped",
                        marker=dict(size=6, symbol="x", color=NOISE_COLOUR)))
    layout = _base_layout(showlegend=True, legend=dict(orientation="h", y=-0.02),
                          dragmode="zoom")
    return dict(data=data, layout=layout)
