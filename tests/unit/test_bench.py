"""benchmarks/bench_tm.py, its measurements (asynctm.benchmarking) and benchmarks/report.py: argument parsing,
hyperparameters from the configuration, the goal / equal-accuracy logic, the Markdown table (the committed
records render as committed), the index of the records (results/INDEX.md), seeds, and a tiny end-to-end run on
a synthetic processed dataset (no dataset mirror, no pyTsetlinMachineParallel environment needed)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from asynctm import benchmarking
from tests.helpers import REPO, load_benchmark_script, tiny_wsd_apple

_load_script = load_benchmark_script


@pytest.fixture(scope="module")
def bench():
    return _load_script("bench_tm")


@pytest.fixture(scope="module")
def report():
    return _load_script("report")


def _pytm_importable() -> bool:
    try:
        import pyTsetlinMachine.tm  # noqa: F401
    except Exception:  # noqa: BLE001
        return False
    return True


# --- argument parsing -------------------------------------------------------------------------------------

def test_parse_defaults(bench):
    args = bench.parse_args([])
    assert args.settings_list == ["apple", "bike"]
    assert args.seeds_list == [42] and args.seed == 42
    assert args.threads_list[0] == 1 and args.parallel_threads >= 1
    assert {"asynctm", "pytm", "pytm_parallel"} <= args.peers_set
    assert args.eval is None and not args.setup_pytm_parallel
    assert args.pytm_parallel_python.endswith("python")


def test_parse_all_seeds_and_limits(bench):
    args = bench.parse_args(["--settings", "all", "--seeds", "0,1,2", "--threads", "2,1,2", "--max-train", "0",
                             "--eval", "final", "--peers", "asynctm,pytm_parallel", "--parallel-threads", "3"])
    assert args.settings_list == ["apple", "bike", "semeval", "imdb"]
    assert args.seeds_list == [0, 1, 2] and args.threads_list == [1, 2] and args.parallel_threads == 3
    assert args.peers_set == {"asynctm", "pytm_parallel"}
    # 0 = all rows, even where the setting has a default subsample; the test set keeps its default
    assert bench.setting_sizes(bench.SETTINGS["imdb"], args) == (2, None, 1000)
    assert bench.default_name(args, gpu=False) == "all_3seeds"
    assert bench.parse_args(["--settings", "semeval,all"]).settings_list == ["semeval", "apple", "bike", "imdb"]


def test_parse_quick_sizes(bench):
    args = bench.parse_args(["--quick", "--settings", "imdb,semeval,apple"])
    assert bench.setting_sizes(bench.SETTINGS["imdb"], args) == (1, 200, 200)
    assert bench.setting_sizes(bench.SETTINGS["semeval"], args) == (1, 500, 500)
    assert bench.setting_sizes(bench.SETTINGS["apple"], args) == (2, None, None)
    args = bench.parse_args(["--quick", "--max-train", "150", "--max-test", "80", "--epochs", "3"])
    assert bench.setting_sizes(bench.SETTINGS["bike"], args) == (3, 150, 80)
    assert bench.default_name(args, gpu=True) == "apple_bike_quick_gpu"


@pytest.mark.parametrize("argv", [["--settings", "nope"], ["--seeds", "0,0"], ["--seeds", "a"], ["--epochs", "0"],
                                  ["--threads", "0"], ["--max-train", "-1"], ["--peers", "asynctm,foo"]])
def test_parse_rejects(bench, argv, capsys):
    with pytest.raises(SystemExit):
        bench.parse_args(argv)


def test_hyperparameters_are_the_configs(bench, tmp_path):
    """Dataset and hyperparameters come from the experiments of config/config.yaml (and its shared tm block);
    the benchmark keeps only its own settings."""
    from asynctm.config_check import load_config

    cfg = load_config(REPO / "config" / "config.yaml")
    for setting, exp_name in (("apple", "wsd_apple"), ("bike", "bike_sharing"), ("semeval", "semeval"),
                              ("imdb", "imdb")):
        exp = bench.experiment(cfg, setting)
        e, tm = cfg["experiments"][exp_name], cfg["tm"]
        assert exp["dataset"] == e["dataset"] and exp["protocol"] == "paper"
        hp = benchmarking.hyperparameters(exp)
        assert (hp["n_clauses"], hp["T"], hp["s"]) == (e["clauses"], e["T"], e["s"])
        assert {k: hp[k] for k in benchmarking.TM_SETTINGS} == {k: tm[k] for k in benchmarking.TM_SETTINGS}
        assert set(bench.SETTINGS[setting]) <= {"experiment", "epochs", "quick_epochs", "max_train", "max_test",
                                                "quick_max_train", "quick_max_test", "evaluate", "goal"}
    changed = {**cfg, "experiments": {**cfg["experiments"], "wsd_apple": {**cfg["experiments"]["wsd_apple"],
                                                                          "T": 100}}}
    assert benchmarking.hyperparameters(bench.experiment(changed, "apple"))["T"] == 100
    assert {s: g["goal"]["min_speedup"] for s, g in bench.SETTINGS.items()} == {
        "apple": 25.0, "bike": 10.0, "semeval": 40.0, "imdb": 25.0}


# --- goal and equal accuracy --------------------------------------------------------------------------------

def _row(label, peer, median, metric, threads=None, backend="cpu", **options):
    opts = {"backend": backend, "n_threads": threads} if peer == "asynctm" else options
    return {"label": label, "peer": peer, "options": opts, "metadata": {"threads": threads or 1},
            "median_epoch_s": median, "min_epoch_s": median, "max_epoch_s": median, "final_metric": metric,
            "mean_metric_last3": metric, "warmup_s": median, "cpu_per_wall": 1.0, "final_metric_std": 0.0}


def test_goal_met_and_failed_classification(report):
    goal = {"peer": "pyTM indexed", "min_speedup": 25.0}
    rows = [_row("asynctm cpu 1t", "asynctm", 0.10, 90.0, threads=1),
            _row("asynctm cpu 2t", "asynctm", 0.05, 89.2, threads=2),
            _row("pyTM indexed", "pytm", 2.0, 90.0, indexed=True)]
    g = report.goal_check("classification", rows, goal)
    assert g["evaluated"] and g["ours_label"] == "asynctm cpu 2t"  # the all-cores row decides
    assert g["speedup"] == pytest.approx(40.0) and g["speed_met"] and g["metric_ok"] and g["met"]
    assert g["by_implementation"]["asynctm cpu 1t"]["speedup"] == pytest.approx(20.0)
    assert not g["by_implementation"]["asynctm cpu 1t"]["met"]  # 20x < 25x
    # 1.5 points lower: equal accuracy fails although the speed goal holds
    rows[1]["final_metric"] = 88.5
    g = report.goal_check("classification", rows, goal)
    assert g["speed_met"] and g["metric_ok"] is False and g["met"] is False
    # better accuracy is fine ("or better"), but it is not "within" the tolerance
    rows[1]["final_metric"] = 95.0
    g = report.goal_check("classification", rows, goal)
    assert g["met"] and g["by_implementation"]["asynctm cpu 2t"]["metric_within_tolerance"] is False
    # too slow
    rows[1]["median_epoch_s"] = 0.1
    assert report.goal_check("classification", rows, goal)["met"] is False


def test_goal_regression_mae_tolerance(report):
    goal = {"peer": "pyTM RTM (no index)", "min_speedup": 10.0}
    rows = [_row("asynctm cpu 2t", "asynctm", 0.1, 51.0, threads=2), _row("pyTM RTM (no index)", "pytm", 2.0, 50.0)]
    g = report.goal_check("regression", rows, goal)
    assert g["speedup"] == pytest.approx(20.0) and g["metric_ok"] and g["met"]  # MAE +2.0 % is allowed
    rows[0]["final_metric"] = 51.5  # +3 %
    assert report.goal_check("regression", rows, goal)["met"] is False
    rows[0]["final_metric"] = 30.0  # lower MAE is better
    assert report.goal_check("regression", rows, goal)["met"] is True
    assert report.metric_ok("regression", None, 1.0) is None


def test_goal_without_the_peer(report):
    rows = [_row("asynctm cpu 1t", "asynctm", 0.1, 90.0, threads=1)]
    g = report.goal_check("classification", rows, {"peer": "pyTM indexed", "min_speedup": 25.0})
    assert g["evaluated"] is False and g["met"] is None and "pyTM indexed" in g["reason"]
    cmp_ = report.compare("classification", rows, {"peer": "pyTM indexed", "min_speedup": 25.0})
    assert cmp_["speedup_vs_baseline"] == {} and cmp_["goal"]["evaluated"] is False


def test_aggregate_pools_epochs_and_averages_metrics():
    def seed_result(seed, epochs, metrics):
        return {"label": "x", "peer": "pytm", "options": {}, "metadata": {}, "seed": seed, "warmup_s": 1.0 + seed,
                "warmup_cpu_s": 1.0, "warmup_metric": None, "epoch_s": epochs, "epoch_cpu_s": epochs,
                "load1_after_epoch": [0.1] * len(epochs), "metric_per_epoch": metrics, "eval_s": [0.5]}

    agg = benchmarking.aggregate([seed_result(0, [1.0, 3.0], [None, 80.0]),
                                  seed_result(1, [2.0, 4.0], [None, 90.0])])
    assert agg["epoch_s"] == [1.0, 3.0, 2.0, 4.0] and agg["median_epoch_s"] == 2.5
    assert agg["final_metric"] == 85.0 and agg["final_metric_per_seed"] == [80.0, 90.0]
    assert agg["metric_per_epoch"] == [None, 85.0] and agg["warmup_s"] == 1.5 and agg["warmup_metric"] is None
    assert agg["seeds"] == [0, 1] and len(agg["per_seed"]) == 2 and agg["final_metric_std"] > 0
    one = benchmarking.aggregate([seed_result(7, [1.0], [70.0])])
    assert one["final_metric"] == 70.0 and "per_seed" not in one and one["final_metric_std"] == 0.0


def test_array_digest_sparse():
    X = np.eye(4, dtype=np.uint8)
    dense = benchmarking.array_digest(X=X)
    assert dense == benchmarking.array_digest(X=X.copy())  # dense digests unchanged by the sparse branch
    assert benchmarking.array_digest(X=sp.csr_matrix(X)) == benchmarking.array_digest(X=sp.csc_matrix(X))
    assert benchmarking.array_digest(X=sp.csr_matrix(X)) != dense
    sub = benchmarking.subsample({"X_train": sp.csr_matrix(X), "y_train": np.arange(4), "X_test": X,
                                  "y_test": np.arange(4)}, 2, None, seed=0)
    assert sp.issparse(sub["X_train"]) and sub["X_train"].shape == (2, 4)
    assert np.array_equal(sub["X_train"].toarray().argmax(axis=1), sub["y_train"])


# --- the Markdown table -------------------------------------------------------------------------------------

def _synthetic_record(report):
    rows = [_row("asynctm cpu 1t", "asynctm", 0.20, 93.0, threads=1),
            _row("asynctm cpu 2t", "asynctm", 0.10, 93.0, threads=2),
            _row("pyTM indexed", "pytm", 3.0, 92.5, indexed=True),
            _row("pyTM unindexed", "pytm", 2.0, 92.0, indexed=False),
            _row("pyTMParallel 2t", "pytm_parallel", 1.5, 91.0, n_threads=2)]
    rows[3]["metadata"]["threads"] = 1
    rows[4]["metadata"]["threads"] = 2
    setting = {"setting": "apple", "task": "classification", "metric": "test accuracy (%)",
               "dataset": {"description": "WSD apple", "n_train": 1784, "n_test": 1032, "n_features": 3000,
                           "subsample": None},
               "hyperparameters": {"n_clauses": 300, "T": 50, "s": 5.0}, "epochs": {"timed": 10},
               "seeds": [0, 1, 2], "evaluate": "every", "load_average_before": [0.1, 0.2, 0.3],
               "load_average_after": [0.9, 0.5, 0.4],
               "skipped": [{"label": "PyTsetlinMachineCUDA", "reason": "no GPU | here"}],
               "results": rows}
    setting["comparison"] = report.compare("classification", rows, {"peer": "pyTM indexed", "min_speedup": 25.0})
    return {"generated_by": "benchmarks/bench_tm.py", "name": "synthetic", "date_utc": "2026-11-22",
            "git": {"commit": "0123456789abcdef", "tracked_files_modified": 0},
            "cpu": {"model": "Test CPU", "logical_cores": 2, "usable_cores": 2}, "command": ["bench_tm.py", "--x"],
            "seeds": [0, 1, 2], "load_average_start": [0.1, 0.2, 0.3], "load_average_end": [1.0, 0.5, 0.3],
            "settings": [setting]}


def test_markdown_table(report, tmp_path):
    record = _synthetic_record(report)
    path = tmp_path / "out" / "synthetic.md"
    report.write_markdown(path, record)
    text = path.read_text()
    assert text.startswith("# CPU speed per epoch: `synthetic`")
    assert "Test CPU" in text and "`0123456789ab`" in text and "2026-11-22" in text and "0.10 / 0.20 / 0.30" in text
    table = [line for line in text.splitlines() if line.startswith("| ")]
    assert table[0].startswith("| implementation | threads | median s/epoch | speed-up vs pyTM indexed | goal | met? |")
    names = [line.split("|")[1].strip() for line in table[1:]]
    assert names == ["ours, 1 thread", "ours, 2 threads", "pyTM indexed", "pyTM unindexed", "pyTMParallel",
                     "PyTsetlinMachineCUDA"]
    ours1, ours2, indexed = table[1], table[2], table[3]
    assert "| 15.00x | >= 25x | no (speed) | 93.00 | +0.50 |" in ours1
    assert "| 30.00x | >= 25x | **yes** |" in ours2
    assert "1.00x" in indexed and "(goal's peer)" in indexed
    assert "| 2.00x |" in table[5] and "| 2 |" in table[5]
    assert "skipped" in table[6] and "no GPU / here" in table[6]  # a "|" in a reason cannot break the table
    assert "Goal: ours, 2 threads >= 25x pyTM indexed at equal accuracy: 30.0x" in text and "**met**" in text
    assert not list(path.parent.glob("*.tmp"))


def test_committed_records_render_as_committed(report):
    """Every committed CPU benchmark record's Markdown, rebuilt from its JSON alone, is the committed .md."""
    records = sorted((REPO / "benchmarks" / "results").glob("*.json"))
    checked = 0
    for path in records:
        record = json.loads(path.read_text())
        md = path.with_suffix(".md")
        if record.get("generated_by") not in (report.CPU_GENERATOR, *report.GPU_GENERATORS) or not md.is_file():
            continue
        assert report.render(record) == md.read_text(), f"{md.name} differs from its rendering"
        checked += 1
    assert checked >= 3
    assert report.main(["--check", *map(str, records)]) == 0


