"""The CPU benchmark's measurements (``benchmarks/bench_tm.py``): per-epoch training time and test metric of
our Tsetlin Machine and the paper's baselines on one setting, with identical hyperparameters and data.

One setting (:func:`run_setting`) reads an experiment's processed dataset through the dataset registry
(:func:`load_data`), subsamples it (:func:`subsample`), builds every planned implementation
(:func:`planned_runners`, :func:`build_peer`: our CPU build, pyTsetlinMachine, pyTsetlinMachineParallel in a
worker process, tmu and green-tsetlin in worker processes built by the caller's factories (``Options.workers``),
and with a GPU our CUDA backend and PyTsetlinMachineCUDA) for each seed, trains one warm-up
epoch each, then the timed epochs round-robin (:func:`train_seed`), and pools the seeds (:func:`aggregate`).
What the benchmark script keeps is its own: the settings (epochs timed, subsamples, when the metric is taken,
the goals), the command line and the record around the settings. The verdicts and tables are
``benchmarks/report.py``'s. The GPU campaign's benchmark (``benchmarks/bench_gpu.py``) times our CUDA
backend against PyTsetlinMachineCUDA with this loop and this pooling (its settings and record are its own).
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import statistics
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

TM_SETTINGS = ("state_bits", "boost_true_positive", "append_negated", "batch_size")
PEERS = ("asynctm", "pytm", "pytm_parallel", "asynctm_cuda", "pytm_cuda", "tmu_cpu", "tmu_cuda", "green_tsetlin")
# Peers built by the benchmark's own code (each in a worker process of its own environment), not by this package:
# the caller passes their factories in Options.workers (benchmarks/worker_peers.py).
WORKER_PEERS = ("tmu_cpu", "tmu_cuda", "green_tsetlin")


@dataclass(frozen=True)
class ParallelEnv:
    """pyTsetlinMachineParallel's own virtual environment: its python, the worker script it runs, the script
    that builds the environment, and whether to run that script when the python is missing."""

    python: Path
    worker: Path
    setup: Path
    build_missing: bool = False


@dataclass(frozen=True)
class Options:
    """How every setting of one benchmark run is measured: the processed data's folder, training seeds, the
    seed of the subsample draw, our thread counts, which implementations, whether a GPU is present,
    pyTsetlinMachineParallel's threads and environment, and the factories of the worker peers
    (:data:`WORKER_PEERS`: ``{name: factory(task, n_clauses, T, s, seed=..., **options) -> Peer}``)."""

    data_dir: Path
    seeds: list[int]
    subsample_seed: int
    threads: list[int]
    peers: set[str] = field(default_factory=lambda: set(PEERS) - set(WORKER_PEERS))
    gpu: bool = False
    parallel_threads: int | None = None
    parallel: ParallelEnv | None = None
    workers: dict = field(default_factory=dict)


# --- data and hyperparameters: the pipeline's --------------------------------------------------------------

def hyperparameters(exp: dict) -> dict:
    """Our hyperparameter names (:func:`asynctm.peers.make_peer`) for an experiment's main setting."""
    return {"n_clauses": int(exp["clauses"]), "T": int(exp["T"]), "s": float(exp["s"]),
            **{k: exp[k] for k in TM_SETTINGS}}


def add_data_arguments(p, config_default: str) -> None:
    """The options a micro-benchmark reads its experiment and data by: ``--seed``, ``--data-dir`` and ``--config``."""
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--data-dir", default="data", help="the pipeline's data folder (processed datasets)")
    p.add_argument("--config", default=config_default)


def classification_experiment(config: str, name: str) -> dict:
    """The experiment ``name`` of the configuration file ``config``; one line and exit where it is a regression."""
    from .config_check import load_config
    from .experiments.plan import experiment

    exp = experiment(load_config(config), name)
    if exp["task"] == "regression":
        raise SystemExit(f"error: {name} is a regression experiment: choose a classification one")
    return exp


def kernel_folders(spec: str) -> list[Path]:
    """The kernel folders of ``--kernels`` (default: the one the package uses); one line and exit if one is not."""
    from .backends import kernel_dir

    folders = [Path(k).resolve() for k in spec.split(",") if k] or [Path(kernel_dir()).resolve()]
    for folder in folders:
        if not (folder / "tm.cu").is_file():
            raise SystemExit(f"error: {folder} has no tm.cu; --kernels takes kernel folders, such as a checkout's "
                             "kernels/")
    return folders


