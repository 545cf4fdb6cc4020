"""tsne-curator from Python: make a run, read its findings as DataFrames, look at a class's
map, curate and export, in a notebook or a script.

A thin facade over ``worker.pipeline`` and the run's store: each call checks its arguments
as the ``curator`` command checks its flags and calls the functions the command calls, so
a run made or curated here is the same run for the CLI and the app (docs/api.md)::

    import tsne_curator as tc
    run = tc.pipeline("digits", out="runs/nb", inject_noise=0.1, seed=0)
    run.findings(kind="label").head()
    run.map("3")
"""

from __future__ import annotations

from tsne_curator.in_memory import from_arrays
from tsne_curator.people_api import add_token, revoke_token, tokens
from tsne_curator.pipeline_call import pipeline
from tsne_curator.run_handle import Run, open_run
from tsne_curator.serving import serve
from worker.pipeline.errors import InputError

open = open_run  # tc.open(path): the run at path

__all__ = ["InputError", "Run", "add_token", "from_arrays", "open", "pipeline",
           "revoke_token", "serve", "tokens"]