def test_render_refuses_other_json(report):
    with pytest.raises(ValueError, match="not a benchmark record"):
        report.render({"generated_by": "benchmarks/opcount_apple.py"})


# --- the index of the records (benchmarks/results/INDEX.md) ----------------------------------------------------

RESULTS = REPO / "benchmarks" / "results"


def test_committed_index_is_its_rendering(report):
    """INDEX.md is what ``report.py --index`` writes from the committed records, one row per record it classifies."""
    text = (RESULTS / report.INDEX).read_text()
    assert report.render_index(RESULTS) == text, f"rebuild it: {report.INDEX_COMMAND}"
    for path in RESULTS.glob("*.json"):
        kind, _ = report.index_entry(path)
        assert (f"[{path.stem}](" if kind != "skipped" else f"`{path.name}`") in text, path.name
    assert report.check_index(RESULTS)


def _copy_records(tmp_path: Path, *names: str) -> Path:
    for name in names:
        for src in RESULTS.glob(f"{name}.*"):
            (tmp_path / src.name).write_bytes(src.read_bytes())
    return tmp_path


def test_check_fails_in_one_line_on_a_stale_index(report, tmp_path, capsys):
    results = _copy_records(tmp_path, "cpu_all_be4f755", "micro_inference_wsd_apple")
    assert report.main(["--check", "--results", str(results)]) == 1  # no index yet
    assert "missing; write it: python benchmarks/report.py --index --results" in capsys.readouterr().out
    assert report.main(["--index", "--results", str(results)]) == 0
    index = (results / "INDEX.md").read_text()
    assert "[cpu_all_be4f755](cpu_all_be4f755.md)" in index and "[micro_inference_wsd_apple](micro_inference_" in index
    assert "imdb 37.3x pyTM indexed, goal >= 25x met" in index  # the headline is the record's, as stored
    capsys.readouterr()
    assert report.main(["--check", "--results", str(results)]) == 0
    # a record changes after the index was written: the check fails, in one line that names the fix
    record = json.loads((results / "micro_inference_wsd_apple.json").read_text())
    record["dense_over_compact"] = 12.5
    (results / "micro_inference_wsd_apple.json").write_text(json.dumps(record))
    capsys.readouterr()
    assert report.main(["--check", "--results", str(results)]) == 1
    lines = [line for line in capsys.readouterr().out.splitlines() if "INDEX.md" in line]
    assert len(lines) == 1 and "stale" in lines[0] and "python benchmarks/report.py --index" in lines[0], lines
    assert "compacted 12.5x faster" in report.render_index(results)


