"""The GPU campaign driver (asynctm.campaign): staging, the steps, packing and unpacking.

The dress rehearsal runs every step as the GPU machine would, but on the CPU: the steps' child processes
import a stand-in ``pycuda`` package that is the simulated PyCUDA of tests/gpu/test_cuda_glue.py (device buffers
in host memory, kernels compiled for the CPU), on tiny processed datasets at smoke scale, with the packages
that machine lacks made unimportable.
"""

from __future__ import annotations

import html
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from asynctm.campaign import stage as stage_mod
from asynctm.campaign import steps as steps_mod
from asynctm.campaign.stage import StageError, load_config, stage
from asynctm.campaign.steps import past_budget
from asynctm.campaign.unpack import unpack
from asynctm.datasets.base import ProcessedDataset, save_processed
from asynctm.experiments import plan
from tests.helpers import REPO

GPU_TESTS = REPO / "tests" / "gpu"  # test_cuda_glue.py's folder

FAKE_PYCUDA = f"""
import sys
sys.path.insert(0, {str(GPU_TESTS)!r})
from test_cuda_glue import make_fake_pycuda
_fake = make_fake_pycuda([])
driver, compiler = _fake.driver, _fake.compiler
driver.Context.get_device = lambda: driver.Device(0)
sys.modules[__name__ + ".driver"] = driver
sys.modules[__name__ + ".compiler"] = compiler
"""

# Packages of this project that the GPU machine's python lacks (its list: the device tool's KINDS.md).
ABSENT_ON_THE_GPU_MACHINE = ("jsonschema", "nltk", "snakemake", "pyTsetlinMachine", "thundersvm")


def _processed(root: Path) -> Path:
    """Tiny processed datasets: WSD apple (dense) and BBC Sport (novelty, sparse)."""
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, (160, 24)).astype(np.uint8)
    y = (X[:, 0] ^ X[:, 1]).astype(np.int64)
    save_processed(ProcessedDataset("wsd_apple", "paper", "classification", X[:120], y[:120], X[120:], y[120:],
                                    [f"w{i}" for i in range(24)], ["a", "b"]), root / "processed/wsd_apple/paper")
    Xs = sp.csr_matrix(X)
    save_processed(ProcessedDataset("bbc_sport", "paper", "novelty", Xs[:120], y[:120], Xs[120:], y[120:],
                                    [f"w{i}" for i in range(24)], ["cricket", "football"], X_novel=Xs[:20]),
                   root / "processed/bbc_sport/paper")
    return root


def _sdist(folder: Path) -> Path:
    """A stand-in of PyPI's PyTsetlinMachineCUDA-0.1.9.tar.gz with the same layout."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "PyTsetlinMachineCUDA-0.1.9.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for name, text in (("PKG-INFO", "Metadata-Version: 1.0\nName: PyTsetlinMachineCUDA\nVersion: 0.1.9\n"),
                           ("PyTsetlinMachineCUDA/__init__.py", ""),
                           ("PyTsetlinMachineCUDA/tm.py", "import pycuda.autoinit\n")):
            data = text.encode()
            info = tarfile.TarInfo(f"PyTsetlinMachineCUDA-0.1.9/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _wheels(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pycuda-2026.1-cp312-cp312-linux_x86_64.whl").write_bytes(b"stand-in")
    return folder


def _smoke_config(data: Path) -> dict:
    return load_config([f"data_dir={data}", "scale=smoke", "datasets=[wsd_apple, bbc_sport]"])


def test_stage_fails_over_budget_and_leaves_nothing(tmp_path):
    config = _smoke_config(_processed(tmp_path / "data"))
    dest = tmp_path / "stage"
    with pytest.raises(StageError, match="exceed"):
        stage(config, dest=dest, wheels=_wheels(tmp_path / "w"), sdist=_sdist(tmp_path / "s"), budget_bytes=1000,
              say=lambda m: None)
    assert not dest.exists() and not list(tmp_path.glob("stage.tmp-*"))


def test_stage_names_a_missing_dataset(tmp_path):
    config = load_config([f"data_dir={tmp_path}", "datasets=[semeval]"])
    with pytest.raises(StageError, match=r"semeval/paper/meta.json is missing"):
        stage(config, dest=tmp_path / "stage", wheels=_wheels(tmp_path / "w"), sdist=_sdist(tmp_path / "s"),
              say=lambda m: None)


def test_wheel_made_from_the_sdist_is_a_valid_wheel(tmp_path):
    import base64
    import hashlib

    whl = stage_mod._wheel_from_sdist(_sdist(tmp_path / "s"), tmp_path)
    assert whl.name == "PyTsetlinMachineCUDA-0.1.9-py3-none-any.whl"
    with zipfile.ZipFile(whl) as zf:
        record = zf.read("PyTsetlinMachineCUDA-0.1.9.dist-info/RECORD").decode().splitlines()
        assert zf.read("PyTsetlinMachineCUDA/tm.py") == b"import pycuda.autoinit\n"
        for line in record:
            name, digest, size = line.rsplit(",", 2)
            if name.endswith("RECORD"):
                continue
            data = zf.read(name)
            assert int(size) == len(data)
            assert digest == "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        assert b"Name: PyTsetlinMachineCUDA" in zf.read("PyTsetlinMachineCUDA-0.1.9.dist-info/METADATA")


def test_install_refuses_another_python(tmp_path):
    with pytest.raises(StageError, match="cp399"):
        steps_mod.install(tmp_path, {"python_tag": "cp399"}, site=tmp_path / "site")


def test_run_order_and_device_commands(tmp_path):
    config = load_config([])
    sweeps = steps_mod.sweep_runs(config)
    assert sweeps[0][0] == "semeval"
    clauses = [int(p.split("_")[0][1:]) for n, p, s in sweeps if n == "semeval"]
    assert clauses[:2] == [20, 15000] and clauses[2:] == sorted(clauses[2:]) and 10000 in clauses
    assert {n for n, _, _ in sweeps} == {"semeval", "imdb", "bbc_sport", "bike_sharing"}
    paper = steps_mod.paper_runs(config)
    assert paper[0][0] == "wsd_apple" and paper[-1][0] == "blogfeedback"
    assert len({n for n, _, _ in paper}) == 8
    from asynctm.campaign.__main__ import commands

    lines = []
    commands(say=lines.append, tree=tmp_path)  # no GPU tests or benchmark of this code: the first lease's calls
    calls = [ln for ln in lines if "asynctm.campaign step" in ln and not ln.startswith("#")]
    steps = [w for c in calls for w in re.findall(r"asynctm\.campaign step (\w+)", c)]
    # goal_seeds: once the code is benchmarked; the last line: the extra call where device time is left
    assert steps == ["gpu_tests", "bench", "sweeps", "paper", "ablation", "paper", "sweeps", "ablation"]
    # host_peers: a call of its own (docs/gpu-and-clusters.md), pyTsetlinMachine on the GPU machine's cores
    assert set(steps) | {"goal_seeds", "host_peers"} == set(steps_mod.STEPS)
    assert "END=$(( $(date +%s) + N ))" in calls[-1] and "B - 60" in lines[lines.index(calls[-1]) - 1]
    assert all(len(c) < 2000 for c in calls)  # the device tool's limit on a command
    assert all(c.count("--until $END") == c.count("asynctm.campaign step") and "END=$(( $(date +%s) + " in c
               for c in calls)
    assert all(c.count("--threads-per-clause auto") == ("step sweeps" in c) + ("step paper" in c) for c in calls)
    from asynctm.campaign import DEVICE_CALLS

    assert all(int(ln.split("timeout_s=")[1]) <= 600 for ln in lines if "timeout_s=" in ln)  # a command's limit
    # a session's 15 minutes of device time, less a machine's start, the wait between calls and the packing
    assert sum(seconds for seconds, _ in DEVICE_CALLS) <= 900 - 120


@pytest.mark.parametrize("name, k", [("gpu_tests", 32), ("bench", "auto"), ("paper", 3)])
def test_threads_per_clause_is_for_the_training_steps_and_a_warp_at_most(tmp_path, name, k):
    with pytest.raises(StageError, match="--threads-per-clause applies to the sweeps and paper steps"):
        steps_mod.run_step(name, campaign_dir=tmp_path, out_dir=tmp_path / "out", threads_per_clause=k)
    assert not (tmp_path / "out").exists()


def test_a_child_past_the_deadline_is_stopped_and_packing_skips_checkpoints(tmp_path):
    import time

    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "campaign.json").write_text(json.dumps({"config": {}, "source": {}}))
    step = steps_mod.Step("paper", tmp_path / "c", tmp_path / "out", 1.0, tmp_path / "work")
    step.env = dict(os.environ)
    t0 = time.time()
    assert step.child([sys.executable, "-c", "import time; time.sleep(60)"]) is None
    assert time.time() - t0 < 8
    for name in ("seed0.json", "seed0.log", "seed1.checkpoint.npz"):
        (tmp_path / "work/results/e/tm_gpu/p").mkdir(parents=True, exist_ok=True)
        (tmp_path / "work/results/e/tm_gpu/p" / name).write_text("x")
    step.close()
    with tarfile.open(step.pack()) as tar:
        names = tar.getnames()
    assert "results/e/tm_gpu/p/seed0.json" in names and not any("checkpoint" in n for n in names)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["paper.log", "paper.tar.gz"]


def test_runs_that_cannot_fit_are_passed_over(tmp_path):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "campaign.json").write_text(json.dumps({"config": load_config([]), "source": {}}))
    tree = tmp_path / "tree"
    sweep = tree / "results/semeval/tm_gpu/n40_T15_s3.9_e5/seed0.json"
    sweep.parent.mkdir(parents=True)
    sweep.write_text(json.dumps({"epochs": [{}] * 5, "timing": {"train_s_total": 40.0, "eval_s_total": 10.0,
                                                                  "setup": {"compile_s": 3.0}}}))
    killed = "results/wsd_apple/tm_gpu/n300_T50_s5_e100/seed0.json"
    manifest = tree / "benchmarks/results/campaign/paper_gpu_20260101T000000Z.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(json.dumps({"past_budget": [{"run": killed, "budget_s": 480, "elapsed_s": 480}]}))
    step = steps_mod.Step("paper", tmp_path / "c", tmp_path / "out", 480, tmp_path / "work", tree=tree)
    assert steps_mod.estimate_s(step, "semeval", "n40_T15_s3.9_e100") == pytest.approx(10.0 * 100 + 3.0)
    assert steps_mod.estimate_s(step, "semeval", "n80_T15_s3.9_e100") is None
    step.default_threads = 32  # a warp per clause (tm_gpu_warp): the one-thread run (tm_gpu) says nothing of it
    assert steps_mod.estimate_s(step, "semeval", "n40_T15_s3.9_e100") is None
    # the killed run is tm_gpu's, whatever the step runs: the warp build's run of the setting is another record
    assert past_budget(step) == {killed: 480} and steps_mod.record_path(
        step.config, ("wsd_apple", "n300_T50_s5_e100", 0), "tm_gpu_warp") not in past_budget(step)
    step.default_threads = 1
    steps_mod._tm_runs(step, [("wsd_apple", "n300_T50_s5_e100", 0), ("semeval", "n40_T15_s3.9_e100", 0)])
    reasons = [s["reason"] for s in step.manifest["skipped"]]
    assert "larger --budget" in reasons[0] and "would not fit: about 1003 s needed" in reasons[1]
    assert step.manifest["done"] == []
    step.close()


def _bench_setting(name, task, one, warp, peer=None, n_clauses=40, metric="accuracy"):
    """A benchmark record's setting: (median s/epoch, final metric) per build."""
    def res(median, final):
        return {"median_epoch_s": median, "final_metric": final, "final_metric_std": 0.5, "timed_epochs": 1,
                "per_seed": [{"prepare_s": 2.0, "warmup_s": 2 * median, "epoch_s": [median], "eval_s": [0.5]}]}
    results = {"tm_gpu": res(*one), "tm_gpu_warp": res(*warp)}
    if peer:
        results["pytm_cuda"] = res(*peer)
    return {"setting": name, "task": task, "metric": metric, "results": results,
            "hyperparameters": {"n_clauses": n_clauses, "T": 15, "s": 3.9}}


