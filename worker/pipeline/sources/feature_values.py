"""What a features array must hold before the map is made from it.

PCA, the t-SNE's neighbour search and openTSNE's affinities compute in float32 and sum
squares of differences. Features that are finite but huge overflow those sums (digits'
pixels times 1e18 gave NaN in PCA, and openTSNE's affinity step then aborted the whole
process with ``double free or corruption``: a notebook's kernel died), tiny ones underflow
them, and rows that are all the same give a map of NaN. None of that is a slow failure
to wait for: it is refused here, in one line that names the row and what to do.

One check for every door: ``tc.from_arrays``'s arrays (:func:`check_feature_values`), a
``features:`` file given to ``curator pipeline``, ``tc.pipeline`` or the New-run form,
before the run's folder is made (:func:`~.labels.check_features_file`), the copy of that
file into the run and the features the embed step reads, whatever made them
(:class:`FeatureValues`, fed block by block).
"""

from __future__ import annotations

import numpy as np

from worker.pipeline.errors import InputError

FLOAT32_MAX = float(np.finfo(np.float32).max)
# The largest |value| the map takes. Its float32 sums of squares run over up to 100,000
# rows (PCA's fit sample, embedding.PCA_FIT_MAX) of up to about 10,000 dimensions: at
# 1e12 they reach 1e33, far inside float32's 3.4e38. Digits (D = 64) broke between 1.6e16
# and 1.6e17 on 300 rows, so the margin covers larger N and D. Real embeddings are O(1)
# to O(1e3).
MAX_MAGNITUDE = 1e12
# The least spread (largest difference between two rows in one column) the map takes: the
# squares of smaller differences, divided down to neighbour distances, fall below float32's
# smallest normal number (1.2e-38) and the map is NaN (digits times 1e-25 was; times 1e-19
# was not).
MIN_SPREAD = 1e-12
# The fewest samples a map is made of: openTSNE needs 3·perplexity < N, and perplexity at
# least 1 (the default shrinks to (N - 1) / 3 on a small run). Per class there is no
# minimum: a class smaller than DBSCAN's min_samples is all noise, as it is on any run.
MIN_MAP_SAMPLES = 4
BLOCK = 65_536  # rows per block: a memory-mapped file is never read whole
NAN_FIX = "fix or drop those rows first"


