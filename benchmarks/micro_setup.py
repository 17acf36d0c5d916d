#!/usr/bin/env python
"""Set-up time of our CPU build when training starts on new data: the stored clause outputs and the tallies.

On an experiment's training set (``--max-train`` rows; 0: all) at its main setting, two cases:

- ``new``: a new model (every clause empty), as the first ``fit`` of a run has it;
- ``trained``: a model trained for ``--epochs`` epochs on the first ``--trained-rows`` rows and then given the
  whole set, as ``fit(X, y, incremental=True)`` on new data has it.

The time is the estimator's ``setup_timings_["upload_s"]``: handing the literal words to the backend and computing
every clause's stored output on every example and the tallies from them (checking and encoding the data is timed
apart and not here). Each case runs ``--reps`` times after one untimed round (compiling, caches); the fastest is
kept. With ``--kernels A,B`` each kernel folder (a checkout's ``kernels/``, e.g. an older commit's worktree) is
timed in turn, round-robin in this one process, so that a before/after pair shares the host and its load; the
folders must give the same stored outputs and tallies wherever their trained automata are the same (checked).
Writes ``benchmarks/results/micro_setup_<experiment>_<host id>.json``.

    python benchmarks/micro_setup.py [--experiment imdb] [--threads 1,all] [--kernels OLD/kernels,kernels]
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path

import numpy as np

from asynctm import benchmarking
from asynctm.provenance import file_digests, host_id

HERE = Path(__file__).resolve().parent
CASES = ("new", "trained")


def outputs_digest(model) -> str:
    """sha256 (16 hex digits) of the backend's stored outputs and tallies."""
    be = model._backend
    return hashlib.sha256(be.get_clause_output_bits().tobytes() + be.get_tallies().tobytes()).hexdigest()[:16]


def states_digest(model) -> str:
    return hashlib.sha256(model.ta_states().tobytes()).hexdigest()[:16]


def main(argv=None) -> int:
    from asynctm import TMClassifier
    from asynctm.backends.cpu import default_threads

    p = argparse.ArgumentParser(description="set-up time of our CPU build on new training data")
    p.add_argument("--experiment", default="imdb", help="a classification experiment of the config")
    p.add_argument("--max-train", type=int, default=0, help="training rows (0: all)")
    p.add_argument("--trained-rows", type=int, default=2000, help="rows the trained case trains on first")
    p.add_argument("--epochs", type=int, default=1, help="epochs of the trained case's training")
    p.add_argument("--threads", default="1,all", help="thread counts, comma-separated ('all': every usable core)")
    p.add_argument("--kernels", default="", help="kernel folders to time in turn, comma-separated")
    p.add_argument("--reps", type=int, default=3, help="timed set-ups per case; the fastest is kept")
    benchmarking.add_data_arguments(p, str(HERE.parent / "config" / "config.yaml"))
    p.add_argument("--out", default=None, help="default benchmarks/results/micro_setup_<experiment>_<host>.json")
    args = p.parse_args(argv)

    exp = benchmarking.classification_experiment(args.config, args.experiment)
    folders = benchmarking.kernel_folders(args.kernels)
    threads = [default_threads() if t == "all" else int(t) for t in args.threads.split(",") if t]
    hp = benchmarking.hyperparameters(exp)
    data, source, _ = benchmarking.load_data(exp, Path(args.data_dir))
    data = benchmarking.subsample(data, args.max_train or None, None, args.seed)
    X, y = benchmarking.dense_uint8(data["X_train"]), np.asarray(data["y_train"])
    first = min(args.trained_rows, len(y))
    started = time.gmtime()

    rows = []
    for t in threads:
        trained = {}
        for folder in folders:
            with benchmarking.kernels_from(folder):
                trained[folder] = TMClassifier(**hp, backend="cpu", n_threads=t, seed=args.seed)
                trained[folder].fit(X[:first], y[:first], epochs=args.epochs)
        seconds = {(folder, case): [] for folder in folders for case in CASES}
        digests = {}
        for rep in range(args.reps + 1):
            for folder, case in ((folder, case) for folder in folders for case in CASES):
                with benchmarking.kernels_from(folder):
                    model = TMClassifier(**hp, backend="cpu", n_threads=t, seed=args.seed) if case == "new" \
                        else trained[folder]
                    model._prepare_training(X.view(), y, incremental=case == "trained")  # a new X object: new data
                if rep:
                    seconds[folder, case].append(model.setup_timings_["upload_s"])
                digests[folder, case] = (states_digest(model), outputs_digest(model))
        for case in CASES:
            by_states = {}
            for folder in folders:
                by_states.setdefault(digests[folder, case][0], set()).add(digests[folder, case][1])
            if any(len(outputs) > 1 for outputs in by_states.values()):
                raise SystemExit(f"error: the kernel folders give different stored outputs or tallies ({case}, {t} "
                                 "threads) from the same automata: a kernel bug")
            for folder in folders:
                rows.append({"threads": t, "case": case, "kernels": str(folder),
                             "kernel_digests": file_digests(sorted(folder.glob("*.cu*"))),
                             "fastest_s": min(seconds[folder, case]), "seconds": seconds[folder, case],
                             "states_digest": digests[folder, case][0], "outputs_digest": digests[folder, case][1]})
                print(f"{t} threads, {case}: {min(seconds[folder, case]):.3f} s ({folder})")

    record = {
        **benchmarking.run_header(__file__, argv, started),
        "experiment": args.experiment, "hyperparameters": hp, "seed": args.seed,
        "dataset": {"source": source, "n_train": int(len(y)), "n_features": int(X.shape[1])},
        "trained_case": {"rows": first, "epochs": args.epochs},
        "timing": "setup_timings_['upload_s'] of the estimator: the literal words to the backend, the stored outputs "
                  "of every clause on every example and the tallies; fastest of the timed repetitions after one "
                  "untimed round, kernel folders in turn",
        "rows": rows,
    }
    default = HERE / "results" / f"micro_setup_{args.experiment}_{host_id()[:12]}.json"
    benchmarking.write_record(default, args.out, record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
