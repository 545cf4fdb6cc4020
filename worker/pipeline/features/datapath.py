"""The data path to the network: uint8 on the host, every float on the device.

Host:

- thumbnails that are the images (CIFAR-size data) are sliced from their memory map by a
  prefetching thread;
- files are decoded by worker processes (all cores but one, sources/decoding.py), JPEGs
  at a reduced DCT scale; with ``jpeg_on_device`` (the default on CUDA) JPEG files are
  only read, and torchvision's decoder turns them into pixels on the device, a batch at
  a time;
- a batch is uint8, padded to its largest image, in pinned memory on CUDA, copied without
  blocking while the loader prepares the next ones.

Device: decode (JPEG bytes), resize (bilinear, antialiased as PIL's), scale, normalise,
channels_last. The host does no per-pixel float work on the way.
"""

from __future__ import annotations

import io
import queue
import threading
import warnings
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

from worker.pipeline.errors import InputError
from worker.pipeline.sources.datasets import Dataset
from worker.pipeline.sources.decoding import children_allowed, draft_scale

# Batches a loader prepares ahead of the network, per worker (DataLoader's prefetch_factor)
# and for thumbnails (the slicing thread's queue).
PREFETCH = 4
JPEG_MAGIC = b"\xff\xd8\xff"


@dataclass
class HostBatch:
    """A batch of images on its way to the device, in one flat buffer.

    data : uint8 (T,), each image's (H, W, 3) pixels, or a JPEG file's bytes, one after
        another: one copy to the device, one shared-memory block from a loader worker,
        and no padding (a batch of 256–500 px photographs padded to its largest image was
        four times its size)
    offsets : int64 (B + 1,), where each image starts in ``data``, and the end
    sizes : int64 (B, 2), each image's (height, width); (-1, sample index) for JPEG bytes
        that the device decodes
    """

    data: torch.Tensor
    offsets: torch.Tensor
    sizes: torch.Tensor

    def pin_memory(self) -> HostBatch:  # called by DataLoader's pinning thread
        return HostBatch(self.data.pin_memory(), self.offsets, self.sizes)

    def __len__(self) -> int:
        return len(self.sizes)

    @property
    def encoded(self) -> list[int]:
        """The rows that hold JPEG bytes."""
        return torch.nonzero(self.sizes[:, 0] < 0).flatten().tolist()

    def part(self, row: int) -> torch.Tensor:
        """Row ``row``'s slice of ``data`` (a view)."""
        return self.data[int(self.offsets[row]):int(self.offsets[row + 1])]


def from_thumbnails(thumbs: np.ndarray) -> HostBatch:
    """A batch of equal-size images, uint8 (B, S, S, 3)."""
    b, h, w, _ = thumbs.shape
    return HostBatch(torch.from_numpy(np.ascontiguousarray(thumbs).reshape(-1)),
                     torch.arange(b + 1, dtype=torch.int64) * (h * w * 3),
                     torch.tensor([[h, w]] * b, dtype=torch.int64).reshape(b, 2))


class _Files(torch.utils.data.Dataset):
    """Sample i as uint8 (H, W, 3) pixels, or a JPEG file's bytes when the device decodes
    JPEGs. Runs in the loader's worker processes."""

    def __init__(self, ds: Dataset, side: int, jpeg_bytes: bool) -> None:
        self.ds, self.side, self.jpeg_bytes = ds, side, jpeg_bytes

    def __len__(self) -> int:
        return len(self.ds.samples)

    def __getitem__(self, i: int) -> tuple[int, np.ndarray, bool]:
        path = self.ds.file_path(i)
        try:
            if self.jpeg_bytes and path is not None:
                data = path.read_bytes()
                if data.startswith(JPEG_MAGIC):
                    return i, np.frombuffer(data, np.uint8), True
            img, _ = self.ds.decode(i, min_side=self.side)
        except Exception as exc:  # noqa: BLE001 - surface as a user-facing error
            raise InputError(f"cannot read {self.ds.samples.paths[i]} (changed since "
                             f"ingest?): {exc}") from None
        return i, np.asarray(img, dtype=np.uint8), False


