"""The run's sample table: one row per sample, the record every stage reads and
``RunDir.write_samples`` stores (``samples.csv``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class SampleTable:
    """One row per sample, in sample order (the row order of ``features.npy``).

    Attributes
    ----------
    paths : list of str, length N
        Path relative to the dataset root (virtual for array datasets).
    labels : ndarray of int64, shape (N,)
        Given label, an index into ``classes``.
    true_labels : ndarray of int64, shape (N,)
        Known true label, or -1 where unknown.
    classes : list of str
        Class names; ``classes[k]`` is the name of label code k.
    """

    paths: list[str]
    labels: np.ndarray
    true_labels: np.ndarray
    classes: list[str]

    def __len__(self) -> int:
        return len(self.paths)

    @property
    def has_truth(self) -> bool:
        return bool((self.true_labels >= 0).any())

    def subset(self, keep: np.ndarray) -> SampleTable:
        """Rows where the boolean mask ``keep`` (shape (N,)) is True, order kept."""
        idx = np.flatnonzero(keep)
        return SampleTable([self.paths[i] for i in idx], self.labels[idx],
                           self.true_labels[idx], self.classes)
