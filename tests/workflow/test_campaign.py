"""The GPU host tool (gpu_host, in the repository root): staging, the steps, packing and unpacking.

The dress rehearsal runs every step as the GPU machine would, but on the CPU: the steps' child processes
import a stand-in ``pycuda`` package that is the simulated PyCUDA of tests/gpu/test_cuda_glue.py (device buffers
in host memory, kernels compiled for the CPU), on tiny processed datasets at smoke scale, with the packages
that machine lacks made unimportable.
"""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from asynctm.datasets.base import ProcessedDataset, save_processed
from asynctm.experiments import plan
from gpu_host import stage as stage_mod
from gpu_host import steps as steps_mod
from gpu_host.stage import StageError, load_config, stage
from gpu_host.unpack import unpack
from tests.helpers import REPO, load_benchmark_script

GPU_TESTS = REPO / "tests" / "gpu"  # test_cuda_glue.py's folder

FAKE_PYCUDA = f"""
import sys
sys.path.insert(0, {str(GPU_TESTS)!r})
from test_cuda_glue import make_fake_pycuda
_fake = make_fake_pycuda([])
driver, compiler = _fake.driver, _fake.compiler
driver.Context.get_device = lambda: driver.Device(0)
# what benchmarks/gpu_limits.py asks of the device (the bench step measures the GPU's limits first): a small GPU,
# and events whose launches return when done
import time, types
_ATTRIBUTES = {{"MULTIPROCESSOR_COUNT": 2, "MAX_THREADS_PER_MULTIPROCESSOR": 64, "L2_CACHE_SIZE": 64 << 10}}
driver.device_attribute = types.SimpleNamespace(**{{k: k for k in _ATTRIBUTES}})
driver.Device.get_attribute = lambda self, attr: _ATTRIBUTES[attr]
class _Event:
    def record(self, stream=None):
        self.t = time.perf_counter()
        return self
    def synchronize(self):
        return self
    def time_till(self, other):
        return 1e3 * (other.t - self.t)
driver.Event = _Event
sys.modules[__name__ + ".driver"] = driver
sys.modules[__name__ + ".compiler"] = compiler
"""

# Packages of this project that the GPU machine's python lacks (its list: the device tool's KINDS.md).
ABSENT_ON_THE_GPU_MACHINE = ("fastjsonschema", "jsonschema", "nltk", "snakemake", "pyTsetlinMachine", "thundersvm")


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
    sweeps = [(r["experiment"], r["impl"], r["params"], r["seed"]) for r in steps_mod.sweep_runs(config)]
    assert sweeps[0][:2] == ("semeval", "tm_gpu")
    clauses = [int(p.split("_")[0][1:]) for n, i, p, s in sweeps if (n, i) == ("semeval", "tm_gpu")]
    assert clauses[:2] == [20, 15000] and clauses[2:] == sorted(clauses[2:]) and 10000 in clauses
    assert {n for n, _, _, _ in sweeps} == {"semeval", "imdb", "bbc_sport", "bike_sharing"}
    # each GPU implementation the config lists, in its order: the paper's design, then a warp per clause
    assert list(dict.fromkeys(i for n, i, _, _ in sweeps if n == "imdb")) == ["tm_gpu", "tm_gpu_warp"]
    assert {r["impl"] for r in steps_mod.sweep_runs(config, "tm_gpu_warp")} == {"tm_gpu_warp"}
    # --select: experiments or single clause counts, the runs in the order of the terms
    picked = steps_mod.selected(steps_mod.sweep_runs(config, "tm_gpu"), "semeval:2560,imdb,semeval:80")
    assert [(r["experiment"], r["params"].split("_")[0]) for r in picked] == [
        ("semeval", "n2560"), *[("imdb", p) for p in ("n1000", "n15000", "n2000", "n4000", "n7000", "n10000")],
        ("semeval", "n80")]
    assert steps_mod.selected(sweeps_runs := steps_mod.sweep_runs(config), None) == sweeps_runs
    with pytest.raises(steps_mod.StageError, match="must be a number"):
        steps_mod.selected(sweeps_runs, "semeval:many")
    paper = steps_mod.paper_runs(config)
    assert [r["impl"] for r in steps_mod.selected(paper, "bbc_sport:5000")][:2] == ["tm_gpu", "mlp_novelty"]
    assert (paper[0]["experiment"], paper[0]["impl"]) == ("wsd_apple", "tm_gpu")
    assert (paper[-1]["experiment"], paper[-1]["impl"]) == ("blogfeedback", "tm_gpu_warp")
    assert len({r["experiment"] for r in paper}) == 8
    # a novelty run is followed by the MLP stage on its class sums
    i = next(i for i, r in enumerate(paper) if r["experiment"] == "bbc_sport")
    assert paper[i + 1] == {**paper[i], "impl": "mlp_novelty", "params": f"tm_gpu.{paper[i]['params']}",
                            "kind": "mlp_novelty"}
    only_cpu = load_config(["impls=[tm_cpu]"])
    assert steps_mod.paper_runs(only_cpu) == []  # the config lists no GPU build: none runs
    from gpu_host.__main__ import commands, load_calls

    lines = []
    commands(say=lines.append)
    calls = [ln for ln in lines if "gpu_host step" in ln and not ln.startswith("#")]
    steps = [w for c in calls for w in re.findall(r"gpu_host step (\w+)", c)]
    assert steps == [step.split()[0] for _, listed in load_calls(None)[1] for step in listed]  # as edited
    assert all(len(c) < 2000 for c in calls)  # the device tool's limit on a command
    assert all(c.count("--until $END") == c.count("gpu_host step") and "END=$(( $(date +%s) + " in c
               for c in calls)
    assert all(int(ln.split("timeout_s=")[1]) <= 600 for ln in lines if "timeout_s=" in ln)  # a command's limit


