#!/usr/bin/env python
"""Per-epoch training time of our CPU build under two or more kernel folders, in one process, epochs round-robin.

A change of the kernels is judged by its before and after on one host. Timed in separate processes, a virtual
machine's drift from one run to the next can exceed the change; here one model per kernel folder (a checkout's
``kernels/``, e.g. an older commit's worktree) trains on the same data with the same seed, and the timed epochs
alternate between them (epoch k of every folder, then k + 1, the order reversed every other epoch), so drift hits
all alike. Settings, data and hyperparameters are ``bench_tm.py``'s (``SETTINGS``; IMDb its 1,000-row subsample).
Per setting and folder: every timed epoch, their median, and a digest of the final automata; ``same_automata``
says whether the folders trained bit for bit the same (one thread: they must, for a change meant to keep the
results). Writes ``benchmarks/results/kernels_ab_<host id>.json`` (``--out`` for another name).

    python benchmarks/kernels_ab.py --kernels OLD/kernels,kernels [--settings apple,semeval,imdb] [--epochs 8]
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import time
from pathlib import Path

from asynctm import benchmarking
from asynctm.config_check import load_config
from asynctm.provenance import file_digests, host_id

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_tm import SETTINGS, experiment  # noqa: E402  (the CPU benchmark's settings)


def train_setting(name: str, exp: dict, folders: list[Path], epochs: int, threads: int, seed: int,
                  data_dir: Path) -> dict:
    """One model per kernel folder on the setting's data: a warm-up epoch each, then ``epochs`` timed epochs
    round-robin."""
    from asynctm import TMClassifier, TMRegressor

    spec = SETTINGS[name]
    data, source, _ = benchmarking.load_data(exp, data_dir)
    data = benchmarking.subsample(data, spec["max_train"], spec["max_test"], seed)
    X, y = data["X_train"], data["y_train"]
    estimator = TMRegressor if exp["task"] == "regression" else TMClassifier
    models = {}
    for folder in folders:
        with benchmarking.kernels_from(folder):
            models[folder] = estimator(**benchmarking.hyperparameters(exp), backend="cpu", n_threads=threads,
                                       seed=seed).fit(X, y, epochs=1)
    seconds = {folder: [] for folder in folders}
    for k in range(epochs):
        for folder in (folders if k % 2 == 0 else folders[::-1]):
            t0 = time.perf_counter()
            models[folder].fit(X, y, epochs=1, incremental=True)
            seconds[folder].append(time.perf_counter() - t0)
    digests = {f: hashlib.sha256(m.ta_states().tobytes()).hexdigest()[:16] for f, m in models.items()}
    rows = [{"kernels": str(f), "kernel_digests": file_digests(sorted(f.glob("*.cu*"))), "epoch_s": seconds[f],
             "median_s": statistics.median(seconds[f]), "states_digest": digests[f]} for f in folders]
    return {"setting": name, "experiment": spec["experiment"], "source": source, "n_train": int(len(y)),
            "hyperparameters": benchmarking.hyperparameters(exp), "rows": rows,
            "same_automata": len(set(digests.values())) == 1}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="our CPU build's epochs under several kernel folders, round-robin")
    p.add_argument("--kernels", required=True, help="two or more kernel folders, comma-separated")
    p.add_argument("--settings", default="apple,semeval,imdb", help=f"of {', '.join(SETTINGS)}")
    p.add_argument("--epochs", type=int, default=8, help="timed epochs per folder, after one warm-up epoch")
    p.add_argument("--threads", type=int, default=1)
    benchmarking.add_data_arguments(p, str(HERE.parent / "config" / "config.yaml"))
    p.add_argument("--out", default=None, help="default benchmarks/results/kernels_ab_<host>.json")
    args = p.parse_args(argv)

    folders = benchmarking.kernel_folders(args.kernels)
    settings = [s for s in args.settings.split(",") if s]
    if len(folders) < 2 or any(s not in SETTINGS for s in settings) or args.epochs < 1:
        raise SystemExit(f"error: give at least two kernel folders, settings of {', '.join(SETTINGS)} and "
                         f"--epochs >= 1 (got {len(folders)} folder(s), {settings}, {args.epochs})")
    config = load_config(args.config)
    started = time.gmtime()
    results = []
    for name in settings:
        result = train_setting(name, experiment(config, name), folders, args.epochs, args.threads, args.seed,
                               Path(args.data_dir))
        results.append(result)
        print(f"{name}: " + ", ".join(f"{r['median_s']:.4g} s ({r['kernels']})" for r in result["rows"])
              + f"; same automata: {'yes' if result['same_automata'] else 'no'}")
    record = {
        **benchmarking.run_header(__file__, argv, started), "threads": args.threads, "seed": args.seed,
        "timing": "wall clock per fit(X, y, epochs=1, incremental=True) after one warm-up epoch per model; the "
                  "kernel folders' models alternate epoch by epoch in one process, the order reversed every other "
                  "epoch; median over the timed epochs",
        "settings": results,
    }
    benchmarking.write_record(HERE / "results" / f"kernels_ab_{host_id()[:12]}.json", args.out, record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
