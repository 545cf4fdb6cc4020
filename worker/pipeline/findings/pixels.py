"""A pixel-level check of candidate copies: robust to what near-copies differ by.

Each image becomes a small grey square (``SIDE + 2`` px a side, box-filtered from its
thumbnail). Two images match by the normalised cross-correlation of the first's centre
``SIDE``×``SIDE`` with the second's, best over the second mirrored or not and shifted by
up to one pixel each way: brightness and contrast changes (normalisation), JPEG and
resizing (the box filter), mirroring and small shifts and crops (the 18 placements) leave
a copy's match near 1, while two different pictures of one class rarely pass 0.9
(docs/benchmarks.md, the duplicate table).
"""

from __future__ import annotations

import numpy as np
from PIL import Image

SIDE = 16


def grey_views(thumbs: np.ndarray, block: int = 8192) -> np.ndarray:
    """uint8 (N, SIDE + 2, SIDE + 2) grey squares of thumbnails (N, S, S, 3)."""
    out = np.empty((len(thumbs), SIDE + 2, SIDE + 2), np.uint8)
    for s in range(0, len(thumbs), block):
        for j, t in enumerate(np.asarray(thumbs[s:s + block])):
            out[s + j] = np.asarray(Image.fromarray(t).convert("L").resize(
                (SIDE + 2, SIDE + 2), Image.Resampling.BOX))
    return out


def _normalised(x: np.ndarray) -> np.ndarray:
    """Rows of (P, SIDE, SIDE) as zero-mean, unit-norm vectors (P, SIDE²)."""
    v = x.reshape(len(x), -1).astype(np.float32)
    v -= v.mean(1, keepdims=True)
    norm = np.linalg.norm(v, axis=1, keepdims=True)
    return v / np.maximum(norm, 1e-3)


def match_pairs(views_a: np.ndarray, a: np.ndarray, views_b: np.ndarray, b: np.ndarray,
                block: int = 65_536) -> np.ndarray:
    """Best normalised cross-correlation of ``views_a[a[p]]`` with ``views_b[b[p]]``, per
    pair p (module docstring): float32 (P,) in [-1, 1]."""
    out = np.empty(len(a), np.float32)
    for s in range(0, len(a), block):
        centre = _normalised(views_a[a[s:s + block], 1:-1, 1:-1])
        other = views_b[b[s:s + block]]
        best = np.full(len(centre), -1.0, np.float32)
        for img in (other, other[:, :, ::-1]):
            for dy in range(3):
                for dx in range(3):
                    w = _normalised(img[:, dy:dy + SIDE, dx:dx + SIDE])
                    np.maximum(best, np.einsum("ij,ij->i", centre, w), out=best)
        out[s:s + block] = best
    return out
