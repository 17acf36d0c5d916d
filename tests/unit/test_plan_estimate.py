"""The reduced protocol, the estimates of missing runs, the budget of the default target, and `plan --status`.

Estimates are checked on small synthetic records (exact arithmetic), the budget on synthetic estimates, and the
workflow with a Snakemake dry run on a temporary results folder holding copies of committed records.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from asynctm.experiments import estimate, plan
from asynctm.experiments.__main__ import main as experiments_main
from asynctm.experiments.run import _record
from tests.helpers import REPO


@pytest.fixture
def config(repo_root) -> dict:
    return yaml.safe_load((repo_root / "config" / "config.yaml").read_text())


# -- the reduced protocol ------------------------------------------------------------------------------------

def test_reduced_protocol_runs_its_seeds_and_epochs_under_their_own_params(config):
    config = {**config, "reduced": {"imdb": {"impls": ["pytm_indexed"], "seeds": [0, 1], "epochs": 5}}}
    keys = {(r["experiment"], r["impl"], r["params"], r["seed"]) for r in plan.requested_runs(config, False)}
    imdb = {k for k in keys if k[0] == "imdb" and k[1] == "pytm_indexed"}
    assert imdb == {("imdb", "pytm_indexed", "n7000_T80_s27_e5", 0), ("imdb", "pytm_indexed", "n7000_T80_s27_e5", 1)}
    # the other implementations of the experiment keep the full protocol
    assert {k[3] for k in keys if k[:3] == ("imdb", "pytm_nonindexed", "n7000_T80_s27_e100")} == set(range(5))
    assert plan.main_params(config, "imdb", "pytm_indexed") == "n7000_T80_s27_e5"
    assert plan.main_params(config, "imdb") == plan.main_params(config, "imdb", "tm_cpu") == "n7000_T80_s27_e100"
    assert plan.run_seeds(config, "imdb", "pytm_indexed") == [0, 1]


def test_reduced_records_say_so_and_full_ones_are_unchanged(config):
    config = {**config, "reduced": {"bbc_sport": {"impls": ["pytm_nonindexed"], "seeds": [0, 1], "epochs": 5}}}
    st = plan.tm_run_settings(config, "bbc_sport", "pytm_nonindexed", "n5000_T100_s15_e5", 1)
    scope = st["protocol_scope"]
    assert scope["name"] == "reduced" and scope["epochs"] == 5 and scope["seeds"] == [0, 1]
    assert scope["full"] == {"epochs": 100, "seeds": [0, 1, 2, 3, 4]}
    assert "first 5 epochs" in scope["description"] and "5 seeds x 100 epochs" in scope["description"]
    mlp = plan.mlp_run_settings(config, "bbc_sport", "pytm_nonindexed.n5000_T100_s15_e5", 1)
    assert mlp["protocol_scope"] == scope
    # The record carries it in its own fields; a full run's settings (Snakemake params) have no such key.
    assert _record(st, {})["protocol_scope"] == scope
    full = plan.tm_run_settings(config, "bbc_sport", "pytm_nonindexed", "n5000_T100_s15_e100", 1)
    assert "protocol_scope" not in full and "protocol_scope" not in _record(full, {})
    assert "protocol_scope" not in plan.tm_run_settings(config, "bbc_sport", "tm_cpu", "n5000_T100_s15_e5", 0)


def test_reduced_protocol_is_paper_scale_only_and_checked(config):
    smoke = {**config, "scale": "smoke"}
    assert {r["seed"] for r in plan.requested_runs(smoke, False)} == {0}
    assert all(plan.parse_tm_params(r["params"])["epochs"] == 2
               for r in plan.requested_runs(smoke, False) if r["kind"] == "tm")
    bad = {**config, "reduced": {"imdb": {"impls": ["pytm_indexed"], "seeds": [0], "epochs": 100}}}
    with pytest.raises(plan.PlanError, match="reduced.imdb.epochs is 100"):
        plan.requested_runs(bad, False)
    with pytest.raises(plan.PlanError, match="reduced names unknown experiments: mnist"):
        plan.requested_runs({**config, "reduced": {"mnist": {"impls": ["tm_cpu"], "seeds": [0], "epochs": 1}}}, False)


def test_the_configured_reduced_protocol(config):
    """The config's choice: pyTsetlinMachine reduced on IMDb and 20 Newsgroups; full elsewhere."""
    reduced = {name for name in config["experiments"] for impl in ("pytm_indexed", "pytm_nonindexed")
               if plan.reduced_protocol(config, name, impl)}
    assert reduced == {"imdb", "newsgroups20"}
    assert not any(plan.reduced_protocol(config, n, "tm_cpu") for n in config["experiments"])


