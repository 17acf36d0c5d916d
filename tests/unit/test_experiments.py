"""The experiment plan (which records a configuration asks for) and the runner that writes one record."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import yaml
from sklearn.metrics import f1_score

from asynctm.datasets.base import ProcessedDataset, save_processed
from asynctm.experiments import plan
from asynctm.experiments.run import novelty_scores_path, run_tm


@pytest.fixture(scope="module")
def config(repo_root):
    return yaml.safe_load((repo_root / "config" / "config.yaml").read_text())


# -- plan -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("clauses, T, s, epochs, name", [
    (300, 50, 5.0, 100, "n300_T50_s5_e100"), (40, 15, 3.9, 100, "n40_T15_s3.9_e100"),
    (1280, 1280, 1.5, 2, "n1280_T1280_s1.5_e2"),
])
def test_params_names_round_trip(clauses, T, s, epochs, name):
    assert plan.tm_params_name(clauses, T, s, epochs) == name
    assert plan.parse_tm_params(name) == {"clauses": clauses, "T": T, "s": s, "epochs": epochs}


@pytest.mark.parametrize("bad", ["n300_T50_s5", "300_T50_s5_e100", "n300_T50_s5_e100_x", "nX_T50_s5_e1"])
def test_malformed_params_are_refused_with_the_expected_form(bad):
    with pytest.raises(plan.PlanError, match="n<clauses>_T<T>_s<s>_e<epochs>"):
        plan.parse_tm_params(bad)


def test_paper_plan_has_every_experiment_impl_and_seed(config):
    runs = plan.requested_runs(config, host_gpu=False)
    keys = {(r["experiment"], r["impl"], r["params"], r["seed"]) for r in runs}
    assert len(keys) == len(runs)
    for seed in range(5):
        assert ("wsd_apple", "tm_cpu", "n300_T50_s5_e100", seed) in keys
        assert ("wsd_apple", "pytm_indexed", "n300_T50_s5_e100", seed) in keys
        assert ("bike_sharing", "pytm_nonindexed", "n1280_T1280_s1.5_e100", seed) in keys
        assert ("bbc_sport", "mlp_novelty", "tm_cpu.n5000_T100_s15_e100", seed) in keys
        assert ("semeval", "svm", "linear_C1", seed) in keys
    # No GPU here: no tm_gpu runs; pyTsetlinMachine's regression machine has no index.
    assert not any(r["impl"] == "tm_gpu" for r in runs)
    assert not any(r["impl"] == "pytm_indexed" and r["experiment"] in ("bike_sharing", "blogfeedback") for r in runs)
    # Sweeps: every point, with the sweep's epochs and seeds; a point equal to the main setting is shared; an
    # implementation with max_clauses stops there (pyTsetlinMachine on SemEval at 640).
    assert ("semeval", "pytm_indexed", "n640_T15_s3.9_e5", 0) in keys
    assert ("semeval", "pytm_indexed", "n1280_T15_s3.9_e5", 0) not in keys
    assert ("semeval", "tm_cpu", "n15000_T15_s3.9_e5", 0) in keys
    assert ("imdb", "tm_cpu", "n15000_T80_s27_e5", 0) in keys
    assert ("bike_sharing", "tm_cpu", "n1280_T1280_s1.5_e100", 0) in keys


def test_a_sweep_limit_per_implementation(config):
    """max_clauses leaves an implementation's larger points out of the plan, the sweep and the figures' inputs."""
    from asynctm.artifacts import catalog

    sweeps = {**config["sweeps"], "bbc_sport": {**config["sweeps"]["bbc_sport"], "max_clauses": {"pytm_indexed": 1000}}}
    limited = {**config, "sweeps": sweeps}
    points = {(r["impl"], r["params"]) for r in plan.requested_runs(limited, host_gpu=False)
              if r["experiment"] == "bbc_sport" and r["params"].endswith("_e5")}
    assert ("pytm_indexed", "n1000_T100_s15_e5") in points and ("pytm_indexed", "n2000_T100_s15_e5") not in points
    assert ("tm_cpu", "n10000_T100_s15_e5") in points
    sweep = plan.sweep(limited, "bbc_sport")
    assert sweep.runs("pytm_indexed", 1000) and not sweep.runs("pytm_indexed", 2000) and sweep.runs("tm_cpu", 10000)
    assert not catalog._uses("sweep", limited, "bbc_sport", "pytm_indexed", "n2000_T100_s15_e5", 0)
    assert catalog._uses("sweep", config, "bbc_sport", "pytm_indexed", "n2000_T100_s15_e5", 0)


def test_gpu_runs_are_planned_where_a_gpu_is(config):
    runs = plan.requested_runs(config, host_gpu=True)
    assert {("wsd_apple", "n300_T50_s5_e100", s) for s in range(5)} <= {
        (r["experiment"], r["params"], r["seed"]) for r in runs if r["impl"] == "tm_gpu"}
    assert not plan.requested_runs({**config, "gpu": False}, host_gpu=True) == runs


def test_smoke_plan_shrinks_everything(config):
    smoke = {**config, "scale": "smoke"}
    runs = plan.requested_runs(smoke, host_gpu=False)
    assert {r["seed"] for r in runs} == {0}
    for r in runs:
        if r["kind"] == "tm":
            p = plan.parse_tm_params(r["params"])
            assert p["clauses"] <= 20 and p["epochs"] == 2
    assert plan.record_path(smoke, runs[0]).startswith("results/smoke/")
    assert {r["experiment"] for r in runs} == set(config["experiments"])
    assert {r["impl"] for r in runs} == {"tm_cpu", "pytm_indexed", "pytm_nonindexed", "svm", "mlp_novelty"}


def test_a_dataset_left_out_of_the_config_drops_its_experiments(config):
    runs = plan.requested_runs({**config, "datasets": ["wsd_java"]}, host_gpu=False)
    assert {r["experiment"] for r in runs} == {"wsd_java"}


def test_impossible_runs_are_refused(config):
    with pytest.raises(plan.PlanError, match="regression machine has no index"):
        plan.tm_run_settings(config, "bike_sharing", "pytm_indexed", "n1280_T1280_s1.5_e100", 0)
    with pytest.raises(plan.PlanError, match="odd"):
        plan.tm_run_settings(config, "wsd_apple", "tm_cpu", "n301_T50_s5_e100", 0)
    with pytest.raises(plan.PlanError, match="unknown experiment 'mnist'"):
        plan.tm_run_settings(config, "mnist", "tm_cpu", "n300_T50_s5_e100", 0)
    with pytest.raises(plan.PlanError, match="novelty experiments only"):
        plan.mlp_run_settings(config, "wsd_apple", "tm_cpu.n300_T50_s5_e100", 0)
    with pytest.raises(plan.PlanError, match="<tm impl>.<tm params>"):
        plan.mlp_run_settings(config, "bbc_sport", "svm.n300_T50_s5_e100", 0)


def test_settings_carry_the_experiment_overrides(config):
    st = plan.tm_run_settings(config, "bbc_sport", "tm_cpu", "n100_T100_s15_e5", 3)
    assert st["hyperparameters"] == {"n_clauses": 100, "T": 100, "s": 15.0, "epochs": 5, "state_bits": 8,
                                     "boost_true_positive": True, "batch_size": 100, "append_negated": False}
    assert st["task"] == "novelty" and st["seed"] == 3


def test_an_experiment_can_name_its_svm_library(config):
    """IMDb names scikit-learn (ThunderSVM's CPU build did not finish): its settings carry the library, and its
    runs take one thread; the others keep the automatic choice and their settings stay as they were."""
    from asynctm.experiments.estimate import run_threads

    assert plan.svm_run_settings(config, "imdb", "linear_C1", 0)["library"] == "sklearn"
    assert "library" not in plan.svm_run_settings(config, "wsd_apple", "linear_C1", 0)
    assert run_threads(config, "svm", 2, "imdb") == 1 and run_threads(config, "svm", 2, "wsd_apple") == 2
    forced = {**config, "experiments": {**config["experiments"],
                                        "wsd_apple": {**config["experiments"]["wsd_apple"],
                                                      "svm_library": "thundersvm-cpu"}}}
    assert plan.svm_run_settings(forced, "wsd_apple", "linear_C1", 0)["library"] == "thundersvm-cpu"


def test_the_gpu_benchmark_times_the_wide_builds_on_wide_inputs_only(config):
    """The config's rule: the wide builds (a block of 128 to 1,024 threads per clause, one build each) where a clause
    has at least 256 literal words (SemEval's 6,386, IMDb's 313), not on narrower inputs (WSD's 188, Bike Sharing's
    87) nor without the config's key; 128 threads keep the name tm_gpu_block of the records that have it, the others
    are named after their threads, and the sizes of shared_state follow (each of more than a warp, timed in global
    memory too or not), named with _shared; the GPU builds of the tables stay as they are."""
    from asynctm.backends import THREADS_PER_CLAUSE

    sizes = config["gpu_benchmark"]["wide_build"]["threads_per_clause"]
    shared = config["gpu_benchmark"]["wide_build"]["shared_state"]
    assert set(sizes) <= set(THREADS_PER_CLAUSE) and min(sizes) > 32 and 128 in sizes and 1024 in sizes
    assert set(shared) <= set(THREADS_PER_CLAUSE) and min(shared) > 32 and 128 in shared and 1024 in shared
    builds = {**{plan.wide_build_name(k): k for k in sizes}, **{f"{plan.wide_build_name(k)}_shared": k for k in shared}}
    assert builds[plan.WIDE_BUILD] == 128 and builds["tm_gpu_block1024"] == 1024
    assert builds["tm_gpu_block_shared"] == 128 and builds["tm_gpu_block1024_shared"] == 1024
    assert plan.WIDE_SHARED >= {"tm_gpu_block_shared", "tm_gpu_block1024_shared"}
    assert plan.WIDE_BUILD not in plan.WIDE_SHARED
    assert plan.wide_builds(config, 102176, True) == builds  # SemEval
    assert list(plan.wide_builds(config, 102176, True).values()) == [*sizes, *shared]  # in the config's order
    assert plan.wide_builds(config, 5000, True) == builds  # IMDb
    assert plan.wide_builds(config, 4081, True) == builds  # 256 words: the bound
    assert plan.wide_builds(config, 4080, True) == {}  # 255 words
    assert plan.wide_builds(config, 5000, False) == {}  # 157 words without the negations
    assert plan.wide_builds(config, 3000, True) == {}  # WSD
    assert plan.wide_builds({k: v for k, v in config.items() if k != "gpu_benchmark"}, 102176, True) == {}
    before = {k: v for k, v in config["gpu_benchmark"]["wide_build"].items() if k != "shared_state"}
    one = {**config, "gpu_benchmark": {"wide_build": {**before, "threads_per_clause": 128}}}
    assert plan.wide_builds(one, 102176, True) == {plan.WIDE_BUILD: 128}  # a staged config from before the list
    assert set(plan.WIDE_BUILDS) & (set(plan.GPU_IMPLS) | set(config["impls"])) == set()


def test_a_warp_per_clause_reaches_the_tm_gpu_warp_runs_only(config):
    """tm_gpu (the paper's one thread per clause) and every other run keep their settings as they were; tm_gpu_warp
    runs name a warp per clause in their hyperparameters, and the runner hands it to the estimator."""
    from asynctm.experiments.run import _with_switches
    from asynctm.peers import make_peer

    params = plan.main_params(config, "wsd_apple")
    assert "gpu_threads_per_clause" not in config
    for impl in ("tm_gpu", "tm_cpu"):
        assert "threads_per_clause" not in plan.tm_run_settings(config, "wsd_apple", impl, params, 0)["hyperparameters"]
    h = plan.tm_run_settings(config, "wsd_apple", "tm_gpu_warp", params, 0)["hyperparameters"]
    assert h["threads_per_clause"] == 32
    peer = _with_switches(make_peer("asynctm", "classification", h["n_clauses"], h["T"], h["s"]), h)
    assert peer.model.gpu_threads_per_clause == 32


# -- the runner ------------------------------------------------------------------------------------------

def _toy(tmp_path, task="classification", novel=False):
    """A small processed dataset on disk: class 1 iff feature 0 and feature 1 are both set."""
    rng = np.random.default_rng(5)
    X = (rng.random((400, 12)) < 0.5).astype(np.uint8)
    y = (X[:, 0] & X[:, 1]).astype(np.int64) if task != "regression" else (X[:, :4].sum(1) * 10.0)
    ds = ProcessedDataset(name="toy", protocol="paper", task=task, X_train=X[:300], y_train=y[:300],
                          X_test=X[300:], y_test=y[300:], feature_names=[f"f{i}" for i in range(12)],
                          X_novel=(rng.random((50, 12)) < 0.5).astype(np.uint8) if novel else None,
                          meta={"raw_digest": "abc"})
    save_processed(ds, tmp_path / "data" / "processed" / "toy" / "paper")
    return ds


def _settings(impl="tm_cpu", task="classification", epochs=3, seed=1):
    return {"kind": "tm", "experiment": "toy", "impl": impl, "params": f"n10_T5_s3_e{epochs}", "seed": seed,
            "scale": "smoke", "task": task, "dataset": "toy", "protocol": "paper", "f1": "macro",
            "max_train": None, "max_test": None,
            "hyperparameters": {"n_clauses": 10, "T": 5, "s": 3.0, "epochs": epochs, "state_bits": 8,
                                "boost_true_positive": True, "batch_size": 100, "append_negated": True}}


@pytest.mark.parametrize("impl", ["tm_cpu", "pytm_indexed", "pytm_nonindexed"])
def test_a_tm_run_writes_a_complete_record(tmp_path, impl):
    if impl.startswith("pytm"):
        pytest.importorskip("pyTsetlinMachine")
    ds = _toy(tmp_path)
    out = tmp_path / "rec" / "seed1.json"
    run_tm(_settings(impl), tmp_path / "data", out, log=tmp_path / "rec" / "seed1.log", threads=2)
    rec = json.loads(out.read_text())
    assert rec["status"] == "complete" and rec["impl"] == impl and rec["seed"] == 1
    assert [e["epoch"] for e in rec["epochs"]] == [1, 2, 3]
    assert all(e["train_s"] > 0 and e["eval_s"] >= 0 for e in rec["epochs"])
    assert rec["final"]["accuracy"] == rec["epochs"][-1]["accuracy"]
    assert rec["timing"]["train_s_total"] == pytest.approx(sum(e["train_s"] for e in rec["epochs"]))
    assert set(rec["timing"]["setup"]) >= {"load_data_s", "construct_s"}
    assert rec["dataset"] == {"name": "toy", "protocol": "paper", "raw_digest": "abc", "n_train": 300,
                              "n_test": 100, "n_novel": None, "n_features": 12, "max_train": None,
                              "max_test": None}
    prov = rec["provenance"]
    assert prov["git_commit"] and prov["cpu_model"] and prov["packages"]["numpy"] == np.__version__
    assert prov["threads"] == (2 if impl == "tm_cpu" else 1) and prov["gpu"] is None
    assert rec["implementation"]["indexed"] == {"tm_cpu": None, "pytm_indexed": True,
                                                "pytm_nonindexed": False}[impl]
    log = (tmp_path / "rec" / "seed1.log").read_text()
    assert "epoch 3/3" in log and "done" in log
    assert 0 <= rec["final"]["f1_macro"] <= 100 and ds.y_test.shape[0] == 100


def test_the_record_names_the_checkout_the_run_started_from(tmp_path, monkeypatch):
    """A commit or an edit made while a run goes on is not the run's code: the record keeps the checkout of its
    start and says how it stood at the end (git_at_end) only where the two differ."""
    from asynctm import provenance as prov_module

    _toy(tmp_path)
    states = iter([{"commit": "a" * 40, "tracked_files_modified": 0},
                   {"commit": "b" * 40, "tracked_files_modified": 3}])
    monkeypatch.setattr(prov_module, "git_info", lambda: next(states))
    prov = run_tm(_settings(epochs=1), tmp_path / "data", tmp_path / "r.json", threads=1)["provenance"]
    assert (prov["git_commit"], prov["git_dirty"]) == ("a" * 40, 0)
    assert prov["git_at_end"] == {"commit": "b" * 40, "git_dirty": 3}
    monkeypatch.setattr(prov_module, "git_info", lambda: {"commit": "a" * 40, "tracked_files_modified": 0})
    prov = run_tm(_settings(epochs=1), tmp_path / "data", tmp_path / "s.json", threads=1)["provenance"]
    assert prov["git_commit"] == "a" * 40 and "git_at_end" not in prov


@pytest.mark.parametrize("library, env, forced_by", [("sklearn", None, "config experiments.toy.svm_library"),
                                                     (None, "sklearn", "$ASYNCTM_SVM_LIBRARY"), (None, None, None)])
def test_an_svm_run_uses_and_records_the_library_its_settings_name(tmp_path, monkeypatch, library, env, forced_by):
    from asynctm.experiments.run import run_svm

    monkeypatch.delenv("ASYNCTM_SVM_LIBRARY", raising=False)
    if env:
        monkeypatch.setenv("ASYNCTM_SVM_LIBRARY", env)
    _toy(tmp_path)
    settings = {**_settings(), "kind": "svm", "impl": "svm", "params": "linear_C1",
                "hyperparameters": {"kernel": "linear", "C": 1.0}}
    if library:
        settings["library"] = library
    rec = run_svm(settings, tmp_path / "data", tmp_path / "seed1.json", threads=1)
    impl = rec["implementation"]
    assert impl.get("forced_by") == forced_by and impl["forced"] is bool(library or env)
    if library or env:
        assert impl["library_choice"] == (library or env) and impl["library"] == "scikit-learn"
        assert impl["threads"] == 1 and rec["final"]["accuracy"] > 90


def test_record_metrics_equal_sklearn_on_the_same_predictions(tmp_path):
    from asynctm import TMClassifier

    ds = _toy(tmp_path)
    out = tmp_path / "seed1.json"
    rec = run_tm(_settings("tm_cpu", epochs=2), tmp_path / "data", out, threads=1)
    # The same training, reproduced with the estimator (1 thread: deterministic).
    m = TMClassifier(n_clauses=10, T=5, s=3.0, backend="cpu", n_threads=1, seed=1)
    for epoch in range(2):
        m.fit(ds.X_train, ds.y_train, epochs=1, incremental=epoch > 0)
    pred = m.predict(ds.X_test)
    assert rec["final"]["accuracy"] == pytest.approx(100 * np.mean(pred == ds.y_test))
    assert rec["final"]["f1_macro"] == pytest.approx(100 * f1_score(ds.y_test, pred, average="macro"))
    assert rec["final"]["f1"] == rec["final"]["f1_macro"]


def test_regression_record_has_mae(tmp_path):
    ds = _toy(tmp_path, task="regression")
    rec = run_tm(_settings(task="regression"), tmp_path / "data", tmp_path / "r.json", threads=1)
    assert set(rec["final"]) == {"mae", "rmse"}
    assert 0 <= rec["final"]["mae"] <= np.abs(ds.y_test - ds.y_test.mean()).max()


def test_novelty_run_saves_class_sums(tmp_path):
    _toy(tmp_path, task="novelty", novel=True)
    out = tmp_path / "seed1.json"
    run_tm(_settings(task="novelty"), tmp_path / "data", out, threads=1)
    with np.load(novelty_scores_path(out)) as z:
        assert z["known_sums"].shape == (100, 2) and z["novel_sums"].shape == (50, 2)
        assert np.abs(z["known_sums"]).max() <= 5


def test_smoke_limits_cut_examples_reproducibly(tmp_path):
    _toy(tmp_path)
    st = {**_settings(epochs=1), "max_train": 50, "max_test": 20}
    a = run_tm(st, tmp_path / "data", tmp_path / "a.json", threads=1)
    b = run_tm(st, tmp_path / "data", tmp_path / "b.json", threads=1)
    assert a["dataset"]["n_train"] == 50 and a["dataset"]["n_test"] == 20 and a["dataset"]["max_train"] == 50
    assert a["final"] == b["final"]


def test_an_interrupted_run_leaves_no_record(tmp_path, monkeypatch):
    from asynctm import peers

    _toy(tmp_path)
    calls = {"n": 0}
    real = peers.AsyncTMPeer.fit_epoch

    def failing(self, X, y):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return real(self, X, y)

    monkeypatch.setattr(peers.AsyncTMPeer, "fit_epoch", failing)
    out = tmp_path / "seed1.json"
    with pytest.raises(KeyboardInterrupt):
        run_tm(_settings(), tmp_path / "data", out, log=tmp_path / "seed1.log", threads=1)
    assert not out.exists() and not list(tmp_path.glob("*.tmp*"))
    assert "epoch 1/3" in (tmp_path / "seed1.log").read_text()


def test_cli_errors_are_one_clear_line(tmp_path):
    _toy(tmp_path)
    st = _settings(impl="tm_gpu")
    r = subprocess.run([sys.executable, "-m", "asynctm.experiments", "tm", "--settings", json.dumps(st),
                        "--data-dir", str(tmp_path / "data"), "--out", str(tmp_path / "x.json"),
                        "--log", str(tmp_path / "x.log")], capture_output=True, text=True)
    from asynctm.backends import cuda_available

    if cuda_available():
        pytest.skip("this host has a GPU")
    assert r.returncode == 1
    assert "tm_gpu needs an NVIDIA GPU" in r.stderr and "Run tm_cpu instead" in r.stderr
    assert "Traceback" in (tmp_path / "x.log").read_text() and "Traceback" not in r.stderr
    assert not (tmp_path / "x.json").exists()
    r = subprocess.run([sys.executable, "-m", "asynctm.experiments", "tm", "--settings", json.dumps(_settings()),
                        "--data-dir", str(tmp_path / "nowhere"), "--out", str(tmp_path / "y.json")],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "meta.json is missing: prepare the dataset first" in r.stderr
