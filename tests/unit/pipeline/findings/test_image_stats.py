"""The image statistics the image-quality kinds read (findings/image_stats.py), on small
arrays whose answers are known."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageFilter

from worker.pipeline.findings.image_stats import (
    content_box,
    image_stats,
    robust_z,
    share_beyond,
)
from worker.pipeline.sources.ingest import thumbnail


def _texture(seed: int = 0, side: int = 32) -> np.ndarray:
    """A colourful, detailed RGB image: uint8 (side, side, 3)."""
    return np.random.default_rng(seed).integers(30, 220, (side, side, 3), dtype=np.uint8)


def test_the_content_box_is_where_the_thumbnail_pastes_the_image():
    assert content_box(32, 32, 32) == (0, 0, 32, 32)
    wide = np.full((8, 32, 3), 200, np.uint8)  # 4:1, pasted into rows 12..19
    thumb = thumbnail(Image.fromarray(wide), 32)
    x0, y0, x1, y1 = content_box(32, 8, 32)
    assert (x0, x1) == (0, 32) and 12 <= y0 < y1 <= 20
    assert (thumb[y0:y1, x0:x1] == 200).all()  # only the image, none of the padding
    tall = content_box(8, 32, 32)
    assert (tall[1], tall[3]) == (0, 32) and 12 <= tall[0] < tall[2] <= 20


def test_exposure_contrast_colour_and_clipping_of_known_images():
    black = np.zeros((32, 32, 3), np.uint8)
    grey = np.full((32, 32, 3), 128, np.uint8)
    half_white = _texture()
    half_white[:16] = 255
    s = image_stats(np.stack([black, grey, _texture(), half_white]))
    assert s["brightest"][0] == 0 and s["mean"][1] == 128
    assert s["contrast"][1] == 0 and s["contrast"][2] > 20
    assert s["chroma"][1] == 0 and s["chroma"][2] > 50
    assert s["clipped"][3] == 0.5 and s["clipped"][2] == 0
    assert s["darkest"][1] == 128


def test_blur_lowers_sharpness_and_darkening_does_not():
    img = Image.fromarray(_texture(1))
    blurred = np.asarray(img.filter(ImageFilter.GaussianBlur(1.5)))
    darker = (np.asarray(img, np.float32) * 0.5).astype(np.uint8)
    s = image_stats(np.stack([np.asarray(img), blurred, darker]))["sharpness"]
    assert s[1] < s[0] - 1.0
    assert abs(s[2] - s[0]) < 0.2  # energy and variance scale alike


def test_a_letterbox_is_a_border_and_a_backdrop_or_one_bar_is_not():
    letterbox = _texture(2)
    letterbox[:5] = 0
    letterbox[-5:] = 0
    one_bar = _texture(3)
    one_bar[:8] = 0  # a dark sky above: no bar below
    backdrop = np.full((32, 32, 3), 255, np.uint8)
    yy, xx = np.mgrid[:32, :32]
    disc = (yy - 16) ** 2 + (xx - 16) ** 2 < 10 ** 2  # an object on white: no straight edge
    backdrop[disc] = _texture(4)[disc]
    b = image_stats(np.stack([letterbox, one_bar, backdrop, _texture(5)]))["border"]
    assert abs(b[0] - 10 / 32) < 0.07
    assert b[1] == 0 and b[2] == 0 and b[3] == 0


def test_with_sizes_the_padding_of_a_wide_image_is_not_read():
    wide = Image.fromarray(np.full((8, 32, 3), 200, np.uint8))
    thumbs = np.stack([thumbnail(wide, 32)])
    whole = image_stats(thumbs)
    own = image_stats(thumbs, np.array([[32, 8]]))
    assert whole["mean"][0] < 100 and whole["border"][0] > 0.5  # the black padding
    assert own["mean"][0] == 200 and own["border"][0] == 0


def test_robust_z_is_on_the_datasets_own_scale_with_a_floor():
    x = np.arange(100, dtype=np.float64)
    x[-1] = 1000
    z, med, spread = robust_z(x, floor=0.1)
    assert med == 49.5 and spread == 1.4826 * 25  # the normal-consistent deviation
    assert z[-1] > 20 and abs(z[50]) < 0.1
    z, _, _ = robust_z(x, floor=0.1, lower=True)
    assert z[0] > 1 and z[-1] < -20  # a low value is the defect
    z, med, spread = robust_z(np.array([32.0, 32, 32, 8]), floor=2.0, lower=True)
    assert spread > 2.0 and z[-1] > 1  # the 10th percentile sees the small one
    z, med, spread = robust_z(np.full(50, 32.0), floor=2.0)
    assert spread == 2.0 and (z == 0).all()


def test_a_skewed_tail_widens_the_spread_on_its_side():
    """A fifth of the images share a trait (digits: black bands): not an outlier."""
    x = np.zeros(100)
    x[:20] = 0.25
    z, _, spread = robust_z(x, floor=0.02)
    assert spread > 0.15 and z.max() < 2


def test_share_beyond_counts_the_images_on_the_other_side():
    x = np.array([1.0, 2, 3, 4])
    assert share_beyond(x, lower=True).tolist() == [0.75, 0.5, 0.25, 0.0]
    assert share_beyond(x, lower=False).tolist() == [0.0, 0.25, 0.5, 0.75]


def _overexposed(x: np.ndarray, clip_share: float) -> np.ndarray:
    """``x`` with its exposure raised until ``clip_share`` of its pixels clip (as
    bench/quality.py injects it)."""
    rgb = x.astype(np.float32)
    top = np.percentile(rgb @ np.array([0.299, 0.587, 0.114], np.float32),
                        100 * (1 - clip_share))
    return (rgb * 255.0 / top).clip(0, 255).astype(np.uint8)


def test_a_blown_exposure_clips_texture_and_a_white_backdrop_does_not():
    smooth = np.asarray(Image.fromarray(_texture(6)).filter(ImageFilter.GaussianBlur(1)))
    backdrop = np.full((32, 32, 3), 255, np.uint8)
    yy, xx = np.mgrid[:32, :32]
    disc = (yy - 16) ** 2 + (xx - 16) ** 2 < 9 ** 2
    backdrop[disc] = smooth[disc]
    s = image_stats(np.stack([backdrop, smooth, _overexposed(smooth, 0.3)]))
    assert s["clipped"][0] > 0.6  # mostly white: the old share of white pixels
    assert s["blown"][0] < 0.15  # but only its outline is clipped through texture
    assert s["blown"][1] == 0 and s["blown"][2] > 0.25


def test_colourful_reads_the_most_colourful_pixels():
    muted = np.full((32, 32, 3), 120, np.uint8)
    muted[:6, :6] = (200, 40, 40)  # a red roof in a grey street: 3.5% of the pixels
    faded = (0.1 * _texture(7).astype(np.float32) + 0.9 * 128).astype(np.uint8)
    s = image_stats(np.stack([muted, faded, _texture(7)]))
    assert s["chroma"][0] < 10 and s["colourful"][0] == 160  # mean low, top high
    assert s["colourful"][1] < 0.15 * s["colourful"][2]  # every pixel's colour taken


def test_a_few_dark_pixels_keep_a_bright_scene_from_looking_brightened():
    snow = np.full((32, 32, 3), 235, np.uint8)
    snow[:4, :4] = 20  # a skier: 1.6% of the pixels
    s = image_stats(np.stack([snow]))
    assert s["darkest"][0] == 20


def test_a_heavy_blur_scores_below_a_light_one():
    # Squares of 16 px in random colours, with a little grain: edges at every scale, and
    # contrast that blur keeps (blurred noise alone would turn flat, low_info's case).
    squares = np.kron(_texture(8, 4), np.ones((16, 16, 1), np.uint8))
    grain = np.random.default_rng(9).integers(-6, 7, squares.shape)
    img = Image.fromarray((squares + grain).clip(0, 255).astype(np.uint8))
    radii = (0, 1, 2, 4, 6)
    s = image_stats(np.stack([np.asarray(img.filter(ImageFilter.GaussianBlur(r)) if r else img)
                              for r in radii]))["sharpness"]
    assert (s[1:] < s[0] - 1.0).all(), s
    # A heavy blur empties both bands; against the image's own contrast it stays below a
    # light one rather than drifting back toward sharp.
    assert (s[3:] < s[1] - 0.5).all(), s


def test_contrast_is_the_luma_range_a_small_object_keeps():
    sky = np.full((32, 32, 3), 200, np.uint8)
    sky[10:16, 10:16] = 40  # a bird: 3.5% of the pixels
    flattened = (128 + 0.1 * (sky.astype(np.float32) - 128)).astype(np.uint8)
    s = image_stats(np.stack([sky, flattened]))["contrast"]
    assert s[0] == 160 and s[1] <= 17  # the standard deviation of the first is 29


def test_a_coloured_light_keeps_a_night_scene_bright_and_a_saturated_object_a_white_one_dark():
    """The brightest pixels are read on each pixel's largest channel and the darkest on its
    smallest: a red tail light (luma 76) in a night scene is as bright as a white lamp, a
    blue object (luma 29) on white as dark as a black one; darkening and brightening move
    every channel."""
    night = np.full((32, 32, 3), 10, np.uint8)
    night[:4, :4] = (255, 0, 0)  # a red light: 1.6% of the pixels
    white = np.full((32, 32, 3), 245, np.uint8)
    white[:4, :4] = (0, 0, 255)  # a blue object
    darkened = (night.astype(np.float32) * 0.25).astype(np.uint8)
    brightened = (white + (255 - white.astype(np.float32)) * 0.65).astype(np.uint8)
    s = image_stats(np.stack([night, white, darkened, brightened]))
    assert s["brightest"][0] == 255 and s["brightest"][2] == 63
    assert s["darkest"][1] == 0 and s["darkest"][3] == 165
    assert s["mean"][0] < 15  # luma: the light hardly counts