def _calls(tmp_path, calls, lease_s=900, limit=600):
    path = tmp_path / "calls.yaml"
    path.write_text(json.dumps({"lease_s": lease_s, "start_s": 60, "command_limit_s": limit, "calls": calls}))
    return path


def test_a_calls_list_that_does_not_fit_a_lease_is_refused_in_one_line(tmp_path, capsys):
    from gpu_host.__main__ import CallsError, call_commands, load_calls, main

    lease, calls = load_calls(_calls(tmp_path, [{"seconds": 300, "steps": ["paper 200 --impl tm_gpu"]},
                                                {"seconds": 200, "steps": ["paper", "ablation"]}]))
    (_, first), (timeout, second) = call_commands(calls, limit_s=lease["command_limit_s"])
    assert "step paper --budget 200 --until $END --later 200 --impl tm_gpu" in first  # it opens the next call too
    assert timeout == 260 and "--later" not in second
    for calls, lease_s, limit, problem in (([{"seconds": 520, "steps": ["bench", "paper", "sweeps"]}], 900, 600,
                                            "runs past the command limit"),
                                           ([{"seconds": 500, "steps": ["bench"]}] * 2, 900, 600,
                                            "more than the lease's 900 s"),
                                           ([{"seconds": 100, "steps": ["train"]}], 900, 600, "unknown ones (train)"),
                                           ([{"seconds": "x"}], 900, 600, "is not a calls list")):
        with pytest.raises(CallsError, match=re.escape(problem)):
            load_calls(_calls(tmp_path, calls, lease_s, limit))
    assert main(["commands", "--calls", str(tmp_path / "calls.yaml")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not a calls list" in err and "; edit " in err


def test_impl_is_for_the_training_steps_and_a_gpu_build_or_the_bench_builds(tmp_path):
    for name, impl in (("gpu_tests", "tm_gpu"), ("paper", "tm_cpu"), ("sweeps", "tm_gpu_block")):
        with pytest.raises(StageError, match="--impl applies to the sweeps, paper and bench steps"):
            steps_mod.run_step(name, campaign_dir=tmp_path, out_dir=tmp_path / "out", impl=impl)
    for impl in ("tm_gpu_warp,tm_gpux", "", "tm_gpu,,tm_gpu_block"):
        with pytest.raises(StageError, match="--impl of the bench step: a comma-separated list of tm_gpu, "):
            steps_mod.run_step("bench", campaign_dir=tmp_path, out_dir=tmp_path / "out", impl=impl)
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


def _gpu_record(tree: Path, experiment, impl, params, epoch_s, overhead_s=3.0, n_train=6000):
    """A paper-scale record the record gate accepts, ``epoch_s`` seconds an epoch (training and evaluation)."""
    named = plan.parse_tm_params(params)
    epochs = named["epochs"]
    rec = {"schema": 1, "status": "complete", "kind": "tm", "scale": "paper", "experiment": experiment,
           "impl": impl, "params": params, "seed": 0, "task": "classification",
           "dataset": {"name": experiment, "protocol": "paper", "n_train": n_train, "max_train": None},
           "final": {"accuracy": 90.0, "f1": 89.0},
           "provenance": {"git_commit": "0" * 40, "cpu_model": "c", "gpu": None,
                          "wall_s": overhead_s + epoch_s * epochs},
           "hyperparameters": {"n_clauses": named["clauses"], "T": named["T"], "s": named["s"], "epochs": epochs,
                               **({"threads_per_clause": plan.WARP} if impl == "tm_gpu_warp" else {})},
           "epochs": [{"epoch": e + 1, "train_s": epoch_s * 0.8, "eval_s": epoch_s * 0.2, "accuracy": 90.0,
                       "f1": 89.0} for e in range(epochs)],
           "timing": {"train_s_total": epoch_s * 0.8 * epochs, "train_s_mean": epoch_s * 0.8,
                      "eval_s_total": epoch_s * 0.2 * epochs}}
    path = tree / "results" / experiment / impl / params / "seed0.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rec))
    return path


def test_runs_that_cannot_fit_are_passed_over(tmp_path):
    """A run's seconds come from the pipeline's estimator (records of its own implementation); a run whose
    estimate exceeds the time left is passed over, an unestimated one starts (and pauses at the step's end)."""
    _gpu_record(tmp_path / "tree", "semeval", "tm_gpu", "n40_T15_s3.9_e5", 10.0)
    step = _paper_step(tmp_path, budget=480)
    started = []
    step.child = lambda cmd, log_path=None: started.append(cmd) or 1
    steps_mod.run_records(step, [steps_mod.run("semeval", "tm_gpu", "n40_T15_s3.9_e100", 0),
                                 steps_mod.run("semeval", "tm_gpu_warp", "n40_T15_s3.9_e100", 0)])
    reasons = [s["reason"] for s in step.manifest["skipped"]]
    assert "would not fit: about 1003 s needed (the pipeline's estimate)" in reasons[0]
    # the warp build has no record: another implementation's time says nothing of it, so the run starts
    assert len(started) == 1 and "tm_gpu_warp" in started[0][started[0].index("--out") + 1]
    assert step.manifest["done"] == []
    step.close()

def test_rerun_trains_what_the_checkout_has_recorded(tmp_path):
    """A sweep's time ratios pair points of one host: --rerun runs a point recorded (on another host) again."""
    _gpu_record(tmp_path / "tree", "semeval", "tm_gpu", "n40_T15_s3.9_e5", 10.0)
    for rerun in (False, True):
        step = _paper_step(tmp_path, budget=480)
        step.rerun, started = rerun, []
        step.child = lambda cmd, log_path=None, seen=started: seen.append(cmd) or 1
        steps_mod.run_records(step, [steps_mod.run("semeval", "tm_gpu", "n40_T15_s3.9_e5", 0)])
        assert len(started) == int(rerun)
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
    # the step's own process reads records through the gate: the install puts the staged fastjsonschema on its path
    only = tmp_path / "only-fastjsonschema"
    (only / "wheels").mkdir(parents=True)
    for wheel in staged.glob("wheels/fastjsonschema-*.whl"):
        shutil.copy(wheel, only / "wheels")
    mask = tmp_path / "mask"
    (mask / "fastjsonschema").mkdir(parents=True)
    (mask / "fastjsonschema" / "__init__.py").write_text("raise ImportError('no fastjsonschema on the GPU machine')\n")
    probe = ("import sys; from pathlib import Path; from gpu_host.steps import install; "
             f"install(Path({str(only)!r}), {{}}, site=Path({str(tmp_path / 'own-site')!r}), say=lambda m: None); "
             "import fastjsonschema; print(fastjsonschema.__file__)")
    r = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": os.pathsep.join([str(mask), str(REPO / "src")])})
    assert r.returncode == 0 and r.stdout.strip().startswith(str(tmp_path / "own-site")), r.stderr[-2000:]
    # what the step's install puts first on the path there (the stand-in PyCUDA wheel cannot be installed): the
    # staged pure-Python wheels, such as the record gate's fastjsonschema
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--target", str(site),
                    *map(str, sorted(staged.glob("wheels/fastjsonschema-*.whl")))], check=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(fake.parent), str(REPO / "src")]),
           "PYTHONHASHSEED": "0", "OUT": str(tmp_path / "unused")}
    out, tree = tmp_path / "out", tmp_path / "tree"

    def step(name, *extra, budget="120", call_out=None):  # call_out: a later device call's own (empty) $OUT
        cmd = [sys.executable, "-m", "gpu_host", "step", name, "--no-install", "--campaign-dir", str(staged),
               "--out", str(call_out or out), "--work-dir", str(tmp_path / "work" / name), "--tree", str(tree),
               "--budget", budget, *extra]
        r = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)  # as there
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        return r

    step("gpu_tests", "--select", "init_state_every_lane or gpu_memory_is_released")
    step("bench", "--until", f"{time.time() + 240:.0f}")
    step("sweeps", "--impl", "tm_gpu_warp")  # a person may narrow a step to one GPU build
    step("paper")
    step("ablation")
    # pyTsetlinMachine on the GPU machine's own cores beside our GPU builds (this machine has no core past the
    # first two, and that python no pyTsetlinMachine: the GPU runs only)
    step("host_peers", "--budget", "90")
    # (the scaling step runs the CPU benchmark, which needs jsonschema, and the svm step ThunderSVM's GPU build, both
    # staged apart: their own tests below)
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{s}.{ext}" for s in steps_mod.STEPS
                                                           if s not in ("scaling", "svm") for ext in ("log", "tar.gz"))
    written = unpack(out, into=tree, say=lambda m: None)
    assert all(w.startswith(("results/", "benchmarks/results/")) for w in written)
    assert any(w.startswith("benchmarks/results/host_limits_") for w in written)  # the bench step's GPU limits
    host = sorted((tree / "benchmarks/results/campaign").glob("host_peers_simulated_gpu_*/*.json"))
    assert [p.name for p in host] == [f"{e}_{i}.json" for e in ("bbc_sport", "wsd_apple")
                                      for i in ("tm_gpu", "tm_gpu_warp")]
    run = json.loads(host[-1].read_text())
    assert run["gpu"]["name"] == "Simulated GPU" and run["cpu_affinity"] == [0] and run["warmup"]["wall_s"] > 0
    assert len(run["units"]) >= 2 and all(u["wall_s"] > 0 for u in run["units"])

    # the paper step: every GPU build the config lists (one thread per clause: tm_gpu, the paper's design; a warp:
    # tm_gpu_warp), each into its own record folder
    for impl, threads in plan.GPU_THREADS_PER_CLAUSE.items():
        rec = json.loads((tree / f"results/smoke/wsd_apple/{impl}/n20_T50_s5_e2/seed0.json").read_text())
        assert rec["status"] == "complete" and rec["impl"] == impl and len(rec["epochs"]) == 2
        assert rec["hyperparameters"].get("threads_per_clause", 1) == threads
        gpu = rec["provenance"]["gpu"]
        assert gpu["name"] == "Simulated GPU" and gpu["driver"] and gpu["cuda"]
        assert len(rec["provenance"]["git_commit"] or "") == 40
        assert (tree / f"results/smoke/bbc_sport/mlp_novelty/{impl}.n20_T100_s15_e2/seed0.json").is_file()
    apple_rec = tree / "results/smoke/wsd_apple/tm_gpu/n20_T50_s5_e2/seed0.json"
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
    for clauses in (10, 20):  # the sweeps step, narrowed to the warp build
        assert (tree / f"results/smoke/bbc_sport/tm_gpu_warp/n{clauses}_T100_s15_e2/seed0.json").is_file()
    assert not (tree / "results/smoke/bbc_sport/tm_gpu/n10_T100_s15_e2").exists()  # n20: the paper step's too

    from asynctm.store import load_records

    records = load_records(tree / "results" / "smoke")
    assert set(records[records["impl"].isin(plan.GPU_IMPLS)]["experiment"]) == {"wsd_apple", "bbc_sport"}

    bench = json.loads(next((tree / "benchmarks/results").glob("gpu_simulated_gpu_*.json")).read_text())
    apple = bench["settings"][0]
    assert apple["setting"] == "wsd_apple" and apple["results"]["tm_gpu"]["median_epoch_s"] > 0
    assert apple["results"]["tm_gpu"]["literals_per_clause"] > 0
    assert apple["results"]["tm_gpu_warp"]["median_epoch_s"] > 0 and "warp_speedup_vs_one_thread" in apple["comparison"]
    assert "PyTsetlinMachineCUDA" in apple["skipped"]["pytm_cuda"]  # not installed here: reported, not fatal
    assert apple["results"]["tm_cpu"]["timed_epochs"] == 1 and "tm_cpu" in apple["comparison"]["tm_gpu_within_spread"]
    assert all(len(s["epoch_s"]) == 1 for s in apple["results"]["tm_gpu"]["per_seed"])  # what the cost evidence reads
    junit = next((tree / "benchmarks/results/campaign").glob("gpu_tests_*.xml")).read_text()
    # two tests shared out to two pytest processes, then the device-wide one alone; one merged report
    assert junit.count("<testcase") == 3 and '<testsuites tests="3" failures="0" errors="0"' in junit
    tests_manifest = json.loads(next((tree / "benchmarks/results/campaign").glob("gpu_tests_*.json")).read_text())
    assert tests_manifest["pytest"]["returncode"] == 0
    assert tests_manifest["pytest"]["summary"].startswith("3 passed in ") and "then 1 alone" in tests_manifest[
        "pytest"]["summary"]

    # Called again after unpack: every run is recorded already and nothing is trained; the earlier call's work
    # folder is kept (the same staged campaign), and the tarball holds only this call's manifest.
    r = step("paper", call_out=(out := tmp_path / "out_call2"))
    assert "kept the work folder of an earlier call" in r.stdout
    manifests = sorted((tmp_path / "work" / "paper" / "benchmarks/results/campaign").glob("paper_*.json"))
    again = json.loads(manifests[-1].read_text())
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