# -- estimates ---------------------------------------------------------------------------------------------------

def _valid_record(experiment, impl, params, seed, kind="tm", provenance=None, epoch_train=1.0, epoch_eval=0.5,
            n_train=100) -> dict:
    """A run record of ``kind`` that the record gate (asynctm.store) accepts: TM records with one entry per
    epoch of their params, each ``epoch_train`` s of training and ``epoch_eval`` s of evaluation."""
    task = "novelty" if kind == "mlp_novelty" else "classification"
    rec = {"schema": 1, "status": "complete", "kind": kind, "scale": "paper", "experiment": experiment,
           "impl": impl, "params": params, "seed": seed, "task": task,
           "dataset": {"name": experiment, "protocol": "paper", "n_train": n_train, "max_train": None},
           "final": {"accuracy": 90.0, "f1": 89.0},
           "provenance": {"git_commit": "0" * 40, "cpu_model": "Test CPU", "gpu": None, **(provenance or {})}}
    if kind == "tm":
        named = plan.parse_tm_params(params)
        epochs = named["epochs"]
        warp = {"threads_per_clause": plan.WARP} if impl == "tm_gpu_warp" else {}
        rec.update(hyperparameters={"n_clauses": named["clauses"], "T": named["T"], "s": named["s"],
                                    "epochs": epochs, **warp},
                   epochs=[{"epoch": e + 1, "train_s": epoch_train, "eval_s": epoch_eval, "accuracy": 90.0,
                            "f1": 89.0} for e in range(epochs)],
                   timing={"train_s_total": epoch_train * epochs, "train_s_mean": epoch_train,
                           "eval_s_total": epoch_eval * epochs})
    else:
        rec.update(hyperparameters={"kernel": "linear", "C": 1.0} if kind == "svm" else {}, timing={"fit_s": 1.0})
    return rec


def _tm_record(folder: Path, experiment, impl, clauses, seed, epoch_train, epoch_eval, epochs=4, overhead=3.0,
               n_train=100):
    params = plan.tm_params_name(clauses, 50, 5.0, epochs)
    rec = _valid_record(experiment, impl, params, seed, epoch_train=epoch_train, epoch_eval=epoch_eval,
                        n_train=n_train, provenance={"wall_s": overhead + (epoch_train + epoch_eval) * epochs})
    path = folder / experiment / impl / params / f"seed{seed}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rec))


def _run(params, impl="tm_cpu", kind="tm"):
    return {"experiment": "wsd_apple", "impl": impl, "params": params, "kind": kind, "seed": 0}


def test_estimate_scales_the_nearest_records_by_clauses_examples_and_epochs(config, tmp_path):
    _tm_record(tmp_path, "wsd_apple", "tm_cpu", 300, 0, 1.0, 0.5)
    _tm_record(tmp_path, "wsd_apple", "tm_cpu", 300, 1, 2.0, 0.5)  # mean epoch 2.0 s, overhead 3 s
    _tm_record(tmp_path, "wsd_apple", "tm_cpu", 3000, 0, 100.0, 0.0)
    _tm_record(tmp_path / "smoke", "wsd_apple", "tm_cpu", 600, 0, 1e6, 0.0)  # smoke records never count
    t = estimate.load_timings(tmp_path)
    e = estimate.estimate_run(config, _run("n150_T50_s5_e10"), t)
    assert e.seconds == pytest.approx(3.0 + 10 * 2.0 / 2)  # below every record: the nearest, n300, scaled
    assert "2 record(s) at n300" in e.basis
    # between two measured counts: interpolated in clauses (n600: a ninth of the way from n300 to n3000)
    e = estimate.estimate_run(config, _run("n600_T50_s5_e10"), t)
    assert e.seconds == pytest.approx(3.0 + 10 * (2.0 + (100.0 - 2.0) / 9))
    assert "3 record(s) at n300 and n3000, interpolated" in e.basis
    assert estimate.estimate_run(config, _run("n6000_T50_s5_e1"), t).seconds == pytest.approx(3.0 + 200.0)
    assert estimate.estimate_run(config, _run("n300_T50_s5_e4"), t).seconds == pytest.approx(3.0 + 4 * 2.0)
    # more training examples (processed dataset) scale the epoch
    t.n_train[("wsd_apple", "paper")] = 300
    assert estimate.estimate_run(config, _run("n300_T50_s5_e4"), t).seconds == pytest.approx(3.0 + 4 * 6.0)
    assert estimate.estimate_run({**config, "scale": "smoke"}, _run("n300_T50_s5_e4"), t).seconds is None
    for impl, kind in (("pytm_indexed", "tm"), ("svm", "svm"), ("mlp_novelty", "mlp_novelty")):
        missing = estimate.estimate_run(config, _run("n300_T50_s5_e4", impl, kind), t)
        assert missing.seconds is None and "no " in missing.basis


