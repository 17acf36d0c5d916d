"""What Tables 3-5 report: the final epoch and the mean of the last 10 epochs, speed-ups from one machine's
records only, repeats of one run shown as "1 distinct run", and reduced protocols named in the note.
Synthetic records in a temporary folder (results/README.md layout); no pipeline, no GPU.
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from asynctm.artifacts import tables
from asynctm.artifacts.reference import load_reference
from asynctm.experiments import plan
from asynctm.store import load_records
from tests.helpers import REPO

REFERENCE = load_reference(REPO / "paper_tables" / "reference" / "paper_numbers.csv")
CONFIG = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
APPLE = "n300_T50_s5_e100"
BIKE = "n1280_T1280_s1.5_e100"
XEON, EPYC = "Intel(R) Xeon(R) Test", "AMD EPYC Test"
DAY = "2026-01-01T10:00:00+00:00"  # when the synthetic runs started (records without a host id pair by day)


def write(root: Path, experiment, impl, params, seed, epochs, speed, cpu=XEON, threads=None, load=None, first=None,
          provenance=None, **fields):
    """A TM record: ``epochs`` is a list of per-epoch metric dicts, the run's last ones (its params' count of
    epochs is reached by repeating the first entry's metrics before them); every epoch takes ``speed`` seconds, the
    first ``first`` where given; ``provenance`` adds to (or replaces keys of) the provenance; ``fields`` go to the
    top level (``dataset`` and ``hyperparameters`` merged into the record's own; ``seeded`` to
    ``implementation``)."""
    n = plan.parse_tm_params(params)["epochs"]
    epochs = [epochs[0]] * (n - len(epochs)) + list(epochs)
    entries = [{"epoch": i + 1, "train_s": speed if i or first is None else first, "eval_s": 0.01, **m}
               for i, m in enumerate(epochs)]
    implementation = {"library": "pyTsetlinMachine" if impl.startswith("pytm") else "asynctm", "version": "1",
                      "device": "cpu"}
    if "seeded" in fields:
        implementation["seeded"] = fields.pop("seeded")
    exp = CONFIG["experiments"][experiment]
    named = plan.parse_tm_params(params)
    dataset = {"name": exp["dataset"], "protocol": exp["protocol"], **fields.pop("dataset", {})}
    hyper = {"n_clauses": named["clauses"], "T": named["T"], "s": named["s"], "epochs": named["epochs"],
             **fields.pop("hyperparameters", {})}
    times = [e["train_s"] for e in entries]
    record = {
        "schema": 1, "status": "complete", "kind": "tm", "experiment": experiment, "impl": impl, "params": params,
        "seed": seed, "scale": "paper", "task": exp["task"], "dataset": dataset,
        "hyperparameters": hyper, "implementation": implementation, "metric_names": {},
        "epochs": entries,
        "final": {k: v for k, v in entries[-1].items() if k not in ("epoch", "train_s", "eval_s", "diagnostics")},
        "timing": {"train_s_mean": sum(times) / len(times), "train_s_total": sum(times)},
        "provenance": {"git_commit": "0" * 40, "git_dirty": 0, "started_utc": DAY, "cpu_model": cpu, "logical_cores": 2,
                       "threads": threads or (1 if impl.startswith("pytm") else 2), "gpu": None,
                       **({} if load is None else {"load_average_1min_at_end": load}), **(provenance or {})},
        **fields,
    }
    path = root / experiment / impl / params / f"seed{seed}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record))


def accuracy_epochs(rng, n=15):
    return [{"accuracy": float(a), "f1": float(a) - 1} for a in 90 + 5 * rng.random(n)]


def row(table, impl):
    """The implementation's rows, indexed by dataset."""
    frame = table.frame
    return frame[frame["implementation"] == impl].set_index("dataset")


def build(root: Path, name: str):
    records = load_records(root)
    return getattr(tables, name)(records, CONFIG, REFERENCE, False)


