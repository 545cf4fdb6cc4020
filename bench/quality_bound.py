"""How far a defect at a given strength can be told from clean images at all.

A small CNN is trained, with the defect and its strength known, to tell CIFAR-10 train
images from copies of them with the defect injected as ``bench.quality`` injects it. It
trains on the train images outside the mini set (every class's images from the 201st
on) and is scored on the 2,000 mini images ``bench.quality`` uses, each seen clean and
with the defect. A detector that knows neither the defect's strength nor anything but
the run's own images can do no better than this supervised one, up to what more
training data or a larger network would add, so its figure is an upper bound, on these
images, for any of the image-quality kinds.

Printed per defect and strength: the ROC's area, the share of defective images found
with 1% and with 0.2% of clean images marked, and the best F1 over every cut on the
bench's own mix (30 defective images among 2,000), the figure ``bench.quality`` reports.

    nice -n 10 .venv/bin/python -m bench.quality_bound [--defects blurry grey overexposed]
        [--strengths weak] [--train 16000] [--epochs 4]
"""

from __future__ import annotations

import argparse
import io
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from torch import nn

from bench.quality import DEFECTS, SHARED, STRENGTHS, inject_defect

MINI_PER_CLASS = 200  # the mini set holds the first 200 train images of each class
MIX_DEFECTIVE, MIX_TOTAL = 30, 2000  # bench.quality's mix


def cifar_train(work: Path) -> tuple[list[Image.Image], np.ndarray]:
    """Every CIFAR-10 train image and whether it is in the mini set, shape (50000,)."""
    with tarfile.open(SHARED / "cifar10-jpeg.tar.gz") as tar:
        tar.extractall(work, filter="data")
    train = work / "cifar10" / "train"
    images, mini = [], []
    for c in sorted(p.name for p in train.iterdir()):
        files = sorted((train / c).glob("*.jpg"), key=lambda f: int(f.stem))
        for k, f in enumerate(files):
            images.append(Image.open(f).convert("RGB"))
            mini.append(k < MINI_PER_CLASS)
    return images, np.array(mini)


def stack(images: list[Image.Image], jpeg: int = 0) -> torch.Tensor:
    """Images as a float tensor in [0, 1], shape (n, 3, 32, 32); with ``jpeg``, each saved
    as a JPEG of that quality and read back first."""
    if jpeg:
        images = [reencoded(im, jpeg) for im in images]
    x = np.stack([np.asarray(im, np.float32) for im in images]) / 255.0
    return torch.from_numpy(x).permute(0, 3, 1, 2).contiguous()


def reencoded(img: Image.Image, quality: int) -> Image.Image:
    """``img`` saved as a JPEG of ``quality`` and decoded again."""
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=quality)
    return Image.open(io.BytesIO(buf.getvalue())).convert("RGB")


def network() -> nn.Module:
    """A small CNN for 32 × 32 inputs; one logit, the defect's."""
    def block(i: int, o: int) -> list[nn.Module]:
        return [nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU()]

    return nn.Sequential(*block(3, 32), *block(32, 32), nn.MaxPool2d(2),
                         *block(32, 64), *block(64, 64), nn.MaxPool2d(2),
                         *block(64, 128), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(128, 1))


def train(clean: torch.Tensor, bad: torch.Tensor, epochs: int, seed: int) -> nn.Module:
    """The CNN trained on ``clean`` (label 0) and ``bad`` (label 1), each (n, 3, 32, 32)."""
    torch.manual_seed(seed)
    net = network()
    opt = torch.optim.Adam(net.parameters(), 1e-3)
    x = torch.cat([clean, bad])
    y = torch.cat([torch.zeros(len(clean)), torch.ones(len(bad))])
    steps = epochs * (len(x) // 256)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, 3e-3, total_steps=steps)
    net.train()
    for _ in range(epochs):
        order = torch.randperm(len(x))
        for b in range(len(x) // 256):
            i = order[b * 256:(b + 1) * 256]
            loss = nn.functional.binary_cross_entropy_with_logits(net(x[i]).squeeze(1), y[i])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
    return net.eval()


@torch.no_grad()
def score(net: nn.Module, x: torch.Tensor) -> np.ndarray:
    """The network's logit per image, shape (n,)."""
    return torch.cat([net(x[i:i + 512]).squeeze(1) for i in range(0, len(x), 512)]).numpy()


def figures(clean: np.ndarray, bad: np.ndarray) -> dict[str, float]:
    """AUC, recall at 1% and 0.2% of clean marked, and the best F1 on the bench's mix."""
    cuts = np.unique(np.concatenate([clean, bad]))
    fpr = (clean[None, :] >= cuts[:, None]).mean(1)
    tpr = (bad[None, :] >= cuts[:, None]).mean(1)
    pos, neg = MIX_DEFECTIVE, MIX_TOTAL - MIX_DEFECTIVE
    f1 = 2 * pos * tpr / (2 * pos * tpr + neg * fpr + pos * (1 - tpr))
    above = bad[:, None] - clean[None, :]
    auc = float((above > 0).mean() + 0.5 * (above == 0).mean())
    return {"auc": auc, "recall@1%": float(tpr[fpr <= 0.01].max(initial=0.0)),
            "recall@0.2%": float(tpr[fpr <= 0.002].max(initial=0.0)), "best_f1": float(f1.max())}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--defects", nargs="+", default=["blurry", "grey", "overexposed"],
                    choices=sorted(DEFECTS))
    ap.add_argument("--strengths", nargs="+", default=["weak"], choices=STRENGTHS)
    ap.add_argument("--train", type=int, default=16000, help="train images outside the mini set")
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jpeg", type=int, default=0,
                    help="save every image, clean or not, as a JPEG of this quality first: "
                         "the defect then cannot show as JPEG's own artefacts gone")
    args = ap.parse_args(argv)
    torch.set_num_threads(2)
    with tempfile.TemporaryDirectory() as tmp:
        images, mini = cifar_train(Path(tmp))
    rng = np.random.default_rng(args.seed)
    pool = rng.choice(np.flatnonzero(~mini), args.train, replace=False)
    held = np.flatnonzero(mini)
    half = rng.permutation(pool)
    print("| defect | strength | AUC | recall, 1% clean marked | recall, 0.2% | best F1, "
          f"{MIX_DEFECTIVE} in {MIX_TOTAL} | s |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for d in args.defects:
        for s in args.strengths:
            t = time.perf_counter()
            # Clean and defective train images are different images, as in the bench.
            a, b = half[: len(half) // 2], half[len(half) // 2:]
            q = args.jpeg
            net = train(stack([images[i] for i in a], q),
                        stack([inject_defect(images[i], d, s) for i in b], q), args.epochs,
                        args.seed)
            f = figures(score(net, stack([images[i] for i in held], q)),
                        score(net, stack([inject_defect(images[i], d, s) for i in held], q)))
            print(f"| {d} | {s} | {f['auc']:.4f} | {f['recall@1%']:.3f} | {f['recall@0.2%']:.3f} "
                  f"| {f['best_f1']:.2f} | {time.perf_counter() - t:.0f} |", flush=True)


if __name__ == "__main__":
    main()