def test_an_unclassifiable_json_is_listed_as_skipped(report, tmp_path):
    results = _copy_records(tmp_path, "thundersvm_gpu_builds")
    (results / "broken.json").write_text("{not json")
    (results / "a_list.json").write_text("[1, 2]")
    (results / "elsewhere.json").write_text(json.dumps({"generated_by": "a notebook"}))
    (results / "half.json").write_text(json.dumps({"generated_by": report.CPU_GENERATOR}))  # no settings
    assert report.main(["--index", "--results", str(results)]) == 0
    index = (results / "INDEX.md").read_text()
    skipped = index.split("## Skipped (not classified)")[1]
    for name, why in (("broken.json", "not readable as JSON"), ("a_list.json", "not a JSON object"),
                      ("elsewhere.json", "no generator of this folder ('a notebook')"),
                      ("half.json", "without the fields it should have (KeyError")):
        assert f"- `{name}`: " in skipped and why in skipped, (name, skipped)
    assert "[thundersvm_gpu_builds](thundersvm_gpu_builds.json)" in index.split("## Skipped")[0]
    assert report.main(["--check", "--results", str(results)]) == 0  # skipped files do not make it stale


# --- end to end ---------------------------------------------------------------------------------------------

def test_end_to_end_tiny(bench, tmp_path):
    """main() on a small sparse processed dataset read through the registry, hyperparameters from the given
    configuration, two seeds; pyTsetlinMachineParallel's python is absent, so its row is skipped with the
    reason, never fatal."""
    data_dir, config = tiny_wsd_apple(tmp_path)
    peers = "asynctm,pytm_parallel" + (",pytm" if _pytm_importable() else "")
    argv = ["--settings", "apple", "--seeds", "0,1", "--epochs", "2", "--threads", "1", "--parallel-threads", "1",
            "--max-train", "100", "--peers", peers, "--data-dir", str(data_dir), "--config", str(config),
            "--pytm-parallel-python", str(tmp_path / "no-venv" / "bin" / "python"),
            "--out-dir", str(tmp_path), "--name", "tiny"]
    assert bench.main(argv) == 0
    record = json.loads((tmp_path / "tiny.json").read_text())
    assert record["seeds"] == [0, 1] and record["seed"] == 42 and record["name"] == "tiny"
    (s,) = record["settings"]
    assert s["hyperparameters"] == {"n_clauses": 10, "T": 10, "s": 3.0, "state_bits": 8, "boost_true_positive": True,
                                    "append_negated": True, "batch_size": 100}
    assert s["dataset"]["n_train"] == 100 and s["dataset"]["max_train"] == 100 and s["dataset"]["sparse"]
    assert s["dataset"]["source"]["dataset"] == "wsd_apple" and s["dataset"]["source"]["protocol"] == "paper"
    assert "synthetic XOR" in s["dataset"]["description"]
    assert s["seeds"] == [0, 1] and s["evaluate"] == "every"
    skipped = {k["label"]: k for k in s["skipped"]}
    assert "does not exist" in skipped["pyTMParallel 1t"]["reason"] and skipped["pyTMParallel 1t"]["seeds"] == [0, 1]
    ours = next(r for r in s["results"] if r["label"] == "asynctm cpu 1t")
    assert len(ours["epoch_s"]) == 4 and ours["seeds"] == [0, 1] and len(ours["per_seed"]) == 2
    assert len(ours["metric_per_epoch"]) == 2 and 0 <= ours["final_metric"] <= 100
    assert ours["final_metric"] == pytest.approx(np.mean(ours["final_metric_per_seed"]))
    md = (tmp_path / "tiny.md").read_text()
    assert "## apple" in md and "ours, 1 thread" in md and "skipped" in md
    assert md == _load_script("report").render(record)  # the Markdown is the JSON's rendering
    if _pytm_importable():
        assert {"pyTM indexed", "pyTM unindexed"} <= {r["label"] for r in s["results"]}
        assert s["comparison"]["goal"]["evaluated"] is True
        assert "speed-up vs pyTM indexed" in md
    else:
        assert s["comparison"]["goal"]["evaluated"] is False


