#!/usr/bin/env python
"""Inference time of our CPU build: the compacted include words against the scan of the include planes.

Trains our TM (CPU build) for ``--epochs`` epochs on an experiment's training set (at its main setting, or
``--clauses``; ``--max-train`` rows for a realistic model in little time), then predicts the test set with

- ``compact``: what the CPU build does (``CpuBackend.class_sums``): every clause's include words that are not
  0, gathered once per call (included in the time), and blocks of examples through each clause;
- ``dense``: ``tm_class_sums``, the GPU build's kernel compiled for the CPU, which scans each clause's include
  plane up to its first violated word, example after example;
- ``pytm`` (``--peers pytm``): pyTsetlinMachine's indexed ``predict`` after the same epochs, as a peer.

Both of ours must give the same class sums (checked on every call). Times are the fastest of ``--reps`` calls.
Writes ``benchmarks/results/micro_inference_<experiment>.json``.

    python benchmarks/micro_inference.py [--experiment imdb] [--epochs 2] [--max-train 5000] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from asynctm.benchmarking import (
    add_data_arguments,
    classification_experiment,
    dense_uint8,
    hyperparameters,
    load_data,
    subsample,
)
from asynctm.io import write_json_atomic
from asynctm.provenance import code_digests, cpu_info, git_info, versions

HERE = Path(__file__).resolve().parent


def fastest(fn, reps: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main(argv=None) -> int:
    from asynctm import TMClassifier
    from asynctm.backends.cpu import default_threads

    p = argparse.ArgumentParser(description="inference time of our CPU build, compacted vs dense scan")
    p.add_argument("--experiment", default="imdb", help="a classification experiment of the config")
    p.add_argument("--clauses", type=int, default=None, help="clauses per class (default: the main setting's)")
    p.add_argument("--epochs", type=int, default=2, help="training epochs before timing inference")
    p.add_argument("--max-train", type=int, default=5000, help="training rows (0: all)")
    p.add_argument("--max-test", type=int, default=0, help="test rows to predict (0: all)")
    p.add_argument("--threads", type=int, default=None, help="our threads (default: all usable cores)")
    p.add_argument("--reps", type=int, default=3, help="calls per method; the fastest is kept")
    p.add_argument("--peers", default="", help="comma-separated peers to time too: pytm")
    add_data_arguments(p, str(HERE.parent / "config" / "config.yaml"))
    p.add_argument("--out", default=None, help="default benchmarks/results/micro_inference_<experiment>.json")
    args = p.parse_args(argv)

    exp = classification_experiment(args.config, args.experiment)
    hp = hyperparameters(exp)
    if args.clauses:
        hp["n_clauses"] = args.clauses
    threads = args.threads or default_threads()
    data, source, _ = load_data(exp, Path(args.data_dir))
    data = subsample(data, args.max_train or None, args.max_test or None, args.seed)
    X_train, X_test = dense_uint8(data["X_train"]), dense_uint8(data["X_test"])

    model = TMClassifier(**hp, backend="cpu", n_threads=threads, seed=args.seed)
    t0 = time.perf_counter()
    model.fit(X_train, data["y_train"], epochs=args.epochs)
    train_s = time.perf_counter() - t0
    be = model._backend
    X_words = model._encode(model._check_X(X_test, fitting=False))
    offsets, _, _ = be.compact_includes()
    words = np.diff(offsets)

    compact_s, sums = fastest(lambda: be.class_sums(X_words), args.reps)
    dense_s, sums_dense = fastest(lambda: be.class_sums_dense(X_words), args.reps)
    if not np.array_equal(sums, sums_dense):
        raise SystemExit("the compacted and the dense inference disagree: a kernel bug")
    accuracy = float((sums.argmax(axis=0) == np.asarray(data["y_test"])).mean() * 100)
    n = len(X_words)
    rows = {"compact": {"s": compact_s, "us_per_example": compact_s / n * 1e6},
            "dense": {"s": dense_s, "us_per_example": dense_s / n * 1e6}}
    peers = {p for p in args.peers.split(",") if p}
    if "pytm" in peers:
        from asynctm.peers import make_peer

        peer = make_peer("pytm", "classification", seed=args.seed, indexed=True, **hp)
        for _ in range(args.epochs):
            peer.fit_epoch(X_train, data["y_train"])
        pytm_s, pred = fastest(lambda: peer.predict(X_test), args.reps)
        rows["pytm_indexed"] = {"s": pytm_s, "us_per_example": pytm_s / n * 1e6, "threads": 1,
                                "accuracy": float((np.asarray(pred) == np.asarray(data["y_test"])).mean() * 100)}
    record = {
        "generated_by": "benchmarks/micro_inference.py",
        "command": "python " + " ".join([os.path.relpath(__file__), *(argv if argv is not None else sys.argv[1:])]),
        "git": git_info(), "versions": versions(), "cpu": cpu_info(),
        "load_average_after": list(os.getloadavg()),
        "experiment": args.experiment, "hyperparameters": hp, "seed": args.seed, "threads": threads,
        "dataset": {"source": source, "n_train": len(X_train), "n_test": n},
        "model": {"epochs": args.epochs, "train_s": train_s, "accuracy": accuracy,
                  "include_words_per_clause": float(words.mean()), "words_per_clause": int(X_words.shape[1]),
                  "empty_clauses": int((words == 0).sum()), "clauses_total": int(len(words))},
        "code": code_digests(),
        "inference": rows,
        "dense_over_compact": dense_s / compact_s,
    }
    out = Path(args.out or HERE / "results" / f"micro_inference_{args.experiment}.json")
    write_json_atomic(out, record, sort_keys=False)
    print(json.dumps({"model": record["model"], "inference": rows,
                      "dense_over_compact": round(record["dense_over_compact"], 2)}, indent=1))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
