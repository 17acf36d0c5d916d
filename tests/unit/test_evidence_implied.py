"""The implied-times evidence: the pyTsetlinMachine epoch each of the paper's speed-ups implies, beside the measured."""

import json

import pytest
import yaml

from asynctm.artifacts import evidence, evidence_implied
from asynctm.artifacts.evidence_implied import judge, records_epoch, same_host_epoch
from tests.helpers import write_run_record

REFERENCE = """dataset,implementation,metric,mean,std,unit,source,note
wsd_apple,tm_gpu,speedup,10.0,,x,Table 3,
wsd_apple,tm_gpu,train_time,0.3,,s,Table 4,
bike_sharing,tm_gpu,speedup,150.0,,x,Table 5,
bike_sharing,tm_gpu,train_time,0.5,,s,Table 4,
bike_sharing,tm_gpu,speedup_1280_clauses,3.64,,x,Text,
"""


def test_judge_takes_the_nearer_measured_epoch_and_the_factor_both_ways():
    assert judge(10.0, [4.0, 9.0], 2.0) == {"verdict": "fits", "ratio": pytest.approx(10 / 9)}
    assert judge(10.0, [4.0], 2.0) == {"verdict": "does not fit", "ratio": 2.5}
    assert judge(1.0, [4.0], 2.0)["verdict"] == "does not fit"  # shorter by more than the factor: no fit either
    assert judge(None, [4.0], 2.0)["verdict"] == judge(3.0, [None], 2.0)["verdict"] == "not testable"


def test_the_same_host_epoch_leaves_out_the_first_and_falls_back_to_it():
    hs = {"hosts": [
        {"host_id": "a" * 16, "cpu_model": "CPU A", "logical_cores": 16, "gpu": "GPU",
         "experiments": {"x": {"pytm_indexed": {"epochs_s": [9.0, 2.0, 4.0]}}}},
        {"host_id": "b" * 16, "cpu_model": "CPU B", "logical_cores": 16, "gpu": "GPU",
         "experiments": {"x": {"pytm_indexed": {"epochs_s": [], "first_epoch_s": 7.0,
                                                "first_epoch_basis": "estimated from 2 of 5 parts"}}}}]}
    got = same_host_epoch(hs, "x", "pytm_indexed")
    assert got["seconds"] == 3.0 and got["basis"] == "epochs 2-3" and got["host_id"] == "a" * 12
    hs["hosts"] = hs["hosts"][1:]
    got = same_host_epoch(hs, "x", "pytm_indexed")
    assert got["seconds"] == 7.0 and "estimated from 2 of 5 parts" in got["basis"]
    assert same_host_epoch(hs, "x", "pytm_nonindexed") is None


def _setup(tmp_path):
    results = tmp_path / "results"
    config = {"experiments": {
        "wsd_apple": {"dataset": "wsd_apple", "protocol": "paper", "task": "classification", "clauses": 10, "T": 5,
                      "s": 3.0, "f1": "macro"},
        "bike_sharing": {"dataset": "bike_sharing", "protocol": "paper", "task": "regression", "clauses": 10,
                         "T": 5, "s": 3.0}},
        "tm": {"epochs": 3, "state_bits": 8, "boost_true_positive": True, "batch_size": 100, "append_negated": True},
        "impls": ["tm_cpu", "pytm_indexed", "pytm_nonindexed"], "seeds": [0, 1], "scale": "paper",
        "claims": {"speedup": {"within_factor": 2.0, "reason": "Two generations of hardware."}}}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    for seed, (times, load) in enumerate([([9.0, 2.0, 2.0], 0.5), ([9.0, 50.0, 50.0], 9.0)]):
        write_run_record(results, {"experiment": "wsd_apple", "impl": "pytm_indexed", "params": "n10_T5_s3_e3",
                                   "seed": seed, "task": "classification",
                                   "epochs": [{"accuracy": 90.0, "f1": 90.0, "train_s": t} for t in times],
                                   "provenance": {"git_commit": "0" * 40, "cpu_model": "Test CPU", "gpu": None,
                                                  "logical_cores": 2, "load_average_1min_at_end": load}})
    (results / "evidence").mkdir(parents=True)
    (results / "evidence" / "host_speedups.json").write_text(json.dumps({"hosts": [
        {"host_id": "h" * 16, "cpu_model": "Host CPU", "logical_cores": 16, "gpu": "Test GPU",
         "experiments": {"wsd_apple": {"pytm_indexed": {"epochs_s": [5.0, 2.5, 2.5]}},
                         "bike_sharing": {"pytm_nonindexed": {"epochs_s": [4.0, 2.0, 2.0]}}}}]}))
    (results / "evidence" / "table4_same_gpu.json").write_text(json.dumps({"rows": [
        {"dataset": "wsd_apple", "gpu": "GPU A", "pytm_cuda_s": 0.2}, {"dataset": "wsd_apple", "gpu": "GPU B",
                                                                        "pytm_cuda_s": 0.4},
        {"dataset": "bike_sharing", "gpu": "GPU A", "pytm_cuda_s": 0.3}]}))
    reference = tmp_path / "paper_numbers.csv"
    reference.write_text(REFERENCE)
    return results, path, reference


