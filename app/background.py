"""The faint all-points backdrop of the class view, drawn once per run as a PNG.

Plotting 50,000 background points as a WebGL trace makes every repaint re-upload them;
as an image layer they cost nothing after the first load.
"""

from __future__ import annotations

import io

import numpy as np
from PIL import Image, ImageDraw

SIZE = 1600  # pixels on the longer side
COLOUR = (200, 205, 212, 255)


def extent(emb: np.ndarray, pad: float = 0.03) -> tuple[float, float, float, float]:
    """(x0, x1, y0, y1) of the embedding with a small margin; the image covers exactly this."""
    x0, y0 = emb.min(axis=0)
    x1, y1 = emb.max(axis=0)
    dx, dy = max(x1 - x0, 1e-6), max(y1 - y0, 1e-6)
    return (float(x0 - pad * dx), float(x1 + pad * dx), float(y0 - pad * dy),
            float(y1 + pad * dy))


def render_png(emb: np.ndarray) -> bytes:
    """All points as small grey dots on a transparent canvas (PNG bytes)."""
    x0, x1, y0, y1 = extent(emb)
    scale = SIZE / max(x1 - x0, y1 - y0)
    w, h = max(1, int((x1 - x0) * scale)), max(1, int((y1 - y0) * scale))
    img = Image.new("RGBA", (w, h), (255, 255, 255, 0))
    draw = ImageDraw.Draw(img)
    px = (emb[:, 0] - x0) * scale
    py = (y1 - emb[:, 1]) * scale  # image rows grow downward
    r = 2.0 if len(emb) > 20000 else 3.0
    for x, y in zip(px.tolist(), py.tolist(), strict=True):
        draw.ellipse((x - r, y - r, x + r, y + r), fill=COLOUR)
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=True)
    return buf.getvalue()
