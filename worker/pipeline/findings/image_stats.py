"""Per-image statistics of exposure, contrast, sharpness, colour and frame, read from the
run's thumbnails, and the robust z-score that puts each on the dataset's own scale.

The image-quality kinds (``detectors/quality.py``) mark an image whose statistic lies far
out in the run's own distribution, never beyond an absolute line: on scikit-learn's digits
every image is grey and dark-backgrounded, and that is the dataset, not a defect.

Thumbnails fit each image into a square with black padding (sources/ingest.py's
``thumbnail``); with the original sizes recorded at ingest (``image_size.npy``) every
statistic reads only the image's own part of its thumbnail, so a wide photograph is not
"dark" or "framed" by its padding. Runs ingested before that file read the whole square.
"""

from __future__ import annotations

import numpy as np

# Luma weights (ITU-R BT.601), as PIL's convert("L") uses.
LUMA = np.array([0.299, 0.587, 0.114], np.float32)
# A pixel is clipped when its luma reaches this (out of 255): a highlight blown to white.
CLIP_LEVEL = 250.0
# A blown highlight: a channel at BLOWN_LEVEL or more (overexposure clips each channel on
# its own) in a 3 × 3 neighbourhood whose luma varies by more than BLOWN_TEXTURE (standard
# deviation): the clip cut through texture. A white backdrop is clipped too, but flat, so
# only its outline with the object counts, a thin line, where a blown exposure clips the
# texture of the whole bright part of the picture. (A bar of 8 levels did better on
# CIFAR-10 mini, 32-px thumbnails, and worse on 64-px thumbnails of smoother photographs:
# docs/benchmarks.md, "Image quality beside CleanVision".)
BLOWN_LEVEL, BLOWN_TEXTURE = 254.0, 4.0
# Blur is read as the finest detail (the Laplacian's energy) against the detail finer than
# a Gaussian of SHARP_SIGMA pixels (the energy of the image less that blur of it): both
# scale with the image's own contrast, and a smooth large-scale shading, which the whole
# variance counts, counts in neither, so the ratio is near one value for sharp photographs
# of any content, and blur lowers it. SHARP_FLOOR of the image's variance is added to the
# coarser detail: a heavy blur empties both bands, and their ratio alone would then be
# that of two near-zero numbers; against the image's own contrast it stays low.
SHARP_SIGMA, SHARP_FLOOR = 2.0, 0.01
# The percentiles read: the brightest pixels (darkening lowers them, a dark scene with a
# lamp keeps them), the darkest (brightening lifts them; a bright scene keeps a shadow or
# an object) and the most colourful (greying takes the colour of every pixel; a muted
# photograph keeps a little somewhere). The brightest are read on each pixel's largest
# channel and the darkest on its smallest, not on luma: darkening and brightening move
# every channel, while a red tail light or a blue sign in a night scene is bright in one
# channel only (its luma, 0.3 or 0.1 of it, looks dark), and a saturated object on a white
# backdrop is dark in one. On CIFAR-10 mini at the middle strengths (bench/quality.py)
# the darkened images lie 4.3 spreads past the clean ones so, against 3.7 with luma, and
# the brightened 5.7 against 4.4 (docs/benchmarks.md, "Image quality beside CleanVision").
BRIGHTEST_PCT, DARKEST_PCT, COLOURFUL_PCT = 99, 1, 99
# Contrast is the luma's range between these percentiles: flattening narrows all of it,
# while the standard deviation of a photograph with a small bright or dark object (a
# bird against the sky) is small although the picture is not flat.
CONTRAST_PCT = (2, 98)
# An edge row (or column) belongs to a uniform band when its luma varies by less than
# BAND_STD and its mean lies within BAND_STEP of the outermost row's: a frame or letterbox
# bar is one flat colour, and a thumbnail's resampling blurs its inner edge by a pixel.
BAND_STD, BAND_STEP = 6.0, 12.0
# A band counts only where it ends in a straight edge: the row past its end differs from
# its last row by EDGE_STEP in at least EDGE_SHARE of the columns. A white backdrop above
# and below a product shot is flat too, but the object breaks it in a few columns only.
EDGE_STEP, EDGE_SHARE = 16.0, 0.6
# What each image gives, in the order :func:`image_stats` returns them.
STATS = ("mean", "brightest", "darkest", "contrast", "sharpness", "chroma", "colourful",
         "clipped", "blown", "border")
# The robust spread of a normal distribution is 1.4826 × its median absolute deviation.
MAD_SCALE = 1.4826


