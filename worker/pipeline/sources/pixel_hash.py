"""Hashes of decoded pixels: equal hashes are exact copies."""

from __future__ import annotations

import hashlib

import numpy as np


def pixel_digest(pixels: np.ndarray) -> int:
    """64-bit BLAKE2b of an image's decoded pixels and shape (uint8 array)."""
    h = hashlib.blake2b(np.ascontiguousarray(pixels).tobytes(), digest_size=8)
    h.update(str(pixels.shape).encode())
    return int.from_bytes(h.digest(), "little")


def hash_rows(images: np.ndarray, block: int = 4096) -> np.ndarray:
    """:func:`pixel_digest` of every row of ``images`` (N, ...), uint64 (N,)."""
    out = np.empty(len(images), np.uint64)
    for s in range(0, len(images), block):
        for j, img in enumerate(np.asarray(images[s:s + block])):
            out[s + j] = pixel_digest(img)
    return out