def test_final_and_last10_both_reported_and_last10_compared(tmp_path):
    rng = np.random.default_rng(1)
    runs = {seed: accuracy_epochs(rng) for seed in range(5)}
    pytm_runs = {seed: accuracy_epochs(rng) for seed in range(5)}
    for seed, epochs in runs.items():
        write(tmp_path, "wsd_apple", "tm_cpu", APPLE, seed, epochs, 0.05)
        write(tmp_path, "wsd_apple", "pytm_indexed", APPLE, seed, pytm_runs[seed], 2.0)
    table = build(tmp_path, "table3_performance")
    r = row(table, "tm_cpu").loc["wsd_apple"]
    final = [e[-1]["accuracy"] for e in runs.values()]
    last10 = [np.mean([x["accuracy"] for x in e[-10:]]) for e in runs.values()]
    assert r["accuracy_mean"] == pytest.approx(np.mean(final)) and r["accuracy_std"] == pytest.approx(
        np.std(final, ddof=1))
    assert r["accuracy_last10_mean"] == pytest.approx(np.mean(last10))
    assert r["accuracy_last10_std"] == pytest.approx(np.std(last10, ddof=1))
    assert r["accuracy_compared"] == "last10"
    assert not math.isclose(np.mean(last10), np.mean(final))
    assert math.isnan(r["accuracy_diff"])  # the paper has no CPU build of its TM
    pytm = row(table, "pytm_indexed").loc["wsd_apple"]  # Δ = last-10 mean - the paper's 92.65
    pytm_last10 = [np.mean([x["accuracy"] for x in e[-10:]]) for e in pytm_runs.values()]
    assert pytm["accuracy_paper"] == 92.65 and pytm["accuracy_diff"] == pytest.approx(np.mean(pytm_last10) - 92.65)
    header = table.markdown.splitlines()[0]
    assert "Accuracy (%) final" in header and "Accuracy (%) last 10" in header
    assert "Δ = our last-10 mean − the paper" in table.caption and "does not say" in table.caption


def test_speedup_only_from_one_machine(tmp_path):
    rng = np.random.default_rng(2)
    for seed in range(5):
        write(tmp_path, "wsd_apple", "pytm_indexed", APPLE, seed, accuracy_epochs(rng), 2.0)
        # tm_cpu seed 4 ran on another machine, ten times slower: it must not enter the speed-up
        write(tmp_path, "wsd_apple", "tm_cpu", APPLE, seed, accuracy_epochs(rng), 0.5 if seed == 4 else 0.05,
              cpu=EPYC if seed == 4 else XEON)
    table = build(tmp_path, "table3_performance")
    r = row(table, "tm_cpu").loc["wsd_apple"]
    assert r["speedup"] == pytest.approx(2.0 / 0.05)
    assert r["speedup_machine"] == f"{XEON} (2 cores, 2026-01-01)"
    assert "left out: 1 of 5 tm_cpu records" in r["note"] and "2 hosts" in r["note"]
    assert "records from 2 machines" in table.caption and EPYC in table.caption and XEON in table.caption
    assert "wsd_apple/tm_cpu/" + APPLE + "/seed4" in table.caption

    # Every tm_cpu record on the other machine: no speed-up at all, and the note says why.
    for seed in range(5):
        write(tmp_path, "wsd_apple", "tm_cpu", APPLE, seed, accuracy_epochs(rng), 0.05, cpu=EPYC)
    table = build(tmp_path, "table3_performance")
    r = row(table, "tm_cpu").loc["wsd_apple"]
    assert math.isnan(r["speedup"]) and "different hosts" in r["note"]

    # Mixed thread counts within one implementation: no speed-up either.
    for seed in range(5):
        write(tmp_path, "wsd_apple", "tm_cpu", APPLE, seed, accuracy_epochs(rng), 0.05, threads=1 + seed % 2)
    r = row(build(tmp_path, "table3_performance"), "tm_cpu").loc["wsd_apple"]
    assert math.isnan(r["speedup"]) and "ran on 1 and 2 threads" in r["note"]