def _choice_step(tmp_path, commit="c" * 40, words=None):
    """A paper step whose staged campaign names ``commit`` and holds meta.json files giving ``words``."""
    config = load_config([])
    camp = tmp_path / "c"
    for name, w in (words or {}).items():
        exp = config["experiments"][name]
        meta = camp / "data/processed" / exp["dataset"] / exp["protocol"] / "meta.json"
        meta.parent.mkdir(parents=True, exist_ok=True)
        meta.write_text(json.dumps({"n_features": w * 32 // (2 if exp.get("append_negated", True) else 1)}))
    camp.mkdir(exist_ok=True)
    (camp / "campaign.json").write_text(json.dumps({"config": config, "source": {"commit": commit}}))
    step = steps_mod.Step("paper", camp, tmp_path / "out", 300, tmp_path / "work" / "paper", tree=tmp_path / "tree")
    step.gpu = {"name": "NVIDIA H200"}
    return step


def _lease_evidence(tmp_path, settings, tests_rc=0, commit="c" * 40, gpu="NVIDIA H200"):
    """What the first device call leaves in its work folders: the GPU tests' manifest and the benchmark."""
    man = tmp_path / "work/gpu_tests/benchmarks/results/campaign/gpu_tests_nvidia_h200_20270101T000000Z.json"
    man.parent.mkdir(parents=True, exist_ok=True)
    man.write_text(json.dumps({"source": {"commit": commit}, "pytest": {"returncode": tests_rc}}))
    bench = tmp_path / "work/bench/benchmarks/results/gpu_nvidia_h200_ccccccc.json"
    bench.parent.mkdir(parents=True, exist_ok=True)
    bench.write_text(json.dumps({"git": {"commit": commit}, "gpu": {"name": gpu}, "settings": settings}))


def test_literal_words_read_the_data_dir_where_nothing_is_staged(tmp_path):
    """``remaining`` runs here, often before ``stage``: it chooses threads from the config's data_dir then."""
    from asynctm.campaign.choice import checkout_view, literal_words

    config = load_config([])
    exp = config["experiments"]["bbc_sport"]
    meta = tmp_path / "d/processed" / exp["dataset"] / exp["protocol"] / "meta.json"
    meta.parent.mkdir(parents=True)
    meta.write_text(json.dumps({"n_features": 7168}))  # not negated: 224 words
    assert literal_words(checkout_view(tmp_path / "tree", config=config), "bbc_sport") is None
    config["data_dir"] = str(tmp_path / "d")
    assert literal_words(checkout_view(tmp_path / "tree", config=config), "bbc_sport") == 224
    staged = tmp_path / "tree/.campaign/data/processed" / exp["dataset"] / exp["protocol"] / "meta.json"
    staged.parent.mkdir(parents=True)
    staged.write_text(json.dumps({"n_features": 32}))
    assert literal_words(checkout_view(tmp_path / "tree", config=config), "bbc_sport") == 1  # the staged one first


def test_threads_per_clause_auto_follows_the_tests_and_the_benchmark(tmp_path):
    from asynctm.campaign.choice import choose_threads

    words = {"wsd_apple": 188, "semeval": 6386, "bike_sharing": 87, "blogfeedback": 63, "bbc_sport": 224}
    step = _choice_step(tmp_path, words=words)
    names = list(words)
    # No evidence of this commit: the config's threads per clause.
    assert {c["threads"] for c in choose_threads(step, names, keep=None).values()} == {1}
    settings = [_bench_setting("wsd_apple", "classification", (0.18, 93.0), (0.02, 93.5), (0.47, 94.0)),
                _bench_setting("semeval", "classification", (15.7, 87.7), (0.6, 87.0), (55.0, 88.8)),
                _bench_setting("bike_sharing", "regression", (0.1, 40.0), (0.3, 90.0), metric="mae")]
    _lease_evidence(tmp_path, settings)
    chosen = choose_threads(step, names, keep=None)
    got = {n: c["threads"] for n, c in chosen.items()}
    # measured: faster with a warp (apple, semeval) or not (bike; its MAE counts for nothing); not measured: a
    # warp where a setting with as few words or fewer was faster and none with as many or more was slower
    assert got == {"wsd_apple": 32, "semeval": 32, "bike_sharing": 1, "blogfeedback": 1, "bbc_sport": 32}
    assert "a warp was faster on semeval, wsd_apple" not in chosen["bbc_sport"]["reason"]
    assert "wsd_apple" in chosen["bbc_sport"]["reason"] and "bike_sharing" in chosen["blogfeedback"]["reason"]
    # A warp accuracy more than a point below both references: one thread everywhere.
    settings[1] = _bench_setting("semeval", "classification", (15.7, 87.7), (0.6, 80.0), (55.0, 88.8))
    _lease_evidence(tmp_path, settings)
    chosen = choose_threads(step, names, keep=None)
    assert {c["threads"] for c in chosen.values()} == {1} and "suspect" in chosen["wsd_apple"]["reason"]
    # GPU tests that failed: one thread everywhere.
    settings[1] = _bench_setting("semeval", "classification", (15.7, 87.7), (0.6, 87.0), (55.0, 88.8))
    _lease_evidence(tmp_path, settings, tests_rc=1)
    assert {c["threads"] for c in choose_threads(step, names, keep=None).values()} == {1}
    # Another commit's evidence says nothing of this one.
    _lease_evidence(tmp_path, settings, commit="d" * 40)
    assert "no GPU tests or benchmark" in choose_threads(step, ["semeval"], keep=None)["semeval"]["reason"]
    # A warp build that failed where the one-thread build ran counts as slower: here, on the most words of all.
    settings[1] = _bench_setting("semeval", "classification", (15.7, 87.7), (0.6, 87.0), (55.0, 88.8))
    settings[1]["results"].pop("tm_gpu_warp")
    settings[1]["skipped"] = {"tm_gpu_warp": "failed in its first epoch: LogicError: cuLaunchKernel failed"}
    _lease_evidence(tmp_path, settings)
    chosen = choose_threads(step, names, keep=None)
    assert chosen["semeval"]["threads"] == 1 and "the warp build failed (failed in its first" in chosen["semeval"][
        "reason"]
    assert chosen["wsd_apple"]["threads"] == 32 and chosen["bbc_sport"]["threads"] == 1
    # The paper step keeps a main setting on the build of its recorded seeds (the folder they are in).
    settings[1] = _bench_setting("semeval", "classification", (15.7, 87.7), (0.6, 87.0), (55.0, 88.8))
    _lease_evidence(tmp_path, settings)
    rec = tmp_path / "tree/results/semeval/tm_gpu/n40_T15_s3.9_e100/seed0.json"
    rec.parent.mkdir(parents=True)
    rec.write_text(json.dumps({"hyperparameters": {"n_clauses": 40}}))
    assert choose_threads(step, ["semeval"], keep="main")["semeval"]["threads"] == 1
    assert choose_threads(step, ["semeval"], keep=None)["semeval"]["threads"] == 32

    # The sweeps step keeps a sweep on the build of most of its recorded points (one thread on a tie), so that
    # its missing points join the longer line; the main setting's seeds are not the sweep's points.
    def point(params, k, base="tree"):
        path = tmp_path / base / "results/semeval" / ("tm_gpu_warp" if k == 32 else "tm_gpu") / params / "seed0.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"hyperparameters": {"threads_per_clause": k} if k != 1 else {}}))

    assert choose_threads(step, ["semeval"], keep="sweep")["semeval"]["threads"] == 32  # none: the benchmark's
    point("n20_T15_s3.9_e5", 1)
    assert choose_threads(step, ["semeval"], keep="sweep")["semeval"] == {
        "threads": 1, "reason": "as the recorded points of its sweep"}
    point("n80_T15_s3.9_e5", 32)
    assert choose_threads(step, ["semeval"], keep="sweep")["semeval"]["threads"] == 1
    point("n80_T15_s3.9_e5", 32, base="work/paper")  # the same point, unpacked and in the work folder: once
    assert choose_threads(step, ["semeval"], keep="sweep")["semeval"]["threads"] == 1
    point("n160_T15_s3.9_e5", 32, base="work/paper")
    assert choose_threads(step, ["semeval"], keep="sweep")["semeval"]["threads"] == 32
    assert choose_threads(step, ["semeval"], keep="main")["semeval"]["threads"] == 1
    # An experiment without a sweep: rules 1-4.
    assert choose_threads(step, ["wsd_apple"], keep="sweep")["wsd_apple"]["threads"] == 32
    step.close()


def test_a_run_is_estimated_from_the_benchmark_of_its_gpu_and_threads(tmp_path):
    from asynctm.campaign.choice import ESTIMATE_MARGIN, OTHER_GPU_FACTOR, RUN_OVERHEAD_S

    step = _choice_step(tmp_path)
    _lease_evidence(tmp_path, [_bench_setting("semeval", "classification", (15.0, 87.7), (0.5, 87.0))],
                    commit="e" * 40)  # another commit of the kernels still estimates a run
    step.threads = {"semeval": 32}
    want = ESTIMATE_MARGIN * (RUN_OVERHEAD_S + 2.0 + 1.0 + 100 * 0.5 + 99 * 0.5)
    assert steps_mod.estimate_s(step, "semeval", "n40_T15_s3.9_e100") == pytest.approx(want)
    assert steps_mod.estimate_s(step, "semeval", "n80_T15_s3.9_e100") is None  # other clauses
    step.threads = {"semeval": 8}
    assert steps_mod.estimate_s(step, "semeval", "n40_T15_s3.9_e100") is None  # not benchmarked
    step.threads, step.gpu = {"semeval": 32}, {"name": "NVIDIA H100 80GB HBM3"}
    # another GPU's benchmark, where this one has none: with a factor for the other GPU
    assert steps_mod.estimate_s(step, "semeval", "n40_T15_s3.9_e100") == pytest.approx(OTHER_GPU_FACTOR * want)
    step.close()


def test_steps_of_a_call_share_its_end(tmp_path):
    import time

    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "campaign.json").write_text(json.dumps({"config": {}, "source": {}}))
    end = time.time() + 100
    step = steps_mod.Step("bench", tmp_path / "c", tmp_path / "out", float("inf"), tmp_path / "w", until=end)
    assert step.deadline == end and 99 <= step.manifest["budget_s"] <= 100
    step.close()
    step = steps_mod.Step("bench", tmp_path / "c", tmp_path / "out", 30, tmp_path / "w", until=end)
    assert step.deadline < end and step.manifest["budget_s"] == 30
    step.close()


def test_pytm_cuda_literal_counts_mask_the_padding(monkeypatch):
    import types

    from asynctm.campaign import bench

    C, nc, n_lit, bits = 2, 3, 40, 8  # 40 literals: two 32-bit chunks, 8 valid bits in the last
    rng = np.random.default_rng(3)
    ta = rng.integers(0, 2**32, (C, nc, 2, bits), dtype=np.uint64).astype(np.uint32)
    include = ta[:, :, :, bits - 1]
    expected = [bin(int(w[0])).count("1") + bin(int(w[1]) & 0xFF).count("1") for w in include.reshape(C * nc, 2)]
    drv = types.SimpleNamespace(memcpy_dtoh=lambda dst, src: dst.__setitem__(slice(None), src.ravel()))
    monkeypatch.setitem(sys.modules, "pycuda", types.SimpleNamespace(driver=drv))
    monkeypatch.setitem(sys.modules, "pycuda.driver", drv)
    model = types.SimpleNamespace(number_of_classes=C, number_of_clauses=nc, number_of_ta_chunks=2,
                                  number_of_state_bits=bits, number_of_features=n_lit, ta_state_gpu=ta)
    assert bench._pytm_cuda_literal_counts(model).tolist() == expected


def test_a_seed_stopped_after_its_warm_up_does_not_void_the_others():
    from asynctm.campaign.bench import aggregate

    def row(seed, accs):
        return {"seed": seed, "epoch_s": [0.1] * len(accs), "metrics": [{"accuracy": a} for a in accs],
                "warmup_s": 0.2, "literals_per_clause": {"mean": 3.0, "mean_nonempty": 3.0}}

    agg = aggregate([row(0, [80, 90]), row(1, [82, 92]), row(2, [])], "accuracy")
    assert agg["final_metric"] == 91 and agg["timed_epochs"] == 2 and agg["seeds"] == [0, 1]
    assert len(agg["per_seed"]) == 3 and agg["median_epoch_s"] == pytest.approx(0.1)


def test_benchmark_comparison_and_goal():
    from asynctm.campaign.bench import compare, goal_miss

    def res(median, finals):
        return {"median_epoch_s": median, "timed_epochs": 5, "seeds": [0, 1, 2], "final_metric": float(np.mean(finals)),
                "final_metric_std": float(np.std(finals, ddof=1))}

    c = compare("semeval", "classification", "accuracy", {"tm_gpu": res(1.0, [90, 91, 92]),
                                                          "pytm_cuda": res(2.5, [90.5, 91, 91.5])})
    assert c["speedup_vs_pytm_cuda"] == 2.5 and c["goal"]["met"]
    c = compare("semeval", "classification", "accuracy", {"tm_gpu": res(1.0, [88, 88, 88]),
                                                          "pytm_cuda": res(2.5, [90, 90, 90])})
    assert c["goal"]["speed_met"] and not c["goal"]["accuracy_within"] and not c["goal"]["met"]
    assert goal_miss(c, "accuracy") == (" (accuracy 2.00 points below PyTsetlinMachineCUDA's, "
                                        "outside 1 point either way)")
    c = compare("wsd_apple", "classification", "accuracy", {"tm_gpu": res(1.0, [93, 94, 95]),
                                                            "tm_cpu": res(3.0, [92, 95, 98])})
    assert c["tm_gpu_within_spread"]["tm_cpu"]["within"] and c["goal"] is None
    c = compare("semeval", "classification", "accuracy", {"tm_gpu": res(4.0, [90, 91, 92]),
                                                          "tm_gpu_warp": res(0.5, [90, 91, 92]),
                                                          "pytm_cuda": res(2.5, [90.5, 91, 91.5])})
    assert not c["goal"]["met"] and c["tm_gpu_warp"]["goal"]["met"]  # each build against the peer on its own
    assert goal_miss(c, "accuracy") == " (0.62x, below 2x)" and goal_miss(c["tm_gpu_warp"], "accuracy") == ""
    assert c["tm_gpu_warp"]["speedup_vs_pytm_cuda"] == 5.0 and c["warp_speedup_vs_one_thread"] == 8.0
    c = compare("semeval", "classification", "accuracy", {"tm_gpu": res(1.0, [92, 93, 94]),
                                                          "pytm_cuda": res(0.8, [90, 91, 92])})
    assert goal_miss(c, "accuracy") == (" (0.80x, below 2x; accuracy 2.00 points above PyTsetlinMachineCUDA's, "
                                        "outside 1 point either way)")


@pytest.mark.slow
def test_dress_rehearsal_on_the_simulated_gpu(tmp_path):
    """stage -> every step (as on the GPU machine) -> unpack -> records the tables read; then a step called
    again skips what is recorded, and a step without budget stops cleanly."""
    import time

    data = _processed(tmp_path / "data")
    staged = tmp_path / "stage"
    meta = stage(_smoke_config(data), dest=staged, wheels=_wheels(tmp_path / "w"), sdist=_sdist(tmp_path / "s"),
                 say=lambda m: None)
    assert meta["experiments"] == ["bbc_sport", "wsd_apple"]
    assert (staged / "wheels" / "PyTsetlinMachineCUDA-0.1.9-py3-none-any.whl").is_file()
    assert (staged / "data/processed/bbc_sport/paper/novel.npz").is_file()

    fake = tmp_path / "fake" / "pycuda"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(FAKE_PYCUDA)
    for absent in ABSENT_ON_THE_GPU_MACHINE:  # as there: importing them fails
        (fake.parent / absent).mkdir()
        (fake.parent / absent / "__init__.py").write_text(f"raise ImportError('no {absent} on the GPU machine')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(fake.parent), str(REPO / "src")]),
           "PYTHONHASHSEED": "0", "OUT": str(tmp_path / "unused")}
    out, tree = tmp_path / "out", tmp_path / "tree"

    def step(name, *extra, budget="120", call_out=None):  # call_out: a later device call's own (empty) $OUT
        cmd = [sys.executable, "-m", "asynctm.campaign", "step", name, "--no-install", "--campaign-dir", str(staged),
               "--out", str(call_out or out), "--work-dir", str(tmp_path / "work" / name), "--tree", str(tree),
               "--budget", budget, *extra]
        r = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        return r

    step("gpu_tests", "--select", "init_state_every_lane or gpu_memory_is_released")
    step("bench", "--until", f"{time.time() + 240:.0f}")
    # the goal settings' other seeds, one process each (smoke: the bench ran seed 0 only)
    r = step("goal_seeds", "--select", "wsd_apple")
    assert "goal seeds to measure: wsd_apple seed 1, wsd_apple seed 2" in r.stdout
    step("sweeps", "--threads-per-clause", "auto")
    step("paper", "--threads-per-clause", "auto")
    step("ablation")
    # pyTsetlinMachine on the GPU machine's own cores beside our GPU builds (this machine has no core past the
    # first two, and that python no pyTsetlinMachine: the GPU runs only)
    step("host_peers", "--budget", "90")
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{s}.{ext}" for s in steps_mod.STEPS
                                                           for ext in ("log", "tar.gz"))
    written = unpack(out, into=tree, say=lambda m: None)
    assert all(w.startswith(("results/", "benchmarks/results/")) for w in written)
    host = sorted((tree / "benchmarks/results/campaign").glob("host_peers_simulated_gpu_*/*.json"))
    assert [p.name for p in host] == [f"{e}_{i}.json" for e in ("bbc_sport", "wsd_apple")
                                      for i in ("tm_gpu", "tm_gpu_warp")]
    run = json.loads(host[-1].read_text())
    assert run["gpu"]["name"] == "Simulated GPU" and run["cpu_affinity"] == [0] and run["warmup"]["wall_s"] > 0
    assert len(run["units"]) >= 2 and all(u["wall_s"] > 0 for u in run["units"])

    # auto: each experiment's threads per clause chosen from the tests and benchmark above, and so its build (one
    # thread: tm_gpu, the paper's design; a warp: tm_gpu_warp), as the records ran
    paper_manifest = json.loads(next((tree / "benchmarks/results/campaign").glob("paper_*.json")).read_text())
    chosen = paper_manifest["threads_per_clause"]
    assert set(chosen) == {"wsd_apple", "bbc_sport"} and all(c["reason"] for c in chosen.values())
    assert chosen["wsd_apple"]["reason"].startswith("benchmarked with this code")
    built = {name: plan.gpu_impl(c["threads"]) for name, c in chosen.items()}
    apple_rec = tree / f"results/smoke/wsd_apple/{built['wsd_apple']}/n20_T50_s5_e2/seed0.json"
    rec = json.loads(apple_rec.read_text())
    assert rec["status"] == "complete" and rec["impl"] == built["wsd_apple"] and len(rec["epochs"]) == 2
    assert rec["hyperparameters"].get("threads_per_clause", 1) == chosen["wsd_apple"]["threads"]
    gpu = rec["provenance"]["gpu"]
    assert gpu["name"] == "Simulated GPU" and gpu["driver"] and gpu["cuda"]
    assert len(rec["provenance"]["git_commit"] or "") == 40
    assert (tree / f"results/smoke/bbc_sport/mlp_novelty/{built['bbc_sport']}.n20_T100_s15_e2/seed0.json").is_file()
    # the tally ablation's GPU runs: WSD apple in both example orders, with one thread and with a warp per clause
    # (Bike Sharing is not staged)
    ablation = tree / "results/smoke/ablation/wsd_apple/tm_gpu/n20_T50_s5_e2"
    assert sorted(p.name for p in ablation.iterdir()) == ["async_linear", "async_linear_staggered",
                                                          "async_linear_staggered_warp", "async_linear_warp"]
    staggered = json.loads((ablation / "async_linear_staggered/seed0.json").read_text())
    assert staggered["hyperparameters"]["order"] == "staggered" and staggered["impl"] == "tm_gpu"
    assert "order" not in json.loads((ablation / "async_linear/seed0.json").read_text())["hyperparameters"]
    assert "threads_per_clause" not in staggered["hyperparameters"]
    warp = json.loads((ablation / "async_linear_staggered_warp/seed0.json").read_text())
    assert warp["hyperparameters"]["threads_per_clause"] == 32 and warp["hyperparameters"]["order"] == "staggered"
    sweep_manifest = json.loads(next((tree / "benchmarks/results/campaign").glob("sweeps_*.json")).read_text())
    sweep_build = plan.gpu_impl(sweep_manifest["threads_per_clause"]["bbc_sport"]["threads"])
    for clauses in (10, 20):
        assert (tree / f"results/smoke/bbc_sport/{sweep_build}/n{clauses}_T100_s15_e2/seed0.json").is_file()

    from asynctm.artifacts.records import load_records

    records = load_records(tree / "results" / "smoke")
    assert set(records[records["impl"].isin(plan.GPU_IMPLS)]["experiment"]) == {"wsd_apple", "bbc_sport"}

    bench = json.loads(next((tree / "benchmarks/results").glob("gpu_simulated_gpu_*.json")).read_text())
    apple = bench["settings"][0]
    assert apple["setting"] == "wsd_apple" and apple["results"]["tm_gpu"]["median_epoch_s"] > 0
    assert apple["results"]["tm_gpu"]["literals_per_clause"] > 0
    assert apple["results"]["tm_gpu_warp"]["median_epoch_s"] > 0 and "warp_speedup_vs_one_thread" in apple["comparison"]
    assert "PyTsetlinMachineCUDA" in apple["skipped"]["pytm_cuda"]  # not installed here: reported, not fatal
    assert apple["results"]["tm_cpu"]["timed_epochs"] == 1 and "tm_cpu" in apple["comparison"]["tm_gpu_within_spread"]
    # unpack pooled the benchmark's seeds of this GPU and code: 0 from the bench step, 1 and 2 from goal_seeds
    goals = json.loads(next((tree / "benchmarks/results").glob("goals_simulated_gpu_*.json")).read_text())
    assert goals["settings"][0]["setting"] == "wsd_apple" and goals["settings"][0]["seeds"] == [0, 1, 2]
    assert goals["settings"][0]["results"]["tm_gpu"]["seeds"] == [0, 1, 2] and len(goals["records"]) == 3
    junit = next((tree / "benchmarks/results/campaign").glob("gpu_tests_*.xml")).read_text()
    # two tests shared out to two pytest processes, then the device-wide one alone; one merged report
    assert junit.count("<testcase") == 3 and '<testsuites tests="3" failures="0" errors="0"' in junit
    tests_manifest = json.loads(next((tree / "benchmarks/results/campaign").glob("gpu_tests_*.json")).read_text())
    assert tests_manifest["pytest"]["returncode"] == 0
    assert tests_manifest["pytest"]["summary"].startswith("3 passed in ") and "then 1 alone" in tests_manifest[
        "pytest"]["summary"]

    # Called again after unpack, without --threads-per-clause: each experiment stays on the build of its recorded
    # seeds, whichever the benchmark chose, so every run is recorded already and nothing is trained; the earlier
    # call's work folder is kept (the same staged campaign), and the tarball holds only this call's manifest.
    r = step("paper", call_out=(out := tmp_path / "out_call2"))
    assert "kept the work folder of an earlier call" in r.stdout
    manifests = sorted((tmp_path / "work" / "paper" / "benchmarks/results/campaign").glob("paper_*.json"))
    again = json.loads(manifests[-1].read_text())
    assert {n: c["threads"] for n, c in again["threads_per_clause"].items()} == {
        n: c["threads"] for n, c in chosen.items()}
    assert again["done"] == [] and again["stopped"] is None
    with tarfile.open(out / "paper.tar.gz") as tar:
        assert [m.name for m in tar.getmembers()] == [manifests[-1].relative_to(tmp_path / "work" / "paper").as_posix()]
    # No budget left: the step stops before training and still packs its manifest.
    apple_rec.unlink()
    shutil.rmtree(tmp_path / "work" / "paper")  # a bare machine
    step("paper", budget="0.5", call_out=(out := tmp_path / "out_call3"))
    with tarfile.open(out / "paper.tar.gz") as tar:
        manifest = json.loads(tar.extractfile(next(m for m in tar.getmembers() if "/campaign/" in m.name)).read())
    assert manifest["done"] == [] and "budget" in manifest["stopped"]


def test_remaining_counts_the_missing_gpu_runs_and_estimates_what_it_can(tmp_path, capsys):
    from asynctm.campaign.__main__ import main
    from asynctm.campaign.choice import ESTIMATE_MARGIN, RUN_OVERHEAD_S
    from asynctm.campaign.remaining import remaining, render

    config = load_config([])
    tree = tmp_path / "tree"
    # one SemEval sweep point recorded (eval 0.1 s per epoch) and a benchmark of SemEval's main setting
    point = tree / "results/semeval/tm_gpu/n20_T15_s3.9_e5/seed0.json"
    point.parent.mkdir(parents=True)
    point.write_text(json.dumps({"epochs": [{}] * 5, "timing": {"train_s_total": 50.0, "eval_s_total": 0.5,
                                                                  "setup": {"compile_s": 1.0}}}))
    bench = _bench_setting("semeval", "classification", (15.0, 87.7), (0.5, 87.0))
    for row in bench["results"]["tm_gpu"]["per_seed"]:
        row.pop("eval_s")  # an older benchmark: no evaluation time, so the nearest record's
    (tree / "benchmarks/results").mkdir(parents=True)
    (tree / "benchmarks/results/gpu_nvidia_h200_aaaaaaa.json").write_text(json.dumps(
        {"gpu": {"name": "NVIDIA H200"}, "date_utc": "2027-01-01", "settings": [bench]}))
    report = remaining(config, tree=tree)
    assert report["gpu"] == "NVIDIA H200" and report["threads"] == 1
    sweeps = {r["experiment"]: r for r in report["steps"]["sweeps"]}
    assert sweeps["semeval"]["missing"] == len(config["sweeps"]["semeval"]["clauses"]) - 1
    assert sweeps["semeval"]["estimated"] == 1  # the main setting's clauses (40), from the benchmark
    paper = {r["experiment"]: r for r in report["steps"]["paper"]}
    assert paper["semeval"]["estimated"] == 5 and paper["imdb"]["unknown"] == 5 and paper["wsd_apple"]["missing"] == 5
    one = ESTIMATE_MARGIN * (RUN_OVERHEAD_S + 2.0 + 30.0 + 100 * 0.1 + 99 * 15.0)
    assert paper["semeval"]["seconds"] == pytest.approx(5 * one)
    assert paper["semeval"]["too_long"] == 5 and one > 690  # longer than a lease can give one run
    assert "the first call runs them" in report["next_lease"]  # no GPU tests of this code in that tree
    ablation = {r["experiment"]: r for r in report["steps"]["ablation"]}  # no record, no benchmark of these
    assert ablation["bike_sharing"]["missing"] == 30 and ablation["bike_sharing"]["unknown"] == 30  # 5 seeds x 6
    assert ablation["bike_sharing"]["first"].endswith("/tm_gpu/n1280_T1280_s1.5_e100/async_linear_warp/seed0.json")
    assert remaining(config, tree=tree, threads=32)["steps"]["paper"][0]["estimated"] == 0  # no warp record
    with pytest.raises(plan.PlanError, match="no GPU build runs 8 threads per clause"):
        remaining(config, tree=tree, threads=8)
    assert main(["remaining", "--gpu", "NVIDIA H100 80GB HBM3"]) == 0  # this checkout, another GPU: no benchmark
    out = capsys.readouterr().out
    # auto, the command's default; a table row per experiment with runs missing (which ones: the checkout's records)
    assert re.search(r"^\| \w+ \| \d+ \| \d+ \|", out, re.M) and "as the steps would choose them" in out
    # auto: each step's experiments at the threads their step would choose: here the sweep's recorded points'
    # (one thread), then most of them (a warp); no evidence of this code for the rest: the config's
    report = remaining(config, tree=tree, threads="auto")
    assert report["threads"] == "auto" and report["chosen"]["sweeps"]["semeval"] == 1
    assert set(report["chosen"]) == {"sweeps", "paper"} and report["chosen"]["paper"]["semeval"] == 1
    for clauses in (80, 160):
        warp = tree / f"results/semeval/tm_gpu_warp/n{clauses}_T15_s3.9_e5/seed0.json"
        warp.parent.mkdir(parents=True)
        warp.write_text(json.dumps({"hyperparameters": {"threads_per_clause": 32}, "epochs": [{}] * 5,
                                    "timing": {"train_s_total": 1.0, "eval_s_total": 0.5, "setup": {}}}))
    report = remaining(config, tree=tree, threads="auto")
    assert report["chosen"]["sweeps"]["semeval"] == 32 and report["chosen"]["paper"]["semeval"] == 1
    sweeps = {r["experiment"]: r for r in report["steps"]["sweeps"]}
    # the warp build's points: its two recorded ones are done; tm_gpu's point at 20 clauses is another build's
    assert sweeps["semeval"]["missing"] == len(config["sweeps"]["semeval"]["clauses"]) - 2
    assert render(report).startswith("Missing GPU runs of the campaign's training steps, threads per clause as "
                                     "the steps would choose them (sweeps: semeval 32,")
    assert "(tm_gpu_warp)" in render(remaining(config, tree=tree, threads=32))


def test_remaining_estimates_with_the_gpu_benchmarked_last(tmp_path):
    from asynctm.campaign.remaining import newest_bench_gpu

    results = tmp_path / "benchmarks/results"
    (results / "campaign").mkdir(parents=True)

    def bench(name, gpu, **fields):
        (results / f"{name}.json").write_text(json.dumps({"name": name, "gpu": {"name": gpu}, "date_utc": "2026-11-26",
                                                          "settings": [], **fields}))

    # two records of one day without a time: the name decides, whatever came first
    bench("gpu_nvidia_h200_6fbaac5", "NVIDIA H200")
    bench("gpu_nvidia_h100_80gb_hbm3_aaf9477", "NVIDIA H100 80GB HBM3")
    assert newest_bench_gpu(tmp_path) == "NVIDIA H200"
    # the bench steps' manifests say when each was made
    for stamp, name in (("20261126T002703Z", "gpu_nvidia_h200_6fbaac5"),
                        ("20261126T114258Z", "gpu_nvidia_h100_80gb_hbm3_aaf9477")):
        (results / "campaign" / f"bench_x_{stamp}.json").write_text(json.dumps(
            {"started_utc": stamp, "done": [f"benchmarks/results/{name}.json"]}))
    assert newest_bench_gpu(tmp_path) == "NVIDIA H100 80GB HBM3"
    # a record's own time comes first
    bench("gpu_nvidia_h200_1234567", "NVIDIA H200", started_utc="2026-11-26T12:00:00Z")
    assert newest_bench_gpu(tmp_path) == "NVIDIA H200"


def test_the_warp_build_is_benchmarked_only_where_the_gpu_tests_did_not_fail(tmp_path, capsys):
    from asynctm.campaign import bench

    step = _choice_step(tmp_path)
    calls = []
    step.child = lambda cmd, log_path=None: calls.append(cmd) or 0
    steps_mod.step_bench(step)  # no GPU tests of this commit here: every build
    _lease_evidence(tmp_path, [], tests_rc=1)
    steps_mod.step_bench(step)  # they failed: a warp build that hangs would take the whole budget
    assert "--without" not in calls[0]
    assert calls[1][calls[1].index("--without") + 1].startswith("tm_gpu_warp=the GPU tests of this code")
    step.close()
    with pytest.raises(SystemExit):
        bench.main(["--campaign-dir", str(tmp_path), "--out-dir", str(tmp_path), "--name", "x", "--without", "tm_gpu"])
    assert "our one-thread build is the benchmark's reference" in capsys.readouterr().err


def test_gpu_test_processes_reports_are_merged(tmp_path):
    a, b = tmp_path / "a.xml", tmp_path / "b.xml"
    a.write_text('<testsuites><testsuite name="pytest" tests="3" failures="1" errors="0" skipped="1">'
                 '<testcase name="x"/><testcase name="y"><failure/></testcase><testcase name="z"/></testsuite>'
                 '</testsuites>')
    b.write_text('<testsuite name="pytest" tests="2" failures="0" errors="1" skipped="0"><testcase name="u"/>'
                 '<testcase name="v"><error/></testcase></testsuite>')
    steps_mod.merge_junit([a, b, tmp_path / "killed-before-writing.xml"], tmp_path / "all.xml")
    merged = (tmp_path / "all.xml").read_text()
    assert '<testsuites tests="5" failures="1" errors="1" skipped="1">' in merged and merged.count("<testcase") == 5
    text = ("==== pytest process part0 ====\n.F.s\nFAILED tests/t.py::y - assert 1 passed\n"
            "==== 1 failed, 2 passed, 1 skipped in 0.50s ====\n==== pytest process part1 ====\n.E\n"
            "1 passed, 1 error in 0.20s\n")
    assert steps_mod._pytest_counts(text) == {"failed": 1, "passed": 3, "skipped": 1, "errors": 1}


def _junit_case(name, outcome="", learning=False, scores=None):
    props = ('<property name="learning" value="1"/>' if learning else "") + (
        f'<property name="scores" value="{html.escape(json.dumps(scores))}"/>' if scores else "")
    props = f"<properties>{props}</properties>" if props else ""
    body = {"": "",
            "assertion": '<failure message="AssertionError: [0.9605, 0.824, 0.869]&#10;assert 0.869 &gt;= 0.9"/>',
            "failure": '<failure message="TypeError: fit() got an unexpected keyword"/>', "error": "<error/>"}[outcome]
    return f'<testcase classname="tests.test_estimators" name="{name}">{props}{body}</testcase>'


def test_a_missed_learning_bar_alone_still_vouches_for_the_gpu_builds(tmp_path, monkeypatch, capsys):
    from asynctm.campaign.choice import failed_gpu_tests, gpu_tests_verdict, tests_sound

    step = _choice_step(tmp_path)
    step.env = {"PYCUDA_CACHE_DIR": str(tmp_path / "cache")}
    monkeypatch.setattr(steps_mod, "collect_gpu_tests", lambda step, select=None: (["t.py::a", "t.py::b"], []))
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    suites = {0: _junit_case("test_noisy_xor_learns[cuda]", "assertion", learning=True,
                             scores={"ours": [0.9605, 0.824, 0.869]}) + _junit_case("test_a"),
              1: _junit_case("test_exact[cuda]")}

    def children(jobs):
        for i, (cmd, log, _env) in enumerate(jobs):
            log.write_text("1 failed, 1 passed in 0.1s\n" if i == 0 else "1 passed in 0.1s\n")
            xml = Path(next(a for a in cmd if a.startswith("--junitxml=")).split("=", 1)[1])
            xml.write_text(f'<testsuite name="pytest" tests="2" failures="{1 - i}">{suites[i]}</testsuite>')
        return [1, 0]

    step.children = children
    steps_mod.step_gpu_tests(step)
    result = step.manifest["pytest"]
    assert result["returncode"] == 1 and tests_sound(result)
    assert result["failed"] == [{"test": "tests.test_estimators::test_noisy_xor_learns[cuda]", "kind": "assertion",
                                 "learning": True, "message": "AssertionError: [0.9605, 0.824, 0.869]"}]
    assert result["scores"] == {"tests.test_estimators::test_noisy_xor_learns[cuda]": {"ours": [0.9605, 0.824, 0.869]}}
    assert "test_noisy_xor_learns[cuda]: ours 0.884 (0.961, 0.824, 0.869)" in capsys.readouterr().out
    step.close()
    man = tmp_path / "work/gpu_tests/benchmarks/results/campaign/gpu_tests_nvidia_h200_20270101T000000Z.json"
    man.parent.mkdir(parents=True)
    man.write_text(json.dumps({"source": {"commit": "c" * 40}, "pytest": result}))
    bench = _choice_step(tmp_path)
    assert gpu_tests_verdict(bench) is True
    assert failed_gpu_tests(bench, sound=True) == ["tests.test_estimators::test_noisy_xor_learns[cuda]"]
    assert failed_gpu_tests(bench, sound=False) == []
    calls = []
    bench.child = lambda cmd, log_path=None: calls.append(cmd) or 0
    steps_mod.step_bench(bench)
    assert "--without" not in calls[0]  # both builds are benchmarked
    bench.close()
    # Anything else that failed, broke or crashed still counts against them.
    learning_fail = {"test": "t::a", "kind": "assertion", "learning": True}
    for result in ({"returncode": 1,
                    "failed": [learning_fail, {"test": "t::b", "kind": "assertion", "learning": False}]},
                   {"returncode": 1, "failed": [{**learning_fail, "kind": "error"}]},
                   {"returncode": 1, "failed": [{**learning_fail, "kind": "failure"}]},  # an exception, no bar
                   {"returncode": -11, "failed": [learning_fail]}, {"returncode": 1, "failed": []},
                   {"returncode": 1}, {"returncode": None, "failed": [learning_fail]}):
        assert not tests_sound(result), result


def test_learning_bars_say_so_in_the_junit_xml(tmp_path, repo_root):
    xml = tmp_path / "t.xml"
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={xml}",
                        "tests/unit/test_estimators.py::test_noisy_xor_learns_without_negated_literals_and_boost",
                        "tests/unit/test_estimators.py::test_noisy_xor_learns[cpu]",
                        "tests/unit/test_estimators.py::test_regressor_accepts_odd_clause_counts"],
                       cwd=repo_root, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-2000:]
    import xml.etree.ElementTree as ET

    learning = {c.get("name"): any(p.get("name") == "learning" for p in c.iter("property"))
                for c in ET.parse(xml).getroot().iter("testcase")}
    assert learning == {"test_noisy_xor_learns_without_negated_literals_and_boost": True,
                        "test_noisy_xor_learns[cpu]": True, "test_regressor_accepts_odd_clause_counts": False}
    # The scores a learning test records come back whether it passed or not.
    scores = steps_mod.junit_scores(xml)
    assert list(scores) == ["tests.unit.test_estimators::test_noisy_xor_learns[cpu]"]
    ours = scores["tests.unit.test_estimators::test_noisy_xor_learns[cpu]"]["ours"]
    assert len(ours) == 3 and all(0.5 < x <= 1.0 for x in ours)
    xml.write_text(xml.read_text().replace("</testcase>", '<failure message="AssertionError: 0.5"/></testcase>', 1))
    assert [(f["learning"], f["kind"]) for f in steps_mod.junit_failures(xml)] == [(True, "assertion")]