def test_the_scaling_step_times_each_thread_count_on_cores_of_its_own(tmp_path):
    """Our CPU build's core scaling on the GPU machine's CPU: the CPU's limits, then one process per thread count on
    that many CPUs, the run's files and their summary packed under benchmarks/results/."""
    import os

    camp = tmp_path / "c"
    _processed(camp / "data")
    (camp / "campaign.json").write_text(json.dumps({"config": load_config([]), "source": {"commit": "c" * 40}}))
    step = steps_mod.Step("scaling", camp, tmp_path / "out", 150, tmp_path / "work", tree=tmp_path / "tree")
    step.gpu = {"name": "NVIDIA H200"}
    step.env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    try:
        steps_mod.step_scaling(step, "apple")
        tarball = step.pack()
    finally:
        step.close()
    assert step.manifest["skipped"] == [] and len(step.manifest["done"]) == 1
    summary = json.loads((step.work / step.manifest["done"][0]).read_text())
    scaling = load_benchmark_script("scaling")
    counts = scaling.ladder(len(os.sched_getaffinity(0)), summary["cpu"]["physical_cores"])
    assert [r["threads"] for r in summary["settings"]["apple"]["asynctm"]] == sorted(counts)
    assert summary["bind"] == "cores" and summary["host_note"] == "the GPU machine's own CPU, its GPU idle"
    measured = json.loads(next(step.work.glob("benchmarks/results/cpu_scaling_*/measure.json")).read_text())
    assert [p["cpus"] for p in measured["processes"].values()] == [scaling.cpu_order()[:t] for t in counts]
    assert measured["limits"]["returncode"] == 0  # the CPU's limits first, for the bounds
    with tarfile.open(tarball) as tar:
        names = tar.getnames()
    assert step.manifest["done"][0] in names and any(n.endswith("/scaling_apple_t1.json") for n in names)
    assert any(n.endswith(f"/{scaling.LIMITS}") for n in names)