@contextlib.contextmanager
def kernels_from(folder: Path):
    """Models built inside compile the kernels of ``folder`` (``ASYNCTM_KERNEL_DIR``, read when a model builds its
    backend); the variable is as it was afterwards."""
    before = os.environ.get("ASYNCTM_KERNEL_DIR")
    os.environ["ASYNCTM_KERNEL_DIR"] = str(folder)
    try:
        yield
    finally:
        if before is None:
            del os.environ["ASYNCTM_KERNEL_DIR"]
        else:
            os.environ["ASYNCTM_KERNEL_DIR"] = before


def run_header(script: str, argv, started: time.struct_time) -> dict:
    """The fields a benchmark record starts with: its script, the command as given, when it started (UTC), the
    checkout, the library versions, the CPU and the host identity, and the load average as it ends."""
    import sys

    from .provenance import cpu_info, git_info, host_id, versions

    return {"generated_by": f"benchmarks/{Path(script).name}",
            "command": "python " + " ".join([os.path.relpath(script), *(argv if argv is not None else sys.argv[1:])]),
            "date_utc": time.strftime("%Y-%m-%d", started), "time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", started),
            "git": git_info(), "versions": versions(), "cpu": cpu_info(), "host_id": host_id(),
            "load_average_after": list(os.getloadavg())}


def write_record(default: Path, out: str | None, record: dict) -> None:
    """Writes a benchmark record to ``out`` (``default`` without it), whole or not at all, and says where."""
    from .io import write_json_atomic

    path = Path(out or default)
    write_json_atomic(path, record, sort_keys=False)
    print(f"wrote {path}")


def load_data(exp: dict, data_dir: Path) -> tuple[dict, dict, str]:
    """The experiment's processed dataset from the registry's folder below ``data_dir``: ``(arrays, source,
    description)``."""
    from .experiments.run import load_dataset

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
            plan.append({"label": f"asynctm cpu {n}t", "peer": "asynctm",
                         "options": {"backend": "cpu", "n_threads": n}})
    if "pytm" in peers:
        if task == "classification":
            plan.append({"label": "pyTM indexed", "peer": "pytm", "options": {"indexed": True}})
            plan.append({"label": "pyTM unindexed", "peer": "pytm", "options": {"indexed": False}})
        else:  # the RTM of pyTsetlinMachine has no clause index
            plan.append({"label": "pyTM RTM (no index)", "peer": "pytm", "options": {}})
    if "pytm_parallel" in peers:
        n = parallel_threads or max(threads)
        plan.append({"label": f"pyTMParallel {n}t", "peer": "pytm_parallel", "options": {"n_threads": n}})
    if "tmu_cpu" in peers:  # tmu's CPU clause bank is single-threaded
        plan.append({"label": "tmu CPU", "peer": "tmu_cpu", "options": {"n_threads": 1}})
    if "green_tsetlin" in peers:  # at each of our thread counts (Trainer n_jobs)
        for n in threads:
            plan.append({"label": f"green-tsetlin {n}t", "peer": "green_tsetlin", "options": {"n_threads": n}})
    if gpu and "asynctm_cuda" in peers:
        plan.append({"label": "asynctm cuda", "peer": "asynctm", "options": {"backend": "cuda"}})
    if gpu and "pytm_cuda" in peers:
        plan.append({"label": "PyTsetlinMachineCUDA", "peer": "pytm_cuda", "options": {}})
    if gpu and "tmu_cuda" in peers:
        plan.append({"label": "tmu CUDA", "peer": "tmu_cuda", "options": {}})
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


def parallel_python(env: ParallelEnv) -> Path:
    """The python of pyTsetlinMachineParallel's environment; built first (once per process) where it is
    missing and ``env.build_missing`` says so."""
    python = Path(env.python)
    if python.exists() or not env.build_missing:
        return python
    key = str(python)
    if key not in _PARALLEL_SETUP_TRIED:
        venv = python.parent.parent
        print(f"   building pyTsetlinMachineParallel's environment {venv} with {env.setup.name} "
              "(once; pip install numpy pyTsetlinMachineParallel==0.2.1)", flush=True)
        proc = subprocess.run(["bash", str(env.setup)], env={**os.environ, "PYTM_PARALLEL_VENV": str(venv)},
                              capture_output=True, text=True, check=False)
        _PARALLEL_SETUP_TRIED[key] = None if proc.returncode == 0 else (
            f"{env.setup.name} failed (status {proc.returncode}): {(proc.stderr or proc.stdout)[-500:]}")
    if _PARALLEL_SETUP_TRIED[key]:
        raise RuntimeError(_PARALLEL_SETUP_TRIED[key])
    return python


