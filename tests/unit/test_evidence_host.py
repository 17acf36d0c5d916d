"""The same-host speed-ups (asynctm.artifacts.evidence_host) from synthetic host_peers files, and the tables' and
claims' fallback on the record."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from asynctm.artifacts import claims, evidence, tables
from asynctm.artifacts import evidence_host as eh
from asynctm.artifacts.evidence_common import write_record
from asynctm.artifacts.reference import COLUMNS
from asynctm.artifacts.render import DATASET_LABELS
from asynctm.config_check import load_config
from asynctm.experiments import plan
from tests.helpers import REPO

HOST = "0123456789abcdef0123"
CALL_A = "host_peers_test_gpu_20260101T000000Z"
CALL_B = "host_peers_test_gpu_20260101T001000Z"
IMDB_PAPER_SPEEDUP = 12.5  # the tiny reference's number, not the paper's


@pytest.fixture(scope="module")
def config() -> dict:
    return load_config(REPO / "config" / "config.yaml")


def run(experiment: str, impl: str, walls, parts: int = 1, n_train: int = 1000, host_id: str = HOST) -> dict:
    """A host_peers worker record (benchmarks/bench_host.py) with one unit per wall time."""
    gpu = impl in plan.GPU_IMPLS
    rows = n_train // parts
    units = [{"epoch": 1 if parts > 1 else i + 1, "part": i + 1 if parts > 1 else 1, "rows": rows, "wall_s": w,
              "cpu_s": w, "load": [1.0, 1.0, 1.0], "at_utc": "2026-01-01T00:00:00Z"} for i, w in enumerate(walls)]
    return {"experiment": experiment, "impl": impl, "params": "n10_T5_s3_e2", "host_id": host_id,
            "dataset": {"name": experiment, "n_train": n_train}, "parts": parts, "units": units,
            "cpu": {"model": "Test CPU"}, "logical_cores": 16, "gpu": {"name": "Test GPU"} if gpu else None,
            "cpu_asked": [0 if gpu else 2], "cpu_affinity": [0 if gpu else 2],
            "backend": "cuda" if gpu else "cpu (pyTsetlinMachine)", "stopped": "the call's end"}


def write_run(campaign: Path, call: str, record: dict) -> Path:
    path = campaign / call / f"{record['experiment']}_{record['impl']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record))
    return path


def write_manifest(campaign: Path, call: str, skipped=()) -> Path:
    path = campaign / f"{call}.json"
    path.write_text(json.dumps({"host_peers": {"folder": f"benchmarks/results/campaign/{call}"},
                                "skipped": [{"run": r, "reason": "exit -15"} for r in skipped], "done": []}))
    return path


def write_reference(path: Path) -> Path:
    rows = [",".join(COLUMNS),
            f"imdb,tm_gpu,speedup,{IMDB_PAPER_SPEEDUP},,x,Table 3,synthetic",
            "imdb,tm_gpu,accuracy,90.0,0.2,%,Table 3,synthetic",
            "semeval,tm_gpu,accuracy,92.0,0.5,%,Table 3,synthetic (no speed-up row)"]
    path.write_text("\n".join(rows) + "\n")
    return path


def two_calls(campaign: Path, more_units_in: str) -> dict:
    """Two calls of one host: IMDb's indexed pyTM timed in both (4 parts in ``more_units_in``, 2 in the other),
    tm_gpu on IMDb and SemEval, SemEval's non-indexed pyTM, and SemEval's indexed pyTM skipped by the second."""
    small, large = (CALL_B, CALL_A) if more_units_in == CALL_A else (CALL_A, CALL_B)
    paths = {
        "large": write_run(campaign, large, run("imdb", "pytm_indexed", [30.0, 20.0, 20.0, 30.0], parts=10,
                                                n_train=25000)),
        "small": write_run(campaign, small, run("imdb", "pytm_indexed", [7.0, 9.0], parts=10, n_train=25000)),
    }
    write_run(campaign, CALL_A, run("imdb", "tm_gpu", [5.0, 2.0, 2.0], n_train=25000))
    write_run(campaign, CALL_B, run("semeval", "pytm_nonindexed", [9.0, 6.0, 6.0]))
    write_run(campaign, CALL_B, run("semeval", "tm_gpu", [1.0, 0.5, 0.5, 0.5]))
    write_manifest(campaign, CALL_A)
    write_manifest(campaign, CALL_B, skipped=["semeval/pytm_indexed"])
    return paths


@pytest.fixture
def built(tmp_path, config) -> dict:
    campaign = tmp_path / "campaign"
    two_calls(campaign, CALL_B)
    return eh.build(campaign, write_reference(tmp_path / "paper_numbers.csv"), config)


# -- pair(): the rule ------------------------------------------------------------------------------------------

def test_pair_uses_epochs_two_to_the_common_last():
    base = eh.timing(run("imdb", "pytm_indexed", [10.0, 4.0, 4.0, 2.0]))
    ours = eh.timing(run("imdb", "tm_gpu", [1.0, 0.5, 0.5]))
    s = eh.pair(base, ours)
    assert s["value"] == pytest.approx(8.0)
    assert s["basis"] == "epochs 2-3"
    assert (s["base_s"], s["ours_s"]) == (pytest.approx(4.0), pytest.approx(0.5))
    two = eh.pair(base, eh.timing(run("imdb", "tm_gpu", [1.0, 0.25])))
    assert (two["value"], two["basis"]) == (pytest.approx(16.0), "epoch 2")


def test_pair_of_one_full_epoch_compares_the_first_epochs():
    s = eh.pair(eh.timing(run("imdb", "pytm_indexed", [10.0, 4.0, 4.0])), eh.timing(run("imdb", "tm_gpu", [2.5])))
    assert (s["value"], s["basis"]) == (pytest.approx(4.0), "epoch 1")


def test_pair_with_parts_estimates_the_baselines_first_epoch():
    base = eh.timing(run("imdb", "pytm_indexed", [30.0, 20.0, 20.0, 30.0], parts=10, n_train=25000))
    assert base["epochs_s"] == []
    assert (base["parts_timed"], base["parts"], base["rows_timed"]) == (4, 10, 10000)
    assert base["first_epoch_s"] == pytest.approx(100.0 / 10000 * 25000)
    ours = eh.timing(run("imdb", "tm_gpu", [5.0, 2.0, 2.0], n_train=25000))
    s = eh.pair(base, ours)
    assert s["value"] == pytest.approx(250.0 / 5.0)
    assert (s["base_s"], s["ours_s"]) == (pytest.approx(250.0), pytest.approx(5.0))
    assert s["basis"].startswith("epoch 1 (pyTsetlinMachine's estimated from 4 of 10 parts (10000 of 25000")
    whole = eh.timing(run("imdb", "pytm_indexed", [30.0, 20.0], parts=2, n_train=20000))  # every part timed
    assert whole["first_epoch_s"] == pytest.approx(50.0)
    assert whole["first_epoch_basis"] == "timed in 2 consecutive parts"


def test_pair_without_a_timed_unit_gives_no_value():
    base = eh.timing(run("imdb", "pytm_indexed", [], parts=10, n_train=25000))
    assert base["first_epoch_s"] is None and base["first_epoch_basis"] == "no part finished"
    assert eh.pair(base, eh.timing(run("imdb", "tm_gpu", [5.0, 2.0])))["value"] is None


# -- build() ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("more_units_in", [CALL_A, CALL_B])
def test_build_keeps_the_run_with_more_units(tmp_path, config, more_units_in):
    campaign = tmp_path / "campaign"
    paths = two_calls(campaign, more_units_in)
    ev = eh.build(campaign, write_reference(tmp_path / "paper_numbers.csv"), config)
    (h,) = ev["hosts"]
    assert h["host_id"] == HOST and h["calls"] == [CALL_A, CALL_B]
    assert (h["cpu_model"], h["logical_cores"], h["gpu"]) == ("Test CPU", 16, "Test GPU")
    kept = h["experiments"]["imdb"]["pytm_indexed"]
    assert kept["units"] == 4 and kept["path"] == paths["large"].as_posix()
    s = h["experiments"]["imdb"]["speedups"]["tm_gpu/pytm_indexed"]
    assert s["value"] == pytest.approx(250.0 / 5.0)
    sources = {src["path"] for src in ev["provenance"]["sources"]}
    assert {paths["large"].as_posix(), paths["small"].as_posix()} <= sources


def test_build_lists_a_skipped_run_without_a_speedup(built):
    semeval = built["hosts"][0]["experiments"]["semeval"]
    skipped = semeval["pytm_indexed"]
    assert skipped["units"] == 0 and skipped["first_epoch_s"] is None
    assert skipped["stopped"].startswith("not timed: exit -15")
    assert "tm_gpu/pytm_indexed" not in semeval["speedups"]
    s = semeval["speedups"]["tm_gpu/pytm_nonindexed"]
    assert (s["value"], s["basis"]) == (pytest.approx(12.0), "epochs 2-3")


def test_build_takes_the_papers_speedup_from_the_reference(built):
    experiments = built["hosts"][0]["experiments"]
    assert experiments["imdb"]["paper_speedup"] == pytest.approx(IMDB_PAPER_SPEEDUP)
    assert experiments["imdb"]["paper_source"] == "Table 3"
    assert experiments["semeval"]["paper_speedup"] is None
    json.dumps(built, allow_nan=False)


def test_build_gives_regression_table5(tmp_path, config):
    campaign = tmp_path / "campaign"
    write_run(campaign, CALL_A, run("bike_sharing", "pytm_nonindexed", [4.0, 3.0, 3.0]))
    write_run(campaign, CALL_A, run("bike_sharing", "tm_gpu", [1.0, 1.0, 1.0]))
    ev = eh.build(campaign, write_reference(tmp_path / "paper_numbers.csv"), config)
    bike = ev["hosts"][0]["experiments"]["bike_sharing"]
    assert bike["paper_source"] == "Table 5" and bike["paper_speedup"] is None
    assert bike["speedups"]["tm_gpu/pytm_nonindexed"]["value"] == pytest.approx(3.0)


def test_build_names_a_file_that_is_no_host_peers_run(tmp_path, config):
    campaign = tmp_path / "campaign"
    record = run("imdb", "tm_gpu", [1.0, 1.0])
    del record["host_id"]
    path = write_run(campaign, CALL_A, record)
    with pytest.raises(eh.EvidenceError, match="host_id") as err:
        eh.build(campaign, write_reference(tmp_path / "paper_numbers.csv"), config)
    assert str(path) in str(err.value)


# -- lookup() --------------------------------------------------------------------------------------------------

def test_lookup(built):
    assert eh.lookup(built, "imdb", "tm_gpu_warp", "pytm_indexed") is None
    assert eh.lookup(built, "wsd_apple", "tm_gpu", "pytm_indexed") is None
    assert eh.lookup(None, "imdb", "tm_gpu", "pytm_indexed") is None
    s = eh.lookup(built, "imdb", "tm_gpu", "pytm_indexed")
    assert s["value"] == pytest.approx(50.0)
    assert s["host"] == f"Test CPU (16 cores, Test GPU, host {HOST[:12]})"


# -- main() ----------------------------------------------------------------------------------------------------

def _main(tmp_path, campaign: Path, out: Path) -> list[str]:
    return ["--campaign", str(campaign), "--reference", str(write_reference(tmp_path / "paper_numbers.csv")),
            "--config", str(REPO / "config" / "config.yaml"), "--out", str(out)]


def test_main_refuses_another_out_name(tmp_path, capsys):
    campaign = tmp_path / "campaign"
    two_calls(campaign, CALL_A)
    out = tmp_path / "evidence" / "speedups.json"
    assert eh.main(_main(tmp_path, campaign, out)) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "host_speedups.json" in err[0]
    assert not out.exists() and not out.parent.exists()


def test_main_refuses_an_empty_campaign(tmp_path, capsys):
    campaign = tmp_path / "campaign"
    campaign.mkdir()
    out = tmp_path / "evidence" / "host_speedups.json"
    assert eh.main(_main(tmp_path, campaign, out)) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and str(campaign) in err[0]
    assert not out.exists() and not out.parent.exists()


def test_main_writes_the_record(tmp_path, capsys):
    campaign = tmp_path / "campaign"
    two_calls(campaign, CALL_A)
    out = tmp_path / "evidence" / "host_speedups.json"
    assert eh.main(_main(tmp_path, campaign, out)) == 0
    assert eh.load(tmp_path)["hosts"][0]["experiments"]["imdb"]["speedups"]["tm_gpu/pytm_indexed"]["value"] \
        == pytest.approx(50.0)
    assert eh.load(tmp_path / "nowhere") is None


# -- rendering -------------------------------------------------------------------------------------------------

def test_render_is_stable_and_lists_the_speedups(tmp_path, built):
    write_record(tmp_path / "evidence" / "host_speedups.json", built)
    first = evidence.render(tmp_path / "evidence", tmp_path / "tables")
    assert [p.name for p in first] == ["evidence_host_speedups.md"]
    text = first[0].read_bytes()
    evidence.render(tmp_path / "evidence", tmp_path / "tables")
    assert first[0].read_bytes() == text
    md = text.decode()
    imdb, semeval = DATASET_LABELS["imdb"], DATASET_LABELS["semeval"]
    assert (f"| {imdb} | tm_gpu | pytm_indexed | 50.0× | epoch 1 (pyTsetlinMachine's estimated from 4 of 10 parts "
            f"(10000 of 25000 examples)) | {IMDB_PAPER_SPEEDUP:.1f}× (Table 3) |") in md
    assert f"| {semeval} | tm_gpu | pytm_nonindexed | 12.0× | epochs 2-3 | – |" in md
    assert f"| {semeval} | pytm_indexed | 0 | – | – | not timed: exit -15" in md


# -- the tables' and claims' fallback --------------------------------------------------------------------------

def test_tables_host_speedup(built):
    ev = json.loads(json.dumps(built))
    imdb = ev["hosts"][0]["experiments"]["imdb"]
    s = tables.host_speedup(ev, "imdb", "tm_gpu", "pytm_indexed")
    assert s == eh.lookup(ev, "imdb", "tm_gpu", "pytm_indexed") and s["value"] == pytest.approx(50.0)
    assert tables.host_speedup(ev, "imdb", "tm_cpu", "pytm_indexed") is None  # none of our CPU build here
    imdb["speedups"]["tm_cpu/pytm_indexed"] = {**imdb["speedups"]["tm_gpu/pytm_indexed"]}
    assert tables.host_speedup(ev, "imdb", "tm_cpu", "pytm_indexed") == eh.lookup(ev, "imdb", "tm_cpu",
                                                                                  "pytm_indexed")
    assert tables.host_speedup(ev, "imdb", "svm", "pytm_indexed") is None  # not a build of ours
    assert tables.host_speedup(None, "imdb", "tm_gpu", "pytm_indexed") is None
    assert "table3_performance" in tables.HOST_TIMING_TABLES and "table5_regression" in tables.HOST_TIMING_TABLES


# -- a CPU machine's run (bench_host.py --cpu-host) -----------------------------------------------------------

CPU_CALL = "host_peers_cpu_test_cpu_20260102T000000Z"
CPU_HOST = "fedcba9876543210fedc"


def cpu_machine(campaign: Path) -> None:
    """A CPU machine's call: SemEval's two pyTsetlinMachine runs (five epochs) and our CPU build (four epochs), and
    IMDb's indexed one in parts beside our CPU build."""
    def cpu_run(experiment, impl, walls, **kw):
        r = run(experiment, impl, walls, host_id=CPU_HOST, **kw)
        r.update(logical_cores=2, gpu=None)
        if impl == "tm_cpu":
            r.update(cpu_asked=None, cpu_affinity=[0, 1], backend="cpu (ours, 2 threads)", threads=2)
        return r

    write_run(campaign, CPU_CALL, cpu_run("semeval", "pytm_indexed", [50.0, 48.0, 48.0, 48.0, 40.0]))
    write_run(campaign, CPU_CALL, cpu_run("semeval", "pytm_nonindexed", [30.0, 30.0, 30.0, 30.0, 30.0]))
    write_run(campaign, CPU_CALL, cpu_run("semeval", "tm_cpu", [1.0, 0.8, 0.8, 0.8]))
    write_run(campaign, CPU_CALL, cpu_run("imdb", "pytm_indexed", [40.0] * 10, parts=10, n_train=25000))
    write_run(campaign, CPU_CALL, cpu_run("imdb", "tm_cpu", [20.0, 10.0, 10.0, 10.0], n_train=25000))
    write_manifest(campaign, CPU_CALL)


