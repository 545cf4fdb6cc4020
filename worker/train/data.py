"""Training data of a run: the subset to train on and a test set that never trains.

Subsets (indices into the run's samples):

- ``full``: every training sample;
- ``filtered``: the samples the curation keeps (DBSCAN + rule + relabels + overrides),
  with the reviewers' corrected labels, snapshotted when the job starts, so later edits do
  not change a running job (``full`` and ``random`` keep the labels as given); with a
  version (``curator experiment --version``), the version's frozen kept set and labels
  instead of the live ones, for this and every curated subset below;
- ``random``: a seeded random subset of ``full`` with the size and the class proportions of
  ``filtered`` (the paper's control);
- ``corrected``: ``filtered``, plus the samples the rule flagged whose label the evidence
  confidently disputes (confident learning's label issues, ``label_issue.npy``) with a
  suggested class other than the given one: those train with the suggested label instead
  of being dropped. The other flagged samples, and any a reviewer dropped, stay out;
- ``pruned@F``: ``filtered``'s fraction F of each class, ranked by value
  (worker/pipeline/pruning.py), with the reviewers' labels; ``random@F``: a seeded random
  subset of ``full`` with ``pruned@F``'s class counts, its control
  (worker/train/subsets.py says how the names are written).

Test set: the dataset's test split when it has one (CIFAR batches, a folder with
``train/`` and ``test/``); otherwise a fixed, stratified 20% hold-out of the run's samples
(seed 0), which is removed from every subset above.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from worker.pipeline.errors import InputError
from worker.pipeline.findings.files import load_table
from worker.pipeline.findings.testsplit import read_test_paths, test_spec
from worker.pipeline.pruning import DEFAULT_PRUNING, choose, prototype_distance, quota
from worker.pipeline.sources.datasets import open_dataset
from worker.pipeline.sources.ingest import open_run_dataset, thumbnail
from worker.pipeline.storage.rundir import RunDir
from worker.pipeline.storage.sample_table import SampleTable
from worker.train.subsets import parse_subset

HOLDOUT_FRACTION = 0.2


@dataclass
class TrainData:
    """uint8 images (N, 3, S, S) and int64 labels, for training and testing."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    classes: list[str]
    train_index: np.ndarray  # sample indices of x_train in the run
    test_source: str  # "test split" or "hold-out"
    # bool (M,): test images a train image nearly copies (the run's leak findings); the
    # trainer also reports accuracy without them
    test_leaked: np.ndarray | None = None


def holdout_mask(labels: np.ndarray, fraction: float = HOLDOUT_FRACTION,
                 seed: int = 0) -> np.ndarray:
    """Boolean (N,) mask of a stratified hold-out: ``fraction`` of every class, seeded."""
    rng = np.random.default_rng(seed)
    mask = np.zeros(len(labels), dtype=bool)
    for c in np.unique(labels):
        idx = np.flatnonzero(labels == c)
        take = int(round(fraction * len(idx)))
        if len(idx) > 1:
            take = min(max(take, 1), len(idx) - 1)
            mask[rng.choice(idx, size=take, replace=False)] = True
    return mask


def random_like(pool: np.ndarray, labels: np.ndarray, reference: np.ndarray,
                seed: int) -> np.ndarray:
    """A seeded random subset of ``pool`` with ``reference``'s per-class counts."""
    rng = np.random.default_rng(seed)
    out = []
    for c in np.unique(labels[pool]):
        members = pool[labels[pool] == c]
        want = int((labels[reference] == c).sum())
        out.append(rng.choice(members, size=min(want, len(members)), replace=False))
    return np.sort(np.concatenate(out)) if out else np.empty(0, dtype=np.int64)


def _test_spec(run: RunDir):  # noqa: ANN202 - DatasetSpec | None
    """The dataset's own test split, or None when it has none (digits, a folder without
    a test/ folder, or a run made from the test split itself)."""
    return test_spec(run)