def build_peer(runner: dict, task: str, hp: dict, seed: int, parallel: ParallelEnv | None = None,
               workers: dict | None = None):
    """One planned implementation (:func:`planned_runners`) with the setting's hyperparameters and ``seed``;
    pyTsetlinMachineParallel runs in a worker process of its own environment ``parallel``."""
    from .peers import make_peer

    if runner["peer"] == "pytm_parallel":
        from .baselines.pytm_parallel import PyTMParallelPeer

        if parallel is None:
            raise FileNotFoundError("no pyTsetlinMachineParallel environment given")
        python = parallel_python(parallel)
        if not python.exists():
            raise FileNotFoundError(f"{python} does not exist: build pyTsetlinMachineParallel's environment with "
                                    f"`bash benchmarks/{parallel.setup.name}` (or pass --setup-pytm-parallel)")
        return PyTMParallelPeer(task, seed=seed, python=python, worker=parallel.worker, **hp, **runner["options"])
    if runner["peer"] in WORKER_PEERS:
        if runner["peer"] not in (workers or {}):
            raise FileNotFoundError(f"no factory for the worker peer {runner['peer']} (benchmarks/bench_tm.py "
                                    "passes benchmarks/worker_peers.py's)")
        return workers[runner["peer"]](task, seed=seed, **hp, **runner["options"])
    return make_peer(runner["peer"], task, seed=seed, **hp, **runner["options"])


def train_seed(task: str, data: dict, dense: dict, plan: list[dict], hp: dict, seed: int, epochs: int,
               evaluate: str, parallel: ParallelEnv | None = None, workers: dict | None = None,
               deadline: float = math.inf, finish=None) -> tuple[list[dict], list[dict]]:
    """Every planned implementation with one seed: a warm-up epoch, then ``epochs`` timed epochs round-robin, a
    round only where the last one would still end before ``deadline`` (UNIX time). Returns (per-implementation
    results, skipped). ``dense``: the dense copies that pyTM peers get; ``finish(peer)``: fields added to an
    implementation's result after its last epoch."""
    runners, skipped = [], []
    for r in plan:
        try:
            peer = build_peer(r, task, hp, seed, parallel, workers)
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
    round_s = 0.0
    for epoch in range(epochs):
        if time.time() + round_s > deadline:
            print(f"   seed {seed}: stopped after {epoch} timed epochs (the deadline)", flush=True)
            break
        t_round = time.perf_counter()
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
        round_s = time.perf_counter() - t_round
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
        if finish is not None:
            res.update(finish(r["obj"]))
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
        finals = [m for m in finals if m is not None]  # a seed stopped after its warm-up has none
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


def run_setting(name: str, exp: dict, epochs: int, max_train: int | None, max_test: int | None, evaluate: str,
                opts: Options) -> dict:
    """One setting, measured: experiment ``exp``'s processed data subsampled to ``max_train`` / ``max_test``
    rows (None: all), every planned implementation for every seed of ``opts`` (1 warm-up + ``epochs`` timed
    epochs, the test metric after ``evaluate`` = "every" epoch or the "final" one), pooled over the seeds.
    Returns the setting's part of the record without its ``comparison`` (``benchmarks/report.py`` judges)."""
    task = exp["task"]
    seeds, seed = list(opts.seeds), opts.subsample_seed
    t_load = time.perf_counter()
    data, source, description = load_data(exp, Path(opts.data_dir))
    data = subsample(data, max_train, max_test, seed)
    load_s = time.perf_counter() - t_load
    X_train, y_train, X_test, y_test = data["X_train"], data["y_train"], data["X_test"], data["y_test"]
    hp = hyperparameters(exp)
    plan = planned_runners(task, opts.threads, opts.peers, opts.gpu, opts.parallel_threads)
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
        results, skip = train_seed(task, data, dense, plan, hp, s, epochs, evaluate, opts.parallel, opts.workers)
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
    }
