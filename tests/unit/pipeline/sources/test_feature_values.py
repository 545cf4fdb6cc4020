"""The features' value check (worker/pipeline/sources/feature_values.py), which
``tc.from_arrays``, ``curator pipeline --dataset features:`` and the New-run form share:
fed in blocks it refuses exactly what the whole array shows, it takes what real features
look like, and it finds a large value without a float64 copy of the block."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tsne_curator as tc
from tests.digits_arrays import digits_all


def _features(n: int = 150) -> tuple[np.ndarray, np.ndarray]:
    x, y, _ = digits_all()
    return x[:n].copy(), y[:n].copy()


VALUES = st.one_of(st.floats(-100, 100), st.sampled_from(
    [0.0, -0.0, 1.0, 1e-14, 3e-13, 1e11, -2e12, 1e20, 1e39, np.nan, np.inf, -np.inf]))


@settings(max_examples=150, deadline=None)
@given(st.sampled_from([np.float16, np.float32, np.float64]), st.integers(1, 12),
       st.integers(1, 3), st.integers(1, 5), st.data())
def test_the_value_check_fed_in_blocks_says_what_the_whole_array_shows(dtype, n, d, block,
                                                                      data):
    """:class:`FeatureValues` fed ``block`` rows at a time refuses exactly what a plain
    look at the whole array (as float32, what the map computes in) finds, first things
    first."""
    from worker.pipeline.sources.feature_values import FeatureValues

    with np.errstate(all="ignore"):  # 1e39 as float32 is inf, and so on: as intended
        x = np.array(data.draw(st.lists(VALUES, min_size=n * d, max_size=n * d)),
                     np.float64).reshape(n, d).astype(dtype)
        finite = np.isfinite(x).all(axis=1)
        x32 = x.astype(np.float32)
        spread = float((x32.max(axis=0).astype(np.float64) - x32.min(axis=0)).max())
    top = np.abs(x.astype(np.float64)).max(axis=1)
    large = top[top > 1e12]  # the first such row is named, with its largest value
    expected = ("NaN or inf" if not finite.all()
                else "overflow float32" if len(large) and large[0] > 3.5e38
                else "beyond what the map" if len(large)
                else "constant" if spread == 0 else "differ by at most" if spread < 1e-12
                else None)
    check = FeatureValues()
    for start in range(0, n, block):
        check.add(x[start:start + block], start)
    if expected is None:
        check.finish()
        return
    with pytest.raises(tc.InputError, match=expected):
        check.finish()


def _constant_column() -> np.ndarray:
    x = _features(150)[0].astype(np.float32)
    x[:, 5] = 7.0
    return x


ACCEPTED = {  # what real features look like: none of it is refused
    "a constant column beside varying ones": _constant_column,
    "uint8 pixel values 0-255": lambda: digits_all()[2][:150].reshape(150, 64),
    "values around 1e6": lambda: 1e6 + _features(150)[0],
    "float32 values around 1e6": lambda: (1e6 + _features(150)[0]).astype(np.float32),
    "float16 features": lambda: _features(150)[0].astype(np.float16),
}


@pytest.mark.parametrize("name", ACCEPTED)
def test_the_value_check_takes_what_real_features_look_like(name):
    from tsne_curator.in_memory import check_features
    from worker.pipeline.sources.feature_values import check_feature_values

    x = ACCEPTED[name]()
    if name.startswith("uint8"):
        assert x.dtype == np.uint8 and x.min() == 0 and x.max() == 255
    check_feature_values(x)
    assert check_features(x).shape == x.shape  # tc.from_arrays's door


def test_a_large_value_is_found_without_a_float64_copy_of_the_block():
    """The row of a value beyond 1e12 is found from each row's extremes in the block's own
    dtype: a float64 copy of a 65,536-row block is 1 GB at D = 2048."""
    import tracemalloc

    from worker.pipeline.sources.feature_values import FeatureValues

    x = np.random.default_rng(0).normal(size=(512, 4096)).astype(np.float32)
    x[300, 7] = -3e12
    for block in (x, x.astype(np.float64)):
        check = FeatureValues()
        tracemalloc.start()
        try:
            check.add(block, 1000)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert check.large is not None and check.large[0] == 1300
        assert check.large[1] == pytest.approx(3e12, rel=1e-6)
        assert peak < block.nbytes / 2, peak / block.nbytes  # NaN's (B, D) bool array at most
