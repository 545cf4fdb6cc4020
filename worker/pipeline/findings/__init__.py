"""Findings: every kind of harmful sample, one registry (docs/method.md, "Findings").

Importing this package registers the built-in kinds, in the order they are shown:
``label`` (wrong labels: the adaptive rule), ``duplicate``, ``leak`` and ``outlier``.
"""

from __future__ import annotations

from . import duplicate, label, leak, outlier  # noqa: F401 - each registers its kind
from .base import DROP, REVIEW, FindingKind, FindingTable, View
from .files import load_findings
from .registry import REGISTRY, get_kind, kinds, register, unregister
from .step import default_drops, ensure_findings, marks, sample_findings

__all__ = ["DROP", "REGISTRY", "REVIEW", "FindingKind", "FindingTable", "View",
           "default_drops", "ensure_findings", "get_kind", "kinds", "load_findings", "marks",
           "register", "sample_findings", "unregister"]
