#!/usr/bin/env python
"""Per-epoch training time and test accuracy (or MAE) of our Tsetlin Machine against the paper's baselines.

One command, one process, per setting: our CPU build with 1 thread and with all cores, pyTsetlinMachine
``indexed=True`` and ``indexed=False`` (1 thread, as in the paper), pyTsetlinMachineParallel on all cores (in
a worker process run by its own virtual environment, ``benchmarks/setup_pytm_parallel.sh``), and, when a CUDA
GPU is present, our CUDA backend and PyTsetlinMachineCUDA. Identical hyperparameters and data for all
(mapping and the differences by design: :mod:`asynctm.peers`). Prints a table and writes
``benchmarks/results/<name>.json`` and ``benchmarks/results/<name>.md`` (the Markdown table).

    python benchmarks/bench_tm.py                          # apple and bike, default epochs
    python benchmarks/bench_tm.py --settings all --seeds 0,1,2   # all four settings (the speed goals' table)
    python benchmarks/bench_tm.py --settings apple --epochs 20
    python benchmarks/bench_tm.py --quick                  # a smoke run: few epochs, subsampled data

Settings: ``apple`` (WSD apple), ``bike`` (Bike Sharing regression), ``semeval`` (SemEval-2010 Task 8
Cause-Effect, the authors' preparation, 102,176 features, sparse), ``imdb`` (IMDb, 5,000 n-gram features,
subsampled by default); ``all`` is the four. Each has a speed goal against one peer (``goal``).

Timing: wall clock (``time.perf_counter``) around one ``fit_epoch`` call, i.e. the library's
``fit(X, y, epochs=1, incremental=True)``, which is how the paper's authors drove pyTsetlinMachine
(pyTsetlinMachineParallel: timed the same way inside its worker). Each implementation first trains one
warm-up epoch (reported apart: it includes one-time costs such as compiling our kernels or encoding the
data); then the timed epochs run *round-robin* (epoch k of every implementation, then epoch k+1), so a burst
of load from elsewhere hits all implementations alike. With ``--seeds`` every implementation does this once
per seed; the median epoch is over all seeds' timed epochs and the metric is the mean over seeds after the
same number of epochs. The test metric is taken outside the timed region, after every epoch (``--eval
every``) or after the last one only (``--eval final``, the default for IMDb, where pyTM's predict is slow).
See benchmarks/README.md and benchmarks/HARNESS_NOTES.md.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import os
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from asynctm.datasets.base import sha256_file
from asynctm.provenance import (
    code_digests,
    cpu_info,
    git_info,
    gpu_info,
    versions,
)

REPO = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
DEFAULT_OUT = REPO / "benchmarks" / "results"
DEFAULT_RAW_CACHE = HERE / ".cache" / "raw"  # git-ignored: raw files unpacked from the mirror
PARALLEL_VENV = HERE / ".venv-pytmparallel"  # git-ignored: built by setup_pytm_parallel.sh
PARALLEL_SETUP = HERE / "setup_pytm_parallel.sh"
PARALLEL_WORKER = HERE / "pytm_parallel_worker.py"

# The paper's settings (Section 4) and the CPU speed goals (median epoch of ours on all cores against
# the goal's peer on one thread, at equal accuracy: within 1 point, or the MAE within 2 %, or better).
# WSD "300, 50, 5.0" clauses per class / T / s on 3,000 stems; Bike Sharing "T = 1280, s = 1.5, n = 1280" on
# the 1,389-bit thermometer encoding; SemEval 40 / 15 / 3.9 and IMDb 7,000 / 80 / 27 (config/config.yaml,
# experiments semeval and imdb). max_train / max_test: the default subsample (None: all rows).
SETTINGS = {
    "apple": {
        "task": "classification",
        "dataset": "WSD apple: the authors' apple.csv (CoarseWSD-20 balanced, train + test), first 1,784 rows "
                   "train; 3,000 Porter stems over train + test (asynctm.datasets.coarsewsd20, protocol paper)",
        "hyperparameters": {"n_clauses": 300, "T": 50, "s": 5.0},
        "epochs": 10,
        "quick_epochs": 2,
        "quick_max_train": None,
        "max_train": None,
        "max_test": None,
        "evaluate": "every",
        "goal": {"peer": "pyTM indexed", "min_speedup": 25.0},
    },
    "bike": {
        "task": "regression",
        "dataset": "Bike Sharing hourly (UCI 275), 1,389-bit thermometer encoding, first 80% train "
                   "(asynctm.datasets.bike_sharing, protocol paper)",
        "hyperparameters": {"n_clauses": 1280, "T": 1280, "s": 1.5},
        "epochs": 5,
        "quick_epochs": 2,
        "quick_max_train": 2000,
        "max_train": None,
        "max_test": None,
        "evaluate": "every",
        "goal": {"peer": "pyTM RTM (no index)", "min_speedup": 10.0},
    },
    "semeval": {
        "task": "classification",
        "dataset": "SemEval-2010 Task 8, Cause-Effect or not: the authors' preparation of TRAIN_FILE.TXT "
                   "(unigrams + bigrams of all 8,000 sentences, 102,176 binary features, sparse), random "
                   "75/25 split (asynctm.datasets.semeval, protocol paper)",
        "registry": "semeval",
        "hyperparameters": {"n_clauses": 40, "T": 15, "s": 3.9},
        "epochs": 2,  # pyTM indexed: ~60-100 s an epoch on the 6,000 training sentences
        "quick_epochs": 1,
        "quick_max_train": 500,
        "quick_max_test": 500,
        "max_train": None,
        "max_test": None,
        "evaluate": "every",
        "goal": {"peer": "pyTM indexed", "min_speedup": 40.0},
    },
    "imdb": {
        "task": "classification",
        "dataset": "IMDb sentiment: the Keras imdb.npz sequences rebuilt from aclImdb + the word index, "
                   "unigrams + bigrams (>= 10 training occurrences), chi-squared top 5,000 on all 25,000 "
                   "training reviews, binary, sparse (asynctm.datasets.imdb, protocol paper); a seeded subsample "
                   "of the examples by default (pyTM indexed: ~0.1 s per training example and epoch)",
        "registry": "imdb",
        "hyperparameters": {"n_clauses": 7000, "T": 80, "s": 27.0},
        "epochs": 2,
        "quick_epochs": 1,
        "quick_max_train": 200,
        "quick_max_test": 200,
        "max_train": 1000,  # pyTM indexed ~0.1 s per example and epoch: ~4-5 min for 1 + 2 epochs
        "max_test": 1000,
        "evaluate": "final",
        "goal": {"peer": "pyTM indexed", "min_speedup": 25.0},
    },
}
ALL_SETTINGS = ("apple", "bike", "semeval", "imdb")
COMMON_HYPERPARAMETERS = {"state_bits": 8, "boost_true_positive": True, "append_negated": True, "batch_size": 100}
APPLE_N_TRAIN = 1784
DEFAULT_PEERS = "asynctm,pytm,pytm_parallel,asynctm_cuda,pytm_cuda"
# Equal accuracy (the speed goals' rule): within 1 point, or the MAE within 2 %, after the same epochs, mean over seeds.
ACCURACY_TOLERANCE_POINTS = 1.0
MAE_TOLERANCE_RELATIVE = 0.02


# --- data ------------------------------------------------------------------------------------------------

def default_mirror() -> Path:
    return Path(os.environ.get("ASYNCTM_DATA_MIRROR", REPO.parent / "shared" / "datasets"))


def array_digest(**arrays) -> str:
    """sha256 over each array's name, dtype, shape and bytes, in the given order (CSR: its three arrays)."""
    h = hashlib.sha256()
    for name, a in arrays.items():
        if sp.issparse(a):
            a = sp.csr_matrix(a)
            a.sort_indices()
            h.update(f"{name}:csr:{a.shape};".encode())
            for part in (a.indptr, a.indices, a.data):
                part = np.ascontiguousarray(part)
                h.update(f"{part.dtype.str}:{part.shape};".encode())
                h.update(part.tobytes())
            continue
        a = np.ascontiguousarray(a)
        h.update(f"{name}:{a.dtype.str}:{a.shape};".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def load_apple(mirror: Path, raw_cache: Path | None = None) -> tuple[dict, dict]:
    from asynctm.datasets import coarsewsd20

    path = mirror / "paper_repo" / "apple.csv"
    with open(path, newline="", encoding="utf-8-sig") as f:
        rows = list(csv.DictReader(f))
    # The project's own WSD preparation, protocol paper (vocabulary over train + test).
    X, _ = coarsewsd20.featurise([r["text"] for r in rows], APPLE_N_TRAIN, "paper")
    y = np.array([int(r["label"]) for r in rows], dtype=np.int64)
    data = {"X_train": X[:APPLE_N_TRAIN], "y_train": y[:APPLE_N_TRAIN],
            "X_test": X[APPLE_N_TRAIN:], "y_test": y[APPLE_N_TRAIN:]}
    source = {"file": "paper_repo/apple.csv", "sha256": sha256_file(path), "rows": len(rows),
              "n_features": X.shape[1]}
    return data, source


def load_bike(mirror: Path, raw_cache: Path | None = None) -> tuple[dict, dict]:
    from asynctm.datasets import bike_sharing

    raw_dir = mirror / "bike_sharing"
    ds = bike_sharing.prepare(raw_dir, "paper")
    declared = {m.path: m.sha256 for src in bike_sharing.SOURCES for m in src.members}
    actual = sha256_file(raw_dir / "hour.csv")
    if declared.get("hour.csv") not in (None, actual):
        raise SystemExit(f"{raw_dir / 'hour.csv'}: sha256 {actual} differs from the declared {declared['hour.csv']}")
    data = {"X_train": np.asarray(ds.X_train), "y_train": np.asarray(ds.y_train, dtype=np.float64),
            "X_test": np.asarray(ds.X_test), "y_test": np.asarray(ds.y_test, dtype=np.float64)}
    source = {"file": "bike_sharing/hour.csv", "sha256": actual, "rows": len(ds.y_train) + len(ds.y_test),
              "n_features": data["X_train"].shape[1]}
    return data, source


def fetch_raw(dataset: str, mirror: Path, raw_cache: Path) -> tuple[Path, dict]:
    """The raw files of a registered dataset, unpacked from the mirror into ``raw_cache/<dataset>`` and
    verified, as the pipeline's fetch rule does (``asynctm.datasets.fetch``: each source's ``mirror_path``
    below the mirror, member hashes checked). Optional sources that the mirror lacks are left out (no network
    attempt); ``prepare`` then uses what the pipeline would use offline. Returns the folder and
    ``{member: hash}``."""
    from asynctm.datasets import get_module
    from asynctm.datasets.fetch import fetch_source

    mod = get_module(dataset)
    raw_dir = Path(raw_cache) / dataset
    raw_dir.mkdir(parents=True, exist_ok=True)
    hashes = {}
    for source in mod.SOURCES:
        if source.optional and not (mirror / source.mirror_path).is_file() and not all(
                (raw_dir / m.path).exists() for m in source.members):
            continue
        got = fetch_source(source, raw_dir, mod.NAME, mirror=mirror, timeout=30.0,
                           log=lambda msg: print(f"   {msg}", flush=True))
        if got is not None:
            hashes.update(got)
    return raw_dir, hashes


def load_registered(name: str, mirror: Path, raw_cache: Path | None = None) -> tuple[dict, dict]:
    """A setting whose data come from the project's dataset registry: ``prepare(raw_dir, "paper")``."""
    from asynctm.datasets import get_module
    from asynctm.datasets.base import digest_lines

    dataset = SETTINGS[name]["registry"]
    mod = get_module(dataset)
    raw_dir, hashes = fetch_raw(dataset, Path(mirror), Path(raw_cache or DEFAULT_RAW_CACHE))
    ds = mod.prepare(raw_dir, "paper")
    data = {"X_train": ds.X_train, "y_train": np.asarray(ds.y_train),
            "X_test": ds.X_test, "y_test": np.asarray(ds.y_test)}
    source = {"dataset": dataset, "protocol": "paper", "raw_dir": str(raw_dir),
              "mirror_files": [s.mirror_path for s in mod.SOURCES
                               if not s.optional or (Path(mirror) / s.mirror_path).is_file()],
              "raw_digest": digest_lines(hashes), "members": dict(sorted(hashes.items())),
              "rows": int(len(data["y_train"]) + len(data["y_test"])), "n_features": int(ds.X_train.shape[1]),
              "sparse": bool(sp.issparse(ds.X_train)),
              "preparation": ds.meta.get("preparation"),
              "split": ds.meta.get("split")}
    return data, source


LOADERS = {"apple": load_apple, "bike": load_bike,
           "semeval": lambda mirror, raw_cache=None: load_registered("semeval", mirror, raw_cache),
           "imdb": lambda mirror, raw_cache=None: load_registered("imdb", mirror, raw_cache)}


def subsample(data: dict, max_train: int | None, max_test: int | None, seed: int) -> dict:
    """Keep at most ``max_train`` / ``max_test`` rows, drawn with ``seed`` and kept in file order."""
    rng = np.random.default_rng(seed)
    out = dict(data)
    for part, limit in (("train", max_train), ("test", max_test)):
        n = len(data[f"y_{part}"])
        if limit is not None and limit < n:
            idx = np.sort(rng.choice(n, size=limit, replace=False))
            out[f"X_{part}"], out[f"y_{part}"] = data[f"X_{part}"][idx], data[f"y_{part}"][idx]
    return out


def dense_uint8(X) -> np.ndarray:
    """A dense 0/1 uint8 copy of a sparse X (what pyTsetlinMachine takes); dense input as it is."""
    if sp.issparse(X):
        return np.ascontiguousarray(X.toarray(), dtype=np.uint8)
    return X


# --- the runs ------------------------------------------------------------------------------------------------

def planned_runners(task: str, threads: list[int], peers: set[str], gpu: bool,
                    parallel_threads: int | None = None) -> list[dict]:
    """What to run: label, peer name and make_peer options."""
    plan = []
    if "asynctm" in peers:
        for n in threads:
            plan.append({"label": f"asynctm cpu {n}t", "peer": "asynctm", "options": {"backend": "cpu", "n_threads": n}})
    if "pytm" in peers:
        if task == "classification":
            plan.append({"label": "pyTM indexed", "peer": "pytm", "options": {"indexed": True}})
            plan.append({"label": "pyTM unindexed", "peer": "pytm", "options": {"indexed": False}})
        else:  # the RTM of pyTsetlinMachine has no clause index
            plan.append({"label": "pyTM RTM (no index)", "peer": "pytm", "options": {}})
    if "pytm_parallel" in peers:
        n = parallel_threads or max(threads)
        plan.append({"label": f"pyTMParallel {n}t", "peer": "pytm_parallel", "options": {"n_threads": n}})
    if gpu and "asynctm_cuda" in peers:
        plan.append({"label": "asynctm cuda", "peer": "asynctm", "options": {"backend": "cuda"}})
    if gpu and "pytm_cuda" in peers:
        plan.append({"label": "PyTsetlinMachineCUDA", "peer": "pytm_cuda", "options": {}})
    return plan


def metric(task: str, y_true, y_pred) -> float:
    if task == "classification":
        return float(100.0 * np.mean(np.asarray(y_pred) == np.asarray(y_true)))
    return float(np.mean(np.abs(np.asarray(y_pred, dtype=np.float64) - np.asarray(y_true, dtype=np.float64))))


def timed_epoch(peer, X, y) -> tuple[float, float, float | None]:
    """``(epoch seconds, CPU seconds, outer seconds or None)``. A peer that runs in a worker process reports
    the library's epoch as timed there (``last_epoch_s``); then the outer wall time (with the pipe round trip)
    comes third."""
    c0, t0 = time.process_time(), time.perf_counter()
    peer.fit_epoch(X, y)
    t1, c1 = time.perf_counter(), time.process_time()
    inner = getattr(peer, "last_epoch_s", None)
    if inner is not None:
        return float(inner), float(peer.last_epoch_cpu_s), t1 - t0
    return t1 - t0, c1 - c0, None


_PARALLEL_SETUP_TRIED: dict[str, str | None] = {}


def parallel_python(args) -> Path:
    """The python of pyTsetlinMachineParallel's environment; built first with ``--setup-pytm-parallel``."""
    python = Path(args.pytm_parallel_python)
    if python.exists() or not args.setup_pytm_parallel:
        return python
    key = str(python)
    if key not in _PARALLEL_SETUP_TRIED:
        venv = python.parent.parent
        print(f"   building pyTsetlinMachineParallel's environment {venv} with {PARALLEL_SETUP.name} "
              "(once; pip install numpy pyTsetlinMachineParallel==0.2.1)", flush=True)
        proc = subprocess.run(["bash", str(PARALLEL_SETUP)], env={**os.environ, "PYTM_PARALLEL_VENV": str(venv)},
                              capture_output=True, text=True, check=False)
        _PARALLEL_SETUP_TRIED[key] = None if proc.returncode == 0 else (
            f"{PARALLEL_SETUP.name} failed (status {proc.returncode}): {(proc.stderr or proc.stdout)[-500:]}")
    if _PARALLEL_SETUP_TRIED[key]:
        raise RuntimeError(_PARALLEL_SETUP_TRIED[key])
    return python


def build_peer(runner: dict, task: str, hp: dict, seed: int, args):
    from asynctm.peers import make_peer

    if runner["peer"] == "pytm_parallel":
        from asynctm.baselines.pytm_parallel import PyTMParallelPeer

        python = parallel_python(args)
        if not python.exists():
            raise FileNotFoundError(f"{python} does not exist: build pyTsetlinMachineParallel's environment with "
                                    f"`bash benchmarks/{PARALLEL_SETUP.name}` (or pass --setup-pytm-parallel)")
        return PyTMParallelPeer(task, seed=seed, python=python, worker=PARALLEL_WORKER, **hp, **runner["options"])
    return make_peer(runner["peer"], task, seed=seed, **hp, **runner["options"])


def train_seed(task: str, data: dict, dense: dict, plan: list[dict], hp: dict, seed: int, epochs: int,
               evaluate: str, args) -> tuple[list[dict], list[dict]]:
    """Every planned implementation with one seed: a warm-up epoch, then ``epochs`` timed epochs round-robin.
    Returns (per-implementation results, skipped). ``dense``: the dense copies that pyTM peers get."""
    runners, skipped = [], []
    for r in plan:
        try:
            peer = build_peer(r, task, hp, seed, args)
        except Exception as exc:  # noqa: BLE001 - a missing library or device is reported, not fatal
            skipped.append({"label": r["label"], "reason": f"{type(exc).__name__}: {exc}"})
            print(f"   skipped {r['label']} (seed {seed}): {exc}", flush=True)
            continue
        # Each library gets the input it takes: ours and the worker-based peer the (possibly sparse) X; the
        # in-process pyTM peers one shared dense uint8 copy, made once per setting outside any timing.
        src = dense if r["peer"] in ("pytm", "pytm_cuda") else data
        runners.append({**r, "obj": peer, "X_train": src["X_train"], "X_test": src["X_test"],
                        "epoch_s": [], "epoch_cpu_s": [], "epoch_outer_s": [], "load1": [], "metric": [],
                        "eval_s": []})

    def step(r, last: bool) -> tuple:
        wall, cpu, outer = timed_epoch(r["obj"], r["X_train"], data["y_train"])
        if evaluate != "every" and not last:
            return wall, cpu, outer, None
        t0 = time.perf_counter()
        m = metric(task, data["y_test"], r["obj"].predict(r["X_test"]))
        r["eval_s"].append(time.perf_counter() - t0)  # not timed as training; recorded for planning runs
        return wall, cpu, outer, m

    def failed(r, exc) -> None:
        # Only other libraries may fail without stopping the run; an error of ours is raised.
        if r["peer"] == "asynctm":
            raise exc
        skipped.append({"label": r["label"], "reason": f"failed during training: {type(exc).__name__}: {exc}"})
        print(f"   {r['label']} (seed {seed}) failed: {exc}", flush=True)
        r["obj"].close()
        r["failed"] = True

    # Warm-up epoch: one-time costs (kernel compilation, encoding, GPU context, worker start) land here.
    for r in runners:
        try:
            wall, cpu, outer, m = step(r, last=False)
        except Exception as exc:  # noqa: BLE001
            failed(r, exc)
            continue
        r["warmup_s"], r["warmup_cpu_s"], r["warmup_metric"] = wall, cpu, m
    runners = [r for r in runners if not r.get("failed")]
    for epoch in range(epochs):
        for r in runners:  # round-robin: load from elsewhere hits every implementation alike
            if r.get("failed"):
                continue
            try:
                wall, cpu, outer, m = step(r, last=epoch == epochs - 1)
            except Exception as exc:  # noqa: BLE001
                failed(r, exc)
                continue
            r["epoch_s"].append(wall)
            r["epoch_cpu_s"].append(cpu)
            if outer is not None:
                r["epoch_outer_s"].append(outer)
            r["load1"].append(os.getloadavg()[0])
            r["metric"].append(m)
        runners = [r for r in runners if not r.get("failed")]
        print(f"   seed {seed} epoch {epoch + 1}/{epochs}: " + ", ".join(
            f"{r['label']} {r['epoch_s'][-1]:.3f}s" + (f" {r['metric'][-1]:.2f}" if r["metric"][-1] is not None
                                                         else "") for r in runners), flush=True)
    out = []
    for r in runners:
        res = {"label": r["label"], "peer": r["peer"], "options": r["options"], "metadata": r["obj"].metadata(),
               "seed": seed, "warmup_s": r["warmup_s"], "warmup_cpu_s": r["warmup_cpu_s"],
               "warmup_metric": r["warmup_metric"], "epoch_s": r["epoch_s"], "epoch_cpu_s": r["epoch_cpu_s"],
               "load1_after_epoch": r["load1"], "metric_per_epoch": r["metric"], "eval_s": r["eval_s"]}
        if r["epoch_outer_s"]:
            res["epoch_outer_s"] = r["epoch_outer_s"]
        out.append(res)
        r["obj"].close()
    return out, skipped


def _mean(values):
    values = [v for v in values if v is not None]
    return float(np.mean(values)) if values else None


def aggregate(per_seed: list[dict]) -> dict:
    """One implementation over its seeds: epochs pooled for the times, metrics averaged over seeds."""
    first = per_seed[0]
    res = {"label": first["label"], "peer": first["peer"], "options": first["options"],
           "metadata": first["metadata"], "seeds": [r["seed"] for r in per_seed],
           "warmup_s": statistics.median(r["warmup_s"] for r in per_seed),
           "warmup_cpu_s": statistics.median(r["warmup_cpu_s"] for r in per_seed),
           "warmup_metric": _mean(r["warmup_metric"] for r in per_seed),
           "epoch_s": [t for r in per_seed for t in r["epoch_s"]],
           "epoch_cpu_s": [t for r in per_seed for t in r["epoch_cpu_s"]],
           "load1_after_epoch": [v for r in per_seed for v in r["load1_after_epoch"]],
           "eval_s": [v for r in per_seed for v in r.get("eval_s", [])]}
    n_epochs = min(len(r["metric_per_epoch"]) for r in per_seed)
    res["metric_per_epoch"] = [_mean(r["metric_per_epoch"][k] for r in per_seed) for k in range(n_epochs)]
    if any("epoch_outer_s" in r for r in per_seed):
        res["epoch_outer_s"] = [t for r in per_seed for t in r.get("epoch_outer_s", [])]
    if res["epoch_s"]:
        finals = [next((m for m in reversed(r["metric_per_epoch"]) if m is not None), None) for r in per_seed]
        last3 = [_mean([m for m in r["metric_per_epoch"] if m is not None][-3:]) for r in per_seed]
        res.update(median_epoch_s=statistics.median(res["epoch_s"]), min_epoch_s=min(res["epoch_s"]),
                   max_epoch_s=max(res["epoch_s"]),
                   final_metric=_mean(finals),  # after warm-up + the timed epochs, mean over seeds
                   final_metric_per_seed=finals,
                   final_metric_std=float(np.std(finals, ddof=1)) if len(finals) > 1 else 0.0,
                   mean_metric_last3=_mean(last3),
                   cpu_per_wall=sum(res["epoch_cpu_s"]) / max(sum(res["epoch_s"]), 1e-12))
    if len(per_seed) > 1:
        res["per_seed"] = [{k: v for k, v in r.items() if k not in ("label", "peer", "options", "metadata")}
                           for r in per_seed]
    return res


def setting_sizes(spec: dict, args) -> tuple[int, int | None, int | None]:
    """Timed epochs, max_train, max_test for a setting under the command line (0 = no limit)."""
    epochs = args.epochs if args.epochs is not None else (spec["quick_epochs"] if args.quick else spec["epochs"])

    def limit(cli, quick_key, key):
        if cli is not None:
            return cli or None
        if args.quick and spec.get(quick_key) is not None:
            return spec[quick_key]
        return spec.get(key)

    return epochs, limit(args.max_train, "quick_max_train", "max_train"), limit(args.max_test, "quick_max_test",
                                                                               "max_test")


def run_setting(name: str, args, seed: int, threads: list[int], peers: set[str], gpu: bool) -> dict:
    spec = SETTINGS[name]
    task = spec["task"]
    epochs, max_train, max_test = setting_sizes(spec, args)
    evaluate = args.eval or spec.get("evaluate", "every")
    seeds = list(getattr(args, "seeds_list", None) or [seed])
    t_load = time.perf_counter()
    data, source = LOADERS[name](Path(args.data_mirror), Path(getattr(args, "raw_cache", DEFAULT_RAW_CACHE)))
    data = subsample(data, max_train, max_test, seed)
    load_s = time.perf_counter() - t_load
    X_train, y_train, X_test, y_test = data["X_train"], data["y_train"], data["X_test"], data["y_test"]
    hp = {**spec["hyperparameters"], **COMMON_HYPERPARAMETERS}
    plan = planned_runners(task, threads, peers, gpu, getattr(args, "parallel_threads", None))
    dense = data
    if sp.issparse(X_train) and any(r["peer"] in ("pytm", "pytm_cuda") for r in plan):
        dense = {"X_train": dense_uint8(X_train), "X_test": dense_uint8(X_test)}
    print(f"\n== {name}: {task}, {X_train.shape[0]} train / {X_test.shape[0]} test examples, "
          f"{X_train.shape[1]} features{' (sparse)' if sp.issparse(X_train) else ''}; {hp}; 1 warm-up + {epochs} "
          f"timed epochs x seeds {seeds}; metric {evaluate}; load {os.getloadavg()[0]:.2f}", flush=True)

    load_before = os.getloadavg()
    by_label: dict[str, list[dict]] = {}
    skipped: dict[str, dict] = {}
    for s in seeds:
        results, skip = train_seed(task, data, dense, plan, hp, s, epochs, evaluate, args)
        for r in results:
            by_label.setdefault(r["label"], []).append(r)
        for sk in skip:
            skipped.setdefault(sk["label"], {**sk, "seeds": []})["seeds"].append(s)
    load_after = os.getloadavg()
    results = [aggregate(by_label[r["label"]]) for r in plan if r["label"] in by_label]

    return {
        "setting": name,
        "task": task,
        "metric": "test accuracy (%)" if task == "classification" else "test MAE (target units)",
        "dataset": {"description": spec["dataset"], "source": source,
                    "n_train": int(X_train.shape[0]), "n_test": int(X_test.shape[0]),
                    "n_features": int(X_train.shape[1]), "max_train": max_train, "max_test": max_test,
                    "sparse": bool(sp.issparse(X_train)),
                    "subsample": f"seeded draw without replacement (seed {seed}), kept in file order" if (
                        max_train is not None or max_test is not None) else None,
                    "digest": array_digest(X_train=X_train, y_train=y_train, X_test=X_test, y_test=y_test),
                    "load_and_featurise_s": load_s},
        "hyperparameters": hp,
        "epochs": {"warmup": 1, "timed": epochs, "total_per_implementation": epochs + 1},
        "seeds": seeds,
        "evaluate": evaluate,
        "load_average_before": list(load_before),
        "load_average_after": list(load_after),
        "skipped": list(skipped.values()),
        "results": results,
        "comparison": compare(task, results, spec.get("goal")),
    }


# --- comparison -------------------------------------------------------------------------------------------

def metric_ok(task: str, ours: float | None, peer: float | None) -> bool | None:
    """Equal accuracy in the speed goals' sense, or better: accuracy at most 1 point below the peer's, or an MAE at
    most 2 % above it."""
    if ours is None or peer is None:
        return None
    if task == "classification":
        return ours >= peer - ACCURACY_TOLERANCE_POINTS
    return ours <= peer * (1.0 + MAE_TOLERANCE_RELATIVE)


def metric_within(task: str, ours: float | None, peer: float | None) -> bool | None:
    """Equal within the tolerance on both sides (neither better nor worse by more than it)."""
    if ours is None or peer is None:
        return None
    if task == "classification":
        return abs(ours - peer) <= ACCURACY_TOLERANCE_POINTS
    return abs(ours - peer) <= MAE_TOLERANCE_RELATIVE * abs(peer)


def _ours_cpu(results: list[dict]) -> list[dict]:
    return sorted((r for r in results if r["peer"] == "asynctm" and r["options"].get("backend") == "cpu"
                   and "median_epoch_s" in r), key=lambda r: r["options"].get("n_threads") or 0)


def goal_check(task: str, results: list[dict], goal: dict | None) -> dict | None:
    """The CPU speed goal for a setting: ours on all cores (the most threads run) at least ``min_speedup`` times
    faster per median epoch than ``peer``, at equal accuracy (:func:`metric_ok`). Every CPU row of ours is
    also checked (``by_implementation``); ``met`` is the all-cores row's verdict."""
    if not goal:
        return None
    out = {"peer": goal["peer"], "min_speedup": goal["min_speedup"],
           "rule": ("median epoch of ours on all cores vs the peer; accuracy at most "
                    f"{ACCURACY_TOLERANCE_POINTS:g} point below the peer's" if task == "classification" else
                    f"median epoch of ours on all cores vs the peer; MAE at most {MAE_TOLERANCE_RELATIVE:.0%} above "
                    "the peer's") + " (mean over seeds, after the same epochs)"}
    peer = next((r for r in results if r["label"] == goal["peer"] and "median_epoch_s" in r), None)
    ours = _ours_cpu(results)
    if peer is None or not ours:
        out.update(evaluated=False, met=None,
                   reason=f"no timed row for {goal['peer']}" if peer is None else "no timed CPU row of ours")
        return out
    rows = {}
    for r in ours:
        speedup = peer["median_epoch_s"] / r["median_epoch_s"]
        ok = metric_ok(task, r["final_metric"], peer["final_metric"])
        rows[r["label"]] = {"threads": r["options"].get("n_threads"), "speedup": speedup,
                            "speed_met": speedup >= goal["min_speedup"], "metric": r["final_metric"],
                            "metric_ok": ok, "metric_within_tolerance": metric_within(task, r["final_metric"],
                                                                                      peer["final_metric"]),
                            "met": bool(speedup >= goal["min_speedup"] and ok)}
    main = ours[-1]
    out.update(evaluated=True, ours_label=main["label"], peer_median_epoch_s=peer["median_epoch_s"],
               peer_metric=peer["final_metric"], by_implementation=rows, **{
                   k: rows[main["label"]][k] for k in ("speedup", "speed_met", "metric", "metric_ok", "met")})
    return out


def compare(task: str, results: list[dict], goal: dict | None = None) -> dict:
    """Speed-ups against pyTM indexed (or the RTM) by median epoch time, metric differences, and the goal."""
    by = {r["label"]: r for r in results if "median_epoch_s" in r}
    base_label = "pyTM indexed" if task == "classification" else "pyTM RTM (no index)"
    base = by.get(base_label)
    out = {"baseline": base_label, "speedup_vs_baseline": {}, "metric_minus_baseline": {}}
    out["goal"] = goal_check(task, results, goal)
    if base is None:
        return out
    for label, r in by.items():
        out["speedup_vs_baseline"][label] = base["median_epoch_s"] / r["median_epoch_s"]
        out["metric_minus_baseline"][label] = (None if r["final_metric"] is None or base["final_metric"] is None
                                               else r["final_metric"] - base["final_metric"])
    if task == "classification":
        # The first speed round's goals (apple: >= 4x), kept for the records that README.md quotes.
        ours = {r["label"]: r for r in _ours_cpu(results)}
        if ours:
            best = min(ours.values(), key=lambda r: r["median_epoch_s"])
            one = next((r for r in ours.values() if r["options"].get("n_threads") == 1), None)
            diff = (None if best["final_metric"] is None or base["final_metric"] is None
                    else best["final_metric"] - base["final_metric"])
            out["goals"] = {
                "cpu_at_least_4x_vs_pytm_indexed": base["median_epoch_s"] / best["median_epoch_s"] >= 4.0,
                "best_cpu_label": best["label"],
                "accuracy_minus_pytm_indexed": diff,
                "accuracy_within_1_point": None if diff is None else abs(diff) <= 1.0,
                "accuracy_not_more_than_1_point_lower": None if diff is None else diff >= -1.0,
                "single_thread_faster_than_pytm_indexed": (
                    None if one is None else one["median_epoch_s"] < base["median_epoch_s"]),
            }
    return out


# --- output -----------------------------------------------------------------------------------------------

def _fmt(v, spec: str, missing: str = "-") -> str:
    return missing if v is None else format(v, spec)


def print_table(setting: dict) -> None:
    task = setting["task"]
    m = "acc %" if task == "classification" else "MAE"
    cmp_ = setting["comparison"]["speedup_vs_baseline"]
    head = f"{'implementation':<22} {'warm-up s':>9} {'median s/ep':>11} {'min-max s':>15} {'x vs base':>9} " \
           f"{m + ' final':>10} {m + ' last3':>10} {'cpu/wall':>8}"
    seeds = setting.get("seeds", [None])
    print(f"\n{setting['setting']} ({setting['dataset']['n_train']} train, {setting['epochs']['timed']} timed epochs"
          f"{f' x {len(seeds)} seeds, metrics mean over seeds' if len(seeds) > 1 else ''}; "
          f"load avg before {setting['load_average_before'][0]:.2f}, after {setting['load_average_after'][0]:.2f}; "
          f"baseline {setting['comparison']['baseline']})")
    print(head)
    print("-" * len(head))
    for r in setting["results"]:
        if "median_epoch_s" not in r:
            continue
        sp_ = cmp_.get(r["label"])
        print(f"{r['label']:<22} {r['warmup_s']:>9.3f} {r['median_epoch_s']:>11.3f} "
              f"{r['min_epoch_s']:>7.3f}-{r['max_epoch_s']:<7.3f} {(f'{sp_:.2f}' if sp_ else '-'):>9} "
              f"{_fmt(r['final_metric'], '.2f'):>10} {_fmt(r['mean_metric_last3'], '.2f'):>10} "
              f"{r['cpu_per_wall']:>8.2f}")
    for s in setting["skipped"]:
        print(f"{s['label']:<22} skipped: {s['reason']}")
    goal = setting["comparison"].get("goal")
    if goal:
        if goal.get("evaluated"):
            print(f"goal: {goal['ours_label']} >= {goal['min_speedup']:g}x {goal['peer']}: {goal['speedup']:.1f}x "
                  f"({'met' if goal['speed_met'] else 'not met'}); metric {_fmt(goal['metric'], '.2f')} vs "
                  f"{_fmt(goal['peer_metric'], '.2f')} ({'ok' if goal['metric_ok'] else 'NOT equal'}) -> "
                  f"{'MET' if goal['met'] else 'NOT MET'}")
        else:
            print(f"goal: >= {goal['min_speedup']:g}x {goal['peer']}: not evaluated ({goal.get('reason')})")


def _row_name(r: dict) -> str:
    if r["peer"] == "asynctm" and r["options"].get("backend") == "cpu":
        n = r["options"].get("n_threads")
        return f"ours, {n} thread{'s' if n != 1 else ''}"
    if r["peer"] == "asynctm":
        return "ours, CUDA"
    if r["peer"] == "pytm_parallel":
        return "pyTMParallel"
    return r["label"]


def _row_order(r: dict) -> tuple:
    order = {"asynctm": 0, "pytm": 1, "pytm_parallel": 2, "pytm_cuda": 3}
    return (order.get(r["peer"], 9), r["options"].get("backend") == "cuda", r["options"].get("n_threads") or 0,
            not r["options"].get("indexed", False))


def markdown(record: dict) -> str:
    """The Markdown table of a benchmark record: per setting one row per implementation."""
    cpu, git = record.get("cpu") or {}, record.get("git") or {}
    commit = git.get("commit") or "?"
    dirty = git.get("tracked_files_modified")
    lines = [f"# CPU speed per epoch: `{record.get('name', '?')}`", ""]
    lines.append(f"- date (UTC): {record.get('date_utc', '?')}; commit `{commit[:12]}`"
                 + (f" ({dirty} tracked files modified)" if dirty else ""))
    lines.append(f"- CPU: {cpu.get('model', '?')}, {cpu.get('logical_cores', '?')} logical cores, "
                 f"{cpu.get('usable_cores', '?')} usable")
    lines.append(f"- load average (1/5/15 min): start {_loads(record.get('load_average_start'))}, end "
                 f"{_loads(record.get('load_average_end'))}")
    lines.append(f"- command: `{' '.join(record.get('command', []))}`")
    lines.append(f"- seeds {record.get('seeds', [record.get('seed')])}; median over all seeds' timed epochs "
                 "(after 1 warm-up epoch each); metrics are means over seeds after the same epochs")
    lines.append("- speed-up = the goal's peer's median s/epoch / this row's; goal and met? apply to our rows "
                 "(the goal reads the all-cores row); met? = speed-up >= goal and equal accuracy "
                 f"(at most {ACCURACY_TOLERANCE_POINTS:g} point below the peer, or MAE at most "
                 f"{MAE_TOLERANCE_RELATIVE:.0%} above it)")
    lines.append("")
    for s in record.get("settings", []):
        task = s["task"]
        goal = s["comparison"].get("goal") or {}
        peer_label = goal.get("peer") or s["comparison"].get("baseline")
        peer = next((r for r in s["results"] if r["label"] == peer_label and "median_epoch_s" in r), None)
        mname = "acc %" if task == "classification" else "MAE"
        hp = s["hyperparameters"]
        d = s["dataset"]
        lines += [f"## {s['setting']}", "",
                  f"{d['description']}. {d['n_train']:,} train / {d['n_test']:,} test examples"
                  + (" (subsampled)" if d.get("subsample") else "") + f", {d['n_features']:,} features; "
                  f"{hp['n_clauses']} clauses, T = {hp['T']}, s = {hp['s']}; 1 warm-up + {s['epochs']['timed']} "
                  f"timed epochs x {len(s.get('seeds', [0]))} seed(s); test metric after "
                  f"{'the last epoch only' if s.get('evaluate') == 'final' else 'every epoch'}; "
                  f"load average before {s['load_average_before'][0]:.2f}, after {s['load_average_after'][0]:.2f}.",
                  "",
                  (f"| implementation | threads | median s/epoch | speed-up vs {peer_label} | goal | met? | "
                   f"{mname} (mean over seeds) | vs {peer_label} |"),
                  "|---|---|---|---|---|---|---|---|"]
        for r in sorted(s["results"], key=_row_order):
            if "median_epoch_s" not in r:
                continue
            threads = r["metadata"].get("threads") or r["options"].get("n_threads") or "-"
            speedup = peer["median_epoch_s"] / r["median_epoch_s"] if peer else None
            g = (goal.get("by_implementation") or {}).get(r["label"])
            goal_txt = f">= {goal['min_speedup']:g}x" if g else ""
            if g:
                met = "**yes**" if g["met"] else "no (" + ", ".join(
                    w for w, bad in (("speed", not g["speed_met"]), ("accuracy" if task == "classification" else
                                                                       "MAE", g["metric_ok"] is False)) if bad) + ")"
            else:
                met = "(goal's peer)" if r["label"] == peer_label else ""
            m = r["final_metric"]
            if peer and r["label"] != peer_label and m is not None and peer["final_metric"] is not None:
                delta = m - peer["final_metric"]
                vs = f"{delta:+.2f}" if task == "classification" else f"{delta / peer['final_metric']:+.1%}"
            else:
                vs = ""
            spread = f" ± {r['final_metric_std']:.2f}" if r.get("final_metric_std") else ""
            lines.append(f"| {_row_name(r)} | {threads} | {r['median_epoch_s']:.3f} | "
                         f"{_fmt(speedup, '.2f')}x | {goal_txt} | {met} | {_fmt(m, '.2f')}{spread} | {vs} |")
        for sk in s["skipped"]:
            lines.append(f"| {sk['label']} | | skipped | | | | | {sk['reason'][:200].replace('|', '/')} |")
        if goal.get("evaluated"):
            main = next(r for r in s["results"] if r["label"] == goal["ours_label"])
            lines += ["", (f"Goal: {_row_name(main)} >= {goal['min_speedup']:g}x {goal['peer']} at equal accuracy: "
                           f"{goal['speedup']:.1f}x, {mname} {_fmt(goal['metric'], '.2f')} vs "
                           f"{_fmt(goal['peer_metric'], '.2f')}: **{'met' if goal['met'] else 'not met'}**.")]
        elif goal:
            lines += ["", f"Goal >= {goal['min_speedup']:g}x {goal['peer']}: not evaluated ({goal.get('reason')})."]
        lines.append("")
    return "\n".join(lines)


def _loads(v) -> str:
    return "-" if not v else " / ".join(f"{x:.2f}" for x in v)


def write_json(path: Path, record: dict) -> None:
    from asynctm.io import write_json_atomic

    write_json_atomic(path, record, sort_keys=False)


def write_markdown(path: Path, record: dict) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(markdown(record))
    os.replace(tmp, path)


# --- command line -------------------------------------------------------------------------------------------

def _int_list(text: str, what: str, p) -> list[int]:
    try:
        return [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        p.error(f"{what} must be comma-separated integers, got {text!r}")


def parse_args(argv=None):
    from asynctm.backends.cpu import default_threads

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--settings", default="apple,bike",
                   help="comma-separated, of: " + ", ".join(SETTINGS) + "; or all (= " + ",".join(ALL_SETTINGS) + ")")
    p.add_argument("--epochs", type=int, default=None,
                   help="timed epochs after the warm-up epoch (default per setting: apple 10, bike 5, semeval 2, "
                        "imdb 2; --quick: 2, 2, 1, 1)")
    p.add_argument("--threads", default=None,
                   help=f"thread counts for our CPU build, comma-separated (default: 1,{default_threads()})")
    p.add_argument("--seed", type=int, default=42,
                   help="the subsample draw, and the training seed unless --seeds is given (default 42)")
    p.add_argument("--seeds", default=None,
                   help="training seeds, comma-separated (e.g. 0,1,2): every implementation trains once per seed; "
                        "times pooled, metrics averaged over seeds (default: --seed)")
    p.add_argument("--quick", action="store_true", help="few epochs and subsampled data (smoke test)")
    p.add_argument("--max-train", type=int, default=None,
                   help="subsample the training set to N rows (recorded; 0: all rows; default per setting: imdb 1000)")
    p.add_argument("--max-test", type=int, default=None,
                   help="subsample the test set to N rows (recorded; 0: all rows; default per setting: imdb 1000)")
    p.add_argument("--eval", choices=("every", "final"), default=None,
                   help="test metric after every epoch or after the last only (default per setting: imdb final, "
                        "others every)")
    p.add_argument("--peers", default=DEFAULT_PEERS,
                   help="which implementations: asynctm (CPU), pytm, pytm_parallel, asynctm_cuda, pytm_cuda (GPU ones "
                        "only when a GPU is present)")
    p.add_argument("--parallel-threads", type=int, default=None,
                   help=f"OpenMP threads of pyTsetlinMachineParallel (default: all usable cores, {default_threads()})")
    p.add_argument("--pytm-parallel-python",
                   default=os.environ.get("ASYNCTM_PYTM_PARALLEL_PYTHON", str(PARALLEL_VENV / "bin" / "python")),
                   help="python of pyTsetlinMachineParallel's own environment (default: $ASYNCTM_PYTM_PARALLEL_PYTHON "
                        "or benchmarks/.venv-pytmparallel/bin/python)")
    p.add_argument("--setup-pytm-parallel", action="store_true",
                   help="build that environment first (benchmarks/setup_pytm_parallel.sh) when it is missing")
    p.add_argument("--data-mirror", default=str(default_mirror()),
                   help="the raw dataset mirror (default: $ASYNCTM_DATA_MIRROR or <repo>/../shared/datasets)")
    p.add_argument("--raw-cache", default=str(DEFAULT_RAW_CACHE),
                   help="where semeval / imdb raw files are unpacked from the mirror and verified "
                        "(default benchmarks/.cache/raw)")
    p.add_argument("--out-dir", default=str(DEFAULT_OUT))
    p.add_argument("--name", default=None, help="results file name without .json / .md (default from the settings)")
    args = p.parse_args(argv)
    names = [s.strip() for s in args.settings.split(",") if s.strip()]
    args.settings_list = []
    for s in names:
        for t in (ALL_SETTINGS if s == "all" else (s,)):
            if t not in SETTINGS:
                p.error(f"unknown setting {t!r}; known: {', '.join(SETTINGS)}, all")
            if t not in args.settings_list:
                args.settings_list.append(t)
    if not args.settings_list:
        p.error("--settings is empty")
    if args.epochs is not None and args.epochs < 1:
        p.error("--epochs must be >= 1")
    for opt in ("max_train", "max_test"):
        if getattr(args, opt) is not None and getattr(args, opt) < 0:
            p.error(f"--{opt.replace('_', '-')} must be >= 0 (0: all rows)")
    threads = _int_list(args.threads, "--threads", p) if args.threads else [1, default_threads()]
    args.threads_list = sorted(set(threads))
    if not args.threads_list or any(t < 1 for t in args.threads_list):
        p.error("--threads must be positive")
    if args.parallel_threads is None:
        args.parallel_threads = default_threads()
    elif args.parallel_threads < 1:
        p.error("--parallel-threads must be positive")
    args.seeds_list = _int_list(args.seeds, "--seeds", p) if args.seeds else [args.seed]
    if not args.seeds_list or len(set(args.seeds_list)) != len(args.seeds_list):
        p.error("--seeds must list distinct integers")
    args.peers_set = {s.strip() for s in args.peers.split(",") if s.strip()}
    known = {"asynctm", "pytm", "pytm_parallel", "asynctm_cuda", "pytm_cuda"}
    if args.peers_set - known:
        p.error(f"unknown peers {sorted(args.peers_set - known)}; known: {', '.join(sorted(known))}")
    return args


def default_name(args, gpu: bool) -> str:
    base = "all" if args.settings_list == list(ALL_SETTINGS) else "_".join(args.settings_list)
    return (base + ("_quick" if args.quick else "") + ("_gpu" if gpu else "")
            + (f"_{len(args.seeds_list)}seeds" if len(args.seeds_list) > 1 else ""))


def main(argv=None) -> int:
    args = parse_args(argv)
    from asynctm.backends import cuda_available

    gpu = cuda_available()
    name = args.name or default_name(args, gpu)
    record = {
        "generated_by": "benchmarks/bench_tm.py",
        "name": name,
        "command": [Path(sys.argv[0]).name, *(sys.argv[1:] if argv is None else argv)],
        "date_utc": datetime.now(UTC).strftime("%Y-%m-%d"),
        "time_utc": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "git": git_info(),
        "code": code_digests(),
        "versions": versions(),
        "cpu": cpu_info(),
        "gpu": gpu_info(),
        "threads": {"asynctm_cpu": args.threads_list, "pyTsetlinMachine": 1,
                    "pyTsetlinMachineParallel": args.parallel_threads if "pytm_parallel" in args.peers_set else None,
                    "env": {k: v for k, v in os.environ.items() if k.startswith(("OMP_", "ASYNCTM_", "GOMP_"))}},
        "seed": args.seed,
        "seeds": args.seeds_list,
        "quick": args.quick,
        "timing": "wall clock per fit_epoch call (library fit(X, y, epochs=1, incremental=True); "
                  "pyTsetlinMachineParallel timed inside its worker process); one warm-up epoch per implementation "
                  "and seed reported apart; timed epochs round-robin across implementations; median over all "
                  "seeds' timed epochs; test metric outside the timed region, mean over seeds",
        "load_average_start": list(os.getloadavg()),
        "settings": [],
    }
    for s in args.settings_list:
        setting = run_setting(s, args, args.seed, args.threads_list, args.peers_set, gpu)
        record["settings"].append(setting)
        print_table(setting)
    record["load_average_end"] = list(os.getloadavg())
    out = Path(args.out_dir) / f"{name}.json"
    write_json(out, record)
    write_markdown(out.with_suffix(".md"), record)
    print(f"\nwrote {out} and {out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
