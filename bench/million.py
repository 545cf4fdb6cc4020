"""A million files: ingest plus extraction of a folder of photograph-size JPEGs, with
img/s, peak memory and disk use, extrapolated to ImageNet's 1.28M files.

For each size N (default 20,000 and 200,000; the smaller folder is hard links to the first
files of the larger, written by bench/jpeg_folder.py), the script runs the command a user
runs, ``curator extract --dataset folder:DIR --out RUN`` (ingest, then extraction with the
default backbone), as a subprocess, and samples the resident memory of it and its decoding
processes every half second (a process tree's sum counts the pages the forked decoders
share with their parent more than once: an upper bound). Step times come from the run's
record. The baseline is the
same command on the smaller folder: a rate or per-image memory that holds from N/10 to N
is what the extrapolation to 1.28M assumes (time ∝ N; memory = a + b·N fitted to the two).

    python -m bench.million [--sizes 20000,200000] [--work /tmp/curator-bench/million]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

from bench.common import ROOT, cifar_folder, machine
from bench.jpeg_folder import write_folder

IMAGENET = 1_281_167
GB = 1024 ** 3


def tree_rss(pid: int) -> tuple[int, int]:
    """Resident bytes of ``pid`` and of it with all its descendants."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))

    def rss(p: int) -> int:
        try:
            with open(f"/proc/{p}/status") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
        return 0

    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += rss(p)
        todo.extend(children.get(p, []))
    return rss(pid), total


def du(path: Path) -> int:
    """Bytes in the files under ``path`` (or of the file)."""
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def linked_subset(src: Path, dest: Path, n: int) -> Path:
    """``dest`` holding hard links to the files 0..n-1 of a bench/jpeg_folder.py folder."""
    if dest.is_dir():
        return dest
    for cls in sorted(p for p in src.iterdir() if p.is_dir()):
        (dest / cls.name).mkdir(parents=True, exist_ok=True)
        for f in cls.glob("*.jpg"):
            if int(f.stem) < n:
                os.link(f, dest / cls.name / f.name)
    return dest


def measure(folder: Path, run: Path, n: int) -> dict:
    shutil.rmtree(run, ignore_errors=True)
    cmd = [sys.executable, "-m", "worker.cli", "extract", "--dataset", f"folder:{folder}",
           "--out", str(run), "--device", "cpu"]
    log = open(run.parent / f"{run.name}.log", "w")  # noqa: SIM115 - closed below
    t0 = time.time()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    peak_main = peak_tree = 0
    phase_peak = {"ingest": 0, "extract": 0}  # the process tree's, by step
    record = run / "run.json"
    while proc.poll() is None:
        main, tree = tree_rss(proc.pid)
        peak_main, peak_tree = max(peak_main, main), max(peak_tree, tree)
        try:
            phase = "extract" if "ingest" in json.loads(record.read_text())["steps"] \
                else "ingest"
        except (OSError, ValueError, KeyError):
            phase = "ingest"
        phase_peak[phase] = max(phase_peak[phase], tree)
        time.sleep(0.5)
    log.close()
    if proc.returncode:
        raise SystemExit(f"{cmd} failed: see {log.name}")
    steps = json.loads((run / "run.json").read_text())["steps"]
    at = {k: datetime.fromisoformat(v["at"]).timestamp() for k, v in steps.items()}
    return {"n": n, "ingest_s": at["ingest"] - t0, "extract_s": at["extract"] - at["ingest"],
            "total_s": time.time() - t0, "peak_main": peak_main, "peak_tree": peak_tree,
            "peak_ingest": phase_peak["ingest"], "peak_extract": phase_peak["extract"],
            "images": du(folder), "thumbs": du(run / "thumbnails.npy"),
            "features": du(run / "features.npy") + du(run / "cache")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="20000,200000")
    ap.add_argument("--work", type=Path, default=Path("/tmp/curator-bench/million"))
    a = ap.parse_args()
    sizes = sorted(int(s) for s in a.sizes.split(","))
    print(machine())
    a.work.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    big = write_folder(a.work / f"jpegs-{sizes[-1]}", sizes[-1], cifar_folder())
    print(f"folder of {sizes[-1]} files ready in {time.perf_counter() - t:.0f} s")
    rows = []
    for n in sizes:
        folder = big if n == sizes[-1] else linked_subset(big, a.work / f"jpegs-{n}", n)
        r = measure(folder, a.work / f"run-{n}", n)
        rows.append(r)
        print(f"N={n}: ingest {r['ingest_s']:.0f} s ({n / r['ingest_s']:.0f} img/s), extract "
              f"{r['extract_s']:.0f} s ({n / r['extract_s']:.0f} img/s), together "
              f"{n / (r['ingest_s'] + r['extract_s']):.0f} img/s; peak RSS "
              f"{r['peak_main'] / GB:.2f} GB (with its decoding processes "
              f"{r['peak_tree'] / GB:.2f} GB; ingest {r['peak_ingest'] / GB:.2f} GB, extract "
              f"{r['peak_extract'] / GB:.2f} GB); disk: images {r['images'] / GB:.2f} GB, "
              f"thumbnails {r['thumbs'] / GB:.2f} GB, features + cache "
              f"{r['features'] / GB:.2f} GB", flush=True)
    lo, hi = rows[0], rows[-1]
    slope = (hi["peak_tree"] - lo["peak_tree"]) / max(1, hi["n"] - lo["n"])
    at = hi["peak_tree"] + slope * (IMAGENET - hi["n"])
    scale = IMAGENET / hi["n"]
    print(f"rate_ratio={hi['n'] / (hi['ingest_s'] + hi['extract_s']) / (lo['n'] / (lo['ingest_s'] + lo['extract_s'])):.2f} "  # noqa: E501
          f"(img/s at N={hi['n']} over N={lo['n']})")
    print(f"extrapolated to {IMAGENET} files on this machine: ingest "
          f"{hi['ingest_s'] * scale / 60:.0f} min, extract {hi['extract_s'] * scale / 60:.0f} "
          f"min; peak RSS {at / GB:.2f} GB (fit a + b·N, b = {slope / 1024:.2f} kB/file); "
          f"disk: images {hi['images'] * scale / GB:.0f} GB, thumbnails "
          f"{hi['thumbs'] * scale / GB:.1f} GB, features + cache "
          f"{hi['features'] * scale / GB:.1f} GB")


if __name__ == "__main__":
    main()
