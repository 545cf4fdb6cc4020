"""What the misuse tests of the command line and the Python API check of a refusal: one
``error:`` line on stderr, or one ``InputError`` line, and nothing written."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import tsne_curator as tc


def one_line(text: str) -> str:
    """The only line of a command's stderr (progress bars left out), an ``error:``."""
    lines = [ln for ln in text.splitlines() if ln.strip() and "%|" not in ln]
    assert len(lines) == 1 and lines[0].startswith("error:"), text
    assert "Traceback" not in text
    return lines[0]


def refused(call: Callable[[], object], out: Path | None, match: str) -> str:
    """``call()`` raises one InputError line matching ``match`` and ``out`` (the folder
    it would have made; None: the caller checks what else it could have written) stays
    absent."""
    with pytest.raises(tc.InputError, match=match) as e:
        call()
    assert "\n" not in str(e.value)
    if out is not None:
        assert not out.exists(), sorted(p.name for p in out.rglob("*"))
    return str(e.value)