def test_speedup_leaves_out_times_taken_on_a_busy_machine(tmp_path):
    rng = np.random.default_rng(5)
    for seed in range(5):
        write(tmp_path, "wsd_apple", "tm_cpu", APPLE, seed, accuracy_epochs(rng), 0.05, load=2.0)
        # pytm seed 0 shared the 2 cores with other work (load 6.5): its slow epoch must not inflate the speed-up
        write(tmp_path, "wsd_apple", "pytm_indexed", APPLE, seed, accuracy_epochs(rng), 6.0 if seed == 0 else 2.0,
              load=6.5 if seed == 0 else 1.1)
    r = row(build(tmp_path, "table3_performance"), "tm_cpu").loc["wsd_apple"]
    assert r["speedup"] == pytest.approx(2.0 / 0.05)
    assert ("1 of 5 pytm_indexed records left out of the speed-up: timed on a busy machine (1-minute load average "
            "6.5 at the end on 2 cores; plan --busy times them again)") in r["note"]
    # Every record busy: no speed-up, and the note says why.
    for seed in range(5):
        write(tmp_path, "wsd_apple", "pytm_indexed", APPLE, seed, accuracy_epochs(rng), 6.0, load=7.0)
    r = row(build(tmp_path, "table3_performance"), "tm_cpu").loc["wsd_apple"]
    assert math.isnan(r["speedup"]) and "not computed: 5 of 5 pytm_indexed records" in r["note"]


def test_repeats_of_one_run_show_one_distinct_run(tmp_path):
    rng = np.random.default_rng(3)
    mae = [{"mae": float(v), "rmse": float(v) + 10} for v in 30 + 5 * rng.random(12)]
    for seed in range(5):
        write(tmp_path, "bike_sharing", "pytm_nonindexed", BIKE, seed, mae, 2.0 + 0.01 * seed, seeded=False)
        write(tmp_path, "bike_sharing", "tm_cpu", BIKE, seed,
              [{"mae": float(v), "rmse": float(v)} for v in 25 + 5 * rng.random(12)], 0.1)
    table = build(tmp_path, "table5_regression")
    r = row(table, "pytm_nonindexed").loc["bike_sharing"]
    assert r["n_runs"] == 5 and r["distinct_runs"] == 1
    assert r["mae_mean"] == pytest.approx(mae[-1]["mae"]) and math.isnan(r["mae_std"])
    assert "1 distinct run" in r["note"] and "cannot be seeded" in r["note"]
    line = next(x for x in table.markdown.splitlines() if "TM non-indexed" in x and "| 5 |" in x)
    assert f"{mae[-1]['mae']:.2f} (1 distinct run)" in line and "± 0.00" not in line
    assert row(table, "tm_cpu").loc["bike_sharing"]["distinct_runs"] == 5  # distinct seeds stay distinct
    # The time spread is still over all five records (five timings of the same run).
    assert r["n_runs_time"] == 5 and r["train_s_per_epoch_std"] > 0

    # Fallback without the field: seeds 0 and 1 identical (glibc srand(0) == srand(1)), the rest distinct.
    rng = np.random.default_rng(4)
    same = accuracy_epochs(rng)
    for seed in range(5):
        write(tmp_path, "wsd_apple", "pytm_indexed", APPLE, seed, same if seed < 2 else accuracy_epochs(rng), 2.0)
    table = build(tmp_path, "table3_performance")
    r = row(table, "pytm_indexed").loc["wsd_apple"]
    assert r["distinct_runs"] == 4 and "4 distinct runs" in r["note"] and "seeds 0, 1" in r["note"]


def test_reduced_protocol_named_in_note(tmp_path):
    rng = np.random.default_rng(5)
    for seed in range(2):  # pytm_indexed: an older record's wording, with the seed count
        write(tmp_path, "wsd_apple", "pytm_indexed", APPLE, seed, accuracy_epochs(rng, 5), 2.0,
              protocol_scope={"scope": "reduced", "description": "2 seeds x the first 5 epochs"})
        write(tmp_path, "wsd_apple", "pytm_nonindexed", APPLE, seed, accuracy_epochs(rng, 5), 2.0,
              protocol_scope={"name": "reduced"})
        write(tmp_path, "wsd_apple", "tm_cpu", APPLE, seed, accuracy_epochs(rng), 0.05)  # the full protocol
    table = build(tmp_path, "table3_performance")
    notes = row(table, "pytm_indexed")["note"]
    assert "reduced protocol: the first 5 epochs of each seed" in notes.loc["wsd_apple"]
    assert "reduced protocol" in row(table, "pytm_nonindexed").loc["wsd_apple"]["note"]
    assert "reduced protocol:" not in row(table, "tm_cpu").loc["wsd_apple"]["note"].replace(
        "pytm_indexed's reduced protocol:", "")  # its own records ran the full protocol
    assert "reduced protocol: the first 5 epochs of each seed" in table.markdown


