"""The accuracy-and-F1 evidence: which split of the errors between two classes a pair of numbers implies."""

import json

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import accuracy_score, f1_score

from asynctm.artifacts import evidence, evidence_errors
from asynctm.artifacts.evidence_errors import (
    accuracy_at,
    epoch_split,
    f1_at,
    f1_range,
    implied_shares,
    possible_within_rounding,
)
from asynctm.datasets.base import ProcessedDataset, save_processed
from tests.helpers import SPOILED, spoil_run_record, write_run_record


def _metrics(n1: int, n0: int, b: int, a: int) -> dict:
    """accuracy, F1 of class 1 and macro F1 (%) of predictions on n1 + n0 rows with b misses of class 1 and a of
    class 0, as sklearn computes them (the run records' metrics)."""
    y = np.array([1] * n1 + [0] * n0)
    pred = y.copy()
    pred[:b] = 0
    pred[n1:n1 + a] = 1
    return {"accuracy": 100 * accuracy_score(y, pred), "f1_binary": 100 * f1_score(y, pred, zero_division=0),
            "f1_macro": 100 * f1_score(y, pred, average="macro", zero_division=0)}


def test_f1_at_matches_a_hand_counted_confusion():
    # 6 rows of class 1, 4 of class 0; one miss of each: TP 5, TN 3, FP 1, FN 1
    assert f1_at("class1", 1, 2, 6, 4) == pytest.approx(10 / 12)
    assert f1_at("class0", 1, 2, 6, 4) == pytest.approx(6 / 8)
    assert f1_at("macro", 1, 2, 6, 4) == pytest.approx((10 / 12 + 6 / 8) / 2)
    m = _metrics(6, 4, 1, 1)
    assert m["f1_binary"] == pytest.approx(100 * 10 / 12)
    assert m["f1_macro"] == pytest.approx(100 * (10 / 12 + 6 / 8) / 2)


@settings(max_examples=60, deadline=None)
@given(n1=st.integers(5, 400), n0=st.integers(5, 400), data=st.data())
def test_a_pair_from_real_predictions_gives_back_its_own_split(n1, n0, data):
    b = data.draw(st.integers(0, n1 - 1))
    a = data.draw(st.integers(0, n0 - 1))
    if a + b == 0:
        a = 1
    m = _metrics(n1, n0, b, a)
    share = b / (a + b)
    assert epoch_split({"epoch": 1, **m}, n1, n0, "x") == pytest.approx(share, abs=1e-9)
    (one,) = implied_shares("class1", m["accuracy"], m["f1_binary"], n1, n0)
    assert one == pytest.approx(share, abs=1e-5)
    macro = implied_shares("macro", m["accuracy"], m["f1_macro"], n1, n0)
    assert 1 <= len(macro) <= 2 and min(abs(s - share) for s in macro) < 1e-5
    lo, hi = f1_range("macro", m["accuracy"], n1, n0)
    assert lo - 1e-9 <= m["f1_macro"] <= hi + 1e-9
    assert accuracy_at("class1", m["f1_binary"], share, n1, n0) == pytest.approx(m["accuracy"], abs=1e-6)


def test_a_pair_no_split_can_give_is_impossible_even_within_the_rounding():
    # balanced 100 / 100 at 90 % accuracy: macro F1 is at most 90 %, so 80 % is out of reach; 89.995 rounds to 90.00
    assert implied_shares("macro", 90.0, 80.0, 100, 100) == []
    assert not possible_within_rounding("macro", 90.0, 80.0, 100, 100)
    assert f1_range("macro", 90.0, 100, 100)[1] == pytest.approx(90.0)
    # the F1 of class 1 at 90 % can reach 80 % only with every error a miss of class 1: (100-20)/(100-20+10)
    assert implied_shares("class1", 90.0, 80.0, 100, 100) == []
    assert implied_shares("class1", 90.0, 160 / 180 * 100, 100, 100) == [pytest.approx(1.0)]
    assert evidence_errors.half_unit(88.9) == pytest.approx(0.05) and evidence_errors.half_unit(89.92) == 0.005


def test_an_epoch_that_does_not_fit_the_test_set_stops_in_one_line():
    m = _metrics(50, 50, 5, 5)
    with pytest.raises(evidence.EvidenceError, match=r"^rec\.json: epoch 3's accuracy and F1s do not fit a test set "
                                                     r"of 60 rows of class 1 and 40 of class 0; [^\n]*rerun it$"):
        epoch_split({"epoch": 3, **m}, 60, 40, "rec.json")
    with pytest.raises(evidence.EvidenceError, match="an epoch lacks 'f1_macro'"):
        epoch_split({"accuracy": 90.0, "f1_binary": 90.0}, 50, 50, "rec.json")
    assert epoch_split({"epoch": 1, **_metrics(50, 50, 0, 0)}, 50, 50, "x") is None  # no errors: no split


