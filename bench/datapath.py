"""The data path alone: how fast the host turns image files into the device's batches.

The network is replaced by the identity. Two sets of files: CIFAR-size JPEGs (32 px, the
shared CIFAR-10 folder) and photograph-size ones (256–500 px, bench/jpeg_folder.py). For
each, in one run:

- ``host`` route, 1 decoding process, then one per core: files decoded (JPEG at a reduced
  DCT scale) into uint8 batches; ``img_s_per_core`` is the first, ``scaling`` the second
  over the first (the target on 2 cores: ≥ 1.7);
- ``device`` route, one process per core: files only read, for the device's JPEG decoder;
- ``old``, the baseline: what extraction did before, in a DataLoader with 2 workers: each
  file decoded at full size and resized on the host (PIL), and thumbnails resized in float
  on the host (``F.interpolate``).

It also times the host's share per image on each route, with the device work (decode,
resize, normalise) left out: that share has no per-pixel float work on the new routes.
Finally the whole path on each route with ``--device`` (``to_device`` + ``normalise``;
on CPU the device's share competes with decoding for the same cores).

    python -m bench.datapath [--photos 6000] [--cifar 20000] [--side 160] [--device cuda]
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

from bench.common import cifar_folder, machine
from bench.jpeg_folder import write_folder
from worker.pipeline.features.datapath import (
    LoaderOptions,
    from_thumbnails,
    host_batches,
    normalise,
    to_device,
)
from worker.pipeline.sources.datasets import Dataset, open_dataset, parse_spec
from worker.pipeline.sources.decoding import host_cores

WORK = Path("/tmp/curator-bench/datapath")
CPU = torch.device("cpu")  # the host routes hand batches over without a device


class _OldFiles(torch.utils.data.Dataset):
    """The extraction's file reader before this bench: full decode, PIL resize on the host."""

    def __init__(self, ds: Dataset, side: int) -> None:
        self.ds, self.side = ds, side

    def __len__(self) -> int:
        return len(self.ds.samples)

    def __getitem__(self, i: int) -> torch.Tensor:
        img = self.ds.load_image(i)
        if img.size != (self.side, self.side):
            img = img.resize((self.side, self.side), Image.Resampling.BILINEAR)
        return torch.from_numpy(np.asarray(img, dtype=np.uint8).copy()).permute(2, 0, 1)


def _rate(batches, n: int) -> float:  # noqa: ANN001 - any iterable of batches
    t = time.perf_counter()
    seen = sum(len(b) for b in batches)
    assert seen == n, (seen, n)
    return n / (time.perf_counter() - t)


def old_files(ds: Dataset, side: int, batch: int) -> float:
    loader = torch.utils.data.DataLoader(_OldFiles(ds, side), batch_size=batch, num_workers=2)
    return _rate(loader, len(ds.samples))


def new_route(ds: Dataset, side: int, batch: int, workers: int, on_device: bool) -> float:
    return _rate(host_batches(ds, None, LoaderOptions(side, batch, workers, CPU, on_device)),
                 len(ds.samples))


def whole_path(ds: Dataset, side: int, batch: int, workers: int, device: torch.device,
               on_device: bool) -> float:
    """A route plus the device's share (decode, resize, normalise) on ``device``."""
    mean, std = (0.5, 0.5, 0.5), (0.25, 0.25, 0.25)
    t = time.perf_counter()
    seen = 0
    for b in host_batches(ds, None, LoaderOptions(side, batch, workers, device, on_device)):
        seen += len(normalise(to_device(b, side, device, ds), mean, std))
    if device.type == "cuda":
        torch.cuda.synchronize()
    assert seen == len(ds.samples)
    return seen / (time.perf_counter() - t)


def thumbnails(n: int, side: int, batch: int) -> tuple[float, float]:
    """Host ms per image for 32-px thumbnails bound for ``side``: old (float resize on the
    host) and new (slice only)."""
    thumbs = np.random.default_rng(0).integers(0, 256, (n, 32, 32, 3), dtype=np.uint8)

    def old() -> None:
        for s in range(0, n, batch):
            b = torch.from_numpy(np.ascontiguousarray(thumbs[s:s + batch])).permute(0, 3, 1, 2)
            F.interpolate(b.float(), size=(side, side), mode="bilinear",
                          align_corners=False).round().clamp(0, 255).to(torch.uint8)

    def new() -> None:
        for s in range(0, n, batch):
            from_thumbnails(thumbs[s:s + batch])

    out = []
    for fn in (old, new):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) / n * 1e3)
    return out[0], out[1]


def bench_set(name: str, root: Path, side: int, batch: int, device: torch.device) -> None:
    ds = open_dataset(parse_spec(f"folder:{root}"))
    n, cores = len(ds.samples), host_cores()
    new_route(ds, side, batch, cores, False)  # warm the page cache
    old = old_files(ds, side, batch)
    one = new_route(ds, side, batch, 1, False)
    every = new_route(ds, side, batch, cores, False)
    dev = new_route(ds, side, batch, cores, True)
    workers = max(1, cores - 1)
    whole = {r: whole_path(ds, side, batch, workers, device, r == "device")
             for r in ("host", "device")}
    print(f"{name}: {n} files → {side} px")
    print(f"  old (full decode + host resize, 2 workers): {old:8.0f} img/s  "
          f"host {1e3 * 2 / old:.3f} ms/img")
    print(f"  host route, 1 process:                      {one:8.0f} img/s")
    print(f"  host route, {cores} processes:                    {every:8.0f} img/s  "
          f"host {1e3 * cores / every:.3f} ms/img")
    print(f"  device route (bytes only), {cores} processes:     {dev:8.0f} img/s  "
          f"host {1e3 * cores / dev:.3f} ms/img")
    for route, rate in whole.items():
        print(f"  whole path, {route} route, {device.type} as the device:  {rate:8.0f} img/s")
    print(f"{name}: img_s_per_core={one:.0f} scaling={every / one:.2f} "
          f"host_route_vs_old={every * 2 / cores / old:.2f}x "
          f"device_route_host_share={dev / old * 2 / cores:.1f}x_less_host_time")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--photos", type=int, default=6000, help="256–500 px JPEG files")
    ap.add_argument("--cifar", type=int, default=20000, help="32 px CIFAR JPEG files")
    ap.add_argument("--side", type=int, default=160, help="network input side")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--device", default="cpu", help="the device of the whole path: cpu, cuda")
    a = ap.parse_args()
    device = torch.device(a.device)
    print(machine(), f"· host cores {host_cores()}")
    cifar = cifar_folder()
    small = WORK / f"cifar-{a.cifar}"
    if not small.is_dir():  # the first a.cifar train files, classes interleaved
        files = sorted((cifar / "train").glob("*/*.jpg"), key=lambda p: (int(p.stem), p))
        for f in files[:a.cifar]:
            (small / f.parent.name).mkdir(parents=True, exist_ok=True)
            shutil.copy(f, small / f.parent.name / f.name)
    photos = write_folder(WORK / f"photos-{a.photos}", a.photos, cifar)
    ms_old, ms_new = thumbnails(20000, a.side, a.batch)
    print(f"thumbnails 32 → {a.side} px: host {ms_old:.4f} ms/img old (float resize), "
          f"{ms_new:.4f} ms/img new (slice; resize on the device): "
          f"thumbnail_host_ratio={ms_old / ms_new:.0f}x")
    bench_set("cifar32", small, a.side, a.batch, device)
    bench_set("photos", photos, a.side, a.batch, device)


if __name__ == "__main__":
    main()
