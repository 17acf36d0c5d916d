"""The tally ablation: its plan, its table and figures from records alone, and its DAG end to end (smoke)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from asynctm import store
from asynctm.artifacts import ablation
from asynctm.experiments import plan
from tests.helpers import copy_workflow, valid_tm_record


@pytest.fixture
def config(repo_root):
    return yaml.safe_load((repo_root / "config" / "config.yaml").read_text())


def test_plan_covers_every_variant_seed_and_sweep_point(config):
    runs = plan.ablation_runs(config)
    apple = {(r["variant"], r["seed"]) for r in runs if r["experiment"] == "wsd_apple"}
    assert apple == {(v, s) for v in ("async_linear", "sync_linear", "async_linear_staggered",
                                      "sync_linear_staggered") for s in range(5)}
    bike = [r for r in runs if r["experiment"] == "bike_sharing"]
    assert {r["variant"] for r in bike} == {f"{t}_{rule}{o}" for t in ("async", "sync")
                                            for rule in ("linear", "quadratic") for o in ("", "_staggered")}
    assert sorted({plan.parse_tm_params(r["params"])["clauses"] for r in bike}) == [40, 80, 160, 320, 640, 1280, 2560]
    assert len(runs) == len({plan.ablation_record_path(config, r) for r in runs})  # the main point is not doubled
    path = plan.ablation_record_path(config, runs[0])
    assert path.startswith("results/ablation/") and path.endswith("/seed0.json")
    s = plan.ablation_run_settings(config, "bike_sharing", "tm_cpu", "n1280_T1280_s1.5_e100", "sync_quadratic", 3)
    assert s["hyperparameters"]["tally"] == "sync" and s["hyperparameters"]["regression_rule"] == "quadratic"
    assert "order" not in s["hyperparameters"]  # dataset order: the settings read as before the order existed
    s = plan.ablation_run_settings(config, "wsd_apple", "tm_cpu", "n300_T50_s5_e100", "async_linear_staggered", 1)
    assert s["hyperparameters"]["order"] == "staggered" and s["hyperparameters"]["tally"] == "async"
    for bad_variant in ("async_linear_dataset", "async_linear_shuffled", "async", "async_linear_staggered_x",
                        "async_linear_warp_staggered", "async_warp", "async_linear_8threads"):
        with pytest.raises(plan.PlanError, match="does not read"):
            plan.ablation_run_settings(config, "wsd_apple", "tm_cpu", "n300_T50_s5_e100", bad_variant, 0)
    only_dataset = copy.deepcopy(config)
    del only_dataset["ablation"]["orders"]
    assert not any(r["variant"].endswith("_staggered") for r in plan.ablation_runs(only_dataset))
    with pytest.raises(plan.PlanError, match="regression experiments only"):
        plan.ablation_run_settings(config, "wsd_apple", "tm_cpu", "n300_T50_s5_e100", "sync_quadratic", 0)
    # The GPU build (the campaign's ablation step) runs every variant also with a warp per clause; the variant
    # alone sets a run's threads per clause, whatever gpu_threads_per_clause says; the CPU build has none.
    gpu = copy.deepcopy(config)
    gpu["ablation"]["impl"] = "tm_gpu"
    assert {r["variant"] for r in plan.ablation_runs(gpu) if r["experiment"] == "wsd_apple"} == {
        v + w for v in ("async_linear", "sync_linear", "async_linear_staggered", "sync_linear_staggered")
        for w in ("", "_warp")}
    gpu["gpu_threads_per_clause"] = 8
    s = plan.ablation_run_settings(gpu, "bike_sharing", "tm_gpu", "n1280_T1280_s1.5_e100", "sync_linear_warp", 0)
    assert (s["hyperparameters"]["threads_per_clause"], s["hyperparameters"]["tally"]) == (32, "sync")
    s = plan.ablation_run_settings(gpu, "bike_sharing", "tm_gpu", "n1280_T1280_s1.5_e100", "sync_linear", 0)
    assert "threads_per_clause" not in s["hyperparameters"]
    assert plan.parse_ablation_variant("sync_quadratic_staggered_warp") == {
        "tally": "sync", "regression_rule": "quadratic", "order": "staggered", "threads_per_clause": 32}
    with pytest.raises(plan.PlanError, match="the GPU build's schedule"):
        plan.ablation_run_settings(config, "wsd_apple", "tm_cpu", "n300_T50_s5_e100", "async_linear_warp", 0)
    assert not any(r["variant"].endswith("_warp") for r in plan.ablation_runs(config))  # impl tm_cpu
    bad = copy.deepcopy(config)
    bad["ablation"]["experiments"] = ["wsd_banana"]
    with pytest.raises(plan.PlanError, match="unknown experiments: wsd_banana"):
        plan.ablation_runs(bad)


def _record(experiment, params, variant, seed, metric, values, literals, task):
    tally, _, rule = variant.split("_")[0], None, variant.split("_")[1]
    clauses = plan.parse_tm_params(params)["clauses"]
    epochs = [{"epoch": i + 1, "train_s": 0.5, "eval_s": 0.1, metric: v,
               "diagnostics": {"literals_per_clause": lit, "positive_literals_per_clause": lit / 4,
                               "negated_literals_per_clause": 3 * lit / 4, "type_ia_feedback": 10 * (i + 1),
                               "type_ib_feedback": 20, "type_ii_feedback": 30}}
              for i, (v, lit) in enumerate(zip(values, literals))]
    return valid_tm_record({
        "schema": 1, "status": "complete", "kind": "tm", "experiment": experiment, "impl": "tm_cpu",
        "params": params, "seed": seed, "scale": "paper", "task": task,
        "hyperparameters": {"n_clauses": clauses, "tally": tally, "regression_rule": rule},
        "epochs": epochs,
        "provenance": {"threads": 1, "cpu_model": "Test CPU", "load_average_1min_at_end": 2.5 + seed}})


def _write(root: Path, rec: dict, variant: str) -> Path:
    path = root / "ablation" / rec["experiment"] / "tm_cpu" / rec["params"] / variant / f"seed{rec['seed']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rec))
    return path


@pytest.fixture
def records(tmp_path):
    root = tmp_path / "results"
    for seed in (0, 1):
        for variant, base in (("async_linear", 80.0), ("sync_linear", 70.0)):
            _write(root, _record("wsd_apple", "n300_T50_s5_e12", variant, seed, "accuracy",
                                 [base + seed + i for i in range(12)], [100.0 + i for i in range(12)],
                                 "classification"), variant)
    for clauses in (40, 1280):
        for variant in ("async_linear", "sync_quadratic"):
            _write(root, _record("bike_sharing", f"n{clauses}_T1280_s1.5_e3", variant, 0, "mae",
                                 [50.0 - i for i in range(3)], [5.0] * 3, "regression"), variant)
    return root


def test_table_and_figures_from_records_alone(records, tmp_path):
    written = ablation.build(records, tmp_path / "t", tmp_path / "f")
    md = (tmp_path / "t" / "ablation.md").read_text()
    csv = (tmp_path / "t" / "ablation.csv").read_text().splitlines()
    # WSD apple async: seeds 0 and 1 end at 80+11 and 81+11 -> final 91.50 ± 0.71; last 10 epochs 2..11.
    assert ("| WSD Apple | CPU (Test CPU) | 300 | async | linear | dataset | 2 | accuracy (%) | 91.50 ± 0.71 | "
            "87.00 ± 0.71 | 109.0 ± 0.0 | 111.0 ± 0.0 | 83.2 ± 0.0 |") in md
    assert "| WSD Apple | CPU (Test CPU) | 300 | sync | linear | dataset | 2 | accuracy (%) | 81.50 ± 0.71 |" in md
    assert "75 / 20 / 30" in md  # Type Ia per epoch: mean of 30..120 over the last 10 epochs
    assert "load average at the end of the runs 2.50-3.50" in md
    assert csv[1].startswith("wsd_apple,tm_cpu,n300_T50_s5_e12,300,async,linear,dataset,,2,accuracy,91.5,0.707107,")
    assert [row.split(",")[3] for row in csv[1:]] == ["300"] * 2 + ["40", "40", "1280", "1280"]
    assert sorted(p.name for p in (tmp_path / "f").iterdir()) == sorted(
        f"{n}.{e}" for n in ablation.FIGURES for e in ("png", "pdf", "caption.txt"))
    assert "4 records" in (tmp_path / "f" / "fig_ablation_vs_clauses.caption.txt").read_text()
    first = {p: p.read_bytes() for p in written}
    ablation.build(records, tmp_path / "t", tmp_path / "f")
    assert all(p.read_bytes() == b for p, b in first.items())  # byte-stable


def test_the_staggered_order_and_the_gpu_build_get_rows_and_lines_of_their_own(records, tmp_path):
    """A staggered variant (its order in the hyperparameters) and a GPU record of the same variant as a CPU one are
    kept apart: a row each, a line each, and the GPU named in the hardware line."""
    staggered = _record("wsd_apple", "n300_T50_s5_e12", "async_linear_staggered", 0, "accuracy",
                        [70.0 + i for i in range(12)], [50.0] * 12, "classification")
    staggered["hyperparameters"]["order"] = "staggered"
    _write(records, staggered, "async_linear_staggered")
    gpu = _record("wsd_apple", "n300_T50_s5_e12", "async_linear", 0, "accuracy", [60.0] * 12, [40.0] * 12,
                  "classification")
    gpu["impl"] = "tm_gpu"
    gpu["provenance"]["gpu"] = {"name": "Test GPU"}
    path = records / "ablation/wsd_apple/tm_gpu/n300_T50_s5_e12/async_linear/seed0.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(gpu))
    warp = copy.deepcopy(gpu)
    warp["hyperparameters"]["threads_per_clause"] = 32
    warp_path = records / "ablation/wsd_apple/tm_gpu/n300_T50_s5_e12/async_linear_warp/seed0.json"
    warp_path.parent.mkdir(parents=True)
    warp_path.write_text(json.dumps(warp))
    ablation.build(records, tmp_path / "t", tmp_path / "f")
    md = (tmp_path / "t" / "ablation.md").read_text()
    apple = [line for line in md.splitlines() if line.startswith("| WSD Apple |")]
    assert [line.split(" | ")[1:6] for line in apple] == [
        ["CPU (Test CPU)", "300", "async", "linear", "dataset"], ["CPU (Test CPU)", "300", "sync", "linear", "dataset"],
        ["CPU (Test CPU)", "300", "async", "linear", "staggered"],
        ["GPU (Test GPU)", "300", "async", "linear", "dataset"],
        ["GPU, a warp per clause (Test GPU)", "300", "async", "linear", "dataset"]]
    assert "| GPU (Test GPU) | 300 | async | linear | dataset | 1 | accuracy (%) | 60.00 |" in md
    assert "GPU Test GPU, threads per clause 1" in md
    csv = (tmp_path / "t" / "ablation.csv").read_text().splitlines()
    assert [line.split(",")[7] for line in csv if ",tm_gpu," in line] == ["1", "32"]  # threads_per_clause
    figs = ablation.figures(ablation.load(records))
    labels = [line.get_label() for line in figs["fig_ablation_metric_over_epochs"][0].axes[0].get_lines()]
    assert labels == ["async", "sync", "async, staggered", "async (GPU)", "async (GPU, a warp per clause)"]
    legend = figs["fig_ablation_metric_over_epochs"][0].legends[0]  # one for the figure: Bike's quadratic too
    assert [t.get_text() for t in legend.get_texts()] == labels + ["sync, quadratic"]
    # A staggered folder whose record does not say so is refused.
    del staggered["hyperparameters"]["order"]
    _write(records, staggered, "async_linear_staggered")
    with pytest.raises(store.RecordError, match="make variant 'async_linear', its folder is "
                                                "'async_linear_staggered'"):
        ablation.load(records)
    _write(records, {**staggered, "hyperparameters": {**staggered["hyperparameters"], "order": "staggered"}},
           "async_linear_staggered")
    # A warp's folder whose record ran one thread per clause is refused too.
    del warp["hyperparameters"]["threads_per_clause"]
    warp_path.write_text(json.dumps(warp))
    with pytest.raises(store.RecordError, match="make variant 'async_linear', its folder is 'async_linear_warp'"):
        ablation.load(records)


def test_a_bad_record_is_named_and_nothing_is_written(records, tmp_path, capsys):
    path = next((records / "ablation" / "wsd_apple").rglob("sync_linear/seed0.json"))
    rec = json.loads(path.read_text())
    rec["hyperparameters"]["tally"] = "async"
    path.write_text(json.dumps(rec))
    assert ablation.main(["--results", str(records), "--tables-dir", str(tmp_path / "t"),
                          "--figures-dir", str(tmp_path / "f")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(path) in err and "make variant 'async_linear'" in err
    assert not (tmp_path / "t").exists() and not (tmp_path / "f").exists()


def test_the_ablation_dag_end_to_end_on_the_mirror(repo_root, tmp_path, mirror):
    """`snakemake ablation` at smoke scale, cut to Bike Sharing (both tallies x both update rules x both example
    orders; its sweep point equals the main setting) to keep it short: every record, with the switches in its
    hyperparameters and the diagnostics in every epoch entry, then the table and figures. (Classification records go
    through the same runner in the main smoke DAG, tests/workflow/test_workflow.py.)"""
    copy_workflow(tmp_path)
    cfg_path = tmp_path / "config" / "config.yaml"
    cfg = yaml.safe_load(cfg_path.read_text())
    cfg["datasets"] = ["bike_sharing"]
    cfg["ablation"]["experiments"] = ["bike_sharing"]
    cfg["smoke"]["sweep_clauses"] = [cfg["smoke"]["max_clauses"]]
    cfg_path.write_text(yaml.safe_dump(cfg))
    r = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", "ablation", "--config", "scale=smoke",
                        f"data_mirror={mirror}"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    records = sorted((tmp_path / "results" / "smoke" / "ablation").rglob("seed*.json"))
    assert len(records) == 8  # 2 tallies x 2 rules x 2 orders
    for path in records:
        rec = json.loads(path.read_text())
        h = rec["hyperparameters"]
        assert path.parent.name == plan.ablation_variant(h["tally"], h["regression_rule"], h.get("order", "dataset"))
        assert rec["provenance"]["threads"] == 1
        for e in rec["epochs"]:
            d = e["diagnostics"]
            assert d["literals_per_clause"] == pytest.approx(d["positive_literals_per_clause"] +
                                                             d["negated_literals_per_clause"])
            assert min(d["type_ia_feedback"], d["type_ib_feedback"], d["type_ii_feedback"]) >= 0
        assert "diagnostics" not in rec["final"]
    md = (tmp_path / "results" / "smoke" / "paper_tables" / "ablation.md").read_text()
    assert md.count("| Bike Sharing |") == 8
    assert "| sync | quadratic | dataset | 1 | MAE |" in md and "| async | linear | staggered | 1 | MAE |" in md
    again = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", "-n", "ablation", "--config",
                            "scale=smoke", f"data_mirror={mirror}"], cwd=tmp_path, capture_output=True, text=True)
    assert "Nothing to be done" in again.stdout + again.stderr