def test_missing_processed_data_says_how_to_make_it(bench, tmp_path):
    with pytest.raises(FileNotFoundError, match="prepare the dataset first"):
        bench.main(["--settings", "bike", "--data-dir", str(tmp_path / "nowhere"), "--peers", "asynctm",
                    "--out-dir", str(tmp_path), "--name", "x"])
    assert not (tmp_path / "x.json").exists()


def test_parallel_peer_when_its_environment_exists(bench):
    """The worker round trip (only where benchmarks/setup_pytm_parallel.sh has been run)."""
    python = Path(bench.parse_args([]).pytm_parallel_python)
    if not python.exists():
        pytest.skip(f"no pyTsetlinMachineParallel environment at {python}")
    from asynctm.baselines.pytm_parallel import PyTMParallelPeer

    X, y = (np.array([[a, b] for a in (0, 1) for b in (0, 1)] * 25, dtype=np.uint8),
            np.array([0, 1, 1, 0] * 25))
    peer = PyTMParallelPeer("classification", 10, 10, 3.0, python=python, worker=bench.PARALLEL_WORKER,
                            n_threads=2, seed=1)
    try:
        for _ in range(3):
            peer.fit_epoch(sp.csr_matrix(X), y)
        assert peer.last_epoch_s > 0 and peer.last_epoch_cpu_s >= 0
        pred = peer.predict(X)
        assert pred.shape == (100,) and set(np.unique(pred)) <= {0, 1}
        meta = peer.metadata()
        assert meta["version"] == "0.2.1" and meta["threads"] == 2 and meta["worker"]["OMP_NUM_THREADS"] == "2"
    finally:
        peer.close()
    assert peer._proc.poll() is not None and not Path(peer._tmp).exists()
    assert sys.modules.get("pyTsetlinMachineParallel") is None  # never imported here


