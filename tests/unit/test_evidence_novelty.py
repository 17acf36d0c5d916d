"""Evidence on the novelty MLP stage and on convergence (asynctm.artifacts.evidence_novelty): the stage refitted on
saved class sums under several readings, per-epoch trajectories summarised, their tables, and bad input."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import f1_score
from sklearn.neural_network import MLPClassifier
from threadpoolctl import threadpool_limits

from asynctm.artifacts import evidence
from asynctm.artifacts import evidence_novelty as nov
from asynctm.experiments.metrics import classification_metrics
from asynctm.experiments.novelty import run_mlp_novelty, save_scores
from tests.helpers import REPO, SPOILED, spoil_run_record, valid_tm_record, write_run_record

TINY_MLP = {"hidden_layer_sizes": [4], "learning_rate_init": 0.1, "alpha": 0.0001, "max_iter": 30,
            "test_size": 0.2, "seed": 42}
PARAMS = "n8_T8_s1.5_e3"


@pytest.fixture
def one_thread():
    with threadpool_limits(1):
        yield


def _scores(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    known_labels = rng.integers(0, 2, 30)
    known = np.stack([np.where(known_labels == 0, 20, -5), np.where(known_labels == 1, 20, -5)], 1)
    known = known + rng.integers(-8, 9, known.shape)
    novel = rng.integers(-10, 6, (30, 2))
    return {"known_sums": known, "known_labels": known_labels, "novel_sums": novel}


def _reference(path: Path) -> Path:
    rows = ["dataset,implementation,metric,mean,std,unit,source,note",
            "toy,tm_gpu,accuracy,70.0,1.0,%,Table 3,", "toy,tm_gpu,f1,99.5,1.0,%,Table 3,",
            "wsd,pytm_indexed,accuracy,95.0,0.02,%,Table 3,", "wsd,pytm_indexed,f1,94.0,0.02,%,Table 3,"]
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.fixture
def novelty_root(tmp_path, one_thread):
    """Two TM runs of a toy experiment with their class sums and the MLP stage's records of them."""
    root = tmp_path / "results"
    for seed in (0, 1):
        scores = _scores(seed)
        save_scores(root / "toy" / "tm_cpu" / PARAMS / f"seed{seed}.scores.npz", **scores)
        out = run_mlp_novelty(scores, TINY_MLP)
        write_run_record(root, {"experiment": "toy", "impl": "mlp_novelty", "params": f"tm_cpu.{PARAMS}",
                                "seed": seed, "final": out["final"]})
    config = tmp_path / "config.yaml"
    config.write_text(json.dumps({"mlp_novelty": TINY_MLP}))  # JSON is YAML
    return root, config, _reference(tmp_path / "paper.csv")


def test_f1_of_novel_is_twice_the_macro_f1_less_the_f1_of_known():
    rng = np.random.default_rng(3)
    y, p = rng.integers(0, 2, 50), rng.integers(0, 2, 50)
    m = classification_metrics(y, p, "binary")
    assert 2 * m["f1_macro"] - m["f1"] == pytest.approx(100 * f1_score(y, p, pos_label=0))


def test_readings_change_only_what_they_name():
    base = {**TINY_MLP}
    assert nov.reading_params("pipeline", base) == base
    defaults = MLPClassifier().get_params()
    sk = nov.reading_params("sklearn_defaults", base)
    assert sk["learning_rate_init"] == defaults["learning_rate_init"] and sk["max_iter"] == defaults["max_iter"]
    assert sk["hidden_layer_sizes"] == base["hidden_layer_sizes"]
    s = _scores(0)
    csv = nov.reading_scores("authors_csv", s)
    assert np.array_equal(csv["novel_sums"], s["novel_sums"][1:]) and csv["known_sums"] is s["known_sums"]
    with pytest.raises(evidence.EvidenceError, match="unknown reading"):
        nov.reading_params("stratified", base)


