"""The faint all-points backdrop of the class view, drawn once per run as a PNG.

Plotting 50,000 background points as a WebGL trace makes every repaint re-upload them;
as an image layer they cost nothing after the first load. Points are tinted by class
(pale, so the shown class stays on top) and each class's name is written at its median,
so a ✕ that sits in another class's region shows which one.
"""

from __future__ import annotations

import io

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from app.map_extent import extent

SIZE = 1600  # pixels on the longer side
# Tableau 20 hues; each class gets one, mixed 70% toward white for the dots.
HUES = ("1f77b4", "ff7f0e", "2ca02c", "d62728", "9467bd", "8c564b", "e377c2", "7f7f7f",
        "bcbd22", "17becf", "aec7e8", "ffbb78", "98df8a", "ff9896", "c5b0d5", "c49c94",
        "f7b6d2", "c7c7c7", "dbdb8d", "9edae5")
LABEL_LIMIT = 40  # above this many classes, names would cover the map


def _pale(code: int, toward_white: float = 0.7) -> tuple[int, int, int, int]:
    h = HUES[code % len(HUES)]
    rgb = [int(h[i:i + 2], 16) for i in (0, 2, 4)]
    return (*(round(c + (255 - c) * toward_white) for c in rgb), 255)


def render_png(emb: np.ndarray, labels: np.ndarray, classes: list[str]) -> bytes:
    """All points as small dots tinted by class, with class names at the class medians
    (up to LABEL_LIMIT classes), on a transparent canvas (PNG bytes).

    Parameters
    ----------
    emb : (N, 2) float, the t-SNE map
    labels : (N,) int, class codes
    classes : class names, indexed by code
    """
    x0, x1, y0, y1 = extent(emb)
    scale = SIZE / max(x1 - x0, y1 - y0)
    w, h = max(1, int((x1 - x0) * scale)), max(1, int((y1 - y0) * scale))
    px = (emb[:, 0] - x0) * scale
    py = (y1 - emb[:, 1]) * scale  # image rows grow downward
    r = 2 if len(emb) > 20000 else 3
    # Every dot is a disk of radius r stamped with numpy, one offset at a time, later
    # points over earlier ones: 1.28M points take about a second, where PIL's ellipse per
    # point took minutes.
    fills = np.array([_pale(c) for c in range(len(classes))], dtype=np.uint8)
    canvas = np.zeros((h, w, 4), dtype=np.uint8)
    col, row = np.rint(px).astype(np.int64), np.rint(py).astype(np.int64)
    colour = fills[labels]
    for dx in range(-r, r + 1):
        for dy in range(-r, r + 1):
            if dx * dx + dy * dy <= r * r:
                cc, rr = col + dx, row + dy
                inside = (cc >= 0) & (cc < w) & (rr >= 0) & (rr < h)
                canvas[rr[inside], cc[inside]] = colour[inside]
    img = Image.fromarray(canvas, "RGBA")
    draw = ImageDraw.Draw(img)
    if len(classes) <= LABEL_LIMIT:
        font = ImageFont.load_default(size=22)
        for c, name in enumerate(classes):
            m = labels == c
            if m.any():
                draw.text((float(np.median(px[m])), float(np.median(py[m]))), name,
                          fill=_pale(c, 0.25), font=font, anchor="mm",
                          stroke_width=3, stroke_fill=(255, 255, 255, 230))
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=True)
    return buf.getvalue()