def _collate(items: list[tuple[int, np.ndarray, bool]]) -> HostBatch:
    ends = np.cumsum([a.size for _, a, _ in items])
    flat = torch.empty(int(ends[-1]), dtype=torch.uint8)
    if torch.utils.data.get_worker_info() is not None:
        # In a loader worker, straight into shared memory, as default_collate does: sending
        # the batch then copies nothing (otherwise it is moved there, a third copy).
        flat.share_memory_()
    data = flat.numpy()
    sizes = np.empty((len(items), 2), np.int64)
    start = 0
    for row, (i, a, enc) in enumerate(items):
        data[start:ends[row]] = a.reshape(-1)
        sizes[row] = (-1, i) if enc else a.shape[:2]
        start = ends[row]
    return HostBatch(flat, torch.from_numpy(np.concatenate([[0], ends])),
                     torch.from_numpy(sizes))


def _prefetched(batches: Iterator[HostBatch], pin: bool) -> Iterator[HostBatch]:
    """``batches`` made (and pinned) by a thread, up to PREFETCH ahead of the consumer."""
    q: queue.Queue = queue.Queue(PREFETCH)
    stop = threading.Event()

    def put(item: object) -> bool:
        """Queue ``item`` unless the consumer has gone (then the thread ends, not waits)."""
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def fill() -> None:
        try:
            for b in batches:
                if not put(b.pin_memory() if pin else b):
                    return
        except BaseException as exc:  # noqa: BLE001 - re-raised in the consumer
            put(exc)
            return
        put(None)

    t = threading.Thread(target=fill, daemon=True)
    t.start()
    try:
        while (b := q.get()) is not None:
            if isinstance(b, BaseException):
                raise b
            yield b
    finally:
        stop.set()


@dataclass(frozen=True)
class LoaderOptions:
    """How :func:`host_batches` makes its batches.

    side : int
        The network's input side; JPEGs decode at a reduced scale that keeps it.
    batch_size : int
        Samples per batch (the last may be smaller).
    workers : int
        Decoding processes (0: in this process).
    device : torch.device
        Where the batches go: on CUDA they are pinned, and JPEGs decode there by default.
    jpeg_on_device : bool, optional
        Hand JPEG files to the device's decoder; default (None) on CUDA only.
    """

    side: int
    batch_size: int
    workers: int
    device: torch.device
    jpeg_on_device: bool | None = None


def host_batches(ds: Dataset, thumbs: np.ndarray | None, how: LoaderOptions,
                 order: np.ndarray | None = None) -> Iterator[HostBatch]:
    """uint8 batches of the samples in ``order`` (default: all, in sample order), made as
    ``how`` says.

    Parameters
    ----------
    thumbs : ndarray of uint8, shape (N, S, S, 3), or None
        Ingest's thumbnails when they are the images; None decodes the files.
    """
    order = np.arange(len(ds.samples)) if order is None else order
    pin, batch_size, workers = how.device.type == "cuda", how.batch_size, how.workers
    if thumbs is not None:
        yield from _prefetched((from_thumbnails(thumbs[order[s:s + batch_size]])
                                for s in range(0, len(order), batch_size)), pin)
        return
    on_device = pin if how.jpeg_on_device is None else how.jpeg_on_device
    loader = torch.utils.data.DataLoader(
        _Files(ds, how.side, on_device), sampler=order.tolist(), batch_size=batch_size,
        num_workers=workers, collate_fn=_collate, pin_memory=pin,
        prefetch_factor=PREFETCH if workers else None, persistent_workers=False)
    with children_allowed():  # the workers start here, maybe inside a Celery job
        batches = iter(loader)
    yield from batches