def test_records_epoch_leaves_out_busy_records(tmp_path):
    results, config, _ = _setup(tmp_path)
    cfg = yaml.safe_load(config.read_text())
    got = records_epoch(results, cfg, config, "wsd_apple", "pytm_indexed")
    assert got["seconds"] == 2.0 and got["records"] == 1 and got["busy_left_out"] == 1
    assert got["hosts"] == ["Test CPU (2 cores)"]
    assert records_epoch(results, cfg, config, "bike_sharing", "pytm_nonindexed") is None


def test_each_speedup_is_read_against_both_cuda_times_and_renders(tmp_path):
    results, config, reference = _setup(tmp_path)
    ev = evidence_implied.build_implied(results, reference, config)
    rows = {r["experiment"]: r for r in ev["rows"]}
    assert set(rows) == {"wsd_apple", "bike_sharing"}  # the text's speed-up at 1,280 clauses is not a table's
    apple, bike = rows["wsd_apple"], rows["bike_sharing"]
    assert apple["baseline"] == "pytm_indexed" and bike["baseline"] == "pytm_nonindexed"
    assert apple["implied_by_paper_time_s"] == pytest.approx(3.0)
    assert apple["implied_by_authors_code_s"] == pytest.approx(10.0 * 0.3)  # the median over the two GPUs
    assert apple["with_authors_code"] == {"verdict": "fits", "ratio": pytest.approx(3.0 / 2.5)}
    assert bike["with_authors_code"] == {"verdict": "does not fit", "ratio": pytest.approx(150 * 0.3 / 2.0)}
    assert bike["measured_records"] is None and ev["within_factor"] == 2.0
    assert ev["sources"]["host_speedups"]["path"] == "evidence/host_speedups.json"
    assert len(ev["sources"]["table4_same_gpu"]["sha256"]) == 64
    (tmp_path / "ev").mkdir()
    (tmp_path / "ev" / "paper_speedups_implied.json").write_text(json.dumps(ev))
    [table] = evidence.render(tmp_path / "ev", tmp_path / "tables")
    text = table.read_text()
    assert "| WSD Apple | 10× over pytm_indexed (Table 3) | 0.3 | 3 | 0.3 (GPU A, GPU B) | 3 |" in text
    assert "**22× (does not fit)**" in text and "Two generations of hardware." in text


def test_bad_input_stops_in_one_line_and_writes_nothing(tmp_path):
    results, config, reference = _setup(tmp_path)
    (results / "evidence" / "table4_same_gpu.json").unlink()
    with pytest.raises(evidence.EvidenceError, match=r"table4_same_gpu\.json: no such evidence record; check the path"):
        evidence_implied.build_implied(results, reference, config)
    cfg = yaml.safe_load(config.read_text())
    del cfg["claims"]
    config.write_text(yaml.safe_dump(cfg))
    with pytest.raises(evidence.EvidenceError, match=r"claims\.speedup\.within_factor \(and its reason\) is missing"):
        evidence_implied.build_implied(results, reference, config)
    out = tmp_path / "paper_speedups_implied.json"
    assert evidence_implied.main(["--results", str(results), "--out", str(out), "--config", str(config),
                                  "--reference", str(reference)]) == 1
    assert not out.exists()