def test_a_crashed_gpu_test_process_fails_the_step(tmp_path, monkeypatch):
    step = _choice_step(tmp_path)
    step.env = {"PYCUDA_CACHE_DIR": str(tmp_path / "cache")}
    monkeypatch.setattr(steps_mod, "collect_gpu_tests", lambda step, select=None: (["t.py::a", "t.py::b"], []))
    monkeypatch.setattr(os, "cpu_count", lambda: 16)  # two tests: two processes, whatever this machine has

    def children(jobs):
        for (_cmd, log, env), text in zip(jobs, ("1 passed in 0.1s\n", "Segmentation fault\n")):
            log.write_text(text)
            assert env["PYCUDA_CACHE_DIR"].startswith(str(tmp_path / "cache" / "tests-"))
        return [1, -11]  # a failed test beside the crash: the crash is what the step reports

    step.children = children
    steps_mod.step_gpu_tests(step)
    assert step.manifest["pytest"]["returncode"] == -11
    assert "1 passed" in step.manifest["pytest"]["summary"] and "part1 exited with -11" in step.manifest["pytest"][
        "summary"]
    step.close()


def _paper_step(tmp_path, budget=100.0, later=0.0, campaign=None, out=None):
    camp = tmp_path / "c"
    camp.mkdir(exist_ok=True)
    if campaign is not None or not (camp / "campaign.json").exists():
        (camp / "campaign.json").write_text(json.dumps(campaign or {"config": load_config([]), "source": {}}))
    step = steps_mod.Step("paper", camp, out or tmp_path / "out", budget, tmp_path / "work", tree=tmp_path / "tree",
                          later_s=later)
    step.gpu = {"name": "NVIDIA H200"}
    return step