def test_reduced_protocol_records_from_the_config(tmp_path):
    """config reduced: the implementation's records are at its own params (..._e5) and seeds; the table finds
    them there, expects only those seeds, and says the speed-up is over a reduced protocol."""
    from asynctm.artifacts import catalog
    from asynctm.experiments import plan

    config = {**CONFIG, "reduced": {"wsd_apple": {"impls": ["pytm_indexed"], "seeds": [0, 1], "epochs": 5}}}
    rng = np.random.default_rng(6)
    params = plan.main_params(config, "wsd_apple", "pytm_indexed")
    assert params == "n300_T50_s5_e5"
    for seed in (0, 1):
        scope = plan.protocol_scope(config, "wsd_apple", "pytm_indexed", params)
        write(tmp_path, "wsd_apple", "pytm_indexed", params, seed, accuracy_epochs(rng, 5), 2.0, protocol_scope=scope)
    for seed in range(5):
        write(tmp_path, "wsd_apple", "tm_cpu", APPLE, seed, accuracy_epochs(rng), 0.05)
    table = tables.table3_performance(load_records(tmp_path), config, REFERENCE, False)
    pytm = row(table, "pytm_indexed").loc["wsd_apple"]
    assert pytm["params"] == params and pytm["n_runs"] == 2 and pytm["status"] == "ok"
    assert "reduced protocol: the first 5 epochs of each seed" in pytm["note"] and "of 5 seeds" not in pytm["note"]
    # its cost at the full protocol, from its own per-epoch time: 5 seeds x 100 epochs x 2.0 s = 0.28 h
    assert "the full protocol (5 seeds x 100 epochs) would take about 0.28 h of training" in pytm["note"]
    ours = row(table, "tm_cpu").loc["wsd_apple"]
    assert ours["speedup"] == pytest.approx(2.0 / 0.05) and "over pytm_indexed's reduced protocol" in ours["note"]
    assert catalog.reads("table3_performance", config, f"results/wsd_apple/pytm_indexed/{params}/seed1.json")
    assert not catalog.reads("table3_performance", config, f"results/wsd_apple/pytm_indexed/{params}/seed2.json")
    assert not catalog.reads("table3_performance", config, f"results/wsd_apple/pytm_indexed/{APPLE}/seed0.json")


def test_nested_per_epoch_objects_are_not_metrics(tmp_path):
    rng = np.random.default_rng(7)
    epochs = [{**e, "diagnostics": {"literals_per_clause": 3.5, "type_ia_feedback": 10}} for e in accuracy_epochs(rng)]
    write(tmp_path, "wsd_apple", "tm_cpu", APPLE, 0, epochs, 0.05)
    frame = load_records(tmp_path)
    assert frame.loc[0, "last10_accuracy"] == pytest.approx(np.mean([e["accuracy"] for e in epochs[-10:]]))
    assert "diagnostics" not in frame.loc[0, "epochs"][0]


def test_report_summary_shows_the_value_compared_with_the_paper(tmp_path):
    from asynctm.artifacts import build, report

    rng = np.random.default_rng(8)
    runs = [accuracy_epochs(rng) for _ in range(3)]
    for seed, epochs in enumerate(runs):
        write(tmp_path / "results", "wsd_apple", "pytm_indexed", APPLE, seed, epochs, 2.0)
    for name in ("table3_performance", "table5_regression", "results_summary"):
        build(name, tmp_path / "results", CONFIG, tmp_path / "tables", host_gpu=False)
    html = report.summary_section(tmp_path / "tables", CONFIG)
    last10 = np.mean([np.mean([e["accuracy"] for e in run[-10:]]) for run in runs])
    final = np.mean([run[-1]["accuracy"] for run in runs])
    assert f"{last10:.2f}" in html and f"{final:.2f}" not in html


