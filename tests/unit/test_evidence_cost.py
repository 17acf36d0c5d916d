"""The time_model evidence record (asynctm.artifacts.evidence_cost) on a tiny synthetic input: paper times made by
the model itself at known sizes must be inverted back to those sizes; the record renders through the evidence
renderer; bad input stops with one line."""

from __future__ import annotations

import json
import re
from functools import partial
from pathlib import Path

import pytest

from asynctm.artifacts import evidence
from asynctm.artifacts import evidence_cost as ec
from asynctm.store import RecordError
from tests.helpers import SPOILED, spoil_run_record, valid_tm_record, write_run_record

HP = {"n_clauses": 4, "T": 5, "s": 3.0, "state_bits": 8, "boost_true_positive": True, "append_negated": True}
STATED = {"tgt": {"examples": 80, "examples_source": "toy", "features": 300, "features_source": "toy",
                  "train_fraction": 0.5, "train_source": "toy"}}
TRUE_FEATURES = 150  # the size the target's paper time is made at (stated examples: 40 training examples)


def _record(experiment: str, impl: str, n: int, F: int, seed: int, epochs: int = 4, train_s: float = 0.2) -> dict:
    """A TM run record of the toy setting the record gate accepts (tests.helpers.valid_tm_record)."""
    visits = n * HP["n_clauses"] * 2
    return valid_tm_record({
        "experiment": experiment, "impl": impl, "params": f"n4_T5_s3_e{epochs}", "seed": seed,
        "task": "classification", "dataset": {"name": experiment, "protocol": "paper", "n_train": n, "n_features": F},
        "hyperparameters": HP, "provenance": {"cpu_model": "Toy CPU"},
        "epochs": [{"epoch": e, "train_s": train_s * (1 + seed),
                    "diagnostics": {"type_ia_feedback": 0.02 * visits, "type_ib_feedback": 0.1 * visits * e,
                                    "type_ii_feedback": 0.01 * visits}} for e in range(1, epochs + 1)]})


def _write(path: Path, obj) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(obj if isinstance(obj, str) else json.dumps(obj))
    return path


def _reference(path: Path, rows) -> Path:
    lines = ["dataset,implementation,metric,mean,std,unit,source,note"]
    lines += [f"{ds},tm_gpu,{metric},{value!r},,{unit},{source}," for ds, metric, value, unit, source in rows]
    return _write(path, "\n".join(lines) + "\n")


@pytest.fixture
def toy(tmp_path, monkeypatch):
    monkeypatch.setitem(ec.CLASSES, "cal", 2)
    monkeypatch.setitem(ec.CLASSES, "tgt", 2)
    results = tmp_path / "results"
    for seed in (0, 1):
        write_run_record(results, _record("cal", "tm_cpu", 30, 100, seed))
        write_run_record(results, _record("tgt", "tm_cpu", 60, 400, seed))
        write_run_record(results, _record("cal", "pytm_indexed", 30, 100, seed, train_s=1.0))
    # the paper's times: calibration 1 s per epoch for both designs; the target's made by the model at 40
    # training examples and TRUE_FEATURES features, at the calibration's seconds per operation
    cal = ec.setting(results, "cal", [])
    tgt = ec.setting(results, "tgt", [])
    rows = [("cal", "train_time", 1.0, "s", "Table 4"), ("cal", "speedup", 1.0, "x", "Table 3")]
    made = {}
    for design in ("pytm_indexed", "cuda_paper_code"):
        k = 1.0 / ec.design_ops(design, cal, ec.rates(cal, None))
        made[design] = k * ec.design_ops(design, tgt, ec.rates(tgt, None), n=40, F=TRUE_FEATURES)
    rows += [("tgt", "train_time", made["cuda_paper_code"], "s", "Table 4"),
             ("tgt", "speedup", made["pytm_indexed"] / made["cuda_paper_code"], "x", "Table 3")]
    return {"results": results, "reference": _reference(tmp_path / "paper_numbers.csv", rows), "tmp": tmp_path}


