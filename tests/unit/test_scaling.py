"""benchmarks/scaling.py: the core-scaling record, table and figure from one scaling run's files."""

from __future__ import annotations

import json

import pytest

from tests.helpers import load_benchmark_script


@pytest.fixture(scope="module")
def scaling():
    return load_benchmark_script("scaling")


def _record(threads: int, ours_s: float, parallel_s: float) -> dict:
    def row(peer, s):
        return {"label": f"{peer} {threads}t", "peer": peer, "options": {"n_threads": threads},
                "metadata": {"threads": threads}, "epoch_s": [s, s], "median_epoch_s": s, "cpu_per_wall": threads}
    return {"cpu": {"model": "Test CPU", "logical_cores": 16}, "gpu": None,
            "threads": {"env": {"ASYNCTM_SOURCE_COMMIT": "abc"}},
            "settings": [{"setting": "apple", "dataset": {"n_train": 100},
                          "results": [row("asynctm", ours_s), row("pytm_parallel", parallel_s)]}]}


LOG = """
== semeval: classification, 500 train / 100 test examples, 10 features (sparse); ...
   seed 42 epoch 1/2: asynctm cpu 1t 1.000s 89.40, asynctm cpu 2t 0.600s 89.40
   seed 42 epoch 2/2: asynctm cpu 1t 1.200s 90.20, asynctm cpu 2t 0.400s 90.20
implementation         warm-up s median s/ep       min-max s x vs base acc % final acc % last3 cpu/wall
asynctm cpu 1t             3.763       1.100   1.000-1.200           -      90.20      89.80     1.11
asynctm cpu 2t             1.159       0.500   0.400-0.600           -      90.20      89.80     2.00

== imdb: classification, 300 train / 100 test examples, 10 features (sparse); ...
   seed 42 epoch 1/2: asynctm cpu 1t 8.000s, asynctm cpu 2t 5.000s
"""