def test_benchmarks_fill_in_where_no_record_is(config, tmp_path):
    bench = {"generated_by": estimate.BENCH_TM, "time_utc": "2026-01-01T00:00:00Z", "cpu": {"model": "Bench CPU"},
             "settings": [{
        "setting": "imdb", "hyperparameters": {"n_clauses": 7000},
        "dataset": {"source": {"dataset": "imdb", "protocol": "paper"}, "n_train": 1000, "max_train": None,
                    "subsample": "seeded draw"},
        "results": [{"median_epoch_s": 20.0, "metadata": {"peer": "pytm", "indexed": True, "threads": 1}},
                    {"median_epoch_s": 1.0, "metadata": {"peer": "asynctm", "backend": "cpu", "threads": 2}},
                    {"median_epoch_s": 9.0, "metadata": {"peer": "asynctm", "backend": "cpu", "threads": 1}}]}]}
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "b.json").write_text(json.dumps(bench))
    # The GPU campaign's benchmark lies in the same folder, in its own layout (results keyed by implementation).
    gpu_bench = {"generated_by": "benchmarks/bench_gpu.py", "settings": [{
        "setting": "imdb", "hyperparameters": {"n_clauses": 7000}, "dataset": {"n_train": 25000},
        "results": {"tm_gpu": {"median_epoch_s": 0.5}, "pytm_cuda": {"median_epoch_s": 2.0}}}]}
    (tmp_path / "bench" / "gpu.json").write_text(json.dumps(gpu_bench))
    run = {"experiment": "imdb", "impl": "pytm_indexed", "params": "n7000_T80_s27_e5", "kind": "tm", "seed": 0}
    t = estimate.load_timings(tmp_path / "results", tmp_path / "bench")
    unknown = estimate.estimate_run(config, run, t)  # a subsample, and the full size is not known yet
    assert unknown.seconds is None and "training-set size unknown" in unknown.basis
    meta = tmp_path / "data" / "processed" / "imdb" / "paper" / "meta.json"
    meta.parent.mkdir(parents=True)
    meta.write_text(json.dumps({"counts": {"train": 25000, "test": 25000}}))
    t = estimate.load_timings(tmp_path / "results", tmp_path / "bench", tmp_path / "data")
    assert estimate.estimate_run(config, run, t).seconds == pytest.approx(5 * 20.0 * 25)
    cpu = estimate.estimate_run(config, {**run, "impl": "tm_cpu", "params": "n3500_T80_s27_e100"}, t)
    assert cpu.seconds == pytest.approx(100 * 1.0 * 0.5 * 25) and "training only" in cpu.basis


