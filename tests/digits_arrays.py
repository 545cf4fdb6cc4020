"""scikit-learn's digits as arrays, for the tests that make runs from arrays or from a
features file (``tc.from_arrays``, ``features:``)."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np


@functools.cache
def digits_all() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Digits as (1797, 64) float64 features, labels and uint8 8×8 images."""
    from sklearn.datasets import load_digits

    d = load_digits()
    return d.data, d.target, np.round(d.images * (255 / 16)).astype(np.uint8)


def digits(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Digits' first ``n`` samples: pixels as (n, 64) float features, labels, uint8 images."""
    from sklearn.datasets import load_digits

    d = load_digits()
    images = np.round(d.images[:n] * (255 / 16)).astype(np.uint8)
    return d.data[:n].astype(np.float32), d.target[:n], images


def features_file(folder: Path, x: np.ndarray, y: np.ndarray) -> tuple[Path, Path]:
    """``x`` as a float32 .npy file and ``y`` as its labels CSV, in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    np.save(folder / "f.npy", x.astype(np.float32))
    (folder / "l.csv").write_text("label\n" + "".join(f"{v}\n" for v in y))
    return folder / "f.npy", folder / "l.csv"