def test_records_and_a_cut_log_give_speedups_and_efficiencies(scaling, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    for threads, ours, par in ((1, 0.8, 4.0), (2, 0.5, 2.5), (4, 0.25, 1.0)):
        (run / f"scaling_apple_t{threads}.json").write_text(json.dumps(_record(threads, ours, par)))
    (run / "semeval_imdb.txt").write_text(LOG)
    out = tmp_path / "summary"
    assert scaling.main([str(run), "--out", str(out)]) == 0
    rec = json.loads(out.with_suffix(".json").read_text())
    ours = {r["threads"]: r for r in rec["settings"]["apple"]["asynctm"]}
    assert ours[2]["speedup_vs_1"] == pytest.approx(1.6) and ours[4]["efficiency"] == pytest.approx(0.8)
    par = {r["threads"]: r for r in rec["settings"]["apple"]["pytm_parallel"]}
    assert par[4]["speedup_vs_1"] == pytest.approx(4.0) and par[4]["efficiency"] == pytest.approx(1.0)
    # a finished setting from its printed summary table, a cut one from its printed epochs, each marked so
    sem = {r["threads"]: r for r in rec["settings"]["semeval"]["asynctm"]}
    assert sem[2]["median_epoch_s"] == pytest.approx(0.5) and "summary table" in sem[2]["source"]
    imdb = {r["threads"]: r for r in rec["settings"]["imdb"]["asynctm"]}
    assert imdb[2]["median_epoch_s"] == pytest.approx(5.0) and "printed epochs" in imdb[2]["source"]
    assert imdb[2]["rows"] == 300 and rec["source_commit"] == "abc"
    md = out.with_suffix(".md").read_text()
    assert "| apple | ours (CPU build, OpenMP threads) | 100 | 4 | 0.25 | 3.20× | 0.80 |" in md
    assert out.with_suffix(".png").stat().st_size > 0 and out.with_suffix(".pdf").stat().st_size > 0


def test_a_folder_without_a_run_is_one_line(scaling, tmp_path, capsys):
    assert scaling.main([str(tmp_path / "absent"), "--out", str(tmp_path / "s")]) == 1
    (tmp_path / "empty").mkdir()
    assert scaling.main([str(tmp_path / "empty"), "--out", str(tmp_path / "s")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("error: ") for line in err)
    assert not list(tmp_path.glob("s.*"))


def test_the_ladder_runs_its_ends_first(scaling):
    assert scaling.ladder(16, 8) == [1, 8, 16, 2, 4]
    assert scaling.ladder(2, 2) == [1, 2]
    assert scaling.ladder(12, None) == [1, 12, 2, 4, 8]
    assert scaling.ladder(1, 1) == [1]


def test_cpu_order_gives_every_physical_core_before_a_second_thread_of_one(scaling, tmp_path, monkeypatch):
    # 4 logical CPUs on 2 cores, siblings numbered apart (0 and 2 share core 0), as many hosts number them
    for cpu, core in ((0, 0), (1, 1), (2, 0), (3, 1)):
        topo = tmp_path / f"cpu{cpu}/topology"
        topo.mkdir(parents=True)
        (topo / "physical_package_id").write_text("0\n")
        (topo / "core_id").write_text(f"{core}\n")
    monkeypatch.setattr(scaling.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    assert scaling.cpu_order(tmp_path) == [0, 1, 2, 3]
    (tmp_path / "cpu1/topology/core_id").write_text("0\n")  # now 0, 1 and 2 share a core, 3 has its own
    assert scaling.cpu_order(tmp_path) == [0, 3, 1, 2]


FAKE_BENCH = """
import json, os, sys, time
args = sys.argv[1:]
get = lambda flag: args[args.index(flag) + 1]
threads = int(get("--threads"))
if get("--settings") == "slow":
    print("== slow: classification, 50 train / 10 test examples; load 0.00", flush=True)
    print(f"   seed 42 epoch 1/2: asynctm cpu {threads}t 2.000s", flush=True)
    time.sleep(60)
row = {"peer": "asynctm", "options": {"n_threads": threads}, "metadata": {"threads": threads},
       "epoch_s": [1.0 / threads], "median_epoch_s": 1.0 / threads, "cpus": sorted(os.sched_getaffinity(0))}
rec = {"cpu": {"model": "Fake", "logical_cores": os.cpu_count(), "physical_cores": os.cpu_count()}, "gpu": None,
       "threads": {"env": {}}, "settings": [{"setting": get("--settings"), "dataset": {"n_train": 50},
                                             "load_average_before": [9.0], "results": [row]}]}
open(os.path.join(get("--out-dir"), get("--name") + ".json"), "w").write(json.dumps(rec))
"""


def test_measuring_gives_each_count_its_cpus_and_stops_at_the_deadline(scaling, tmp_path, monkeypatch):
    import os
    import time

    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "bench_tm.py").write_text(FAKE_BENCH)
    monkeypatch.setattr(scaling, "HERE", fake)
    monkeypatch.setattr(scaling, "cores_in_use", lambda: 0.25)
    monkeypatch.setattr(scaling, "KILL_GRACE_S", 1)
    monkeypatch.setattr(scaling, "MIN_START_S", 2)
    usable = len(os.sched_getaffinity(0))
    run = tmp_path / "run"
    log = scaling.measure(run, ["fast", "slow"], [1, usable], data_dir="data", deadline=time.time() + 5,
                          say=lambda m: None)
    fast = log["processes"][f"scaling_fast_t{usable}"]
    assert fast["returncode"] == 0 and fast["cpus"] == scaling.cpu_order()[:usable]
    assert json.loads((run / "scaling_fast_t1.json").read_text())["settings"][0]["results"][0]["cpus"] == \
        scaling.cpu_order()[:1]
    slow = log["processes"]["scaling_slow_t1"]
    assert slow["returncode"] is None  # killed at the deadline, before its 60 s sleep ended
    assert not log["processes"][f"scaling_slow_t{usable}"]["started"] or usable == 1
    out = tmp_path / "summary"
    assert scaling.main([str(run), "--out", str(out)]) == 0
    rec = json.loads(out.with_suffix(".json").read_text())
    fast_rows = {r["threads"]: r for r in rec["settings"]["fast"]["asynctm"]}
    # the load measured just before each process, not the records' lagging load average (9.0)
    assert fast_rows[1]["load_before"] == 0.25 and fast_rows[1]["busy"] is False
    slow_rows = rec["settings"]["slow"]["asynctm"]  # from the killed run's printed epoch
    assert slow_rows[0]["median_epoch_s"] == 2.0 and "printed epochs" in slow_rows[0]["source"]
    md = out.with_suffix(".md").read_text()
    assert "its own process on that many logical CPUs" in md and "/proc/stat" in md


def test_a_count_that_shared_the_cores_with_other_work_is_marked_busy(scaling):
    per = {"imdb": {"asynctm": {1: {"median_epoch_s": 8.0, "rows": 5, "source": "a", "load_before": 2.5},
                                16: {"median_epoch_s": 1.0, "rows": 5, "source": "a", "load_before": 2.5}}}}
    rows = scaling.summarise(per, cores=16)["imdb"]["asynctm"]
    assert [r["busy"] for r in rows] == [False, True]  # 2.5 + 16 > 16 + 1; 2.5 + 1 is not
    assert "2.50 (busy)" in scaling.render({"imdb": {"asynctm": rows}}, {"cpu": {"logical_cores": 16}})


def test_a_run_with_the_hosts_limits_bounds_each_row_as_bound_py_does(scaling, tmp_path):
    """A folder with the host's limits: each row of our CPU build gets the cost model's bound at its thread count,
    the same fractions bound.py gives that benchmark, and the efficiency the limits allow (1 at one thread)."""
    from tests.helpers import REPO

    results = REPO / "benchmarks" / "results"
    bench = json.loads((results / "cpu_asynctm_amd_epyc_89a2018e3286.json").read_text())
    expected = {(r["setting"], r["threads"]): r for r in json.loads(
        (results / "cpu_asynctm_amd_epyc_89a2018e3286_bound.json").read_text())["rows"]}
    run = tmp_path / "run"
    run.mkdir()
    bike = next(s for s in bench["settings"] if s["setting"] == "bike")  # regression: no dataset needed for classes
    for r in bike["results"]:
        t = r["options"]["n_threads"]
        (run / f"scaling_bike_t{t}.json").write_text(json.dumps({**bench, "settings": [{**bike, "results": [r]}]}))
    (run / "scaling_semeval_t2.txt").write_text(LOG)  # read from a log: no record, so no bound
    out = tmp_path / "summary"
    assert scaling.main([str(run), "--out", str(out), "--results", str(REPO / "results")]) == 0
    assert "fraction of the bound" not in out.with_suffix(".md").read_text()  # no limits in the folder: none
    (run / scaling.LIMITS).write_bytes((results / "host_limits_amd_epyc_89a2018e3286_2c.json").read_bytes())
    assert scaling.main([str(run), "--out", str(out), "--results", str(REPO / "results")]) == 0
    rec = json.loads(out.with_suffix(".json").read_text())
    rows = {r["threads"]: r for r in rec["settings"]["bike"]["asynctm"]}
    for t, r in rows.items():
        want = expected[("bike", t)]
        assert r["bound"]["all_work_fraction"] == pytest.approx(want["all_work"]["fraction"])
        assert r["bound"]["least_work_fraction"] == pytest.approx(want["least_work"]["fraction"])
        assert r["bound"]["limit"] == want["all_work"]["limit"]
    assert rows[1]["bound"]["efficiency_allowed"] == pytest.approx(1.0)
    assert rows[2]["bound"]["efficiency_allowed"] == pytest.approx(
        rows[1]["bound"]["all_work_s"] / (2 * rows[2]["bound"]["all_work_s"]))
    assert "bound" not in rec["settings"]["semeval"]["asynctm"][0]
    assert rec["limits"]["path"] == f"run/{scaling.LIMITS}" and len(rec["limits"]["sha256"]) == 64
    md = out.with_suffix(".md").read_text()
    b2 = rows[2]["bound"]
    assert (f"| {b2['least_work_fraction']:.1%} / {b2['all_work_fraction']:.1%} | {b2['limit']} | "
            f"{b2['efficiency_allowed']:.2f} |") in md
    assert "No bound for: semeval 1t; semeval 2t" in md


def test_measuring_with_limits_measures_them_first(scaling, tmp_path, monkeypatch):
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "bench_tm.py").write_text(FAKE_BENCH)
    (fake / "host_limits.py").write_text(
        "import json, sys\nargs = sys.argv[1:]\nout = args[args.index('--out') + 1]\n"
        "json.dump({'threads': args[args.index('--threads') + 1], 'measurements': {}}, open(out, 'w'))\n")
    monkeypatch.setattr(scaling, "HERE", fake)
    monkeypatch.setattr(scaling, "cores_in_use", lambda: 0.0)
    log = scaling.measure(tmp_path / "run", ["fast"], [2, 1], data_dir="data", limits=True, say=lambda m: None)
    assert log["limits"]["returncode"] == 0 and "--reps" in log["limits"]["command"]
    assert json.loads((tmp_path / "run" / scaling.LIMITS).read_text())["threads"] == "1,2"
    assert json.loads((tmp_path / "run" / "measure.json").read_text())["limits"]["started"] is True