def test_figure_over_epochs_uses_and_names_the_reduced_records(tmp_path):
    from asynctm.artifacts import figures
    from asynctm.experiments import plan

    config = {**CONFIG, "reduced": {"bike_sharing": {"impls": ["pytm_nonindexed"], "seeds": [0], "epochs": 5}}}
    params = plan.main_params(config, "bike_sharing", "pytm_nonindexed")
    rng = np.random.default_rng(9)
    write(tmp_path, "bike_sharing", "pytm_nonindexed", params, 0,
          [{"mae": float(v), "rmse": float(v)} for v in 30 + rng.random(5)], 2.0,
          protocol_scope=plan.protocol_scope(config, "bike_sharing", "pytm_nonindexed", params))
    figure = figures.FIGURE_FUNCTIONS["fig_bike_mae_over_epochs"](load_records(tmp_path), config, False)
    import matplotlib.pyplot as plt

    plt.close(figure.figure)
    assert "Records used: 1" in figure.caption  # the e5 record, found at the implementation's own params
    assert "pytm_nonindexed ran a reduced protocol: the first 5 epochs of each seed" in figure.caption


def test_time_figure_caption_names_records_timed_on_a_busy_machine(tmp_path):
    from asynctm.artifacts import figures

    rng = np.random.default_rng(6)
    for clauses, load in ((20, 1.9), (40, 6.5)):
        write(tmp_path, "semeval", "tm_cpu", f"n{clauses}_T15_s3.9_e5", 0, accuracy_epochs(rng, 5), 0.01 * clauses,
              load=load)
    caption = figures.fig_semeval_time_vs_clauses(load_records(tmp_path), CONFIG, False).caption
    assert "Timed on a busy machine: 1 of 2 records (1-minute load average 6.5 at the end on 2 cores)" in caption
    assert "semeval/tm_cpu/n40_T15_s3.9_e5/seed0.json" in caption.split("Timed on a busy machine")[1]
    assert "n20_T15" not in caption.split("Timed on a busy machine")[1].split("\n")[0]


def test_regression_table_names_what_a_constant_prediction_scores(tmp_path):
    from asynctm.experiments.run import constant_baseline

    base = constant_baseline([0, 0, 1, 5, 100], [0, 2, 10])
    assert base["value"] == 1 and base["mae"] == pytest.approx((1 + 1 + 9) / 3)
    mae = [{"mae": 12.0, "rmse": 20.0}] * 3
    write(tmp_path, "blogfeedback", "tm_cpu", "n1280_T1280_s1.5_e100", 0, mae, 0.1,
          dataset={"constant_baseline": base})
    write(tmp_path, "bike_sharing", "tm_cpu", BIKE, 0, mae, 0.1)  # an older record without it: no number
    notes = " ".join(build(tmp_path, "table5_regression").notes)
    assert "has test MAE 3.67 on BlogFeedback (" in notes and "Bike Sharing" not in notes.split("has test MAE")[1]


def gpu(record_fields=None, name="NVIDIA H100 80GB HBM3"):
    """The provenance of a run on a GPU."""
    return {"gpu": {"name": name, "driver": "580.159.04", "cuda": "13.0.0"}, "logical_cores": 16,
            **(record_fields or {})}


def test_the_papers_gpu_design_and_ours_are_rows_of_their_own(tmp_path):
    rng = np.random.default_rng(8)
    for seed in range(3):
        write(tmp_path, "wsd_apple", "tm_gpu_warp", APPLE, seed, accuracy_epochs(rng), 0.02,
              hyperparameters={"threads_per_clause": 32}, provenance=gpu())
        write(tmp_path, "wsd_apple", "tm_cpu", APPLE, seed, accuracy_epochs(rng), 0.05)
    records = load_records(tmp_path)
    assert set(records.loc[records["impl"] == "tm_gpu_warp", "threads_per_clause"]) == {32}
    assert records[records["impl"] == "tm_cpu"]["threads_per_clause"].isna().all()
    table = build(tmp_path, "table3_performance")
    warp = row(table, "tm_gpu_warp").loc["wsd_apple"]
    assert warp["n_runs"] == 3 and warp["train_s_per_epoch_mean"] == pytest.approx(0.02)
    assert math.isnan(warp["accuracy_paper"])  # the paper has no warp per clause: nothing to compare with
    # The paper's design has no record here: a gap that says why, never the warp build's numbers.
    paper_design = row(table, "tm_gpu").loc["wsd_apple"]
    assert paper_design["n_runs"] == 0 and math.isnan(paper_design["train_s_per_epoch_mean"])
    assert paper_design["note"] == plan.REASON_NO_GPU and paper_design["accuracy_paper"] == 95.01
    lines = table.markdown.splitlines()
    assert any("| TM GPU, a warp per clause (ours) | 3 |" in line for line in lines)
    assert any("| TM GPU (ours) |  |" in line and plan.REASON_NO_GPU in line for line in lines)
    assert "a schedule the paper does not have" in table.caption
    table4 = build(tmp_path, "table4_svm_time").frame.set_index(["dataset", "model"])
    assert table4.loc[("wsd_apple", "tm_gpu_warp"), "n_runs"] == 3
    assert table4.loc[("wsd_apple", "tm_gpu"), "note"] == plan.REASON_NO_GPU
    assert math.isnan(table4.loc[("wsd_apple", "tm_gpu_warp"), "paper_s"])  # the paper's time is its design's


