"""benchmarks/bound.py: our builds' achieved epoch time against the cost model's bound, on a synthetic benchmark
record, host-limits record and run records; the peers left out; the feedback counts estimated from the records;
bad input refused with one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from asynctm import costmodel as cm
from tests.helpers import load_benchmark_script

CPU = {"model": "Toy CPU", "usable_cores": 2}
LIMITS = {"1": {"copy_bytes_s": 1e10, "triad_bytes_s": 1.2e10, "word_ops_s": 5e10, "scalar_ops_s": 4e9,
                "load_1min_before": 0.5},
          "2": {"copy_bytes_s": 1.5e10, "triad_bytes_s": 1.6e10, "word_ops_s": 1e11, "scalar_ops_s": 8e9,
                "load_1min_before": 0.6}}
CPU_LIMITS = {t: {k: 2 * v for k, v in m.items()} for t, m in LIMITS.items()}  # per CPU second: a busy machine
HP = {"n_clauses": 3, "T": 5, "s": 2.0, "state_bits": 8, "boost_true_positive": True, "append_negated": True,
      "batch_size": 100}


@pytest.fixture(scope="module")
def bound():
    return load_benchmark_script("bound")


def _write(path: Path, obj: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj))
    return path


@pytest.fixture
def inputs(tmp_path):
    # run records: 10 examples, 3 clauses x 2 classes = 60 visits per epoch; epoch e has 6e Type Ib events
    for seed in (0, 1):
        epochs = [{"epoch": e, "train_s": 0.1, "diagnostics": {"type_ia_feedback": 6, "type_ib_feedback": 6 * e,
                                                                 "type_ii_feedback": 3 * seed}}
                  for e in range(1, 5)]
        _write(tmp_path / f"results/wsd_apple/tm_cpu/n3_T5_s2_e4/seed{seed}.json",
               {"kind": "tm", "dataset": {"n_train": 10, "n_features": 40}, "epochs": epochs})
    bench = {"name": "toy", "cpu": CPU, "time_utc": "2026-01-01T00:00:00Z", "load_average_start": [0.1, 0.1, 0.1],
             "settings": [{"setting": "apple", "task": "classification", "hyperparameters": HP,
                           "dataset": {"n_train": 20, "n_features": 40}, "epochs": {"warmup": 1, "timed": 2},
                           "results": [{"label": "asynctm cpu 1t", "peer": "asynctm",
                                        "options": {"backend": "cpu", "n_threads": 1}, "median_epoch_s": 1e-5,
                                        "epoch_s": [1e-5, 1e-5]},
                                       {"label": "asynctm cpu 2t", "peer": "asynctm",
                                        "options": {"backend": "cpu", "n_threads": 2}, "median_epoch_s": 1e-5,
                                        "epoch_s": [1e-5, 1e-5]},
                                       {"label": "pyTM indexed", "peer": "pytm", "options": {"indexed": True},
                                        "median_epoch_s": 1.0, "epoch_s": [1.0]}]}]}
    return {"root": tmp_path, "bench": _write(tmp_path / "bench/toy.json", bench),
            "limits": _write(tmp_path / "host_limits_toy.json", {"cpu": CPU, "measurements": LIMITS,
                                                                  "measurements_cpu_time": CPU_LIMITS,
                                                                  "time_utc": "2026-01-01T00:00:00Z"})}


def test_bounds_of_our_builds_only(bound, inputs):
    root = inputs["root"]
    rc = bound.main([str(inputs["bench"]), "--limits", str(inputs["limits"]), "--results", str(root / "results"),
                     "--classes", "apple=2"])
    assert rc == 0
    out = json.loads((root / "bench/toy_bound.json").read_text())
    assert [r["label"] for r in out["rows"]] == ["asynctm cpu 1t", "asynctm cpu 2t"]
    row = out["rows"][0]
    # epochs 2-3 (after the warm-up): Ib 12 and 18 per 60 visits -> 0.25 per visit; Ia 0.1; II (0 + 3) / 2 / 60
    src = row["feedback_source"]
    assert src["epochs"] == "2-3" and src["samples"] == 4 and len(src["records"]) == 2
    assert src["per_visit"]["type_ib_feedback"] == pytest.approx(0.25)
    # scaled to the benchmark's 20 examples: 120 visits
    assert row["events_per_epoch"]["type_ib_feedback"] == pytest.approx(30.0)
    assert row["events_per_epoch"]["type_ii_feedback"] == pytest.approx(3.0)
    cost = cm.epoch_cost(20, 3, 40, 2, type_ia=12, type_ib=30, type_ii=3, eval_words="max", acting=1.0)
    host = cm.host_from_limits({"measurements_cpu_time": CPU_LIMITS}, 1, clock="cpu")
    assert row["all_work"]["bound_s"] == pytest.approx(cm.bound_s(cost, host))
    assert row["all_work"]["fraction"] == pytest.approx(cm.bound_s(cost, host) / 1e-5)
    assert row["least_work"]["bound_s"] <= row["all_work"]["bound_s"]
    two = out["rows"][1]
    assert two["all_work"]["bound_s"] == pytest.approx(
        cm.bound_s(cm.epoch_cost(20, 3, 40, 2, type_ia=12, type_ib=30, type_ii=3, threads=2),
                   cm.host_from_limits({"measurements_cpu_time": CPU_LIMITS}, 2, clock="cpu")))
    md = (root / "bench/toy_bound.md").read_text()
    assert "| apple | asynctm cpu 1t |" in md and "pyTM" not in md
    assert "estimated from the run records" in md and "epochs 2-3" in md
    # by the wall clock: the slower rates, so a larger bound
    assert bound.main([str(inputs["bench"]), "--limits", str(inputs["limits"]), "--results", str(root / "results"),
                       "--classes", "apple=2", "--clock", "wall"]) == 0
    wall = json.loads((root / "bench/toy_bound.json").read_text())["rows"][0]
    assert wall["all_work"]["bound_s"] == pytest.approx(cm.bound_s(cost, cm.host_from_limits({"measurements": LIMITS},
                                                                                               1)))
    assert wall["all_work"]["bound_s"] > row["all_work"]["bound_s"]


def _error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: ")
    return err


def test_other_host_model_is_refused(bound, inputs, capsys):
    limits = json.loads(inputs["limits"].read_text())
    limits["cpu"] = {"model": "Other CPU", "usable_cores": 2}
    inputs["limits"].write_text(json.dumps(limits))
    rc = bound.main([str(inputs["bench"]), "--limits", str(inputs["limits"]), "--results",
                     str(inputs["root"] / "results"), "--classes", "apple=2"])
    assert rc == 1 and "measured on Other CPU" in _error(capsys)
    assert not (inputs["root"] / "bench/toy_bound.json").exists()


def test_missing_records_and_classes_are_refused(bound, inputs, capsys):
    args = [str(inputs["bench"]), "--limits", str(inputs["limits"])]
    assert bound.main([*args, "--results", str(inputs["root"] / "nothing"), "--classes", "apple=2"]) == 1
    assert "no run records of this setting" in _error(capsys)
    assert bound.main([*args, "--results", str(inputs["root"] / "results")]) == 1
    assert "--classes apple=K" in _error(capsys)
    assert bound.main([*args, "--results", str(inputs["root"] / "results"), "--classes", "apple=two"]) == 1
    assert "SETTING=K" in _error(capsys)
    limits = json.loads(inputs["limits"].read_text())
    del limits["measurements_cpu_time"]["2"]
    inputs["limits"].write_text(json.dumps(limits))
    assert bound.main([*args, "--results", str(inputs["root"] / "results"), "--classes", "apple=2"]) == 1
    assert "--threads 2" in _error(capsys)
    assert not (inputs["root"] / "bench/toy_bound.json").exists()
