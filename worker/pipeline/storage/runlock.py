"""One writer per run: a lock held for a whole step, and a check of where a run may go.

Two pipelines started together on one ``--out`` used to race: both exited 0 and the
second printed a table that was not what ``run.json`` held. Now two exclusive ``flock``
locks guard a run, and a second holder is refused at once with a message naming the
first: ``PIPELINE_LOCK`` for a whole pipeline (the ``curator pipeline`` command, which
runs its steps as jobs, or a pipeline job), and ``STEP_LOCK`` for each step that writes
the run (extraction, embedding, the in-process pipeline's steps). Steps wait for the step
lock rather than fail: a worker process killed mid-step leaves it held for a few seconds
by the DataLoader processes it forked (they inherit the lock and exit once they notice
their parent is gone), and the re-delivered step must not fail for that. ``flock`` is advisory
and per host; runs shared over NFS between hosts rely on the job system giving one run's
steps to one worker at a time.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from worker.pipeline.errors import InputError
from worker.pipeline.storage.rundir import RunDir

STEP_LOCK = ".lock"
PIPELINE_LOCK = ".pipeline.lock"
# Our in-progress marker: written into a new or empty --out before anything else, so a
# folder without run.json is taken for a run being made only if we made it (a folder that
# merely holds a file named curation.sqlite is the user's, not ours).
MARKER = ".tsne-curator-run"


def _ours(path: Path) -> bool:
    """Whether ``path`` is a run or a run in the making (our marker, or our run.json)."""
    if (path / MARKER).is_file():
        return True
    run = RunDir(path)
    return run.exists() and "steps" in run.read_meta()  # read_meta names a damaged file


def claim_out_dir(path: Path, dataset_root: Path | None = None) -> None:
    """Make ``path`` a run folder, or refuse it in one line: a file, a folder holding
    anything that is not ours, a folder inside the dataset (whose class folders the run's
    own folders would join), or a place this user cannot write."""
    path = Path(path)
    denied = InputError(f"--out {path}: permission denied creating the run there; give a "
                        "folder this user can write")
    try:
        is_file = path.exists() and not path.is_dir()  # a parent it may not search: raises
    except PermissionError:
        raise denied from None
    if is_file:
        raise InputError(f"--out {path} is a file: give a folder for the run")
    if dataset_root is not None:
        root, target = Path(dataset_root).resolve(), path.resolve()
        if target == root or target.is_relative_to(root):
            raise InputError(f"--out {path} is inside the dataset folder {dataset_root}: "
                             "put runs somewhere else")
    if path.is_dir() and not _ours(path):
        others = [p.name for p in path.iterdir()]
        if others:
            raise InputError(f"--out {path} already holds {len(others)} file(s) and is not "
                             "a run: give a new or empty folder, or an existing run")
    try:
        path.mkdir(parents=True, exist_ok=True)
        (path / MARKER).touch()
    except PermissionError:
        raise denied from None
    except OSError as exc:
        raise InputError(f"--out {path} cannot be made a folder ({exc.strerror}): give "
                         "another place") from None


@contextmanager
def run_lock(run: RunDir, what: str, name: str = STEP_LOCK,
             wait: float = 0.0) -> Iterator[None]:
    """Hold ``run``'s lock ``name`` for the body. If someone else holds it, refuse at once,
    or wait up to ``wait`` seconds for them (``math.inf``: for as long as it takes)."""
    run.path.mkdir(parents=True, exist_ok=True)
    lock_path = run.path / name
    fh = open(lock_path, "a+")  # noqa: SIM115 - held open for the lock's lifetime
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = lock_path.read_text().strip() or "another step"
                    raise InputError(f"{run.path} is busy: {holder} is writing it; wait for "
                                     "it to finish or choose another --out") from None
                time.sleep(0.2)
        fh.seek(0)
        fh.truncate()
        fh.write(f"{what} (pid {os.getpid()})")
        fh.flush()
        try:
            yield
        finally:
            fh.seek(0)
            fh.truncate()
            fcntl.flock(fh, fcntl.LOCK_UN)
    finally:
        fh.close()