def test_per_epoch_times_leave_the_first_epoch_out(tmp_path):
    rng = np.random.default_rng(12)
    for seed in range(3):  # a first epoch ten times the others (compiling, allocating), as a GPU run's
        write(tmp_path, "wsd_apple", "tm_cpu", APPLE, seed, accuracy_epochs(rng), 0.05, first=0.5)
        write(tmp_path, "wsd_apple", "pytm_indexed", APPLE, seed, accuracy_epochs(rng), 2.0, first=6.0)
    frame = load_records(tmp_path)
    assert frame["train_s_steady"].tolist() == pytest.approx([2.0] * 3 + [0.05] * 3)
    assert frame["train_s_first"].tolist() == pytest.approx([6.0] * 3 + [0.5] * 3)
    assert frame["train_s_mean"].tolist() != pytest.approx(frame["train_s_steady"].tolist())
    table = build(tmp_path, "table3_performance")
    r = row(table, "tm_cpu").loc["wsd_apple"]
    assert r["train_s_per_epoch_mean"] == pytest.approx(0.05) and r["speedup"] == pytest.approx(2.0 / 0.05)
    assert r["train_s_first_epoch_mean"] == pytest.approx(0.5)
    assert "over epochs 2..n" in table.caption and "the first epoch" in table.caption
    assert "tm_cpu 10.0x" in table.caption and "pytm_indexed 3.0x" in table.caption  # the first epoch, in view
    table4 = build(tmp_path, "table4_svm_time").frame.set_index(["dataset", "model"])
    assert table4.loc[("wsd_apple", "tm_cpu"), "time_s_mean"] == pytest.approx(0.05)
    assert table4.loc[("wsd_apple", "tm_cpu"), "total_s_mean"] == pytest.approx(0.5 + 99 * 0.05)  # all epochs

    # A sweep point of one epoch keeps it (there is no other), and the figure's caption names the first epochs.
    from asynctm.artifacts import figures

    config = copy.deepcopy(CONFIG)
    config["sweeps"]["semeval"]["epochs"] = 1
    write(tmp_path, "semeval", "tm_cpu", "n20_T15_s3.9_e1", 0, accuracy_epochs(rng, 1), 0.3)
    config5 = copy.deepcopy(CONFIG)
    for clauses, speed in ((20, 0.1), (40, 0.2)):
        write(tmp_path, "semeval", "tm_cpu", f"n{clauses}_T15_s3.9_e5", 0, accuracy_epochs(rng, 5), speed, first=1.0)
    records = load_records(tmp_path)
    assert records.set_index("params").loc["n20_T15_s3.9_e1", "train_s_steady"] == pytest.approx(0.3)
    fig = figures.fig_semeval_time_vs_clauses(records, config5, False)
    line = next(x for x in fig.figure.axes[0].get_lines() if x.get_label() == "ours, CPU")
    assert list(line.get_ydata()) == pytest.approx([0.1, 0.2])
    assert "tm_cpu 2.00x (20 to 40 clauses)" in fig.caption  # the sweep's ratio, first epochs left out
    assert "First epochs, left out: tm_cpu 1.0 s (5.0-10.0x the later epochs' mean)" in fig.caption
    one = figures.fig_semeval_time_vs_clauses(records, config, False)
    assert list(next(x for x in one.figure.axes[0].get_lines() if x.get_label() == "ours, CPU").get_ydata()) == [0.3]
    import matplotlib.pyplot as plt

    plt.close(fig.figure)
    plt.close(one.figure)


