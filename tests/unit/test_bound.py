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


# -- GPU benchmark records against a GPU's limits ---------------------------------------------------------------------

GPU = {"name": "Toy GPU", "description": "Toy GPU (sm_90)"}
GPU_LIMITS = {"copy_bytes_s": 2e12, "triad_bytes_s": 2.5e12, "word_ops_s": 1e13, "scalar_ops_s": 1e11,
              "draws_s": 1.25e10, "threads": 1024}


def _gpu_result(peer, options, t):
    return {"label": None, "peer": peer, "options": options, "median_epoch_s": t, "epoch_s": [t, t, t]}


@pytest.fixture
def gpu_inputs(inputs, tmp_path):
    results = {"tm_gpu": {**_gpu_result("asynctm", {"backend": "cuda", "gpu_threads_per_clause": 1}, 2e-7),
                          "label": "tm_gpu"},
               "tm_gpu_warp": {**_gpu_result("asynctm", {"backend": "cuda", "gpu_threads_per_clause": 32}, 1e-7),
                               "label": "tm_gpu_warp"},
               "tm_gpu_block1024": {**_gpu_result("asynctm", {"backend": "cuda", "gpu_threads_per_clause": 1024},
                                                  5e-8), "label": "tm_gpu_block1024"},  # a block of 1,024 threads
               "pytm_cuda": {**_gpu_result("pytm_cuda", {}, 5e-3), "label": "pytm_cuda"}}
    older = {"tm_gpu": {"median_epoch_s": 4e-3, "epoch_s": [4e-3]}, "tm_cpu": {"median_epoch_s": 1e-3},
             "pytm_cuda": {"median_epoch_s": 1e-2}}  # a record from before results named their peer and options
    setting = {"setting": "wsd_apple", "task": "classification", "hyperparameters": HP,
               "dataset": {"n_train": 20, "n_features": 40}, "epochs": {"warmup": 1, "timed": 2}}
    bench = {"name": "gpu_toy_0000000", "gpu": GPU, "started_utc": "2026-01-02T00:00:00Z",
             "settings": [{**setting, "results": results}, {**setting, "setting": "wsd_apple_again",
                                                            "results": older}]}
    limits = {"generated_by": "benchmarks/gpu_limits.py", "host_id": "0123456789abcdef", "gpu": GPU,
              "time_utc": "2026-01-01T00:00:00Z", "cpu": CPU, "measurements": {"gpu": GPU_LIMITS}}
    # the second setting reads the same run records (its experiment is named by --classes only)
    (tmp_path / "results/wsd_apple_again").symlink_to(tmp_path / "results/wsd_apple")
    return {**inputs, "gpu_bench": _write(tmp_path / "bench/gpu_toy_0000000.json", bench),
            "gpu_limits": _write(tmp_path / "host_limits_toy_gpu_0123456789abcdef.json", limits)}


def _gpu_args(gpu_inputs):
    return [str(gpu_inputs["gpu_bench"]), "--limits", str(gpu_inputs["gpu_limits"]), "--results",
            str(gpu_inputs["root"] / "results"), "--classes", "wsd_apple=2", "--classes", "wsd_apple_again=2"]