def test_micro_feedback_driver_compiles_against_the_kernels(tmp_path):
    # The per-operation timer calls the kernels' device functions directly; a change of their interface must
    # fail here, not in the next person's benchmark run. Compiled (not run) for a small configuration.
    import subprocess

    from asynctm.backends import KernelConfig

    micro = _load_script("micro_feedback")
    cfg = KernelConfig(n_classes=2, n_clauses=4, n_literals=70, T=5, s=3.0)
    source, build = micro.driver_build(cfg, tmp_path / "micro")
    (tmp_path / "micro.cu").write_text(source)
    proc = subprocess.run(build, check=False, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "micro").is_file()


def _tiny_data_and_kernel_copy(tmp_path):
    """The tiny dataset and its configuration, and a copy of the kernels (as a before/after pair names an older
    checkout's kernels/)."""
    import shutil

    data_dir, config = tiny_wsd_apple(tmp_path)
    copy = tmp_path / "old" / "kernels"
    shutil.copytree(REPO / "kernels", copy)
    return data_dir, config, copy


def test_micro_setup_times_both_cases_for_every_kernel_folder(tmp_path):
    """benchmarks/micro_setup.py on the tiny dataset, with two kernel folders (a copy of the kernels and the
    kernels, as a before/after pair names two checkouts'): a row per thread count, case and folder, the same
    stored outputs from both; the kernel folder in the environment is as it was afterwards; a folder without tm.cu
    stops it in one line before anything is trained."""
    import os

    micro = _load_script("micro_setup")
    data_dir, config, copy = _tiny_data_and_kernel_copy(tmp_path)
    out = tmp_path / "setup.json"
    common = ["--experiment", "wsd_apple", "--data-dir", str(data_dir), "--config", str(config), "--out", str(out)]
    before = os.environ.get("ASYNCTM_KERNEL_DIR")
    assert micro.main([*common, "--threads", "1,2", "--trained-rows", "60", "--reps", "2",
                       "--kernels", f"{copy},{REPO / 'kernels'}"]) == 0
    assert os.environ.get("ASYNCTM_KERNEL_DIR") == before
    record = json.loads(out.read_text())
    rows = record["rows"]
    assert len(rows) == 8 and {(r["threads"], r["case"]) for r in rows} == {
        (t, case) for t in (1, 2) for case in ("new", "trained")}
    assert {r["kernels"] for r in rows} == {str(copy), str(REPO / "kernels")}
    assert all(len(r["seconds"]) == 2 and r["fastest_s"] == min(r["seconds"]) for r in rows)
    for t in (1, 2):  # two threads may train different automata (they share the tallies); one thread may not
        for case in ("new", "trained"):
            a, b = (r for r in rows if r["threads"] == t and r["case"] == case)
            same = a["states_digest"] == b["states_digest"]
            assert same or (t, case) == (2, "trained")
            assert not same or a["outputs_digest"] == b["outputs_digest"]
    assert record["dataset"]["n_train"] == 120 and record["trained_case"] == {"rows": 60, "epochs": 1}
    report = _load_script("report")
    assert report.index_entry(out)[0] == "Micro-benchmarks"
    out.unlink()
    with pytest.raises(SystemExit, match="has no tm.cu"):
        micro.main([*common, "--kernels", str(tmp_path)])
    assert not out.exists()