def content_box(width: int, height: int, side: int) -> tuple[int, int, int, int]:
    """Where an image of ``width`` × ``height`` lies in its ``side``-square thumbnail:
    (x0, y0, x1, y1), as ingest's ``thumbnail`` pastes it (aspect kept, centred). A box
    narrower than the square loses one pixel on each padded side: the resampled edge
    mixes image and padding."""
    if width <= 0 or height <= 0 or width == height:
        return 0, 0, side, side
    if width > height:
        h = max(1, round(height * side / width))
        y0 = (side - h) // 2
        return 0, min(y0 + 1, side - 1), side, max(y0 + h - 1, y0 + 2)
    w = max(1, round(width * side / height))
    x0 = (side - w) // 2
    return min(x0 + 1, side - 1), 0, max(x0 + w - 1, x0 + 2), side


def _band(grid: np.ndarray) -> np.ndarray:
    """How many rows from the start of ``grid`` (n, L, W) are one uniform band that ends
    in a straight edge (0 where none does): int (n,)."""
    n, length, _ = grid.shape
    rows_mean, rows_std = grid.mean(2), grid.std(2)
    flat = (rows_std < BAND_STD) & (np.abs(rows_mean - rows_mean[:, :1]) < BAND_STEP)
    k = np.where(flat.all(1), length, flat.argmin(1))
    # The edge: row k + 1 against row k - 1, skipping the row resampling blurred.
    inside = np.clip(k - 1, 0, length - 1)
    past = np.clip(k + 1, 0, length - 1)
    ar = np.arange(n)
    step = np.abs(grid[ar, past] - grid[ar, inside]) > EDGE_STEP
    straight = (step.mean(1) >= EDGE_SHARE) & (k > 0) & (k + 1 < length)
    return np.where(straight, k, 0)


def _border(y: np.ndarray) -> np.ndarray:
    """The share of the image a uniform frame or letterbox covers: for each axis the
    thinner of its two opposite bands (a bar on one side alone is often sky or a table),
    times two, over the axis's length; the larger axis's share. y: (n, h, w) → (n,)."""
    n, h, w = y.shape
    out = np.zeros(n, np.float32)
    for grid, length in ((y, h), (y.transpose(0, 2, 1), w)):
        first, last = _band(grid), _band(grid[:, ::-1])
        share = 2.0 * np.minimum(first, last) / length
        out = np.maximum(out, np.minimum(share, 1.0))
    return out


def _sharpness(y: np.ndarray) -> np.ndarray:
    """log of the Laplacian's energy over the energy of the detail finer than a
    :data:`SHARP_SIGMA`-px Gaussian plus :data:`SHARP_FLOOR` of the variance (the +1s keep
    flat images finite), away from the edges the filters reflect at: float32 (n, h, w) →
    (n,); 0 where the image is under 5 px."""
    if y.shape[1] < 5 or y.shape[2] < 5:
        return np.zeros(len(y), np.float32)
    # Deferred: scipy.ndimage would load for every command that reads a run's findings.
    from scipy.ndimage import gaussian_filter

    lap = (4 * y[:, 1:-1, 1:-1] - y[:, :-2, 1:-1] - y[:, 2:, 1:-1]
           - y[:, 1:-1, :-2] - y[:, 1:-1, 2:])
    detail = y - gaussian_filter(y, (0, SHARP_SIGMA, SHARP_SIGMA), mode="reflect")
    fine = np.square(lap[:, 1:-1, 1:-1]).mean((1, 2))
    coarser = np.square(detail[:, 2:-2, 2:-2]).mean((1, 2)) + SHARP_FLOOR * y.var((1, 2))
    return np.log((fine + 1.0) / (coarser + 1.0))