def test_the_papers_gpu_design_and_ours_are_two_implementations(config):
    """tm_gpu runs the paper's design (one thread per clause), tm_gpu_warp a warp per clause: each its own runs,
    records and estimates, both requested only where a GPU is."""
    params = plan.main_params(config, "wsd_apple")
    one = plan.tm_run_settings(config, "wsd_apple", "tm_gpu", params, 0)["hyperparameters"]
    warp = plan.tm_run_settings(config, "wsd_apple", "tm_gpu_warp", params, 0)["hyperparameters"]
    assert "threads_per_clause" not in one and warp["threads_per_clause"] == plan.WARP == 32
    assert {k: v for k, v in warp.items() if k != "threads_per_clause"} == one
    assert "threads_per_clause" not in plan.tm_run_settings(config, "wsd_apple", "tm_cpu", params, 0)["hyperparameters"]
    on_gpu = {(r["impl"], r["params"]) for r in plan.requested_runs(config, host_gpu=True)
              if r["experiment"] == "semeval"}
    assert {("tm_gpu", "n40_T15_s3.9_e100"), ("tm_gpu_warp", "n40_T15_s3.9_e100"),
            ("tm_gpu", "n15000_T15_s3.9_e5"), ("tm_gpu_warp", "n15000_T15_s3.9_e5")} <= on_gpu
    assert not {r["impl"] for r in plan.requested_runs(config, host_gpu=False)} & set(plan.GPU_IMPLS)
    for impl in plan.GPU_IMPLS:
        assert plan.gap_reason(config, "semeval", impl, host_gpu=False) == plan.REASON_NO_GPU
        assert plan.gap_reason({**config, "gpu": False}, "semeval", impl, host_gpu=True) == plan.REASON_GPU_OFF
        assert estimate.run_threads(config, impl, 16) == 1  # one CPU thread drives the GPU
    assert plan.gap_reason({**config, "impls": ["tm_gpu", "tm_cpu"]}, "semeval", "tm_gpu_warp",
                           host_gpu=True) == plan.REASON_NOT_REQUESTED
    with pytest.raises(plan.PlanError, match="the ablation runs our TM only"):
        plan.ablation_run_settings(config, "wsd_apple", "tm_gpu_warp", params, "async_linear", 0)


def test_estimates_of_the_two_gpu_builds_come_from_their_own_records(config, tmp_path):
    _tm_record(tmp_path, "wsd_apple", "tm_gpu_warp", 300, 0, 0.1, 0.0)
    t = estimate.load_timings(tmp_path)
    assert estimate.estimate_run(config, _run("n300_T50_s5_e4", "tm_gpu_warp"), t).seconds == pytest.approx(
        3.0 + 4 * 0.1)
    # the paper's design has no record here: its time is not the warp build's
    assert estimate.estimate_run(config, _run("n300_T50_s5_e4", "tm_gpu"), t).seconds is None


# -- the budget ------------------------------------------------------------------------------------------------------

def _row(experiment, impl, params, kind, missing, seconds, present=()):
    return estimate.Row(experiment, impl, params, kind, list(present), list(missing),
                        estimate.Estimate(seconds, "test"))


def test_budget_starts_the_cheapest_known_runs_within_it(config):
    rows = [_row("imdb", "pytm_indexed", "n7000_T80_s27_e5", "tm", [0, 1], 4000.0),
            _row("semeval", "tm_cpu", "n40_T15_s3.9_e100", "tm", [0, 1, 2], 100.0),
            _row("wsd_java", "tm_cpu", "n300_T50_s5_e100", "tm", [0], None),
            _row("bbc_sport", "tm_cpu", "n5000_T100_s15_e100", "tm", [0], 50.0),
            _row("bbc_sport", "mlp_novelty", "tm_cpu.n5000_T100_s15_e100", "mlp_novelty", [0, 1], 10.0)]
    estimate.budget({**config, "run_budget_hours": 0.1}, rows)  # 360 s
    started = {(r.experiment, r.impl): r.started for r in rows}
    # 50 + 100 + 100 + 100 = 350 s; the MLP of seed 0 (its TM starts) fits in the last 10 s, seed 1's TM is missing
    assert started == {("imdb", "pytm_indexed"): [], ("semeval", "tm_cpu"): [0, 1, 2], ("wsd_java", "tm_cpu"): [],
                       ("bbc_sport", "tm_cpu"): [0], ("bbc_sport", "mlp_novelty"): [0]}
    estimate.budget({**config, "run_budget_hours": 0.0}, rows)
    assert not any(r.started for r in rows)
    for everything in ({**config, "run_budget_hours": math.inf}, {**config, "scale": "smoke"}):
        estimate.budget(everything, rows)
        assert all(r.started == r.missing for r in rows)  # unknown estimates included
    nothing = {**config, "run_budget_hours": 0.0}
    rows = [*rows[:3], _row("wsd_apple", "tm_cpu", "n300_T50_s5_e100", "tm", [], None, [0])]
    estimate.budget(nothing, rows)
    note = estimate.budget_note(nothing, rows)
    assert "6 of 7 requested runs have no record; the default target starts 0 of them" in note
    assert "imdb: 2 runs, estimated 2.2 h  ->  .venv/bin/snakemake --cores all exp_imdb" in note
    assert "wsd_java: 1 runs, 1 with no estimate" in note and "run_budget_hours=inf" in note