def test_a_cpu_machines_run_pairs_our_cpu_build_with_pytsetlinmachine(tmp_path, config):
    campaign = tmp_path / "campaign"
    two_calls(campaign, CALL_A)
    cpu_machine(campaign)
    ev = eh.build(campaign, write_reference(tmp_path / "paper_numbers.csv"), config)
    hosts = {h["host_id"]: h for h in ev["hosts"]}
    cpu = hosts[CPU_HOST]
    assert (cpu["gpu"], cpu["logical_cores"], cpu["calls"]) == (None, 2, [CPU_CALL])
    semeval = cpu["experiments"]["semeval"]["speedups"]
    assert set(semeval) == {"tm_cpu/pytm_indexed", "tm_cpu/pytm_nonindexed"}
    assert (semeval["tm_cpu/pytm_indexed"]["value"], semeval["tm_cpu/pytm_indexed"]["basis"]) == (
        pytest.approx(48.0 / 0.8), "epochs 2-4")  # the epochs both have: pyTsetlinMachine's fifth is left out
    imdb = cpu["experiments"]["imdb"]["speedups"]["tm_cpu/pytm_indexed"]
    assert imdb["value"] == pytest.approx(400.0 / 20.0) and imdb["basis"].startswith("epoch 1 (pyTsetlinMachine's")
    s = eh.lookup(ev, "semeval", "tm_cpu", "pytm_indexed")
    assert s["value"] == pytest.approx(60.0) and s["host"] == f"Test CPU (2 cores, no GPU, host {CPU_HOST[:12]})"
    assert eh.lookup(ev, "semeval", "tm_gpu", "pytm_nonindexed")["host"].endswith(f"Test GPU, host {HOST[:12]})")
    md = eh.render_host_speedups(ev, "x.json")
    assert "## Test CPU (2 logical cores, no GPU)" in md and "## Test GPU with Test CPU (16 logical cores)" in md
    assert "then our CPU build trained alone on all 2" in md
    assert f"| {DATASET_LABELS['semeval']} | tm_cpu | pytm_indexed | 60.0× | epochs 2-4 | – |" in md
    assert f"| {DATASET_LABELS['semeval']} | tm_cpu | 4 | 1.000 | 0.800 |  |" in md