def test_cells_and_points_from_a_dirty_tree_say_so(tmp_path):
    rng = np.random.default_rng(13)
    for seed in range(5):
        write(tmp_path, "wsd_apple", "tm_cpu", APPLE, seed, accuracy_epochs(rng), 0.05,
              provenance={"git_dirty": 2 if seed < 3 else 0})
        write(tmp_path, "wsd_apple", "pytm_indexed", APPLE, seed, accuracy_epochs(rng), 2.0)
    table = build(tmp_path, "table3_performance")
    assert "dirty tree: 3 of 5 records" in row(table, "tm_cpu").loc["wsd_apple"]["note"]
    assert row(table, "tm_cpu").loc["wsd_apple"]["dirty_records"] == 3
    assert "dirty tree" not in row(table, "pytm_indexed").loc["wsd_apple"]["note"]
    assert "dirty tree: 3 of 5 records" in build(tmp_path, "table4_svm_time").frame.set_index(
        ["dataset", "model"]).loc[("wsd_apple", "tm_cpu"), "note"]

    from asynctm.artifacts import figures

    for clauses, dirty in ((20, 0), (40, 1)):
        write(tmp_path, "semeval", "tm_cpu", f"n{clauses}_T15_s3.9_e5", 0, accuracy_epochs(rng, 5), 0.1,
              provenance={"git_dirty": dirty})
    fig = figures.fig_semeval_time_vs_clauses(load_records(tmp_path), CONFIG, False)
    import matplotlib.pyplot as plt

    plt.close(fig.figure)
    assert "Dirty tree: 1 of 2 records ran with uncommitted code changes" in fig.caption
    assert "tm_cpu at 40 clauses (1 of 1)" in fig.caption and "tm_cpu at 20 clauses" not in fig.caption


def test_speedups_pair_records_of_one_host_not_of_one_cpu_name(tmp_path):
    rng = np.random.default_rng(14)
    generic = "Intel(R) Xeon(R) Processor"  # a virtual machine's name, the same on different hosts
    for seed in range(3):
        write(tmp_path, "wsd_apple", "pytm_indexed", APPLE, seed, accuracy_epochs(rng), 2.0, cpu=generic,
              provenance={"started_utc": "2026-01-01T10:00:00+00:00"})
        write(tmp_path, "wsd_apple", "tm_cpu", APPLE, seed, accuracy_epochs(rng), 0.05, cpu=generic,
              provenance={"started_utc": "2026-01-02T10:00:00+00:00"})  # another day: another host
    r = row(build(tmp_path, "table3_performance"), "tm_cpu").loc["wsd_apple"]
    assert math.isnan(r["speedup"]) and "different hosts" in r["note"] and "2026-01-02" in r["note"]
    table = build(tmp_path, "table3_performance")
    assert "the same CPU model, logical cores, GPU, platform and UTC day the run started" in table.caption

    # The same day, but another platform (kernel): another host too.
    for seed in range(3):
        write(tmp_path, "wsd_apple", "tm_cpu", APPLE, seed, accuracy_epochs(rng), 0.05, cpu=generic,
              provenance={"platform": "Linux-b"})
        write(tmp_path, "wsd_apple", "pytm_indexed", APPLE, seed, accuracy_epochs(rng), 2.0, cpu=generic,
              provenance={"platform": "Linux-a"})
    r = row(build(tmp_path, "table3_performance"), "tm_cpu").loc["wsd_apple"]
    assert math.isnan(r["speedup"]) and "Linux-a" in r["note"] and "Linux-b" in r["note"]

    # Records that name their host pair by it alone, on any day; another host id never pairs.
    for seed in range(3):
        write(tmp_path, "wsd_apple", "pytm_indexed", APPLE, seed, accuracy_epochs(rng), 2.0, cpu=generic,
              provenance={"host_id": "a" * 16, "started_utc": "2026-01-01T10:00:00+00:00"})
        write(tmp_path, "wsd_apple", "tm_cpu", APPLE, seed, accuracy_epochs(rng), 0.05, cpu=generic,
              provenance={"host_id": "a" * 16 if seed else "b" * 16, "started_utc": "2026-01-03T10:00:00+00:00"})
    r = row(build(tmp_path, "table3_performance"), "tm_cpu").loc["wsd_apple"]
    assert r["speedup"] == pytest.approx(2.0 / 0.05) and "host aaaaaaaaaaaa" in r["speedup_machine"]
    assert "left out: 1 of 3 tm_cpu records on other hosts" in r["note"]


