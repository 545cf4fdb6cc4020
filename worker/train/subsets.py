"""Training subsets by name, checked where a name comes in (the CLI, the API, a job).

- ``full``, ``filtered``, ``random``, ``corrected``: worker/train/data.py says what each
  holds;
- ``pruned@F``: what ``filtered`` holds, then the fraction F (0 < F < 1) of each class of it
  by value (worker/pipeline/pruning.py; ``pruned-easy@F``, ``pruned-hard@F`` and
  ``pruned-coverage@F`` name a method, ``pruned@F`` is the default one);
- ``random@F``: a seeded random subset of ``full`` with ``pruned@F``'s size and class
  counts, its control.

F is written back in its shortest form (``pruned@.50`` is ``pruned@0.5``), so one subset
has one name in results.csv and on the Results page.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from worker.pipeline.choices import DEFAULT_PRUNING, PRUNINGS, SUBSETS
from worker.pipeline.errors import InputError

SUBSET_FORMS = (f"{', '.join(SUBSETS)}, pruned@F or random@F (F the fraction kept, "
                f"0 < F < 1, e.g. pruned@0.5), or pruned-METHOD@F with METHOD one of "
                f"{', '.join(PRUNINGS)}")


@dataclass(frozen=True)
class SubsetName:
    """A parsed subset name.

    Attributes
    ----------
    kind : full, filtered, random, corrected or pruned
    fraction : F of a ``pruned@F`` / ``random@F``, else None
    method : the pruning method of ``pruned`` (:data:`PRUNINGS`), else None
    """

    kind: str
    fraction: float | None = None
    method: str | None = None

    @property
    def text(self) -> str:
        """The canonical name."""
        if self.fraction is None:
            return self.kind
        head = self.kind if self.method in (None, DEFAULT_PRUNING) else f"pruned-{self.method}"
        return f"{head}@{self.fraction:g}"

    @property
    def curated(self) -> bool:
        """Trains what the curation keeps, with the reviewers' relabels (filtered,
        corrected, pruned); the controls (full, random) train the labels as given."""
        return self.kind in ("filtered", "corrected", "pruned")


def parse_subset(text: str) -> SubsetName:
    """``text`` as a subset name.

    Raises
    ------
    InputError
        Anything else, in one line that lists the forms.
    """
    name = str(text).strip()
    if name in SUBSETS:
        return SubsetName(name)
    head, at, tail = name.partition("@")
    method = DEFAULT_PRUNING if head == "pruned" else \
        head[len("pruned-"):] if head.startswith("pruned-") else None
    if at and (head == "random" or method in PRUNINGS):
        try:
            fraction = round(float(tail), 6)  # written back with at most 6 digits
        except (ValueError, OverflowError):
            fraction = None
        if fraction is None or not 0 < fraction < 1:
            raise InputError(f"subset {name!r}: F must be a fraction between 0 and 1 "
                             f"(exclusive, 6 digits at most), e.g. {head}@0.5")
        return SubsetName(head if head == "random" else "pruned", fraction,
                          None if head == "random" else method)
    raise InputError(f"unknown subset {name!r}: use {SUBSET_FORMS}")


def subset_name(text: str) -> str:
    """``text``'s canonical subset name (an argparse ``type``, and for job params)."""
    return parse_subset(text).text


def subset_arg(text: str) -> str:
    """``--subset``'s argparse ``type``: the canonical name (argparse says what is wrong)."""
    try:
        return subset_name(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def subsets_arg(text: str) -> str:
    """``--subsets``'s argparse ``type``: comma-separated names, each canonical, once."""
    names = []
    for part in (p for p in text.split(",") if p.strip()):
        name = subset_arg(part)
        if name not in names:
            names.append(name)
    if not names:
        raise argparse.ArgumentTypeError("give at least one subset, e.g. full,filtered")
    return ",".join(names)