def test_wall_hours_share_the_cores_but_never_undercut_the_longest_run(config):
    def wall(rows):  # the last column of each totals line, by implementation
        return {line.split()[0]: float(line.split()[-1]) for line in estimate.totals(config, rows, 2)[2:]}

    one = [_row("semeval", "pytm_nonindexed", "n40_T15_s3.9_e100", "tm", [4], 3600.0)]
    assert wall(one) == {"pytm_nonindexed": 1.0, "all": 1.0}  # one 1-thread hour: an hour on any number of cores
    four = [_row("semeval", "pytm_nonindexed", "n40_T15_s3.9_e100", "tm", [1, 2, 3, 4], 3600.0),
            _row("semeval", "tm_cpu", "n40_T15_s3.9_e100", "tm", [0], 360.0)]
    # four 1-thread hours share the 2 cores (2 h); tm_cpu takes both cores for its 0.1 h
    assert wall(four) == {"pytm_nonindexed": 2.0, "tm_cpu": 0.1, "all": 2.1}
    unknown = [_row("wsd_java", "tm_cpu", "n300_T50_s5_e100", "tm", [0], None)]
    assert estimate.totals(config, unknown, 2)[2].split()[-1] == "-"


# -- plan --status / --estimate --------------------------------------------------------------------------------------

def test_plan_status_and_estimate_are_grouped_with_totals(repo_root, capsys, monkeypatch):
    monkeypatch.chdir(repo_root)
    assert experiments_main(["plan", "--status", "--cores", "2"]) == 0
    status = capsys.readouterr().out
    config = yaml.safe_load((repo_root / "config/config.yaml").read_text())
    requested = plan.requested_runs(config, False)
    missing = [r for r in requested if not (repo_root / plan.record_path(config, r)).exists()]
    assert f"{len(requested)} records requested under results/" in status
    assert status.count("\n") < len(requested)  # grouped, not a line per record
    assert "wsd_apple     tm_cpu" in status
    assert ("wall hours on 2 cores" in status) == bool(missing)  # totals while runs are missing
    sweep = [line.split()[2] for line in status.splitlines() if line.startswith("bike_sharing  tm_cpu")]
    assert sweep == sorted(sweep, key=lambda p: plan.parse_tm_params(p)["clauses"]) and len(sweep) == 7
    assert experiments_main(["plan", "--estimate", "--cores", "2", "--budget-hours", "0"]) == 0
    est = capsys.readouterr().out
    assert "wsd_apple     tm_cpu" not in est  # complete groups are left out of --estimate
    assert ("\nall " in est) == bool(missing) and "run_budget_hours=inf" in est  # totals while runs are missing
    assert ("Every requested record is present: nothing to run." in est) == (not missing)
    # the reduced protocol's group is listed while one of its records is missing (the committed records decide)
    reduced_missing = any(not (repo_root / f"results/imdb/pytm_indexed/n7000_T80_s27_e5/seed{k}.json").exists()
                          for k in plan.run_seeds(config, "imdb", "pytm_indexed"))
    listed = re.search(r"^imdb +pytm_indexed +n7000_T80_s27_e5 ", est, re.M) is not None  # columns fit the rows
    assert listed == reduced_missing
    assert experiments_main(["plan", "--estimate", "--full-protocol"]) == 0
    full = capsys.readouterr().out
    assert re.search(r"^imdb +pytm_indexed +n7000_T80_s27_e100 ", full, re.M)
    assert "\nall " in full and "wall hours on" in full  # the full protocol's runs are missing: their totals
    assert "imdb          pytm_indexed     n7000_T80_s27_e5 " not in full


