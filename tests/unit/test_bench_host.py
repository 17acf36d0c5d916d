"""The same-host benchmark (benchmarks/bench_host.py): the jobs of the host_peers step, one pyTsetlinMachine run
timed unit by unit until its end time on a tiny dataset, and the one-line stops."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from asynctm.config_check import load_config
from asynctm.experiments import plan
from gpu_host.steps import PAPER_ORDER
from tests.helpers import REPO, load_benchmark_script, tiny_wsd_apple

bench = load_benchmark_script("bench_host")


@pytest.fixture(scope="module")
def config():
    return load_config(REPO / "config" / "config.yaml")


@pytest.mark.parametrize(("task", "impls"), [("classification", ("pytm_indexed", "pytm_nonindexed")),
                                             ("novelty", ("pytm_indexed", "pytm_nonindexed")),
                                             ("regression", ("pytm_nonindexed",))])
def test_cpu_impls(task, impls):
    assert bench.cpu_impls(task) == impls


def test_jobs_order(config):
    cfg = {**config, "experiments": {**config["experiments"], "extra": {"task": "regression"}}}
    experiments = ["extra", "blogfeedback", "bbc_sport", "imdb", "bike_sharing", "wsd_apple"]
    cpu, gpu = bench.jobs(cfg, experiments, PAPER_ORDER)
    order = [e for e in PAPER_ORDER if e in experiments] + ["extra"]
    assert order != experiments
    assert gpu == [(e, impl) for e in order for impl in plan.GPU_IMPLS]
    assert cpu[:2] == [("imdb", "pytm_indexed"), ("imdb", "pytm_nonindexed")]  # parts first: the longest
    assert sorted(cpu) == sorted((e, i) for e in experiments for i in bench.cpu_impls(plan.task(cfg, e)))
    assert ("bike_sharing", "pytm_indexed") not in cpu and ("bbc_sport", "pytm_indexed") in cpu


def test_a_pytsetlinmachine_run_is_timed_epoch_by_epoch_on_its_core_until_its_end(tmp_path):
    """On a GPU workstation's datasets (--data-dir, --config): epochs from a fresh model until the end time less the
    margin, each unit's wall and CPU time and the load, the core asked for and got; the file is complete at the end."""
    pytest.importorskip("pyTsetlinMachine.tm")
    data_dir, conf = tiny_wsd_apple(tmp_path)
    out = tmp_path / "run.json"
    until = time.time() + bench.WORKER_MARGIN_S + 3
    r = subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_host.py"), "--data-dir", str(data_dir),
                        "--config", str(conf), "--experiment", "wsd_apple", "--impl", "pytm_nonindexed", "--cpu", "0",
                        "--until", f"{until}", "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]  # a process of its own: it pins itself to the core
    assert time.time() <= until + 2  # no unit starts that would end after it
    run = json.loads(out.read_text())
    assert (run["experiment"], run["impl"], run["seed"], run["parts"]) == ("wsd_apple", "pytm_nonindexed",
                                                                           bench.SEED, 1)
    assert run["params"] == "n10_T10_s3_e100" and run["hyperparameters"]["n_clauses"] == 10
    assert run["dataset"]["n_train"] == 120 and run["gpu"] is None and run["warmup"] is None
    assert run["cpu_asked"] == [0] and run["cpu_affinity"] == [0] and run["pin_error"] is None
    assert run["stopped"].startswith("the call's end: no time for epoch") and "unit_running" not in run
    assert len(run["units"]) >= 2
    assert [u["epoch"] for u in run["units"]] == list(range(1, len(run["units"]) + 1))
    assert all(u["wall_s"] > 0 and u["cpu_s"] >= 0 and u["rows"] == 120 for u in run["units"])
    assert run["ended_utc"] >= run["started_utc"]


def test_what_is_missing_stops_in_one_line(tmp_path, capsys):
    data_dir, conf = tiny_wsd_apple(tmp_path)
    base = ["--impl", "pytm_nonindexed", "--until", f"{time.time() + 60}", "--out", str(tmp_path / "x.json")]
    with pytest.raises(SystemExit) as stop:
        bench.main(["--data-dir", str(data_dir), "--config", str(conf), "--experiment", "nowhere", *base])
    assert "--experiment nowhere: not an experiment of the configuration" in str(stop.value)
    assert "\n" not in str(stop.value)
    with pytest.raises(SystemExit) as stop:
        bench.main(["--campaign-dir", str(tmp_path / "none"), "--experiment", "wsd_apple", *base])
    assert "campaign.json: not a staged campaign" in str(stop.value) and "\n" not in str(stop.value)
    assert not (tmp_path / "x.json").exists()
