"""The verdicts on the paper's claims (asynctm.artifacts.claims): each claim's logic on small synthetic records
written here (results/README.md layout), the thresholds read from the config's `claims:` section, the "not testable
here" paths saying what would test them, the same records giving the same bytes, and the page of the committed
records. Pure Python in temporary folders; no pipeline, no GPU."""

from __future__ import annotations

import copy
import hashlib
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from asynctm.artifacts import build, catalog, claims, output_paths
from asynctm.artifacts.reference import COLUMNS, load_reference
from asynctm.experiments import plan
from tests.helpers import REPO

REPO_CONFIG = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
EPOCHS = 12
SEEDS = [0, 1, 2]
CONFIG = {
    "scale": "paper", "results_dir": "results", "gpu": "auto", "seeds": SEEDS,
    "impls": ["tm_gpu", "tm_gpu_warp", "tm_cpu", "pytm_indexed", "pytm_nonindexed"],
    "tm": {"epochs": EPOCHS, "state_bits": 8, "boost_true_positive": True, "batch_size": 100, "append_negated": True},
    "experiments": {
        "wsd_apple": {"dataset": "wsd_apple", "protocol": "paper", "task": "classification", "clauses": 300, "T": 50,
                      "s": 5.0, "f1": "macro", "svm": False},
        "bike_sharing": {"dataset": "bike_sharing", "protocol": "paper", "task": "regression", "clauses": 1280,
                         "T": 1280, "s": 1.5, "svm": False},
        "semeval": {"dataset": "semeval", "protocol": "paper", "task": "classification", "clauses": 40, "T": 15,
                    "s": 3.9, "f1": "macro", "svm": False},
    },
    "sweeps": {"semeval": {"clauses": [20, 640, 2560, 7000, 14000], "impls": ["tm_gpu", "tm_gpu_warp"], "seeds": [0],
                           "epochs": 3}},
    "ablation": {"experiments": ["wsd_apple"], "tallies": ["async", "sync"], "regression_rules": ["linear"],
                 "seeds": SEEDS, "impl": "tm_cpu", "threads": 1, "sweep": None},
    "svm": {"classification": {"kernel": "linear", "C": 1.0}, "regression": {"kernel": "rbf", "C": 1.0}},
    "smoke": {"seeds": [0], "epochs": 2, "max_clauses": 20, "sweep_clauses": [10, 20], "max_train": 300,
              "max_test": 200},
    "claims": copy.deepcopy(REPO_CONFIG["claims"]),  # the thresholds under test are the repository's
}
GPU_HOST = {"cpu_model": "Test Xeon", "logical_cores": 16, "platform": "Linux-gpu",
            "started_utc": "2000-01-02T00:00:00Z"}
CPU_HOST = {"cpu_model": "Test EPYC", "logical_cores": 2, "platform": "Linux-cpu",
            "started_utc": "2000-01-01T00:00:00Z"}
PAPER = [  # (dataset, implementation, metric, mean, std, source): a small reference of our own
    ("wsd_apple", "tm_gpu", "accuracy", 95.0, 0.1, "Table 3"), ("wsd_apple", "tm_gpu", "f1", 94.0, 0.1, "Table 3"),
    ("wsd_apple", "pytm_indexed", "accuracy", 92.0, 0.1, "Table 3"),
    ("wsd_apple", "pytm_nonindexed", "accuracy", 92.0, 0.1, "Table 3"),
    ("wsd_apple", "tm_gpu", "speedup", 10.0, None, "Table 3"),
    ("semeval", "tm_gpu", "time_increase_20_to_2560_clauses", 40.0, None, "Text, Sec. 4.3"),
    ("bike_sharing", "tm_gpu", "mae", 24.0, 0.1, "Table 5"),
    ("bike_sharing", "pytm_nonindexed", "mae", 22.0, 0.1, "Table 5"),
]


def write_reference(path: Path, rows=PAPER) -> Path:
    lines = [",".join(COLUMNS)]
    for dataset, impl, metric, mean, std, source in rows:
        lines.append(",".join([dataset, impl, metric, f"{mean:g}", "" if std is None else f"{std:g}", "x",
                               f'"{source}"', ""]))
    path.write_text("\n".join(lines) + "\n")
    return path