def _decode_on(device: torch.device, batch: HostBatch, ds: Dataset | None
               ) -> list[tuple[int, torch.Tensor]]:
    """The batch's JPEG bytes as uint8 (3, H, W) images on ``device``: a batch at a time
    through torchvision's decoder (nvJPEG on CUDA); one at a time when that fails, and on
    the host (PIL) for what the device's decoder refuses (progressive or CMYK files on
    some GPUs)."""
    from torchvision.io import ImageReadMode, decode_jpeg

    def decode(data: torch.Tensor | list[torch.Tensor]):  # noqa: ANN202 - as decode_jpeg
        with warnings.catch_warnings():
            # torchvision 0.29 points to TorchCodec for image decoding, on every call; its
            # decode_jpeg still decodes batches with nvJPEG, which is what this path needs.
            warnings.simplefilter("ignore", DeprecationWarning)
            return decode_jpeg(data, mode=ImageReadMode.RGB, device=device)

    rows = batch.encoded
    data = [batch.part(r) for r in rows]
    try:
        images = decode(data)
    except RuntimeError:
        images = []
        for row, b in zip(rows, data, strict=True):
            try:
                images.append(decode(b))
            except RuntimeError:
                try:
                    img = Image.open(io.BytesIO(b.numpy().tobytes())).convert("RGB")
                except Exception as exc:  # noqa: BLE001 - surface as a user-facing error
                    name = ds.samples.paths[int(batch.sizes[row, 1])] if ds else f"row {row}"
                    raise InputError(f"cannot read {name} (changed since ingest?): "
                                     f"{exc}") from None
                images.append(torch.from_numpy(np.asarray(img).copy()).permute(2, 0, 1)
                              .to(device))
    return list(zip(rows, images, strict=True))


def to_device(batch: HostBatch, side: int, device: torch.device,
              ds: Dataset | None = None) -> torch.Tensor:
    """The batch on ``device`` as float (B, 3, side, side) in 0..255: decoded, and resized
    bilinearly with PIL's antialiasing, images of one size together.

    ``ds`` names a sample in the message when a JPEG cannot be decoded.
    """
    n = len(batch)
    out = torch.empty((n, 3, side, side), dtype=torch.float32, device=device)
    groups: dict[tuple[int, int], list[int]] = {}
    for row, (h, w) in enumerate(batch.sizes.tolist()):
        if h >= 0:
            groups.setdefault((h, w), []).append(row)
    if groups:
        data = batch.data.to(device, non_blocking=True)
        offsets = batch.offsets.tolist()
        for (h, w), rows in groups.items():
            if len(rows) == n:  # the usual case: one size, one view, no gather
                x = data.view(n, h, w, 3)
            else:
                x = torch.stack([data[offsets[r]:offsets[r + 1]].view(h, w, 3) for r in rows])
            y = _resize(x.permute(0, 3, 1, 2), side)
            if len(rows) == n:
                out = y
            else:
                out[rows] = y
    for row, img in _decode_on(device, batch, ds) if batch.encoded else ():
        out[row] = _resize(_as_drafted(img.unsqueeze(0), side), side)[0]
    return out


def _as_drafted(x: torch.Tensor, side: int) -> torch.Tensor:
    """A fully decoded JPEG (1, 3, H, W) as the host's reduced-scale decode gives it: area
    means over the same s×s blocks (sources/decoding.draft_scale). libjpeg's scaled IDCT
    is close to that mean; without it the two paths' features differed up to cosine 0.998
    (tests/integration/pipeline/features/test_datapath.py), with it they agree to 0.999+."""
    s = draft_scale(x.shape[-1], x.shape[-2], side)
    return x if s == 1 else F.avg_pool2d(x.float(), s, ceil_mode=True)


def _resize(x: torch.Tensor, side: int) -> torch.Tensor:
    """uint8 (B, 3, H, W) to float (B, 3, side, side)."""
    x = x.float()
    if tuple(x.shape[-2:]) == (side, side):
        return x
    return F.interpolate(x, size=(side, side), mode="bilinear", align_corners=False,
                         antialias=True)


def normalise(x: torch.Tensor, mean: tuple[float, ...], std: tuple[float, ...]
              ) -> torch.Tensor:
    """Float (B, 3, S, S) in 0..255 to the network's input: scaled, normalised,
    channels_last, in place where it can."""
    m = torch.tensor(mean, device=x.device).view(1, 3, 1, 1).mul_(255.0)
    s = torch.tensor(std, device=x.device).view(1, 3, 1, 1).mul_(255.0)
    return x.sub_(m).div_(s).contiguous(memory_format=torch.channels_last)
