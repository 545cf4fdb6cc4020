"""``curator findings`` and ``curator pipeline``'s injection flags: each bad input one line
and exit 2, and no progress bars when the output is not a terminal."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest


# --------------------------------------------------------------------------- bad input
def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "worker.cli", *args], capture_output=True,
                          text=True, timeout=300)


def _one_error_line(r: subprocess.CompletedProcess, message: str) -> None:
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip() and "%|" not in ln]
    assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0], r.stderr


@pytest.mark.parametrize("args, message", [
    (["--duplicate-threshold", "-1"], "--duplicate-threshold: must be a number > 0"),
    (["--duplicate-threshold", "abc"], "--duplicate-threshold: must be a number > 0"),
    (["--outlier-threshold", "0"], "--outlier-threshold: must be a number > 0"),
    (["--leak-threshold", "nan"], "--leak-threshold: must be a number > 0"),
    (["--top", "-2"], "--top: must be a whole number"),
    (["--kind", "nope"], "no finding kind 'nope': use one of"),
])
def test_findings_bad_input_is_one_line(fresh_run, args, message):
    findings = fresh_run.path / "findings"
    before = {p.name: p.stat().st_mtime_ns for p in findings.iterdir()}
    meta = fresh_run.run_json.read_bytes()
    _one_error_line(_cli("findings", str(fresh_run.path), *args), message)
    # Refused before any work: no table and no record was written again.
    assert {p.name: p.stat().st_mtime_ns for p in findings.iterdir()} == before
    assert fresh_run.run_json.read_bytes() == meta


def test_findings_of_a_folder_that_is_not_a_run(tmp_path):
    _one_error_line(_cli("findings", str(tmp_path / "none")), "is not a run")


@pytest.fixture
def byo_features(tmp_path) -> tuple[Path, Path]:
    """A tiny features: dataset (20 × 4 float32, two classes) with its labels CSV."""
    x = np.random.default_rng(0).normal(size=(20, 4)).astype(np.float32)
    np.save(tmp_path / "emb.npy", x)
    (tmp_path / "emb.csv").write_text("label\n" + "".join(f"{'ab'[i % 2]}\n" for i in range(20)))
    return tmp_path / "emb.npy", tmp_path / "emb.csv"


@pytest.mark.parametrize("flag, value", [("--inject-duplicates", "0.1"),
                                         ("--inject-outliers", "3"), ("--inject-leaks", "3")])
def test_injection_into_features_is_refused(byo_features, tmp_path, flag, value):
    feats, labels = byo_features
    out = tmp_path / "run"
    r = _cli("pipeline", "--dataset", f"features:{feats}", "--labels", str(labels),
             flag, value, "--out", str(out))
    _one_error_line(r, "--inject-duplicates, --inject-outliers and --inject-leaks need images")
    assert not out.exists()


@pytest.mark.parametrize("args, message", [
    (["--inject-duplicates", "1.5"], "--inject-duplicates: must be a number"),
    (["--inject-duplicates", "x"], "--inject-duplicates: must be a number"),
    (["--inject-outliers", "-1"], "--inject-outliers: must be a whole number"),
    (["--inject-outliers", "2.5"], "--inject-outliers: must be a whole number"),
    (["--duplicate-strength", "huge"], "--duplicate-strength: invalid choice: 'huge'"),
    (["--outlier-sources", "moon"], "--outlier-sources: invalid choice: 'moon'"),
    (["--duplicate-threshold", "0"], "--duplicate-threshold: must be a number > 0"),
    (["--duplicate-drop-threshold", "1.5"], "--duplicate-drop-threshold: must be a number"),
    (["--outlier-drop-threshold", "x"], "--outlier-drop-threshold: must be a number"),
])
def test_pipeline_injection_flags_bad_input_is_one_line(tmp_path, args, message):
    out = tmp_path / "run"
    _one_error_line(_cli("pipeline", "--dataset", "digits", *args, "--out", str(out)), message)
    assert not out.exists()


# --------------------------------------------------------------------------- clean output
def test_findings_listing_has_no_progress_bars_off_a_terminal(fresh_run):
    """Piped, ``curator findings --redo`` prints the listing and nothing
    else, on either stream; on a terminal its bars go to stderr, never into stdout."""
    import fcntl
    import os
    import pty
    import struct
    import termios

    r = _cli("findings", str(fresh_run.path), "--redo")
    assert r.returncode == 0, r.stderr
    assert "%|" not in r.stdout + r.stderr and "findings:" not in r.stderr, r.stderr
    assert r.stdout.strip()
    primary, secondary = pty.openpty()
    # A new terminal is 0 columns wide, and tqdm fits its bar to that: give it 80.
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    try:
        p = subprocess.run([sys.executable, "-m", "worker.cli", "findings",
                            str(fresh_run.path), "--redo"], stdout=subprocess.PIPE,
                           stderr=secondary, text=True, timeout=300)
        os.close(secondary)
        secondary = -1
        err = b""
        while True:
            try:
                chunk = os.read(primary, 65536)
            except OSError:  # the terminal's other end is closed: all read
                break
            if not chunk:
                break
            err += chunk
    finally:
        os.close(primary)
        if secondary >= 0:
            os.close(secondary)
    assert p.returncode == 0
    assert "%|" not in p.stdout and p.stdout == r.stdout
    assert b"%|" in err, err[-500:]