def test_a_later_call_keeps_the_work_folder_of_the_same_campaign_and_packs_only_its_own_files(tmp_path):
    step = _paper_step(tmp_path)
    done = tmp_path / "work/results/e/tm_gpu/p/seed0.json"
    done.parent.mkdir(parents=True)
    done.write_text("{}")
    step.close()
    again = _paper_step(tmp_path)
    assert done.is_file() and again.exists("results/e/tm_gpu/p/seed0.json")  # an earlier call's record: done
    (done.parent / "seed1.json").write_text("{}")
    with tarfile.open(again.pack()) as tar:
        names = tar.getnames()
    assert "results/e/tm_gpu/p/seed1.json" in names and "results/e/tm_gpu/p/seed0.json" not in names
    again.close()
    # another staged campaign (a new commit staged): the folder starts empty
    other = _paper_step(tmp_path, campaign={"config": load_config([]), "source": {"commit": "f" * 40}})
    assert not done.exists() and not other.exists("results/e/tm_gpu/p/seed0.json")
    other.close()


def test_a_second_turn_of_a_step_in_one_call_brings_back_both_turns_files(tmp_path):
    """A call may run a step twice (the ablation ends each training call); the second turn's tarball replaces the
    first's in the call's folder, so it carries the first turn's files too, and each turn's own manifest."""
    first = _paper_step(tmp_path)
    run0 = tmp_path / "work/results/e/tm_gpu/p/seed0.json"
    run0.parent.mkdir(parents=True)
    run0.write_text("{}")
    first.pack()
    first.close()
    second = _paper_step(tmp_path)  # the same call: its folder (out) holds the first turn's tarball
    (run0.parent / "seed1.json").write_text("{}")
    second.stamp = first.stamp  # both turns started in the same second
    with tarfile.open(second.pack()) as tar:
        names = tar.getnames()
    second.close()
    assert {"results/e/tm_gpu/p/seed0.json", "results/e/tm_gpu/p/seed1.json"} <= set(names)
    manifests = [n for n in names if n.startswith("benchmarks/results/campaign/paper_")]
    assert len(manifests) == 2, names
    # a later call starts with an empty folder: only its own files travel
    third = _paper_step(tmp_path, out=tmp_path / "out2")
    (run0.parent / "seed2.json").write_text("{}")
    with tarfile.open(third.pack()) as tar:
        names = tar.getnames()
    third.close()
    assert [n for n in names if n.startswith("results/")] == ["results/e/tm_gpu/p/seed2.json"]