def test_plan_busy_lists_the_records_timed_on_a_busy_machine(config, tmp_path, capsys, monkeypatch):
    """Records whose run ended with a 1-minute load average above the cores + 1 (TM and SVM: the kinds whose
    times the tables report) are listed with the one command that times them again; quiet ones are not."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.yaml").write_text(yaml.safe_dump({**config, "results_dir": "res"}))
    shutil.copy(REPO / "workflow" / "schemas" / "config.schema.yaml",
                tmp_path / "config" / "schema.yaml")
    assert experiments_main(["plan", "--busy"]) == 0
    assert "No requested record was timed on a busy machine" in capsys.readouterr().out

    def record(experiment, impl, params, seed, kind, load):
        path = tmp_path / "res" / experiment / impl / params / f"seed{seed}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(_valid_record(experiment, impl, params, seed, kind, provenance={
            "load_average_1min_at_end": load, "logical_cores": 2, "threads": 1})))
        return path.relative_to(tmp_path).as_posix()

    apple = plan.main_params(config, "wsd_apple")
    busy_tm = record("wsd_apple", "pytm_indexed", apple, 1, "tm", 3.5)
    busy_svm = record("wsd_apple", "svm", "linear_C1", 2, "svm", 6.25)
    record("wsd_apple", "pytm_indexed", apple, 0, "tm", 3.0)  # cores + 1: still quiet
    record("bbc_sport", "mlp_novelty", "tm_cpu." + plan.main_params(config, "bbc_sport"), 0, "mlp_novelty", 9.0)
    record("wsd_apple", "tm_cpu", "n999_T50_s5_e100", 0, "tm", 9.0)  # not requested by the config
    assert experiments_main(["plan", "--busy"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("2 requested record(s) timed on a busy machine")
    assert f"3.50      2        1  Test CPU  {busy_tm}" in out and f"6.25      2        1  Test CPU  {busy_svm}" in out
    assert out.rstrip().endswith(".venv/bin/snakemake --cores all tables figures report --config run_missing=false "
                                 f"--forcerun {busy_tm} {busy_svm}")
    assert "seed0.json" not in out


# -- the workflow ----------------------------------------------------------------------------------------------------

def test_default_target_starts_only_runs_within_the_budget(repo_root, tmp_path, monkeypatch):
    """A dry run on a results folder holding some committed WSD apple records: the default target plans the
    missing runs that fit the budget (cheapest first) and lists the rest with the command that runs them."""
    for name in ("Snakefile", "config", "workflow", "profiles", "paper_tables/reference"):
        src = repo_root / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / name)
    res = tmp_path / "res"
    for sub in ("tm_cpu/n300_T50_s5_e100", "svm/linear_C1"):
        shutil.copytree(repo_root / "results" / "wsd_apple" / sub, res / "wsd_apple" / sub)
    for impl in ("pytm_indexed", "pytm_nonindexed"):
        dst = res / "wsd_apple" / impl / "n300_T50_s5_e100"
        dst.mkdir(parents=True)
        shutil.copy(repo_root / "results" / "wsd_apple" / impl / "n300_T50_s5_e100" / "seed0.json", dst)
    cfg_path = tmp_path / "config" / "config.yaml"
    cfg = yaml.safe_load(cfg_path.read_text())
    cfg.update(datasets=["wsd_apple"], results_dir="res", estimate_benchmarks=None, gpu=False)

    monkeypatch.chdir(tmp_path)  # record paths are relative, as Snakemake sees them
    rows = estimate.status(cfg, plan.requested_runs(cfg, False), estimate.load_timings("res"))
    # A budget that holds the cheapest missing runs but not all 8 (the estimates come from the copied records).
    each = sorted(row.each.seconds for row in rows for _ in row.missing)
    assert len(each) == 8 and each[0] < each[-1]
    cfg["run_budget_hours"] = (each[0] + 1.0) / 3600
    cfg_path.write_text(yaml.safe_dump(cfg))
    estimate.budget(cfg, rows)
    expected = sorted(estimate.started_paths(cfg, rows))
    assert 0 < len(expected) < 8

    def dry(*args):
        r = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", "-n", *args], cwd=tmp_path,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr + r.stdout
        return r.stdout + r.stderr

    import re

    out = dry()
    planned = sorted(set(re.findall(r"output: (res/wsd_apple/\S+/seed\d\.json)", out)))
    assert planned == expected
    assert f"8 of 20 requested runs have no record; the default target starts {len(expected)} of them" in out
    assert "wsd_apple: " in out and ".venv/bin/snakemake --cores all exp_wsd_apple" in out
    everything = sorted(set(re.findall(r"output: (res/wsd_apple/\S+/seed\d\.json)", dry("--config",
                                                                                         "run_budget_hours=inf"))))
    assert len(everything) == 8 and set(expected) < set(everything)
