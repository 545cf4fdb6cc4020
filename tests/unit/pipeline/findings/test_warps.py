"""The warp match (worker/pipeline/findings/warps.py) on random images: each row's best
candidate is refined when asked, and a caption across the width is left out."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import torch

from worker.pipeline.findings.warps import (
    WarpOptions,
    candidates,
    copy_views,
    warp_evidence,
    warp_match,
)


def test_every_rows_best_candidate_is_refined_when_asked():
    """Leaks (``every_best``): a caption can pull a copy's grid match under the promise,
    and it is still its row's best candidate; each row's best on the grid is refined then,
    the other pairs below the promise are not (their variants hold the grid's match)."""
    rng = np.random.default_rng(2)
    va = copy_views(rng.integers(0, 255, (8, 32, 32, 3), dtype=np.uint8))
    vb = copy_views(rng.integers(0, 255, (10, 32, 32, 3), dtype=np.uint8))
    a, b = candidates(np.stack([rng.permutation(10)[:4] for _ in range(8)]), same=False)
    grid = warp_match(va, a, vb, b, refine=np.zeros(len(a), bool))
    none_promising = WarpOptions(2, same=False, promise=2.0)
    plain = warp_evidence(va, vb, a, b, 8, none_promising)
    np.testing.assert_allclose(plain.match, grid, atol=1e-6)
    ev = warp_evidence(va, vb, a, b, 8, replace(none_promising, every_best=True))
    best = np.zeros(len(a), bool)
    for i in range(8):
        row = np.flatnonzero(a == i)
        best[row[np.argmax(grid[row, 0])]] = True
    np.testing.assert_allclose(ev.match, warp_match(va, a, vb, b, refine=best), atol=1e-6)
    assert (ev.match[best] >= grid[best] - 1e-6).all()
    assert not np.allclose(ev.match[best], grid[best], atol=1e-4)  # they were refined


def test_a_caption_across_the_width_is_left_out():
    """The occluded variant (``OCCLUSIONS``): two views equal but for the top quarter (a
    caption across the width, wider than any quadrant) match fully once it is left out."""
    from worker.pipeline.findings.warps import SIDE, _occluded

    g = torch.Generator().manual_seed(0)
    w = torch.rand(3, SIDE, SIDE, generator=g)
    other = w.clone()
    other[:, :SIDE // 4] = torch.rand(3, SIDE // 4, SIDE, generator=g)  # the caption
    target = other.reshape(3, -1)
    target = (target - target.mean(1, keepdim=True))
    target = target / target.norm(dim=1, keepdim=True)
    np.testing.assert_allclose(_occluded(w.reshape(3, -1), target).numpy(), 1.0, atol=1e-5)