class Records:
    """Writes synthetic run records whose statistics are known: every epoch of a run has the same metric value, and
    the first epoch (warm-up) takes ``first_s``, every later one ``epoch_s``."""

    def __init__(self, root: Path):
        self.root = root

    def tm(self, experiment, impl, params, seed, value, epoch_s=1.0, first_s=None, host=None, dirty=0,
           variant=None, hyper_extra=None, metric=None):
        named = plan.parse_tm_params(params)
        task = CONFIG["experiments"][experiment]["task"]
        metric = metric or ("mae" if task == "regression" else "accuracy")
        epochs = []
        for e in range(1, named["epochs"] + 1):
            entry = {"epoch": e, "train_s": float(first_s if (e == 1 and first_s is not None) else epoch_s),
                     "eval_s": 0.01, "diagnostics": {"literals_per_clause": 5.0, "positive_literals_per_clause": 3.0,
                                                     "negated_literals_per_clause": 2.0, "type_ia_feedback": 1,
                                                     "type_ib_feedback": 1, "type_ii_feedback": 1}}
            if metric == "mae":
                entry.update(mae=float(value), rmse=float(value) * 1.5)
            else:
                entry.update(accuracy=float(value), f1=float(value) - 1, f1_macro=float(value) - 1)
            epochs.append(entry)
        times = [e["train_s"] for e in epochs]
        hyper = {"n_clauses": named["clauses"], "T": named["T"], "s": named["s"], "epochs": named["epochs"],
                 **(hyper_extra or {})}
        if impl == "tm_gpu_warp":
            hyper["threads_per_clause"] = plan.WARP
        gpu = {"name": "Test GPU", "driver": "1", "cuda": "1"} if impl.startswith("tm_gpu") else None
        final = {k: v for k, v in epochs[-1].items() if k not in ("epoch", "train_s", "eval_s", "diagnostics")}
        record = {
            "schema": 1, "status": "complete", "kind": "tm", "experiment": experiment, "impl": impl, "params": params,
            "seed": seed, "scale": "paper", "task": task, "dataset": {"name": experiment, "protocol": "paper"},
            "hyperparameters": hyper, "implementation": {"library": "test", "version": "0", "device": "test"},
            "metric_names": {}, "final": final, "epochs": epochs,
            "timing": {"train_s_total": math.fsum(times), "train_s_mean": math.fsum(times) / len(times),
                       "eval_s_total": 0.1},
            "provenance": {"git_commit": "0" * 40, "git_dirty": dirty, "command": "test", "python": "3",
                           "packages": {}, **(host or (GPU_HOST if gpu else CPU_HOST)), "usable_cores": 2,
                           "threads": 1, "gpu": gpu, "wall_s": 1.0, "load_average_1min_at_end": 0.5},
        }
        folder = self.root / experiment / impl / params if variant is None else \
            self.root / plan.ABLATION_DIR / experiment / impl / params / variant
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"seed{seed}.json").write_text(json.dumps(record, indent=1))

    def cell(self, experiment, impl, values, **kw):
        params = plan.main_params(CONFIG, experiment, impl)
        for seed, value in zip(SEEDS, values):
            self.tm(experiment, impl, params, seed, value, **kw)


def base_records(root: Path) -> Records:
    """WSD Apple's cells (tm_gpu on the GPU host, pyTsetlinMachine on another), Bike Sharing's and SemEval's."""
    recs = Records(root)
    recs.cell("wsd_apple", "tm_gpu", [95.0, 95.2, 94.8], epoch_s=0.1, first_s=5.0)
    recs.cell("wsd_apple", "pytm_indexed", [92.0, 92.2, 91.8], epoch_s=2.0, first_s=9.0)
    recs.cell("wsd_apple", "pytm_nonindexed", [92.1, 92.3, 91.9], epoch_s=3.0)
    recs.cell("bike_sharing", "tm_gpu", [24.0, 24.1, 23.9])
    recs.cell("bike_sharing", "pytm_nonindexed", [22.0, 22.1, 21.9])
    return recs


def verdicts(root: Path, reference: Path, config=CONFIG) -> list[claims.Row]:
    rows, _, _ = claims.verdict_rows(root, config, load_reference(reference))
    return rows


def find(rows, claim, level="part", part=None, implementation=None, metric=None) -> claims.Row:
    hits = [r for r in rows if r.claim == claim and r.level == level and (part is None or r.part.startswith(part))
            and (implementation is None or r.implementation == implementation)
            and (metric is None or r.metric == metric)]
    assert len(hits) == 1, [(r.claim, r.part, r.implementation, r.metric) for r in hits]
    return hits[0]


