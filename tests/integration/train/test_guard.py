"""A training started by the launcher dies with the process that started it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"  # a zombie has exited; only its parent's wait is missing


def test_a_guarded_program_dies_with_its_parent():
    # The parent starts the program as the launcher starts torchrun (own session), then
    # is SIGKILLed, as a stopped server or a killed worker would be.
    code = ("import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-m', "
            "'worker.train.guard', '/bin/sleep', '120'], start_new_session=True); "
            "print(p.pid, flush=True); time.sleep(120)")
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": os.getcwd()})
    child = int(parent.stdout.readline())
    time.sleep(1.0)  # the guard has exec'd sleep by now
    assert _alive(child)
    assert Path(f"/proc/{child}/cmdline").read_bytes().startswith(b"/bin/sleep")
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(child)