def test_mlp_stage_refits_every_seed_and_reproduces_the_records(novelty_root):
    root, config, reference = novelty_root
    ev = nov.build_mlp_stage(root, config, reference, ["toy"], mlp_seeds=[0, 42], test_sizes=[0.5],
                             readings=["pipeline", "authors_csv"], name="toy_mlp")
    assert ev["kind"] == "mlp_stage" and ev["mlp_seeds"] == [42, 0] and ev["test_sizes"] == [0.2, 0.5]
    (g,) = ev["groups"]
    assert (g["impl"], g["params"], g["tm_seeds"], g["n_known"], g["n_novel"]) == ("tm_cpu", PARAMS, [0, 1], 30, 30)
    assert [r["same"] for r in g["reproduced"]] == [True, True]
    assert g["paper"]["column"] == "tm_gpu" and g["paper"]["accuracy"] == [70.0, 1.0]
    assert [(s["reading"], s["test_size"]) for s in g["summaries"]] == [
        ("pipeline", 0.2), ("pipeline", 0.5), ("authors_csv", 0.2), ("authors_csv", 0.5)]
    first = g["summaries"][0]
    cell = first["cells"][0]
    assert cell["mlp_seed"] == 42 and len(cell["accuracy"]) == 2
    for k in range(2):  # the stage's own numbers, and F1 of novel from its macro F1
        out = run_mlp_novelty(_scores(k), {**TINY_MLP, "seed": 42})["final"]
        assert cell["accuracy"][k] == out["accuracy"] and cell["f1_known"][k] == out["f1"]
        assert cell["f1_novel"][k] == pytest.approx(2 * out["f1_macro"] - out["f1"])
    acc = first["metrics"]["accuracy"]
    assert acc["cell_means"] == [float(np.mean(c["accuracy"])) for c in first["cells"]]
    assert acc["range"] == [min(acc["cell_means"]), max(acc["cell_means"])]
    assert acc["paper_within_range"] == (acc["range"][0] <= 70.0 <= acc["range"][1])
    nearest = g["verdict"]["f1"]["nearest"]  # over every reading, share, seed and F1 kind
    gaps = [m - 99.5 for s in g["summaries"] for k in nov.F1_KINDS for m in s["metrics"][k]["cell_means"]]
    assert abs(nearest["gap"]) == min(map(abs, gaps)) and nearest["mean"] == pytest.approx(99.5 + nearest["gap"])
    fits = [v for s in g["summaries"] for c in s["cells"] for v in c["accuracy"]]
    assert g["verdict"]["accuracy"]["fits_at_or_above_paper"]["accuracy"] == sum(v >= 70.0 for v in fits)
    assert g["verdict"]["accuracy"]["best_fit"]["value"] == max(fits) and g["verdict"]["accuracy"]["n_fits"] == 16
    assert len(g["verdict"]["f1"]["within"]) == sum(s["metrics"][k]["paper_within_range"] for s in g["summaries"]
                                                    for k in nov.F1_KINDS)
    assert {s["path"] for s in ev["sources"]} >= {f"toy/tm_cpu/{PARAMS}/seed0.scores.npz",
                                                   f"toy/mlp_novelty/tm_cpu.{PARAMS}/seed1.json"}
    # a record that the stage does not give again is flagged, not hidden
    path = root / "toy" / "mlp_novelty" / f"tm_cpu.{PARAMS}" / "seed1.json"
    rec = json.loads(path.read_text())
    accuracy = rec["final"]["accuracy"]  # a percentage: another one the gate lets through
    rec["final"]["accuracy"] = accuracy - 1.0 if accuracy >= 1.0 else accuracy + 1.0
    path.write_text(json.dumps(rec))
    again = nov.build_mlp_stage(root, config, reference, ["toy"], mlp_seeds=[], test_sizes=[],
                                readings=["pipeline"], name="toy_mlp")
    assert [r["same"] for r in again["groups"][0]["reproduced"]] == [True, False]


def _tm_record(seed: int, accuracies, impl: str = "tm_cpu", params: str = "n3_T5_s1_e100") -> dict:
    """A classification TM run record of the toy experiment ``wsd`` the record gate accepts."""
    epochs = [{"epoch": i + 1, "accuracy": float(a), "f1": float(a) - 1.0} for i, a in enumerate(accuracies)]
    return valid_tm_record({"experiment": "wsd", "impl": impl, "params": params, "seed": seed,
                            "task": "classification",
                            "dataset": {"name": "wsd", "protocol": "paper", "n_train": 10, "n_test": 5},
                            "epochs": epochs})


