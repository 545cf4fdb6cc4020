"""DDP retraining on CPU (gloo) with real torchrun subprocesses on the digits run."""

from __future__ import annotations

import csv
import json
import subprocess

import pytest

from tests.integration.conftest import CURATOR
from worker.pipeline.errors import InputError
from worker.pipeline.progress import Cancelled
from worker.pipeline.storage.curation_store import CurationStore
from worker.pipeline.storage.job_store import JobStore
from worker.train.launch import TrainConfig, launch, prepare, read_metrics, validate

pytestmark = pytest.mark.slow

# Where the network is not what a test is about, the smallest one (CIFAR ResNet-20, 0.27M
# parameters) keeps the suite short; the DDP test trains the default ResNet-18.
SMALL = "cifar-resnet20"


def test_two_process_gloo_training(fresh_run):
    seen = []
    summary = launch(fresh_run, TrainConfig(subset="filtered", epochs=3, batch_size=64,
                                            nproc=2, name="ddp"),
                     lambda d, t, m: seen.append((d, t, m)) and False)
    out = fresh_run.path / "train" / "ddp"
    assert summary["status"] == "completed" and summary["world_size"] == 2
    assert summary["final_test_acc"] > 0.5  # chance is 0.1
    a, b = (out / "rank0.checksum").read_text(), (out / "rank1.checksum").read_text()
    assert a == b and len(a.strip()) == 64  # the replicas agree
    rows = read_metrics(out)
    assert [r["epoch"] for r in rows] == [0, 1, 2]
    assert set(rows[0]) == {"epoch", "loss", "train_acc", "test_acc", "lr", "epoch_seconds",
                            "images_per_s", "test_acc_without_leaks", "test_leaked"}
    # Digits has no test split, so no leaks: the two accuracies are one.
    assert rows[-1]["test_leaked"] == 0
    assert rows[-1]["test_acc_without_leaks"] == rows[-1]["test_acc"]
    assert json.loads((out / "summary.json").read_text())["epochs_done"] == 3
    # Progress in optimizer steps: the plan first, then the bar fills to every step.
    total = json.loads((out / "config.json").read_text())["total_steps"]
    assert seen[0][2].startswith("train: plan: ") and seen[-1][0] == seen[-1][1] == total > 3
    assert summary["steps"] == total  # the optimizer steps the loop ran, as planned


def test_cancel_keeps_a_checkpoint_and_resume_continues(fresh_run):
    cfg = TrainConfig(subset="full", model=SMALL, epochs=3, batch_size=64, nproc=1,
                      name="resume")
    with pytest.raises(Cancelled):
        # Progress counts optimizer steps; the part after "|" is the last finished epoch.
        launch(fresh_run, cfg, lambda done, total, msg: "| epoch 1:" in msg)
    out = fresh_run.path / "train" / "resume"
    import torch

    ckpt = torch.load(out / "checkpoint.pt", weights_only=True)
    first = read_metrics(out)
    assert ckpt["epoch"] == first[-1]["epoch"] and len(first) < 3
    # The loop saw the stop between steps and said so (SIGTERM is handled, not fatal).
    assert json.loads((out / "summary.json").read_text())["status"] == "stopped"
    summary = launch(fresh_run, cfg)
    rows = read_metrics(out)
    assert [r["epoch"] for r in rows] == [0, 1, 2]  # each epoch once, resumed at the right one
    assert rows[0] == first[0]
    assert summary["status"] == "completed"


