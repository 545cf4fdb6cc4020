"""``Run``: one run folder, as a notebook uses it.

Every method reads or writes the run the way ``curator`` and the Curate page do: findings,
the summary and the map come from the one read model
(:func:`~worker.pipeline.curation.snapshot.current_snapshot`); keep, drop, relabel and undo
are the CLI's calls on the run's SQLite store (the same store, history and undo as the
page, so a decision made here shows on an open Curate page at its next refresh, and one
made there shows in :meth:`Run.findings`); clustering is ``curator cluster``'s step, and
an export is ``curator export``'s job. Versions are ``curator version``'s, ``versions``'
and ``diff``'s calls on the same store. Nothing is cached here: each call reads the store
as it is now.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from tsne_curator.bars import progress_bar
from tsne_curator.display import repr_html, repr_text
from tsne_curator.map_figure import class_map
from tsne_curator.options import is_whole, keywords
from tsne_curator.tables import (
    diff_frame,
    findings_frame,
    manifest_frame,
    summary_frame,
    versions_frame,
)
from worker.jobs.execution import run_here
from worker.jobs.job_params import ExportParams
from worker.pipeline.curation.cluster_step import class_code, cluster_step, set_cut
from worker.pipeline.curation.similar_rows import SIMILAR_COLUMNS, similar_rows
from worker.pipeline.curation.versions import save_version
from worker.pipeline.errors import InputError
from worker.pipeline.map.image_query import read_query_file
from worker.pipeline.number_params import check
from worker.pipeline.storage.curation_store import open_store
from worker.pipeline.storage.decision_log import RUN_COLUMNS, SAMPLE_COLUMNS, history_rows
from worker.pipeline.storage.rundir import RunDir
from worker.settings import load_settings
from worker.step_options import experiment_params
from worker.train.experiment import on_version, verdict_report

if TYPE_CHECKING:
    import plotly.graph_objects as go


def _indices(values: Any) -> list[int]:
    """Sample indices from an int, a list, an array or a pandas column of whole numbers.

    Raises
    ------
    InputError
        Values that are not whole numbers (a boolean mask included: pass
        ``np.flatnonzero(mask)``).
    """
    x = np.asarray(values).ravel()
    if not x.size:
        return []
    if x.dtype.kind not in "iu" and not (x.dtype.kind == "O" and all(map(is_whole, x))):
        raise InputError(f"sample indices must be whole numbers, got {x.dtype} values (for "
                         "a mask, pass np.flatnonzero(mask))")
    return [int(v) for v in x]


def _class_name(value: Any, what: str = "class_name") -> str:
    """A class given by its name, or by the number its name is (``3`` for class "3"),
    as the name.

    Raises
    ------
    InputError
        Neither text nor a whole number (a float, a bool, a list).
    """
    if isinstance(value, str):
        return value
    if is_whole(value):
        return str(int(value))
    raise InputError(f"{what} must be a class name or a class number, got {value!r}")


def _class_names(value: Any) -> list[str] | None:
    """One class or several (a list, a tuple, an array or a pandas column) as names
    (:func:`_class_name`); None stays None (every class)."""
    if value is None:
        return None
    if isinstance(value, str | int | np.integer):
        return [_class_name(value)]
    try:
        values = list(value)
    except TypeError:
        raise InputError(f"class_name must be a class name or number, or a list of them, "
                         f"got {value!r}") from None
    return [_class_name(v) for v in values]


class Run:
    """A run folder: its findings, summary, map, curation and exports.

    Parameters
    ----------
    path : str or path
        A run folder (one holding ``run.json``).

    Attributes
    ----------
    path : Path
        The run folder.
    name : str
        Its name (the folder's), as the app lists it.
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self._dir = RunDir(Path(path)).require()
        self.path = self._dir.path
        self.name = self._dir.run_id

    # -- reading ------------------------------------------------------------------------
    def findings(self, kind: str | None = None) -> pd.DataFrame:
        """Every sample a finding kind marks now, and every sample a reviewer decided.

        Parameters
        ----------
        kind : str, optional
            Only this kind (``label``, ``duplicate``, ``leak``, ``outlier``).

        Returns
        -------
        DataFrame, one row per (sample, kind); see :func:`~tsne_curator.tables.findings_frame`
        for the columns.
        """
        return findings_frame(self._dir, kind)

    def similar(self, index_or_path: int | str | os.PathLike | bytes, k: int = 20
                ) -> pd.DataFrame:
        """The ``k`` samples nearest a sample, or an image file that need not be in the run,
        across every class (``curator similar``): where one bad sample leads to the others
        of its kind, or a photograph to the samples like it.

        Parameters
        ----------
        index_or_path : int, str, os.PathLike or bytes
            A sample (its row of ``samples.csv``, the ``index`` of :meth:`findings`; it is
            left out of its own list); or an image file (JPEG, PNG, WebP, BMP, GIF or TIFF,
            at most 32 MiB and 64 megapixels), by its path or its contents, put through the
            run's own model, input size and PCA, so a sample's own file comes first at
            distance 0. A run whose network was fine-tuned (``--finetune``) or made from a
            features file takes sample indices only.
        k : int
            How many (``--k``, 1 to 10,000).

        Returns
        -------
        DataFrame, one row per neighbour, nearest first: ``rank``, ``index``, ``distance``
        (in the space the label evidence and the findings search: the features' PCA-50),
        ``path``, ``label``, ``suggested_label`` (where the label rule flags it),
        ``findings`` (the kinds that mark it, comma-separated), ``decision``.

        Raises
        ------
        InputError
            No such sample or file, ``k`` out of range, or an image file refused (empty,
            too large, not an image, damaged), in one line.
        """
        k = keywords("similar", {"k": k}, "similar")["k"]
        query: int | bytes
        if isinstance(index_or_path, bytes | bytearray | memoryview):
            query = bytes(index_or_path)
        elif isinstance(index_or_path, str | os.PathLike):
            query = read_query_file(Path(index_or_path))
        elif is_whole(index_or_path):
            query = int(index_or_path)
        else:
            raise InputError(f"similar takes a sample index (a whole number), an image file's "
                             f"path or its bytes, got {index_or_path!r}")
        rows = similar_rows(self._dir, query, k)
        return pd.DataFrame(rows, columns=list(SIMILAR_COLUMNS))

    def summary(self) -> pd.DataFrame:
        """The per-class table (the paper's Table I), one row per class and a total row:
        class, size, flagged, overridden, relabelled, kept, reduction_pct and a count per
        finding kind other than label."""
        return summary_frame(self._dir)

    def map(self, class_name: str | int) -> go.Figure:
        """Class ``class_name`` (its name, or the number its name is) on the shared t-SNE
        map, marked as on the Curate page.

        Returns
        -------
        plotly.graph_objects.Figure
        """
        return class_map(self._dir, _class_name(class_name))

    # -- curation -----------------------------------------------------------------------
    def _override(self, indices: Any, decision: str | None) -> int:
        chosen = _indices(indices)
        n = len(self._dir.read_samples())
        return open_store(self._dir).set_overrides(chosen, decision, n_samples=n) \
            if chosen else 0

    def drop(self, indices: Any) -> int:
        """Drop samples whatever the rule says (``curator override RUN drop``).

        Returns
        -------
        int, how many samples changed.
        """
        return self._override(indices, "drop")

    def keep(self, indices: Any) -> int:
        """Keep samples whatever the rule says (``curator override RUN keep``); returns how
        many changed."""
        return self._override(indices, "keep")

    def clear(self, indices: Any) -> int:
        """Clear the samples' keep/drop overrides (``curator override RUN clear``); returns
        how many changed."""
        return self._override(indices, None)

    def relabel(self, indices: Any, label: str | int | None) -> int:
        """Give samples a corrected class (``curator relabel``); None clears it.

        Parameters
        ----------
        indices : sample indices
        label : a class name of the run (or its number: ``3`` for class "3"), or None

        Returns
        -------
        int, how many samples changed.
        """
        chosen = _indices(indices)
        samples = self._dir.read_samples()
        label = None if label is None else _class_name(label, "label")
        if label is not None and label not in samples.classes:
            raise InputError(f"no class {label!r} in this run: use one of "
                             f"{', '.join(samples.classes)} (or None to clear)")
        if not chosen:
            return 0
        code = None if label is None else samples.classes.index(label)
        return open_store(self._dir).set_relabels(
            chosen, code, f"relabel {len(chosen)} to {label or 'clear'}",
            n_samples=len(samples), n_classes=len(samples.classes))

    def undo(self) -> str:
        """Undo the last curation decision, made here, in a shell or on the Curate page
        (``curator undo``); the pipeline's own steps (its clustering) are never undone.

        Returns
        -------
        str, what was undone.

        Raises
        ------
        InputError
            Nothing to undo.
        """
        return open_store(self._dir).undo_or_refuse()

    def redo(self) -> str:
        """Redo the last undone decision (``curator undo --redo``); returns it.

        Raises
        ------
        InputError
            Nothing to redo.
        """
        return open_store(self._dir).undo_or_refuse(redo=True)

    def history(self, sample: int | None = None, limit: int = 50) -> pd.DataFrame:
        """Who decided what and when (``curator history``): the run's last ``limit``
        changes, newest first, or every decision on ``sample``, oldest first. A decision
        made here is signed with the OS user's name; on the Curate page, with the
        person's.

        Returns
        -------
        DataFrame. The run's: ``id``, ``at`` (UTC, ISO 8601), ``author``, ``description``,
        ``changes`` (how many values), ``state`` ("stands", "undone by NAME at TIME",
        "pipeline"). A sample's: ``id``, ``at``, ``author``, ``what`` ("decision" or
        "label"), ``before``, ``after`` ("keep", "drop", a class name, "" for none),
        ``state``, ``description``.

        Raises
        ------
        InputError
            ``sample`` is not a sample of the run, or ``limit`` is out of range.
        """
        limit = int(check("history_limit", limit))
        if sample is not None:
            sample = int(check("history_sample", sample))
        rows = history_rows(self._dir, sample, limit)
        return pd.DataFrame(rows, columns=list(RUN_COLUMNS if sample is None
                                               else SAMPLE_COLUMNS))

    def cluster(self, class_name: str | int | Sequence[str | int] | None = None,
                eps: float | None = None, min_samples: int | None = None, *,
                rule: str | None = None, auto: bool = False,
                cut: int | str | None = None) -> pd.DataFrame:
        """DBSCAN again with new parameters (``curator cluster``), one undoable change.

        Parameters
        ----------
        class_name : str, int or a list of them, optional
            The classes ``eps`` and ``min_samples`` apply to (``--class``), by name or by
            the number their name is; all when None.
        eps, min_samples : optional
            DBSCAN's parameters (``--eps``, ``--min-samples``), checked as the CLI checks
            them.
        rule : str, optional
            The flagging rule (``--rule``: adaptive, dbscan-knn, dbscan).
        auto : bool
            Derive eps again from the k-distance knee (``--auto``).
        cut : int or "rule", optional
            Flag each named class's ``cut`` highest mislabel scores and no others
            (``--cut``); ``"rule"`` gives the class back to the rule.

        Returns
        -------
        DataFrame, the summary (:meth:`summary`) after the change.
        """
        v = keywords("cluster", {"eps": eps, "min_samples": min_samples, "rule": rule,
                                 "auto": auto, "cut": cut}, "cluster")
        names = _class_names(class_name)
        samples = self._dir.read_samples()
        # Every name is checked before the store changes (cluster_step sets the rule first).
        codes = [class_code(samples, n) for n in names or []]
        if v["cut"] is not None and not names:
            raise InputError("cut is per class: name the class with class_name")
        cluster_step(self._dir, eps=v["eps"], min_samples=v["min_samples"], classes=names,
                     rule=v["rule"], auto=v["auto"])
        if v["cut"] is not None:
            for code in codes:
                set_cut(self._dir, code, None if v["cut"] == "rule" else v["cut"],
                        samples=samples)
        return self.summary()

    # -- versions -------------------------------------------------------------------------
    def version(self, name: str, note: str = "") -> dict[str, Any]:
        """Freeze the curation as it is now under ``name`` (``curator version``): a version
        never changes, and exports and experiments can name it later.

        Parameters
        ----------
        name : str
            Unique in the run: letters, digits, ``.``, ``_``, ``-`` (not ``current``).
        note : str
            Why it was saved.

        Returns
        -------
        dict, its row of :meth:`versions`.

        Raises
        ------
        InputError
            A bad or taken name, or less free space than ``CURATOR_MIN_FREE_MB`` after it
            (nothing written).
        """
        return save_version(self._dir, name, note, load_settings().min_free_mb)

    def versions(self) -> pd.DataFrame:
        """The run's versions, oldest first (``curator versions``); see
        :func:`~tsne_curator.tables.versions_frame` for the columns."""
        return versions_frame(self._dir)

    def diff(self, a: str, b: str = "current") -> pd.DataFrame:
        """The samples whose fate differs from version ``a`` to version ``b`` (``curator
        diff``); ``current`` is the live curation.

        Returns
        -------
        DataFrame, one row per change; see :func:`~tsne_curator.tables.diff_frame` for the
        columns.

        Raises
        ------
        InputError
            A name that is no version of the run (the line names those there are).
        """
        return diff_frame(self._dir, a, b)

    # -- writing out --------------------------------------------------------------------
    def export(self, name: str, format: str = "csv", version: str | None = None
               ) -> tuple[pd.DataFrame, Path]:
        """Write the kept subset to ``<run>/exports/<name>/`` (``curator export``), as a
        job of this process that the Jobs page lists.

        Parameters
        ----------
        name : str
            The export's name (``--dest``): letters, digits, ``.``, ``_``, ``-``.
        format : {"csv", "imagefolder", "indices"}
        version : str, optional
            A version of the run (``--version``): its frozen curation, the same files every
            time.

        Returns
        -------
        (DataFrame, Path)
            The manifest (one row per sample; for ``indices``, the kept indices) and the
            export's folder.
        """
        v = keywords("export", {"format": format, "version": version}, "export",
                     fixed={"dest": name, "run": self.path})
        bar = progress_bar()
        try:
            params = ExportParams(v["dest"], v["format"], v["version"])
            dest = self.path / run_here(self._dir, "export", params, bar)["export"]
        finally:
            bar.close()
        return manifest_frame(dest), dest

    # -- display --------------------------------------------------------------------------
    def experiment(self, **options: Any) -> tuple[pd.DataFrame, str]:
        """Compare subsets by retraining (``curator experiment``), as a job of this process
        that the Jobs page lists; every ``curator experiment`` option as a keyword
        (``subsets="full,filtered"``, ``seeds=2``, ``epochs=30``, ``batch_sizes="1024,8192"``,
        ``budget="steps"``, ``optimizer="auto"``, ``model``, ``name``, …), and ``version``:
        the curated subsets train on that version's frozen kept set and labels (without it,
        the live curation; the summary's ``version`` column names the version equal to it,
        if any).

        Returns
        -------
        (DataFrame, str)
            The experiment's ``summary.csv`` (per subset and batch size: images, seeds, mean
            and sd of the test accuracy, the differences with their p-values, whether every
            training converged) and its verdict report, as ``curator experiment`` prints it.
        """
        v = keywords("experiment", options, "experiment", fixed={"run": self.path})
        params = experiment_params(v)
        params = params.model_copy(update={"configs": on_version(self._dir, params.configs,
                                                                 v["version"])})
        bar = progress_bar()
        try:
            result = run_here(self._dir, "experiment", params, bar)
        finally:
            bar.close()
        out = self.path / result["experiment"]
        return pd.read_csv(out / "summary.csv"), verdict_report(out)

    def __repr__(self) -> str:
        return repr_text(self._dir)

    def _repr_html_(self) -> str:
        return repr_html(self._dir)


def open_run(path: str | os.PathLike) -> Run:
    """The run at ``path``.

    Raises
    ------
    InputError
        ``path`` is not a run (no ``run.json``).
    """
    return Run(path)