@pytest.fixture
def convergence_root(tmp_path):
    root = tmp_path / "results"
    epochs = np.arange(1, 101, dtype=float)
    for seed in range(3):
        falling = 96.0 - 0.05 * epochs + 0.01 * seed
        rising = 90.0 + 0.02 * epochs + 0.01 * seed * (epochs % 2)
        for impl, curve in (("pytm_indexed", falling), ("tm_cpu", rising)):
            write_run_record(root, _tm_record(seed, curve, impl))
    (root / "wsd" / "svm" / "linear_C1").mkdir(parents=True)
    (root / "wsd" / "svm" / "linear_C1" / "seed0.json").write_text("{}")  # not a TM: left out
    return root


def test_convergence_windows_slopes_and_best_epochs(convergence_root, tmp_path):
    ev = nov.build_convergence(convergence_root, _reference(tmp_path / "paper.csv"), ["wsd"], name="conv")
    fall, rise = ev["groups"]
    assert (fall["impl"], rise["impl"]) == ("pytm_indexed", "tm_cpu") and fall["seeds"] == [0, 1, 2]
    p = fall["per_seed"][0]
    assert p["best_epoch"] == 1 and p["best"] == pytest.approx(95.95) and ev["metric"] == "accuracy"
    assert p["mean_41_50"] == pytest.approx(96.0 - 0.05 * 45.5) and p["mean_91_100"] == pytest.approx(96 - 0.05 * 95.5)
    assert p["last10"] == p["mean_91_100"] and p["slope_last20"] == pytest.approx(-0.05)
    assert p["epochs_reaching_paper"] == 20  # 96 - 0.05 e >= 95 up to epoch 20
    assert (fall["trend_last20"], fall["late_vs_early"], fall["still_improving"]) == ("falling", "lower", False)
    assert (rise["trend_last20"], rise["late_vs_early"], rise["still_improving"]) == ("rising", "higher", True)
    assert rise["per_seed"][0]["best_epoch"] == 100 and rise["paper"]["accuracy"] is None
    assert fall["mean_curve"]["first_last_reaching_paper"] == [1, 20]
    assert fall["mean_curve"]["windows"][0][:2] == [1, 10] and len(fall["mean_curve"]["windows"]) == 10


def test_both_kinds_render_byte_identically(novelty_root, convergence_root, tmp_path):
    root, config, reference = novelty_root
    ev_dir = tmp_path / "ev"
    ev_dir.mkdir()
    mlp = nov.build_mlp_stage(root, config, reference, ["toy"], mlp_seeds=[0], test_sizes=[],
                              readings=["pipeline"], name="toy_mlp")
    conv = nov.build_convergence(convergence_root, reference, ["wsd"], name="conv")
    for ev in (mlp, conv):
        (ev_dir / f"{ev['name']}.json").write_text(json.dumps(ev))
    first = [p.read_bytes() for p in evidence.render(ev_dir, tmp_path / "t1")]
    second = [p.read_bytes() for p in evidence.render(ev_dir, tmp_path / "t2")]
    assert first == second
    for text in (p.decode() for p in first):  # every table's delimiter row has its header's cells
        lines = text.splitlines()
        for head, rule in zip(lines, lines[1:], strict=False):
            if rule.startswith("|---"):
                assert head.count("|") == rule.count("|"), head
    conv_md, mlp_md = (tmp_path / "t1" / "evidence_conv.md").read_text(), (tmp_path / "t1" /
                                                                           "evidence_toy_mlp.md").read_text()
    assert "| wsd | pytm_indexed (n3_T5_s1_e100) | 3 | 5 |" in conv_md
    assert "no: falling, late lower" in conv_md and "not a fair number" in conv_md
    assert f"| tm_cpu ({PARAMS}) | pipeline | 20 % |" in mlp_md and "2 of 2 |" in mlp_md


