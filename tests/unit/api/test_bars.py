"""The notebook's progress bars (tsne_curator/bars.py): every step's progress goes through
tqdm's auto bar, which a notebook shows as a widget and a terminal as text."""

from __future__ import annotations

from tsne_curator.bars import progress_bar


def test_progress_bars_go_through_tqdm_auto(monkeypatch):
    import tqdm.auto

    made, written = [], []

    class Bar:
        def __init__(self, total: int, **kw) -> None:
            self.total, self.n = total, 0
            made.append(self)

        @staticmethod
        def write(text: str, **kw) -> None:
            written.append(text)

        def refresh(self) -> None:
            pass

        def close(self) -> None:
            pass

    monkeypatch.setattr(tqdm.auto, "tqdm", Bar)
    # Bars are for a terminal or a notebook (progress.bars_wanted): piped, none is made.
    monkeypatch.setattr("worker.pipeline.progress.bars_wanted", lambda: False)
    progress_bar()(1, 4, "embed: t-SNE")
    assert made == []
    monkeypatch.setattr("worker.pipeline.progress.bars_wanted", lambda: True)
    bar = progress_bar()
    bar(1, 4, "embed: t-SNE")
    assert len(made) == 1 and made[0].n == 1
    # A training: a warning is a line above the bars; its end reported twice is one bar.
    bar(0, 44, "train: plan: 2 epochs")
    bar(0, 44, "warning: 2 epochs are too few to judge convergence")
    bar(44, 44, "train: epoch 2/2 | test acc 0.727")
    bar(44, 44, "train: reused; test acc 0.727")
    assert len(made) == 2 and made[1].n == 44
    assert written == ["warning: 2 epochs are too few to judge convergence"]
    bar(0, 60, "train: plan: 3 epochs")  # the next training: a bar of its own
    assert len(made) == 3