def test_kernels_ab_alternates_the_kernel_folders(tmp_path):
    """benchmarks/kernels_ab.py on the tiny dataset with a copy of the kernels and the kernels: every timed epoch of
    both, the same automata with one thread, an index row; fewer than two folders or an unknown setting stop it in
    one line."""
    ab = _load_script("kernels_ab")
    data_dir, config, copy = _tiny_data_and_kernel_copy(tmp_path)
    out = tmp_path / "ab.json"
    common = ["--settings", "apple", "--data-dir", str(data_dir), "--config", str(config), "--out", str(out)]
    assert ab.main([*common, "--epochs", "3", "--kernels", f"{copy},{REPO / 'kernels'}"]) == 0
    record = json.loads(out.read_text())
    (setting,) = record["settings"]
    assert setting["setting"] == "apple" and setting["n_train"] == 120 and setting["same_automata"]
    assert [r["kernels"] for r in setting["rows"]] == [str(copy), str(REPO / "kernels")]
    assert all(len(r["epoch_s"]) == 3 and r["median_s"] == sorted(r["epoch_s"])[1] for r in setting["rows"])
    kind, cells = _load_script("report").index_entry(out)
    assert kind == "Micro-benchmarks" and "apple" in cells[-1]
    out.unlink()
    for bad in (["--kernels", str(copy)], ["--kernels", f"{copy},{copy}", "--settings", "nope"]):
        with pytest.raises(SystemExit, match="at least two kernel folders"):
            ab.main([*common[2:], *bad] if "--settings" in bad else [*common, *bad])
    assert not out.exists()