def _stand_in_thundersvm_wheel(folder: Path) -> Path:
    """A ``thundersvm`` wheel whose package cannot load (as the GPU build without its CUDA libraries)."""
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / "thundersvm-0.0+stand.in-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("thundersvm/__init__.py", "raise ImportError('stand-in of the GPU build')\n")
        z.writestr("thundersvm/libthundersvm.so", b"stand-in")
        z.writestr("thundersvm-0.0+stand.in.dist-info/METADATA", "Metadata-Version: 2.1\nName: thundersvm\n"
                                                                  "Version: 0.0+stand.in\n")
        z.writestr("thundersvm-0.0+stand.in.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\n"
                                                               "Tag: py3-none-any\n")
        z.writestr("thundersvm-0.0+stand.in.dist-info/RECORD", "")
    return wheel


def test_the_svm_step_fits_every_svm_experiment_with_the_staged_build_beside_the_cpu_fits(tmp_path, monkeypatch):
    """The svm step installs the staged ThunderSVM wheel apart and runs the pipeline's SVM runs with the library
    forced, seed by seed across the experiments, into a folder of its own (here scikit-learn stands in for
    ThunderSVM's GPU build, which needs a GPU)."""
    import os

    camp = tmp_path / "c"
    _processed(camp / "data")
    config = _smoke_config(camp / "data")
    (camp / "campaign.json").write_text(json.dumps({"config": config, "source": {"commit": "c" * 40}}))
    with pytest.raises(StageError, match="not a thundersvm wheel"):
        stage_mod.svm_wheel(tmp_path / "absent.whl", tmp_path)
    monkeypatch.setattr(steps_mod, "SVM_SITE", tmp_path / "svm-site")
    monkeypatch.setattr(steps_mod, "SVM_STEP_LIBRARY", "sklearn")

    def svm_step(name):
        step = steps_mod.Step("svm", camp, tmp_path / f"out-{name}", 150, tmp_path / f"work-{name}",
                              tree=tmp_path / "tree")
        step.gpu = {"name": "NVIDIA H200"}
        step.env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
        try:
            steps_mod.step_svm(step)
        finally:
            step.close()
        return step

    assert "no ThunderSVM GPU wheel staged" in svm_step("bare").manifest["stopped"]
    stage_mod.svm_wheel(_stand_in_thundersvm_wheel(tmp_path / "w"), camp)
    step = svm_step("staged")
    assert step.manifest["stopped"] is None and step.manifest["svm"]["library"] == "sklearn"
    assert [d.split("/")[4] for d in step.manifest["done"]] == ["wsd_apple", "bbc_sport"]  # the paper's order
    for rel in step.manifest["done"]:
        assert rel.startswith("benchmarks/results/campaign/svm_gpu_nvidia_h200_") and rel.endswith("/seed0.json")
        rec = json.loads((step.work / rel).read_text())
        impl = rec["implementation"]
        assert rec["impl"] == "svm" and impl["library_choice"] == "sklearn"
        assert impl["forced"] and impl["forced_by"] == "$ASYNCTM_SVM_LIBRARY"
    assert (tmp_path / "svm-site" / "thundersvm" / "__init__.py").is_file()
    with tarfile.open(tmp_path / "out-staged" / "svm.tar.gz") as tar:
        assert set(step.manifest["done"]) <= set(tar.getnames())


