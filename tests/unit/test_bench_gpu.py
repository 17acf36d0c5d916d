"""The GPU benchmark (benchmarks/bench_gpu.py): its pooling of seeds, comparisons and goals, the epochs it times, its
tables (the committed records render as they were written), and where it reads its configuration and data (a GPU
workstation's processed datasets, or the folder staged for a lent GPU host)."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from tests.helpers import REPO, load_benchmark_script

bench = load_benchmark_script("bench_gpu")


def test_pytm_cuda_literal_counts_mask_the_padding(monkeypatch):
    import types

    C, nc, n_lit, bits = 2, 3, 40, 8  # 40 literals: two 32-bit chunks, 8 valid bits in the last
    rng = np.random.default_rng(3)
    ta = rng.integers(0, 2**32, (C, nc, 2, bits), dtype=np.uint64).astype(np.uint32)
    include = ta[:, :, :, bits - 1]
    expected = [bin(int(w[0])).count("1") + bin(int(w[1]) & 0xFF).count("1") for w in include.reshape(C * nc, 2)]
    drv = types.SimpleNamespace(memcpy_dtoh=lambda dst, src: dst.__setitem__(slice(None), src.ravel()))
    monkeypatch.setitem(sys.modules, "pycuda", types.SimpleNamespace(driver=drv))
    monkeypatch.setitem(sys.modules, "pycuda.driver", drv)
    model = types.SimpleNamespace(number_of_classes=C, number_of_clauses=nc, number_of_ta_chunks=2,
                                  number_of_state_bits=bits, number_of_features=n_lit, ta_state_gpu=ta)
    assert bench._pytm_cuda_literal_counts(model).tolist() == expected


def test_a_seed_stopped_after_its_warm_up_does_not_void_the_others():
    def row(seed, accs):
        return {"label": "tm_gpu", "peer": "asynctm", "options": {}, "metadata": {}, "seed": seed,
                "epoch_s": [0.1] * len(accs), "epoch_cpu_s": [0.1] * len(accs), "load1_after_epoch": [0.0] * len(accs),
                "metric_per_epoch": accs, "eval_s": [0.01] * len(accs), "warmup_s": 0.2, "warmup_cpu_s": 0.2,
                "warmup_metric": 50.0, "literals_per_clause": {"mean": 3.0, "mean_nonempty": 3.0}}

    agg = bench.result([row(0, [80, 90]), row(1, [82, 92]), row(2, [])])
    assert agg["final_metric"] == 91 and agg["timed_epochs"] == 2 and agg["literals_per_clause"] == 3.0
    assert len(agg["per_seed"]) == 3 and agg["median_epoch_s"] == pytest.approx(0.1)
    one = bench.result([row(0, [80, 90])])  # one seed: its row is kept too (the cost evidence reads its epochs)
    assert one["per_seed"][0]["epoch_s"] == [0.1, 0.1]

def test_benchmark_comparison_and_goal():
    def res(median, finals):
        return {"median_epoch_s": median, "timed_epochs": 5, "seeds": [0, 1, 2], "final_metric": float(np.mean(finals)),
                "final_metric_std": float(np.std(finals, ddof=1))}

    c = bench.compare("semeval", "classification", "accuracy", {"tm_gpu": res(1.0, [90, 91, 92]),
                                                          "pytm_cuda": res(2.5, [90.5, 91, 91.5])})
    assert c["speedup_vs_pytm_cuda"] == 2.5 and c["goal"]["met"]
    c = bench.compare("semeval", "classification", "accuracy", {"tm_gpu": res(1.0, [88, 88, 88]),
                                                          "pytm_cuda": res(2.5, [90, 90, 90])})
    assert c["goal"]["speed_met"] and not c["goal"]["accuracy_within"] and not c["goal"]["met"]
    assert bench.goal_miss(c, "accuracy") == (" (accuracy 2.00 points below PyTsetlinMachineCUDA's, "
                                        "outside 1 point either way)")
    c = bench.compare("wsd_apple", "classification", "accuracy", {"tm_gpu": res(1.0, [93, 94, 95]),
                                                            "tm_cpu": res(3.0, [92, 95, 98])})
    assert c["tm_gpu_within_spread"]["tm_cpu"]["within"] and c["goal"] is None
    c = bench.compare("semeval", "classification", "accuracy", {"tm_gpu": res(4.0, [90, 91, 92]),
                                                          "tm_gpu_warp": res(0.5, [90, 91, 92]),
                                                          "pytm_cuda": res(2.5, [90.5, 91, 91.5])})
    assert not c["goal"]["met"] and c["tm_gpu_warp"]["goal"]["met"]  # each build against the peer on its own
    assert bench.goal_miss(c, "accuracy") == " (0.62x, below 2x)"
    assert bench.goal_miss(c["tm_gpu_warp"], "accuracy") == ""
    assert c["tm_gpu_warp"]["speedup_vs_pytm_cuda"] == 5.0 and c["warp_speedup_vs_one_thread"] == 8.0
    c = bench.compare("semeval", "classification", "accuracy", {"tm_gpu": res(1.0, [92, 93, 94]),
                                                          "pytm_cuda": res(0.8, [90, 91, 92])})
    assert bench.goal_miss(c, "accuracy") == (" (0.80x, below 2x; accuracy 2.00 points above PyTsetlinMachineCUDA's, "
                                        "outside 1 point either way)")


def test_the_bench_times_at_least_five_epochs_where_only_our_builds_run():
    """PyTsetlinMachineCUDA's long epochs on SemEval and IMDb keep them at one timed epoch where it is timed; with our
    builds alone (--impls without it) every setting gets OURS_TIMED_EPOCHS at least; smoke scale one."""
    assert bench.OURS_TIMED_EPOCHS >= 3
    assert bench.timed_epochs("semeval", ["tm_gpu_warp", "pytm_cuda"]) == bench.TIMED_EPOCHS["semeval"] == 1
    assert bench.timed_epochs("semeval", ["tm_gpu_warp", "tm_gpu_block", "tm_gpu_block1024"]) == bench.OURS_TIMED_EPOCHS
    assert bench.timed_epochs("wsd_apple", ["tm_gpu"]) == bench.TIMED_EPOCHS["wsd_apple"] > bench.OURS_TIMED_EPOCHS
    assert bench.timed_epochs("newsgroups20", ["tm_gpu", "pytm_cuda"]) == 5
    assert bench.timed_epochs("semeval", ["tm_gpu_warp"], smoke=True) == 1


def test_several_wide_builds_in_one_record_and_the_committed_records_render_as_before():
    """Each size of the config's wide build is a build of its own (own label, own comparison, its speed-up over the
    warp build); the GPU benchmark records committed before several sizes read and render as they were written."""
    def res(median, threads):
        return {"median_epoch_s": median, "timed_epochs": 5, "seeds": [0], "final_metric": 90.0,
                "final_metric_std": 0.0, "warmup_s": 1.0, "literals_per_clause": 3.0, "peer": "asynctm",
                "options": {"backend": "cuda", "gpu_threads_per_clause": threads}}

    results = {"tm_gpu_warp": res(0.4, 32), "tm_gpu_block": res(0.1, 128), "tm_gpu_block1024": res(0.05, 1024)}
    c = bench.compare("semeval", "classification", "accuracy", results)
    assert c["wide_speedups_vs_warp"] == {"tm_gpu_block": pytest.approx(4.0), "tm_gpu_block1024": pytest.approx(8.0)}
    assert "tm_gpu_block1024" in c and "wide_speedup_vs_warp" not in c
    assert bench.runner("tm_gpu_block512")["options"] == {"backend": "cuda", "gpu_threads_per_clause": 512}
    assert bench.runner("tm_gpu_block")["options"]["gpu_threads_per_clause"] == 128
    assert bench.runner("tm_gpu_block1024_shared")["options"] == {"backend": "cuda", "gpu_threads_per_clause": 1024,
                                                                 "gpu_shared_state": True}
    assert "gpu_shared_state" not in bench.runner("tm_gpu_block1024")["options"]
    assert bench.IMPLS["tm_gpu_block_shared"] == \
        "ours (asynctm, CUDA, a block of 128 threads per clause, automata in shared memory)"
    setting = {"setting": "semeval", "metric": "accuracy", "stopped": None, "skipped": {}, "seeds": [0],
               "dataset": {"n_train": 6000, "n_test": 2000, "n_features": 102176},
               "hyperparameters": {"n_clauses": 40, "T": 15, "s": 3.9}, "results": results, "comparison": c,
               "wide_build": {"threads_per_clause": [128, 1024], "min_literal_words": 256, "reason": "..."}}
    md = bench.markdown({"name": "x", "date_utc": "2026-11-28", "git": {}, "gpu": {}, "settings": [setting]})
    assert "| ours (asynctm, CUDA, a block per clause) | 0.1000 |" in md
    assert "| ours (asynctm, CUDA, a block of 1024 threads per clause) | 0.0500 |" in md
    assert ("A block per clause (timed where a clause has at least 256 literal words) against a warp per clause: "
            "128 threads 4.00x, 1024 threads 8.00x the speed.") in md
    committed = sorted((REPO / "benchmarks" / "results").glob("gpu_*.json"))
    assert any("tm_gpu_block" in json.loads(p.read_text())["settings"][0].get("results", {}) for p in committed)
    for path in committed:
        assert bench.markdown(json.loads(path.read_text())) == path.with_suffix(".md").read_text(), path.name


def test_it_reads_a_workstations_datasets_or_a_staged_folder_and_says_in_one_line_what_is_missing(tmp_path, capsys):
    """--data-dir with --config (checked as the pipeline checks it) on a GPU workstation; --campaign-dir, the folder
    gpu_host staged, on a lent GPU host; exactly one of the two. Whatever is missing stops in one line naming it."""
    data = tmp_path / "data"
    data.mkdir()
    args = bench.argparse.Namespace(campaign_dir=None, data_dir=str(data), config=str(REPO / "config" / "config.yaml"))
    config, where = bench.inputs(args)
    assert where == data and "semeval" in config["experiments"]
    staged = tmp_path / "stage"
    staged.mkdir()
    (staged / "campaign.json").write_text(json.dumps({"config": {"scale": "smoke", "experiments": {}}}))
    config, where = bench.inputs(bench.argparse.Namespace(campaign_dir=str(staged), data_dir=None, config=None))
    assert where == staged / "data" and config["scale"] == "smoke"
    for bad, expected in ((dict(campaign_dir=str(tmp_path / "none"), data_dir=None, config=None),
                           "campaign.json: not a staged campaign"),
                          (dict(campaign_dir=None, data_dir=str(tmp_path / "nowhere"), config=args.config),
                           "nowhere: no such folder; prepare the datasets"),
                          (dict(campaign_dir=None, data_dir=str(data), config=str(tmp_path / "missing.yaml")),
                           "missing.yaml")):
        with pytest.raises(SystemExit) as stop:
            bench.inputs(bench.argparse.Namespace(**bad))
        assert expected in str(stop.value) and "\n" not in str(stop.value)
    with pytest.raises(SystemExit):
        bench.main(["--data-dir", str(data), "--campaign-dir", str(staged), "--out-dir", str(tmp_path), "--name", "x"])
    assert "not allowed with argument" in capsys.readouterr().err


def test_the_report_renders_its_records_under_each_name_it_had():
    """benchmarks/report.py renders a GPU record with this script's table, whichever generated_by it carries (the
    records made before it moved to benchmarks/ name the module it was)."""
    report = load_benchmark_script("report")
    record = {"name": "x", "date_utc": "2026-12-05", "git": {}, "gpu": {}, "settings": []}
    for name in (bench.GENERATOR, "python -m gpu_host.bench", "python -m asynctm.campaign.bench"):
        assert report.render({**record, "generated_by": name}) == bench.markdown(record)


# --- tmu's CUDA clause bank as a peer (tmu_cuda) ---------------------------------------------------------------

def test_tmu_cuda_is_timed_only_where_named_and_compared_with_each_of_our_builds():
    assert bench.runner("tmu_cuda") == {"label": "tmu_cuda", "peer": "tmu_cuda", "options": {}}
    args = bench.argparse.Namespace(impls="tm_gpu,tm_gpu_warp", tmu_python=None)
    assert bench.workers(args) is None  # not named: no worker factories at all
    assert bench.timed_epochs("imdb", ["tm_gpu_warp"]) == bench.OURS_TIMED_EPOCHS
    assert bench.timed_epochs("imdb", ["tm_gpu_warp", "tmu_cuda"]) == bench.TIMED_EPOCHS["imdb"]  # its epochs are long

    def res(median, finals=(90.0,)):
        return {"median_epoch_s": median, "timed_epochs": 1, "seeds": [0], "final_metric": float(np.mean(finals)),
                "final_metric_std": 0.0, "warmup_s": 1.0, "literals_per_clause": None,
                "literals_per_nonempty_clause": None}

    results = {"tm_gpu": res(2.0), "tm_gpu_warp": res(0.5), "tmu_cuda": res(10.0)}
    c = bench.compare("imdb", "classification", "accuracy", results)
    assert c["speedups_vs_tmu_cuda"] == {"tm_gpu": 5.0, "tm_gpu_warp": 20.0}
    assert "speedups_vs_tmu_cuda" not in bench.compare("imdb", "classification", "accuracy",
                                                       {"tm_gpu": res(2.0), "tmu_cuda": res(None)})
    setting = {"setting": "imdb", "metric": "accuracy", "hyperparameters": {"n_clauses": 10, "T": 5, "s": 3.0},
               "dataset": {"n_train": 10, "n_test": 5, "n_features": 7}, "seeds": [0], "stopped": None,
               "skipped": {}, "results": results, "comparison": c}
    md = bench.markdown({"name": "x", "date_utc": "2026-12-06", "git": {"commit": "abc"}, "gpu": {},
                         "settings": [setting]})
    assert "| tmu 0.8.3 (CUDA clause bank) | 10.0000 | 1.00 | 90.00 ± 0.00 | – | 1 |" in md
    assert ("Speed-up over tmu's CUDA clause bank: ours (asynctm, CUDA) 5.00x, ours (asynctm, CUDA, a warp per "
            "clause) 20.00x.") in md


def test_a_worker_peers_result_has_no_literal_counts():
    row = {"label": "tmu_cuda", "peer": "tmu_cuda", "options": {}, "metadata": {}, "seed": 0, "epoch_s": [3.0],
           "epoch_cpu_s": [3.0], "load1_after_epoch": [0.0], "metric_per_epoch": [80.0], "eval_s": [0.1],
           "warmup_s": 4.0, "warmup_cpu_s": 4.0, "warmup_metric": 70.0, "literals_per_clause": None}
    agg = bench.result([row])
    assert agg["literals_per_clause"] is None and agg["median_epoch_s"] == 3.0
    assert bench.literals_per_clause(type("P", (), {"peer": "tmu_cuda"})()) is None


def test_tmu_cuda_without_its_environment_is_skipped_with_the_setup_command(tmp_path):
    from asynctm import benchmarking

    args = bench.argparse.Namespace(impls="tm_gpu,tmu_cuda", tmu_python=str(tmp_path / "none" / "python"))
    workers = bench.workers(args)
    hp = {"n_clauses": 10, "T": 10, "s": 3.0, "state_bits": 8, "boost_true_positive": True, "append_negated": True,
          "batch_size": 100}
    with pytest.raises(FileNotFoundError, match="setup_tm_peers.sh tmu`$"):
        benchmarking.build_peer(bench.runner("tmu_cuda"), "classification", hp, 0, workers=workers)
    peer_cls = sys.modules["worker_peers"].PEER_CLASSES["tmu_cuda"]
    assert peer_cls.platform == "CUDA" and peer_cls.env.worker.name == "tmu_worker.py"
