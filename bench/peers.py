"""The detectors we compare with, on the same features as ours.

- cleanlab ``find_label_issues`` with 5-fold cross-validated ``pred_probs`` from logistic
  regression and from a 10-NN classifier, each on PCA-50 and on the raw features;
- a SimiFeat-style vote: Z. Zhu, Z. Dong and Y. Liu, "Detecting Corrupted Labels Without
  Training a Model to Predict", ICML 2022. Cosine 10-NN *including the sample itself*,
  whose zero distance is replaced by 2·d1 − d2 (d1, d2: its two nearest others), votes
  weighted by 1 − distance, 21 rounds on random 90% subsets, a sample flagged when the
  majority of the rounds that drew it flag it (its own label is not the top vote).

Each returns (flags, score): bool (N,) and a float (N,) mislabel score for the AUROC.
"""

from __future__ import annotations

import numpy as np

from worker.pipeline.evaluation.run_report import cleanlab_probs


def cleanlab_peer(features: np.ndarray, labels: np.ndarray, classifier: str, pca: bool,
                  seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """cleanlab's flags and 1 − its out-of-fold probability of the given label."""
    from cleanlab.filter import find_label_issues

    probs = cleanlab_probs(features, labels, classifier, pca, seed)
    flags = np.asarray(find_label_issues(labels, probs), dtype=bool)
    return flags, 1.0 - probs[np.arange(len(labels)), labels]


def simifeat_vote(features: np.ndarray, labels: np.ndarray, n_classes: int, k: int = 10,
                  rounds: int = 21, frac: float = 0.9, seed: int = 0
                  ) -> tuple[np.ndarray, np.ndarray]:
    """SimiFeat-style majority vote (module docstring); score = share of rounds flagged."""
    import torch

    rng = np.random.default_rng(seed)
    x = np.asarray(features, np.float32)
    x = x / np.linalg.norm(x, axis=1, keepdims=True).clip(1e-12)
    n = len(labels)
    flagged, drawn = np.zeros(n), np.zeros(n)
    for _ in range(rounds):
        sub = np.sort(rng.choice(n, int(frac * n), replace=False))
        xs, ys, m = torch.from_numpy(x[sub]), labels[sub], len(sub)
        idx = np.empty((m, k + 1), np.int64)
        dist = np.empty((m, k + 1), np.float32)
        block = max(64, 20_000_000 // m)
        for s in range(0, m, block):
            sim, nn = torch.topk(xs[s:s + block] @ xs.T, k + 1, dim=1)
            idx[s:s + block], dist[s:s + block] = nn.numpy(), (1 - sim).numpy()
        # Column 0 is the sample itself (distance 0, barring duplicates).
        dist[:, 0] = 2 * dist[:, 1] - dist[:, 2]
        votes = np.zeros((m, n_classes))
        np.add.at(votes, (np.repeat(np.arange(m), k + 1), ys[idx].ravel()), (1 - dist).ravel())
        flagged[sub] += votes.argmax(1) != ys
        drawn[sub] += 1
    share = flagged / np.maximum(drawn, 1)
    return share > 0.5, share