@pytest.fixture
def setup(tmp_path):
    root = tmp_path / "results"
    recs = base_records(root)
    return root, recs, write_reference(tmp_path / "paper_numbers.csv")


# ---- cells within the paper's spread ----------------------------------------------------------------------------

def test_a_cell_is_within_the_spread_when_k_combined_sds_or_the_floor_cover_it(setup):
    root, _, reference = setup
    rows = verdicts(root, reference)
    cell = find(rows, "T3", "cell", "WSD Apple, tm_gpu,", metric="accuracy")
    sd = float(np.std([95.0, 95.2, 94.8], ddof=1))
    k, floor = CONFIG["claims"]["spread"]["k"], CONFIG["claims"]["spread"]["floor_points"]
    assert cell.ours_value == pytest.approx(95.0) and cell.ours_sd == pytest.approx(sd)
    assert cell.tolerance == pytest.approx(max(k * math.hypot(sd, 0.1), floor))
    assert cell.verdict == claims.REPRODUCED
    # the same records against a paper value 2 points away: outside, and the row says which way
    far = verdicts(root, write_reference(root.parent / "far.csv", [
        ("wsd_apple", "tm_gpu", "accuracy", 97.0, 0.1, "Table 3")]))
    cell = find(far, "T3", "cell", "WSD Apple, tm_gpu,", metric="accuracy")
    assert cell.verdict == claims.NOT_REPRODUCED and "ours worse" in cell.ours
    # MAE: the floor is relative to the paper's value
    mae = find(rows, "T5", "cell", "Bike Sharing, tm_gpu,", metric="mae")
    assert mae.tolerance == pytest.approx(max(k * math.hypot(0.1, 0.1), 0.02 * 24.0))
    assert mae.verdict == claims.REPRODUCED


def test_thresholds_are_read_from_the_config(setup):
    root, _, reference = setup
    strict = copy.deepcopy(CONFIG)
    strict["claims"]["spread"].update(k=0.01, floor_points=0.0)
    assert find(verdicts(root, reference), "T3", "cell", "WSD Apple, tm_gpu,", metric="f1").verdict == \
        claims.REPRODUCED
    # f1 is 94.0 in every run and the paper's 94.0 ± 0.1: within any k; accuracy's sd of 0.2 needs k ≥ 0
    cell = find(verdicts(root, write_reference(root.parent / "off.csv", [
        ("wsd_apple", "tm_gpu", "accuracy", 95.1, 0.0, "Table 3")]), strict), "T3", "cell", "WSD Apple, tm_gpu,",
        metric="accuracy")
    assert cell.verdict == claims.NOT_REPRODUCED and cell.tolerance == pytest.approx(0.01 * 0.2)
    missing = {k: v for k, v in CONFIG.items() if k != "claims"}
    with pytest.raises(claims.ClaimsConfigError, match=r"^the config: no 'claims:' section .*config/config.yaml$"):
        verdicts(root, reference, missing)
    partial = copy.deepcopy(CONFIG)
    del partial["claims"]["speedup"]["within_factor"]
    with pytest.raises(claims.ClaimsConfigError, match=r"claims\.speedup\.within_factor is missing"):
        verdicts(root, reference, partial)
    # every threshold section carries its reason, and the page quotes it
    for key, value in CONFIG["claims"].items():
        if isinstance(value, dict):
            assert len(value.get("reason", "")) > 40, key


# ---- C1: no significant loss against the CPU implementations ---------------------------------------------------

def test_c1_is_one_sided_and_counts_the_cpu_implementations(setup):
    root, recs, reference = setup
    rows = verdicts(root, reference)
    apple = find(rows, "C1", part="WSD Apple")
    assert apple.verdict == claims.REPRODUCED  # 3 points better than pyTsetlinMachine is no loss
    bike = find(rows, "C1", part="Bike Sharing")  # MAE 24 vs 22 with sds of 0.1: a loss (lower is better)
    assert bike.verdict == claims.NOT_REPRODUCED and "significant loss" in bike.ours
    # worse than one of the two CPU machines only: partly
    recs.cell("wsd_apple", "pytm_nonindexed", [99.0, 99.1, 98.9], epoch_s=3.0)
    rows = verdicts(root, reference)
    assert find(rows, "C1", part="WSD Apple").verdict == claims.PARTLY
    # the claim: one part partly, one not reproduced, SemEval not testable (config claims.aggregate_reason)
    overall = find(rows, "C1", level="claim")
    assert overall.verdict == claims.PARTLY and overall.ours == "1 partly reproduced, 1 not reproduced, " \
        "1 not testable here"
    assert claims.aggregate([claims.NOT_REPRODUCED, claims.UNTESTABLE]) == claims.NOT_REPRODUCED
    assert claims.aggregate([claims.UNTESTABLE]) == claims.UNTESTABLE


