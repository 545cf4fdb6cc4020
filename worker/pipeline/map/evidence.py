"""How well each sample's neighbourhood supports its label: a score, a suggestion, a verdict.

The ``adaptive`` rule (docs/method.md) needs, for every sample, out-of-sample class
probabilities that do not trust the given labels blindly. They come from two views of the
same features, averaged:

- a vote of the sample's ``K_EVIDENCE`` nearest neighbours in PCA space (uniform weights,
  the sample itself excluded), and
- 5-fold cross-validated logistic regression on the standardised PCA features.

At heavy noise the voters' own labels are often wrong (a class flipped 40% of the time
to one partner surrounds its mislabeled members with more of them), so the estimate is
iterated ``EVIDENCE_ROUNDS`` times: each round votes and trains with the given labels,
except that the samples the previous round's confident learning called label issues
carry their suggested label instead. The final probabilities give

- ``score`` = 1 − p(given label), in [0, 1], higher = more likely wrong;
- ``suggested`` = the most probable class;
- how many labels are wrong, estimated by confident learning (cleanlab's
  ``num_label_issues``) from the confident joint's off-diagonal (``off_diagonal``, the
  stricter) and from that joint calibrated to the class sizes
  (``off_diagonal_calibrated``), each on the first round's probabilities (the given
  labels only) and on the last's. The samples with the highest scores, as many as the
  smallest estimate, are ``issue`` (flagged whatever DBSCAN says); those up to the
  largest estimate are ``suspect`` (flagged when DBSCAN calls them noise). No threshold
  is fixed: the counts follow the data's own noise rate, and DBSCAN on the map decides
  the band between them.

Figures in docs/benchmarks.md; the fixed knobs (k = 20, 5 rounds, what is relabelled)
and what was looked at to choose them are in docs/method.md.

Both views need (N, C) probability matrices, and cleanlab reads them dense: at 1.28M
samples and 1,000 classes each is 5 GB and the cross-validated fits take hours. Above
``DENSE_MAX`` entries the evidence comes from the neighbours alone
(:func:`knn_evidence`), in memory and time linear in N·k.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from worker.pipeline.errors import InputError

K_EVIDENCE = 20
EVIDENCE_ROUNDS = 5
CV_FOLDS = 5
# Above N·C = DENSE_MAX (50,000 × 1,000, or 500,000 × 100) the evidence is the neighbours'
# alone (knn_evidence); every benchmark row in docs/benchmarks.md is far below it.
DENSE_MAX = 50_000_000
# Part of the key the cluster step stores the evidence under: change it whenever the
# method changes, so existing runs recompute their scores.
EVIDENCE_VERSION = f"k{K_EVIDENCE}-r{EVIDENCE_ROUNDS}-cv{CV_FOLDS}-count-band2"


@dataclass(frozen=True)
class Evidence:
    """Per-sample label evidence, all arrays shape (N,).

    Attributes
    ----------
    score : float32 in [0, 1]; 1 − the estimated probability of the given label.
    suggested : int64 class codes; the most probable class.
    issue : bool; the highest scores, as many as the smallest estimate of wrong labels:
        flagged whatever DBSCAN says.
    suspect : bool; a superset of ``issue``: flagged when DBSCAN calls the sample noise.
    """

    score: np.ndarray
    suggested: np.ndarray
    issue: np.ndarray
    suspect: np.ndarray


def neighbour_votes(neighbours: np.ndarray, labels: np.ndarray, n_classes: int) -> np.ndarray:
    """Share of each sample's neighbours in each class.

    Parameters
    ----------
    neighbours : ndarray of int, shape (N, k); each row excludes the sample itself.
    labels : ndarray of int, shape (N,)

    Returns
    -------
    ndarray of float32, shape (N, n_classes); rows sum to 1 (uniform 1/C when k = 0).
    """
    n, k = neighbours.shape
    if k == 0:
        return np.full((n, n_classes), 1.0 / n_classes, dtype=np.float32)
    votes = np.zeros((n, n_classes), dtype=np.float32)
    np.add.at(votes, (np.repeat(np.arange(n), k), labels[neighbours].ravel()), 1.0 / k)
    return votes


class CrossValidatedProbs:
    """Out-of-fold logistic-regression class probabilities, refitted round after round.

    The folds stay fixed and each fold's model is warm-started from the previous round,
    since only a few labels change between rounds: later rounds converge in a few
    iterations instead of starting over.

    Parameters
    ----------
    x : ndarray, shape (N, D), already standardised
    labels : ndarray of int, shape (N,); the folds are stratified by these
    """

    def __init__(self, x: np.ndarray, labels: np.ndarray, n_classes: int, seed: int = 0) -> None:
        from sklearn.model_selection import StratifiedKFold

        self.x, self.n_classes = x, n_classes
        counts = np.bincount(labels, minlength=n_classes)
        folds = min(CV_FOLDS, int(counts[counts > 0].min()))
        self.splits = [] if folds < 2 or np.count_nonzero(counts) < 2 else list(
            StratifiedKFold(folds, shuffle=True, random_state=seed).split(x, labels))
        self.models: list = [None] * len(self.splits)

    def __call__(self, labels: np.ndarray) -> np.ndarray:
        """Probabilities, shape (N, n_classes), of a fit on ``labels``; classes a fold
        never saw get 0. With too few samples per class, the labels themselves."""
        from sklearn.linear_model import LogisticRegression

        probs = np.zeros((len(labels), self.n_classes), dtype=np.float32)
        if not self.splits:
            probs[np.arange(len(labels)), labels] = 1.0  # nothing to learn from
            return probs
        for k, (train, test) in enumerate(self.splits):
            y = labels[train]
            present = np.unique(y)
            if len(present) < 2:
                # The folds are stratified by the given labels, but later rounds train on
                # relabelled voters: on a few samples a fold's voters can all carry one
                # class, which a classifier cannot be fitted to. That class is then all the
                # fold can say.
                probs[test, present[0]] = 1.0
                self.models[k] = None
                continue
            model = self.models[k]
            if model is None or not np.array_equal(model.classes_, present):
                # A loose tolerance: the ranking of probabilities settles long before the
                # loss does (3.4 s → 1.5 s per fit on 50,000 CIFAR features, same flags).
                model = LogisticRegression(max_iter=300, tol=1e-3, warm_start=True)
            self.models[k] = model.fit(self.x[train], y)
            probs[np.ix_(test, model.classes_)] = model.predict_proba(self.x[test])
        return probs


def _present_classes(labels: np.ndarray, probs: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray] | None:
    """Labels and probabilities restricted to the classes someone is labelled with, as
    cleanlab expects (labels renumbered, rows renormalised); None with fewer than two
    classes of two samples, where confident learning has nothing to estimate from."""
    n_classes = probs.shape[1]
    counts = np.bincount(labels, minlength=n_classes)
    present = counts > 0
    if present.sum() < 2 or counts[present].min() < 2:
        return None
    keep = np.flatnonzero(present)
    remap = np.full(n_classes, -1, dtype=np.int64)
    remap[keep] = np.arange(len(keep))
    p = probs[:, keep] + 1e-6
    return remap[labels], p / p.sum(axis=1, keepdims=True)


def confident_issues(labels: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """cleanlab's ``find_label_issues``, bool (N,): per class, as many as the noise rate it
    estimates (``prune_by_noise_rate``). With fewer than two classes of two samples, every
    label the evidence disputes."""
    from cleanlab.filter import find_label_issues

    present = _present_classes(labels, probs)
    if present is None:
        return probs.argmax(axis=1) != labels
    # n_jobs=1: cleanlab's pool forks this process, and a fork of a process with live
    # threads or broker connections (the CLI after it has asked Celery which workers are
    # up, the app's server) can hang in the child. One process was as fast at 10 classes
    # (0.08 s for 50,000 samples) and 1.6x slower at 1,000 (5.4 s for 200,000).
    return np.asarray(find_label_issues(*present, filter_by="prune_by_noise_rate",
                                        n_jobs=1), dtype=bool)


def wrong_label_counts(labels: np.ndarray, probs: np.ndarray) -> tuple[int, int]:
    """Confident learning's two estimates of how many labels are wrong, smaller first:
    cleanlab ``num_label_issues`` with ``off_diagonal`` and ``off_diagonal_calibrated``.
    With fewer than two classes of two samples, the disputed labels, twice."""
    from cleanlab.count import num_label_issues

    present = _present_classes(labels, probs)
    if present is None:
        disputed = int(np.count_nonzero(probs.argmax(axis=1) != labels))
        return disputed, disputed
    a, b = (int(num_label_issues(*present, estimation_method=m))
            for m in ("off_diagonal", "off_diagonal_calibrated"))
    return min(a, b), max(a, b)


def most_suspect(score: np.ndarray, count: int) -> np.ndarray:
    """bool (N,): the ``count`` samples with the highest scores (ties: lower index first)."""
    out = np.zeros(len(score), dtype=bool)
    out[np.argsort(-score, kind="stable")[:count]] = True
    return out


def label_evidence(x: np.ndarray, neighbours: np.ndarray, labels: np.ndarray,
                   n_classes: int, rounds: int = EVIDENCE_ROUNDS, seed: int = 0) -> Evidence:
    """Score every sample's label against its neighbourhood (see the module docstring).

    Parameters
    ----------
    x : ndarray, shape (N, D)
        Features in the space the neighbours were found in (PCA-50).
    neighbours : ndarray of int, shape (N, k)
        Each sample's nearest other samples, nearest first.
    labels : ndarray of int, shape (N,)
        Given labels, class codes in [0, n_classes).
    rounds : int
        Vote-and-relabel rounds; 1 trusts the given labels of every voter.

    Returns
    -------
    Evidence
    """
    from sklearn.preprocessing import StandardScaler

    labels = np.asarray(labels, dtype=np.int64)
    n = len(labels)
    if n != len(x) or n != len(neighbours):
        raise InputError(f"label evidence needs one row per sample: {n} labels, "
                         f"{len(x)} feature rows, {len(neighbours)} neighbour rows")
    if rounds < 1:
        raise InputError(f"evidence rounds must be at least 1, got {rounds}")
    xs = StandardScaler().fit_transform(np.asarray(x, dtype=np.float32))
    fit = CrossValidatedProbs(xs, labels, n_classes, seed)
    voters = labels
    counts: list[int] = []
    for r in range(rounds):
        probs = 0.5 * (neighbour_votes(neighbours, voters, n_classes) + fit(voters))
        if r in (0, rounds - 1):
            counts += wrong_label_counts(labels, probs)
        issue = confident_issues(labels, probs)
        # Only the confident issues carry their suggested label into the next round; the
        # rest keep the label the user gave, so nothing drifts away from it.
        voters = np.where(issue, probs.argmax(axis=1), labels)
    score = np.clip(1.0 - probs[np.arange(n), labels], 0.0, 1.0).astype(np.float32)
    # Who is flagged follows the score (it ranks wrong labels better than any filter's
    # choice did, docs/method.md); how many, the estimates of the count: the relabelling
    # rounds raise them (right at heavy pairs noise, too far on weak features), so the
    # smallest and the largest, before and after, bound the band DBSCAN decides.
    return Evidence(score, probs.argmax(axis=1).astype(np.int64),
                    most_suspect(score, min(counts)), most_suspect(score, max(counts)))


def knn_evidence(neighbours: np.ndarray, labels: np.ndarray, n_classes: int,
                 block: int = 65_536) -> Evidence:
    """Label evidence from the k nearest neighbours alone, without any (N, C) matrix.

    The class shares are the neighbours' votes (``share_c(x)`` = the fraction of x's
    neighbours labelled c). The verdict is confident learning's confident joint, built on
    those shares: each class's threshold ``t_c`` is the mean own-class share of the
    samples labelled c; a sample belongs to the class c with the highest share among those
    with ``share_c(x) ≥ t_c``, and is an issue when that class is not its label (cleanlab's
    ``filter_by="confident_learning"``, without the noise-rate pruning that needs the
    dense matrix). ``score`` = 1 − the share of its own label; ``suggested`` = the
    neighbours' majority (ties: the lowest class code); ``suspect`` = the issues and the
    samples whose majority is another class.

    Parameters
    ----------
    neighbours : ndarray of int, shape (N, k), k ≥ 1; rows exclude the sample itself
    labels : ndarray of int, shape (N,)

    Returns
    -------
    Evidence
    """
    labels = np.asarray(labels, dtype=np.int64)
    n, k = neighbours.shape
    if k == 0 or n != len(labels):
        raise InputError(f"neighbour evidence needs one row of k ≥ 1 neighbours per sample: "
                         f"{n} rows of {k} for {len(labels)} labels")
    own = np.empty(n, dtype=np.float32)
    for s in range(0, n, block):
        own[s:s + block] = (labels[neighbours[s:s + block]] == labels[s:s + block, None]).mean(1)
    counts = np.bincount(labels, minlength=n_classes)
    thresholds = np.bincount(labels, own, minlength=n_classes) / np.maximum(counts, 1)
    suggested = np.empty(n, dtype=np.int64)
    issue = np.empty(n, dtype=bool)
    for s in range(0, n, block):
        votes = np.sort(labels[neighbours[s:s + block]], axis=1)  # (b, k) class codes
        # Each position's share: how many of the row's votes equal it, over k.
        share = (votes[:, :, None] == votes[:, None, :]).sum(2) / k
        rows = np.arange(len(votes))
        suggested[s:s + block] = votes[rows, share.argmax(1)]  # sorted: lowest code on ties
        confident = np.where(share >= thresholds[votes] - 1e-9, share, -1.0)
        best = confident.argmax(1)
        issue[s:s + block] = (confident[rows, best] >= 0) & (votes[rows, best]
                                                            != labels[s:s + block])
    return Evidence(np.clip(1.0 - own, 0.0, 1.0).astype(np.float32), suggested, issue,
                    issue | (suggested != labels))
