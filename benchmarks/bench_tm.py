#!/usr/bin/env python
"""Per-epoch training time and test accuracy (or MAE) of our Tsetlin Machine against the paper's baselines.

One command, one process, per setting: our CPU build with 1 thread and with all cores, pyTsetlinMachine
``indexed=True`` and ``indexed=False`` (1 thread, as in the paper), pyTsetlinMachineParallel on all cores (in
a worker process run by its own virtual environment, ``benchmarks/setup_pytm_parallel.sh``), and, when a CUDA
GPU is present, our CUDA backend and PyTsetlinMachineCUDA. Identical hyperparameters and data for all
(mapping and the differences by design: :mod:`asynctm.peers`). Prints a table and writes
``benchmarks/results/<name>.json``, then its Markdown table ``<name>.md`` (``benchmarks/report.py``, which
renders it again from the JSON alone).

    python benchmarks/bench_tm.py                          # apple and bike, default epochs
    python benchmarks/bench_tm.py --settings all --seeds 0,1,2   # all four settings (the speed goals' table)
    python benchmarks/bench_tm.py --settings apple --epochs 20
    python benchmarks/bench_tm.py --quick                  # a smoke run: few epochs, subsampled data

Settings: ``apple`` (experiment ``wsd_apple``), ``bike`` (``bike_sharing``, regression), ``semeval``
(``semeval``, the authors' preparation, 102,176 sparse features) and ``imdb`` (``imdb``, 5,000 n-gram
features, subsampled by default); ``all`` is the four. Their data are the processed datasets of the pipeline
(``<data-dir>/processed/<dataset>/<protocol>``, ``snakemake --cores all data``) and their hyperparameters
the experiment's in ``config/config.yaml`` (:func:`asynctm.experiments.plan.experiment`); only what is the
benchmark's own is here: epochs timed, subsamples, when the metric is taken, and the speed goal against one
peer (``goal``).

Timing: wall clock (``time.perf_counter``) around one ``fit_epoch`` call, i.e. the library's
``fit(X, y, epochs=1, incremental=True)``, which is how the paper's authors drove pyTsetlinMachine
(pyTsetlinMachineParallel: timed the same way inside its worker). Each implementation first trains one
warm-up epoch (reported apart: it includes one-time costs such as compiling our kernels or encoding the
data); then the timed epochs run *round-robin* (epoch k of every implementation, then epoch k+1), so a burst
of load from elsewhere hits all implementations alike. With ``--seeds`` every implementation does this once
per seed; the median epoch is over all seeds' timed epochs and the metric is the mean over seeds after the
same number of epochs. The test metric is taken outside the timed region, after every epoch (``--eval
every``) or after the last one only (``--eval final``, the default for IMDb, where pyTM's predict is slow).
See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
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

from asynctm.provenance import code_digests, cpu_info, git_info, gpu_info, versions

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))  # report.py beside this script, also when it is loaded from elsewhere (tests)
import report

DEFAULT_OUT = HERE / "results"
DEFAULT_CONFIG = REPO / "config" / "config.yaml"
PARALLEL_VENV = HERE / ".venv-pytmparallel"  # git-ignored: built by setup_pytm_parallel.sh
PARALLEL_SETUP = HERE / "setup_pytm_parallel.sh"
PARALLEL_WORKER = HERE / "pytm_parallel_worker.py"

# The benchmark's own settings; dataset and hyperparameters are the experiment's (config/config.yaml).
# epochs / quick_epochs: timed epochs after the warm-up; max_train / max_test (and their --quick values): the
# default subsample (None: all rows); evaluate: test metric after "every" epoch or the "final" one only; goal:
# the CPU speed goal (median epoch of ours on all cores against the peer on one thread, at equal accuracy:
# report.metric_ok).
SETTINGS = {
    "apple": {"experiment": "wsd_apple", "epochs": 10, "quick_epochs": 2, "max_train": None, "max_test": None,
              "evaluate": "every", "goal": {"peer": "pyTM indexed", "min_speedup": 25.0}},
    "bike": {"experiment": "bike_sharing", "epochs": 5, "quick_epochs": 2, "quick_max_train": 2000,
             "max_train": None, "max_test": None, "evaluate": "every",
             "goal": {"peer": "pyTM RTM (no index)", "min_speedup": 10.0}},
    # pyTM indexed: ~60-100 s an epoch on the 6,000 training sentences
    "semeval": {"experiment": "semeval", "epochs": 2, "quick_epochs": 1, "quick_max_train": 500,
                "quick_max_test": 500, "max_train": None, "max_test": None, "evaluate": "every",
                "goal": {"peer": "pyTM indexed", "min_speedup": 40.0}},
    # pyTM indexed ~0.1 s per example and epoch: ~4-5 min for 1 + 2 epochs on 1,000 reviews
    "imdb": {"experiment": "imdb", "epochs": 2, "quick_epochs": 1, "quick_max_train": 200, "quick_max_test": 200,
             "max_train": 1000, "max_test": 1000, "evaluate": "final",
             "goal": {"peer": "pyTM indexed", "min_speedup": 25.0}},
}
ALL_SETTINGS = ("apple", "bike", "semeval", "imdb")
DEFAULT_PEERS = "asynctm,pytm,pytm_parallel,asynctm_cuda,pytm_cuda"
TM_SETTINGS = ("state_bits", "boost_true_positive", "append_negated", "batch_size")


# --- data and hyperparameters: the pipeline's --------------------------------------------------------------

def experiment(config: dict, name: str) -> dict:
    """The experiment a setting runs, from the loaded configuration."""
    from asynctm.experiments import plan

    return plan.experiment(config, SETTINGS[name]["experiment"])


def hyperparameters(exp: dict) -> dict:
    """Our hyperparameter names (:func:`asynctm.peers.make_peer`) for an experiment's main setting."""
    return {"n_clauses": int(exp["clauses"]), "T": int(exp["T"]), "s": float(exp["s"]),
            **{k: exp[k] for k in TM_SETTINGS}}