def test_c1_without_gpu_records_is_not_testable_and_says_what_would_test_it(setup, tmp_path):
    root, _, reference = setup
    semeval = find(verdicts(root, reference), "C1", part="SemEval")
    assert semeval.verdict == claims.UNTESTABLE
    assert "no tm_gpu record at n40_T15_s3.9_e12" in semeval.note and "would test it" in semeval.note
    assert semeval.note.endswith("seed0.json, seeds 0-2)")
    one = find(verdicts(root, reference, {**CONFIG, "seeds": [0]}), "C1", part="SemEval")
    assert one.note.endswith("seed0.json, seeds 0)")  # one seed is named too


def test_the_warp_build_is_reported_beside_never_mixed_in(setup):
    root, recs, reference = setup
    recs.cell("semeval", "tm_gpu_warp", [92.0, 92.1, 91.9])
    recs.cell("semeval", "pytm_indexed", [92.0, 92.1, 91.9])
    rows = verdicts(root, reference)
    semeval = find(rows, "C1", part="SemEval")
    assert semeval.verdict == claims.UNTESTABLE and "tm_gpu_warp: reproduced" in semeval.beside
    warp_cells = [r for r in rows if r.level == "cell" and r.implementation == "tm_gpu_warp"]
    assert warp_cells and not any(r.counts for r in warp_cells)


# ---- C2: speed-ups pair one host's records ---------------------------------------------------------------------

def test_c2_across_hosts_is_not_testable_and_names_the_gpu_host(setup):
    root, _, reference = setup
    row = find(verdicts(root, reference), "C2", part="WSD Apple")
    assert row.verdict == claims.UNTESTABLE
    assert "different hosts" in row.note and "pytm_indexed timed on the tm_gpu host (Test Xeon" in row.note


def test_c2_on_one_host_leaves_out_the_warm_up_epoch(setup):
    root, recs, reference = setup
    recs.cell("wsd_apple", "pytm_indexed", [92.0, 92.2, 91.8], epoch_s=2.0, first_s=9.0, host=GPU_HOST)
    row = find(verdicts(root, reference), "C2", part="WSD Apple")
    assert row.ours_value == pytest.approx(2.0 / 0.1)  # epochs 2..12 only: 2.0 s over 0.1 s
    assert row.verdict == claims.REPRODUCED  # 20x >= the paper's 10x / 2
    slow = copy.deepcopy(CONFIG)
    slow["claims"]["warm_up_epochs"] = 0
    row = find(verdicts(root, reference, slow), "C2", part="WSD Apple")
    assert row.ours_value == pytest.approx((9.0 + 11 * 2.0) / (5.0 + 11 * 0.1))
    recs.cell("wsd_apple", "pytm_indexed", [92.0, 92.2, 91.8], epoch_s=0.3, host=GPU_HOST)
    assert find(verdicts(root, reference), "C2", part="WSD Apple").verdict == claims.PARTLY  # 3x: faster, by less
    recs.cell("wsd_apple", "pytm_indexed", [92.0, 92.2, 91.8], epoch_s=0.05, host=GPU_HOST)
    assert find(verdicts(root, reference), "C2", part="WSD Apple").verdict == claims.NOT_REPRODUCED


# ---- C3, C4: clause sweeps ---------------------------------------------------------------------------------------

def sweep(recs, impl, times: dict, host=None):
    for clauses, t in times.items():
        recs.tm("semeval", impl, plan.tm_params_name(clauses, 15, 3.9, 3), 0, 90.0, epoch_s=t, first_s=50.0,
                host=host)


