"""Evidence records and their tables (asynctm.artifacts.evidence): run groups summarised from run records,
repeated runs compared, the BlogFeedback baselines on its file-order split, rendering, and bad input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from asynctm.artifacts import evidence
from asynctm.store import RecordError
from tests.helpers import SPOILED, spoil_run_record, valid_tm_record, write_run_record

DIAG_KEYS = evidence.DIAGNOSTICS


def _record(seed: int, maes, threads: int = 2, protocol: str = "paper", literals: float = 40.0, params=None,
            diagnostics: bool = True, experiment: str = "bike_sharing") -> dict:
    """A regression TM run record the record gate accepts (tests.helpers.valid_tm_record); its params name its
    epochs unless given."""
    epochs = []
    for i, mae in enumerate(maes):
        e = {"epoch": i + 1, "train_s": 0.1 * (seed + 1), "eval_s": 0.01, "mae": float(mae), "rmse": float(mae) * 2}
        if diagnostics:
            e["diagnostics"] = {"literals_per_clause": literals + i, "positive_literals_per_clause": 1.0 + i,
                                "negated_literals_per_clause": literals - 1.0, "type_ia_feedback": 100 + i,
                                "type_ib_feedback": 200 + seed, "type_ii_feedback": 300}
        epochs.append(e)
    return valid_tm_record({
        "experiment": experiment, "impl": "tm_cpu", "params": params or f"n8_T8_s1.5_e{len(maes)}", "seed": seed,
        "task": "regression",
        "dataset": {"name": experiment, "protocol": protocol, "n_features": 30, "n_train": 80, "n_test": 20,
                    "constant_baseline": {"mae": 50.0, "predict": "median of the training targets", "value": 3.0}},
        "epochs": epochs, "final": {"mae": float(maes[-1])},
        "provenance": {"threads": threads, "cpu_model": "CPU X", "git_commit": "a" * 40, "git_dirty": 0,
                       "load_average_1min_at_end": 1.5}})


def _write(root: Path, rel: str, rec: dict) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rec))
    return path


@pytest.fixture
def runs_root(tmp_path):
    root = tmp_path / "results"
    two = {0: [30, 20, 10] + [10] * 9, 1: [40, 30, 20] + [12] * 9}
    one = {0: [30, 20, 10] + [10] * 9, 1: [40, 30, 20] + [14] * 9}
    for seed, maes in two.items():
        _write(root, f"bike_sharing/tm_cpu/n8_T8_s1.5_e12/seed{seed}.json", _record(seed, maes))
        _write(root, f"again/bike_sharing/tm_cpu/n8_T8_s1.5_e12/seed{seed}.json",
               _record(seed, [m + (seed == 1) for m in maes]))
    for seed, maes in one.items():
        _write(root, f"one/bike_sharing/tm_cpu/n8_T8_s1.5_e12/seed{seed}.json", _record(seed, maes, threads=1,
                                                                                        literals=60.0))
    return root


def _groups():
    return [("2 threads", "bike_sharing/tm_cpu/n8_T8_s1.5_e12/seed*.json"),
            ("1 thread", "one/bike_sharing/tm_cpu/n8_T8_s1.5_e12/seed*.json"),
            ("2 threads again", "again/bike_sharing/tm_cpu/n8_T8_s1.5_e12/seed*.json")]


def test_run_groups_summarise_the_seeds_and_compare_repeats(runs_root):
    ev = evidence.build_run_groups("threads", "why?", runs_root, _groups(), [("2 threads", "2 threads again")])
    two, one, _ = ev["groups"]
    assert (two["label"], two["threads"], two["seeds"]) == ("2 threads", ["2"], [0, 1])
    assert two["final_mae"][0] == pytest.approx(11.0) and two["final_mae"][1] == pytest.approx(np.std([10, 12],
                                                                                                        ddof=1))
    # the last 10 of 12 epochs: seed 0 [10 x 10] -> 10, seed 1 [20, 12 x 9] -> 12.8
    assert two["last10_mae"][0] == pytest.approx((10.0 + 12.8) / 2)
    assert two["per_epoch"]["mae"][:3] == [35.0, 25.0, 15.0]
    assert one["per_epoch"]["literals_per_clause"][0] == 60.0 and one["diagnostics_last10"]["type_ib_feedback"][0] \
        == pytest.approx(200.5)
    assert two["constant_mae"][0] == 50.0 and two["runs"][0]["path"] == "bike_sharing/tm_cpu/n8_T8_s1.5_e12/seed0.json"
    rep = {r["seed"]: r for r in ev["repeats"]}
    assert rep[0]["identical"] and rep[0]["first_differing_epoch"] is None
    assert not rep[1]["identical"] and rep[1]["first_differing_epoch"] == 1 and rep[1]["b_final_mae"] == 13.0
    prov = ev["provenance"]
    assert prov["seeds"] == [0, 1] and "asynctm/artifacts/evidence.py" in " ".join(prov["code_sha256"])
    assert {"git_commit", "git_dirty", "host", "packages", "created_utc"} <= set(prov)


def test_render_is_generated_from_the_record_and_byte_identical(runs_root, tmp_path):
    ev_dir = tmp_path / "evidence"
    out = ev_dir / "threads.json"
    assert evidence.main(["runs", "--name", "threads", "--question", "Why do threads differ?", "--results",
                          str(runs_root), *[arg for a, b in _groups() for arg in ("--group", f"{a}={b}")],
                          "--repeat", "2 threads=2 threads again", "--out", str(out)]) == 0
    tables = tmp_path / "tables"
    [path] = evidence.render(ev_dir, tables)
    text = path.read_text()
    assert path.name == "evidence_threads.md" and text.startswith("<!-- generated by")
    assert "Why do threads differ?" in text and "| 2 threads |" in text and "11.00 ± 1.41" in text
    assert "| 2 threads | 2 threads again | 1 | no | 1 |" in text
    assert "| 2 threads | 10.00 (0.100 s, load 1.5) | 12.80 (0.200 s, load 1.5) |" in text
    # a number changed in the record shows up in the table: nothing is typed by hand
    ev = json.loads(out.read_text())
    ev["groups"][0]["final_mae"] = [99.5, None]
    out.write_text(json.dumps(ev))
    evidence.render(ev_dir, tables)
    assert "| 99.50 |" in path.read_text()
    first = path.read_bytes()
    evidence.render(ev_dir, tables)
    assert path.read_bytes() == first


def test_bad_input_is_one_line_naming_the_file_and_field(runs_root, tmp_path, capsys):
    with pytest.raises(evidence.EvidenceError, match="no record under .* matches"):
        evidence.build_run_groups("x", "q", runs_root, [("none", "nowhere/seed*.json")])
    broken = _record(0, [1, 2])
    del broken["timing"]
    broken_path = _write(runs_root, "broken/bike_sharing/tm_cpu/n8_T8_s1.5_e2/seed0.json", broken)
    with pytest.raises(RecordError, match=r"broken/bike_sharing/tm_cpu/n8_T8_s1.5_e2/seed0.json: \(the record\): "
                                          r"'timing' is a required property; fix: "):
        evidence.build_run_groups("x", "q", runs_root, [("b", "broken/*/*/*/seed*.json")])
    broken_path.unlink()
    with pytest.raises(evidence.EvidenceError, match="seed 0 appears twice"):
        evidence.build_run_groups("x", "q", runs_root, [("both", "*/bike_sharing/tm_cpu/*/seed0.json")])
    with pytest.raises(evidence.EvidenceError, match="no group labelled 'nope'"):
        evidence.build_run_groups("x", "q", runs_root, _groups()[:1], [("2 threads", "nope")])
    out = tmp_path / "x.json"
    assert evidence.main(["runs", "--name", "x", "--question", "q", "--results", str(runs_root), "--group",
                          "g=missing/*.json", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: --group g=missing/*.json") and not out.exists()
    # an evidence record without a field the table needs: one line, and no table is written
    ev_dir, tables = tmp_path / "ev", tmp_path / "tables"
    ev_dir.mkdir()
    (ev_dir / "bad.json").write_text(json.dumps({"schema": 1, "kind": "run_groups", "name": "bad", "question": "q",
                                                 "provenance": {}, "groups": [{"label": "x"}]}))
    with pytest.raises(evidence.EvidenceError, match="bad.json: field .* is missing or malformed"):
        evidence.render(ev_dir, tables)
    assert not tables.exists()
    (ev_dir / "bad.json").write_text("{")
    with pytest.raises(evidence.EvidenceError, match="bad.json: unreadable evidence record"):
        evidence.render(ev_dir, tables)
    (ev_dir / "bad.json").write_text("[]")
    with pytest.raises(evidence.EvidenceError, match="bad.json: not a JSON object"):
        evidence.render(ev_dir, tables)


def _stopped_by_the_gate(code: int, capsys, line: str, out: Path) -> None:
    """A command line that met a record the gate refuses: exit 1, the gate's one line on stderr, nothing written."""
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and re.fullmatch(f"error: {line}\n", err), err
    assert not out.exists() and not (out.parent.exists() and any(out.parent.iterdir()))