def _fake_run(rel_out: Path, epochs_done: int, n_epochs: int, record: bool):
    """What a tm run leaves: a checkpoint after ``epochs_done`` epochs of 1.5 s (paused), or its record."""
    rel_out.parent.mkdir(parents=True, exist_ok=True)
    with open(rel_out.with_suffix(".log"), "a") as fh:
        fh.write("epoch line\n")
    ckpt = rel_out.with_name(rel_out.name.removesuffix(".json") + ".checkpoint.npz")
    if record:
        ckpt.unlink(missing_ok=True)
        rel_out.write_text(json.dumps({"timing": {"train_s_mean": 1.0}, "final": {"accuracy": 90.0}}))
        return 0
    state = {"key": "k", "cpu_model": "c", "resume": [],
             "epochs": [{"epoch": i + 1, "train_s": 1.0, "eval_s": 0.5} for i in range(epochs_done)]}
    np.savez(ckpt, run_state=np.array(json.dumps(state)))
    return 75


def test_a_run_longer_than_the_call_pauses_and_the_next_call_on_the_machine_resumes_it(tmp_path, monkeypatch):
    tree = tmp_path / "tree"
    sweep = tree / "results/semeval/tm_gpu/n40_T15_s3.9_e5/seed0.json"  # 3.5 s per epoch: 350 s for 100 epochs
    sweep.parent.mkdir(parents=True)
    sweep.write_text(json.dumps({"epochs": [{}] * 2, "timing": {"train_s_total": 6.0, "eval_s_total": 1.0,
                                                                  "setup": {}}}))
    run = [("semeval", "n40_T15_s3.9_e100", 0)]
    rel = "results/semeval/tm_gpu/n40_T15_s3.9_e100/seed0.json"
    # Without a next call, the run does not fit.
    step = _paper_step(tmp_path, budget=100)
    steps_mod._tm_runs(step, run)
    assert "would not fit: about 350 s needed, 100 s left" in step.manifest["skipped"][0]["reason"]
    step.close()
    # With 300 s more in the next call, it starts, with --stop-at before the step's end, and pauses.
    seen = []

    def child(cmd, log_path=None):
        seen.append(cmd)
        out = Path(cmd[cmd.index("--out") + 1])
        return _fake_run(out, 20, 100, record=len(seen) > 1)

    step = _paper_step(tmp_path, budget=100, later=300)
    monkeypatch.setattr(step, "child", child)
    steps_mod._tm_runs(step, run)
    stop_at = float(seen[0][seen[0].index("--stop-at") + 1])
    assert abs(stop_at - (step.deadline - steps_mod.STOP_MARGIN_S)) <= 1
    paused = step.manifest["paused"][0]
    assert (paused["run"], paused["epochs_done"], paused["epochs"], paused["s_per_epoch"]) == (rel, 20, 100, 1.5)
    with tarfile.open(step.pack()) as tar:  # neither the checkpoint nor the paused run's log travel
        assert not [n for n in tar.getnames() if "seed0" in n]
    step.close()
    # The next call on the same machine resumes it: 80 epochs of 1.5 s left.
    step = _paper_step(tmp_path, budget=300)
    assert steps_mod.resumable(step, rel)["epochs"][-1]["epoch"] == 20
    monkeypatch.setattr(step, "child", child)
    steps_mod._tm_runs(step, run)
    assert step.manifest["done"] == [rel] and len(seen) == 2
    with tarfile.open(step.pack()) as tar:
        names = tar.getnames()
    assert rel in names and rel.replace(".json", ".log") in names and not any("checkpoint" in n for n in names)
    step.close()
    # A later lease (a bare machine) estimates the whole run from the pause: 100 epochs of 1.5 s.
    shutil.copytree(tmp_path / "work/benchmarks", tree / "benchmarks", dirs_exist_ok=True)
    sweep.unlink()
    shutil.rmtree(tmp_path / "work")
    step = _paper_step(tmp_path, budget=300)
    from asynctm.campaign.choice import ESTIMATE_MARGIN, RUN_OVERHEAD_S

    assert steps_mod.estimate_s(step, "semeval", "n40_T15_s3.9_e100") == pytest.approx(
        ESTIMATE_MARGIN * (RUN_OVERHEAD_S + 150))
    step.close()