def _setup(tmp_path, y_test, splits):
    """A toy IMDb (its processed test set ``y_test``) and our records of its main setting: one seed per (b, a)."""
    X = np.zeros((len(y_test), 4), dtype=np.uint8)
    ds = ProcessedDataset(name="imdb", protocol="paper", task="classification", X_train=X, y_train=y_test,
                          X_test=X, y_test=np.asarray(y_test, dtype=np.int64), feature_names=list("abcd"),
                          class_names=["negative", "positive"])
    save_processed(ds, tmp_path / "data" / "processed" / "imdb" / "paper")
    config = {"experiments": {"imdb": {"dataset": "imdb", "protocol": "paper", "task": "classification",
                                       "clauses": 10, "T": 5, "s": 3.0, "f1": "binary"}},
              "tm": {"epochs": 12, "state_bits": 8, "boost_true_positive": True, "batch_size": 100,
                     "append_negated": True}, "impls": ["tm_cpu"], "seeds": [0, 1], "scale": "paper"}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    results = tmp_path / "results"
    n1, n0 = int(np.sum(y_test)), len(y_test) - int(np.sum(y_test))
    paths = []
    for seed, (b, a) in enumerate(splits):
        epochs = [{"epoch": e + 1, **(m := _metrics(n1, n0, b, a)), "f1": m["f1_binary"]} for e in range(12)]
        paths.append(write_run_record(results, {"experiment": "imdb", "impl": "tm_cpu", "params": "n10_T5_s3_e12",
                                                "seed": seed, "task": "classification", "epochs": epochs,
                                                "dataset": {"name": "imdb", "protocol": "paper",
                                                            "n_test": len(y_test)}}))
    return path, results, paths


def test_the_record_reads_the_paper_against_our_epochs_and_renders(tmp_path, repo_root):
    y = [1] * 500 + [0] * 500
    config, results, _ = _setup(tmp_path, y, [(40, 60), (50, 50)])
    ev = evidence_errors.build_error_split(tmp_path / "data", results, repo_root / "paper_tables/reference/"
                                           "paper_numbers.csv", ["imdb"], config)
    (row,) = ev["rows"]
    assert (row["n1"], row["n0"], row["kind"]) == (500, 500, "class1")
    assert row["ours_share_range"] == [pytest.approx(0.4), pytest.approx(0.5)] and row["epochs_read"] == 24
    (ours,) = row["ours"]
    assert ours["share_last10"][0] == pytest.approx(0.45) and ours["accuracy"][0] == pytest.approx(90.0)
    f1s = [_metrics(500, 500, b, a)["f1_binary"] for b, a in [(40, 60), (50, 50)]]
    assert ours["f1"][0] == pytest.approx(np.mean(f1s))
    paper = {p["implementation"]: p for p in row["the_paper"]}
    assert set(paper) == {"pytm_indexed", "pytm_nonindexed", "tm_gpu"}
    # the paper's IMDb numbers read on a balanced test set: its CUDA pair puts almost every error on class 1
    assert paper["tm_gpu"]["readings"]["class1"]["shares"][0] > 0.9
    assert paper["tm_gpu"]["against_ours"] == {"class1": "outside", "class0": "outside", "macro": "impossible"}
    (tmp_path / "ev").mkdir()
    (tmp_path / "ev" / "accuracy_f1_pairs.json").write_text(json.dumps(ev))
    [table] = evidence.render(tmp_path / "ev", tmp_path / "tables")
    text = table.read_text()
    assert "| IMDb (500 / 500) | paper, tm_gpu (F1 of class 1) |" in text and "**outside**" in text
    assert f"| 90.00 ± 0.00 | {np.mean(f1s):.2f} ± " in text
    assert "**40-50 %**" in text and "| IMDb | tm_gpu | 89.92 | 88.90 |" in text


def test_bad_input_stops_in_one_line_and_writes_nothing(tmp_path, repo_root):
    ref = repo_root / "paper_tables/reference/paper_numbers.csv"
    config, results, paths = _setup(tmp_path, [1] * 30 + [0] * 70, [(3, 2)])
    # a record of another preparation: its metrics fit 30 / 70 but the data now has other counts
    config2, _, _ = _setup(tmp_path / "other", [1] * 50 + [0] * 50, [(3, 2)])
    with pytest.raises(evidence.EvidenceError, match=r"do not fit a test set of 50 rows of class 1 and 50 of class 0"):
        evidence_errors.build_error_split(tmp_path / "other" / "data", results, ref, ["imdb"], config)
    with pytest.raises(evidence.EvidenceError, match=r"meta.json is missing: prepare the dataset first"):
        evidence_errors.build_error_split(tmp_path / "nowhere", results, ref, ["imdb"], config)
    with pytest.raises(evidence.EvidenceError, match="cannot read experiments.bike"):
        evidence_errors.build_error_split(tmp_path / "data", results, ref, ["bike"], config)
    line = spoil_run_record(paths[0], "off its path")
    with pytest.raises(Exception, match=line):
        evidence_errors.build_error_split(tmp_path / "data", results, ref, ["imdb"], config)
    assert "off its path" in SPOILED
    out = tmp_path / "wrong.json"
    assert evidence_errors.main(["--data-dir", str(tmp_path / "data"), "--results", str(results), "--out", str(out),
                                 "--experiments", "imdb", "--config", str(config)]) == 1
    assert not out.exists()


def test_a_test_set_of_more_than_two_classes_is_refused(tmp_path, repo_root):
    config, results, _ = _setup(tmp_path, [1] * 5 + [0] * 5, [(1, 1)])
    y = np.array([0, 1, 2] * 4, dtype=np.int64)
    X = np.zeros((12, 2), dtype=np.uint8)
    save_processed(ProcessedDataset(name="imdb", protocol="paper", task="classification", X_train=X, y_train=y,
                                    X_test=X, y_test=y, feature_names=["a", "b"]),
                   tmp_path / "three" / "processed" / "imdb" / "paper")
    with pytest.raises(evidence.EvidenceError, match=r"the test set has classes \[0, 1, 2\]; the error split is read "
                                                     "for two-class test sets"):
        evidence_errors.build_error_split(tmp_path / "three", results, repo_root / "paper_tables/reference/"
                                          "paper_numbers.csv", ["imdb"], config)
