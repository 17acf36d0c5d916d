#!/usr/bin/env python
"""Per-epoch training time and test accuracy (or MAE) of our Tsetlin Machine against the paper's baselines.

One command, one process, per setting: our CPU build with 1 thread and with all cores, pyTsetlinMachine
``indexed=True`` and ``indexed=False`` (1 thread, as in the paper), and, when a CUDA GPU is present, our CUDA
backend and PyTsetlinMachineCUDA. Identical hyperparameters and data for all (mapping and the differences
by design: :mod:`asynctm.baselines.pytm`). Prints a table and writes ``benchmarks/results/<name>.json``.

    python benchmarks/bench_tm.py                          # apple and bike, default epochs
    python benchmarks/bench_tm.py --settings apple --epochs 20
    python benchmarks/bench_tm.py --quick                  # a smoke run: few epochs, bike subsampled

Timing: wall clock (``time.perf_counter``) around one ``fit_epoch`` call, i.e. the library's
``fit(X, y, epochs=1, incremental=True)``, which is how the paper's authors drove pyTsetlinMachine. Each
implementation first trains one warm-up epoch (reported apart: it includes one-time costs such as compiling
our kernels or encoding the data); then the timed epochs run *round-robin* (epoch k of every implementation,
then epoch k+1), so a burst of load from elsewhere hits all implementations alike. The test metric is taken
after every epoch, outside the timed region; all implementations train the same number of epochs.
See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import os
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from asynctm.datasets.base import sha256_file
from asynctm.provenance import code_digests, cpu_info, git_info, gpu_info, gpu_present, versions

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "benchmarks" / "results"

# The paper's settings (Section 4): WSD "300, 50, 5.0" clauses per class / T / s on 3,000 stems; Bike Sharing
# "T = 1280, s = 1.5, n = 1280" on the 1,389-bit thermometer encoding.
SETTINGS = {
    "apple": {
        "task": "classification",
        "dataset": "WSD apple: the authors' apple.csv (CoarseWSD-20 balanced, train + test), first 1,784 rows "
                   "train; 3,000 Porter stems over train + test (asynctm.datasets.coarsewsd20, protocol paper)",
        "hyperparameters": {"n_clauses": 300, "T": 50, "s": 5.0},
        "epochs": 10,
        "quick_epochs": 2,
        "quick_max_train": None,
    },
    "bike": {
        "task": "regression",
        "dataset": "Bike Sharing hourly (UCI 275), 1,389-bit thermometer encoding, first 80% train "
                   "(asynctm.datasets.bike_sharing, protocol paper)",
        "hyperparameters": {"n_clauses": 1280, "T": 1280, "s": 1.5},
        "epochs": 5,
        "quick_epochs": 2,
        "quick_max_train": 2000,
    },
}
COMMON_HYPERPARAMETERS = {"state_bits": 8, "boost_true_positive": True, "append_negated": True, "batch_size": 100}
APPLE_N_TRAIN = 1784


# --- data ------------------------------------------------------------------------------------------------

def default_mirror() -> Path:
    return Path(os.environ.get("ASYNCTM_DATA_MIRROR", REPO.parent / "shared" / "datasets"))


def array_digest(**arrays) -> str:
    """sha256 over each array's name, dtype, shape and bytes, in the given order."""
    h = hashlib.sha256()
    for name, a in arrays.items():
        a = np.ascontiguousarray(a)
        h.update(f"{name}:{a.dtype.str}:{a.shape};".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def load_apple(mirror: Path) -> tuple[dict, dict]:
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


def load_bike(mirror: Path) -> tuple[dict, dict]:
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


LOADERS = {"apple": load_apple, "bike": load_bike}


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


# --- provenance ---------------------------------------------------------------------------------------------

# --- the runs ------------------------------------------------------------------------------------------------

def planned_runners(task: str, threads: list[int], peers: set[str], gpu: bool) -> list[dict]:
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
    if gpu and "asynctm_cuda" in peers:
        plan.append({"label": "asynctm cuda", "peer": "asynctm", "options": {"backend": "cuda"}})
    if gpu and "pytm_cuda" in peers:
        plan.append({"label": "PyTsetlinMachineCUDA", "peer": "pytm_cuda", "options": {}})
    return plan


def metric(task: str, y_true, y_pred) -> float:
    if task == "classification":
        return float(100.0 * np.mean(np.asarray(y_pred) == np.asarray(y_true)))
    return float(np.mean(np.abs(np.asarray(y_pred, dtype=np.float64) - np.asarray(y_true, dtype=np.float64))))


def timed_epoch(peer, X, y) -> tuple[float, float]:
    c0, t0 = time.process_time(), time.perf_counter()
    peer.fit_epoch(X, y)
    t1, c1 = time.perf_counter(), time.process_time()
    return t1 - t0, c1 - c0


def run_setting(name: str, args, seed: int, threads: list[int], peers: set[str], gpu: bool) -> dict:
    from asynctm.baselines import make_peer

    spec = SETTINGS[name]
    task = spec["task"]
    epochs = args.epochs if args.epochs is not None else (spec["quick_epochs"] if args.quick else spec["epochs"])
    max_train = args.max_train if args.max_train is not None else (spec["quick_max_train"] if args.quick else None)
    t_load = time.perf_counter()
    data, source = LOADERS[name](Path(args.data_mirror))
    data = subsample(data, max_train, args.max_test, seed)
    load_s = time.perf_counter() - t_load
    X_train, y_train, X_test, y_test = data["X_train"], data["y_train"], data["X_test"], data["y_test"]
    hp = {**spec["hyperparameters"], **COMMON_HYPERPARAMETERS}
    print(f"\n== {name}: {task}, {X_train.shape[0]} train / {X_test.shape[0]} test examples, "
          f"{X_train.shape[1]} features; {hp}; 1 warm-up + {epochs} timed epochs; load {os.getloadavg()[0]:.2f}",
          flush=True)

    runners, skipped = [], []
    for r in planned_runners(task, threads, peers, gpu):
        try:
            peer = make_peer(r["peer"], task, seed=seed, **hp, **r["options"])
        except Exception as exc:  # noqa: BLE001 - a missing library or device is reported, not fatal
            skipped.append({"label": r["label"], "reason": f"{type(exc).__name__}: {exc}"})
            print(f"   skipped {r['label']}: {exc}", flush=True)
            continue
        runners.append({**r, "obj": peer, "epoch_s": [], "epoch_cpu_s": [], "load1": [], "metric": []})

    load_before = os.getloadavg()
    # Warm-up epoch: one-time costs (kernel compilation, encoding, GPU context) land here.
    for r in runners:
        wall, cpu = timed_epoch(r["obj"], X_train, y_train)
        r["warmup_s"], r["warmup_cpu_s"] = wall, cpu
        r["warmup_metric"] = metric(task, y_test, r["obj"].predict(X_test))
    for epoch in range(epochs):
        for r in runners:  # round-robin: load from elsewhere hits every implementation alike
            wall, cpu = timed_epoch(r["obj"], X_train, y_train)
            r["epoch_s"].append(wall)
            r["epoch_cpu_s"].append(cpu)
            r["load1"].append(os.getloadavg()[0])
            r["metric"].append(metric(task, y_test, r["obj"].predict(X_test)))
        print(f"   epoch {epoch + 1}/{epochs}: " + ", ".join(
            f"{r['label']} {r['epoch_s'][-1]:.3f}s {r['metric'][-1]:.2f}" for r in runners), flush=True)
    load_after = os.getloadavg()

    results = []
    for r in runners:
        meta = r["obj"].metadata()
        res = {"label": r["label"], "peer": r["peer"], "options": r["options"], "metadata": meta,
               "warmup_s": r["warmup_s"], "warmup_cpu_s": r["warmup_cpu_s"], "warmup_metric": r["warmup_metric"],
               "epoch_s": r["epoch_s"], "epoch_cpu_s": r["epoch_cpu_s"], "load1_after_epoch": r["load1"],
               "metric_per_epoch": r["metric"]}
        if r["epoch_s"]:
            res.update(median_epoch_s=statistics.median(r["epoch_s"]), min_epoch_s=min(r["epoch_s"]),
                       max_epoch_s=max(r["epoch_s"]), final_metric=r["metric"][-1],
                       mean_metric_last3=float(np.mean(r["metric"][-3:])),
                       cpu_per_wall=sum(r["epoch_cpu_s"]) / max(sum(r["epoch_s"]), 1e-12))
        results.append(res)
        r["obj"].close()

    return {
        "setting": name,
        "task": task,
        "metric": "test accuracy (%)" if task == "classification" else "test MAE (target units)",
        "dataset": {"description": spec["dataset"], "source": source,
                    "n_train": int(X_train.shape[0]), "n_test": int(X_test.shape[0]),
                    "n_features": int(X_train.shape[1]), "max_train": max_train, "max_test": args.max_test,
                    "subsample": "seeded draw without replacement, kept in file order" if (
                        max_train is not None or args.max_test is not None) else None,
                    "digest": array_digest(X_train=X_train, y_train=y_train, X_test=X_test, y_test=y_test),
                    "load_and_featurise_s": load_s},
        "hyperparameters": hp,
        "epochs": {"warmup": 1, "timed": epochs, "total_per_implementation": epochs + 1},
        "load_average_before": list(load_before),
        "load_average_after": list(load_after),
        "skipped": skipped,
        "results": results,
        "comparison": compare(task, results),
    }


def compare(task: str, results: list[dict]) -> dict:
    """Speed-ups against pyTM indexed (or the RTM) by median epoch time, and metric differences."""
    by = {r["label"]: r for r in results if "median_epoch_s" in r}
    base_label = "pyTM indexed" if task == "classification" else "pyTM RTM (no index)"
    base = by.get(base_label)
    out = {"baseline": base_label, "speedup_vs_baseline": {}, "metric_minus_baseline": {}}
    if base is None:
        return out
    for label, r in by.items():
        out["speedup_vs_baseline"][label] = base["median_epoch_s"] / r["median_epoch_s"]
        out["metric_minus_baseline"][label] = r["final_metric"] - base["final_metric"]
    if task == "classification":
        ours = {label: r for label, r in by.items() if r["peer"] == "asynctm" and "cpu" in label}
        if ours:
            best = min(ours.values(), key=lambda r: r["median_epoch_s"])
            one = next((r for r in ours.values() if r["options"].get("n_threads") == 1), None)
            out["goals"] = {
                "cpu_at_least_4x_vs_pytm_indexed": base["median_epoch_s"] / best["median_epoch_s"] >= 4.0,
                "best_cpu_label": best["label"],
                "accuracy_minus_pytm_indexed": best["final_metric"] - base["final_metric"],
                "accuracy_within_1_point": abs(best["final_metric"] - base["final_metric"]) <= 1.0,
                "accuracy_not_more_than_1_point_lower": best["final_metric"] - base["final_metric"] >= -1.0,
                "single_thread_faster_than_pytm_indexed": (
                    None if one is None else one["median_epoch_s"] < base["median_epoch_s"]),
            }
    return out


def print_table(setting: dict) -> None:
    task = setting["task"]
    m = "acc %" if task == "classification" else "MAE"
    cmp_ = setting["comparison"]["speedup_vs_baseline"]
    head = f"{'implementation':<22} {'warm-up s':>9} {'median s/ep':>11} {'min-max s':>15} {'x vs base':>9} " \
           f"{m + ' final':>10} {m + ' last3':>10} {'cpu/wall':>8}"
    print(f"\n{setting['setting']} ({setting['dataset']['n_train']} train, {setting['epochs']['timed']} timed epochs; "
          f"load avg before {setting['load_average_before'][0]:.2f}, after {setting['load_average_after'][0]:.2f}; "
          f"baseline {setting['comparison']['baseline']})")
    print(head)
    print("-" * len(head))
    for r in setting["results"]:
        if "median_epoch_s" not in r:
            continue
        sp = cmp_.get(r["label"])
        print(f"{r['label']:<22} {r['warmup_s']:>9.3f} {r['median_epoch_s']:>11.3f} "
              f"{r['min_epoch_s']:>7.3f}-{r['max_epoch_s']:<7.3f} {(f'{sp:.2f}' if sp else '-'):>9} "
              f"{r['final_metric']:>10.2f} {r['mean_metric_last3']:>10.2f} {r['cpu_per_wall']:>8.2f}")
    for s in setting["skipped"]:
        print(f"{s['label']:<22} skipped: {s['reason']}")
    goals = setting["comparison"].get("goals")
    if goals:
        print(f"goals: {goals}")


def write_json(path: Path, record: dict) -> None:
    from asynctm.io import write_json_atomic

    write_json_atomic(path, record, sort_keys=False)


def parse_args(argv=None):
    from asynctm.backends.cpu import default_threads

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--settings", default="apple,bike", help="comma-separated, of: " + ", ".join(SETTINGS))
    p.add_argument("--epochs", type=int, default=None,
                   help="timed epochs after the warm-up epoch (default per setting: apple 10, bike 5; --quick 2)")
    p.add_argument("--threads", default=None,
                   help=f"thread counts for our CPU build, comma-separated (default: 1,{default_threads()})")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--quick", action="store_true", help="few epochs and a subsampled bike training set (smoke test)")
    p.add_argument("--max-train", type=int, default=None, help="subsample the training set to N rows (recorded)")
    p.add_argument("--max-test", type=int, default=None, help="subsample the test set to N rows (recorded)")
    p.add_argument("--peers", default="asynctm,pytm,asynctm_cuda,pytm_cuda",
                   help="which implementations: asynctm (CPU), pytm, asynctm_cuda, pytm_cuda (GPU ones only "
                        "when a GPU is present)")
    p.add_argument("--data-mirror", default=str(default_mirror()),
                   help="the raw dataset mirror (default: $ASYNCTM_DATA_MIRROR or <repo>/../shared/datasets)")
    p.add_argument("--out-dir", default=str(DEFAULT_OUT))
    p.add_argument("--name", default=None, help="results file name without .json (default from the settings)")
    args = p.parse_args(argv)
    args.settings_list = [s.strip() for s in args.settings.split(",") if s.strip()]
    for s in args.settings_list:
        if s not in SETTINGS:
            p.error(f"unknown setting {s!r}; known: {', '.join(SETTINGS)}")
    if args.epochs is not None and args.epochs < 1:
        p.error("--epochs must be >= 1")
    threads = [int(t) for t in args.threads.split(",")] if args.threads else [1, default_threads()]
    args.threads_list = sorted(set(threads))
    if any(t < 1 for t in args.threads_list):
        p.error("--threads must be positive")
    args.peers_set = {s.strip() for s in args.peers.split(",") if s.strip()}
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    gpu = gpu_present()
    name = args.name or ("_".join(args.settings_list) + ("_quick" if args.quick else "") + ("_gpu" if gpu else ""))
    record = {
        "generated_by": "benchmarks/bench_tm.py",
        "command": [Path(sys.argv[0]).name, *(sys.argv[1:] if argv is None else argv)],
        "date_utc": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
        "git": git_info(),
        "code": code_digests(),
        "versions": versions(),
        "cpu": cpu_info(),
        "gpu": gpu_info(),
        "threads": {"asynctm_cpu": args.threads_list, "pyTsetlinMachine": 1,
                    "env": {k: v for k, v in os.environ.items() if k.startswith(("OMP_", "ASYNCTM_", "GOMP_"))}},
        "seed": args.seed,
        "quick": args.quick,
        "timing": "wall clock per fit_epoch call (library fit(X, y, epochs=1, incremental=True)); one warm-up "
                  "epoch per implementation reported apart; timed epochs round-robin across implementations; "
                  "test metric after each epoch, outside the timed region",
        "settings": [],
    }
    for s in args.settings_list:
        setting = run_setting(s, args, args.seed, args.threads_list, args.peers_set, gpu)
        record["settings"].append(setting)
        print_table(setting)
    out = Path(args.out_dir) / f"{name}.json"
    write_json(out, record)
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