@pytest.mark.parametrize("how", SPOILED)
def test_a_run_record_the_gate_refuses_stops_the_run_groups_in_its_one_line(runs_root, tmp_path, capsys, how):
    line = spoil_run_record(runs_root / "one/bike_sharing/tm_cpu/n8_T8_s1.5_e12/seed1.json", how)
    out = tmp_path / "ev" / "threads.json"
    code = evidence.main(["runs", "--name", "threads", "--question", "q", "--results", str(runs_root),
                          *[arg for a, b in _groups() for arg in ("--group", f"{a}={b}")], "--out", str(out)])
    _stopped_by_the_gate(code, capsys, line, out)


@pytest.mark.parametrize("where", ["paper", "clean"])
@pytest.mark.parametrize("how", SPOILED)
def test_a_run_record_the_gate_refuses_stops_the_protocols_in_its_one_line(tmp_path, repo_root, capsys, how, where):
    results, clean, data, config = _protocol_setup(tmp_path)
    line = spoil_run_record((results if where == "paper" else clean) / "bike_sharing/tm_cpu/n8_T8_s1.5_e12/seed0.json",
                            how)
    out = tmp_path / "ev" / "protocol_paper_vs_clean.json"
    code = evidence.main(["protocols", "--results", str(results), "--clean", str(clean), "--data-dir", str(data),
                          "--reference", str(repo_root / "paper_tables/reference/paper_numbers.csv"), "--config",
                          str(config), "--out", str(out)])
    _stopped_by_the_gate(code, capsys, line, out)


