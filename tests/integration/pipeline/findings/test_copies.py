"""The copy tests' calibration does not count the copies it looks for: the tail test's
reference (findings/copies.py, test 1) and the warp test's (findings/warps.py) stay where
they are whether a third of the images are copies or none, on real CIFAR-10 photographs."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image, ImageEnhance

from tests.integration.conftest import train_photos
from worker.pipeline.findings.copies import (
    RING,
    TAIL_PROPOSE,
    NearMatches,
    near_matches,
    ring,
)
from worker.pipeline.findings.pixels import grey_views, match_pairs
from worker.pipeline.findings.warps import (
    K_FEATURE,
    K_KEY,
    TAIL_WARP,
    WarpOptions,
    candidates,
    copy_views,
    key_neighbours,
    warp_evidence,
)
from worker.pipeline.map.neighbours import exact_neighbours


@pytest.fixture(scope="module")
def photos(cifar_mini) -> np.ndarray:
    """300 CIFAR-10 train photographs, 30 a class: uint8 (300, 32, 32, 3)."""
    return train_photos(cifar_mini, 30)


def _light_copy(img: np.ndarray, i: int) -> np.ndarray:
    """A re-encoded copy: brightness ×0.95–1.05, JPEG quality 85."""
    im = ImageEnhance.Brightness(Image.fromarray(img)).enhance(0.95 + 0.1 * (i % 3) / 2)
    buf = io.BytesIO()
    im.save(buf, "JPEG", quality=85)
    return np.asarray(Image.open(buf).convert("RGB"))


def _index(thumbs: np.ndarray) -> np.ndarray:
    """Each image's 20 nearest others on its grey view: int64 (N, 20)."""
    g = grey_views(thumbs).reshape(len(thumbs), -1).astype(np.float32)
    return exact_neighbours(g, RING[1])[0]


def _with_copies(photos: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The photographs and a light copy of the first ``n``: 2n of the images in a copy
    pair. Returns the images and each copy's source index (n,)."""
    copies = np.stack([_light_copy(photos[i], i) for i in range(n)])
    return np.concatenate([photos, copies]), np.arange(n)


def test_the_tail_cut_stays_where_it_is_when_copies_abound(photos):
    clean = near_matches(grey_views(photos), _index(photos))
    thumbs, source = _with_copies(photos, 150)  # 300 of 450 images in a copy pair
    grey = grey_views(thumbs)
    copied = near_matches(grey, _index(thumbs))
    assert abs(copied.tail_cut(TAIL_PROPOSE) - clean.tail_cut(TAIL_PROPOSE)) < 0.02
    # each sample's own best match, the reference before the ring, is what copies lift
    before = [NearMatches(m.best, m.best).tail_cut(3.5) for m in (clean, copied)]
    assert before[1] > before[0] + 0.03
    # and the light copies still pass the cut that the ring gives
    match = match_pairs(grey, np.arange(300, 450), grey, source)
    assert (match >= copied.tail_cut(TAIL_PROPOSE)).mean() >= 0.9


def test_the_warp_cuts_stay_where_they_are_when_copies_abound(photos):
    def cuts(thumbs: np.ndarray) -> np.ndarray:
        views, nbrs = copy_views(thumbs), _index(thumbs)
        a, b = candidates(nbrs[:, :K_FEATURE], key_neighbours(views.key, None, K_KEY))
        ev = warp_evidence(views, views, a, b, len(thumbs),
                           WarpOptions(3, same=True, far=ring(nbrs)))
        assert ev.reference.shape == (len(thumbs), 3)  # every row of a set this small
        return ev.cuts(0.0, TAIL_WARP)

    clean, copied = cuts(photos), cuts(_with_copies(photos, 150)[0])
    np.testing.assert_allclose(copied, clean, atol=0.02)


def test_a_family_of_copies_still_stands_out(photos):
    """Six copies of one photograph fill its 4th-best match with a copy: the ratio test
    then reads its closest different picture below them, and every copy passes."""
    from worker.pipeline.findings.copies import RATIO_PROPOSE, distinctness, stands_out

    family = np.stack([_light_copy(photos[i], j) for i in range(20) for j in range(6)])
    thumbs = np.concatenate([photos, family])
    grey = grey_views(thumbs)
    near = near_matches(grey, _index(thumbs))
    copies = np.arange(300, 420)
    source = np.repeat(np.arange(20), 6)
    match = match_pairs(grey, copies, grey, source)
    assert stands_out(match, near.distinct[copies], RATIO_PROPOSE).mean() >= 0.9
    # the REFERENCE_RANK + 1-th best alone, as before, is another copy: nothing stands out
    m = match_pairs(grey, np.repeat(copies, 10), grey, _index(thumbs)[copies, :10].ravel())
    plain = distinctness(m.reshape(-1, 10), cut=2.0)  # no match passes a cut of 2
    assert stands_out(match, plain, RATIO_PROPOSE).mean() < 0.5
