"""The split-spread evidence: our CPU build trained on other train/test splits of the same processed rows."""

import json
import re

import numpy as np
import pytest
import yaml

from asynctm.artifacts import evidence, evidence_split
from asynctm.datasets.base import ProcessedDataset
from tests.helpers import SPOILED, spoil_run_record, write_run_record


def _setup(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, size=(80, 12), dtype=np.uint8)
    y = X[:, 0].astype(np.int64)  # feature 0 is the class: every split can learn it
    ds = ProcessedDataset(name="semeval", protocol="paper", task="classification", X_train=X[:60], y_train=y[:60],
                          X_test=X[60:], y_test=y[60:], feature_names=[f"f{i}" for i in range(12)],
                          meta={"split": "file order"})
    seen = []

    def load(data_dir, settings):
        seen.append(settings["protocol"])
        return ds

    monkeypatch.setattr("asynctm.experiments.run.load_dataset", load)
    config = {"experiments": {"semeval": {"dataset": "semeval", "protocol": "paper", "task": "classification",
                                          "clauses": 10, "T": 5, "s": 3.0, "f1": "macro"}},
              "tm": {"epochs": 12, "state_bits": 8, "boost_true_positive": True, "batch_size": 100,
                     "append_negated": True}, "impls": ["tm_cpu"], "seeds": [0], "scale": "paper"}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    results = tmp_path / "results"
    write_run_record(results, _record("tm_cpu"))
    return path, results, seen


def _record(impl: str) -> dict:
    """Our record of the toy main setting (the record gate accepts it)."""
    return {"experiment": "semeval", "impl": impl, "params": "n10_T5_s3_e12", "seed": 0, "task": "classification",
            "epochs": [{"accuracy": 90.0 + i / 10, "f1": 80.0} for i in range(12)],
            "dataset": {"name": "semeval", "protocol": "paper", "n_test": 20}}


def test_each_split_trains_the_configured_setting_and_the_table_shows_the_spread(tmp_path, monkeypatch, repo_root):
    config, results, seen = _setup(tmp_path, monkeypatch)
    ev = evidence_split.build_split_spread(tmp_path, results, repo_root / "paper_tables/reference/paper_numbers.csv",
                                           "semeval", (0, 1, 2), seed=0, threads=1, epochs=None, config=config,
                                           say=lambda line: None)
    assert seen == ["paper"] and ev["kind"] == "split_spread" and ev["reduced_epochs"] is None
    assert [s["split_seed"] for s in ev["splits"]] == [0, 1, 2]
    assert all(s["n_test"] == 20 and s["n_train"] == 60 and len(s["per_epoch"]) == 12 for s in ev["splits"])
    # the splits differ (other test rows), and the feature that is the class is learnt on each
    assert len({tuple(e["accuracy"] for e in s["per_epoch"]) for s in ev["splits"]}) > 1
    assert min(s["accuracy_last10"] for s in ev["splits"]) > 80.0
    (ours,) = ev["ours_on_the_pipeline_split"]
    assert ours["impl"] == "tm_cpu"
    assert ours["accuracy"][0] == pytest.approx(np.mean([90.2 + i / 10 for i in range(10)]))
    (tmp_path / "ev").mkdir()
    (tmp_path / "ev" / "semeval_split_spread.json").write_text(json.dumps(ev))
    [table] = evidence.render(tmp_path / "ev", tmp_path / "tables")
    text = table.read_text()
    assert "| **over the splits** |" in text and "| 2 |" in text and "(tm_gpu)" in text


def test_bad_epochs_and_regression_experiments_are_refused_in_one_line(tmp_path, monkeypatch, repo_root):
    config, results, _ = _setup(tmp_path, monkeypatch)
    ref = repo_root / "paper_tables/reference/paper_numbers.csv"
    with pytest.raises(evidence.EvidenceError, match=r"--epochs 13: must lie in 1\.\.12"):
        evidence_split.build_split_spread(tmp_path, results, ref, "semeval", (0,), epochs=13, config=config)
    with pytest.raises(evidence.EvidenceError, match="cannot read experiments.bike"):
        evidence_split.build_split_spread(tmp_path, results, ref, "bike", (0,), config=config)


def test_our_records_pass_over_the_svm_and_mlp_folders_and_a_bad_configuration_is_one_line(tmp_path, monkeypatch,
                                                                                        repo_root):
    from asynctm.artifacts.evidence_common import paper_implementation

    config, results, _ = _setup(tmp_path, monkeypatch)
    write_run_record(results, _record("pytm_indexed"))
    for impl in ("svm", "mlp_novelty"):  # folders of other kinds, named like the setting: never read
        folder = results / "semeval" / impl / "n10_T5_s3_e12"
        folder.mkdir(parents=True)
        (folder / "seed0.json").write_text("not a TM run record")
    assert [r["impl"] for r in evidence_split._records(results, "semeval", "n10_T5_s3_e12")] == ["pytm_indexed",
                                                                                                  "tm_cpu"]
    assert [paper_implementation(i) for i in ("pytm_indexed", "tm_cpu", "tm_gpu_warp")] == ["pytm_indexed", "tm_gpu",
                                                                                            "tm_gpu"]
    ref = repo_root / "paper_tables/reference/paper_numbers.csv"
    (tmp_path / "broken.yaml").write_text("experiments: [\n")
    for call in (lambda: evidence_split.build_split_spread(tmp_path, results, ref, config=tmp_path / "broken.yaml"),
                 lambda: evidence.build_protocols(results, results, tmp_path, ref, config=tmp_path / "missing.yaml")):
        with pytest.raises(evidence.EvidenceError, match=r"\.yaml: unreadable configuration [^\n]*; pass --config"):
            call()


@pytest.mark.parametrize("how", SPOILED)
def test_a_run_record_the_gate_refuses_stops_the_split_spread_before_it_trains(tmp_path, monkeypatch, capsys, how):
    config, results, _ = _setup(tmp_path, monkeypatch)
    line = spoil_run_record(results / "semeval/tm_cpu/n10_T5_s3_e12/seed0.json", how)

    def no_training(*args):
        raise AssertionError("trained before reading the records")

    monkeypatch.setattr(evidence_split, "_train", no_training)
    out = tmp_path / "ev" / "semeval_split_spread.json"
    code = evidence_split.main(["--data-dir", str(tmp_path), "--results", str(results), "--out", str(out),
                                "--split-seeds", "0", "--threads", "1", "--config", str(config)])
    err = capsys.readouterr().err
    assert code == 1 and re.fullmatch(f"error: {line}\\n", err) and not out.parent.exists()
