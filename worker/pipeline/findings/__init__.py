"""Findings: every kind of harmful sample, one registry (docs/method.md, "Findings").

Importing this package registers every kind in ``detectors/``, shown in their ``order``:
``label`` (wrong labels: the adaptive rule), ``duplicate``, ``leak`` and ``outlier``.
"""

from __future__ import annotations

from worker.pipeline.findings import detectors  # noqa: F401 - registers every kind
from worker.pipeline.findings.base import DROP, REVIEW, FindingKind, FindingTable, View
from worker.pipeline.findings.files import load_findings
from worker.pipeline.findings.kind_registry import REGISTRY, get_kind, kinds, register, unregister
from worker.pipeline.findings.step import (
    DROPPED,
    KEPT,
    PROPOSED,
    default_drops,
    ensure_findings,
    marks,
    proposals,
    sample_decisions,
    sample_findings,
)

__all__ = ["DROP", "DROPPED", "KEPT", "PROPOSED", "REGISTRY", "REVIEW", "FindingKind",
           "FindingTable", "View", "default_drops", "ensure_findings", "get_kind", "kinds",
           "load_findings", "marks", "proposals", "register", "sample_decisions", "sample_findings",
           "unregister"]