def test_gpu_test_processes_reports_are_merged(tmp_path):
    a, b = tmp_path / "a.xml", tmp_path / "b.xml"
    a.write_text('<testsuites><testsuite name="pytest" tests="3" failures="1" errors="0" skipped="1">'
                 '<testcase name="x"/><testcase name="y"><failure/></testcase><testcase name="z"/></testsuite>'
                 '</testsuites>')
    b.write_text('<testsuite name="pytest" tests="2" failures="0" errors="1" skipped="0"><testcase name="u"/>'
                 '<testcase name="v"><error/></testcase></testsuite>')
    totals, failed = steps_mod.merge_junit([a, b, tmp_path / "killed-before-writing.xml"], tmp_path / "all.xml")
    merged = (tmp_path / "all.xml").read_text()
    assert '<testsuites tests="5" failures="1" errors="1" skipped="1">' in merged and merged.count("<testcase") == 5
    assert totals == {"tests": 5, "failures": 1, "errors": 1, "skipped": 1}
    assert [f["test"] for f in failed] == ["::y", "::v"]


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
    # The scores a learning test records come back in the report whether it passed or not.
    scores = {c.get("name"): json.loads(p.get("value")) for c in ET.parse(xml).getroot().iter("testcase")
              for p in c.iter("property") if p.get("name") == "scores"}
    assert list(scores) == ["test_noisy_xor_learns[cpu]"]
    assert len(scores["test_noisy_xor_learns[cpu]"]["ours"]) == 3
    assert all(0.5 < x <= 1.0 for x in scores["test_noisy_xor_learns[cpu]"]["ours"])
    xml.write_text(xml.read_text().replace("</testcase>", '<failure message="AssertionError: 0.5"/></testcase>', 1))
    _, failed = steps_mod.merge_junit([xml], tmp_path / "merged.xml")
    assert [f["learning"] for f in failed] == [True]


