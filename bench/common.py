"""Helpers shared by the benchmark scripts: paths, timing, machine description."""

from __future__ import annotations

import os
import platform
import tarfile
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("CURATOR_SHARED_DATA", ROOT.parent / "shared" / "data")).resolve()


def machine() -> str:
    """One line: date, CPU count, platform, GPU if any."""
    import torch

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    return f"{date.today()} · {os.cpu_count()} cores · {platform.machine()} · {gpu}"


def timed(fn: Callable, repeat: int = 1) -> tuple[float, object]:
    """Best wall time of ``repeat`` calls, and the last result."""
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def cifar_folder(dest: Path = Path("/tmp/curator-bench")) -> Path:
    """The shared CIFAR-10 JPEG folder, unpacked once under ``dest``."""
    root = dest / "cifar10"
    if not (root / "train").is_dir():
        archive = SHARED / "cifar10-jpeg.tar.gz"
        if not archive.is_file():
            raise SystemExit(f"{archive} is missing: set CURATOR_SHARED_DATA")
        dest.mkdir(parents=True, exist_ok=True)
        with tarfile.open(archive) as tar:
            tar.extractall(dest, filter="data")
    return root