def test_a_training_step_without_threads_per_clause_keeps_the_build_of_the_recorded_seeds(tmp_path, monkeypatch):
    """Called without --threads-per-clause (again after unpack, say), the paper step keeps an experiment on the
    build its recorded seeds are in: a seed recorded there is not trained again, the missing ones join it; an
    experiment with nothing recorded gets the default (one thread); a number names every experiment's build."""
    step = _paper_step(tmp_path, budget=300)
    apple, sem = (plan.main_params(step.config, n, "tm_gpu") for n in ("wsd_apple", "semeval"))
    recorded = tmp_path / "tree" / steps_mod.record_path(step.config, ("wsd_apple", apple, 0), "tm_gpu_warp")
    recorded.parent.mkdir(parents=True)
    recorded.write_text("{}")
    trained = []

    def child(cmd, log_path=None):
        out = Path(cmd[cmd.index("--out") + 1])
        trained.append(out.relative_to(tmp_path / "work").as_posix())
        return _fake_run(out, 2, 2, record=True)

    monkeypatch.setattr(step, "child", child)
    runs = [("wsd_apple", apple, 0), ("wsd_apple", apple, 1), ("semeval", sem, 0)]
    steps_mod._tm_runs(step, runs)
    assert trained == [steps_mod.record_path(step.config, ("wsd_apple", apple, 1), "tm_gpu_warp"),
                       steps_mod.record_path(step.config, ("semeval", sem, 0), "tm_gpu")]
    chosen = step.manifest["threads_per_clause"]
    assert chosen["wsd_apple"] == {"threads": 32, "reason": "as its recorded seeds of the main setting"}
    assert chosen["semeval"]["threads"] == 1 and "the default" in chosen["semeval"]["reason"]
    step.close()
    # the next call on this machine: everything is recorded, in the tree or the work folder, for its build
    again = _paper_step(tmp_path, budget=300)
    monkeypatch.setattr(again, "child", child)
    steps_mod._tm_runs(again, runs)
    assert len(trained) == 2 and again.manifest["done"] == []
    again.close()
    # --threads-per-clause 1 names the build: tm_gpu's seeds of WSD apple are trained, the warp's kept apart
    named = _paper_step(tmp_path, budget=300)
    named.default_threads, named.named_threads = 1, True
    monkeypatch.setattr(named, "child", child)
    steps_mod._tm_runs(named, runs[:2])
    assert trained[2:] == [steps_mod.record_path(named.config, ("wsd_apple", apple, s), "tm_gpu") for s in (0, 1)]
    named.close()