@pytest.fixture
def one_thread():
    # the regressor's OpenMP threads: one, so that a busy 2-core machine is not oversubscribed
    with threadpool_limits(1):
        yield


def test_fit_baselines_median_and_boosting_on_training_rows_only(one_thread):
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, size=(300, 5)).astype(np.float32)
    y = 10 * X[:, 0] + rng.normal(0, 0.1, 300)
    rows = evidence.fit_baselines(X[:200], y[:200], X[200:], y[200:], seed=0)
    median = rows[0]
    assert median["model"] == "training median"
    assert median["mae"] == pytest.approx(np.mean(np.abs(y[200:] - np.median(y[:200]))))
    boosted = [r for r in rows if r["model"] == "HistGradientBoostingRegressor"]
    assert {r["parameters"]["loss"] for r in boosted} == {"squared_error", "absolute_error"}
    assert all(r["mae"] < median["mae"] / 5 for r in boosted)  # it learns the one informative feature
    assert rows == evidence.fit_baselines(X[:200], y[:200], X[200:], y[200:], seed=0)  # fixed seed: same numbers


def test_blogfeedback_baselines_on_the_file_order_split(tmp_path, monkeypatch, one_thread, repo_root):
    from asynctm.datasets import blogfeedback
    from asynctm.datasets.base import save_processed

    monkeypatch.setattr(blogfeedback, "N_ROWS", 60)
    monkeypatch.setattr(blogfeedback, "N_TRAIN", 48)
    rng = np.random.default_rng(1)
    table = rng.integers(0, 5, size=(70, 281)).astype(float)  # rows after N_ROWS are never read
    raw = tmp_path / "data" / "raw" / "blogfeedback"
    raw.mkdir(parents=True)
    np.savetxt(raw / "blogData_train.csv", table, delimiter=",", fmt="%g")
    with pytest.raises(evidence.EvidenceError, match="BlogFeedback is not prepared there"):
        evidence.build_blogfeedback(tmp_path / "data", tmp_path / "results", tmp_path / "ref.csv", [0])
    save_processed(blogfeedback.prepare(raw), tmp_path / "data" / "processed" / "blogfeedback" / "paper")
    (tmp_path / "ref.csv").write_text("dataset,implementation,metric,mean,std,unit,source,note\n"
                                      "blogfeedback,tm_gpu,mae,3.88,0.02,target units,Table 5,\n")
    for params in ("n1280_T1280_s1.5_e100", "n40_T1280_s1.5_e100"):  # the main setting, and another
        write_run_record(tmp_path / "results", _record(0, [5.0] * 99 + [4.0], params=params,
                                                       experiment="blogfeedback"))
    ev = evidence.build_blogfeedback(tmp_path / "data", tmp_path / "results", tmp_path / "ref.csv", [0, 1],
                                     config=repo_root / "config" / "config.yaml")
    order = [r for r in ev["rows"] if r["split_seed"] is None]
    assert {(r["features"].split()[0], r["model"]) for r in order} == {
        (f, m) for f in ("binarized", "raw") for m in ("training median", "HistGradientBoostingRegressor")}
    median = next(r for r in order if r["model"] == "training median")
    y = table[:60, -1]
    assert (median["n_train"], median["n_test"]) == (48, 12)
    assert median["mae"] == pytest.approx(np.mean(np.abs(y[48:] - np.median(y[:48]))))
    assert sorted({r["split_seed"] for r in ev["rows"] if r["split_seed"] is not None}) == [0, 1]
    assert ev["paper"] == [{"implementation": "tm_gpu", "mean": 3.88, "std": 0.02, "source": "Table 5"}]
    [ours] = ev["ours"]  # the main setting (config/config.yaml) only
    assert (ours["final_mae"], ours["impl"], ours["params"]) == ([4.0, None], "tm_cpu", "n1280_T1280_s1.5_e100")
    assert ev["provenance"]["seeds"] == [0, 0, 1]
    ev_dir = tmp_path / "ev"
    ev_dir.mkdir()
    (ev_dir / "blogfeedback_bound.json").write_text(json.dumps(ev))
    [path] = evidence.render(ev_dir, tmp_path / "tables")
    text = path.read_text()
    assert f"| {median['mae']:.2f} |" in text and "| paper (Table 5) | tm_gpu | – | 3.88 ± 0.02 |" in text


