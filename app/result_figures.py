"""The Results page's experiment figure, in a module a test can import without an app
(a page module registers itself with Dash when imported)."""

from __future__ import annotations

import statistics

import plotly.graph_objects as go

from worker.train.subsets import parse_subset
from worker.train.verdict import SubsetResult


def accuracy_vs_batch(results: list[SubsetResult]) -> go.Figure:
    """The paper's Fig. 6–7: each subset's mean test accuracy against the global batch
    size (log scale), with the seeds' standard deviation as error bars; a subset whose
    trainings had not converged at a batch size is drawn hollow there."""
    fig = go.Figure()
    for subset in sorted({r.subset for r in results}):
        mine = sorted((r for r in results if r.subset == subset), key=lambda r: r.batch_size)
        fig.add_trace(go.Scatter(
            x=[r.batch_size for r in mine], y=[100 * r.mean for r in mine], name=subset,
            mode="lines+markers", error_y={"type": "data", "array": [100 * r.sd for r in mine]},
            marker={"symbol": ["circle-open" if r.converged is False else "circle"
                               for r in mine], "size": 9},
            hovertemplate=f"{subset}: %{{y:.2f}}% at batch %{{x}}<extra></extra>"))
    fig.update_layout(height=260, margin=dict(l=50, r=10, t=10, b=40),
                      xaxis=dict(type="log", title="global batch size", tickformat="d"),
                      yaxis=dict(title="test accuracy (%)"),
                      legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0))
    return fig


def _seconds(rows: list[dict], subset: str, batch: int) -> float | None:
    """Mean wall-clock seconds of ``subset``'s trainings at ``batch``, choosing the subset
    (pruned@F's scoring) included; None where results.csv has no times."""
    times = [float(r["seconds"]) + float(r.get("subset_seconds") or 0) for r in rows
             if r["subset"] == subset and int(r["batch_size"]) == batch and r.get("seconds")]
    return statistics.mean(times) if times else None


def accuracy_vs_fraction(results: list[SubsetResult], rows: list[dict]) -> go.Figure | None:
    """Pruning by value: mean test accuracy against the fraction of the full set kept, a
    trace per pruning (``pruned``, ``pruned-easy``, …) and one for ``random@F``, each per
    batch size, with the seeds' standard deviation as error bars, ``full`` and
    ``filtered`` as single points (plain ``random`` and ``corrected`` are not on it); the
    hover gives each point's wall-clock time per training, the subset's scoring included.
    None when no ``@F`` subset was trained."""
    if not any(parse_subset(r.subset).fraction is not None for r in results):
        return None
    full = {r.batch_size: r.images for r in results if r.subset == "full"}
    batches = sorted({r.batch_size for r in results})
    fig = go.Figure()
    for batch in batches:
        n_full = full.get(batch) or max(r.images for r in results if r.batch_size == batch)
        groups: dict[str, list[SubsetResult]] = {}
        for r in results:
            name = parse_subset(r.subset)
            if r.batch_size == batch and (name.fraction is not None
                                          or name.kind in ("full", "filtered")):
                groups.setdefault(r.subset.partition("@")[0], []).append(r)
        for head, mine in sorted(groups.items()):
            mine.sort(key=lambda r: r.images)
            secs = [_seconds(rows, r.subset, batch) for r in mine]
            name = head if len(batches) == 1 else f"{head} · batch {batch}"
            fig.add_trace(go.Scatter(
                x=[r.images / n_full for r in mine], y=[100 * r.mean for r in mine],
                name=name, mode="lines+markers" if len(mine) > 1 else "markers",
                error_y={"type": "data", "array": [100 * r.sd for r in mine]},
                marker={"symbol": ["circle-open" if r.converged is False else "circle"
                                   for r in mine], "size": 9},
                customdata=[[r.subset, r.images, "-" if t is None else f"{t:.0f} s"]
                            for r, t in zip(mine, secs, strict=True)],
                hovertemplate="%{customdata[0]}: %{y:.2f}% on %{customdata[1]:,} images "
                              "(%{x:.0%} of full), %{customdata[2]} a training<extra></extra>"))
    fig.update_layout(height=260, margin=dict(l=50, r=10, t=10, b=40),
                      xaxis=dict(title="fraction of the full set kept", tickformat=".0%"),
                      yaxis=dict(title="test accuracy (%)"),
                      legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0))
    return fig