def test_an_ablation_variant_sets_its_runs_threads_per_clause(tmp_path, monkeypatch):
    """A ``_warp`` variant trains with a warp per clause and the others with one thread, whatever the
    experiment's threads in the step; its estimate, pause entry and kill record are of those threads."""
    step = _paper_step(tmp_path, budget=300)
    step.threads = {"bike_sharing": 1}  # the experiment's threads in this step (tm_gpu): not the variants'
    seen = []

    def child(cmd, log_path=None):
        seen.append(json.loads(cmd[cmd.index("--settings") + 1])["hyperparameters"])
        return _fake_run(Path(cmd[cmd.index("--out") + 1]), 2, 100, record=False)

    monkeypatch.setattr(step, "child", child)
    params = "n1280_T1280_s1.5_e100"
    steps_mod._tm_runs(step, [("bike_sharing", params, 0, "sync_linear_warp"),
                              ("bike_sharing", params, 0, "async_linear")])
    assert [h.get("threads_per_clause") for h in seen] == [32, None]
    assert seen[0]["tally"] == "sync"
    assert [e["threads_per_clause"] for e in step.manifest["paused"]] == [32, 1]
    warp_rel = "results/ablation/bike_sharing/tm_gpu/n1280_T1280_s1.5_e100/sync_linear_warp/seed0.json"
    assert steps_mod._rel_threads(step, warp_rel) == 32
    # a paper run's record: its implementation's threads, whatever the step's
    step.threads = {"bike_sharing": 32}
    assert steps_mod._rel_threads(step, "results/bike_sharing/tm_gpu/n1280_T1280_s1.5_e100/seed0.json") == 1
    assert steps_mod._rel_threads(step, "results/bike_sharing/tm_gpu_warp/n1280_T1280_s1.5_e100/seed0.json") == 32
    # a record of the setting with a warp (tm_gpu_warp's) estimates the warp variant's runs, and only theirs
    rec = tmp_path / "tree/results/bike_sharing/tm_gpu_warp/n1280_T1280_s1.5_e5/seed0.json"
    rec.parent.mkdir(parents=True)
    rec.write_text(json.dumps({"hyperparameters": {"threads_per_clause": 32}, "epochs": [{}] * 5,
                               "timing": {"train_s_total": 0.1, "eval_s_total": 0.05, "setup": {"compile_s": 1.0}}}))
    assert steps_mod.estimate_s(step, "bike_sharing", params, 32) == pytest.approx(0.03 * 100 + 1.0)
    assert steps_mod.estimate_s(step, "bike_sharing", params, 1) is None
    step.close()


def test_evidence_of_another_commit_with_the_same_kernels_and_backends_counts(tmp_path):
    from asynctm.campaign.choice import choose_threads
    from asynctm.provenance import code_digests

    step = _choice_step(tmp_path)
    settings = [_bench_setting("semeval", "classification", (15.7, 87.7), (0.6, 87.0), (55.0, 88.8))]
    _lease_evidence(tmp_path, settings, commit="d" * 40)
    assert "no GPU tests or benchmark" in choose_threads(step, ["semeval"], False)["semeval"]["reason"]
    for path in (tmp_path / "work").rglob("*.json"):  # the same code, file for file
        path.write_text(json.dumps({**json.loads(path.read_text()), "code": code_digests()}))
    assert choose_threads(step, ["semeval"], False)["semeval"]["threads"] == 32
    for path in (tmp_path / "work").rglob("*.json"):  # other kernels
        rec = json.loads(path.read_text())
        path.write_text(json.dumps({**rec, "code": {**rec["code"], "kernels/tm.cu": "0" * 64}}))
    assert "no GPU tests or benchmark" in choose_threads(step, ["semeval"], False)["semeval"]["reason"]
    step.close()


def test_a_lease_of_tested_and_benchmarked_code_trains_in_both_calls(tmp_path):
    from asynctm.campaign import TRAINING_CALLS
    from asynctm.campaign.__main__ import commands
    from asynctm.provenance import code_digests

    def calls(tree):
        lines = []
        commands(say=lines.append, tree=tree)
        return [ln for ln in lines if "asynctm.campaign step" in ln and not ln.startswith("#")], lines

    first, _ = calls(tmp_path)
    assert "step gpu_tests" in first[0] and "step bench" in first[0]
    man = tmp_path / "benchmarks/results/campaign/gpu_tests_nvidia_h100_20270101T000000Z.json"
    man.parent.mkdir(parents=True)
    man.write_text(json.dumps({"code": code_digests(), "pytest": {"returncode": 0}}))
    bench = tmp_path / "benchmarks/results/gpu_nvidia_h100_abcdef0.json"
    bench.write_text(json.dumps({"code": code_digests(), "settings": [
        _bench_setting("semeval", "classification", (15.7, 87.7), (0.6, 87.0))]}))
    training, lines = calls(tmp_path)
    assert not any("gpu_tests" in c or "step bench" in c for c in training)
    assert "passed the GPU tests and was benchmarked" in "\n".join(lines)
    # the paper step opens the second call too: in the first it may start a run that continues there
    assert "step paper --until $END --later 270 --threads-per-clause auto" in training[0]
    assert "--later" not in training[1] and "step sweeps --budget 150" in training[0]
    assert "step ablation --budget 45" in training[0]  # the ablation's turn even where no extra call comes
    assert sum(seconds for seconds, _ in TRAINING_CALLS) <= 900 - 120
    from asynctm.campaign import DEVICE_CALLS

    # each step returns its tarball and its log: at most 8 files come back from one call
    assert all(2 * len({name for name, _ in steps}) <= 8 for _, steps in DEVICE_CALLS + TRAINING_CALLS)
    # what the steps before it leave goes to the ablation, in each training call
    assert all(steps[-1] == ("ablation", None) for _, steps in TRAINING_CALLS)
    man.write_text(json.dumps({"code": code_digests(), "pytest": {"returncode": 1}}))  # the tests failed
    again, lines = calls(tmp_path)
    assert "step gpu_tests" in again[0] and "see benchmarks/results/campaign/gpu_tests_*.txt" in "\n".join(lines)
    broken = {"test": "tests.test_kernel_exactness::test_x[cuda]", "kind": "assertion", "learning": False}
    man.write_text(json.dumps({"code": code_digests(), "pytest": {"returncode": 1, "failed": [broken]}}))
    again, lines = calls(tmp_path)
    assert "did not pass: tests.test_kernel_exactness::test_x[cuda])" in "\n".join(lines)
    man.write_text(json.dumps({"code": code_digests(), "pytest": {"returncode": 1, "failed": [
        {**broken, "learning": True}]}}))  # only a learning bar: the tests vouch for the builds
    training, _ = calls(tmp_path)
    assert not any("gpu_tests" in c for c in training)