def load_data(exp: dict, data_dir: Path) -> tuple[dict, dict, str]:
    """The experiment's processed dataset from the registry's folder below ``data_dir``: ``(arrays, source,
    description)``."""
    from asynctm.experiments.run import load_dataset

    ds = load_dataset(data_dir, {"dataset": exp["dataset"], "protocol": exp["protocol"]})
    y_dtype = np.float64 if exp["task"] == "regression" else None
    data = {"X_train": ds.X_train, "y_train": np.asarray(ds.y_train, dtype=y_dtype),
            "X_test": ds.X_test, "y_test": np.asarray(ds.y_test, dtype=y_dtype)}
    folder = Path(data_dir) / "processed" / ds.name / ds.protocol
    source = {"dataset": ds.name, "protocol": ds.protocol, "folder": str(folder),
              "raw_digest": ds.meta.get("raw_digest"), "rows": int(len(data["y_train"]) + len(data["y_test"])),
              "n_features": int(ds.X_train.shape[1]), "sparse": bool(sp.issparse(ds.X_train)),
              "preparation": ds.meta.get("preparation"), "split": ds.meta.get("split")}
    about = ds.meta.get("split") or ds.meta.get("preparation")
    description = f"{ds.name}, protocol {ds.protocol} (asynctm.datasets, {folder})" + (
        f": {str(about).rstrip('.')}" if about else "")
    return data, source, description


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




def run_setting(name: str, args, config: dict, gpu: bool) -> dict:
    spec = SETTINGS[name]
    exp = experiment(config, name)
    task = exp["task"]
    epochs, max_train, max_test = setting_sizes(spec, args)
    evaluate = args.eval or spec.get("evaluate", "every")
    seeds, seed = list(args.seeds_list), args.seed
    t_load = time.perf_counter()
    data, source, description = load_data(exp, Path(args.data_dir))
    data = subsample(data, max_train, max_test, seed)
    load_s = time.perf_counter() - t_load
    X_train, y_train, X_test, y_test = data["X_train"], data["y_train"], data["X_test"], data["y_test"]
    hp = hyperparameters(exp)
    plan = planned_runners(task, args.threads_list, args.peers_set, gpu, args.parallel_threads)
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
        "dataset": {"description": description, "source": source,
                    "n_train": int(X_train.shape[0]), "n_test": int(X_test.shape[0]),
                    "n_features": int(X_train.shape[1]), "max_train": max_train, "max_test": max_test,
                    "sparse": bool(sp.issparse(X_train)),
                    "subsample": f"seeded draw without replacement (seed {seed}), kept in file order" if (
                        max_train is not None or max_test is not None) else None,
                    "digest": array_digest(X_train=X_train, y_train=y_train, X_test=X_test, y_test=y_test),
                    "load_s": load_s},
        "hyperparameters": hp,
        "epochs": {"warmup": 1, "timed": epochs, "total_per_implementation": epochs + 1},
        "seeds": seeds,
        "evaluate": evaluate,
        "load_average_before": list(load_before),
        "load_average_after": list(load_after),
        "skipped": list(skipped.values()),
        "results": results,
        "comparison": report.compare(task, results, spec.get("goal")),
    }




def write_json(path: Path, record: dict) -> None:
    from asynctm.io import write_json_atomic

    write_json_atomic(path, record, sort_keys=False)



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
    p.add_argument("--data-dir", default="data",
                   help="the pipeline's data folder: processed datasets in <data-dir>/processed/<dataset>/<protocol> "
                        "(default data; `snakemake --cores all data` prepares them)")
    p.add_argument("--config", default=str(DEFAULT_CONFIG),
                   help="the pipeline configuration whose experiments give the hyperparameters "
                        "(default config/config.yaml)")
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
    from asynctm.backends import cuda_available
    from asynctm.config_check import ConfigError, load_config

    args = parse_args(argv)
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        raise SystemExit(str(exc)) from None
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
        "config": str(args.config),
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
        setting = run_setting(s, args, config, gpu)
        record["settings"].append(setting)
        report.print_table(setting)
    record["load_average_end"] = list(os.getloadavg())
    out = Path(args.out_dir) / f"{name}.json"
    write_json(out, record)
    report.write_markdown(out.with_suffix(".md"), record)
    print(f"\nwrote {out} and {out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
