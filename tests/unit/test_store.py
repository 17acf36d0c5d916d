"""The record store (asynctm.store) as the one reader of run records: every reader lists the files through its
layout, reads them through its gate, and a record the gate lets through needs no further check to become a row.
Pure Python on the committed records and on records in temporary folders; no pipeline, no GPU."""

from __future__ import annotations

import ast
import copy
import json
from pathlib import Path

import pytest
import yaml

from asynctm import store
from asynctm.artifacts import ablation, report, rules
from asynctm.artifacts.catalog import ARTIFACTS
from asynctm.experiments import estimate, plan
from tests.helpers import REPO, valid_tm_record

RESULTS = REPO / "results"
TM_REL = Path("wsd_apple/tm_cpu/n300_T50_s5_e100/seed0.json")


def _imports(path: Path) -> set[str]:
    """The absolute names of the asynctm modules a source file imports (at module level or in a function)."""
    package = ".".join(path.relative_to(REPO / "src").with_suffix("").parts)
    if path.name == "__init__.py":
        package = package.removesuffix(".__init__")
    else:
        package = package.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            name = ".".join([*base, *([node.module] if node.module else [])])
            out |= {name} | {f"{name}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
    return {n for n in out if n.startswith("asynctm")}


def test_the_store_sits_below_the_experiments_and_the_artifacts():
    """Of the packages above it the store imports only the plan (the names of runs, settings and variants), and
    the estimates read no record through the artifacts."""
    for path in sorted((REPO / "src/asynctm/store").glob("*.py")):
        names = _imports(path)
        assert not [n for n in names if n.startswith("asynctm.artifacts")], path
        assert all(n.startswith("asynctm.experiments.plan") for n in names if n.startswith("asynctm.experiments")), path
    assert not {n for n in _imports(REPO / "src/asynctm/experiments/estimate.py") if n.startswith("asynctm.artifacts")}


def test_the_layout_lists_every_committed_record_once():
    every = store.record_files(RESULTS)
    main, abl = store.main_files(RESULTS), store.ablation_files(RESULTS)
    assert every == sorted(main + abl) and main and abl and not set(main) & set(abl)
    assert abl == ablation.record_files(RESULTS) == sorted((RESULTS / "ablation").glob("*/*/*/*/seed*.json"))
    assert main == sorted(p for p in RESULTS.glob("*/*/*/seed*.json") if p.parts[-4] != "ablation")
    assert {store.layout(p.relative_to(RESULTS))["variant"] is None for p in main} == {True}
    assert all(store.root_of(p) == RESULTS for p in every)


def test_the_artifacts_list_their_records_through_the_store():
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    used = report.used_records(RESULTS, config)
    assert used and set(used) <= set(store.main_files(RESULTS))
    on_disk = {p for name in ARTIFACTS for p in rules.records_on_disk(name, config, RESULTS)}
    assert on_disk == {p.as_posix() for p in used}


def test_a_record_reads_alike_with_and_without_its_root():
    rel = Path("results") / TM_REL
    committed = json.loads((REPO / rel).read_text())
    assert store.read_record(REPO / rel) == store.read_record(REPO / rel, RESULTS) == committed
    abl = store.ablation_files(RESULTS)[0]
    assert store.read_record(abl) == json.loads(abl.read_text())
    assert store.root_of(Path("results") / TM_REL) == Path("results")


def _tree(tmp_path: Path, rec: dict, rel: Path) -> Path:
    path = tmp_path / "results" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rec))
    return path


def _committed() -> dict:
    return json.loads((RESULTS / TM_REL).read_text())


@pytest.mark.parametrize("field,value,where", [
    ("epoch", "a note", "epochs[0].note"), ("implementation", "pyTsetlinMachine", "implementation")])
def test_what_a_row_cannot_hold_is_refused_by_the_gate(tmp_path, field, value, where):
    rec = _committed()
    if field == "epoch":
        rec["epochs"][0]["note"] = value
    else:
        rec["implementation"] = value
    path = _tree(tmp_path, rec, TM_REL)
    with pytest.raises(store.RecordError) as info:
        store.load_records(tmp_path / "results")
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{path}: {where}: ") and "fix:" in message
    assert store.problems(tmp_path / "results") == [message]


def test_a_row_holds_what_its_record_says():
    frame = store.load_records(RESULTS, experiments=["wsd_apple"])
    row = frame[frame["path"] == TM_REL.as_posix()].iloc[0]
    rec = _committed()
    assert row["seed"] == 0 and row["kind"] == "tm" and row["n_epochs"] == len(rec["epochs"])
    assert row["accuracy"] == rec["final"]["accuracy"] and row["train_s_mean"] == rec["timing"]["train_s_mean"]
    assert row["epochs"][0]["epoch"] == 1.0 and "diagnostics" not in row["epochs"][0]
    assert row["last10_accuracy"] == pytest.approx(sum(e["accuracy"] for e in rec["epochs"][-10:]) / 10)


def _ablation_record(variant="async_linear", **hyper) -> dict:
    epochs = [{"accuracy": 50.0 + i, "diagnostics": {"literals_per_clause": 3.0}} for i in range(3)]
    return valid_tm_record({"experiment": "wsd_apple", "impl": "tm_cpu", "params": "n300_T50_s5_e3", "seed": 0,
                            "task": "classification", "epochs": epochs,
                            "hyperparameters": {"tally": variant.split("_")[0], "regression_rule": "linear", **hyper}})


def test_the_ablation_rows_come_from_the_store_and_refuse_a_record_without_diagnostics(tmp_path):
    rel = Path("ablation/wsd_apple/tm_cpu/n300_T50_s5_e3/async_linear/seed0.json")
    path = _tree(tmp_path, _ablation_record(), rel)
    (row,) = ablation.load(tmp_path / "results")
    assert (row["variant"], row["clauses"], row["metric"], row["path"]) == ("async_linear", 300, "accuracy",
                                                                             rel.as_posix())
    rec = _ablation_record()
    del rec["epochs"][1]["diagnostics"]
    path.write_text(json.dumps(rec))
    with pytest.raises(store.RecordError) as info:
        store.ablation_rows(tmp_path / "results")
    assert str(info.value).startswith(f"{path}: epochs[1].diagnostics: missing") and "\n" not in str(info.value)
    main = _tree(tmp_path, _committed(), TM_REL)
    with pytest.raises(store.RecordError, match="not a record of the tally ablation"):
        store.ablation_rows(tmp_path / "results", [main])


def test_a_warp_per_clause_on_the_cpu_build_is_refused_by_the_gate(tmp_path):
    rec = _ablation_record(threads_per_clause=plan.WARP)
    rel = Path("ablation/wsd_apple/tm_cpu/n300_T50_s5_e3/async_linear_warp/seed0.json")
    with pytest.raises(store.RecordError, match=r"hyperparameters\.threads_per_clause: 32, but tm_cpu runs one"):
        store.check_record(rec, rel)
    gpu = copy.deepcopy(rec)
    gpu["impl"] = "tm_gpu"
    store.check_record(gpu, Path(str(rel).replace("tm_cpu", "tm_gpu")))  # the GPU build's warp is its own variant


def test_the_estimates_read_paper_records_through_the_gate(tmp_path):
    rec = _committed()
    rec["epochs"][0]["note"] = "a note"
    path = _tree(tmp_path, rec, TM_REL)
    with pytest.raises(store.RecordError, match="epochs\\[0\\]\\.note"):
        estimate.load_timings(tmp_path / "results")
    path.write_text(json.dumps(_committed()))
    assert ("wsd_apple", "paper", "tm_cpu") in estimate.load_timings(tmp_path / "results").tm