def test_bike_sharing_baselines_with_and_without_the_leaking_columns(tmp_path, one_thread, repo_root):
    import pandas as pd

    from asynctm.datasets import bike_sharing
    from asynctm.datasets.base import save_processed

    rng = np.random.default_rng(2)
    n = 60
    casual, registered = rng.integers(0, 20, n), rng.integers(0, 50, n)
    frame = pd.DataFrame({"instant": np.arange(1, n + 1), "dteday": "2011-01-01", "season": 1, "yr": 0, "mnth": 1,
                          "hr": np.arange(n) % 24, "holiday": 0, "weekday": 6, "workingday": 0, "weathersit": 1,
                          "temp": rng.random(n).round(2), "atemp": 0.3, "hum": 0.8, "windspeed": 0.0,
                          "casual": casual, "registered": registered, "cnt": casual + registered})
    raw = tmp_path / "data" / "raw" / "bike_sharing"
    raw.mkdir(parents=True)
    frame.to_csv(raw / "hour.csv", index=False)
    save_processed(bike_sharing.prepare(raw, "paper"), tmp_path / "data" / "processed" / "bike_sharing" / "paper")
    with pytest.raises(evidence.EvidenceError, match=r"bike_sharing/clean/meta.json: Bike Sharing \(clean\) is not"):
        evidence.build_bike_sharing(tmp_path / "data", tmp_path / "results", tmp_path / "ref.csv",
                                    config=repo_root / "config" / "config.yaml")
    save_processed(bike_sharing.prepare(raw, "clean"), tmp_path / "data" / "processed" / "bike_sharing" / "clean")
    (tmp_path / "ref.csv").write_text("dataset,implementation,metric,mean,std,unit,source,note\n")
    ev = evidence.build_bike_sharing(tmp_path / "data", tmp_path / "results", tmp_path / "ref.csv",
                                     config=repo_root / "config" / "config.yaml")
    readings = sorted({r["reading"] for r in ev["rows"]})
    assert len(readings) == 2 and "casual, registered" in readings[1] and "casual" not in readings[0]
    medians = [r for r in ev["rows"] if r["model"] == "training median"]
    y = (casual + registered).astype(float)
    n_train, _ = bike_sharing.split_sizes(n)
    assert all(r["mae"] == pytest.approx(np.mean(np.abs(y[n_train:] - np.median(y[:n_train])))) for r in medians)
    assert {r["n_features"] for r in ev["rows"] if r["features"] == "raw"} == {12, 14}