def test_the_implied_epochs_read_pytsetlinmachine_beside_a_gpu_only(tmp_path, config):
    """The implied-times evidence compares with pyTsetlinMachine timed beside a GPU: a CPU machine's run, with more
    epochs of it, is not taken."""
    from asynctm.artifacts.evidence_implied import same_host_epoch

    campaign = tmp_path / "campaign"
    two_calls(campaign, CALL_A)
    write_run(campaign, CALL_A, run("semeval", "pytm_indexed", [9.0, 7.0]))
    cpu_machine(campaign)
    ev = eh.build(campaign, write_reference(tmp_path / "paper_numbers.csv"), config)
    e = same_host_epoch(ev, "semeval", "pytm_indexed")
    assert (e["seconds"], e["epochs"], e["host_id"]) == (pytest.approx(7.0), 2, HOST[:12])
    assert same_host_epoch(ev, "wsd_java", "pytm_indexed") is None


def test_claims_same_host_speedup(built):
    ev = SimpleNamespace(host_timing=built)
    # an experiment the timing run did not run: the result stays as it was
    out = claims._same_host_speedup(ev, "wsd_java", "tm_gpu", "pytm_indexed",
                                    {"value": float("nan"), "host": "", "note": "different hosts"})
    assert out["value"] != out["value"] and out["host"] == "" and out["note"] == "different hosts"
    # a run of the experiment without the baseline's time: the note says why, the value stays NaN
    out = claims._same_host_speedup(ev, "semeval", "tm_gpu", "pytm_indexed",
                                    {"value": float("nan"), "host": "", "note": "different hosts"})
    assert out["value"] != out["value"] and out["note"].startswith("different hosts; the same-host timing run")
    assert "has no time of pytm_indexed (not timed: exit -15" in out["note"]
    out = claims._same_host_speedup(ev, "imdb", "tm_gpu", "pytm_indexed",
                                    {"value": float("nan"), "host": "", "note": "different hosts", "ours_s": None,
                                     "base_s": None})
    assert out["value"] == pytest.approx(50.0) and out["base_s"] == pytest.approx(250.0)
    assert out["host"].startswith("Test CPU") and out["note"].endswith("the main records: different hosts")


def test_a_run_stopped_inside_its_first_epoch_says_when_it_began(tmp_path, config):
    """A worker stopped at the call's end leaves the start of the unit it was in; no speed-up is made of it."""
    campaign = tmp_path / "campaign"
    killed = {**run("newsgroups20", "pytm_indexed", []), "stopped": None,
              "unit_running": {"epoch": 1, "part": 1, "started_utc": "2026-01-01T00:00:03Z"}}
    write_run(campaign, CALL_A, killed)
    write_run(campaign, CALL_A, run("newsgroups20", "tm_gpu", [1.0, 0.5, 0.5]))
    ev = eh.build(campaign, write_reference(tmp_path / "paper_numbers.csv"), config)
    ng = ev["hosts"][0]["experiments"]["newsgroups20"]
    assert ng["pytm_indexed"]["stopped"] == "stopped at the call's end in epoch 1, started 2026-01-01T00:00:03Z"
    assert ng["speedups"]["tm_gpu/pytm_indexed"]["value"] is None
    assert "started 2026-01-01T00:00:03Z" in eh.render_host_speedups(ev, "x.json")