def test_a_crashed_gpu_test_process_fails_the_step(tmp_path, monkeypatch):
    step = _paper_step(tmp_path)
    step.env = {"PYCUDA_CACHE_DIR": str(tmp_path / "cache")}
    monkeypatch.setattr(steps_mod, "collect_gpu_tests", lambda step, select=None: (["t.py::a", "t.py::b"], []))
    monkeypatch.setattr(os, "cpu_count", lambda: 16)  # two tests: two processes, whatever this machine has

    def children(jobs):
        for (_cmd, log, env), text in zip(jobs, ("1 passed in 0.1s\n", "Segmentation fault\n")):
            log.write_text(text)
            assert env["PYCUDA_CACHE_DIR"].startswith(str(tmp_path / "cache" / "tests-"))
        xml = next(w for w in jobs[0][0] if w.startswith("--junitxml=")).split("=", 1)[1]
        Path(xml).write_text('<testsuite tests="2" failures="1" errors="0" skipped="0"><testcase name="a"/>'
                             '<testcase name="b"><failure/></testcase></testsuite>')  # the crashed one wrote none
        return [1, -11]  # a failed test beside the crash: the crash is what the step reports

    step.children = children
    steps_mod.step_gpu_tests(step)
    assert step.manifest["pytest"]["returncode"] == -11
    assert "1 passed, 1 failed" in step.manifest["pytest"]["summary"]
    assert "part1 exited with -11" in step.manifest["pytest"]["summary"]
    assert step.manifest["pytest"]["failed"] == [{"test": "::b", "learning": False}]
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
    _gpu_record(tree, "semeval", "tm_gpu", "n40_T15_s3.9_e5", 3.5, overhead_s=0.0)  # 350 s for 100 epochs
    run = [steps_mod.run("semeval", "tm_gpu", "n40_T15_s3.9_e100", 0)]
    rel = "results/semeval/tm_gpu/n40_T15_s3.9_e100/seed0.json"
    # Without a next call, the run does not fit.
    step = _paper_step(tmp_path, budget=100)
    steps_mod.run_records(step, run)
    reason = step.manifest["skipped"][0]["reason"]
    assert "would not fit: about 350 s needed (the pipeline's estimate), 100 s left" in reason
    step.close()
    # With 300 s more in the next call, it starts, with --stop-at before the step's end, and pauses.
    seen = []

    def child(cmd, log_path=None):
        seen.append(cmd)
        out = Path(cmd[cmd.index("--out") + 1])
        return _fake_run(out, 20, 100, record=len(seen) > 1)

    step = _paper_step(tmp_path, budget=100, later=300)
    monkeypatch.setattr(step, "child", child)
    steps_mod.run_records(step, run)
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
    steps_mod.run_records(step, run)
    assert step.manifest["done"] == [rel] and len(seen) == 2
    with tarfile.open(step.pack()) as tar:
        names = tar.getnames()
    assert rel in names and rel.replace(".json", ".log") in names and not any("checkpoint" in n for n in names)
    step.close()