def test_records_without_diagnostics_show_mae_and_time_only(tmp_path):
    root = tmp_path / "results"
    for seed in (0, 1):
        _write(root, f"old/bike_sharing/tm_cpu/n8_T8_s1.5_e2/seed{seed}.json",
               _record(seed, [5.0, 4.0 + seed], diagnostics=False))
    ev = evidence.build_run_groups("old", "q", root, [("older records", "old/*/*/*/seed*.json")])
    [group] = ev["groups"]
    assert group["diagnostics_last10"] is None and set(group["per_epoch"]) == {"mae"}
    (tmp_path / "ev").mkdir()
    (tmp_path / "ev" / "old.json").write_text(json.dumps(ev))
    [path] = evidence.render(tmp_path / "ev", tmp_path / "tables")
    row = next(line for line in path.read_text().splitlines() if line.startswith("| older records |"))
    assert "| 4.50 ± 0.71 |" in row and "| 50.00 | – | – |" in row  # no literals/clause, no feedback events


def _protocol_setup(tmp_path):
    """Paper-protocol records of bike_sharing's main setting, clean ones beside, and the two preparations' meta."""
    import yaml

    config = {"experiments": {"bike_sharing": {"dataset": "bike_sharing", "protocol": "paper", "task": "regression",
                                               "clauses": 8, "T": 8, "s": 1.5}},
              "tm": {"epochs": 12}, "impls": ["tm_cpu"], "seeds": [0, 1]}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    results, clean = tmp_path / "results", tmp_path / "clean"
    for seed in (0, 1):
        _write(results, f"bike_sharing/tm_cpu/n8_T8_s1.5_e12/seed{seed}.json", _record(seed, [20.0 + seed] * 12))
        _write(clean, f"bike_sharing/tm_cpu/n8_T8_s1.5_e12/seed{seed}.json",
               _record(seed, [90.0 + 2 * seed] * 12, protocol="clean"))
    for protocol, features in (("paper", ["hr", "casual", "registered"]), ("clean", ["hr"])):
        _write(tmp_path / "data", f"processed/bike_sharing/{protocol}/meta.json",
               {"source_features": features, "n_features": len(features) * 10, "split": "file order"})
    return results, clean, tmp_path / "data", tmp_path / "config.yaml"


def test_protocols_compare_the_main_setting_under_both_preparations(tmp_path, repo_root):
    results, clean, data, config = _protocol_setup(tmp_path)
    ev = evidence.build_protocols(results, clean, data, repo_root / "paper_tables/reference/paper_numbers.csv", config)
    (row,) = ev["rows"]
    assert (row["impl"], row["metric"]) == ("tm_cpu", "mae")
    assert row["paper_protocol"]["last10"] == [20.5, pytest.approx(0.7071, abs=1e-4)]
    assert row["clean_protocol"]["last10"][0] == 91.0 and row["clean_protocol"]["distinct_runs"] == 2
    assert [p["implementation"] for p in row["the_paper"]] == ["tm_gpu"]
    assert ev["datasets"]["bike_sharing"] == {"source_features": [["hr", "casual", "registered"], ["hr"]],
                                              "n_features": [30, 10]}
    text = evidence.render_protocols(ev, "x.json")
    assert "drops casual, registered" in text and "| 20.50 ± 0.71 | 91.00 ± 1.41 | +70.50 |" in text


