"""The image-quality kinds: ``dark``, ``bright``, ``blurry``, ``low_info``, ``odd_size``,
``grey``, ``overexposed`` and ``border``.

A CNN maps a black frame and a dark photograph of a cat close together, so the feature
space misses these; they are read off the pixels instead (findings/image_stats.py), from
the thumbnails the run stores and, for size and aspect, the original sizes recorded at
ingest (``image_size.npy``). Every score is a robust z on the run's own distribution:
how many robust spreads (1.4826 × the median absolute deviation, at least the kind's
``floor``) the image's statistic lies beyond the dataset's median, on the defect's side.
So a dataset that is dark or grey by nature (scikit-learn's digits, X-rays) is not marked
as a whole; ``grey`` marks nothing where most images are grey. Every kind only proposes:
a reviewer decides, nothing is dropped by default.

Each kind's cut is a number parameter (``--dark-threshold`` …, worker/pipeline/
number_params.py), chosen on CIFAR-10 mini with each defect injected at a middle strength
and reported on a weaker and a stronger one (``bench/quality.py``, docs/method.md "Image
quality").
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from worker.pipeline.findings.base import REVIEW, FindingKind, FindingTable, View
from worker.pipeline.findings.context import FindingContext
from worker.pipeline.findings.image_stats import robust_z, share_beyond
from worker.pipeline.findings.kind_registry import register

# An image is grey when its mean chroma (max − min channel, 0–255) is below GREY_CHROMA
# (a JPEG of a grey image keeps a level or two of colour noise); where at least
# GREY_MAJORITY of the run is grey, greyness is the dataset's, and ``grey`` marks nothing.
# (``grey`` itself scores the 99th percentile, image_stats' ``colourful``: the mean would
# call a muted photograph with one red roof as grey as a faded one.)
GREY_CHROMA, GREY_MAJORITY = 2.0, 0.5
# The least spreads counted (image_stats.robust_z): log units for the log statistics,
# shares for ``clipped`` and ``border``. One pixel size everywhere (CIFAR's 32 × 32) gives
# a median absolute deviation of 0; these say how large a step stands out.
AREA_FLOOR, ASPECT_FLOOR = 0.25, 0.1


def _no_images(ctx: FindingContext) -> str | None:
    """Why the run has no pixels to read, or None."""
    if not ctx.run.read_meta().get("has_images", True) or not ctx.run.thumbnails.is_file():
        return "the run has no images (a features: dataset)"
    return None


def _skipped(n: int, reason: str) -> FindingTable:
    table = FindingTable.empty(n)
    table.info = {"skipped": reason}
    return table


class QualityKind(FindingKind):
    """One image statistic against the run's own distribution.

    Class attributes: ``stat`` (an image_stats name), ``lower`` (a low value is the
    defect), ``log`` (scored as log(1 + value), for statistics that scale with the image:
    halving the light halves its brightest pixels), ``floor`` (the least spread),
    ``words`` (what the statistic is called in the why-line) and ``beyond`` (the
    comparative: "darker").
    """

    decision = REVIEW
    version = "1"
    stat: ClassVar[str]
    lower: ClassVar[bool] = True
    log: ClassVar[bool] = True
    floor: ClassVar[float] = 0.1
    tail: ClassVar[bool] = True  # image_stats.robust_z's ``tail``
    words: ClassVar[str]
    beyond: ClassVar[str]
    advice = "proposed: look at it, and drop it ('d') when the defect makes it useless"

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        # Each kind's cut is its number parameter ``<name>_threshold`` (number_params.py,
        # group ``findings``): its flag, range and default, chosen by bench/quality.py.
        cls.threshold = f"{cls.name}_threshold"

    def spread_floor(self, ctx: FindingContext) -> float:
        """The least spread this run's statistic counts (:attr:`floor`)."""
        return self.floor

    def values(self, ctx: FindingContext) -> np.ndarray:
        """The statistic of every image, float32 (N,), in the units the why-line names."""
        return ctx.image_stats[self.stat]

    def compute(self, ctx: FindingContext) -> FindingTable:
        n = len(ctx.samples)
        reason = _no_images(ctx)
        if reason:
            return _skipped(n, reason)
        value = self.values(ctx)
        score, _, spread = robust_z(np.log1p(np.maximum(value, 0)) if self.log else value,
                                    self.spread_floor(ctx), self.lower, self.tail)
        t = float(self.cut(ctx))
        return FindingTable(score >= t, score.astype(np.float32), np.full(n, -1, np.int64),
                            {"value": value.astype(np.float32),
                             "beyond": share_beyond(value, self.lower)},
                            {"threshold": t, "median": float(np.median(value)),
                             "spread": spread})

    def column_values(self, table: FindingTable, view: View) -> dict[str, list[str]]:
        return {}

    def detail(self, table: FindingTable, i: int) -> str:
        """The statistic's value against the dataset's median, in words."""
        value = float(table.facts["value"][i])
        return f"{self.words} {value:.3g} against a median of {table.info['median']:.3g}"

    def why(self, table: FindingTable, i: int, view: View) -> str:
        pct = 100.0 * float(table.facts["beyond"][i])
        return f"{self.beyond} than {pct:.1f}% of the images: {self.detail(table, i)}"


@register
class DarkKind(QualityKind):
    name, title, order = "dark", "too dark", 40
    # The brightest pixels (99th percentile of each pixel's largest channel): darkening
    # lowers them all, while a dark scene with a lamp, a window or a coloured light in it
    # keeps them.
    stat, words, beyond = "brightest", "its brightest pixels reach", "darker"
    version = "2"