class FeatureValues:
    """The value checks of one features array, fed in row blocks (:meth:`add`), decided
    at :meth:`finish` (NaN or inf first, then values too large, then rows all alike).

    Parameters
    ----------
    what : how the message names the array (``features``, ``features file emb.npy``)
    nan_fix : what the message tells a user to do about NaN or inf
    """

    def __init__(self, what: str = "features", nan_fix: str = NAN_FIX) -> None:
        self.what, self.nan_fix = what, nan_fix
        self.nonfinite_rows = 0
        self.first_nonfinite: int | None = None
        self.large: tuple[int, float] | None = None  # (first row, its largest |value|)
        self.low: np.ndarray | None = None  # per column, as float32 (what the map sees)
        self.high: np.ndarray | None = None
        self.first_bits: np.ndarray | None = None  # float16 rows: the first, as bits
        self.varies = False  # float16 rows: whether one differs from the first

    def add(self, block: np.ndarray, start: int) -> None:
        """Rows ``start`` … ``start + len(block) - 1``, shape (B, D), in their own dtype."""
        x = np.asarray(block)
        if x.dtype == np.float16:
            # NaN and inf are the float16s whose exponent bits are all set: asked on the
            # bits, 5x faster than np.isfinite (numpy's float16 arithmetic is slow).
            special = np.uint16(0x7C00)
            finite = ~((x.view(np.uint16) & special) == special).any(axis=1)
        else:
            finite = np.isfinite(x).all(axis=1)
        if not finite.all():
            bad = np.flatnonzero(~finite)
            self.nonfinite_rows += len(bad)
            if self.first_nonfinite is None:
                self.first_nonfinite = start + int(bad[0])
        if self.first_nonfinite is not None or not len(x):
            return  # NaN or inf is told first (finish): the other values no longer matter
        if x.dtype == np.float16:
            self._add_float16(x)
            return
        # Per column, in the block's own dtype: rounding to float32 keeps the order of
        # values, so these rounded are the float32 block's own extremes, and a float16 or
        # float32 block (every run's features) is never copied.
        low, high = x.min(axis=0), x.max(axis=0)
        if self.large is None and max(-float(low.min()), float(high.max())) > MAX_MAGNITUDE:
            # Which row, from each row's extremes in the block's own dtype (a float64 copy
            # of a block is 1 GB at D = 2048); only these (B,) arrays become float64.
            row_low = x.min(axis=1).astype(np.float64)
            row_high = x.max(axis=1).astype(np.float64)
            top = np.maximum(-row_low, row_high)
            row = int(np.flatnonzero(top > MAX_MAGNITUDE)[0])
            self.large = (start + row, float(top[row]))
        with np.errstate(over="ignore"):  # beyond float32: told apart as self.large
            low, high = low.astype(np.float32), high.astype(np.float32)
        self.low = low if self.low is None else np.minimum(self.low, low)
        self.high = high if self.high is None else np.maximum(self.high, high)

    def _add_float16(self, x: np.ndarray) -> None:
        """Float16 rows: never too large (at most 65504) and, when two differ, by at least
        6e-8, more than ``MIN_SPREAD``; so only whether any row differs from the first is
        asked, on the bits (numpy has no fast float16 min or max: 8x the time of the
        whole check on float32), with -0.0 taken for 0.0."""
        bits = x.view(np.uint16)
        bits = np.where(bits == 0x8000, np.uint16(0), bits)
        if self.first_bits is None:
            self.first_bits = bits[0].copy()
        self.varies = self.varies or bool((bits != self.first_bits).any())

    def finish(self) -> None:
        """Raise for the first problem seen, in order of what to fix first.

        Raises
        ------
        InputError
            A row with NaN or inf; a value beyond float32 or beyond ``MAX_MAGNITUDE``;
            rows that are all the same, or differ by less than ``MIN_SPREAD``.
        """
        if self.first_nonfinite is not None:
            raise InputError(f"{self.what} row {self.first_nonfinite} has NaN or inf "
                             f"({self.nonfinite_rows} row(s) do): {self.nan_fix}")
        if self.large is not None:
            row, top = self.large
            if top > FLOAT32_MAX:
                raise InputError(f"{self.what} row {row} has values up to {top:.3g}, which "
                                 f"overflow float32 (at most {FLOAT32_MAX:.3g}; the map takes "
                                 f"|x| ≤ {MAX_MAGNITUDE:.0e}): scale them first")
            raise InputError(f"{self.what} row {row} has values up to {top:.3g}, beyond what "
                             f"the map can take (|x| ≤ {MAX_MAGNITUDE:.0e}): scale them first")
        if self.low is None and self.first_bits is None:
            return  # no finite row
        spread = 0.0 if self.low is None else \
            float(np.max(self.high.astype(np.float64) - self.low))
        if spread == 0 and not self.varies:
            raise InputError(f"{self.what} are constant: every row is the same (after "
                             "rounding to float32), so the map has nothing to tell apart; "
                             "check how they were made")
        if not self.varies and spread < MIN_SPREAD:
            raise InputError(f"{self.what} differ by at most {spread:.3g} between rows, too "
                             f"little for the map (float32 distances; it needs more than "
                             f"{MIN_SPREAD:.0e}): scale them up first")


def check_feature_values(features: np.ndarray, what: str = "features",
                         nan_fix: str = NAN_FIX) -> None:
    """Check every row of ``features`` as :class:`FeatureValues` does, ``BLOCK`` rows at a
    time.

    Parameters
    ----------
    features : ndarray, shape (N, D)
        Any real dtype (float16, float32, float64, integers), possibly memory-mapped: a
        file is never read whole.
    what : how the message names the array (``features``, ``features file emb.npy``)
    nan_fix : what the message tells a user to do about NaN or inf

    Raises
    ------
    InputError
        See :meth:`FeatureValues.finish`.
    """
    check = FeatureValues(what, nan_fix)
    for start in range(0, len(features), BLOCK):
        check.add(features[start:start + BLOCK], start)
    check.finish()
