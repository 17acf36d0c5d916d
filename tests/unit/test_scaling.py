"""benchmarks/scaling.py: the core-scaling record, table and figure from one scaling run's files."""

from __future__ import annotations

import json

import pytest

from tests.helpers import load_benchmark_script


@pytest.fixture(scope="module")
def scaling():
    return load_benchmark_script("scaling")


def _record(threads: int, ours_s: float, parallel_s: float) -> dict:
    def row(peer, s):
        return {"label": f"{peer} {threads}t", "peer": peer, "options": {"n_threads": threads},
                "metadata": {"threads": threads}, "epoch_s": [s, s], "median_epoch_s": s, "cpu_per_wall": threads}
    return {"cpu": {"model": "Test CPU", "logical_cores": 16}, "gpu": None,
            "threads": {"env": {"ASYNCTM_SOURCE_COMMIT": "abc"}},
            "settings": [{"setting": "apple", "dataset": {"n_train": 100},
                          "results": [row("asynctm", ours_s), row("pytm_parallel", parallel_s)]}]}


LOG = """
== semeval: classification, 500 train / 100 test examples, 10 features (sparse); ...
   seed 42 epoch 1/2: asynctm cpu 1t 1.000s 89.40, asynctm cpu 2t 0.600s 89.40
   seed 42 epoch 2/2: asynctm cpu 1t 1.200s 90.20, asynctm cpu 2t 0.400s 90.20
implementation         warm-up s median s/ep       min-max s x vs base acc % final acc % last3 cpu/wall
asynctm cpu 1t             3.763       1.100   1.000-1.200           -      90.20      89.80     1.11
asynctm cpu 2t             1.159       0.500   0.400-0.600           -      90.20      89.80     2.00

== imdb: classification, 300 train / 100 test examples, 10 features (sparse); ...
   seed 42 epoch 1/2: asynctm cpu 1t 8.000s, asynctm cpu 2t 5.000s
"""


def test_records_and_a_cut_log_give_speedups_and_efficiencies(scaling, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    for threads, ours, par in ((1, 0.8, 4.0), (2, 0.5, 2.5), (4, 0.25, 1.0)):
        (run / f"scaling_apple_t{threads}.json").write_text(json.dumps(_record(threads, ours, par)))
    (run / "semeval_imdb.txt").write_text(LOG)
    out = tmp_path / "summary"
    assert scaling.main([str(run), "--out", str(out)]) == 0
    rec = json.loads(out.with_suffix(".json").read_text())
    ours = {r["threads"]: r for r in rec["settings"]["apple"]["asynctm"]}
    assert ours[2]["speedup_vs_1"] == pytest.approx(1.6) and ours[4]["efficiency"] == pytest.approx(0.8)
    par = {r["threads"]: r for r in rec["settings"]["apple"]["pytm_parallel"]}
    assert par[4]["speedup_vs_1"] == pytest.approx(4.0) and par[4]["efficiency"] == pytest.approx(1.0)
    # a finished setting from its printed summary table, a cut one from its printed epochs, each marked so
    sem = {r["threads"]: r for r in rec["settings"]["semeval"]["asynctm"]}
    assert sem[2]["median_epoch_s"] == pytest.approx(0.5) and "summary table" in sem[2]["source"]
    imdb = {r["threads"]: r for r in rec["settings"]["imdb"]["asynctm"]}
    assert imdb[2]["median_epoch_s"] == pytest.approx(5.0) and "printed epochs" in imdb[2]["source"]
    assert imdb[2]["rows"] == 300 and rec["source_commit"] == "abc"
    md = out.with_suffix(".md").read_text()
    assert "| apple | ours (CPU build, OpenMP threads) | 100 | 4 | 0.25 | 3.20× | 0.80 |" in md
    assert out.with_suffix(".png").stat().st_size > 0 and out.with_suffix(".pdf").stat().st_size > 0


def test_a_folder_without_a_run_is_one_line(scaling, tmp_path, capsys):
    assert scaling.main([str(tmp_path / "absent"), "--out", str(tmp_path / "s")]) == 1
    (tmp_path / "empty").mkdir()
    assert scaling.main([str(tmp_path / "empty"), "--out", str(tmp_path / "s")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("error: ") for line in err)
    assert not list(tmp_path.glob("s.*"))
