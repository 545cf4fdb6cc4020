"""Decoding images on the host: JPEGs at a reduced DCT scale, in processes sized to the host.

A 500-px photograph bound for a 160-px network or a 64-px thumbnail never needs its
full-size pixels: ``Image.draft`` has libjpeg decode at 1/2, 1/4 or 1/8 scale straight
from the DCT coefficients, several times faster than a full decode (bench/datapath.py).
Decoding is CPU-bound Python and C, so it runs in worker processes, not threads.
"""

from __future__ import annotations

import collections
import contextlib
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from PIL import Image

T = TypeVar("T")


def host_cores() -> int:
    """The cores this process may run on (its affinity mask, else the machine's count)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def decode_workers(requested: int | None = None) -> int:
    """Decoding processes beside a process that feeds a network: ``requested``, or by
    default all cores but the feeder's own (at least one)."""
    return requested if requested is not None else max(1, host_cores() - 1)


def draft_scale(width: int, height: int, min_side: int) -> int:
    """The DCT scale divisor (1, 2, 4 or 8) at which ``Image.draft`` decodes a JPEG of this
    size for ``min_side``: the largest that keeps both sides at least ``min_side`` (as
    PIL's JpegImagePlugin chooses it)."""
    most = min(width // min_side, height // min_side)
    return next((s for s in (8, 4, 2) if most >= s), 1)


def open_rgb(path: Path, min_side: int | None = None) -> tuple[Image.Image, tuple[int, int]]:
    """The image file at ``path`` in RGB, and its stored size (width, height).

    With ``min_side`` a JPEG decodes at the smallest DCT scale (1/2, 1/4 or 1/8) that keeps
    both its sides at least ``min_side``; other formats decode at full size.
    """
    with Image.open(path) as img:
        size = img.size
        if min_side and img.format == "JPEG":
            img.draft("RGB", (min_side, min_side))
        if img.mode == "RGB":  # a JPEG decodes straight to RGB: no converted copy
            img.load()
            return img, size
        return img.convert("RGB"), size


_TASK: Callable | None = None
AHEAD = 4  # tasks in flight per worker process


@contextlib.contextmanager
def children_allowed() -> Iterator[None]:
    """Let this process start decoding processes even where it is itself a daemonic one.

    A Celery prefork worker runs each job in a daemonic child, so that it dies with the
    worker, and multiprocessing refuses a daemonic process children ("daemonic processes
    are not allowed to have children"), lest they outlive it. Ours do not: they are
    stopped when their step ends, and die with their parent (:func:`ordered_map`'s by
    ``PR_SET_PDEATHSIG``, a DataLoader's by its watchdog). The killed-worker tests in
    tests/integration/jobs/test_jobs.py run this path.
    """
    config = multiprocessing.current_process()._config  # noqa: SLF001 - the flag's home
    daemon = config.get("daemon")
    if daemon:
        config["daemon"] = False
    try:
        yield
    finally:
        if daemon:
            config["daemon"] = daemon


def _die_with_parent() -> None:
    """Have the kernel kill this process when its parent dies (Linux; elsewhere a no-op)."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _start_worker(task: Callable) -> None:
    global _TASK
    _TASK = task
    _die_with_parent()
    # Ctrl-C reaches the whole process group: the parent stops the pool, so the workers
    # leave quietly instead of printing a traceback each.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run_task(i: int):  # noqa: ANN202 - whatever the task returns
    return _TASK(i)


def ordered_map(task: Callable[[int], T], n_tasks: int, workers: int) -> Iterator[T]:
    """``task(0)``, ``task(1)``, … ``task(n_tasks - 1)`` in order, computed by ``workers``
    forked processes (in this process when ``workers`` ≤ 1).

    ``task`` may be a closure: forked workers inherit it, nothing is pickled but the
    index and the result. At most ``AHEAD`` tasks per worker are in flight: ``Pool.imap``
    queues every task at once, and results the consumer has not taken yet pile up (at
    200,000 images, 5.6 kB of memory per image by the end of ingest; docs/benchmarks.md,
    "A million files").
    """
    if workers <= 1 or n_tasks <= 1:
        yield from map(task, range(n_tasks))
        return
    if multiprocessing.current_process().daemon:
        # Inside a Celery job a forked pool hung now and then at the end of an ingest
        # (test_cancel_stops_a_running_job, 1 run in 4): threads there
        # (PIL releases the GIL while it decodes).
        with ThreadPoolExecutor(workers) as ex:
            yield from (f.result() for f in _window(lambda i: ex.submit(task, i), n_tasks,
                                                    AHEAD * workers))
        return
    ctx = multiprocessing.get_context("fork")
    workers = min(workers, n_tasks)
    with children_allowed():
        pool = ctx.Pool(workers, initializer=_start_worker, initargs=(task,))
    with pool:
        yield from (r.get() for r in _window(lambda i: pool.apply_async(_run_task, (i,)),
                                             n_tasks, AHEAD * workers))


def _window(submit: Callable[[int], T], n_tasks: int, ahead: int) -> Iterator[T]:
    """``submit(0)``, ``submit(1)``, … in order, each made only when the one ``ahead``
    places before it has been taken."""
    pending = collections.deque(submit(i) for i in range(min(n_tasks, ahead)))
    queued = len(pending)
    while pending:
        handle = pending.popleft()
        if queued < n_tasks:
            pending.append(submit(queued))
            queued += 1
        yield handle
