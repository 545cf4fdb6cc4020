"""bench/peer_findings.py's hand-applied FiftyOne Brain rules (numpy only; the cleanlab and
fastdup peers need the bench venv and are not tested here) and its OUT.json contract."""

from __future__ import annotations

import json

import numpy as np

from bench import peer_findings as pf


def _points(seed: int = 0, n: int = 40, d: int = 16) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, d)).astype(np.float32)


def test_find_duplicates_keeps_the_first_of_each_group():
    x = _points()
    x = np.concatenate([x, x[[3, 3, 7]], x[[7]] * 1.001])  # rows 40, 41 copy 3; 42, 43 copy 7
    keep, neighbors, nn = pf._fo_find_duplicates(x, pf.FIFTYONE_THRESHOLD)
    assert np.flatnonzero(~keep).tolist() == [40, 41, 42, 43]
    assert neighbors == {3: [40, 41], 7: [42, 43]}
    assert nn[[3, 40, 7]].max() < 1e-4 and nn[:3].min() > pf.FIFTYONE_THRESHOLD


def test_uniqueness_is_fiftyones_weighted_knn_distance():
    x = _points(1)
    u = pf._fo_uniqueness(x)
    xc = pf._unit(x - x.mean(axis=0))
    d = np.clip(1 - xc @ xc.T, 0, 2)
    np.fill_diagonal(d, np.inf)
    want = (np.sort(d, axis=1)[:, 1:4] * [0.6, 0.3, 0.1]).mean(axis=1)
    np.testing.assert_allclose(u, want / want.max(), rtol=1e-5, atol=1e-6)
    assert pf._fo_uniqueness(x[:3]).tolist() == [1, 1, 1]


def test_cli_writes_per_sample_findings(tmp_path):
    train, test = _points(2), _points(3, n=10)
    test[0] = train[5]  # a leak
    train[9] = train[4]  # a duplicate
    np.save(tmp_path / "F.npy", train)
    np.save(tmp_path / "T.npy", test)
    np.save(tmp_path / "L.npy", np.arange(len(train)) % 3)
    (tmp_path / "list.txt").write_text("".join(f"/x/{i}.jpg\n" for i in range(len(train))))
    out = tmp_path / "out.json"
    assert pf.main(["--peer", "fiftyone", "--features", str(tmp_path / "F.npy"),
                    "--labels", str(tmp_path / "L.npy"), "--images", str(tmp_path / "list.txt"),
                    "--test-features", str(tmp_path / "T.npy"), "--out", str(out)]) == 0
    r = json.loads(out.read_text())
    assert (r["n"], r["n_test"]) == (40, 10)
    for kind in ("duplicate", "outlier", "leak"):
        assert len(r[kind]["flag"]) == len(r[kind]["score"]) == 40 and r[kind]["seconds"] >= 0
    assert np.flatnonzero(r["duplicate"]["flag"]).tolist() == [9]
    assert r["duplicate"]["group"][4] == r["duplicate"]["group"][9] >= 0
    assert np.flatnonzero(r["leak"]["flag"]).tolist() == [5]
    assert not any(r["outlier"]["flag"]) and "note" in r["outlier"]


def test_the_plain_cosine_cut_pairs_each_sample_with_its_nearest():
    """bench/held_out_peers.py's no-tool baseline, against brute force: nearest by
    uncentred cosine (self excluded; across sets for leaks), and groups of the pairs at or
    above the cut, both ends flagged."""
    from bench.held_out_peers import cosine_groups, nearest_cosine

    x = _points(4)
    x[10] = x[2] * 3 + 0.01  # a near-copy of 2 (cosine ≈ 1, a larger norm)
    x[11] = x[2] * 0.5  # and another
    nn, sim = nearest_cosine(x)
    u = pf._unit(x)
    c = u @ u.T
    np.fill_diagonal(c, -np.inf)
    assert nn.tolist() == c.argmax(1).tolist()
    np.testing.assert_allclose(sim, c.max(1), atol=1e-5)
    group = cosine_groups(nn, sim, 0.99)
    assert np.flatnonzero(group >= 0).tolist() == [2, 10, 11]
    assert len(set(group[[2, 10, 11]].tolist())) == 1
    t_nn, t_sim = nearest_cosine(x[:5], x[5:])
    assert t_nn.tolist() == (u[:5] @ u[5:].T).argmax(1).tolist()
    assert t_nn[2] in (5, 6)  # rows 10, 11 of x
