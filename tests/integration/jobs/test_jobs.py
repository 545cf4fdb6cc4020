"""The job system end to end: real Redis, real ``curator worker`` subprocesses."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from tests.integration.conftest import CURATOR, Worker, redis_alive
from worker.pipeline.storage.job_store import JobStore

pytestmark = pytest.mark.slow


def _pipeline(env: dict, out: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([CURATOR, "pipeline", "--out", str(out), *extra], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_job(store: Path, kind: str, pred, timeout: float = 120) -> dict:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if store.is_file():
            for job in JobStore(store).list():
                if job["kind"] == kind and pred(job):
                    return job
        time.sleep(0.1)
    seen = [(j["kind"], j["status"], j["done"], j["total"], j["message"], j["worker"],
             j["attempts"]) for j in JobStore(store).list()] if store.is_file() else []
    raise AssertionError(f"no {kind} job reached the expected state in {timeout} s: {seen}")


def _slow_extract_args(cifar_mini: Path) -> list[str]:
    # Random-init ResNet-18 on 2,000 CIFAR JPEGs at 64 px in fp32: 32 progress steps over
    # ~4 s on 2 cores. (Ingest is a job of its own now, and at 32 px in bf16 the extract
    # job ended in about a second: a CI-like run never saw it running past its first
    # batch, and the kill test waited in vain.) The train folder alone, with no test split
    # beside it: these tests are about the extraction, and the test split's own job (its
    # 1,000 images through the same network) is test_the_test_splits_features_are_a_worker_job's.
    return ["--dataset", f"folder:{cifar_mini / 'train'}", "--model", "resnet18",
            "--batch-size", "64", "--precision", "fp32", "--input-size", "64"]


# After the extraction the chain's map is not what these tests are about: a short t-SNE.
_SHORT_MAP = ["--n-iter", "100", "--exaggeration-iter", "50"]


def test_queued_pipeline_equals_in_process(start_worker, broker_env, runs_root, digits_run):
    start_worker("w1")
    start_worker("w2")
    out = runs_root / "q"
    proc = _pipeline(broker_env, out, "--dataset", "digits", "--inject-noise", "0.1",
                     "--seed", "0")
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    assert "total" in stdout
    for name in ("features.npy", "embedding.npy", "clusters.npy", "knn_agreement.npy"):
        assert np.array_equal(np.load(out / name), np.load(digits_run.path / name)), name
    jobs = JobStore(out / "curation.sqlite").list()
    assert {j["kind"] for j in jobs} == {"ingest", "extract", "embed"}
    assert all(j["status"] == "succeeded" and j["worker"] for j in jobs)


def test_the_test_splits_features_are_a_worker_job(start_worker, broker_env, runs_root,
                                                   cifar_mini):
    """With a broker, the leak kind's input (the test split through the run's backbone) is
    an ``extract-test`` job on the gpu queue, like the train split's extraction, not work
    in the calling process."""
    start_worker("w1")
    out = runs_root / "split"
    proc = _pipeline(broker_env, out, "--dataset", f"folder:{cifar_mini}", "--split", "train",
                     "--model", "resnet18", "--input-size", "32", "--batch-size", "128")
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr
    jobs = {j["kind"]: j for j in JobStore(out / "curation.sqlite").list()}
    assert jobs["extract-test"]["status"] == "succeeded" and jobs["extract-test"]["worker"]
    assert jobs["extract-test"]["result"] == {"test_images": 1000}
    assert len(list((out / "cache").glob("test-features-*.npy"))) == 1
    assert any(" leak" in line for line in stdout.splitlines())  # the closing counts


def test_pool_process_killed_mid_extraction(start_worker, broker_env, runs_root, cifar_mini):
    start_worker("w1")
    start_worker("w2")
    out = runs_root / "kill"
    proc = _pipeline(broker_env, out, *_slow_extract_args(cifar_mini), *_SHORT_MAP)
    store = out / "curation.sqlite"
    job = _wait_job(store, "extract", lambda j: j["status"] == "running" and j["done"] > 64)
    victim = int(job["worker"].rsplit(":", 1)[1])
    os.kill(victim, signal.SIGKILL)
    # While the job is re-run, features.npy is either absent or complete: never partial.
    while proc.poll() is None:
        if (out / "features.npy").is_file():
            assert np.load(out / "features.npy").shape == (2000, 512)
        time.sleep(0.05)
    assert proc.returncode == 0, proc.stderr.read()
    job = JobStore(store).get(job["id"])
    assert job["status"] == "succeeded" and job["attempts"] >= 2
    assert not list(out.glob(".*.tmp*")) and not list((out / "cache").glob(".*.tmp*"))


def test_whole_worker_killed_then_new_worker_finishes(start_worker, broker_env, runs_root,
                                                      cifar_mini):
    first = start_worker("w1")
    out = runs_root / "crash"
    proc = _pipeline(broker_env, out, *_slow_extract_args(cifar_mini), *_SHORT_MAP)
    store = out / "curation.sqlite"
    job = _wait_job(store, "extract", lambda j: j["status"] == "running" and j["done"] > 0)
    first.kill_all()
    # The replacement starts at once, as a process supervisor would: the heartbeat is not
    # stale yet, so only the worker's periodic check can re-queue the job.
    second = start_worker("w2")
    requeued = _wait_job(store, "extract", lambda j: j["attempts"] >= 2, timeout=60)
    assert requeued["id"] == job["id"]
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    assert any("re-queued job" in ln for ln in second.log)
    assert "stopped answering" in stderr  # the waiting client said so
    assert JobStore(store).get(job["id"])["status"] == "succeeded"
    assert np.load(out / "features.npy").shape == (2000, 512)


def test_a_client_is_told_when_no_worker_consumes_its_queue(broker_env, runs_root):
    """No worker at all: the client says so while it waits instead of sitting silent (the
    notice comes after 3 s of waiting and a check of the workers; on a loaded host the
    client's own start can take longer than that, so the test waits for the line itself)."""
    log = runs_root / "lonely.stderr"
    with open(log, "w") as err:
        proc = subprocess.Popen([CURATOR, "pipeline", "--out", str(runs_root / "lonely"),
                                 "--dataset", "digits"], env=broker_env,
                                stdout=subprocess.DEVNULL, stderr=err, text=True)
        try:
            end = time.monotonic() + 120
            while time.monotonic() < end and "no worker is consuming" not in log.read_text():
                assert proc.poll() is None, log.read_text()  # still waiting, not failed
                time.sleep(0.2)
        finally:
            proc.terminate()
            proc.wait(30)
    assert "no worker is consuming the 'gpu' queue" in log.read_text()


def test_without_a_broker_a_dead_job_fails_and_cancel_ends_it(runs_root, fresh_run, cifar_mini):
    """The process running an embedded job is SIGKILLed: the job is reported failed (its
    heartbeat stopped), and cancelling a dead job ends it at once."""
    env = {**os.environ, "CURATOR_BROKER_URL": "", "CURATOR_STALE_AFTER": "3"}
    out = runs_root / "embedded"
    proc = subprocess.Popen([CURATOR, "pipeline", "--out", str(out),
                             *_slow_extract_args(cifar_mini)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    job = _wait_job(out / "curation.sqlite", "extract",
                    lambda j: j["status"] == "running" and j["done"] > 0)
    proc.kill()
    proc.communicate(timeout=30)
    time.sleep(4)
    r = subprocess.run([CURATOR, "jobs", str(out)], env=env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and "failed" in r.stdout and "no heartbeat" in r.stdout
    assert JobStore(out / "curation.sqlite").get(job["id"])["status"] == "failed"
    # A running job whose worker is gone: cancel ends it now, not "at its next step".
    jobs = JobStore(fresh_run.store)
    dead = jobs.create("export", {"format": "csv", "name": "x"})
    jobs.start(dead, "gone-host:1")
    with jobs._connect() as db:
        db.execute("UPDATE jobs SET heartbeat_at='2000-01-01T00:00:00+00:00' WHERE id=?",
                   (dead,))
    r = subprocess.run([CURATOR, "cancel", dead, "--run", str(fresh_run.path)], env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and f"job {dead}: cancelled" in r.stdout, r.stderr
    r = subprocess.run([CURATOR, "cancel", "x", "--run", str(runs_root / "nope")], env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and not (runs_root / "nope").exists()


def test_cancel_stops_a_running_job(start_worker, broker_env, runs_root, cifar_mini):
    start_worker("w1")
    out = runs_root / "cancel"
    proc = _pipeline(broker_env, out, *_slow_extract_args(cifar_mini), *_SHORT_MAP)
    store = out / "curation.sqlite"
    job = _wait_job(store, "extract", lambda j: j["status"] == "running" and j["done"] > 0)
    r = subprocess.run([CURATOR, "cancel", job["id"]], env=broker_env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and "running" in r.stdout, r.stderr
    done_at_cancel = JobStore(store).get(job["id"])["done"]
    job = _wait_job(store, "extract", lambda j: j["status"] == "cancelled", timeout=30)
    # Stopped within about half a second: a job reads its cancel flag when it writes its
    # progress, at most every 0.5 s (jobs/execution.py), and the data path keeps the
    # batches coming (3 batches of 64 in that window here, on 2 cores); far from the end.
    assert job["done"] <= done_at_cancel + 8 * 64 and job["done"] < job["total"] - 512
    assert proc.wait(60) == 130
    assert not (out / "features.npy").exists()
    r = subprocess.run([CURATOR, "jobs", str(out)], env=broker_env, capture_output=True,
                       text=True, timeout=60)
    assert "cancelled" in r.stdout


def test_wrong_broker_url_is_one_line(broker_env, runs_root):
    env = {**broker_env, "CURATOR_BROKER_URL": "redis://127.0.0.1:6399/0"}
    for args in (["pipeline", "--out", str(runs_root / "x"), "--dataset", "digits"],
                 ["worker"]):
        r = subprocess.run([CURATOR, *args], env=env, capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 2
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "cannot reach the broker" in lines[0], r.stderr


def test_redis_stopped_then_restarted(tmp_path, runs_root, fresh_run, broker_env):
    """A private Redis goes down while in use: clear errors, no curation lost, then recovery."""
    port = 6391
    url = f"redis://127.0.0.1:{port}/0"
    start = ["redis-server", "--daemonize", "yes", "--bind", "127.0.0.1", "--port", str(port),
             "--save", "", "--appendonly", "no"]
    subprocess.run(start, check=True, capture_output=True)
    try:
        for _ in range(50):
            if redis_alive(url):
                break
            time.sleep(0.1)
        env = {**broker_env, "CURATOR_BROKER_URL": url}
        run = runs_root / "digits"
        os.rename(fresh_run.path, run)
        assert subprocess.run([CURATOR, "override", str(run), "drop", "1", "2"],
                              env=env).returncode == 0
        worker = Worker(env, "w-outage").wait_ready()
        subprocess.run(["redis-cli", "-p", str(port), "shutdown", "nosave"], capture_output=True)
        r = subprocess.run([CURATOR, "pipeline", "--out", str(run)], env=env,
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and "cannot reach the broker" in r.stderr
        # Curation lives in the run's SQLite store, not in Redis: nothing was lost.
        r = subprocess.run([CURATOR, "export", str(run), "--dest", "after-outage"], env=env,
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        with open(run / "exports" / "after-outage" / "manifest.csv") as fh:
            reasons = [row["reason"] for row in csv.DictReader(fh)]
        assert reasons[1] == reasons[2] == "override_drop"
        subprocess.run(start, check=True, capture_output=True)
        for _ in range(100):
            if redis_alive(url):
                break
            time.sleep(0.1)
        # The worker reconnects by itself, and queued work runs again.
        r = subprocess.run([CURATOR, "pipeline", "--out", str(run), "--n-iter", "300"],
                           env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        worker.stop()
    finally:
        subprocess.run(["redis-cli", "-p", str(port), "shutdown", "nosave"], capture_output=True)


def _shard_jobs(out: Path) -> list[dict]:
    return [j for j in JobStore(out / "curation.sqlite").list() if j["kind"] == "extract-shard"]


def test_extraction_shared_out_survives_a_killed_worker_and_is_bit_identical(
        start_worker, broker_env, runs_root, cifar_mini):
    """Two workers share the extraction as 4 shards; one shard's pool process is killed
    mid-way, the shard is run again, and the merged features equal an in-process run's
    bit for bit."""
    start_worker("w1")
    start_worker("w2")
    out = runs_root / "sharded"
    proc = _pipeline(broker_env, out, *_slow_extract_args(cifar_mini), "--shards", "4",
                     *_SHORT_MAP)
    store = out / "curation.sqlite"
    victim_job = _wait_job(store, "extract-shard",
                           lambda j: j["status"] == "running" and j["done"] > 0)
    os.kill(int(victim_job["worker"].rsplit(":", 1)[1]), signal.SIGKILL)
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr
    shards = _shard_jobs(out)
    assert len(shards) == 4 and all(j["status"] == "succeeded" for j in shards)
    assert sorted((j["params"]["start"], j["params"]["stop"]) for j in shards) == [
        (0, 512), (512, 1024), (1024, 1536), (1536, 2000)]
    assert JobStore(store).get(victim_job["id"])["attempts"] >= 2
    # Both workers took part: the killed one, and the one that finished its shard.
    assert len({j["worker"] for j in shards} | {victim_job["worker"]}) >= 2
    kinds = [j["kind"] for j in JobStore(store).list()]
    assert "ingest" in kinds and "extract" not in kinds
    assert not list((out / "cache").glob("parts-*"))  # merged, then removed
    here = runs_root / "here"
    env = {k: v for k, v in broker_env.items() if k != "CURATOR_BROKER_URL"}
    r = subprocess.run([CURATOR, "extract", "--out", str(here), *_slow_extract_args(cifar_mini)],
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert np.array_equal(np.load(out / "features.npy"), np.load(here / "features.npy"))
    assert json.loads((out / "run.json").read_text())["steps"]["extract"]["cache_key"] == \
        json.loads((here / "run.json").read_text())["steps"]["extract"]["cache_key"]


@pytest.mark.parametrize("args, env_broker, message", [
    (["--shards", "2"], False, "--shards needs a broker"),
    (["--shards", "-1"], True, "--shards: must be a whole number from 0"),
    (["--shards", "2", "--finetune", "1"], True, "leave out --shards"),
])
def test_bad_shards_are_one_line(broker_env, runs_root, args, env_broker, message):
    env = dict(broker_env)
    if not env_broker:
        env.pop("CURATOR_BROKER_URL")
    proc = subprocess.run([CURATOR, "pipeline", "--out", str(runs_root / "x"), "--dataset",
                           "digits", *args], env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2 and message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert not (runs_root / "x" / "features.npy").exists()