def test_a_host_id_names_the_machine_and_its_boot(monkeypatch, tmp_path):
    from asynctm import provenance

    first = provenance.host_id()
    assert len(first) == 16 and int(first, 16) >= 0 and provenance.host_id() == first
    boot = tmp_path / "boot_id"
    boot.write_text("another boot\n")
    monkeypatch.setattr(provenance, "HOST_ID_SOURCES", (*provenance.HOST_ID_SOURCES[:-1], str(boot)))
    assert provenance.host_id() != first


def test_time_figures_draw_each_gpu_build_as_its_own_line(tmp_path):
    import matplotlib.pyplot as plt

    from asynctm.artifacts import figures

    rng = np.random.default_rng(10)
    # the sweep's ends with one thread per clause, its middle with a warp: two lines, never one mixed curve
    for clauses, impl, speed in ((20, "tm_gpu", 14.3), (40, "tm_gpu_warp", 0.5), (80, "tm_gpu_warp", 0.6),
                                 (15000, "tm_gpu", 17.0)):
        write(tmp_path, "semeval", impl, f"n{clauses}_T15_s3.9_e5", 0, accuracy_epochs(rng, 5), speed,
              hyperparameters={"threads_per_clause": 32} if impl == "tm_gpu_warp" else {}, provenance=gpu())
    fig = figures.fig_semeval_time_vs_clauses(load_records(tmp_path), CONFIG, True)
    lines = {line.get_label(): (list(line.get_xdata()), list(line.get_ydata()))
             for line in fig.figure.axes[0].get_lines() if not line.get_label().startswith("_")}
    plt.close(fig.figure)
    assert lines["ours, GPU"] == ([20, 15000], [14.3, 17.0])
    assert lines["ours, GPU, a warp per clause"] == ([40, 80], [0.5, 0.6])
    assert "tm_gpu (NVIDIA H100 80GB HBM3) 2, tm_gpu_warp (NVIDIA H100 80GB HBM3) 2" in fig.caption
    assert "tm_gpu at 40 clauses (no record)" in fig.caption and "tm_gpu_warp at 20 clauses (no record)" in fig.caption


def test_time_figures_draw_each_gpu_model_as_its_own_line(tmp_path):
    import matplotlib.pyplot as plt

    from asynctm.artifacts import figures

    rng = np.random.default_rng(11)
    # the sweep's ends timed on an H200, a point between on an H100: one line per GPU, never one joined curve
    for clauses, gpu, speed in ((20, "NVIDIA H200", 14.3), (40, "NVIDIA H100 80GB HBM3", 15.8),
                                (15000, "NVIDIA H200", 17.0)):
        write(tmp_path, "semeval", "tm_gpu", f"n{clauses}_T15_s3.9_e5", 0, accuracy_epochs(rng, 5), speed)
        path = tmp_path / "semeval/tm_gpu" / f"n{clauses}_T15_s3.9_e5" / "seed0.json"
        record = json.loads(path.read_text())
        record["provenance"]["gpu"] = {"name": gpu, "driver": "580.159.04", "cuda": "13.0.0"}
        path.write_text(json.dumps(record))
    fig = figures.fig_semeval_time_vs_clauses(load_records(tmp_path), CONFIG, True)
    lines = {line.get_label(): (list(line.get_xdata()), list(line.get_ydata()))
             for line in fig.figure.axes[0].get_lines() if not line.get_label().startswith("_")}
    plt.close(fig.figure)
    assert lines["ours, GPU (H200)"] == ([20, 15000], [14.3, 17.0])
    assert lines["ours, GPU (H100 80GB HBM3)"] == ([40], [15.8])
    assert "tm_gpu (NVIDIA H100 80GB HBM3) 1, tm_gpu (NVIDIA H200) 2" in fig.caption