def _build(toy, **kw):
    return ec.build_time_model(toy["results"], toy["reference"], [], calibration=("cal",), targets=("tgt",),
                               stated=STATED, **kw)


def test_paper_times_made_by_the_model_invert_to_their_sizes(toy):
    ev = _build(toy)
    assert ev["kind"] == "time_model" and ev["schema"] == evidence.SCHEMA and ev["name"] == "table4_time_model"
    assert ev["provenance"]["command"].startswith("python -m asynctm.artifacts.evidence_cost")
    assert {s["path"].rsplit("/", 4)[-4] for s in ev["sources"] if s["path"].endswith(".json")} == {"cal", "tgt"}
    designs = {d["key"]: d for d in ev["designs"]}
    for key in ("pytm_indexed", "cuda_paper_code"):
        central = {s["quantity"]: s["central"] for s in designs[key]["summary"]}
        # pyTM's and CUDA's draws grow with every feature, so the inversion is exact
        assert central["features_at_stated_examples"] == TRUE_FEATURES
        # at 300 features, the same work takes 40 x ops(150) / ops(300) examples (linear in the examples)
        st = ec.setting(toy["results"], "tgt", [])
        rate = ec.rates(st, None)
        want = 40 * ec.design_ops(key, st, rate, n=40, F=TRUE_FEATURES) / ec.design_ops(key, st, rate, n=40, F=300)
        assert central["examples_at_stated_features"] == pytest.approx(want, abs=1)
        paper = {p["dataset"]: p for p in designs[key]["paper_times"]}
        assert paper["cal"]["time_over_model"]["cal"] == pytest.approx(1.0)
        assert paper["tgt"]["time_over_model"]["cal"] < 1  # fewer features than our records: less work
    # our pyTM records check the model: 1 and 2 s per epoch (seeds 0 and 1) on one CPU
    check = designs["pytm_indexed"]["checks"]
    assert len(check) == 1 and check[0]["device"] == "Toy CPU" and check[0]["time_s"] == pytest.approx(1.5)
    assert designs["pytm_indexed"]["spread"]["factor"] == pytest.approx(1.0)
    assert designs["cuda_paper_code"]["checks"] == []  # no GPU benchmark given


def test_shares_the_evidence_records_conventions():
    # both take them from evidence_common
    assert ec.SCHEMA == evidence.SCHEMA and ec.HEADER == evidence.HEADER
    assert issubclass(ec.TimeModelError, evidence.EvidenceError)
    assert evidence.RENDERERS[ec.KIND] is ec.render_time_model
    assert set(ec.provenance("x")) == set(evidence.provenance("x"))


def test_renders_through_the_evidence_renderer(toy):
    out = toy["tmp"] / "evidence"
    _write(out / "table4_time_model.json", _build(toy))
    tables = toy["tmp"] / "tables"
    paths = evidence.render(out, tables)
    assert [p.name for p in paths] == ["evidence_table4_time_model.md"]
    md = paths[0].read_text()
    assert "What the paper's times would take" in md and f"| {TRUE_FEATURES} (" in md
    assert md == evidence.render(out, toy["tmp"] / "again")[0].read_text()  # the same record, the same bytes


