"""The peers (asynctm.peers: ours and the baseline adapters of asynctm.baselines) and the benchmark script, in a
few seconds each.

pyTsetlinMachine tests skip cleanly where it is not installed; the benchmark test needs the dataset
mirror (skipped with the reason without it), prepares WSD apple and Bike Sharing from it and runs on a tiny
subset in --quick mode.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from asynctm.peers import make_peer


def _noisy_xor(n: int, seed: int, noise: float = 0.1):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 2, (n, 12)).astype(np.uint8)
    y = np.logical_xor(X[:, 0], X[:, 1]).astype(np.int64)
    flip = rng.random(n) < noise
    return X, np.where(flip, 1 - y, y), y


def _need_pytm():
    return pytest.importorskip("pyTsetlinMachine.tm", reason="pyTsetlinMachine is not installed")


def test_peer_names():
    with pytest.raises(ValueError, match="unknown peer"):
        make_peer("nope", "classification", 10, 15, 3.9)
    with pytest.raises(ValueError, match="task"):
        make_peer("pytm", "ranking", 10, 15, 3.9)
    with pytest.raises(ValueError, match="even"):
        make_peer("pytm", "classification", 9, 15, 3.9)


@pytest.mark.parametrize("indexed", [True, False])
def test_pytm_peer_gets_our_hyperparameters_and_learns(indexed):
    _need_pytm()
    peer = make_peer("pytm", "classification", n_clauses=10, T=15, s=3.9, state_bits=8,
                     boost_true_positive=False, indexed=indexed, seed=3)
    tm = peer.model
    # The very numbers we passed reach the library, in its own vocabulary (clauses are per class in both).
    assert (tm.number_of_clauses, tm.T, tm.s, tm.number_of_state_bits) == (10, 15, 3.9, 8)
    assert tm.boost_true_positive_feedback == 0 and tm.indexed is indexed and tm.append_negated is True
    meta = peer.metadata()
    assert meta["library"] == "pyTsetlinMachine" and meta["indexed"] is indexed and meta["threads"] == 1
    assert meta["version"] == "0.6.6"
    assert meta["library_arguments"]["number_of_clauses"] == 10

    X, y_noisy, y_clean = _noisy_xor(4000, seed=1)
    # Labels other than 0..C-1 are mapped for the library and back.
    labels = np.array(["even", "odd"])
    for _ in range(20):
        peer.fit_epoch(X[:2000], labels[y_noisy[:2000]])
    assert peer.epochs_trained == 20
    pred = peer.predict(X[2000:])
    assert pred.dtype.kind == "U" and set(np.unique(pred)) <= {"even", "odd"}
    assert np.mean(pred == labels[y_clean[2000:]]) > 0.85
    # Clauses per class, as ours: two classes of 10 clauses each.
    assert len(tm.get_state()) == 2 and tm.get_state()[0][0].shape == (10,)


def test_pytm_regression_peer():
    _need_pytm()
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, (1000, 8)).astype(np.uint8)
    y = (X[:, :4] @ np.array([1.0, 2.0, 4.0, 8.0])) + 100.0
    peer = make_peer("pytm", "regression", n_clauses=60, T=40, s=2.0, seed=1)
    assert type(peer.model).__name__ == "RegressionTsetlinMachine"
    assert (peer.model.number_of_clauses, peer.model.T, peer.model.s) == (60, 40, 2.0)
    assert peer.metadata()["indexed"] is None
    for _ in range(15):
        peer.fit_epoch(X, y)
    mae = np.mean(np.abs(peer.predict(X) - y))
    assert mae < np.mean(np.abs(y - y.mean()))  # better than predicting the mean
    with pytest.raises(ValueError, match="append_negated"):
        make_peer("pytm", "regression", 10, 10, 2.0, append_negated=False)


def test_asynctm_peer_same_interface():
    X, y_noisy, y_clean = _noisy_xor(3000, seed=2)
    peer = make_peer("asynctm", "classification", n_clauses=10, T=15, s=3.9, boost_true_positive=False,
                     backend="cpu", n_threads=1, seed=5)
    for _ in range(20):
        peer.fit_epoch(X[:2000], y_noisy[:2000])
    assert peer.model.epochs_trained_ == 20
    assert np.mean(peer.predict(X[2000:]) == y_clean[2000:]) > 0.85
    meta = peer.metadata()
    assert meta["backend"] == "cpu" and meta["threads"] == 1 and meta["hyperparameters"]["n_clauses"] == 10


def test_pytm_cuda_peer_is_guarded():
    """Without a GPU (or the package) the CUDA peer refuses clearly and never imports pycuda.autoinit."""
    from asynctm.backends import cuda_available
    from asynctm.baselines.pytm_cuda import DISTRIBUTIONS
    from asynctm.provenance import dist_version

    if dist_version(*DISTRIBUTIONS) is not None and cuda_available():
        pytest.skip("a GPU and PyTsetlinMachineCUDA are present: the benchmark exercises this peer")
    with pytest.raises((ImportError, RuntimeError)):
        make_peer("pytm_cuda", "classification", 10, 15, 3.9)
    assert "pycuda.autoinit" not in sys.modules


def test_bench_helpers():
    from asynctm import benchmarking as bench

    data = {"X_train": np.arange(20).reshape(10, 2), "y_train": np.arange(10),
            "X_test": np.arange(8).reshape(4, 2), "y_test": np.arange(4)}
    sub = bench.subsample(data, 4, None, seed=0)
    assert len(sub["y_train"]) == 4 and np.all(np.diff(sub["y_train"]) > 0)  # file order kept
    assert np.array_equal(sub["X_train"][:, 0], 2 * sub["y_train"])
    assert len(sub["y_test"]) == 4
    assert bench.array_digest(a=np.zeros(3)) != bench.array_digest(a=np.zeros(4))
    assert bench.metric("classification", [0, 1, 1, 0], [0, 1, 0, 0]) == 75.0
    assert bench.metric("regression", [1.0, 3.0], [2.0, 1.0]) == 1.5


@pytest.mark.slow
def test_benchmark_quick_end_to_end(repo_root, mirror, tmp_path):
    _need_pytm()
    data = tmp_path / "data"
    for name in ("wsd_apple", "bike_sharing"):  # the registry's processed datasets, from the mirror
        raw = data / "raw" / name
        for step in (["fetch", name, "--raw-dir", str(raw), "--mirror", str(mirror)],
                     ["prepare", name, "--protocol", "paper", "--raw-dir", str(raw),
                      "--out", str(data / "processed" / name / "paper")]):
            subprocess.run([sys.executable, "-m", "asynctm.datasets", *step], check=True, capture_output=True)
    cmd = [sys.executable, str(repo_root / "benchmarks" / "bench_tm.py"), "--quick", "--settings", "apple,bike",
           "--max-train", "150", "--max-test", "80", "--epochs", "2", "--threads", "1,2",
           "--data-dir", str(data), "--out-dir", str(tmp_path), "--name", "smoke"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    record = json.loads((tmp_path / "smoke.json").read_text())
    assert record["quick"] is True and record["seed"] == 42
    assert record["versions"]["pyTsetlinMachine"] == "0.6.6" and record["versions"]["asynctm"]
    assert record["cpu"]["model"] and record["cpu"]["usable_cores"] >= 1
    assert record["threads"]["asynctm_cpu"] == [1, 2]
    assert [s["setting"] for s in record["settings"]] == ["apple", "bike"]
    apple, bike = record["settings"]
    assert apple["dataset"]["n_train"] == 150 and apple["dataset"]["n_test"] == 80
    assert apple["dataset"]["n_features"] == 3000 and len(apple["dataset"]["digest"]) == 64
    assert apple["dataset"]["source"]["raw_digest"] and apple["dataset"]["max_train"] == 150
    assert bike["dataset"]["n_features"] == 1389
    labels = {r["label"] for r in apple["results"]}
    assert {"asynctm cpu 1t", "asynctm cpu 2t", "pyTM indexed", "pyTM unindexed"} <= labels
    for setting in (apple, bike):
        assert setting["hyperparameters"]["n_clauses"] in (300, 1280)
        for r in setting["results"]:
            assert len(r["epoch_s"]) == 2 and all(t > 0 for t in r["epoch_s"])
            assert r["median_epoch_s"] > 0 and len(r["metric_per_epoch"]) == 2
            # every implementation saw the same hyperparameters
            assert r["metadata"]["hyperparameters"] == {
                k: setting["hyperparameters"][k] for k in r["metadata"]["hyperparameters"]}
    assert 0 <= apple["results"][0]["final_metric"] <= 100
    assert apple["comparison"]["baseline"] == "pyTM indexed"
    assert "pyTM indexed" in apple["comparison"]["speedup_vs_baseline"]
