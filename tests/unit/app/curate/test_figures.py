"""The Curate page's figures (app/curate/figures.py, backdrop.py): how a finding's proposed
mark is drawn beside drops, the raster backdrop and the overview of large runs, and the
marker colours as they travel to the browser."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

from app.curate.backdrop import LABEL_LIMIT, render_png
from app.curate.figures import NOISE_COLOUR, OVERVIEW_POINTS_MAX, overview_figure
from app.map_extent import extent
from worker.pipeline.map.clustering import Decisions


def test_proposed_marks_are_drawn_apart_from_drops():
    """A finding's mark below its drop cut is drawn in its kind's symbol and the proposed
    colour, and counts as kept; a drop by the kind, a flag by the rule and a reviewer's
    decision each win over it."""
    from app.curate.figures import (
        FINDING_COLOUR,
        FINDING_MARKS,
        KEEP_COLOUR,
        LOOKS,
        NOISE_COLOUR,
        PROPOSED_COLOUR,
        SYMBOLS,
        channels,
        drawn_kinds,
        finding_slots,
        look_codes,
        marker_style,
        override_codes,
    )
    from worker.pipeline.map.clustering import Decisions

    kind, other = drawn_kinds()[0], drawn_kinds()[-1]
    clusters = np.array([0, 0, -1, -1, 0, 0])
    flagged = np.array([False, False, False, True, False, False])
    kept = np.array([True, False, True, False, True, False])
    reason = np.array(["cluster", kind.name, "noise", "noise", "override_keep", kind.name])
    # the last: dropped by one kind, proposed by another
    proposal = np.array([kind.name, "", kind.name, kind.name, kind.name, other.name])
    marks = {4: "keep"}
    n = len(kept)
    colours, symbols, _ = marker_style(np.arange(n), Decisions(clusters, flagged, kept, reason),
                                       marks, proposal)
    mark = FINDING_MARKS[kind.symbol][0]
    assert symbols == [mark, mark, mark, SYMBOLS["x"], SYMBOLS["diamond"], mark]
    assert colours == [channels(c) for c in (PROPOSED_COLOUR, FINDING_COLOUR, PROPOSED_COLOUR,
                                             NOISE_COLOUR, KEEP_COLOUR, FINDING_COLOUR)]
    codes = look_codes(flagged, clusters == -1, override_codes(np.arange(n), marks),
                       finding_slots(reason, proposal))
    assert [LOOKS[c].kept for c in codes] == kept.tolist()


def _decisions(n: int, dropped: np.ndarray) -> Decisions:
    kept = np.ones(n, dtype=bool)
    kept[dropped] = False
    reason = np.where(kept, "cluster", "noise")
    return Decisions(np.zeros(n, np.int64), ~kept, kept, reason)


def test_backdrop_stamps_every_point_in_its_class_tint():
    emb = np.array([[0.0, 0.0], [10.0, 10.0], [10.0, 0.0]], dtype=np.float32)
    labels = np.array([0, 1, 1])
    names = [f"c{c}" for c in range(LABEL_LIMIT + 1)]  # no names written over the points
    img = Image.open(io.BytesIO(render_png(emb, labels, names))).convert("RGBA")
    x0, x1, y0, y1 = extent(emb)
    scale = img.width / (x1 - x0)

    def pixel(x: float, y: float) -> tuple[int, ...]:
        return img.getpixel((round((x - x0) * scale), round((y1 - y) * scale)))

    assert pixel(0, 0)[3] == 255 and pixel(10, 10)[3] == 255 and pixel(10, 0)[3] == 255
    assert pixel(0, 0)[:3] != pixel(10, 0)[:3] == pixel(10, 10)[:3]  # tinted by class
    assert pixel(5, 5)[3] == 0  # nothing drawn between points


def test_large_or_many_class_overview_is_the_raster_with_only_the_dropped_points():
    n = OVERVIEW_POINTS_MAX + 1
    rng = np.random.default_rng(0)
    emb = rng.normal(size=(n, 2)).astype(np.float32)
    labels = rng.integers(0, 1000, n)
    dropped = np.array([3, 17, n - 1])
    fig = overview_figure(emb, labels, [f"c{c}" for c in range(1000)],
                          _decisions(n, dropped), "/background/big.png")
    assert fig["layout"]["images"][0]["source"] == "/background/big.png"
    trace = fig["data"][1]
    assert trace["customdata"] == dropped.tolist()
    assert trace["marker"]["color"] == NOISE_COLOUR and len(fig["data"]) == 2
    many = overview_figure(emb[:100], labels[:100], [f"c{c}" for c in range(1000)],
                           _decisions(100, np.array([3])), "/background/many.png")
    assert many["layout"]["images"][0]["source"] == "/background/many.png"  # 1,000 classes
    few = overview_figure(emb[:100], labels[:100] % 10, [f"c{c}" for c in range(10)],
                          _decisions(100, np.array([3])), "/background/few.png")
    assert "images" not in few["layout"] and len(few["data"]) == 10 + 1  # a trace per class


def test_marker_colours_travel_as_channel_arrays_that_round_back_to_their_hex():
    """The server's markers and the browser's re-cluster (assets/class_map.js, through
    MARKER_STYLE) draw the same channel arrays; each is four numbers in 0-1 (Plotly reads
    one whose largest channel is above 1 as 0-255) that round back to the named hex."""
    from app.curate.figures import CLUSTER_COLOURS, LOOKS, MARKER_STYLE, channels
    from bench.browser import hex_colours  # how the browser tests read them

    named = [look.colour for look in LOOKS if look.colour is not None] + CLUSTER_COLOURS
    sent = [look["colour"] for look in MARKER_STYLE["looks"] if look["colour"] is not None]
    sent += MARKER_STYLE["clusters"]
    assert sent == [channels(c) for c in named]
    assert all(len(c) == 4 and all(0 <= v <= 1 for v in c) and c[3] == 1 for c in sent)
    assert hex_colours(sent) == named
    assert channels("#000000") == [0, 0, 0, 1] and channels("#ffffff") == [1, 1, 1, 1]
