"""What a finding kind's ``compute`` reads: one object per run, every part loaded once
and only when a kind asks for it."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from worker.pipeline.findings.copies import REFERENCE_RANK, NearMatches, near_matches, ring
from worker.pipeline.findings.image_stats import image_stats
from worker.pipeline.findings.index import FeatureSpace, fit_space
from worker.pipeline.findings.pixels import grey_views
from worker.pipeline.findings.testsplit import TestSplit, load_test_split, test_thumbnails
from worker.pipeline.findings.warps import (
    K_FEATURE,
    K_KEY,
    CopyViews,
    WarpEvidence,
    WarpOptions,
    candidates,
    copy_views,
    key_neighbours,
    warp_evidence,
)
from worker.pipeline.map.embedding import run_pca
from worker.pipeline.progress import ProgressFn
from worker.pipeline.sources.ingest import IMAGE_SIZE_FILE
from worker.pipeline.sources.pixel_hash import hash_rows
from worker.pipeline.storage.rundir import RunDir
from worker.pipeline.storage.sample_table import SampleTable


@dataclass
class FindingContext:
    """The run's features, labels, neighbour index and (where there is one) test split.

    ``thresholds``: a kind's cut given on the command line (``--duplicate-threshold``),
    by kind name; kinds without one use their default.
    """

    run: RunDir
    samples: SampleTable
    thresholds: dict[str, float] = field(default_factory=dict)
    progress: ProgressFn | None = None

    @functools.cached_property
    def features(self) -> np.ndarray:
        """(N, D), memory-mapped."""
        return self.run.load_array(self.run.features, "extract", mmap=True)

    @functools.cached_property
    def space(self) -> FeatureSpace:
        """The map's PCA space and the stored neighbours (findings/index.py)."""
        embed = self.run.step("embed")
        neighbours = self.run.load_array(self.run.path / "neighbours.npy", "cluster")
        return fit_space(self.features, run_pca(self.run, int(embed.get("pca_dims", 50)),
                                                int(embed.get("seed", 0))), neighbours)

    @functools.cached_property
    def image_sizes(self) -> np.ndarray | None:
        """Each image's original (width, height), int64 (N, 2), or None for a run ingested
        before ingest recorded them (``image_size.npy``)."""
        path = self.run.path / IMAGE_SIZE_FILE
        if not path.is_file():
            return None
        sizes = self.run.load_array(path, "ingest")
        return sizes if len(sizes) == len(self.samples) else None

    @functools.cached_property
    def image_stats(self) -> dict[str, np.ndarray]:
        """Each image's pixel statistics (findings/image_stats.py), read off the thumbnails
        once for every image-quality kind."""
        thumbs = self.run.load_array(self.run.thumbnails, "ingest", mmap=True)
        return image_stats(thumbs, self.image_sizes)

    @functools.cached_property
    def label_score(self) -> np.ndarray | None:
        """The label evidence's mislabel score (N,), None before the cluster step."""
        path = self.run.path / "score.npy"
        return self.run.load_array(path, "cluster") if path.is_file() else None

    @functools.cached_property
    def pixel_hash(self) -> np.ndarray | None:
        """A hash of each sample's decoded pixels (uint64 (N,)), or None for a run without
        images. Written at ingest from the full image; runs ingested before that hash
        their thumbnails, which are the image itself for CIFAR-size data. A JPEG much
        larger than the thumbnail hashes its reduced-scale decode (sources/decoding.py):
        equal files still hash equal."""
        path = self.run.path / "pixel_hash.npy"
        if path.is_file():
            return self.run.load_array(path, "ingest")
        if not self.run.read_meta().get("has_images", True) or not self.run.thumbnails.is_file():
            return None
        return hash_rows(self.run.load_array(self.run.thumbnails, "ingest", mmap=True))

    @functools.cached_property
    def grey(self) -> np.ndarray | None:
        """Small grey views of every sample's thumbnail (findings/pixels.py), or None for
        a run without images."""
        if not self.run.read_meta().get("has_images", True) or not self.run.thumbnails.is_file():
            return None
        return grey_views(self.run.load_array(self.run.thumbnails, "ingest", mmap=True))

    @functools.cached_property
    def near(self) -> NearMatches | None:
        """Each sample's pixel matches with its nearest samples (copies.py: the tail and
        ratio tests of copies and leaks), or None without images."""
        if self.grey is None:
            return None
        return near_matches(self.grey, self.space.neighbours)

    def copy_cut(self, threshold: float, spreads: float) -> float | None:
        """The pixel match a copy needs in this run: ``threshold``, raised to ``spreads``
        robust spreads above what different pictures here reach (copies.py, test 1);
        None without images."""
        if self.near is None:
            return None
        return max(threshold, self.near.tail_cut(spreads))

    @functools.cached_property
    def views(self) -> CopyViews | None:
        """The warp match's views of every sample (findings/warps.py), or None for a run
        without images."""
        if self.grey is None:
            return None
        return copy_views(self.run.load_array(self.run.thumbnails, "ingest", mmap=True))

    @functools.cached_property
    def warp(self) -> WarpEvidence | None:
        """Each sample's warp matches with its candidates (its ``K_FEATURE`` nearest in
        feature space and its ``K_KEY`` nearest copy-robust keys: findings/warps.py), or
        None without images."""
        if self.views is None:
            return None
        a, b = candidates(self.space.neighbours[:, :K_FEATURE],
                          key_neighbours(self.views.key, None, K_KEY))
        return warp_evidence(self.views, self.views, a, b, len(self.samples),
                             WarpOptions(REFERENCE_RANK, same=True,
                                         far=ring(self.space.neighbours)))

    def warp_cut(self, threshold: float, spreads: float) -> np.ndarray | None:
        """The warp match a copy needs in this run, per variant (findings/warps.py):
        ``threshold``, raised to ``spreads`` robust spreads above what the samples' best
        candidates reach (copies.py, test 1); None without images."""
        return None if self.warp is None else self.warp.cuts(threshold, spreads)

    @functools.cached_property
    def test_views(self) -> CopyViews | None:
        """The test split's warp-match views, or None without a test split's images."""
        if self.test is None or not test_thumbnails(self.run).is_file():
            return None
        return copy_views(self.run.load_array(test_thumbnails(self.run), "cluster", mmap=True))

    @functools.cached_property
    def test_grey(self) -> np.ndarray | None:
        """The test split's grey views, or None without a test split."""
        if self.test is None or not test_thumbnails(self.run).is_file():
            return None
        return grey_views(self.run.load_array(test_thumbnails(self.run), "cluster", mmap=True))

    @functools.cached_property
    def test(self) -> TestSplit | None:
        """The dataset's test split with features from the same backbone, or None."""
        return load_test_split(self.run, self.progress)
