"""Our embedding step (PCA-50 + openTSNE) against scikit-learn's TSNE on the same input.

Input: CIFAR-10 train images from the shared JPEG folder as standardised pixels, the first
N of them (5k and 20k by default). Both sides get the same PCA-50 input; ours is timed
including its PCA. Prints one line per size and a final ``speedup_20k=`` line.

    python -m bench.tsne [--sizes 5000,20000]
"""

from __future__ import annotations

import argparse

import numpy as np
from PIL import Image

from bench.common import cifar_folder, machine, timed
from worker.pipeline.features.extraction import pixel_features
from worker.pipeline.map.embedding import EmbeddingOptions, pca_reduce, tsne_2d


def cifar_pixels(n: int) -> np.ndarray:
    files = sorted((cifar_folder() / "train").rglob("*.jpg"))
    rng = np.random.default_rng(0)
    pick = rng.choice(len(files), size=n, replace=False)
    return pixel_features(np.stack([np.asarray(Image.open(files[i]).convert("RGB"))
                                    for i in pick]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="5000,20000")
    args = ap.parse_args()
    from sklearn.manifold import TSNE

    print(f"# t-SNE: ours (PCA-50 + openTSNE) vs scikit-learn TSNE · {machine()}")
    ratio = 0.0
    for n in [int(s) for s in args.sizes.split(",")]:
        x = cifar_pixels(n)
        ours, _ = timed(lambda x=x: tsne_2d(x, EmbeddingOptions()))
        x50 = pca_reduce(x, 50)
        base, _ = timed(lambda x50=x50: TSNE(random_state=0, init="pca").fit_transform(x50))
        ratio = base / ours
        print(f"n={n:>6}  ours {ours:7.1f} s   sklearn {base:7.1f} s   speedup {ratio:5.1f}x",
              flush=True)
    print(f"speedup_{n // 1000}k={ratio:.1f}")


if __name__ == "__main__":
    main()