@register
class BrightKind(QualityKind):
    name, title, order = "bright", "too bright", 41
    # Brightening lifts the darkest pixels (1st percentile of each pixel's smallest
    # channel) toward white: scored on the headroom left below white, 255 − that. A bright
    # scene (snow, a white backdrop) keeps a shadow or a dark or saturated object, and a
    # few such pixels are enough.
    stat, words, beyond = "darkest", "its darkest pixels are", "brighter"
    version = "3"

    def values(self, ctx: FindingContext) -> np.ndarray:
        return 255.0 - ctx.image_stats["darkest"]

    def detail(self, table: FindingTable, i: int) -> str:
        value = 255.0 - float(table.facts["value"][i])
        return (f"{self.words} {value:.0f} against a median of "
                f"{255.0 - table.info['median']:.0f} (of 255)")


@register
class BlurryKind(QualityKind):
    name, title, order = "blurry", "blurry", 42
    stat, log, beyond = "sharpness", False, "blurrier"
    version = "2"

    def detail(self, table: FindingTable, i: int) -> str:
        rel = float(np.exp(table.facts["value"][i] - table.info["median"]))
        return (f"its finest detail (against its coarser detail) is {100 * rel:.0f}% of the "
                "median image's")


@register
class LowInfoKind(QualityKind):
    name, title, order = "low_info", "near-uniform", 43
    stat, words, beyond = "contrast", "contrast (luma range of its middle 96%)", "flatter"
    version = "2"


@register
class GreyKind(QualityKind):
    name, title, order = "grey", "grey in colour data", 44
    stat, words, beyond = "colourful", "its most colourful pixels' chroma (0 = grey)", "greyer"
    version = "2"
    tail = False  # the grey images are the low tail: it must not widen the spread

    def compute(self, ctx: FindingContext) -> FindingTable:
        n = len(ctx.samples)
        if _no_images(ctx) is None:
            share = float((ctx.image_stats["chroma"] < GREY_CHROMA).mean()) if n else 0.0
            if share >= GREY_MAJORITY:
                return _skipped(n, f"{100 * share:.0f}% of the images are grey: grey is "
                                   "this dataset's own")
        return super().compute(ctx)


@register
class OverexposedKind(QualityKind):
    name, title, order = "overexposed", "overexposed", 45
    # Blown highlights: clipped pixels where the picture had texture (image_stats' ``blown``),
    # not the share of white: a white product backdrop is flat, a blown exposure is not.
    stat, lower, log, floor = "blown", False, False, 0.01
    beyond = "more blown highlights"
    version = "2"

    def detail(self, table: FindingTable, i: int) -> str:
        return (f"{100 * float(table.facts['value'][i]):.0f}% of its pixels are highlights "
                f"clipped through texture, against a median of "
                f"{100 * table.info['median']:.1f}%")


@register
class BorderKind(QualityKind):
    name, title, order = "border", "frame or bars", 46
    stat, lower, log, floor = "border", False, False, 0.02
    beyond = "more framed"

    def spread_floor(self, ctx: FindingContext) -> float:
        """At least one row a side of the thumbnail: the smallest step the share can take
        (on 8-px digits a quarter, and a black band above and below is the dataset's)."""
        side = ctx.run.load_array(ctx.run.thumbnails, "ingest", mmap=True).shape[1]
        return max(self.floor, 2.0 / max(side, 1))

    def detail(self, table: FindingTable, i: int) -> str:
        return (f"a uniform frame or bars cover {100 * float(table.facts['value'][i]):.0f}% "
                f"of it, against a median of {100 * table.info['median']:.0f}%")


@register
class OddSizeKind(QualityKind):
    """Pixel count or aspect ratio far from the dataset's: the larger of the two robust
    z's of log(width × height) and log(width / height), either way."""

    name, title, order = "odd_size", "odd size", 47
    stat, lower, log = "size", False, False

    def compute(self, ctx: FindingContext) -> FindingTable:
        n = len(ctx.samples)
        reason = _no_images(ctx)
        sizes = None if reason else ctx.image_sizes
        if sizes is None:
            return _skipped(n, reason or "the run was ingested before image sizes were "
                                         "recorded: ingest it again to check them")
        w, h = np.maximum(sizes[:, 0], 1), np.maximum(sizes[:, 1], 1)
        # Either way: too large or too small, too wide or too tall.
        area, aspect = np.log(w * h.astype(np.float64)), np.log(w / h)
        z_area, med_area, _ = robust_z(area, AREA_FLOOR)
        z_aspect, med_aspect, _ = robust_z(aspect, ASPECT_FLOOR)
        score = np.maximum.reduce([z_area, robust_z(area, AREA_FLOOR, True)[0], z_aspect,
                                   robust_z(aspect, ASPECT_FLOOR, True)[0]])
        t = float(self.cut(ctx))
        return FindingTable(score >= t, score, np.full(n, -1, np.int64),
                            {"width": w.astype(np.int64), "height": h.astype(np.int64)},
                            {"threshold": t, "median_pixels": float(np.exp(med_area)),
                             "median_aspect": float(np.exp(med_aspect))})

    def why(self, table: FindingTable, i: int, view: View) -> str:
        w, h = int(table.facts["width"][i]), int(table.facts["height"][i])
        px, aspect = table.info["median_pixels"], table.info["median_aspect"]
        return (f"{w}×{h} px ({w * h / px:.2g}× the median pixel count), aspect "
                f"{w / h:.2f}:1 against a median of {aspect:.2f}:1")
