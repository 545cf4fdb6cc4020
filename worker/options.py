"""Typed options as JSON job parameters and back: what a job record stores and a worker
reads. Unknown keys are dropped on the way in, so a record written by an older version
still opens."""

from __future__ import annotations

from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from .pipeline.embedding import EmbeddingOptions
from .pipeline.features import FeatureOptions


def feature_params(opts: FeatureOptions) -> dict[str, Any]:
    """``opts`` as JSON, with the weights file as an absolute path (workers elsewhere)."""
    d = asdict(opts)
    d["weights"] = str(Path(opts.weights).resolve()) if opts.weights else None
    return d


def feature_opts(d: dict[str, Any]) -> FeatureOptions:
    """:class:`FeatureOptions` from :func:`feature_params`' JSON (checked as it is made)."""
    known = {f.name for f in fields(FeatureOptions)}
    d = {k: v for k, v in d.items() if k in known}
    if d.get("weights"):
        d["weights"] = Path(d["weights"])
    return FeatureOptions(**d)


def embedding_opts(d: dict[str, Any]) -> EmbeddingOptions:
    """:class:`EmbeddingOptions` from their JSON."""
    known = {f.name for f in fields(EmbeddingOptions)}
    return EmbeddingOptions(**{k: v for k, v in d.items() if k in known})
