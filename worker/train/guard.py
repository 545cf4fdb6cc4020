"""``python -m worker.train.guard PROGRAM ARGS…``: run PROGRAM so that it dies with its parent.

The launcher starts torchrun in its own session (so a cancel can signal the whole group),
which would let a training outlive the process that started it (``curator serve``
stopped, a worker killed) and go on writing into the run. This asks Linux to SIGTERM the
program when its parent dies (``PR_SET_PDEATHSIG``, kept across ``exec``) and then
becomes it; torchrun passes the SIGTERM on to its ranks. It is done here, after exec of a
fresh interpreter, rather than in ``preexec_fn``, which is unsafe in a threaded server.
Where prctl is missing (not Linux) the program simply runs.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def main() -> None:
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass
    os.execv(sys.argv[1], sys.argv[1:])


if __name__ == "__main__":
    main()
