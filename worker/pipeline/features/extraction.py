"""Penultimate-layer feature extraction, with an optional fine-tune first.

Images reach the device as uint8 batches and are resized and normalised there
(features/datapath.py). When ingest's thumbnails hold every image at full resolution
(CIFAR-size data), they are the decoded-image cache and nothing is decoded twice;
otherwise worker processes decode the files, or the device decodes JPEGs (CUDA). On
CPU, BatchNorm is folded into the convolutions and tensors are channels_last (about
1.9× on CIFAR ResNet-56 here). Inference runs under bf16 autocast on CUDA and on CPUs
that compute bf16 in hardware (``precision="auto"``; 3× the fp32 forward on this
AVX512-BF16 EPYC, features with cosine ≥ 0.9999 to fp32).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from worker.pipeline.errors import InputError
from worker.pipeline.features import efficientnet
from worker.pipeline.features.backbones import (
    Backbone,
    build_backbone,
    check_model_name,
    file_sha256,
    is_pretrained,
    pick_device,
    resolve_precision,
)
from worker.pipeline.features.datapath import (
    LoaderOptions,
    host_batches,
    normalise,
    to_device,
)
from worker.pipeline.features.feature_options import FeatureOptions
from worker.pipeline.progress import ProgressFn, report
from worker.pipeline.sources.datasets import Dataset
from worker.pipeline.sources.decoding import decode_workers
from worker.pipeline.sources.feature_values import FeatureValues
from worker.pipeline.sources.labels import features_file_key, has_features_copy
from worker.pipeline.storage.rundir import NpyRows, RunDir, atomic_path, save_npy


def _network_batches(ds: Dataset, thumbs: np.ndarray | None, bb: Backbone,
                     opts: FeatureOptions, device: torch.device,
                     order: np.ndarray | None = None) -> Iterator[torch.Tensor]:
    """Float (B, 3, S, S) batches in 0..255 on ``device``, in sample order (or ``order``):
    uint8 on the host, every float on the device (features/datapath.py)."""
    on_device = None if opts.decode == "auto" else opts.decode == "device"
    how = LoaderOptions(bb.input_size, opts.batch_size, decode_workers(opts.num_workers),
                        device, on_device)
    for batch in host_batches(ds, thumbs, how, order):
        yield to_device(batch, bb.input_size, device, ds)


def _inference_net(net: nn.Module, device: torch.device) -> nn.Module:
    net = net.eval().to(device)
    if device.type == "cpu" and type(net).__module__.startswith("timm."):
        efficientnet.fold_batchnorm(net)
    elif device.type == "cpu":
        # Folding BatchNorm into the convolutions removes a memory pass per layer.
        try:
            from torch.fx.experimental.optimization import fuse

            net = fuse(net)
        except Exception:  # noqa: BLE001 - an untraceable model simply runs unfused
            pass
    return net.to(memory_format=torch.channels_last)


def _augment(batch: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Random flip and 4-px-padded random crop on a batch (B, 3, S, S) of 0..255 pixels,
    on its device (``gen`` is a CPU generator)."""
    b, _, s, _ = batch.shape
    flip = (torch.rand(b, generator=gen) < 0.5).to(batch.device)
    batch = torch.where(flip.view(b, 1, 1, 1), batch.flip(3), batch)
    pad = max(1, s // 8)
    padded = F.pad(batch, (pad, pad, pad, pad))
    dx, dy = torch.randint(0, 2 * pad + 1, (2,), generator=gen).tolist()
    return padded[:, :, dy:dy + s, dx:dx + s]


# Fine-tuning's starting learning rate: small to adapt weights that were learned already,
# the usual 0.1 of CIFAR ResNets (He et al., 2016) for a network from random
# initialisation, which at 0.01 learned too little in 15 epochs to give usable features.
ADAPT_LR, SCRATCH_LR = 0.01, 0.1


def finetune_lr(pretrained: bool) -> float:
    return ADAPT_LR if pretrained else SCRATCH_LR


def finetune(bb: Backbone, ds: Dataset, thumbs: np.ndarray | None, opts: FeatureOptions,
             device: torch.device, progress: ProgressFn | None = None) -> None:
    """Train ``bb.net`` plus its head on the given (possibly noisy) labels, in place.

    This is step 1 of the paper: adapt a pretrained network to the dataset before taking
    features, or train one from random initialisation when no weights were given. SGD
    with momentum, cosine LR from :func:`finetune_lr`, flip+crop augmentation.
    """
    model = nn.Sequential(bb.net, bb.head).to(device).train()
    labels = torch.as_tensor(ds.samples.labels)
    steps_per_epoch = -(-len(labels) // opts.batch_size)
    total = opts.finetune_epochs * steps_per_epoch
    optim = torch.optim.SGD(model.parameters(), lr=finetune_lr(bb.pretrained), momentum=0.9,
                            weight_decay=5e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(optim, T_max=max(1, total))
    gen = torch.Generator().manual_seed(opts.seed)
    step = 0
    for epoch in range(opts.finetune_epochs):
        order = torch.randperm(len(labels), generator=gen).numpy()
        for start, batch in zip(range(0, len(order), opts.batch_size),
                                _network_batches(ds, thumbs, bb, opts, device, order),
                                strict=True):
            y = labels[order[start:start + opts.batch_size]].to(device)
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
                loss = F.cross_entropy(model(normalise(_augment(batch, gen), bb.mean, bb.std)),
                                       y)
            optim.zero_grad(set_to_none=True)
            loss.backward()
            optim.step()
            sched.step()
            step += 1
            report(progress, step, total, f"finetune: epoch {epoch + 1} loss {loss.item():.3f}")
    bb.net.eval()


def pixel_features(thumbs: np.ndarray) -> np.ndarray:
    """Flattened, per-dimension standardised pixels.

    Parameters
    ----------
    thumbs : ndarray of uint8, shape (N, S, S, 3)

    Returns
    -------
    ndarray of float32, shape (N, S·S) for grayscale images, else (N, S·S·3)
    """
    x = thumbs
    if np.array_equal(x[..., 0], x[..., 1]) and np.array_equal(x[..., 0], x[..., 2]):
        x = x[..., 0]
    x = x.reshape(len(x), -1).astype(np.float32)
    std = x.std(axis=0)
    return ((x - x.mean(axis=0)) / np.where(std > 0, std, 1.0)).astype(np.float32)


def network_features(ds: Dataset, thumbs: np.ndarray | None, opts: FeatureOptions,
                     native_size: int, progress: ProgressFn | None = None,
                     rows: tuple[int, int] | None = None, dest: Path | None = None
                     ) -> np.ndarray:
    """Penultimate-layer features of every sample (or of samples ``rows[0]`` to
    ``rows[1] - 1``: one shard of a shared-out extraction), in sample order.

    A shard that starts on a multiple of ``opts.batch_size`` sees the same batches as the
    whole run, so its rows are bit-identical to the whole run's (tests/integration/
    jobs/test_jobs.py, the shared-out extraction test).

    With ``dest`` the rows are written to that .npy batch by batch and come back memory
    mapped: 1.28M features of EfficientNet-Lite0 are 6.5 GB (storage/rundir.NpyRows).

    Returns
    -------
    ndarray of float32, shape (N, D), or (rows[1] - rows[0], D)
    """
    if rows is not None and opts.finetune_epochs:
        raise InputError("a fine-tuned extraction runs in one job: it cannot be shared out")
    bb, net, device = _extraction_network(ds, thumbs, opts, native_size, progress)
    order = None if rows is None else np.arange(*rows)
    shape = (len(ds.samples) if order is None else len(order), bb.feature_dim)
    bf16 = feature_precision(opts) == "bf16"
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = True  # one input shape for the whole run
    with torch.inference_mode(), torch.autocast(device.type, dtype=torch.bfloat16,
                                                enabled=bf16), \
            (NpyRows(dest, shape, np.float32) if dest else
             contextlib.nullcontext(np.empty(shape, dtype=np.float32))) as sink:
        writer = _RowWriter(sink, shape[0], progress, f"extract: {opts.model}")
        _forward_every_batch(net, bb, device,
                             _network_batches(ds, thumbs, bb, opts, device, order), writer)
    return sink if dest is None else np.load(dest, mmap_mode="r")


def _extraction_network(ds: Dataset, thumbs: np.ndarray | None, opts: FeatureOptions,
                        native_size: int, progress: ProgressFn | None
                        ) -> tuple[Backbone, nn.Module, torch.device]:
    """The backbone ``opts`` names (fine-tuned on ``ds`` first when ``opts`` asks), its
    network ready for inference, and the device it runs on."""
    device = pick_device(opts.device)
    torch.manual_seed(opts.seed)
    bb = build_backbone(opts.model, opts.weights, len(ds.samples.classes), native_size,
                        opts.input_size)
    if opts.finetune_epochs > 0:
        finetune(bb, ds, thumbs, opts, device, progress)
    return bb, _inference_net(bb.net, device), device


class _RowWriter:
    """Where the features go, batch after batch in sample order: an array in memory or a
    .npy file (storage/rundir.NpyRows); each batch reports progress."""

    def __init__(self, sink: np.ndarray | NpyRows, total: int, progress: ProgressFn | None,
                 message: str) -> None:
        self.sink, self.total, self.progress, self.message = sink, total, progress, message
        self.done = 0

    def write(self, feats: torch.Tensor, ready: torch.cuda.Event | None) -> None:
        """Store ``feats`` (B, D) float32 on the host, once ``ready`` (its copy back from
        the device) has completed."""
        if ready is not None:
            ready.synchronize()
        rows = feats.numpy()
        if isinstance(self.sink, np.ndarray):
            self.sink[self.done:self.done + len(rows)] = rows
        else:
            self.sink.write(rows)
        self.done += len(rows)
        report(self.progress, self.done, self.total, self.message)


def _forward_every_batch(net: nn.Module, bb: Backbone, device: torch.device,
                         batches: Iterator[torch.Tensor], writer: _RowWriter) -> None:
    """``net``'s features of each of ``batches`` (float (B, 3, S, S) in 0..255 on
    ``device``), normalised as ``bb`` says, handed to ``writer`` in order."""
    pending = None
    for batch in batches:
        feats = net(normalise(batch, bb.mean, bb.std)).float()
        if device.type != "cuda":
            writer.write(feats, None)
            continue
        # The copy back is queued behind the batch, and waited for only after the next
        # batch is queued: the GPU is never idle while the host writes rows.
        host = torch.empty(feats.shape, dtype=torch.float32, pin_memory=True)
        host.copy_(feats, non_blocking=True)
        ready = torch.cuda.Event()
        ready.record()
        if pending is not None:
            writer.write(*pending)
        pending = host, ready
    if pending is not None:
        writer.write(*pending)


def feature_precision(opts: FeatureOptions) -> str | None:
    """The precision the features are computed in; None for ``pixels``. ``auto`` on a CPU
    with native bf16 times both on one batch of this network, once per machine."""
    if opts.model == "pixels":
        return None
    device = pick_device(opts.device)
    built: list = []  # the network and a batch, made on the first timing only

    def timer(precision: str) -> float:
        if not built:
            bb = build_backbone(opts.model, opts.weights, 10, opts.input_size or 32,
                                opts.input_size)
            built.extend([_inference_net(bb.net, device), torch.zeros(
                32, 3, bb.input_size, bb.input_size).contiguous(
                memory_format=torch.channels_last)])
        net, x = built
        with torch.inference_mode(), torch.autocast(device.type, dtype=torch.bfloat16,
                                                    enabled=precision == "bf16"):
            t = time.perf_counter()
            net(x)
            return time.perf_counter() - t

    return resolve_precision(opts.precision, device, timer,
                             key=f"{opts.model}@{opts.input_size or 'default'}")


def cache_key(run: RunDir, opts: FeatureOptions, precision: str | None = None) -> str:
    """Hash of the images, model, weights content, fine-tune settings and precision.

    Without fine-tuning the labels play no part: the key covers the dataset's spec, split,
    injected images' options (when any) and image paths only, so runs of the same images
    with other label sets (a labels CSV, injected noise) share a key, and a cached file can
    serve them all. Fine-tuning learns from the labels, so then the whole sample table and
    dataset options count.
    """
    meta = run.read_meta()
    if opts.finetune_epochs:
        dataset, samples = meta["dataset"], run.samples_csv.read_bytes()
    else:
        d = meta["dataset"]
        dataset = {k: d.get(k) for k in ("spec", "split")}
        # Injected images (sources/inject.py) have the same paths whatever their pixels:
        # their options are part of the key.
        if d.get("inject_duplicates") or d.get("inject_outliers") or d.get("inject_leaks"):
            dataset |= {k: d.get(k) for k in ("inject_duplicates", "inject_outliers",
                                              "duplicate_strength", "outlier_sources")}
            # Leaks and the seed pick other images under the same paths; named only when
            # they do, so keys made before them still match where nothing differs.
            for k, same in (("inject_leaks", 0), ("seed", 0)):
                if d.get(k, same) != same:
                    dataset[k] = d[k]
            # Families change which samples are copied; named only when not 1, so keys
            # made before the option existed still match. --duplicate-across changes
            # labels alone (the pixels are those made without it), as injected noise does.
            if d.get("duplicate_family", 1) != 1:
                dataset["duplicate_family"] = d["duplicate_family"]
        samples = "\n".join(run.read_samples().paths).encode()
    key = {
        "dataset": dataset, "samples": hashlib.sha256(samples).hexdigest(), "model": opts.model,
        "weights": file_sha256(opts.weights) if opts.weights else None,
        "finetune_epochs": opts.finetune_epochs,
        "seed": opts.seed if opts.finetune_epochs else None,
        "finetune_lr": finetune_lr(bool(is_pretrained(opts.model, opts.weights)))
        if opts.finetune_epochs else None,
        # The precision the features were computed in (``precision``: as the workers
        # that computed a shared-out extraction resolved it), never "auto".
        "precision": precision or feature_precision(opts),
        "input_size": opts.input_size,
    }
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


def network_input(run: RunDir, mmap: bool = False) -> tuple[np.ndarray | None, int]:
    """What :func:`network_features` reads for ``run``: ingest's thumbnails when they hold
    every image at full size (else None: the files are decoded), and the images' size."""
    thumbs = run.load_array(run.thumbnails, "extract", mmap=mmap)
    meta = run.read_meta()
    exact = meta.get("thumbnails_exact", False)
    return (thumbs if exact else None), meta.get("native_size", thumbs.shape[1])


FeatureCompute = Callable[[RunDir, Dataset, FeatureOptions, "ProgressFn | None"],
                          tuple[np.ndarray, str]]
"""How a run's network features are computed: ``(run, ds, opts, progress) -> (features
(N, D) float32, the precision they were computed in)``: worker.jobs.extract_shards shares the
rows out to Celery workers. Without one, :func:`extract` computes them in this process."""


def extract(run: RunDir, ds: Dataset, opts: FeatureOptions,
            progress: ProgressFn | None = None,
            compute: FeatureCompute | None = None) -> np.ndarray:
    """Compute (or reuse from ``cache/``) features and write ``features.npy``.

    ``compute`` computes a network's features (default: in this process, streamed to the
    cache file); the cache, the run's files and its record are the same whoever computed
    them.

    Returns
    -------
    ndarray of float32, shape (N, D)
    """
    opts = opts.for_dataset(ds.spec.kind)
    check_model_name(opts.model)
    if opts.model == "pixels" and (opts.weights or opts.finetune_epochs):
        raise InputError("'pixels' takes no --weights or --finetune; pick a network model")
    if ds.spec.kind == "features":
        return _copy_features(run, ds, opts, progress)
    precision = feature_precision(opts)
    key = cache_key(run, opts, precision)  # hashes the samples and the weights file: once
    cached = run.cache / f"features-{key}.npy"
    if cached.is_file():
        feats = run.load_array(cached, "extract")
        report(progress, len(feats), len(feats), "extract: reused cached features")
    else:
        if opts.model == "pixels":
            feats = pixel_features(np.asarray(run.load_array(run.thumbnails, "extract")))
            save_npy(cached, feats)
        elif compute is None:  # here, streamed to the cache file (memory stays bounded)
            thumbs, native = network_input(run)
            with atomic_path(cached, ".npy") as tmp:
                network_features(ds, thumbs, opts, native, progress, dest=tmp)
            feats = run.load_array(cached, "extract", mmap=True)
        else:
            feats, computed = compute(run, ds, opts, progress)
            if computed != precision:  # workers resolved "auto" on their own devices
                precision, key = computed, cache_key(run, opts, computed)
                cached = run.cache / f"features-{key}.npy"
            save_npy(cached, feats)
    with atomic_path(run.features, ".npy") as tmp:  # a file copy: no second array in memory
        shutil.copyfile(cached, tmp)
    run.mark_step("extract", model=opts.model, precision=precision,
                  weights=str(opts.weights.resolve()) if opts.weights else None,
                  pretrained=is_pretrained(opts.model, opts.weights),
                  input_size=opts.input_size, finetune_epochs=opts.finetune_epochs,
                  finetune_lr=finetune_lr(is_pretrained(opts.model, opts.weights))
                  if opts.finetune_epochs else None,
                  cache_key=key, feature_dim=int(feats.shape[1]))
    return feats


# Rows per block when copying a features file: 65,536 × 512 float32 is 128 MB.
COPY_BLOCK = 65_536


def _copy_features(run: RunDir, ds: Dataset, opts: FeatureOptions,
                   progress: ProgressFn | None = None) -> np.ndarray:
    """A ``features:`` dataset's file, checked and copied into the run as ``features.npy``
    in its own dtype (float16 stays float16), block by block: memory stays bounded
    whatever N is. Skipped when the copy is current (same file, size and mtime).

    Returns
    -------
    ndarray, shape (N, D), memory-mapped from the run's copy
    """
    if opts.model != "pixels" or opts.weights or opts.finetune_epochs:
        raise InputError("a features: dataset brings its own features: leave out --model, "
                         "--weights and --finetune")
    src = ds.spec.file
    key = features_file_key(src)
    if has_features_copy(run, src):
        return run.load_array(run.features, "extract", mmap=True)
    feats = np.load(src, mmap_mode="r")
    n = len(feats)
    if n != len(ds.samples):
        raise InputError(f"{src.name} has {n} rows and the run {len(ds.samples)} samples: "
                         "the file changed since the run was made; make a new run")
    # Checked as every door checks it (sources/feature_values.py) while it is copied: the
    # file may have changed since, and a job from the New-run form reads it here first.
    values = FeatureValues(f"features file {src.name}")
    with atomic_path(run.features, ".npy") as tmp:
        out = np.lib.format.open_memmap(tmp, mode="w+", dtype=feats.dtype, shape=feats.shape)
        for start in range(0, n, COPY_BLOCK):
            block = np.asarray(feats[start:start + COPY_BLOCK])
            values.add(block, start)
            out[start:start + len(block)] = block
            report(progress, min(n, start + COPY_BLOCK), n, "extract: copying features")
        values.finish()
        out.flush()
        del out
    run.mark_step("extract", model="features", precision=str(feats.dtype), weights=None,
                  finetune_epochs=0, cache_key=key, feature_dim=int(feats.shape[1]))
    return np.load(run.features, mmap_mode="r")
