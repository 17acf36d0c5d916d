"""Fault injection on run records: no bad record changes a number, deletes a committed artifact or goes unnoticed.

Each class of fault is planted in a copy of a committed record (or of the workflow with its records) and must be
refused by the gate (asynctm.store) with one line naming the file, the field and the fix; the workflow must stop
before any job starts; artifacts must follow their records whatever the files' times; reading the workflow (a dry
run, any override) writes nothing.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from asynctm import store
from asynctm.store import load_records
from tests.helpers import REPO, copy_workflow

CONFIG = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
TM_REL = Path("wsd_apple/tm_cpu/n300_T50_s5_e100/seed0.json")
SVM_REL = Path("wsd_apple/svm/linear_C1/seed0.json")
ABL_REL = next(p.relative_to(REPO / "results")
               for p in sorted((REPO / "results" / "ablation").glob("*/*/*/*/seed0.json")))


def committed(rel: Path) -> dict:
    return json.loads((REPO / "results" / rel).read_text())


def refused(record, rel, config=CONFIG) -> str:
    with pytest.raises(store.RecordError) as info:
        store.check_record(record, rel, config)
    message = str(info.value)
    assert "\n" not in message and str(rel) in message and "fix:" in message, message
    return message


def test_every_committed_record_passes_the_gate():
    assert store.problems(REPO / "results", CONFIG) == []


@pytest.mark.parametrize("rel", [TM_REL, SVM_REL, ABL_REL])
def test_a_committed_record_passes_alone_and_against_the_config(rel):
    store.check_record(committed(rel), rel, CONFIG)
    store.check_record(committed(rel), rel, None)


def _set(record: dict, dotted: str, value) -> dict:
    record = copy.deepcopy(record)
    node = record
    *parents, last = dotted.split(".")
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return record


@pytest.mark.parametrize(
    ("dotted", "value", "field"),
    [
        ("final.accuracy", float("nan"), "final.accuracy"),
        ("final.accuracy", 250.0, "final.accuracy"),
        ("final.f1", -1.0, "final.f1"),
        ("epochs.3.accuracy", float("inf"), "epochs[3].accuracy"),
        ("epochs.0.train_s", -0.5, "epochs[0].train_s"),
        ("epochs.0.train_s", 1e12, "epochs[0].train_s"),
        ("timing.train_s_mean", 1e12, "timing.train_s_mean"),
        ("timing.train_s_total", 3.0, "timing.train_s_total"),
        ("schema", 2, "schema"),
        ("status", "running", "status"),
        ("seed", 3, "seed"),
        ("impl", "tm_gpu", "impl"),
        ("kind", "svm", "kind"),
        ("scale", "smoke", "scale"),
        ("task", "novelty", "task"),
        ("dataset.protocol", "clean", "dataset.protocol"),
        ("hyperparameters.n_clauses", 200, "hyperparameters.n_clauses"),
        ("hyperparameters.state_bits", 10, "hyperparameters.state_bits"),
    ],
)
def test_a_tm_record_with_a_wrong_value_is_refused_naming_the_field(dotted, value, field):
    message = refused(_set(committed(TM_REL), dotted, value), TM_REL)
    assert f": {field}:" in message


def test_a_regression_record_with_a_negative_mae_is_refused():
    rel = Path("bike_sharing/svm/rbf_C1/seed0.json")
    assert ": final.mae:" in refused(_set(committed(rel), "final.mae", -3.0), rel)


def test_a_svm_time_out_of_range_is_refused():
    assert ": timing.fit_s:" in refused(_set(committed(SVM_REL), "timing.fit_s", -1.0), SVM_REL)
    assert ": timing.fit_s:" in refused(_set(committed(SVM_REL), "timing.fit_s", 1e12), SVM_REL)


def test_a_second_file_for_a_seed_under_another_name_is_refused():
    rel = TM_REL.with_name("seed00.json")
    message = refused(_set(committed(TM_REL), "seed", 0), rel)
    assert "seed0.json" in message and "twice" in message


def test_a_gpu_record_in_the_other_builds_folder_is_refused():
    rel = next((REPO / "results").glob("semeval/tm_gpu_warp/n40_*/seed0.json")).relative_to(REPO / "results")
    record = committed(rel)
    wrong = Path(str(rel).replace("tm_gpu_warp", "tm_gpu"))
    assert "threads_per_clause" in refused(_set(record, "impl", "tm_gpu"), wrong)


def test_an_ablation_record_in_another_variant_folder_is_refused():
    parts = list(ABL_REL.parts)
    parts[-2] = "sync_linear" if parts[-2] != "sync_linear" else "async_linear"
    assert ": hyperparameters:" in refused(committed(ABL_REL), Path(*parts))


def test_a_record_of_an_experiment_the_config_lacks_is_refused():
    config = copy.deepcopy(CONFIG)
    del config["experiments"]["wsd_apple"]
    assert ": experiment:" in refused(committed(TM_REL), TM_REL, config)


def _tree(tmp_path: Path, rels=(TM_REL, SVM_REL)) -> Path:
    root = tmp_path / "results"
    for rel in rels:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / "results" / rel, root / rel)
    return root


@pytest.mark.parametrize("damage", ["truncated", "not json", "empty", "binary"])
def test_a_damaged_record_file_is_refused_in_one_line(tmp_path, damage):
    root = _tree(tmp_path)
    path = root / TM_REL
    text = path.read_bytes()
    path.write_bytes({"truncated": text[: len(text) // 2], "not json": b"<html>", "empty": b"",
                      "binary": b"\xff\xfe\x00"}[damage])
    with pytest.raises(store.RecordError) as info:
        load_records(root)
    assert str(info.value).count("\n") == 0 and str(path) in str(info.value) and "fix:" in str(info.value)


def test_a_nan_accuracy_never_reaches_a_mean(tmp_path):
    root = _tree(tmp_path)
    path = root / TM_REL
    path.write_text(json.dumps(_set(committed(TM_REL), "final.accuracy", float("nan"))))
    with pytest.raises(store.RecordError, match="final.accuracy"):
        load_records(root)


def test_problems_lists_every_refused_record_and_gate_raises(tmp_path):
    root = _tree(tmp_path)
    shutil.copy(root / TM_REL, root / TM_REL.with_name("seed00.json"))
    (root / SVM_REL).write_text("{")
    found = store.problems(root, CONFIG)
    assert len(found) == 2 and all("fix:" in line for line in found)
    with pytest.raises(store.RecordError):
        store.gate(root, CONFIG)


def test_the_schema_documentation_is_generated_from_the_schema():
    from asynctm.store.__main__ import schema_doc

    assert (REPO / "results" / "SCHEMA.md").read_text() == schema_doc(), (
        "results/SCHEMA.md is stale: run `python -m asynctm.store schema-doc`")


def test_the_check_command_names_refused_records(tmp_path):
    root = _tree(tmp_path)
    (root / TM_REL).write_text("{")
    done = subprocess.run([sys.executable, "-m", "asynctm.store", "check", "--results", str(root), "--configfile",
                           str(REPO / "config" / "config.yaml")], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 1 and str(root / TM_REL) in done.stdout and "Traceback" not in done.stderr


# -- the workflow: a bad record stops it before any job; artifacts follow their records; reading writes nothing --

ARTIFACT_DIRS = ("paper_tables", "figures")


@pytest.fixture(scope="module")
def paper_copy(tmp_path_factory) -> Path:
    """The workflow with the committed records and artifacts, as a fresh clone has them."""
    dest = copy_workflow(tmp_path_factory.mktemp("paper"))
    shutil.copytree(REPO / "results", dest / "results", ignore=shutil.ignore_patterns("smoke", "*.npz"))
    for name in ARTIFACT_DIRS:
        shutil.rmtree(dest / name, ignore_errors=True)
        shutil.copytree(REPO / name, dest / name)
    # A clone's checkout order sets its files' times: here every input is older than every artifact, so what
    # rebuilds an artifact below is what the change did, not the order the files were written in.
    day_ago = (Path(dest / "results").stat().st_mtime - 86400) * 1e9
    for path in [*(dest / "results").rglob("*"), *(dest / "config").rglob("*"), *(dest / "workflow").rglob("*"),
                 dest / "Snakefile", *(dest / "paper_tables" / "reference").rglob("*"),
                 *(dest / "paper_tables").glob("*_config.yaml")]:
        os.utime(path, ns=(int(day_ago), int(day_ago)))
    return dest


def snakemake(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    command = [str(Path(sys.executable).with_name("snakemake")), "--cores", "1", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})


def _state(root: Path) -> dict:
    return {p.relative_to(root).as_posix(): (p.stat().st_mtime_ns, p.read_bytes())
            for p in root.rglob("*") if p.is_file() and ".snakemake" not in p.parts}


def _planned(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout + result.stderr


def test_the_committed_artifacts_are_up_to_date_with_their_records(paper_copy):
    out = _planned(snakemake(paper_copy, "-n", "tables", "figures", "--config", "run_missing=false"))
    assert "Nothing to be done" in out, out[-3000:]


def test_a_bad_record_stops_the_workflow_before_any_job_and_deletes_nothing(paper_copy):
    path = paper_copy / "results" / TM_REL
    original = path.read_bytes()
    before = {k: v for k, v in _state(paper_copy).items() if k.startswith(ARTIFACT_DIRS)}
    try:
        path.write_bytes(original[: len(original) // 3])
        result = snakemake(paper_copy, "tables", "figures", "--config", "run_missing=false")
        assert result.returncode != 0
        lines = [line for line in (result.stdout + result.stderr).splitlines() if str(TM_REL) in line]
        assert lines and "fix:" in lines[0] and "Traceback" not in result.stderr
        after = {k: v for k, v in _state(paper_copy).items() if k.startswith(ARTIFACT_DIRS)}
        assert after == before
    finally:
        path.write_bytes(original)


@pytest.mark.parametrize("change", ["removed", "older copy", "replaced, same time"])
def test_an_artifact_follows_its_records_whatever_their_times(paper_copy, change):
    path = paper_copy / "results" / TM_REL
    other = paper_copy / "results" / TM_REL.with_name("seed1.json")
    original, stat = path.read_bytes(), path.stat()
    try:
        if change == "removed":
            path.unlink()
        elif change == "older copy":
            record = json.loads(original)
            record["final"]["accuracy"] = 50.0
            path.write_text(json.dumps(record, indent=1))
            os.utime(path, ns=(stat.st_atime_ns - 10**12, stat.st_mtime_ns - 10**12))
        else:
            record = json.loads(original)
            record["final"]["accuracy"] = 51.0
            path.write_text(json.dumps(record, indent=1))
            os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        out = _planned(snakemake(paper_copy, "-n", "tables", "--config", "run_missing=false"))
        assert "table3_performance" in out and "Nothing to be done" not in out
        assert other.is_file()
    finally:
        path.write_bytes(original)
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


@pytest.mark.parametrize("overrides", [[], ["seeds=[0,1]"], ["impls=[tm_cpu]", "run_missing=false"],
                                       ["experiments={wsd_apple: {T: 100}}"]])
def test_reading_the_workflow_writes_nothing(paper_copy, overrides):
    before = _state(paper_copy)
    args = ["-n", "tables", *(["--config", *overrides] if overrides else [])]
    _planned(snakemake(paper_copy, *args))
    assert _state(paper_copy) == before