def test_bad_input_is_one_line_and_writes_nothing(novelty_root, convergence_root, tmp_path, capsys):
    root, config, reference = novelty_root
    (root / "toy" / "tm_cpu" / PARAMS / "seed1.scores.npz").unlink()
    out = tmp_path / "newsgroups20_mlp_stage.json"
    assert nov.main(["mlp-stage", "--results", str(root), "--out", str(out), "--experiments", "toy", "--config",
                     str(config), "--reference", str(reference), "--mlp-seeds", "0", "--test-sizes", "0.5"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "seed1.scores.npz: no such scores file" in err and not out.exists()
    assert nov.main(["convergence", "--results", str(root), "--out", str(tmp_path / "other.json")]) == 1
    assert "must be named wsd_pytm_convergence.json" in capsys.readouterr().err
    with pytest.raises(evidence.EvidenceError, match="no MLP stage records there"):
        nov.build_mlp_stage(root, config, reference, ["absent"])
    (config).write_text("experiments: {}\n")
    with pytest.raises(evidence.EvidenceError, match="field 'mlp_novelty' is missing"):
        nov.build_mlp_stage(root, config, reference, ["toy"])
    regression = {"experiment": "wsd", "impl": "tm_cpu", "params": "n3_T5_s1_e100", "seed": 0, "task": "regression",
                  "dataset": {"name": "wsd", "protocol": "paper", "n_train": 10, "n_test": 5}}
    write_run_record(convergence_root, {**regression, "epochs": [{"mae": 3.0} for _ in range(100)]})
    with pytest.raises(evidence.EvidenceError, match=r"tm_cpu/n3_T5_s1_e100: its records mix classification and "):
        nov.build_convergence(convergence_root, reference, ["wsd"])
    write_run_record(convergence_root, {**regression, "epochs": [{"rmse": 3.0} for _ in range(100)]})
    with pytest.raises(evidence.EvidenceError, match=r"seed0.json: field 'epochs' needs an 'accuracy' and an 'f1' "):
        nov.build_convergence(convergence_root, reference, ["wsd"])


def test_regression_runs_converge_downwards_and_an_extra_setting_comes_with_the_main_one(tmp_path):
    """An MAE is better lower: the best epoch is the lowest, a falling slope is still improving, and the paper's MAE
    is reached at or below it (Table 5). With a config, ``also`` adds a setting beside each main one."""
    import yaml

    root = tmp_path / "results"
    for seed in range(3):
        for params, n in (("n4_T5_s1_e100", 100), ("n4_T5_s1_e300", 300)):
            mae = 40.0 - 0.05 * np.arange(1, n + 1) + 0.1 * seed  # falls by 0.05 per epoch: 35 at epoch 100
            write_run_record(root, valid_tm_record({
                "experiment": "bike", "impl": "pytm_nonindexed", "params": params, "seed": seed, "task": "regression",
                "dataset": {"name": "bike", "protocol": "paper", "n_train": 10, "n_test": 5},
                "epochs": [{"epoch": i + 1, "mae": float(v), "rmse": float(v) + 1} for i, v in enumerate(mae)]}))
    config = {"experiments": {"bike": {"dataset": "bike", "protocol": "paper", "task": "regression", "clauses": 4,
                                       "T": 5, "s": 1}}, "tm": {"epochs": 100}, "impls": ["pytm_nonindexed"],
              "scale": "paper"}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    reference = tmp_path / "paper.csv"
    reference.write_text("dataset,implementation,metric,mean,std,unit,source,note\n"
                         "bike,pytm_nonindexed,mae,30.0,0.1,target units,Table 5,\n"
                         "bike,pytm_nonindexed,mae,99.0,0.1,target units,Table 3,\n")
    main_only = nov.build_convergence(root, reference, ["bike"], name="bike", config=tmp_path / "config.yaml")
    assert [g["params"] for g in main_only["groups"]] == ["n4_T5_s1_e100"]
    ev = nov.build_convergence(root, reference, ["bike"], name="bike", config=tmp_path / "config.yaml",
                               also=["pytm_nonindexed/n4_T5_s1_e300"])
    short, long = ev["groups"]
    assert ev["metric"] == "mae" and long["params"] == "n4_T5_s1_e300" and long["paper"]["mae"] == [30.0, 0.1]
    assert "test MAEs on bike" in ev["question"] and "and pytm_nonindexed/n4_T5_s1_e300" in ev["question"]
    p = long["per_seed"][0]
    assert p["best_epoch"] == 300 and p["best"] == pytest.approx(25.0) and p["last10_f1"] is None
    assert p["epochs_reaching_paper"] == 101  # 40 - 0.05 e <= 30 from epoch 200 on
    assert short["per_seed"][0]["epochs_reaching_paper"] == 0
    assert (long["trend_last20"], long["still_improving"]) == ("falling", True)
    assert long["mean_curve"]["first_last_reaching_paper"] == [202, 300]  # the mean curve: 40.1 - 0.05 e
    assert short["mean_curve"]["reaches_paper"] is False
    assert "last10_vs_paper" not in long  # a config without the verdicts' thresholds: no comparison
    md = nov.render_convergence(ev, "x")
    assert "| last-10 MAE | paper MAE | epochs 41-50 |" in md and "F1" not in md
    assert "| bike | pytm_nonindexed (n4_T5_s1_e300) | 3 | 5 |" in md
    assert "| bike pytm_nonindexed (n4_T5_s1_e300) |" in md and "| bike | pytm_nonindexed (n4_T5_s1_e100) | 0 |" in md
    assert "| epochs at or below the paper (first-last) | 0 | 99 (202-300) |" in md
    assert "**yes**: falling, late lower" in md and "each run's lowest test MAE" in md
    lines = md.splitlines()
    for head, rule in zip(lines, lines[1:], strict=False):
        if rule.startswith("|---"):
            assert head.count("|") == rule.count("|"), head


def test_the_last_10_mean_is_judged_against_the_paper_by_the_tables_rule(tmp_path):
    """With the configuration's verdict thresholds (claims.spread), each group's last-10 mean against the paper's
    number as the claims page judges a cell: within where |Δ| <= max(k sqrt(sd^2 + sd^2), floor)."""
    import yaml

    root = tmp_path / "results"
    for seed in range(3):
        for params, n, level in (("n4_T5_s1_e100", 100, 35.0), ("n4_T5_s1_e300", 300, 30.5)):
            mae = np.full(n, level + 0.5 * seed)  # seeds 0-2: sd 0.5 over the seeds
            write_run_record(root, valid_tm_record({
                "experiment": "bike", "impl": "pytm_nonindexed", "params": params, "seed": seed, "task": "regression",
                "dataset": {"name": "bike", "protocol": "paper", "n_train": 10, "n_test": 5},
                "epochs": [{"epoch": i + 1, "mae": float(v), "rmse": float(v) + 1} for i, v in enumerate(mae)]}))
    claims = yaml.safe_load((REPO / "config" / "config.yaml").read_text())["claims"]
    claims["spread"].update(k=2.0, floor_mae_relative=0.02)
    config = {"experiments": {"bike": {"dataset": "bike", "protocol": "paper", "task": "regression", "clauses": 4,
                                       "T": 5, "s": 1}}, "tm": {"epochs": 100}, "impls": ["pytm_nonindexed"],
              "scale": "paper", "claims": claims}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    reference = tmp_path / "paper.csv"
    reference.write_text("dataset,implementation,metric,mean,std,unit,source,note\n"
                         "bike,pytm_nonindexed,mae,30.0,0.12,target units,Table 5,\n")
    ev = nov.build_convergence(root, reference, ["bike"], name="bike", config=tmp_path / "config.yaml",
                               also=["pytm_nonindexed/n4_T5_s1_e300"])
    short, long = (g["last10_vs_paper"] for g in ev["groups"])
    tol = 2.0 * math.sqrt(0.5 ** 2 + 0.12 ** 2)  # 1.03, above the floor (2 % of 30: 0.6)
    assert short["diff"] == pytest.approx(5.5) and short["tolerance"] == pytest.approx(tol) and not short["within"]
    assert long["diff"] == pytest.approx(1.0) and long["within"]
    md = nov.render_convergence(ev, "x")
    assert "| paper MAE | last-10 MAE within the paper's spread (the tables' rule) | epochs 41-50 |" in md
    assert f"| no (Δ +5.50, tolerance {tol:.2f}) |" in md and f"| **yes** (Δ +1.00, tolerance {tol:.2f}) |" in md
    lines = md.splitlines()
    for head, rule in zip(lines, lines[1:], strict=False):
        if rule.startswith("|---"):
            assert head.count("|") == rule.count("|"), head
    claims["spread"].pop("k")
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    with pytest.raises(nov.EvidenceError, match=r"claims.spread.k is missing; copy it from config/config.yaml"):
        nov.build_convergence(root, reference, ["bike"], config=tmp_path / "config.yaml")


def test_convergence_with_a_config_keeps_each_implementations_main_setting_only(tmp_path):
    import yaml

    root = tmp_path / "results"
    # the main setting (100 epochs) and a short sweep point: the point is left out with a config, and shown (without
    # a trend) without one
    for params, curve in (("n4_T5_s1_e100", 90.0 + 0.02 * np.arange(100)), ("n8_T5_s1_e5", [80.0, 81, 82, 83, 84])):
        write_run_record(root, _tm_record(0, curve, params=params))
    config = {"experiments": {"wsd": {"dataset": "wsd", "protocol": "paper", "task": "classification", "clauses": 4,
                                      "T": 5, "s": 1}}, "tm": {"epochs": 100}, "impls": ["tm_cpu"], "scale": "paper"}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    reference = _reference(tmp_path / "paper.csv")
    every = nov.build_convergence(root, reference, ["wsd"], name="conv")
    main = nov.build_convergence(root, reference, ["wsd"], name="conv", config=tmp_path / "config.yaml")
    assert [g["params"] for g in every["groups"]] == ["n4_T5_s1_e100", "n8_T5_s1_e5"]
    assert [g["params"] for g in main["groups"]] == ["n4_T5_s1_e100"]
    assert "(each implementation's main setting)" in main["question"] and "on wsd stand" in main["question"]
    row = next(line for line in nov.render_convergence(every, "x").splitlines() if "n8_T5_s1_e5" in line)
    assert row.endswith("| – (too few epochs) |")
    with pytest.raises(nov.EvidenceError, match=r"missing.yaml: unreadable configuration [^\n]*; pass --config"):
        nov.build_convergence(root, reference, ["wsd"], config=tmp_path / "missing.yaml")
    (tmp_path / "other.yaml").write_text(yaml.safe_dump({**config, "impls": 3}))
    with pytest.raises(nov.EvidenceError, match="cannot read the main settings of wsd"):
        nov.build_convergence(root, reference, ["wsd"], config=tmp_path / "other.yaml")


@pytest.mark.parametrize("how", SPOILED)
def test_a_run_record_the_gate_refuses_stops_the_convergence_in_its_one_line(convergence_root, tmp_path, capsys,
                                                                            how):
    line = spoil_run_record(convergence_root / "wsd/pytm_indexed/n3_T5_s1_e100/seed2.json", how)
    out = tmp_path / "ev" / "conv.json"
    code = nov.main(["convergence", "--results", str(convergence_root), "--out", str(out), "--name", "conv",
                     "--experiments", "wsd", "--reference", str(_reference(tmp_path / "paper.csv"))])
    err = capsys.readouterr().err
    assert code == 1 and re.fullmatch(f"error: {line}\\n", err) and not out.parent.exists()


@pytest.mark.parametrize("how", SPOILED)
def test_an_mlp_stage_record_the_gate_refuses_stops_the_mlp_stage_in_its_one_line(novelty_root, tmp_path, capsys,
                                                                                 how):
    root, config, reference = novelty_root
    line = spoil_run_record(root / "toy/mlp_novelty" / f"tm_cpu.{PARAMS}" / "seed1.json", how)
    out = tmp_path / "ev" / "newsgroups20_mlp_stage.json"
    code = nov.main(["mlp-stage", "--results", str(root), "--out", str(out), "--experiments", "toy", "--config",
                     str(config), "--reference", str(reference), "--mlp-seeds", "0", "--test-sizes", "0.5"])
    err = capsys.readouterr().err
    assert code == 1 and re.fullmatch(f"error: {line}\\n", err) and not out.parent.exists()