def test_c3_almost_constant_ratio_and_the_semeval_increase(setup):
    root, recs, reference = setup
    sweep(recs, "tm_gpu", {20: 1.0, 640: 1.1, 2560: 1.3, 7000: 1.45, 14000: 2.9})
    rows = verdicts(root, reference)
    constant = find(rows, "C3", part="SemEval sweep")
    assert constant.ours_value == pytest.approx(1.45) and constant.verdict == claims.REPRODUCED
    increase = find(rows, "C3", part="SemEval, 20")
    assert increase.paper_value == pytest.approx(1.4) and increase.ours_value == pytest.approx(1.3)
    assert increase.verdict == claims.REPRODUCED
    sweep(recs, "tm_gpu", {7000: 4.0})  # grows, but with a log-log slope below 0.5: partly
    assert find(verdicts(root, reference), "C3", part="SemEval sweep").verdict == claims.PARTLY
    sweep(recs, "tm_gpu", {7000: 100.0})
    assert find(verdicts(root, reference), "C3", part="SemEval sweep").verdict == claims.NOT_REPRODUCED


def test_c3_names_the_missing_points_of_the_papers_design(setup):
    root, recs, reference = setup
    sweep(recs, "tm_gpu", {20: 1.0, 7000: 1.1})
    sweep(recs, "tm_gpu_warp", {20: 0.1, 640: 0.1, 2560: 0.1, 7000: 0.1})
    row = find(verdicts(root, reference), "C3", part="SemEval sweep")
    assert row.verdict == claims.REPRODUCED and "640, 2,560" in row.note  # endpoints there, points between named
    assert "tm_gpu_warp: reproduced" in row.beside
    (root / "semeval" / "tm_gpu" / plan.tm_params_name(7000, 15, 3.9, 3) / "seed0.json").unlink()
    row = find(verdicts(root, reference), "C3", part="SemEval sweep")
    assert row.verdict == claims.UNTESTABLE and "no tm_gpu record at 640, 2,560, 7,000 clauses" in row.note
    # the two ends on different machines do not make a ratio
    sweep(recs, "tm_gpu", {7000: 1.1}, host={**GPU_HOST, "cpu_model": "Other Xeon"})
    row = find(verdicts(root, reference), "C3", part="SemEval sweep")
    assert row.verdict == claims.UNTESTABLE and "different machines" in row.note


def test_c4_slope_above_the_stated_clause_count(setup):
    root, recs, reference = setup
    sweep(recs, "tm_gpu", {7000: 1.0, 14000: 2.0})
    row = find(verdicts(root, reference), "C4", part="SemEval sweep")
    assert row.ours_value == pytest.approx(1.0) and row.verdict == claims.REPRODUCED
    sweep(recs, "tm_gpu", {14000: 1.0})
    assert find(verdicts(root, reference), "C4", part="SemEval sweep").verdict == claims.NOT_REPRODUCED
    (root / "semeval" / "tm_gpu" / plan.tm_params_name(14000, 15, 3.9, 3) / "seed0.json").unlink()
    row = find(verdicts(root, reference), "C4", part="SemEval sweep")
    assert row.verdict == claims.UNTESTABLE and "14,000" in row.note


# ---- C5: the tally ablation ---------------------------------------------------------------------------------------

def ablation(recs, tally, values, impl="tm_cpu"):
    params = plan.main_params(CONFIG, "wsd_apple")
    variant = plan.ablation_variant(tally, "linear", "dataset", 1)
    for seed, value in zip(SEEDS, values):
        recs.tm("wsd_apple", impl, params, seed, value, variant=variant,
                hyper_extra={"tally": tally, "regression_rule": "linear"}, host=CPU_HOST)


def test_c5_async_against_sync_tallies(setup):
    root, recs, reference = setup
    assert find(verdicts(root, reference), "C5", part="WSD Apple").verdict == claims.UNTESTABLE
    ablation(recs, "async", [94.0, 94.2, 93.8])
    ablation(recs, "sync", [94.1, 94.3, 93.9])
    row = find(verdicts(root, reference), "C5", part="WSD Apple")
    assert row.verdict == claims.REPRODUCED and row.diff == pytest.approx(-0.1)
    ablation(recs, "sync", [97.0, 97.2, 96.8])
    row = find(verdicts(root, reference), "C5", part="WSD Apple")
    assert row.verdict == claims.NOT_REPRODUCED and "tm_gpu: not testable here" in row.beside


# ---- provenance, bytes, the README block -----------------------------------------------------------------------