def test_bad_input_stops_with_one_line(toy, capsys):
    with pytest.raises(ec.TimeModelError, match="no tm_cpu run records"):
        ec.build_time_model(toy["results"], toy["reference"], [], calibration=("cal",), targets=("none",),
                            stated={"none": STATED["tgt"]})
    with pytest.raises(ec.TimeModelError, match="no stated sizes"):
        ec.build_time_model(toy["results"], toy["reference"], [], calibration=("cal",), targets=("tgt",), stated={})
    rec = json.loads((toy["results"] / "tgt/tm_cpu/n4_T5_s3_e4/seed0.json").read_text())
    del rec["epochs"][1]["diagnostics"]
    _write(toy["results"] / "tgt/tm_cpu/n4_T5_s3_e4/seed0.json", rec)
    with pytest.raises(ec.TimeModelError, match=r"epochs\[2\].diagnostics"):
        _build(toy)
    out = toy["tmp"] / "table4_time_model.json"
    assert ec.main(["--out", str(out), "--results", str(toy["results"]), "--reference",
                    str(toy["tmp"] / "missing.csv")]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: ") and not out.exists()
    assert ec.main(["--out", str(toy["tmp"] / "other.json")]) == 1
    assert "must be named table4_time_model.json" in capsys.readouterr().err


@pytest.mark.parametrize("how", SPOILED)
def test_a_run_record_the_gate_refuses_stops_the_time_model_in_its_one_line(toy, capsys, monkeypatch, how):
    line = spoil_run_record(toy["results"] / "cal/pytm_indexed/n4_T5_s3_e4/seed1.json", how)
    with pytest.raises(RecordError, match=line):
        _build(toy)
    # the command line on the toy's datasets: the gate's line, and no record written
    monkeypatch.setattr(ec, "build_time_model", partial(ec.build_time_model, calibration=("cal",), targets=("tgt",),
                                                        stated=STATED))
    out = toy["tmp"] / "ev" / "table4_time_model.json"
    code = ec.main(["--out", str(out), "--results", str(toy["results"]), "--reference", str(toy["reference"]),
                    "--gpu-benchmark", str(_write(toy["tmp"] / "b/gpu_0.json", _bench("G", {"pytm_cuda": 0.5})))])
    err = capsys.readouterr().err
    assert code == 1 and re.fullmatch(f"error: {line}\n", err) and not out.parent.exists()


def _bench(gpu: str, times: dict, setting: str = "cal") -> dict:
    return {"gpu": {"name": gpu}, "settings": [{"setting": setting, "results": {
        impl: {"median_epoch_s": t} for impl, t in times.items()}}]}


def test_same_gpu_splits_the_gap_into_the_gpu_and_the_code(toy, capsys):
    """The authors' code on our GPU over the paper's time, ours over theirs on one GPU: their product is ours over
    the paper's; files of one GPU pool by their median; a file without PyTsetlinMachineCUDA adds no row."""
    benches = [_write(toy["tmp"] / f"b/gpu_{i}.json", _bench("G", {"pytm_cuda": t, "tm_gpu": t / 4}))
               for i, t in enumerate((0.4, 0.5, 0.6))]
    benches.append(_write(toy["tmp"] / "b/gpu_ours_only.json", _bench("H", {"tm_gpu": 0.1})))
    ev = ec.build_same_gpu(toy["reference"], benches)  # the paper's time of "cal": 1 s
    assert [(r["dataset"], r["gpu"], len(r["files"])) for r in ev["rows"]] == [("cal", "G", 3)]
    r = ev["rows"][0]
    assert r["pytm_cuda_s"] == pytest.approx(0.5) and r["authors_over_paper"] == pytest.approx(0.5)
    assert r["tm_gpu_over_authors"] == pytest.approx(0.25) and r["tm_gpu_warp_s"] is None
    assert r["tm_gpu_over_paper"] == pytest.approx(r["authors_over_paper"] * r["tm_gpu_over_authors"])
    out = toy["tmp"] / "evidence"
    _write(out / "table4_same_gpu.json", ev)
    md = evidence.render(out, toy["tmp"] / "tables")[0].read_text()
    assert "| cal | G | 3 | 1 | 0.5 | 0.5 | 0.125 | 0.25 | 0.125 | – |" in md
    with pytest.raises(ec.TimeModelError, match="no GPU benchmark record with PyTsetlinMachineCUDA"):
        ec.build_same_gpu(toy["reference"], benches[-1:])
    bad = _write(toy["tmp"] / "b/gpu_bad.json", {"settings": [{"setting": "cal", "results": []}]})
    assert ec.main(["--out", str(toy["tmp"] / "table4_same_gpu.json"), "--reference", str(toy["reference"]),
                    "--gpu-benchmark", str(bad)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "gpu_bad.json: field 'settings'" in err
