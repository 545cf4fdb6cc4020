"""What every test shares: the BLAS kernel and thread policy set before numpy loads, the
project's root (``ROOT``), and the order ``make test`` hands test files out in.

The fixtures that build runs, read ../shared/data or start services are the integration
tests' own (tests/integration/conftest.py); tests/README.md says which tests go where.
"""

from __future__ import annotations

import os
import sys

# One BLAS kernel on every x86-64 machine, so the seeded runs' golden values
# (tests/golden.py) hold on any CPU: OpenBLAS picks its kernel by CPU model (SkylakeX on
# most AVX-512 parts, Haswell on others, AMD Zen 5 included), the kernels round
# differently, and t-SNE carries that into the map (DBSCAN noise on the digits demo: 237
# flags with the SkylakeX kernel, 227 with Haswell's). Haswell's runs on every x86-64 CPU
# with AVX2. Set before numpy loads OpenBLAS; the `curator` subprocesses inherit it.
# `make test` sets it too, before pytest (and any plugin) imports numpy.
if "numpy" in sys.modules and "OPENBLAS_CORETYPE" not in os.environ:  # pragma: no cover
    sys.exit("tests: run them through `make test`, or set OPENBLAS_CORETYPE=Haswell first "
             "(numpy was imported before tests/conftest.py could set it)")
os.environ.setdefault("OPENBLAS_CORETYPE", "Haswell")
# Idle OpenMP threads sleep instead of spinning. Two pytest workers and their subprocesses
# share 2 cores, and torch's spinning threads took the CPU the other process needed: two torch
# processes side by side ran markedly faster with PASSIVE, and computed the same numbers
# (measured in docs/benchmarks.md, "The suite's time").
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from pathlib import Path  # noqa: E402 - after the BLAS kernel is chosen

import pytest  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"

# The files that take longest run first, so that the many short ones fill both pytest
# workers' ends instead of one long file running alone while the other worker idles:
# `make test` hands whole files out in this order (xdist's --dist loadfile
# --no-loadscope-reorder). Paths from tests/; the slowest tests and how the order came about
# are in docs/benchmarks.md, "The suite's time".
LONGEST_FIRST = ("integration/jobs/test_jobs.py", "integration/train/test_train.py",
                 "integration/pipeline/test_scale.py",
                 "integration/ui/test_curate_export_retrain.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The files in LONGEST_FIRST first, the rest as collected (a stable sort)."""
    def rank(item: pytest.Item) -> int:
        path = item.path
        name = path.relative_to(TESTS).as_posix() if path.is_relative_to(TESTS) else ""
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)


@pytest.fixture
def empty_caches():
    """Every in-process cache of the app and the test split emptied (they are per process),
    for the tests that count what a cache holds."""
    from app import caching
    from app import run_data as run_data_module
    from app.image_routes import _run_dataset
    from worker.pipeline.findings.testsplit import _read_paths

    caching.clear()
    run_data_module._STATES.clear()
    for cached in (run_data_module._load, _run_dataset, _read_paths):
        cached.cache_clear()


@pytest.fixture
def env(monkeypatch):
    """A clean environment: no ``CURATOR_*`` variable but those a test sets."""
    for name in list(os.environ):
        if name.startswith("CURATOR_"):
            monkeypatch.delenv(name)

    def set_(name: str, value: str) -> None:
        monkeypatch.setenv(f"CURATOR_{name}", value)
    return set_