def test_a_verdict_on_a_dirty_tree_record_says_so(setup, tmp_path):
    root, recs, reference = setup
    recs.cell("wsd_apple", "pytm_indexed", [92.0, 92.2, 91.8], epoch_s=2.0, dirty=3)
    rows = verdicts(root, reference)
    assert find(rows, "C1", part="WSD Apple").dirty_records == 3
    build("claims", root, CONFIG, tmp_path / "out", host_gpu=False, reference_path=reference)
    page = (tmp_path / "out" / "claims.md").read_text()
    assert "**reproduced** † (3 record(s) of a modified checkout)" in page


def test_the_same_records_give_the_same_bytes(setup, tmp_path):
    root, recs, reference = setup
    ablation(recs, "async", [94.0, 94.2, 93.8])
    ablation(recs, "sync", [94.1, 94.3, 93.9])
    first = []
    for name, out in (("claims", tmp_path / "a"), ("fig_claims_forest", tmp_path / "a")):
        first += build(name, root, CONFIG, out, host_gpu=False, reference_path=reference)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    for name in catalog.CLAIMS:
        r = subprocess.run([sys.executable, "-m", "asynctm.artifacts", name, "--results", str(root), "--config",
                            str(config), "--out", str(tmp_path / "b"), "--reference", str(reference)],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    for path in map(Path, first):
        assert path.read_bytes() == (tmp_path / "b" / path.name).read_bytes(), path.name
    assert set(output_paths("claims", tmp_path / "a").values()) <= set(first)
    assert Path(output_paths("fig_claims_forest", tmp_path / "a")["png"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    csv_rows = (tmp_path / "a" / "claims.csv").read_text().splitlines()
    assert csv_rows[0].split(",")[:4] == ["claim", "level", "part", "verdict"]


def test_bad_config_is_one_line_and_writes_nothing(setup, tmp_path):
    root, _, reference = setup
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({k: v for k, v in CONFIG.items() if k != "claims"}))
    r = subprocess.run([sys.executable, "-m", "asynctm.artifacts", "claims", "--results", str(root), "--config",
                        str(config), "--out", str(tmp_path / "out"), "--reference", str(reference)],
                       capture_output=True, text=True)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "no 'claims:' section" in r.stderr
    assert "Traceback" not in r.stderr and not list((tmp_path / "out").glob("claims*"))


def test_readme_block_is_short_and_found_between_the_markers(setup, tmp_path):
    root, _, reference = setup
    rows = verdicts(root, reference)
    block = claims.readme_block(rows)
    build("claims", root, CONFIG, tmp_path / "out", host_gpu=False, reference_path=reference)
    assert claims.readme_block_file(tmp_path / "out") == block
    assert len(block.encode()) <= claims.README_MAX_BYTES and "(paper_tables/claims.md)" in block
    assert [line.split("**")[1] for line in block.splitlines() if line.startswith("- **")] == list(claims.CLAIMS)
    readme = f"# x\n\n{claims.README_MARKERS[0]}\n{block}{claims.README_MARKERS[1]}\n"
    assert claims.block_in(readme) == block and claims.block_in("# no markers\n") is None


# ---- the committed records ----------------------------------------------------------------------------------------

def test_the_committed_records_give_the_committed_page(tmp_path):
    """The page of the repository's records and config: every claim has its verdict and every untestable part says
    what would test it, or why nothing here can; the committed page, CSV and README block are what these records
    give."""
    written = build("claims", REPO / "results", REPO_CONFIG, tmp_path, host_gpu=False)
    rows = (tmp_path / "claims.csv").read_text()
    import csv
    import io

    table = list(csv.DictReader(io.StringIO(rows)))
    overall = {r["claim"]: r["verdict"] for r in table if r["level"] == "claim"}
    assert list(overall) == list(claims.CLAIMS) and set(overall.values()) <= set(claims.VERDICTS)
    for r in table:
        if r["verdict"] == claims.UNTESTABLE and r["level"] != "claim":
            assert "would test it" in r["note"] or "cannot be tested here" in r["note"], (r["claim"], r["part"],
                                                                                           r["note"])
    for path in map(Path, written):
        committed = REPO / "paper_tables" / path.name
        assert committed.is_file() and committed.read_text() == path.read_text(), (
            f"{committed} is not what the records give: snakemake --cores all claims")


def test_the_readme_holds_the_generated_claims_block():
    """README.md's block between the claims markers is paper_tables/claims_readme.md as generated (update it with
    `python -m asynctm.artifacts.claims README.md` after rebuilding the claims)."""
    from asynctm.artifacts import claims

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert claims.block_in(readme) == claims.readme_block_file(), (
        "README.md's claims block is stale: run `.venv/bin/python -m asynctm.artifacts.claims README.md`")


# ---- gaps: explained or open ------------------------------------------------------------------------------------

def _explain(root: Path, entries) -> None:
    (root / "evidence").mkdir(parents=True, exist_ok=True)
    (root / claims.EXPLANATIONS).write_text(yaml.safe_dump(entries, sort_keys=False))


def test_gaps_are_within_the_threshold_open_or_explained_with_their_evidence(setup, tmp_path):
    root, _, reference = setup
    rows = verdicts(root, reference)
    assert find(rows, "C1", part="WSD Apple").gap == claims.WITHIN
    assert find(rows, "C1", part="Bike Sharing").gap.startswith("open: no evidence")
    (root / "evidence").mkdir()
    (root / "evidence" / "bike_order.json").write_text("{}")
    _explain(root, [{"claim": "C1", "part": "Bike Sharing", "status": "explained", "cause": "the example\n order",
                     "evidence": ["bike_order"]}])
    row = find(verdicts(root, reference), "C1", part="Bike Sharing")
    assert (row.gap, row.evidence) == ("explained: the example order", "evidence_bike_order.md")
    build("claims", root, CONFIG, tmp_path / "out", host_gpu=False, reference_path=reference)
    page = (tmp_path / "out" / "claims.md").read_text()
    assert "explained: the example order (evidence: [evidence_bike_order.md](evidence_bike_order.md))" in page
    assert "gaps: 1 explained" in (tmp_path / "out" / "claims_readme.md").read_text()


def test_an_explained_gap_whose_evidence_cites_a_changed_record_stands_as_open(setup, tmp_path):
    root, _, reference = setup
    cited = sorted(root.glob("bike_sharing/*/*/seed0.json"))[0]
    ev = {"rows": [{"paths": [cited.relative_to(root).as_posix()],
                    "sha256": [hashlib.sha256(cited.read_bytes()).hexdigest()]}]}
    (root / "evidence").mkdir()
    (root / "evidence" / "bike_order.json").write_text(json.dumps(ev))
    _explain(root, [{"claim": "C1", "part": "Bike Sharing", "status": "explained", "cause": "the example order",
                     "evidence": ["bike_order"]}])
    assert find(verdicts(root, reference), "C1", part="Bike Sharing").gap == "explained: the example order"
    cited.write_text(cited.read_text() + "\n")  # the same record, other bytes: no longer what the evidence read
    row = find(verdicts(root, reference), "C1", part="Bike Sharing")
    assert row.gap == ("open: the evidence (evidence_bike_order.md) cites records that changed since it was built; "
                       "rebuild it (python -m asynctm.artifacts.evidence check names them). Until then, as it stood: "
                       "the example order")
    assert row.evidence == "evidence_bike_order.md"


@pytest.mark.parametrize("entry, message", [
    ({"claim": "C1", "part": "WSD Apple", "status": "explained", "cause": "x", "evidence": ["e"]},
     "is reproduced, so it has no gap to explain"),
    ({"claim": "C1", "part": "Bike Sharing", "status": "explained", "cause": "x", "evidence": ["missing"]},
     "its evidence 'missing' has no"),
    ({"claim": "C1", "part": "Atlantis", "status": "open", "cause": "x", "evidence": []}, "no row C1 'Atlantis'"),
    ({"claim": "C1", "part": "Bike Sharing", "status": "solved", "cause": "x", "evidence": ["e"]}, "status 'solved'"),
    ({"claim": "C1", "part": "Bike Sharing", "status": "explained", "cause": "x", "evidence": []},
     "an explained gap needs at least one item"),
])
def test_an_explanation_that_does_not_fit_the_rows_stops_with_one_line_and_writes_nothing(setup, tmp_path, entry,
                                                                                           message):
    root, _, reference = setup
    (root / "evidence").mkdir()
    (root / "evidence" / "e.json").write_text("{}")
    _explain(root, [entry])
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    r = subprocess.run([sys.executable, "-m", "asynctm.artifacts", "claims", "--results", str(root), "--config",
                        str(config), "--out", str(tmp_path / "out"), "--reference", str(reference)],
                       capture_output=True, text=True)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and message in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and not list((tmp_path / "out").glob("claims*"))
