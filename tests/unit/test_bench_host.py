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


def _one_run(tmp_path, impl: str, *extra: str, seconds: float = 3) -> dict:
    data_dir, conf = tiny_wsd_apple(tmp_path)
    out = tmp_path / f"{impl}.json"
    until = time.time() + bench.WORKER_MARGIN_S + seconds
    r = subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_host.py"), "--data-dir", str(data_dir),
                        "--config", str(conf), "--experiment", "wsd_apple", "--impl", impl, "--until", f"{until}",
                        "--out", str(out), *extra], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(out.read_text())


def test_our_cpu_build_is_timed_after_a_warm_up_on_every_core_it_may_use(tmp_path):
    """Timed as our GPU builds are: a warm-up fit that compiles the kernels, then a fresh model's epochs up to
    OURS_EPOCHS; its threads are the cores the process may use, and it runs whole epochs, never parts."""
    run = _one_run(tmp_path, "tm_cpu", seconds=60)
    assert run["warmup"] is not None and run["warmup"]["wall_s"] > 0
    assert run["threads"] == len(run["cpu_affinity"]) and run["cpu_asked"] is None
    assert run["backend"] == f"cpu (ours, {run['threads']} threads)" and run["gpu"] is None and run["parts"] == 1
    assert 2 <= len(run["units"]) <= bench.OURS_EPOCHS
    assert run["stopped"] == f"{len(run['units'])} epochs timed"
    assert run["git"]["commit"] is None or len(run["git"]["commit"]) == 40


def test_max_epochs_stops_pytsetlinmachine_after_that_many_epochs(tmp_path):
    pytest.importorskip("pyTsetlinMachine.tm")
    run = _one_run(tmp_path, "pytm_nonindexed", "--max-epochs", "2", seconds=60)
    assert [u["epoch"] for u in run["units"]] == [1, 2] and run["stopped"] == "2 epochs timed"
    assert run["threads"] == 1 and run["backend"] == "cpu (pyTsetlinMachine)"


def test_cpu_host_runs_pytsetlinmachine_pinned_and_then_our_cpu_build_alone(tmp_path, config):
    """--cpu-host: pyTsetlinMachine's runs each pinned to a core of its own, at most as many at once as there are
    cores, then our CPU build on every core once they have all ended; the manifest in the campaign's layout."""
    pytest.importorskip("pyTsetlinMachine.tm")
    data_dir, conf = tiny_wsd_apple(tmp_path)
    said = []
    manifest_path = bench.cpu_host(load_config(conf), data_dir, ["wsd_apple"], tmp_path / "campaign",
                                   ["--config", str(conf)], pytm_epochs=2, run_s=120, say=said.append)
    manifest = json.loads(manifest_path.read_text())
    folder = tmp_path / "campaign" / manifest_path.stem
    assert manifest_path.stem.startswith("host_peers_cpu_") and folder.is_dir()
    assert manifest["host_peers"]["folder"] == f"benchmarks/results/campaign/{manifest_path.stem}"
    assert sorted(manifest["done"]) == ["wsd_apple/pytm_indexed", "wsd_apple/pytm_nonindexed", "wsd_apple/tm_cpu"]
    assert manifest["skipped"] == [] and len(said) == 4
    runs = {impl: json.loads((folder / f"wsd_apple_{impl}.json").read_text())
            for impl in ("pytm_indexed", "pytm_nonindexed", "tm_cpu")}
    cores = manifest["host_peers"]["cores"]
    for impl in ("pytm_indexed", "pytm_nonindexed"):
        assert len(runs[impl]["cpu_affinity"]) == 1 and runs[impl]["cpu_asked"] == runs[impl]["cpu_affinity"]
        assert len(runs[impl]["units"]) == 2 and runs[impl]["ended_utc"] <= runs["tm_cpu"]["started_utc"]
    if cores >= 2:  # two at once, on two cores
        assert runs["pytm_indexed"]["cpu_affinity"] != runs["pytm_nonindexed"]["cpu_affinity"]
    assert runs["tm_cpu"]["threads"] == cores and runs["tm_cpu"]["cpu_asked"] is None
    assert (folder / "logs" / "wsd_apple_tm_cpu.log").is_file()
    assert manifest["host_peers"]["ended_utc"] >= manifest["host_peers"]["started_utc"]


def test_cpu_host_and_one_run_stop_in_one_line(tmp_path):
    data_dir, conf = tiny_wsd_apple(tmp_path)
    where = ["--data-dir", str(data_dir), "--config", str(conf)]
    with pytest.raises(SystemExit) as stop:
        bench.main([*where, "--experiment", "wsd_apple"])
    assert str(stop.value) == ("one run needs --impl, --until, --out; or pass --cpu-host for every run on a CPU "
                               "machine")
    with pytest.raises(SystemExit) as stop:
        bench.main([*where, "--cpu-host", "--experiments", "wsd_apple,nowhere", "--out-dir", str(tmp_path / "c")])
    assert str(stop.value).startswith("--experiments nowhere: not an experiment of the configuration")
    assert "\n" not in str(stop.value) and not (tmp_path / "c").exists()