def test_gpu_bounds_of_our_gpu_builds_only(bound, gpu_inputs):
    root = gpu_inputs["root"]
    assert bound.main(_gpu_args(gpu_inputs)) == 0
    assert not (root / "bench/gpu_toy_0000000_bound.json").exists()  # not gpu_*.json: evidence_cost reads those
    out = json.loads((root / "bench/bound_gpu_toy_0000000.json").read_text())
    assert [(r["setting"], r["build"], r["threads_per_clause"]) for r in out["rows"]] == [
        ("wsd_apple", "tm_gpu", 1), ("wsd_apple", "tm_gpu_warp", 32), ("wsd_apple", "tm_gpu_block1024", 1024),
        ("wsd_apple_again", "tm_gpu", 1)]
    assert out["rows"][3]["threads_per_clause_from"] == "the build's name"
    # the events as on the CPU (same records, epochs 2-3): Ia 12, Ib 30, II 3 over 20 examples x 3 clauses x 2
    # classes; the work with the GPU's chunks of 2 words (80 literals: 3 words, 2 chunks, 2 draws per Type I
    # event), on the GPU's limits: bandwidth the faster of copy and triad
    events = {"type_ia": 12, "type_ib": 30, "type_ii": 3, "chunk_words": 2}
    most = cm.epoch_cost(20, 3, 40, 2, eval_words="max", acting=1.0, **events)
    least = cm.epoch_cost(20, 3, 40, 2, eval_words="min", acting=0.0, **events)
    assert most.draws == cm.epoch_cost(20, 3, 40, 2, **{**events, "chunk_words": 16}).draws + 42
    host = cm.Host("toy", 1, bandwidth_bytes_s=2.5e12, word_ops_s=1e13, scalar_ops_s=1e11)
    one, warp, block, older = out["rows"]
    for row, achieved in ((one, 2e-7), (warp, 1e-7), (block, 5e-8), (older, 4e-3)):
        assert row["achieved_median_epoch_s"] == achieved
        assert row["all_work"]["scalar_ops"] == pytest.approx(most.scalar_ops)
        assert row["all_work"]["bound_s"] == pytest.approx(max(most.bytes_compulsory / 2.5e12, most.word_ops / 1e13,
                                                               most.scalar_ops / 1e11))
        assert row["all_work"]["fraction"] == pytest.approx(cm.bound_s(most, host) / achieved)
        assert row["least_work"]["fraction"] == pytest.approx(cm.bound_s(least, host) / achieved)
        assert row["all_work"]["limit"] == cm.limiting_term(most, host) and "fraction_of_cpu_s" not in row["all_work"]
    assert one["feedback_source"]["epochs"] == "2-3" and len(one["feedback_source"]["records"]) == 2
    assert out["gpu_limits"]["gpu"] == "Toy GPU" and out["gpu_limits"]["measurements"]["draws_s"] == 1.25e10
    md = (root / "bench/bound_gpu_toy_0000000.md").read_text()
    assert "GPU: Toy GPU (sm_90)" in md and "| 2000 | 2500 | 10000 | 100 | 12.5 |" in md
    assert "| wsd_apple | tm_gpu (one thread per clause) | 20 x 6 x 3 |" in md
    assert "| wsd_apple | tm_gpu_warp (a warp per clause) |" in md and "pytm_cuda" not in md and "tm_cpu (" not in md
    assert "| wsd_apple | tm_gpu_block1024 (1024 threads per clause) |" in md
    assert 0.01 < warp["all_work"]["fraction"] < 1 and f"| {warp['all_work']['fraction']:.1%} |" in md
    assert older["all_work"]["fraction"] < 1e-4 and f"| {100 * older['all_work']['fraction']:.2g}% |" in md
    assert "estimated from the tm_cpu run records" in md
    # one clause group's chain: 3 words, R = 2 rounds for one thread (2 words a round), 1 for a warp; per group
    # (3 clauses x 2 classes) the events are Ia 2, Ib 5, II 0.5; without a measured latency, no chain bound
    chain = cm.chain_rounds(20, 3, 40, 2, threads_per_clause=1, type_ia=12, type_ib=30, type_ii=3)
    assert one["chain"]["rounds"] == chain["rounds"] == 20 + 2.5 * 2 + 7.5 * 2
    assert one["chain"]["achieved_s_per_round"] == pytest.approx(2e-7 / 40) and "bound_s" not in one["chain"]
    assert (one["chain"]["threads"], warp["chain"]["threads"], warp["chain"]["resident_share"]) == (6, 192, 192 / 1024)
    assert "| wsd_apple | tm_gpu_warp (a warp per clause) | 192 (18.8%) | 1 | 30 |" in md


def test_a_measured_dependent_load_bounds_the_chain(bound, gpu_inputs):
    limits = json.loads(gpu_inputs["gpu_limits"].read_text())
    limits["measurements"]["gpu"]["chase_s"] = 1e-9
    gpu_inputs["gpu_limits"].write_text(json.dumps(limits))
    assert bound.main(_gpu_args(gpu_inputs)) == 0
    out = json.loads((gpu_inputs["root"] / "bench/bound_gpu_toy_0000000.json").read_text())
    one = out["rows"][0]["chain"]
    assert one["bound_s"] == pytest.approx(40 * 1e-9) and one["fraction"] == pytest.approx(40e-9 / 2e-7)


