"""``tc.pipeline`` (tsne_curator/pipeline_call.py) on digits with 10% injected noise, once
per module: findings with their kinds, a map figure, the same run as ``run_pipeline``'s,
and a second call that resumes and refuses other options."""

from __future__ import annotations

import plotly.graph_objects as go
import pytest

import tsne_curator as tc
from tsne_curator.tables import FINDING_COLUMNS
from worker.pipeline.curation.findings_report import findings_report
from worker.pipeline.errors import InputError


def _files(path) -> dict[str, bytes]:  # noqa: ANN001
    """Every file under ``path`` but the lock files (their holder line changes), by name."""
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*"))
            if p.is_file() and "lock" not in p.name and not p.name.startswith("curation.")}


@pytest.fixture(scope="module")
def api_run(tmp_path_factory):
    """A notebook's first call, once: digits with 10% injected noise."""
    return tc.pipeline("digits", out=tmp_path_factory.mktemp("nb") / "nbrun",
                       inject_noise=0.1, seed=0)


# -- tc.pipeline ---------------------------------------------------------------------------
def test_findings_have_kind_and_label_and_the_map_is_a_figure(api_run, digits_run):
    df = api_run.findings()
    print(df.head())
    assert list(df.columns) == list(FINDING_COLUMNS)
    assert "label" in set(df["kind"])
    assert type(api_run.map("3")) is go.Figure
    # The same run as run_pipeline's with the same options (the shared digits run).
    label = findings_report(digits_run, "label", top=0)["kinds"][0]
    assert (df["kind"] == "label").sum() == label["count"] > 0


def test_pipeline_again_resumes_and_other_options_are_refused(api_run):
    before = {p.name: p.stat().st_mtime_ns for p in api_run.path.glob("*.npy")}
    features = (api_run.path / "features.npy").read_bytes()
    again = tc.pipeline("digits", out=api_run.path, inject_noise=0.1, seed=0)
    assert again.path == api_run.path
    for name in ("embedding.npy", "thumbnails.npy"):  # not made again
        assert (api_run.path / name).stat().st_mtime_ns == before[name]
    assert (api_run.path / "features.npy").read_bytes() == features  # from the cache
    after = _files(api_run.path)
    with pytest.raises(InputError, match="other options"):
        tc.pipeline("digits", out=api_run.path, inject_noise=0.2, seed=0)
    with pytest.raises(InputError, match="perplexity"):
        tc.pipeline("digits", out=api_run.path, perplexity=-1)
    assert _files(api_run.path) == after
