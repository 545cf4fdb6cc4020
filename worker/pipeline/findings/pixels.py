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


def _window_norms(views: np.ndarray) -> np.ndarray:
    """The norm of each of a view's 9 SIDE×SIDE windows less its mean, floored as
    :func:`_normalised` floors it: float32 (V, 3, 3) for views (V, SIDE + 2, SIDE + 2).
    Mirroring changes no window's norm: the mirrored view's window (dy, dx) is the view's
    window (dy, 2 − dx), mirrored."""
    out = np.empty((len(views), 3, 3), np.float32)
    for dy in range(3):
        for dx in range(3):
            w = views[:, dy:dy + SIDE, dx:dx + SIDE].reshape(len(views), -1).astype(np.float32)
            w -= w.mean(1, keepdims=True)
            out[:, dy, dx] = np.maximum(np.linalg.norm(w, axis=1), 1e-3)
    return out


def match_pairs(views_a: np.ndarray, a: np.ndarray, views_b: np.ndarray, b: np.ndarray,
                block: int = 65_536) -> np.ndarray:
    """Best normalised cross-correlation of ``views_a[a[p]]`` with ``views_b[b[p]]``, per
    pair p (module docstring): float32 (P,) in [-1, 1].

    The centre is normalised once per pair; each placement's window is not: since the
    centre sums to zero, its product with the raw window, over the window's norm about its
    mean (:func:`_window_norms`, once per view, not per pair), is the correlation: the same
    values to 1e-6, and the findings step 2.1× faster (docs/benchmarks.md, "Where the
    findings' time goes").
    """
    out = np.empty(len(a), np.float32)
    used, where = np.unique(b, return_inverse=True)
    norms = _window_norms(views_b[used])
    for s in range(0, len(a), block):
        centre = _normalised(views_a[a[s:s + block], 1:-1, 1:-1]).reshape(-1, SIDE, SIDE)
        other = views_b[b[s:s + block]].astype(np.float32)
        norm = norms[where[s:s + block]]
        best = np.full(len(centre), -1.0, np.float32)
        for mirrored, img in ((False, other), (True, other[:, :, ::-1])):
            for dy in range(3):
                for dx in range(3):
                    dot = np.einsum("pij,pij->p", centre, img[:, dy:dy + SIDE, dx:dx + SIDE])
                    np.maximum(best, dot / norm[:, dy, 2 - dx if mirrored else dx], out=best)
        out[s:s + block] = best
    return out