def test_an_ablation_variant_sets_its_runs_threads_per_clause(tmp_path, monkeypatch):
    """A ``_warp`` variant trains with a warp per clause and the others with one thread; both are tm_gpu's
    records under results/ablation/."""
    step = _paper_step(tmp_path, budget=300)
    seen = []

    def child(cmd, log_path=None):
        seen.append(json.loads(cmd[cmd.index("--settings") + 1])["hyperparameters"])
        return _fake_run(Path(cmd[cmd.index("--out") + 1]), 2, 100, record=False)

    monkeypatch.setattr(step, "child", child)
    params = "n1280_T1280_s1.5_e100"
    steps_mod.run_records(step, [steps_mod.run("bike_sharing", "tm_gpu", params, 0, "sync_linear_warp"),
                                 steps_mod.run("bike_sharing", "tm_gpu", params, 0, "async_linear")])
    assert [h.get("threads_per_clause") for h in seen] == [32, None]
    assert seen[0]["tally"] == "sync"
    assert [e["run"] for e in step.manifest["paused"]] == [
        f"results/ablation/bike_sharing/tm_gpu/{params}/{v}/seed0.json" for v in ("sync_linear_warp", "async_linear")]
    step.close()

def test_the_docs_show_the_calls_that_commands_prints():
    from gpu_host.__main__ import call_commands, load_calls

    page = REPO / "docs" / "gpu-and-clusters.md"
    shown = [ln for ln in page.read_text().splitlines() if ln.startswith("export PYTHONPATH=src;")]
    lease, calls = load_calls()
    assert shown == [command for _, command in call_commands(calls, limit_s=lease["command_limit_s"])]

def test_every_step_command_of_a_lease_parses(tmp_path):
    """The device calls' step commands, as printed, are valid command lines of the campaign (flags and values)."""
    import shlex

    from gpu_host.__main__ import call_commands, load_calls, parser

    parsed = []
    for path in (None, _calls(tmp_path, [{"seconds": 400, "steps": ["sweeps 150 --impl tm_gpu_warp", "paper"]},
                                         {"seconds": 300, "steps": ["paper --select wsd_apple", "ablation"]}])):
        for _, command in call_commands(load_calls(path)[1], "c" * 40, 0):
            for part in command.split(";"):
                words = shlex.split(part.replace("$END", "1900000000"))
                if words[:3] == ["python3", "-m", "gpu_host"]:
                    parsed.append(parser().parse_args(words[3:]))
    listed = [step.split()[0] for _, steps in load_calls(None)[1] for step in steps]  # the lease's calls as edited
    assert [a.name for a in parsed] == [*listed, "sweeps", "paper", "paper", "ablation"]
    assert all(a.until == 1900000000 for a in parsed)
    assert [(a.later, a.impl, a.select) for a in parsed[-4:-1]] == [(0.0, "tm_gpu_warp", None), (300.0, None, None),
                                                                    (0.0, None, "wsd_apple")]


