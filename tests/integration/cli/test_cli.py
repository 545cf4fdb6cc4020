"""The ``curator`` console script, run as a user would, in a subprocess."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.golden import check_digits_evaluation

CURATOR = shutil.which("curator", path=str(Path(sys.executable).parent)) or "curator"


def curator(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([CURATOR, *args], capture_output=True, text=True, cwd=cwd,
                          timeout=600)


def test_digits_demo_end_to_end(tmp_path):
    """Pipeline + evaluate on digits with 10% noise: the golden flags and F1
    (tests/golden.py)."""
    out = tmp_path / "demo"
    r = curator("pipeline", "--dataset", "digits", "--inject-noise", "0.1", "--seed", "0",
                "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "total" in r.stdout and "1797" in r.stdout
    for name in ("run.json", "samples.csv", "features.npy", "embedding.npy", "curation.sqlite",
                 "thumbnails.npy", "clusters.npy"):
        assert (out / name).is_file(), name
    r = curator("evaluate", str(out), "--json")
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    check_digits_evaluation(result)
    assert set(result["cleanlab"]) == {"logreg", "knn"}
    # A re-run reuses every step and gives the same decisions.
    before = (out / "clusters.npy").read_bytes()
    r = curator("pipeline", "--dataset", "digits", "--inject-noise", "0.1", "--seed", "0",
                "--out", str(out))
    assert r.returncode == 0 and (out / "clusters.npy").read_bytes() == before
    # Curation from the CLI, then export.
    assert curator("override", str(out), "drop", "3", "4").returncode == 0
    assert "undid" in curator("undo", str(out)).stdout
    assert curator("cluster", str(out), "--min-samples", "8", "--auto").returncode == 0
    r = curator("export", str(out), "--format", "csv", "--dest", "v1")
    assert r.returncode == 0 and (out / "exports" / "v1" / "manifest.csv").is_file()


PIPE = ["pipeline", "--out", "{tmp}/r", "--dataset"]


@pytest.mark.parametrize("args, message", [
    ([*PIPE, "imagenet"], "unknown dataset spec"),
    ([*PIPE, "folder:{tmp}/nope"], "dataset folder not found"),
    ([*PIPE, "folder:{tmp}/empty"], "no class subfolders"),
    ([*PIPE, "digits", "--inject-noise", "2"], "inject-noise"),
    ([*PIPE, "digits", "--eps", "0"], "--eps: must be a number > 0"),
    ([*PIPE, "digits", "--min-samples", "0"], "--min-samples: must be a whole number"),
    (["embed", "{tmp}/none"], "is not a run"),
    (["evaluate", "{tmp}/none"], "is not a run"),
    (["extract", "--out", "{tmp}/r2"], "give --dataset"),
])
def test_user_mistakes_give_one_line_and_exit_2(tmp_path, args, message):
    (tmp_path / "empty").mkdir()
    r = curator(*[a.replace("{tmp}", str(tmp_path)) for a in args])
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip() and "%|" not in ln]
    assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0], r.stderr
    assert "Traceback" not in r.stderr


def test_export_errors_on_a_real_run(digits_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(digits_run.path, run)
    r = curator("export", str(run), "--dest", "../escape")
    assert r.returncode == 2 and "invalid export name" in r.stderr
    assert not (run / "escape").exists() and not (tmp_path / "escape").exists()
    assert curator("export", str(run), "--dest", "a").returncode == 0
    r = curator("export", str(run), "--dest", "a")
    assert r.returncode == 2 and "already exists" in r.stderr
    r = curator("pipeline", "--dataset", "digits", "--out", str(run))
    assert r.returncode == 2 and "was made from digits with other options" in r.stderr


def test_help_imports_nothing_heavy_and_shows_defaults_and_an_example():
    """`curator --help` must start in well under a second: no torch, numpy or sklearn."""
    r = subprocess.run([sys.executable, "-X", "importtime", "-m", "worker.cli", "--help"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "example:" in r.stdout and "``" not in r.stdout
    loaded = {ln.rsplit("|", 1)[1].strip() for ln in r.stderr.splitlines() if "|" in ln}
    assert not loaded & {"torch", "numpy", "sklearn", "scipy", "PIL", "dash", "celery"}, loaded
    sub = curator("retrain", "--help")
    assert "(default: 1)" in sub.stdout and "example:\n  curator retrain" in sub.stdout
    assert curator("--version").stdout.startswith("curator ")


def test_the_app_and_the_job_clients_start_without_torch(digits_run, tmp_path):
    """The app's start and the commands that submit, list or cancel jobs import no torch
    (about 3 s of a process's start on 2 cores); ``curator worker`` loads it once, before
    its pool processes fork."""
    code = ("import sys; from app.server import create_app; create_app(); "
            "import worker.jobs.client, worker.jobs.dispatchers; "
            "print(sorted({'torch', 'torchvision', 'openTSNE'} & set(sys.modules)))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120, env={**os.environ, "CURATOR_RUNS_ROOT": str(tmp_path)})
    assert r.returncode == 0 and r.stdout.strip() == "[]", (r.stdout, r.stderr)
    for args in (["jobs", str(digits_run.path)],
                 ["cancel", "nosuchjob", "--run", str(digits_run.path)]):
        r = subprocess.run([sys.executable, "-X", "importtime", "-m", "worker.cli", *args],
                           capture_output=True, text=True, timeout=60)
        loaded = {ln.rsplit("|", 1)[1].strip() for ln in r.stderr.splitlines() if "|" in ln}
        assert "torch" not in loaded, args


def test_params_prints_each_class_eps_and_counts(digits_run):
    r = curator("params", str(digits_run.path))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split()[:3] == ["class", "eps", "min_samples"]
    assert len(lines) == 2 + 10 + 1 and lines[-1].startswith("total")
    rows = json.loads(curator("params", str(digits_run.path), "--json").stdout)
    assert len(rows) == 11 and rows[0]["eps"] > 0 and rows[0]["min_samples"] >= 1
    assert sum(r["size"] for r in rows[:-1]) == rows[-1]["size"] == 1797


def test_a_busy_port_is_one_line_before_any_url(tmp_path):
    """The server used to print its URL and "running" and only then fail on a busy port."""
    import socket

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        r = curator("serve", "--runs-root", str(tmp_path), "--port", str(port))
    assert r.returncode == 2 and f"port {port} on 127.0.0.1 is in use" in r.stderr
    assert "http://" not in r.stdout and len(r.stderr.strip().splitlines()) == 1


def test_make_run_serves_on_curator_port():
    import os

    root = ROOT
    r = subprocess.run(["make", "-n", "run"], cwd=root, capture_output=True, text=True,
                       env={**os.environ, "CURATOR_PORT": "9123"}, timeout=60)
    assert r.returncode == 0 and "--port 9123" in r.stdout, r.stdout