def test_a_reduced_clean_run_is_compared_over_its_own_first_epochs(tmp_path, repo_root):
    results, clean, data, config = _protocol_setup(tmp_path)
    import shutil

    shutil.rmtree(clean / "bike_sharing/tm_cpu/n8_T8_s1.5_e12")
    for seed in (0, 1):  # the paper protocol's records: 10 at 30 + seed, then 2 at 20 + seed; clean: 10 epochs
        _write(results, f"bike_sharing/tm_cpu/n8_T8_s1.5_e12/seed{seed}.json",
               _record(seed, [30.0 + seed] * 10 + [20.0 + seed] * 2))
        write_run_record(clean, _record(seed, [90.0] * 10, protocol="clean"))
    ev = evidence.build_protocols(results, clean, data, repo_root / "paper_tables/reference/paper_numbers.csv", config)
    (row,) = ev["rows"]
    assert (row["epochs_read"], row["clean_params"]) == (10, "n8_T8_s1.5_e10")
    assert row["paper_protocol"]["last10"][0] == 30.5 and row["paper_protocol"]["n_epochs"] == 10
    text = evidence.render_protocols(ev, "x.json")
    assert "| tm_cpu (first 10 epochs) | mae | 30.50 ± 0.71 | 90.00 ± 0.00 |" in text
    assert "Bike Sharing tm_cpu, 10 epochs (n8_T8_s1.5_e10)" in text
    write_run_record(clean, _record(0, [90.0] * 11, protocol="clean"))
    with pytest.raises(evidence.EvidenceError, match=r"2 reduced runs of the main setting n8_T8_s1.5_e12"):
        evidence.build_protocols(results, clean, data, repo_root / "paper_tables/reference/paper_numbers.csv", config)


def test_protocols_refuse_records_of_the_wrong_protocol_in_one_line(tmp_path, repo_root):
    results, clean, data, config = _protocol_setup(tmp_path)
    _write(clean, "bike_sharing/tm_cpu/n8_T8_s1.5_e12/seed1.json", _record(1, [90.0] * 12, protocol="paper"))
    with pytest.raises(evidence.EvidenceError, match=r"field 'dataset.protocol' is \['clean', 'paper'\]"):
        evidence.build_protocols(results, clean, data, repo_root / "paper_tables/reference/paper_numbers.csv", config)


def test_the_committed_evidence_records_cite_files_that_still_hold_what_they_read(repo_root):
    assert evidence.stale_citations(repo_root / "results" / "evidence", repo_root / "results", repo_root) == []


def test_a_cited_file_that_changed_or_went_names_its_evidence_record_and_the_fix(tmp_path, capsys):
    results = tmp_path / "results"
    (results / "evidence" / "clean" / "x").mkdir(parents=True)
    (results / "x").mkdir()
    run, own = results / "x" / "seed0.json", results / "evidence" / "clean" / "x" / "seed1.json"
    run.write_text("{}")
    own.write_text("[]")
    from asynctm.artifacts.evidence_common import _sha256

    ev = {"name": "e", "provenance": {"command": "python -m make e", "code_sha256": {"a.py": "0" * 64}},
          "rows": [{"paths": ["x/seed0.json"], "sha256": [_sha256(run)]},
                   {"path": "x/seed1.json", "sha256": _sha256(own)}]}
    (results / "evidence" / "e.json").write_text(json.dumps(ev))
    assert evidence.citations(ev) == [("x/seed0.json", _sha256(run)), ("x/seed1.json", _sha256(own))]
    assert evidence.stale_citations(results / "evidence", results, tmp_path) == []
    run.write_text('{"changed": 1}')
    own.unlink()
    (line,) = evidence.stale_citations(results / "evidence", results, tmp_path)
    assert line == (f"{results / 'evidence' / 'e.json'}: cites files that no longer hold what it read: 1 changed since "
                     "(first x/seed0.json); 1 gone (first x/seed1.json); rebuild it with the command in its provenance "
                     "(python -m make e)")
    assert evidence.main(["check", "--evidence", str(results / "evidence"), "--results", str(results)]) == 1
    assert capsys.readouterr().err.strip() == f"error: {line}"
