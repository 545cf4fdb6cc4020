"""The retrain verdict names a winner whenever longer training cannot reverse it
(worker/train/verdict.py ``decide``): the four cases of who is still learning, on recorded
training readings (results.csv rows: accuracy per seed, converged, the gain over the last
window and the epochs), and the CIFAR-10N comparison."""

from __future__ import annotations

import pytest

from worker.train.verdict import compare, decide, reach_pp, recommend, verdict

BATCH = 64


def _rows(runs: dict[str, tuple[list[float], bool, float]], epochs: int = 20) -> list[dict]:
    """results.csv rows: per subset, (accuracies over seeds, converged, gain over the last
    window in pp)."""
    return [{"subset": s, "batch_size": BATCH, "final_test_acc": a, "train_size": 1000,
             "epochs": epochs, "converged": str(done), "gain_pp": gain, "loss_drop": 0.01}
            for s, (accs, done, gain) in runs.items() for a in accs]


FULL = [0.700, 0.702, 0.698]


FILTERED = [0.760, 0.762, 0.758]  # +6 pp over full, far outside the seeds' spread


def test_neither_learning_names_the_clear_winner():
    results = compare(_rows({"full": (FULL, True, 0.1), "filtered": (FILTERED, True, 0.2)}))
    assert recommend(results, BATCH) == "filtered"
    line = verdict(results, BATCH)
    assert "filtered is better than full" in line and line.endswith("; ship: filtered")
    assert "still learning" not in line


def test_a_leader_still_learning_is_named_for_its_lead_can_only_grow():
    results = compare(_rows({"full": (FULL, True, 0.1), "filtered": (FILTERED, False, 1.7)}))
    d = decide(results, BATCH)
    assert d.ship == "filtered" and d.caveat == "filtered was still learning: the gap can only grow"
    line = verdict(results, BATCH)
    assert "filtered is better than full" in line
    assert "still learning: filtered still gained 1.7 pp over its last 4 epochs" in line
    assert line.endswith("ship: filtered (filtered was still learning: the gap can only grow)")


def test_a_trailer_still_learning_within_reach_withholds_the_winner():
    # filtered 6 pp behind, gaining 1.7 pp a window of 4 epochs: 8.5 pp in 20 more epochs.
    results = compare(_rows({"full": (FILTERED, True, 0.1), "filtered": (FULL, False, 1.7)}))
    assert reach_pp(next(r for r in results if r.subset == "filtered")) == pytest.approx(8.5)
    assert recommend(results, BATCH) is None
    line = verdict(results, BATCH)
    assert line.startswith("batch 64: not converged: filtered still gained 1.7 pp")
    assert "no winner named: filtered could still overtake full (6.0 pp behind): run with " \
           "--epochs 40" in line
    assert "ship" not in line


def test_a_trailer_still_learning_out_of_reach_does_not_withhold():
    # 6 pp behind, gaining 0.9 pp a window: 4.5 pp at that rate over 20 more epochs.
    results = compare(_rows({"full": (FILTERED, True, 0.1), "filtered": (FULL, False, 0.9)}))
    assert recommend(results, BATCH) == "full (no curated subset is clearly better)"
    assert "still learning: filtered" in verdict(results, BATCH)


def test_both_learning_within_reach_withhold_and_far_apart_name_the_leader():
    near = compare(_rows({"full": (FULL, False, 2.0), "filtered": (FILTERED, False, 1.0)}))
    assert recommend(near, BATCH) is None  # full gains 10 pp at its rate: 6 pp is in reach
    far = compare(_rows({"full": (FULL, False, 0.6), "filtered": (FILTERED, False, 1.0)}))
    assert decide(far, BATCH).ship == "filtered"  # full's 3 pp cannot close 6 pp
    assert "the gap can only grow" in verdict(far, BATCH)


def test_a_run_too_short_to_judge_is_always_within_reach():
    rows = _rows({"full": (FILTERED, True, 0.1), "filtered": (FULL, False, 0.1)}, epochs=3)
    results = compare(rows)
    assert reach_pp(next(r for r in results if r.subset == "filtered")) == float("inf")
    assert recommend(results, BATCH) is None