def test_gpu_limits_must_be_of_the_benchmarks_gpu(bound, gpu_inputs, capsys):
    limits = json.loads(gpu_inputs["gpu_limits"].read_text())
    limits["gpu"] = {"name": "Other GPU"}
    gpu_inputs["gpu_limits"].write_text(json.dumps(limits))
    assert bound.main(_gpu_args(gpu_inputs)) == 1
    assert "measured on Other GPU, the benchmark ran on Toy GPU" in _error(capsys)
    del limits["gpu"]
    gpu_inputs["gpu_limits"].write_text(json.dumps(limits))
    assert bound.main(_gpu_args(gpu_inputs)) == 1
    assert "field 'gpu.name' is missing; rerun benchmarks/gpu_limits.py" in _error(capsys)
    assert not (gpu_inputs["root"] / "bench/bound_gpu_toy_0000000.json").exists()


def test_cpu_and_gpu_records_are_not_mixed(bound, gpu_inputs, capsys):
    root = gpu_inputs["root"]
    args = ["--results", str(root / "results"), "--classes", "apple=2", "--classes", "wsd_apple=2"]
    assert bound.main([str(gpu_inputs["gpu_bench"]), "--limits", str(gpu_inputs["limits"]), *args]) == 1
    assert "not a GPU's limits record" in _error(capsys)
    assert bound.main([str(gpu_inputs["bench"]), "--limits", str(gpu_inputs["gpu_limits"]), *args]) == 1
    assert "a GPU's limits (benchmarks/gpu_limits.py)" in _error(capsys)
    limits = json.loads(gpu_inputs["gpu_limits"].read_text())
    limits["measurements"]["gpu"]["word_ops_s"] = 0
    gpu_inputs["gpu_limits"].write_text(json.dumps(limits))
    assert bound.main(_gpu_args(gpu_inputs)) == 1
    assert "measurements.gpu.word_ops_s is missing or not positive" in _error(capsys)


def test_the_fractions_figure_reads_every_bound_record(bound, gpu_inputs, tmp_path, capsys):
    from tests.helpers import load_benchmark_script

    figure = load_benchmark_script("bound_figure")
    assert bound.main(_gpu_args(gpu_inputs)) == 0
    record = gpu_inputs["root"] / "bench/bound_gpu_toy_0000000.json"
    rows = json.loads(record.read_text())["rows"]
    out = tmp_path / "fig/bound_fractions"
    assert figure.main([str(record), "--out", str(out)]) == 0
    md = out.with_suffix(".md").read_text()
    assert out.with_suffix(".png").stat().st_size > 0 and out.with_suffix(".pdf").is_file()
    for r in rows:
        assert f"| Toy GPU | {r['setting']} | {r['build']} |" in md
        assert f"| {r['least_work']['fraction']:.3g} | {r['all_work']['fraction']:.3g} |" in md
    # a file that is not a bound record: one line, nothing written
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"rows": []}))
    assert figure.main([str(record), str(other), "--out", str(tmp_path / "none")]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "other.json: not a benchmarks/bound.py record" in err
    assert not list(tmp_path.glob("none*"))


def test_the_fractions_figure_tells_apart_cpu_hosts_of_one_model():
    """Two 2-core hosts that both report "AMD EPYC": each CPU row names its host by the limits record's host id."""
    from tests.helpers import REPO, load_benchmark_script

    figure = load_benchmark_script("bound_figure")
    results = REPO / "benchmarks" / "results"
    hosts = set()
    for name in ("cpu_asynctm_amd_epyc_2c_bound.json", "cpu_asynctm_amd_epyc_89a2018e3286_bound.json"):
        limits = json.loads((REPO / json.loads((results / name).read_text())["host_limits"]["path"]).read_text())
        rows = figure.rows_of(results / name)
        assert {r["host"] for r in rows} == {f"AMD EPYC (2 cores, host {limits['host_id'][:12]})"}
        hosts |= {r["host"] for r in rows}
    assert len(hosts) == 2
    assert figure._limits_host("benchmarks/results/none.json") == "" and figure._limits_host(None) == ""