def _blown(rgb: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The share of pixels that are blown highlights (:data:`BLOWN_LEVEL`,
    :data:`BLOWN_TEXTURE`): rgb float32 (n, h, w, 3), y its luma (n, h, w) → (n,)."""
    from scipy.ndimage import uniform_filter  # deferred, as in _sharpness

    mean = uniform_filter(y, (1, 3, 3), mode="nearest")
    var = uniform_filter(y * y, (1, 3, 3), mode="nearest") - mean * mean
    blown = (rgb.max(3) >= BLOWN_LEVEL) & (var > BLOWN_TEXTURE ** 2)
    return blown.reshape(len(y), -1).mean(1)


def _group_stats(x: np.ndarray) -> np.ndarray:
    """The :data:`STATS` of images of one size: uint8 (n, h, w, 3) → float32 (n, 10)."""
    rgb = x.astype(np.float32)
    y = rgb @ LUMA
    flat = y.reshape(len(y), -1)
    low, high = np.percentile(flat, CONTRAST_PCT, axis=1)
    top, bottom = rgb.max(3).reshape(len(y), -1), rgb.min(3).reshape(len(y), -1)
    brightest = np.percentile(top, BRIGHTEST_PCT, axis=1)
    darkest = np.percentile(bottom, DARKEST_PCT, axis=1)
    chroma = top - bottom
    clipped = (flat >= CLIP_LEVEL).mean(1)
    return np.stack([flat.mean(1), brightest, darkest, high - low, _sharpness(y),
                     chroma.mean(1), np.percentile(chroma, COLOURFUL_PCT, axis=1), clipped,
                     _blown(rgb, y), _border(y)], 1).astype(np.float32)


def image_stats(thumbs: np.ndarray, sizes: np.ndarray | None = None,
                block: int = 2048) -> dict[str, np.ndarray]:
    """Each image's :data:`STATS`, from its thumbnail's own part.

    Parameters
    ----------
    thumbs : uint8 (N, S, S, 3), the run's thumbnails (may be memory-mapped)
    sizes : int (N, 2), each image's original (width, height), or None: read whole squares
    block : images read at a time (memory stays that many thumbnails)

    Returns
    -------
    name → float32 (N,): ``mean`` luma in 0–255, ``brightest`` (99th percentile of each
    pixel's largest channel) and ``darkest`` (1st percentile of its smallest), 0–255,
    ``contrast`` (the luma's range between its 2nd and 98th percentiles), ``sharpness``
    (:func:`_sharpness`), ``chroma`` (mean of each pixel's max − min channel: 0 for grey),
    ``colourful`` (its 99th percentile), ``clipped`` (share of pixels at luma ≥
    :data:`CLIP_LEVEL`), ``blown`` (share of blown highlights, :func:`_blown`), ``border``
    (share covered by a uniform frame or bars, :func:`_border`)
    """
    n, side = len(thumbs), thumbs.shape[1]
    out = np.zeros((n, len(STATS)), np.float32)
    if sizes is None:
        boxes = np.tile(np.array([0, 0, side, side]), (n, 1))
    else:
        boxes = np.array([content_box(int(w), int(h), side) for w, h in sizes])
    for start in range(0, n, block):
        x = np.asarray(thumbs[start:start + block])
        part = boxes[start:start + block]
        # Images of one aspect share a box: one vectorised pass per box.
        kinds, which = np.unique(part, axis=0, return_inverse=True)
        for k, (x0, y0, x1, y1) in enumerate(kinds):
            rows = np.flatnonzero(which.ravel() == k)
            out[start + rows] = _group_stats(x[rows, y0:y1, x0:x1])
    return {name: out[:, j] for j, name in enumerate(STATS)}


def robust_z(x: np.ndarray, floor: float, lower: bool = False, tail: bool = True
             ) -> tuple[np.ndarray, float, float]:
    """How many robust spreads each value lies beyond the dataset's median, on the
    defect's side.

    The spread is the largest of: 1.4826 × the median absolute deviation (a normal
    distribution's standard deviation), the distance from the median to the 10th
    percentile on the defect's side over 1.2816 (the same for a normal distribution, but
    it sees a skewed tail: on digits a fifth of the images have a black band above and
    below, which the deviation, 0, does not), and ``floor``.

    Parameters
    ----------
    x : float (N,), one statistic of every image
    floor : the least spread counted: where most images share one value (every CIFAR
        image is 32 × 32, most photographs clip no pixel), the other two are 0, and this
        says how large a step stands out
    lower : a low value is the defect (z grows as x falls)
    tail : count the 10th percentile's distance (False: where the tail is the defect
        itself, as the grey images in a colour dataset are)

    Returns
    -------
    z : float32 (N,), (x − median) / spread, negated for ``lower``
    median, spread : the dataset's median and the spread used
    """
    if not len(x):
        return np.zeros(0, np.float32), 0.0, floor
    med = float(np.median(x))
    side = abs(float(np.percentile(x, 10 if lower else 90)) - med) / 1.2816 if tail else 0.0
    spread = max(MAD_SCALE * float(np.median(np.abs(x - med))), side, floor)
    z = (x - med) / spread
    return (-z if lower else z).astype(np.float32), med, spread


def share_beyond(x: np.ndarray, lower: bool) -> np.ndarray:
    """For each value, the share of the dataset lying strictly on the other side of it:
    for ``lower`` (a low value is the defect) the share with a larger value ("darker than
    99.7% of the images"). float32 (N,) in [0, 1]."""
    s = np.sort(x)
    n = max(len(x), 1)
    if lower:
        return ((len(x) - np.searchsorted(s, x, side="right")) / n).astype(np.float32)
    return (np.searchsorted(s, x, side="left") / n).astype(np.float32)