def test_the_goal_seeds_budget_holds_one_seed_of_every_goal_setting_on_the_h100():
    """A goal seed starts only where its estimate fits the step's time less its end margin: the budget must hold
    the costliest setting's seed (SemEval), as the H100 benchmarks here estimate it, or that goal never completes."""
    from asynctm.campaign import TRAINING_CALLS
    from asynctm.campaign.bench import GOAL_SETTINGS
    from asynctm.campaign.goals import seed_cost_s

    budget = dict(TRAINING_CALLS[0][1])["goal_seeds"]
    start = 5.0  # the step's install and GPU probe before its first seed
    costs = {s: seed_cost_s([REPO / "benchmarks/results"], s, "NVIDIA H100 80GB HBM3") for s in GOAL_SETTINGS}
    assert all(c is not None for c in costs.values()), costs
    assert max(costs.values()) + steps_mod.BENCH_END_MARGIN_S + start <= budget, costs


def test_the_readme_shows_the_calls_that_commands_prints():
    from asynctm.campaign import DEVICE_CALLS, EXTRA_CALL, TRAINING_CALLS
    from asynctm.campaign.lease import call_commands, device_command

    page = REPO / "docs" / "gpu-and-clusters.md"
    shown = [ln for ln in page.read_text().splitlines() if ln.startswith("export PYTHONPATH=src;")]
    assert shown == [command for calls in (DEVICE_CALLS, TRAINING_CALLS) for _, command in call_commands(calls)] + [
        device_command("N", EXTRA_CALL, None, None)]


def _bench_record(name, settings, code, gpu="NVIDIA H100 80GB HBM3", date="2027-01-01"):
    return {"name": name, "date_utc": date, "gpu": {"name": gpu}, "code": code, "git": {"commit": name[-7:]},
            "settings": settings}


def _seed_rows(seeds, epoch, acc, peer_fails=False):
    """A goal setting's record with per-seed rows of our one-thread build and PyTsetlinMachineCUDA."""
    def rows(e, a):
        return [{"seed": k, "epoch_s": [e], "eval_s": [1.0], "metrics": [{"accuracy": a + k}], "prepare_s": 2.0,
                 "warmup_s": e, "literals_per_clause": {"mean": 10.0, "mean_nonempty": 10.0}} for k in seeds]
    from asynctm.campaign import bench

    results = {"tm_gpu": bench.aggregate(rows(epoch, acc), "accuracy")}
    skipped = {}
    if peer_fails:
        skipped["pytm_cuda"] = "failed in its first epoch"
    else:
        results["pytm_cuda"] = bench.aggregate(rows(4 * epoch, acc), "accuracy")
    return {"setting": "semeval", "task": "classification", "metric": "accuracy",
            "dataset": {"n_train": 6000, "n_test": 2000, "n_features": 100},
            "hyperparameters": {"n_clauses": 40, "T": 15, "s": 3.9}, "epochs": {"warmup": 1, "timed": 1},
            "results": results, "skipped": skipped}


def test_goals_pool_the_seeds_of_one_gpu_and_code(tmp_path):
    from asynctm.campaign import goals
    from asynctm.provenance import code_digests

    code, other = code_digests(), {**code_digests(), "kernels/tm.cu": "0" * 64}
    folder = tmp_path / "benchmarks/results"
    folder.mkdir(parents=True)
    recs = {"gpu_h100_aaaaaaa": _bench_record("gpu_h100_aaaaaaa", [_seed_rows([0], 1.0, 80.0)], code),
            "gpu_h100_bbbbbbb_semeval_seed1": _bench_record("gpu_h100_bbbbbbb_semeval_seed1",
                                                            [_seed_rows([1], 3.0, 80.0)], code, date="2027-02-01"),
            "gpu_h100_ccccccc": _bench_record("gpu_h100_ccccccc", [_seed_rows([2], 2.0, 80.0)], other)}
    for name, rec in recs.items():
        (folder / f"{name}.json").write_text(json.dumps(rec))
    assert goals.seeds_done([folder], "NVIDIA H100 80GB HBM3", code) == {"semeval": {0, 1}}
    assert goals.seeds_done([folder], "NVIDIA H200", code) == {}
    # one more seed: per earlier seed both implementations' preparation, warm-up, epochs and evaluations
    per_seed = [(2 + 1 + 1 + 1) + (2 + 4 + 4 + 1), (2 + 3 + 3 + 1) + (2 + 12 + 12 + 1),
                (2 + 2 + 2 + 1) + (2 + 8 + 8 + 1)]
    assert goals.seed_cost_s([folder], "semeval", "NVIDIA H100 80GB HBM3") == pytest.approx(
        goals.SEED_MARGIN * (goals.SEED_OVERHEAD_S + sorted(per_seed)[1]))
    written = goals.write(tmp_path, say=lambda m: None)
    assert len(written) == 4  # two codes, json and md each
    pooled = next(json.loads(p.read_text()) for p in written
                  if p.suffix == ".json" and len(json.loads(p.read_text())["records"]) == 2)
    sem = pooled["settings"][0]
    assert sem["seeds"] == [0, 1] and sem["results"]["tm_gpu"]["median_epoch_s"] == 2.0
    assert sem["results"]["tm_gpu"]["final_metric"] == 80.5 and sem["comparison"]["speedup_vs_pytm_cuda"] == 4.0
    assert sem["comparison"]["goal"]["seeds"] == 2 and sem["comparison"]["goal"]["met"]
    md = next(p for p in written if p.suffix == ".md" and p.stem == pooled["name"]).read_text()
    assert "with 2 seeds of the 3 it asks for" in md and "pooled from 2 benchmark record(s)" in md
    # PyTsetlinMachineCUDA failed on a seed: measuring it again would not help, the seed counts as done
    (folder / "gpu_h100_ddddddd.json").write_text(json.dumps(_bench_record(
        "gpu_h100_ddddddd", [_seed_rows([2], 1.0, 80.0, peer_fails=True)], code)))
    assert goals.seeds_done([folder], "NVIDIA H100 80GB HBM3", code) == {"semeval": {0, 1, 2}}


def test_goal_seeds_measures_the_missing_seeds_that_fit(tmp_path, monkeypatch):
    from asynctm.provenance import code_digests

    step = _choice_step(tmp_path)
    step.gpu = {"name": "NVIDIA H100 80GB HBM3"}
    folder = tmp_path / "tree/benchmarks/results"
    folder.mkdir(parents=True)
    (folder / "gpu_h100_aaaaaaa.json").write_text(json.dumps(_bench_record(
        "gpu_h100_aaaaaaa", [_seed_rows([0], 1.0, 80.0)], code_digests())))
    seen = []
    monkeypatch.setattr(step, "child", lambda cmd, log_path=None: seen.append(cmd) or 0)
    monkeypatch.setattr(step, "remaining", lambda: 200.0)
    steps_mod.step_goal_seeds(step)
    # SemEval's seeds 1 and 2 (about 76 s each); WSD apple and IMDb have no record to estimate a seed from
    assert [(c[c.index("--settings") + 1], c[c.index("--seeds") + 1]) for c in seen] == [("semeval", "1"),
                                                                                       ("semeval", "2")]
    assert any("imdb seed 0" == s["run"] and "no benchmark record" in s["reason"] for s in step.manifest["skipped"])
    monkeypatch.setattr(step, "remaining", lambda: 60.0)
    seen.clear()
    steps_mod.step_goal_seeds(step)
    assert not seen and any("would not fit" in s["reason"] for s in step.manifest["skipped"])
    step.close()


def test_the_committed_goal_summaries_are_those_of_the_committed_benchmarks():
    from asynctm.campaign import goals

    built = goals.summaries(REPO)
    committed = sorted(p.stem for p in (REPO / "benchmarks/results").glob("goals_*.json"))
    assert committed == sorted(built) and built
    for name, (rec, text) in built.items():
        assert json.loads((REPO / f"benchmarks/results/{name}.json").read_text()) == json.loads(json.dumps(rec))
        assert (REPO / f"benchmarks/results/{name}.md").read_text() == text


def test_every_step_command_of_both_leases_parses(tmp_path):
    """The device calls' step commands, as printed, are valid command lines of the campaign (flags and values)."""
    import shlex

    from asynctm.campaign import DEVICE_CALLS, EXTRA_CALL, TRAINING_CALLS
    from asynctm.campaign.__main__ import parser
    from asynctm.campaign.lease import call_commands, device_command

    parsed = []
    commands = [command for calls in (DEVICE_CALLS, TRAINING_CALLS) for _, command in call_commands(calls, "c" * 40, 0)]
    for command in commands + [device_command("N", EXTRA_CALL, "c" * 40, 0)]:
        for part in command.split(";"):
            words = shlex.split(part.replace("$END", "1900000000"))
            if words[:3] == ["python3", "-m", "asynctm.campaign"]:
                parsed.append(parser().parse_args(words[3:]))
    assert [a.name for a in parsed] == ["gpu_tests", "bench", "sweeps", "paper", "goal_seeds", "ablation", "sweeps",
                                        "paper", "ablation", "paper", "sweeps", "ablation", "ablation", "paper",
                                        "sweeps", "ablation"]
    assert all(a.until == 1900000000 for a in parsed)
    assert [a.later for a in parsed if a.name == "paper"] == [0.0, 270.0, 0.0, 0.0]
    assert {a.threads_per_clause for a in parsed if a.name in ("sweeps", "paper")} == {"auto"}