def leaked_mask(run: RunDir, paths: list[str]) -> np.ndarray:
    """bool (M,): which of the test images ``paths`` a train image nearly copies (the
    run's ``leak`` findings, whatever was decided about the train copies: the test set
    without them is the same for every subset)."""

    table = load_table(run, "leak", int(run.read_meta().get("n_samples", 0)))
    if table is None or not table.issue.any():
        return np.zeros(len(paths), bool)
    test_paths = read_test_paths(run)
    leaked = {test_paths[j] for j in table.related[table.issue].tolist()
              if 0 <= j < len(test_paths)}
    return np.array([p in leaked for p in paths], bool)


def _has_test_split(run: RunDir) -> bool:
    return _test_spec(run) is not None


def _test_dataset(run: RunDir):  # noqa: ANN202 - (Dataset, ndarray)
    """The test split and its labels as the run's class codes."""
    test = open_dataset(_test_spec(run))
    codes = {n: k for k, n in enumerate(run.read_meta()["classes"])}
    unknown = sorted(set(test.samples.classes) - set(codes))
    if unknown:
        raise InputError(f"the test split has classes the training split lacks: {unknown}")
    names = test.samples.classes
    return test, np.array([codes[names[c]] for c in test.samples.labels], dtype=np.int64)


def _test_split_images(run: RunDir) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The dataset's own test split as uint8 (N, 3, S, S) images at thumbnail size, their
    labels and their paths."""
    test, codes = _test_dataset(run)
    size = int(run.load_array(run.thumbnails, "ingest", mmap=True).shape[1])
    images, labels, paths = [], [], []
    for i in range(len(test.samples)):
        try:
            images.append(thumbnail(test.load_image(i), size))
        except Exception:  # noqa: BLE001, S112 - unreadable test images are left out
            continue
        labels.append(codes[i])
        paths.append(test.samples.paths[i])
    return (np.stack(images).transpose(0, 3, 1, 2).copy(), np.asarray(labels, dtype=np.int64),
            paths)


@dataclass(frozen=True)
class Subset:
    """The samples a training uses, and what identifies them.

    Attributes
    ----------
    indices : int64 (n,), sample indices, ascending
    labels : int64 (n,), the class codes trained with (reviewers' relabels applied)
    key : str, sha256 (16 hex) of the indices and their labels: equal keys mean the same
        images with the same labels
    revision : int, the curation store revision the subset was read at
    version : str or None, the version whose frozen curation it was drawn from
    """

    indices: np.ndarray
    labels: np.ndarray
    key: str
    revision: int
    version: str | None = None


def subset_key(indices: np.ndarray, labels: np.ndarray) -> str:
    import hashlib

    h = hashlib.sha256(np.ascontiguousarray(indices, dtype=np.int64).tobytes())
    h.update(np.ascontiguousarray(labels, dtype=np.int64).tobytes())
    return h.hexdigest()[:16]


def correctable(labels: np.ndarray, dropped_by_rule: np.ndarray,
                evidence: dict[str, np.ndarray] | None) -> np.ndarray:
    """bool (N,): the samples ``corrected`` takes back with their suggested label: dropped
    by the rule (not by a reviewer), a confident label issue, suggested class ≠ given.
    ``evidence`` is :func:`~worker.pipeline.curation.rule_evidence.load_evidence`'s; all
    False without."""
    if evidence is None:
        return np.zeros(len(labels), dtype=bool)
    return dropped_by_rule & evidence["issue"].astype(bool) & (evidence["suggested"] != labels)


def subset_indices(run: RunDir, labels: np.ndarray, kept: np.ndarray, subset: str,
                   seed: int, rescued: np.ndarray | None = None,
                   train_labels: np.ndarray | None = None) -> np.ndarray:
    """Sorted int64 indices of ``subset`` given the given labels and the kept mask (both
    shape (N,)), excluding any hold-out; ``rescued`` (bool (N,), :func:`correctable`)
    joins ``corrected``; ``train_labels`` (default ``labels``) are the classes the curated
    subsets train with, by which ``pruned@F`` scores and counts. An empty subset is an
    error."""
    name = parse_subset(subset)
    pool = training_pool(run, labels)
    filtered = pool[kept[pool]]
    if name.fraction is not None:
        y = labels if train_labels is None else train_labels
        chosen = pruned(run, y, filtered, name.fraction, name.method, seed)
        if name.kind == "random":
            chosen = random_like(pool, labels, chosen, seed)
    elif name.kind == "full":
        chosen = pool
    elif name.kind == "filtered":
        chosen = filtered
    elif name.kind == "corrected":
        extra = np.zeros(len(labels), dtype=bool) if rescued is None else rescued
        chosen = pool[kept[pool] | extra[pool]]
    else:
        chosen = random_like(pool, labels, filtered, seed)
    if len(chosen) == 0:
        raise InputError(f"the {subset} subset is empty: nothing would be trained on")
    return np.sort(np.asarray(chosen, dtype=np.int64))


def training_pool(run: RunDir, labels: np.ndarray) -> np.ndarray:
    """int64 sample indices every subset is drawn from: all, less any hold-out."""
    pool = np.arange(len(labels))
    return pool if _has_test_split(run) else pool[~holdout_mask(labels)]


def pruned_sizes(run: RunDir, labels: np.ndarray, kept: np.ndarray,
                 train_labels: np.ndarray, fractions: tuple[float, ...]) -> dict[float, int]:
    """How many images ``pruned@F`` (and ``random@F``) would train for each F: the
    :func:`~worker.pipeline.pruning.quota` of each class of what the curation keeps, by
    ``train_labels``; counted without scoring (which only decides which samples)."""
    pool = training_pool(run, labels)
    counts = np.bincount(train_labels[pool[kept[pool]]])
    return {f: sum(quota(int(c), f) for c in counts) for f in fractions}


def pruned(run: RunDir, labels: np.ndarray, filtered: np.ndarray, fraction: float,
           method: str | None, seed: int) -> np.ndarray:
    """``pruned@fraction``: the fraction of each class of ``filtered`` (sample indices),
    ranked by the prototype score on the run's features (worker/pipeline/pruning.py)."""
    keep = np.zeros(len(labels), dtype=bool)
    keep[filtered] = True
    # memory-mapped: prototype_distance reads it in blocks
    scores = prototype_distance(run.load_array(run.features, "extract", mmap=True), labels,
                                keep)
    return choose(scores, labels, filtered, fraction, method or DEFAULT_PRUNING, seed)


@dataclass(frozen=True)
class Curation:
    """What the curated subsets are drawn from: the samples, and per sample (shape (N,))
    whether the curation keeps it, the class code to train with and why (the decisions'
    ``reason``), from the live store or a version's frozen outcome.

    Attributes
    ----------
    revision : int, the store revision it was read at (a version's: the one it froze)
    version : str or None, the version it is (None: the live curation)
    """

    samples: SampleTable
    kept: np.ndarray
    labels: np.ndarray
    reason: np.ndarray
    revision: int
    version: str | None = None


def read_curation(run: RunDir, version: str | None = None) -> Curation:
    """The live curation, from one snapshot of the store, or version ``version``'s frozen
    one (worker/pipeline/curation/versions.py), which a later change of the curation or
    the map does not move.

    Raises
    ------
    InputError
        No such version (the line names those there are).
    """
    if version is not None:
        from worker.pipeline.curation.versions import read_version, version_samples

        frozen = read_version(run, version)
        samples, labels = version_samples(run, frozen)
        return Curation(samples, frozen.outcome.kept, labels, frozen.outcome.reason,
                        frozen.store_revision, frozen.name)
    from worker.pipeline.curation.snapshot import current_snapshot

    snap = current_snapshot(run)
    return Curation(snap.samples, snap.decisions.kept, snap.labels, snap.decisions.reason,
                    snap.stored.revision)


def select_subset(run: RunDir, subset: str, seed: int, version: str | None = None) -> Subset:
    """The samples of ``subset`` (see module docstring), excluding any hold-out, read from
    one snapshot of the curation store, or from version ``version``'s frozen kept set and
    labels (:func:`read_curation`)."""
    cur = read_curation(run, version)
    samples, labels = cur.samples, cur.labels
    name = parse_subset(subset)
    rescued = None
    if name.kind == "corrected":
        from worker.pipeline.curation.rule_evidence import load_evidence

        evidence = load_evidence(run)
        rescued = correctable(samples.labels, cur.reason == "noise", evidence)
        if evidence is not None:
            labels = np.where(rescued, evidence["suggested"], labels)
    chosen = subset_indices(run, samples.labels, cur.kept, subset, seed, rescued,
                            train_labels=labels)
    # Only the curated subsets train with the reviewers' relabels (and, for corrected, the
    # suggested labels): full and random are the controls, as the data came.
    y = (labels if name.curated else samples.labels)[chosen]
    return Subset(chosen, y, subset_key(chosen, y), cur.revision, cur.version)


def load_train_data(run: RunDir, indices: np.ndarray,
                    labels: np.ndarray | None = None) -> TrainData:
    """Images from ingest's thumbnails (exact for CIFAR-size data) plus the test set;
    ``labels`` (shape like ``indices``) are the ones to train with, default the given."""
    samples = run.read_samples()
    thumbs = run.load_array(run.thumbnails, "ingest", mmap=True)
    x = np.ascontiguousarray(np.asarray(thumbs[indices]).transpose(0, 3, 1, 2))
    y = samples.labels[indices] if labels is None else labels
    test = _test_split_images(run) if _has_test_split(run) else None
    if test is None:
        hold = np.flatnonzero(holdout_mask(samples.labels))
        x_test = np.ascontiguousarray(np.asarray(thumbs[hold]).transpose(0, 3, 1, 2))
        # Score against the true labels where they are known: that is what "better" means.
        truth = np.where(samples.true_labels[hold] >= 0, samples.true_labels[hold],
                         samples.labels[hold])
        test, source, leaked = (x_test, truth), "hold-out", np.zeros(len(hold), bool)
    else:
        source, leaked = "test split", leaked_mask(run, test[2])
    return TrainData(x, y, test[0], test[1], samples.classes, indices, source, leaked)


# --------------------------------------------------------------------------- streaming
# Datasets whose thumbnails are not the images themselves (larger or non-square images)
# are read from their files by DataLoader workers, one shard per rank.


def in_memory(run: RunDir) -> bool:
    """True when ingest's thumbnails are exact copies: train from a tensor on the device."""
    return bool(run.read_meta().get("thumbnails_exact"))


def stream_size(run: RunDir) -> int:
    """Training side for streamed images: the dataset's median side, clamped to [32, 224]."""
    return int(min(224, max(32, run.read_meta().get("native_size", 224))))


class FileImages:
    """(uint8 (3, S, S) tensor, label) for chosen samples of a dataset, decoded on demand;
    with ``flags`` (bool, like ``indices``), (tensor, label, flag): a test set's leaked
    images."""

    def __init__(self, ds, indices: np.ndarray, labels: np.ndarray, size: int,
                 flags: np.ndarray | None = None) -> None:
        self.ds, self.indices, self.labels, self.size = ds, indices, labels, size
        self.flags = flags

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, k: int):  # noqa: ANN204 - (tensor, int) for the DataLoader
        import torch
        from PIL import Image

        img = self.ds.load_image(int(self.indices[k]))
        img = img.resize((self.size, self.size), Image.Resampling.BILINEAR)
        x = torch.from_numpy(np.asarray(img, dtype=np.uint8).copy()).permute(2, 0, 1)
        if self.flags is not None:
            return x, int(self.labels[k]), bool(self.flags[k])
        return x, int(self.labels[k])


def streaming_sets(run: RunDir, indices: np.ndarray, labels: np.ndarray | None = None
                   ) -> tuple[FileImages, FileImages, str]:
    """(train set, test set, test source) read from the image files; ``labels`` as in
    :func:`load_train_data`."""
    size = stream_size(run)
    ds = open_run_dataset(run)
    train = FileImages(ds, indices, ds.samples.labels[indices] if labels is None else labels,
                       size)
    if _has_test_split(run):
        test_ds, labels = _test_dataset(run)
        leaked = leaked_mask(run, test_ds.samples.paths)
        return train, FileImages(test_ds, np.arange(len(labels)), labels, size, leaked), \
            "test split"
    s = ds.samples
    hold = np.flatnonzero(holdout_mask(s.labels))
    truth = np.where(s.true_labels[hold] >= 0, s.true_labels[hold], s.labels[hold])
    return train, FileImages(ds, hold, truth, size, np.zeros(len(hold), bool)), "hold-out"
