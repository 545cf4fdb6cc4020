"""A feature-quality gauge: can this run's flags be trusted? No ground truth needed.

The number is **neighbour agreement after correction**: relabel the samples the evidence
calls label issues to their suggested class, then take, for every sample, the share of its
``K_EVIDENCE`` nearest neighbours in feature space whose (corrected) label is its own;
average, and rescale so that chance (1/C) reads 0 and pure neighbourhoods read 1.

Why this number: with features that see what the images show, the wrong labels are the
exceptions in otherwise pure neighbourhoods, so once they are corrected the neighbourhoods
are pure (digits: 0.86). With features that see little (raw pixels of photographs, random
weights), neighbourhoods mix classes whatever the labels, and no correction of a few
labels makes them pure. The given labels' own agreement cannot tell these apart: heavy
label noise lowers it as much as weak features do. Across every row of the detection grid
it ranks rows as their F1 does (Spearman in docs/benchmarks.md); the verdict's cut points
were chosen by looking at that grid.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from worker.pipeline.choices import DEFAULT_IMAGE_MODEL

# Cut points of the verdict, chosen on the detection grid (docs/benchmarks.md).
STRONG_FROM = 0.70
FAIR_FROM = 0.55


@dataclass(frozen=True)
class Gauge:
    """The gauge's value in [0, 1] (chance 0), its verdict and what to do next."""

    value: float
    level: str  # "strong" | "fair" | "weak"
    advice: str

    @property
    def line(self) -> str:
        """One line for the CLI and the pages."""
        return f"feature quality {self.value:.2f} ({self.level}): {self.advice}"


ADVICE = {
    "strong": "the features separate the classes; the flags are worth reviewing and "
              "dropping",
    "fair": "the flags are a useful review queue, but check them before dropping many; "
            "{better} may help",
    "weak": "the features barely separate the classes, so the flags are near chance: "
            "{better} before dropping anything",
}


def better_features(extract: dict | None) -> str:
    """What to try next for better features, given the run's ``steps.extract`` record
    (``model``, ``pretrained``, ``finetune_epochs``): never the step the run already took."""
    extract = extract or {}
    model, pretrained = extract.get("model"), extract.get("pretrained")
    own = "bring your own features (features:FILE.npy)"
    if model is None or (pretrained is None and model != "pixels"):
        # A features file (or an unknown record): the images are the next thing to try.
        return f"extract features from the images with --model {DEFAULT_IMAGE_MODEL}, " \
               "or bring stronger features"
    if pretrained is True:
        if extract.get("finetune_epochs"):
            return f"more --finetune epochs, or {own}"
        return f"--finetune the network on your labels, or {own}"
    # Raw pixels or a network with random weights.
    return f"use the pretrained default (--model {DEFAULT_IMAGE_MODEL}), or {own}"


def neighbour_agreement(neighbours: np.ndarray, labels: np.ndarray, issue: np.ndarray,
                        suggested: np.ndarray, n_classes: int,
                        block: int = 65_536) -> float:
    """Chance-corrected neighbour agreement after correcting the label issues.

    Parameters
    ----------
    neighbours : ndarray of int, shape (N, k); rows exclude the sample itself
    labels, suggested : ndarray of int, shape (N,); class codes
    issue : ndarray of bool, shape (N,); the samples whose label is corrected
    n_classes : int

    Returns
    -------
    float in [0, 1]: 0 at chance (1/n_classes) or below, 1 for pure neighbourhoods.
    """
    if len(labels) == 0 or neighbours.shape[1] == 0 or n_classes < 2:
        return 0.0
    fixed = np.where(issue, suggested, labels)
    agree = 0.0
    for s in range(0, len(fixed), block):
        agree += float((fixed[neighbours[s:s + block]] == fixed[s:s + block, None]).sum())
    share = agree / neighbours.size
    chance = 1.0 / n_classes
    return float(np.clip((share - chance) / (1.0 - chance), 0.0, 1.0))


SELF_TAUGHT = ("the network learned its features from these same labels, so agreeing with "
               "them proves little")
LEVELS = ("weak", "fair", "strong")
SELF_TAUGHT_ADVICE = {
    "weak": f"treat the flags as near chance; use the pretrained default (--model "
            f"{DEFAULT_IMAGE_MODEL}) without --finetune, or bring your own features, before "
            "dropping anything",
    "fair": "review the flags before dropping many; the same backbone without --finetune "
            "gives a gauge that can be read",
}


def judge(value: float, extract: dict | None = None) -> Gauge:
    """The verdict for a gauge value; ``extract`` (the run's ``steps.extract``) makes the
    advice name a next step the run has not already taken.

    Features fine-tuned on the run's own labels agree with those labels, wrong ones
    included, by construction: the gauge's premise (features that never saw the labels)
    fails. A network trained only on them (random start, ``--finetune``) is therefore
    judged weak whatever the number (CIFAR-10N, ResNet-20 from scratch: 0.655, F1 0.315),
    and a pretrained one fine-tuned on them at most fair. A rule from provenance, checked
    on that one row.
    """
    level = "strong" if value >= STRONG_FROM else "fair" if value >= FAIR_FROM else "weak"
    advice = ADVICE[level].format(better=better_features(extract))
    if extract and extract.get("finetune_epochs"):
        cap = "fair" if extract.get("pretrained") else "weak"
        if LEVELS.index(level) > LEVELS.index(cap):
            level, advice = cap, f"{SELF_TAUGHT}: {SELF_TAUGHT_ADVICE[cap]}"
    return Gauge(round(float(value), 3), level, advice)