def test_the_staged_tmu_site_keeps_what_tmus_imports_load(tmp_path):
    site = tmp_path / "site"
    for rel in ("tmu/__init__.py", "tmu/models/base.py", "numpy/__init__.py", "numpy/core/tests/test_x.py",
                "numpy/testing/__init__.py", "numpy/f2py/__init__.py", "numpy.libs/libopenblas.so",
                "scipy/__init__.py", "scipy/_lib/_util.py", "scipy/linalg/_basic.py", "scipy/sparse/_base.py",
                "scipy/sparse/tests/test_base.py", "scipy/special/_ufuncs.py", "scipy/stats/_stats.py",
                "scipy/__pycache__/x.pyc", "examples/classification/x.py", "test/test_tmu.py", "cffi/api.py"):
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_text("")
    stage_mod.trim_tmu_site(site)
    kept = sorted(p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file())
    assert kept == ["cffi/api.py", "numpy.libs/libopenblas.so", "numpy/__init__.py", "scipy/__init__.py",
                    "scipy/_lib/_util.py", "scipy/linalg/_basic.py", "scipy/sparse/_base.py", "tmu/__init__.py",
                    "tmu/models/base.py"]
    assert stage_mod.TMU_SITE[0] == "tmu==0.8.3" and any(p.startswith("numpy==1.") for p in stage_mod.TMU_SITE)


def test_the_bench_step_gives_tmu_a_python_that_sees_the_staged_site_first(tmp_path, monkeypatch):
    said = []
    step = type("S", (), {"campaign_dir": tmp_path / "campaign", "say": lambda self, m: said.append(m)})()
    monkeypatch.setattr(steps_mod, "TMU_SITE", tmp_path / "site-tmu")
    assert steps_mod.tmu_python(step) is None and "stage --tmu" in said[0]  # none staged: said, then skipped
    (tmp_path / "campaign" / "tmu").mkdir(parents=True)
    (tmp_path / "pkg" / "tmu").mkdir(parents=True)
    (tmp_path / "pkg" / "tmu" / "__init__.py").write_text("VERSION = '0.8.3'\n")
    with tarfile.open(tmp_path / "campaign" / "tmu" / "site.tar.xz", "w:xz") as tar:
        tar.add(tmp_path / "pkg" / "tmu" / "__init__.py", arcname="tmu/__init__.py")
    python = steps_mod.tmu_python(step)
    assert (tmp_path / "site-tmu" / "tmu" / "__init__.py").is_file()
    assert not (tmp_path / "site-tmu.partial").exists()
    code = f"import sys, tmu; print(tmu.VERSION, sys.path.index({str(tmp_path / 'site-tmu')!r}))"
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, env={"PATH": os.environ["PATH"]})
    assert out.returncode == 0 and out.stdout.split()[0] == "0.8.3", out.stderr
    assert steps_mod.tmu_python(step) == python  # a second call keeps the unpacked site
    (tmp_path / "pkg" / "tmu" / "__init__.py").write_text("VERSION = '0.8.4'\n")  # staged again, another tmu
    with tarfile.open(tmp_path / "campaign" / "tmu" / "site.tar.xz", "w:xz") as tar:
        tar.add(tmp_path / "pkg" / "tmu" / "__init__.py", arcname="tmu/__init__.py")
    steps_mod.tmu_python(step)
    assert "0.8.4" in (tmp_path / "site-tmu" / "tmu" / "__init__.py").read_text()


def test_the_tmu_lease_stages_tmu_and_names_its_peer():
    """profiles/gpu-host/calls-tmu.yaml: its stage line carries its options (tmu, the two datasets), its call names
    tmu_cuda on the bench step, and every step command parses."""
    from gpu_host.__main__ import commands, load_calls, parser

    path = REPO / "profiles" / "gpu-host" / "calls-tmu.yaml"
    lease, calls = load_calls(path)
    lines = []
    commands(say=lines.append, calls_file=path)
    stage_line = next(ln for ln in lines if ln.startswith("python -m gpu_host stage"))
    assert stage_line == ("python -m gpu_host stage --config data_dir=data --config 'datasets=[wsd_apple, imdb]' "
                          "--tmu --no-cpu-peers")
    args = parser().parse_args(shlex.split(stage_line)[3:])  # the printed line, as a shell passes it
    assert args.tmu and args.no_cpu_peers and args.config == ["data_dir=data", "datasets=[wsd_apple, imdb]"]
    assert load_config(args.config)["datasets"] == ["wsd_apple", "imdb"]
    (_, steps), = calls
    assert steps == ["bench --select wsd_apple,imdb --impl tm_gpu,tm_gpu_warp,tmu_cuda"]
    assert "tmu_cuda" in load_benchmark_script("bench_gpu").IMPLS
    assert load_calls(None)[0]["stage"] == ""  # the default lease stages as before