def test_a_compiled_training_learns_what_the_eager_one_learns(fresh_run):
    """``--compile default``: the same seed's first epoch, through
    torch.compile, within float noise of the eager one's; its own name, so neither reuses
    the other; a checkpoint an eager model loads (no compiled module's prefixes)."""
    import torch

    summaries = {how: launch(fresh_run, TrainConfig(subset="full", model=SMALL, epochs=1,
                                                    batch_size=64, compile=how))
                 for how in ("off", "default")}
    eager, compiled = (summaries[h] for h in ("off", "default"))
    assert compiled["config"]["compile"] == "default" and eager["config"]["compile"] == "off"
    names = sorted(p.name for p in (fresh_run.path / "train").iterdir())
    assert len(names) == 2 and sum("-cdefault-" in n for n in names) == 1
    rows = {h: read_metrics(fresh_run.path / "train" / s["config"]["name"])[0]
            for h, s in summaries.items()}
    assert rows["default"]["loss"] == pytest.approx(rows["off"]["loss"], rel=0.05)
    assert rows["default"]["train_acc"] == pytest.approx(rows["off"]["train_acc"], abs=0.05)
    ckpt = torch.load(fresh_run.path / "train" / compiled["config"]["name"] / "checkpoint.pt",
                      weights_only=True)
    plain = torch.load(fresh_run.path / "train" / eager["config"]["name"] / "checkpoint.pt",
                       weights_only=True)
    assert list(ckpt["model"]) == list(plain["model"])
    # A training prepared before --compile existed (no such key in its config.json) is
    # the eager one: asked for again, it is reused, not refused as "other settings".
    config = fresh_run.path / "train" / eager["config"]["name"] / "config.json"
    old = json.loads(config.read_text())
    del old["compile"]
    config.write_text(json.dumps(old))
    again = prepare(fresh_run, TrainConfig(subset="full", model=SMALL, epochs=1, batch_size=64))
    assert again.reused and again.out.name == eager["config"]["name"]


def test_compile_without_a_compiler_is_refused_in_one_line(monkeypatch, tmp_path):
    """torch.compile needs a C++ compiler (Inductor, on a CPU): without one, the first
    step would die in a traceback; the settings are refused before anything starts."""
    monkeypatch.setenv("PATH", str(tmp_path))  # a folder with no compiler in it
    monkeypatch.delenv("CXX", raising=False)
    with pytest.raises(InputError, match="--compile default needs a C/C.. compiler on PATH"):
        validate(TrainConfig(compile="default", device="cpu"))
    validate(TrainConfig(compile="off", device="cpu"))  # eager needs none


@pytest.mark.parametrize("cfg, message", [
    (TrainConfig(model="vgg16"), "unknown model"),
    (TrainConfig(batch_size=0), "--batch-size must be a whole number from 1"),
    (TrainConfig(batch_size=1, nproc=2), "smaller than the 2 processes"),
    (TrainConfig(nproc=64), "cannot run 64 processes"),
    (TrainConfig(subset="best"), "unknown subset"),
    (TrainConfig(compile="fast"), "unknown --compile 'fast': use off, default"),
])
def test_invalid_settings(cfg, message):
    with pytest.raises(InputError, match=message):
        validate(cfg)


