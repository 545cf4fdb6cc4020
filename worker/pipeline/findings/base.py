"""What a finding kind is: a name, a ``compute`` from the run's context, a default
decision, its columns and its why-line.

Modelled on cleanlab Datalab's ``IssueManager`` (one class per issue type, found through
a registry): every consumer (the run directory, the store's decisions, the review list,
the map marks, the counts, ``curator findings``, ``curator evaluate`` and the export)
loops over :data:`~worker.pipeline.findings.kind_registry.REGISTRY`, so adding a kind is one
module and one ``@register`` line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from worker.pipeline.number_params import PARAMS

if TYPE_CHECKING:
    from worker.pipeline.findings.context import FindingContext

# A kind's default decision for the samples it marks: dropped unless a reviewer keeps
# them, or only listed for review (kept unless a reviewer drops them). A DROP kind drops
# only the samples whose evidence reaches its drop cut (FindingTable.drop); the rest of
# its marks are proposed: listed for review and kept until a person decides.
DROP, REVIEW = "drop", "review"


@dataclass
class FindingTable:
    """One kind's per-sample result; every array has shape (N,), in sample order.

    Attributes
    ----------
    issue : bool, the kind marks the sample.
    score : float32, higher = more likely an issue (ranks the review list; AUROC).
    related : int64, the related sample (a duplicate's kept copy, the leaked test image's
        index in the test split), -1 where none.
    facts : name → (N,) array the why-line and the columns read (distances, group ids…).
    info : run-level facts (the threshold used, the scale it is relative to, counts).
    drop : bool, the marks whose evidence reaches the kind's drop cut (a subset of
        ``issue``); None: every mark (a kind with one cut).
    """

    issue: np.ndarray
    score: np.ndarray
    related: np.ndarray
    facts: dict[str, np.ndarray] = field(default_factory=dict)
    info: dict = field(default_factory=dict)
    drop: np.ndarray | None = None

    @staticmethod
    def empty(n: int) -> FindingTable:
        return FindingTable(np.zeros(n, bool), np.zeros(n, np.float32),
                            np.full(n, -1, np.int64))

    def __len__(self) -> int:
        return len(self.issue)


@dataclass(frozen=True)
class View:
    """What a kind's columns and why-lines name besides its own table.

    Attributes
    ----------
    paths : each sample's path (N,)
    classes : class names; ``labels`` (N,) are the given labels' codes
    test_paths : the test split's paths (``leak``'s related samples)
    flagged : bool (N,), the label rule's flags now (None outside a snapshot)
    tables : every kind's table (a kind may read another's: label reads duplicate's)
    """

    paths: Sequence[str]
    classes: Sequence[str]
    labels: np.ndarray
    test_paths: Sequence[str] = ()
    flagged: np.ndarray | None = None
    tables: dict = field(default_factory=dict)


class FindingKind:
    """Base class of a finding kind; subclasses set the class attributes and
    :meth:`compute`, and register with ``@register``.

    Attributes
    ----------
    name : one word, the ``finding`` column's value and the ``--kind`` choice.
    title : what a person calls one finding ("near-duplicate").
    decision : :data:`DROP` or :data:`REVIEW`, the default for the samples it marks.
    columns : the manifest and review-list columns it adds (:meth:`column_values`).
    threshold : name of its cut in :data:`~worker.pipeline.number_params.PARAMS` (group
        ``findings``, named ``<name>_threshold``), which gives its CLI flag, range, default
        and help; or None for a kind without a cut. It is the **propose** cut: what marks
        a sample.
    drop_threshold : name of its **drop** cut (``<name>_drop_threshold``): the evidence a
        mark needs to be dropped by default; None: every mark of a DROP kind is dropped.
    """

    name: ClassVar[str]
    title: ClassVar[str]
    order: ClassVar[int] = 100  # where it is listed: label 0, duplicate 10, leak 20, …
    # Part of the stored table's key: change it when the method changes, so runs compute
    # the kind again instead of reading facts the new why-lines do not know.
    version: ClassVar[str] = "1"
    decision: ClassVar[str] = DROP
    columns: ClassVar[tuple[str, ...]] = ()
    threshold: ClassVar[str | None] = None
    drop_threshold: ClassVar[str | None] = None
    # The map's mark for the samples its default drops (a Plotly symbol name that
    # app/curate/figures.py's FINDING_MARKS knows); None: drawn another way (label: DBSCAN's ✕).
    symbol: ClassVar[str | None] = None
    # What the default decision does, for `curator findings` and the docs.
    advice: ClassVar[str] = ""
    # Whether a reviewer's relabel undoes the default drop: it does for a kind that says
    # the sample belongs to no class (outlier), not for a copy or a leak.
    cleared_by_relabel: ClassVar[bool] = False

    def compute(self, ctx: FindingContext) -> FindingTable:
        """The kind's per-sample table for the run ``ctx`` describes."""
        raise NotImplementedError

    @property
    def default_threshold(self) -> float | None:
        """The default of its cut (:attr:`threshold`), or None."""
        return PARAMS[self.threshold].default if self.threshold else None

    def cut(self, ctx: FindingContext) -> float | None:
        """The cut this run uses: the one given for :attr:`name` (``ctx.thresholds``,
        from ``--<name>-threshold``), else :attr:`default_threshold`."""
        return ctx.thresholds.get(self.name, self.default_threshold)

    def drop_cut(self, ctx: FindingContext) -> float | None:
        """The drop cut this run uses: the one given (``ctx.thresholds['<name>_drop']``,
        from ``--<name>-drop-threshold``), else its default; None for a kind without one."""
        if not self.drop_threshold:
            return None
        return ctx.thresholds.get(f"{self.name}_drop", PARAMS[self.drop_threshold].default)

    def key(self, ctx: FindingContext) -> str:
        """What the stored table depends on besides the features, labels and
        :attr:`version` (the cuts); a change recomputes it."""
        return f"t={self.cut(ctx)};drop={self.drop_cut(ctx)}"

    def current(self, table: FindingTable, view: View | None = None) -> np.ndarray:
        """The samples the kind marks now (bool (N,)). Only ``label`` depends on the
        store (the rule's flags, ``view.flagged``); every other kind's marks are fixed."""
        return table.issue

    def dropping(self, table: FindingTable, view: View | None = None) -> np.ndarray:
        """The marks its default drops (bool (N,)): none for a REVIEW kind; for a DROP
        kind those whose evidence reaches the drop cut (``table.drop``); the others are
        proposed."""
        marked = np.asarray(self.current(table, view), bool)
        if self.decision != DROP:
            return np.zeros_like(marked)
        return marked if table.drop is None else marked & table.drop

    def score_truth(self, table: FindingTable, marked: np.ndarray, truth: list[dict]) -> dict:
        """Its scores against injected truth for ``curator evaluate``: ``marked`` (bool (N,))
        what it marks now, ``truth`` the ``injected.csv`` rows of this kind. A kind that
        can be injected says how it is scored; the others have nothing to add."""
        return {}

    def column_values(self, table: FindingTable, view: View) -> dict[str, list[str]]:
        """Its :attr:`columns` as text, one value per sample ('' where none)."""
        return {c: [""] * len(table) for c in self.columns}

    def why(self, table: FindingTable, i: int, view: View) -> str:
        """One line on why sample ``i`` is marked."""
        return f"{self.title} (score {float(table.score[i]):.3f})"
