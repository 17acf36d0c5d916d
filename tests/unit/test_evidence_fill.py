"""The C4 evidence: threads each GPU build launches along a clause sweep, and where its time starts to grow."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from asynctm.artifacts import evidence_fill
from asynctm.artifacts.evidence import render
from tests.helpers import REPO, valid_tm_record

HOST = {"host_id": "feedfacefeedface", "cpu_model": "Test CPU", "logical_cores": 16, "platform": "test",
        "started_utc": "2026-01-01T00:00:00+00:00", "gpu": {"name": "Test GPU", "driver": "1", "cuda": "1"}}


def write_point(root: Path, impl: str, clauses: int, epoch_s: list[float], host=HOST, seed=0):
    params = f"n{clauses}_T15_s3.9_e5"
    rec = valid_tm_record({
        "experiment": "semeval", "impl": impl, "params": params, "seed": seed, "task": "classification",
        "hyperparameters": {"threads_per_clause": 32} if impl == "tm_gpu_warp" else {},
        "epochs": [{"train_s": t, "accuracy": 90.0} for t in epoch_s],
        "provenance": dict(host)})
    folder = root / "semeval" / impl / params
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"seed{seed}.json").write_text(json.dumps(rec))


@pytest.fixture
def data_dir(tmp_path):
    meta = tmp_path / "data" / "processed" / "semeval" / "paper" / "meta.json"
    meta.parent.mkdir(parents=True)
    meta.write_text(json.dumps({"class_names": ["no", "yes"]}))
    return tmp_path / "data"


def limits(tmp_path, sms=4, per_sm=1000):
    p = tmp_path / "limits.json"
    p.write_text(json.dumps({"gpu": {"name": "Test GPU", "attributes": {
        "multiprocessors": sms, "max_threads_per_multiprocessor": per_sm}}}))
    return p


def build(tmp_path, data_dir, **kw):
    return evidence_fill.build(tmp_path / "results", data_dir, REPO / "config" / "config.yaml",
                               [limits(tmp_path)], ["semeval"], 5, kw.get("proportional"))


def test_threads_slopes_and_the_onset_of_proportional_growth(tmp_path, data_dir):
    root = tmp_path / "results"
    # a warp build: flat to 100 clauses, then the time doubles with the clauses
    for n, t in ((25, 1.0), (50, 1.0), (100, 1.0), (200, 2.0), (400, 4.0)):
        write_point(root, "tm_gpu_warp", n, [9.0, t, t, t, t])
    # the paper's design: flat over the whole sweep (epoch 1 left out: its 9 s is set-up)
    for n in (25, 400):
        write_point(root, "tm_gpu", n, [9.0, 3.0, 3.0, 3.0, 3.0])
    ev = build(tmp_path, data_dir)
    (one, warp) = ev["groups"]
    assert (one["impl"], warp["impl"]) == ("tm_gpu", "tm_gpu_warp")
    assert [p["threads"] for p in warp["points"]] == [2 * n * 32 for n in (25, 50, 100, 200, 400)]
    assert warp["onset"] == {"clauses": 100, "threads": 6400}
    assert [round(s["slope"], 6) for s in warp["segments"]] == [0.0, 0.0, 1.0, 1.0]
    assert one["onset"] is None and one["max_threads"] == 800
    assert one["points"][-1]["resident_share"] == pytest.approx(800 / 4000)
    assert ev["rule"]["proportional_slope"] == 0.7  # C4's threshold in the config
    assert build(tmp_path, data_dir, proportional=1.5)["groups"][1]["onset"] is None


def test_points_of_two_hosts_are_not_one_sweep(tmp_path, data_dir):
    root = tmp_path / "results"
    write_point(root, "tm_gpu", 25, [9.0, 1.0, 1.0, 1.0, 1.0])
    write_point(root, "tm_gpu", 400, [9.0, 8.0, 8.0, 8.0, 8.0], host={**HOST, "host_id": "0123456789abcdef"})
    with pytest.raises(evidence_fill.EvidenceError, match="no GPU sweep"):
        build(tmp_path, data_dir)


def test_a_corrupt_record_stops_with_the_gates_line_and_writes_nothing(tmp_path, data_dir, capsys):
    root = tmp_path / "results"
    write_point(root, "tm_gpu", 25, [9.0, 1.0, 1.0, 1.0, 1.0])
    bad = root / "semeval" / "tm_gpu" / "n400_T15_s3.9_e5"
    bad.mkdir(parents=True)
    (bad / "seed0.json").write_text('{"schema": 1, "epochs": [')
    out = tmp_path / "gpu_fill.json"
    rc = evidence_fill.main(["--results", str(root), "--data-dir", str(data_dir), "--out", str(out),
                             "--experiments", "semeval"])
    assert rc == 2 and not out.exists()
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "seed0.json" in err and "truncated" in err


def test_the_record_renders(tmp_path, data_dir):
    root = tmp_path / "results"
    for n, t in ((25, 1.0), (50, 2.0)):
        write_point(root, "tm_gpu_warp", n, [9.0, t, t, t, t])
    ev_dir = tmp_path / "evidence"
    ev_dir.mkdir()
    (ev_dir / "gpu_fill.json").write_text(json.dumps(build(tmp_path, data_dir)))
    (page,) = render(ev_dir, tmp_path / "tables")
    text = page.read_text()
    assert "onset at 25 clauses (1,600 threads)" in text and "| 50 | 3,200 | 80.0 % | 2.00 |  |" in text


def test_a_dataset_without_class_names_stops_with_a_line_naming_its_meta(tmp_path, data_dir):
    write_point(tmp_path / "results", "tm_gpu", 25, [9.0, 1.0, 1.0, 1.0, 1.0])
    meta = data_dir / "processed" / "semeval" / "paper" / "meta.json"
    meta.write_text(json.dumps({"class_names": []}))
    with pytest.raises(evidence_fill.EvidenceError, match="meta.json: no class_names; build the dataset"):
        build(tmp_path, data_dir)
    meta.unlink()
    with pytest.raises(evidence_fill.EvidenceError, match="no readable processed dataset meta"):
        build(tmp_path, data_dir)