def test_cli_errors_and_empty_subset(fresh_run):
    CurationStore(fresh_run.store).set_overrides(range(1797), "drop")
    for args, message in ((["--subset", "filtered"], "filtered subset is empty"),
                          (["--model", "vgg16"], "unknown model"),
                          (["--batch-size", "0"], "--batch-size: must be a whole number"),
                          (["--epochs", "0"], "--epochs: must be a whole number from 1"),
                          (["--nproc", "64"], "cannot run 64 processes")):
        r = subprocess.run([CURATOR, "retrain", str(fresh_run.path), *args],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 2 and r.stderr.startswith("error:") and message in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
    # Settings that can never run are refused before a job is recorded; the empty subset
    # is found by the job itself, which the Jobs page lists as failed with the same line.
    jobs = JobStore(fresh_run.store).list()
    assert [(j["kind"], j["status"], j["error"]) for j in jobs] == [
        ("train", "failed", "the filtered subset is empty: nothing would be trained on")]


def _tiny_experiment(run, name: str, subsets: str, batch_sizes: str,  # noqa: ANN001, ANN202
                     *more: str):
    """``curator experiment`` of one-epoch ResNet-20 trainings, one seed; it must succeed.
    Returns (the finished process, the experiment's folder)."""
    r = subprocess.run([CURATOR, "experiment", str(run.path), "--subsets", subsets,
                        "--batch-sizes", batch_sizes, "--seeds", "1", "--epochs", "1",
                        "--model", SMALL, "--name", name, *more],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    return r, run.path / "experiments" / name


def test_experiment_table_and_plot(fresh_run):
    r, out = _tiny_experiment(fresh_run, "tiny", "full,filtered,random", "64,128")
    rows = list(csv.DictReader(open(out / "results.csv")))
    assert len(rows) == 6 and {r["subset"] for r in rows} == {"full", "filtered", "random"}
    sizes = {r["subset"]: int(r["train_size"]) for r in rows}
    assert sizes["random"] == sizes["filtered"] < sizes["full"]
    # The steps budget (the default): the smaller subsets train more epochs, to at least
    # full's optimizer steps, and the plan said so before training.
    for batch in ("64", "128"):
        arm = {r["subset"]: r for r in rows if r["batch_size"] == batch}
        assert int(arm["filtered"]["steps"]) >= int(arm["full"]["steps"])
        assert int(arm["filtered"]["epochs"]) > int(arm["full"]["epochs"]) == 1
        assert {r["budget"] for r in arm.values()} == {"steps"}
    assert "experiment: plan: batch 64 (SGD), the same optimizer steps: full 1 epochs" \
        in r.stdout
    assert (out / "accuracy_vs_batch.png").read_bytes()[:4] == b"\x89PNG"
    summary = list(csv.DictReader(open(out / "summary.csv")))
    assert len(summary) == 6
    # One epoch is too few to have converged: every row says so, and each batch
    # size's verdict names no winner and says what to run instead.
    assert {row["converged"] for row in summary} == {"False"}
    assert {row["converged"] for row in rows} == {"False"}
    for batch in (64, 128):
        line = next(ln for ln in r.stdout.splitlines() if ln.startswith(f"batch {batch}: "))
        assert line.startswith(f"batch {batch}: not converged: ") and "too few epochs" in line
        assert "run with --epochs 4" in line and "ship" not in line and "better" not in line
    # Batch 128 on ~1,400 images is 11 steps per epoch: warned on stderr, not refused.
    assert "warning: batch 128" in r.stderr and "fewer than 20" in r.stderr
    # Started from a shell, it is a job like any other: the Jobs page lists it.
    [job] = JobStore(fresh_run.store).list()
    assert (job["kind"], job["status"], job["result"]) == (
        "experiment", "succeeded", {"experiment": "experiments/tiny"})
    assert job["done"] == job["total"] > 0 and len(job["params"]["configs"]) == 6


def test_pruned_and_random_subsets_train_end_to_end(fresh_run):
    """``--subsets full,pruned@0.5,random@0.5`` through the CLI's job:
    pruned@F and random@F the same size, about half of filtered, each timed with its
    subset's choice (the scoring) recorded; the verdict compares pruned@0.5 with its own
    control, and the Results page draws accuracy against the fraction kept. Two trainings
    at once (``--parallel 2``, item 4's several trainings sharing one device)."""
    from app.result_figures import accuracy_vs_fraction
    from worker.train.experiment import read_results
    from worker.train.verdict import compare

    r, out = _tiny_experiment(fresh_run, "prune", "full,pruned@.5,random@0.5", "64",
                              "--parallel", "2")
    rows = read_results(out)
    # The rows in the planned order whatever order the trainings ended in; the first two
    # ran at once (pruned@0.5's began before full's ended); each epoch line names its own.
    assert [row["subset"] for row in rows] == ["full", "pruned@0.5", "random@0.5"]
    folder = {row["subset"]: fresh_run.path / row["train_dir"] for row in rows}
    assert (folder["pruned@0.5"] / "config.json").stat().st_mtime < \
        (folder["full"] / "summary.json").stat().st_mtime
    assert "[full@64 s0] epoch 1: loss" in r.stdout
    assert "[pruned@0.5@64 s0] epoch 3: loss" in r.stdout
    [job] = JobStore(fresh_run.store).list()
    assert job["params"]["parallel"] == 2 and job["status"] == "succeeded"
    sizes = {row["subset"]: int(row["train_size"]) for row in rows}
    assert set(sizes) == {"full", "pruned@0.5", "random@0.5"}  # one name per subset
    assert sizes["pruned@0.5"] == sizes["random@0.5"] < 0.55 * sizes["full"]
    assert all(0 <= float(row["subset_seconds"]) < float(row["seconds"]) for row in rows)
    assert "experiment: plan: batch 64 (SGD), the same optimizer steps: full 1 epochs" \
        in r.stdout and "pruned@0.5 3 epochs = 30 steps" in r.stdout
    fig = accuracy_vs_fraction(compare(rows), rows)
    traces = {t.name: t for t in fig.data}
    assert set(traces) == {"full", "pruned", "random"}
    assert list(traces["full"].x) == [1.0]
    assert list(traces["pruned"].x) == [sizes["pruned@0.5"] / sizes["full"]]
    assert traces["pruned"].customdata[0][2].endswith(" s")


def test_streaming_path_for_images_that_are_not_in_memory(cifar_mini, tmp_path):
    """80 px images: thumbnails (64 px) are not the images, so DataLoader workers with a
    DistributedSampler read the files; the dataset's own test split is the test set."""
    from PIL import Image

    from worker.pipeline.features.feature_options import FeatureOptions
    from worker.pipeline.map.embedding import EmbeddingOptions
    from worker.pipeline.runner import run_pipeline
    from worker.pipeline.sources.datasets import parse_spec
    from worker.pipeline.sources.ingest import DatasetOptions
    from worker.pipeline.storage.rundir import RunDir

    root = tmp_path / "big"
    for split, n in (("train", 40), ("test", 10)):
        for c in ("airplane", "cat", "ship"):
            (root / split / c).mkdir(parents=True)
            for f in sorted((cifar_mini / split / c).glob("*.jpg"))[:n]:
                Image.open(f).resize((80, 80)).save(root / split / c / f.name)
    run = RunDir(tmp_path / "runs" / "big")
    run_pipeline(run, DatasetOptions(parse_spec(f"folder:{root}")), FeatureOptions(),
                 EmbeddingOptions())
    assert not run.read_meta()["thumbnails_exact"]
    summary = launch(run, TrainConfig(subset="full", model=SMALL, epochs=1, batch_size=16,
                                      nproc=2, name="stream"))
    out = run.path / "train" / "stream"
    assert summary["data"] == "streaming" and summary["test_source"] == "test split"
    assert summary["test_size"] == 30 and summary["status"] == "completed"
    assert (out / "rank0.checksum").read_text() == (out / "rank1.checksum").read_text()
    # The steps the loop ran (DataLoader batches) are the planner's: 120 // 2 // 8 = 7.
    planned = json.loads((out / "config.json").read_text())["total_steps"]
    assert summary["steps"] == summary["steps_per_epoch"] == planned == 7


def test_a_retrain_after_an_override_trains_anew_and_an_identical_one_is_reused(fresh_run):
    """A training is tied to its subset: never a stale result for another one."""
    def retrain() -> subprocess.CompletedProcess:
        return subprocess.run([CURATOR, "retrain", str(fresh_run.path), "--subset", "filtered",
                               "--epochs", "1", "--batch-size", "128", "--model", SMALL],
                              capture_output=True, text=True, timeout=600)

    from worker.train.data import select_subset
    from worker.train.plan import steps_per_epoch

    # The size follows the run's decisions (the rule, and the installed versions' last
    # bits in the map): read it, do not hard-code it.
    size = len(select_subset(fresh_run, "filtered", 0).indices)
    first = retrain()
    assert first.returncode == 0, first.stderr
    assert f"train: plan: {size:,} images, batch 128, 1 epochs" in first.stdout, first.stdout
    steps = steps_per_epoch(size, 128)
    assert steps < 20  # below the planner's warning threshold
    assert f"warning: batch 128 on {size:,} images gives {steps} optimizer steps" in first.stderr
    again = retrain()
    assert again.returncode == 0 and "reusing training" in again.stdout, again.stdout
    trainings = sorted((fresh_run.path / "train").iterdir())
    assert len(trainings) == 1
    before = json.loads((trainings[0] / "summary.json").read_text())
    store = CurationStore(fresh_run.store)
    store.set_overrides(range(40), "drop")
    third = retrain()
    assert third.returncode == 0 and "reusing" not in third.stdout, third.stdout
    trainings = sorted((fresh_run.path / "train").iterdir())
    assert len(trainings) == 2
    newest = max(trainings, key=lambda p: p.stat().st_mtime)
    after = json.loads((newest / "summary.json").read_text())
    assert after["config"]["subset_key"] != before["config"]["subset_key"]
    assert after["config"]["store_revision"] == store.revision()
    assert after["train_size"] < before["train_size"]
