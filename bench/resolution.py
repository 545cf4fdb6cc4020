"""EfficientNet-Lite0's input side: linear-probe accuracy, detection F1 and images/s.

On a stratified CIFAR-10 subset (PER_CLASS train JPEGs per class) with the CIFAR-10N
``aggre_label`` (human noise), for each input side it runs the pipeline with default
settings and reports:

- probe: 5-fold cross-validated accuracy of a logistic regression on the features against
  the *clean* labels (how much of the classes the features see);
- F1 of our default rule and of the best peer (cleanlab, SimiFeat) on the same features;
- images/s of the extraction forward pass (ours: BatchNorm folded, channels_last,
  ``--precision auto``) on this machine.

It also compares the two input normalisations at the default side by the probe: [-1, 1]
(what TensorFlow's Lite models were trained with) and ImageNet mean/std.

    python -m bench.resolution [--sizes 96,128,160,224] [--per-class 500] [--json F]
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from bench.common import Row, cifar_folder, cifar_subset, machine
from bench.detection import score_row
from worker.pipeline.features import efficientnet
from worker.pipeline.features.backbones import (
    EFFICIENTNET_SIZE,
    IMAGENET_MEAN,
    IMAGENET_STD,
    build_backbone,
)
from worker.pipeline.features.extraction import (
    FeatureOptions,
    _inference_net,
    _normalise,
    feature_precision,
)
from worker.pipeline.sources.datasets import parse_spec
from worker.pipeline.sources.ingest import DatasetOptions
from worker.pipeline.storage.rundir import RunDir

MODEL = "efficientnet-lite0"


def probe(feats: np.ndarray, labels: np.ndarray) -> float:
    """5-fold CV accuracy of a standardised logistic regression."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    clf = make_pipeline(StandardScaler(), LogisticRegression(C=0.1, max_iter=300))
    return float(cross_val_score(clf, feats, labels, cv=5).mean())


def throughput(thumbs: np.ndarray, size: int, n: int = 1024) -> float:
    """Images/s of the extraction forward pass at ``size`` on ``n`` thumbnails."""
    opts = FeatureOptions(model=MODEL, input_size=size)
    bb = build_backbone(MODEL, None, 10, 32, size)
    device = torch.device("cpu")
    net = _inference_net(bb.net, device)
    bf16 = feature_precision(opts) == "bf16"
    x = torch.from_numpy(np.ascontiguousarray(thumbs[:n])).permute(0, 3, 1, 2)
    x = torch.nn.functional.interpolate(x.float(), size=(size, size), mode="bilinear")
    x = x.round().clamp(0, 255).to(torch.uint8)
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        net(_normalise(x[:64], bb, device))
        t = time.perf_counter()
        for s in range(0, n, 256):
            net(_normalise(x[s:s + 256], bb, device))
        return n / (time.perf_counter() - t)


def norm_probe(run: RunDir, clean: np.ndarray, size: int) -> dict[str, float]:
    """Probe accuracy with [-1, 1] inputs and with ImageNet mean/std at ``size``."""
    thumbs = np.asarray(run.load_array(run.thumbnails, "bench"))
    out = {}
    for name, (mean, std) in {"[-1, 1]": (efficientnet.MEAN, efficientnet.STD),
                              "ImageNet mean/std": (IMAGENET_MEAN, IMAGENET_STD)}.items():
        bb = replace(build_backbone(MODEL, None, 10, 32, size), mean=mean, std=std)
        net = _inference_net(bb.net, torch.device("cpu"))
        feats = []
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
            for s in range(0, len(thumbs), 256):
                x = torch.from_numpy(np.ascontiguousarray(thumbs[s:s + 256])).permute(0, 3, 1, 2)
                x = torch.nn.functional.interpolate(x.float(), size=(size, size),
                                                    mode="bilinear").round().to(torch.uint8)
                feats.append(net(_normalise(x, bb, torch.device("cpu"))).float().numpy())
        out[name] = probe(np.concatenate(feats), clean)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="96,128,160,224")
    ap.add_argument("--per-class", type=int, default=500)
    ap.add_argument("--runs", type=Path, default=Path("runs"))
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    folder, labels = cifar_subset(cifar_folder(), a.per_class)
    dataset = DatasetOptions(parse_spec(f"folder:{folder}"), labels_csv=labels,
                             label_column="aggre_label", true_label_column="clean_label")
    print(f"# {MODEL} input side · {a.per_class * 10} CIFAR-10 train JPEGs, CIFAR-10N aggre "
          f"· {machine()}", flush=True)
    print("| side (px) | probe acc | F1 ours | F1 best peer | ratio | images/s |")
    print("|---:|---:|---:|---:|---:|---:|", flush=True)
    results = []
    run = None
    for size in (int(s) for s in a.sizes.split(",")):
        row = Row(f"res{size}-{a.per_class}pc", dataset,
                  FeatureOptions(model=MODEL, input_size=size), f"{MODEL} at {size} px")
        r = score_row(row, a.runs)
        run = RunDir(a.runs / f"bench-{row.name}")
        samples = run.read_samples()
        acc = probe(np.asarray(run.load_features()), samples.true_labels)
        thumbs = np.asarray(run.load_array(run.thumbnails, "bench"))
        ips = throughput(thumbs, size)
        best = max(v["f1"] for k, v in r["methods"].items() if not k.startswith("ours"))
        ours = r["methods"]["ours: adaptive"]["f1"]
        results.append({"size": size, "probe": acc, "f1": ours, "best_peer_f1": best,
                        "ratio": r["ratio"], "images_per_s": ips})
        print(f"| {size} | {acc:.3f} | {ours:.3f} | {best:.3f} | {r['ratio']:.3f} | "
              f"{ips:.0f} |", flush=True)
    assert run is not None
    norms = norm_probe(run, run.read_samples().true_labels, EFFICIENTNET_SIZE)
    print(f"\nprobe at {EFFICIENTNET_SIZE} px by input normalisation: " +
          ", ".join(f"{k} {v:.3f}" for k, v in norms.items()), flush=True)
    if a.json:
        a.json.write_text(json.dumps({"sizes": results, "normalisation": norms}, indent=1))


if __name__ == "__main__":
    main()