def test_a_random_control_still_learning_never_withholds():
    results = compare(_rows({"full": (FULL, True, 0.1), "filtered": (FILTERED, True, 0.1),
                             "random": ([0.69, 0.70, 0.71], False, 3.0)}))
    assert recommend(results, BATCH) == "filtered"


def test_one_seed_names_no_winner_whoever_is_learning():
    results = compare(_rows({"full": ([0.70], True, 0.1), "filtered": ([0.76], False, 1.7)}))
    assert recommend(results, BATCH) is None
    line = verdict(results, BATCH)
    assert line.startswith("batch 64: not converged: filtered still gained 1.7 pp")
    assert "no winner named: one seed is no spread to judge a difference by" in line
    done = compare(_rows({"full": ([0.70], True, 0.1), "filtered": ([0.76], True, 0.1)}))
    assert "one seed: no spread to judge it by" in verdict(done, BATCH)
    assert recommend(done, BATCH) is None


def test_the_cifar10n_comparison_names_filtered_with_the_caveat():
    """CIFAR-10 with 40% human label noise (CIFAR-10N), 10,000 images, a small CIFAR
    ResNet, 2 seeds, scored on held-out images with their true labels: full 55.68% and
    converged; filtered 64.88 ± 0.28% and corrected 64.63%, still learning; random 54.68%,
    still learning (1.7 pp over its last 5 epochs). The seeds' accuracies are set to those
    means and spreads (full's and corrected's spread taken as filtered's)."""
    results = compare(_rows({
        "full": ([0.5548, 0.5588], True, 0.3),
        "filtered": ([0.6468, 0.6508], False, 1.7),
        "corrected": ([0.6443, 0.6483], False, 1.5),
        "random": ([0.5448, 0.5488], False, 1.7)}, epochs=25))
    d = decide(results, BATCH)
    assert d.ship == "filtered"
    assert d.caveat == "filtered was still learning: the gap can only grow"
    line = verdict(results, BATCH)
    assert "filtered is better than full by +9.20" in line
    assert line.endswith("ship: filtered (filtered was still learning: the gap can only grow)")


def test_the_results_page_and_the_report_say_the_same(tmp_path):
    """The Results page and ``run.experiment()``'s report (``verdict_report``) read the same
    results.csv and say the same verdict, with the converged column and the caveat."""
    import csv
    import sys

    from app.server import create_app
    from worker.settings import Settings
    from worker.train.experiment import verdict_report

    create_app(Settings(runs_root=tmp_path))  # Dash imports the pages as pages.<name>
    experiment_view = sys.modules["pages.results"].experiment_view

    rows = _rows({"full": (FULL, True, 0.1), "filtered": (FILTERED, False, 1.7)})
    with open(tmp_path / "results.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    want = verdict(compare(rows), BATCH)
    assert want in verdict_report(tmp_path)
    page = str(experiment_view(tmp_path))
    assert want in page and "the gap can only grow" in page
    assert "filtered still gained 1.7 pp over its last 4 epochs" in page  # converged: no


def test_a_seed_the_rule_could_not_judge_is_the_one_learning_fastest():
    rows = _rows({"full": (FILTERED, True, 0.1), "filtered": (FULL, False, 0.2)})
    rows[3]["gain_pp"] = ""  # one of filtered's seeds has no gain recorded
    results = compare(rows)
    assert reach_pp(next(r for r in results if r.subset == "filtered")) == float("inf")
    assert recommend(results, BATCH) is None


def test_the_clear_winner_is_chosen_over_a_noisier_higher_mean():
    results = compare(_rows({"full": (FULL, True, 0.1), "filtered": (FILTERED, True, 0.1),
                             "corrected": ([0.60, 0.95, 0.75], True, 0.1)}))
    assert recommend(results, BATCH) == "filtered"


def test_a_steps_value_that_is_no_number_reads_as_not_recorded():
    rows = _rows({"full": (FULL, True, 0.1), "filtered": (FILTERED, True, 0.1)})
    for r, steps in zip(rows, ("nan", "abc", "", "12", "12", "12"), strict=True):
        r["steps"] = steps
    assert {r.subset: r.steps for r in compare(rows)} == {"full": 0, "filtered": 12}
