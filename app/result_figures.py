"""The Results page's experiment figure, in a module a test can import without an app
(a page module registers itself with Dash when imported)."""

from __future__ import annotations

import plotly.graph_objects as go

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
