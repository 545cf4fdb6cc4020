"""Which WSGI server ``curator serve`` runs on: request latency and throughput of each.

Each server serves the same app (``app.server.create_app``) on one run, in its own child
process; a pool of client threads then requests what a browser asks for when it opens the
Curate page (the page, Dash's layout and dependencies, ``/ids.js``) and what it asks for
while a person works (thumbnails, ``/healthz``), in a fixed shuffled order. Printed per
server and client concurrency: median and p95 latency, requests per second, and the ratio
of p95 and of throughput against Flask's threaded development server measured in the
same run (the baseline: what ``curator serve`` ran on before).

Servers: ``flask`` (baseline), ``waitress`` (``curator serve``'s; ``--threads``) and
``gunicorn`` (one process with ``--threads`` threads, gthread; only when it is installed:
``pip install gunicorn``. It is not a dependency: one process keeps the run cache whole,
as more processes would hold a copy each).

    python -m bench.server --run runs/demo            # make demo builds runs/demo
    python -m bench.server --run runs/demo --requests 2000 --concurrency 1,8,32
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import statistics
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.browser import free_port
from bench.common import ROOT, machine

FLASK = ("from app.server import create_app; from worker.settings import load_settings; "
         "create_app(load_settings()).run(host='127.0.0.1', port={port}, threaded=True)")
WAITRESS = ("from app.server import serve; from worker.settings import load_settings; "
            "serve(load_settings())")


def start(server: str, run: Path, threads: int) -> tuple[subprocess.Popen, str]:
    """The server in a child process, once ``/healthz`` answers; and its base URL."""
    port = free_port()
    env = {**os.environ, "CURATOR_RUNS_ROOT": str(run.parent), "CURATOR_BROKER_URL": "",
           "CURATOR_PORT": str(port), "CURATOR_SERVER_THREADS": str(threads),
           "PYTHONPATH": str(ROOT)}
    if server == "flask":
        argv = [sys.executable, "-c", FLASK.format(port=port)]
    elif server == "waitress":
        argv = [sys.executable, "-c", WAITRESS]
    else:
        argv = [sys.executable, "-m", "gunicorn", "--workers", "1", "--threads", str(threads),
                "--bind", f"127.0.0.1:{port}", "app.wsgi:application()"]
    proc = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    end = time.monotonic() + 120
    while time.monotonic() < end:
        try:
            urllib.request.urlopen(url + "/healthz", timeout=2)
            return proc, url
        except OSError:
            if proc.poll() is not None:
                break
            time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"{server} did not start")


def paths(run: Path, n: int, seed: int = 0) -> list[str]:
    """``n`` request paths: the page's own requests and thumbnails, shuffled."""
    page = [f"/curate/{run.name}", "/_dash-layout", "/_dash-dependencies", "/ids.js",
            "/healthz"]
    count = sum(1 for _ in open(run / "samples.csv")) - 1
    rng = random.Random(seed)
    out = [page[i % len(page)] if i % 2 else f"/thumb/{run.name}/{rng.randrange(count)}.png"
           for i in range(n)]
    rng.shuffle(out)
    return out


def load(url: str, todo: list[str], concurrency: int) -> tuple[list[float], float]:
    """Each request's seconds, and the wall time of them all."""

    def one(path: str) -> float:
        t = time.perf_counter()
        with urllib.request.urlopen(url + path, timeout=60) as r:
            r.read()
        return time.perf_counter() - t

    for p in set(todo):  # warm: first-request work (page registry, caches) is not measured
        one(p)
    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        lat = list(pool.map(one, todo))
    return lat, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", type=Path, default=ROOT / "runs" / "demo")
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--concurrency", default="1,8")
    ap.add_argument("--threads", type=int, default=8, help="server request threads")
    a = ap.parse_args()
    if not (a.run / "samples.csv").is_file():
        raise SystemExit(f"{a.run}: not a run (make demo builds runs/demo)")
    servers = ["flask", "waitress"]
    if importlib.util.find_spec("gunicorn"):
        servers.append("gunicorn")
    todo = paths(a.run, a.requests)
    print(f"# WSGI servers on {a.run.name}: {a.requests} requests (half thumbnails, half the "
          f"page's own), {a.threads} server threads · {machine()}")
    print(f"{'server':<9} {'clients':>7} {'p50 ms':>8} {'p95 ms':>8} {'req/s':>8} "
          f"{'p95 / flask':>12} {'req/s / flask':>14}")
    for conc in (int(c) for c in a.concurrency.split(",")):
        base: tuple[float, float] | None = None
        for server in servers:
            proc, url = start(server, a.run, a.threads)
            try:
                lat, wall = load(url, todo, conc)
            finally:
                proc.terminate()
                proc.wait(10)
            p50 = statistics.median(lat) * 1000
            p95 = statistics.quantiles(lat, n=20)[-1] * 1000
            rps = len(lat) / wall
            base = base or (p95, rps)
            print(f"{server:<9} {conc:>7} {p50:8.2f} {p95:8.2f} {rps:8.1f} "
                  f"{p95 / base[0]:11.2f}x {rps / base[1]:13.2f}x", flush=True)


if __name__ == "__main__":
    main()
