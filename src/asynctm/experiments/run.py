"""One run of an experiment -> one record (layout and fields: results/README.md).

``run_tm`` trains one implementation epoch by epoch, evaluating on the test set after every epoch (outside
the timed region), logging progress, and writes the record last and atomically. ``run_svm`` and
``run_mlp`` wrap the baselines of :mod:`.svm` and :mod:`.novelty` into records the same way.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from ..datasets.base import ProcessedDataset, load_processed
from ..io import write_json_atomic
from .metrics import evaluate

SCHEMA = 1
logger = logging.getLogger("asynctm.experiments")


# -- data ------------------------------------------------------------------------------------------------

def _take(X, idx):
    return X[idx] if idx is not None else X


def _cut(n: int, limit: int | None, rng: np.random.Generator) -> np.ndarray | None:
    """Sorted indices of a random subset of ``limit`` rows (None: keep all). Random, not the first rows:
    several processed sets are ordered by class."""
    if limit is None or n <= limit:
        return None
    return np.sort(rng.choice(n, size=limit, replace=False))


def load_dataset(data_dir, settings: dict) -> ProcessedDataset:
    """The processed dataset of a run, cut to ``max_train``/``max_test`` rows (smoke scale) reproducibly."""
    folder = Path(data_dir) / "processed" / settings["dataset"] / settings["protocol"]
    if not (folder / "meta.json").is_file():
        raise FileNotFoundError(f"{folder}/meta.json is missing: prepare the dataset first "
                                f"(snakemake --cores all {folder}/meta.json)")
    ds = load_processed(folder)
    rng = np.random.default_rng(0)  # the same subset for every implementation and seed
    tr = _cut(ds.X_train.shape[0], settings.get("max_train"), rng)
    te = _cut(ds.X_test.shape[0], settings.get("max_test"), rng)
    ds.X_train, ds.y_train = _take(ds.X_train, tr), _take(ds.y_train, tr)
    ds.X_test, ds.y_test = _take(ds.X_test, te), _take(ds.y_test, te)
    if ds.X_novel is not None:
        nv = _cut(ds.X_novel.shape[0], settings.get("max_test"), rng)
        ds.X_novel = _take(ds.X_novel, nv)
    return ds


def dataset_summary(ds: ProcessedDataset, settings: dict) -> dict:
    return {"name": ds.name, "protocol": ds.protocol, "raw_digest": ds.meta.get("raw_digest"),
            "n_train": int(ds.X_train.shape[0]), "n_test": int(ds.X_test.shape[0]),
            "n_novel": None if ds.X_novel is None else int(ds.X_novel.shape[0]),
            "n_features": int(ds.X_train.shape[1]),
            "max_train": settings.get("max_train"), "max_test": settings.get("max_test")}


# -- provenance ----------------------------------------------------------------------------------------------

def provenance(threads: int | None, gpu: bool, started: float) -> dict:
    from ..provenance import cpu_info, git_info, gpu_info, versions

    git = git_info()
    cpu = cpu_info()
    return {"git_commit": git["commit"], "git_dirty": git["tracked_files_modified"],
            "command": " ".join(sys.argv), "python": platform.python_version(), "packages": versions(),
            "platform": platform.platform(), "cpu_model": cpu["model"], "logical_cores": cpu["logical_cores"],
            "usable_cores": cpu["usable_cores"], "threads": threads, "gpu": gpu_info() if gpu else None,
            "started_utc": datetime.fromtimestamp(started, timezone.utc).isoformat(timespec="seconds"),
            "wall_s": time.time() - started,
            # 1-minute load average at the end: how busy the machine was while this run was timed.
            "load_average_1min_at_end": os.getloadavg()[0]}


def _tag(settings: dict) -> str:
    return f"{settings['experiment']}/{settings['impl']}/{settings['params']}/seed{settings['seed']}"


def _record(settings: dict, ds_summary: dict, **parts) -> dict:
    head = {"schema": SCHEMA, "status": "complete"}
    keys = ("kind", "experiment", "impl", "params", "seed", "scale", "task")
    # protocol_scope: only in the settings of runs under a reduced protocol (experiments.plan.protocol_scope).
    scope = {"protocol_scope": settings["protocol_scope"]} if "protocol_scope" in settings else {}
    return {**head, **{k: settings[k] for k in keys}, **scope, "dataset": ds_summary, **parts}


class _Progress:
    """Progress lines to the run's log file and to stderr (Snakemake shows them for long runs)."""

    def __init__(self, log: Path | None, tag: str):
        self.fh = None
        if log is not None:
            log.parent.mkdir(parents=True, exist_ok=True)
            self.fh = open(log, "w", buffering=1)
        self.tag = tag

    def __call__(self, msg: str) -> None:
        line = f"{datetime.now().strftime('%H:%M:%S')} [{self.tag}] {msg}"
        print(line, file=sys.stderr, flush=True)
        if self.fh:
            self.fh.write(line + "\n")

    def close(self):
        if self.fh:
            self.fh.close()


# -- TM runs -------------------------------------------------------------------------------------------------

def make_tm_peer(settings: dict, threads: int | None):
    """The peer (asynctm.baselines) that runs ``settings['impl']``; a clear error where it cannot run here."""
    from ..backends import BackendUnavailableError, cuda_available
    from ..baselines import make_peer

    h = settings["hyperparameters"]
    task = "regression" if settings["task"] == "regression" else "classification"
    common = dict(state_bits=h["state_bits"], boost_true_positive=h["boost_true_positive"],
                  append_negated=h["append_negated"], batch_size=h["batch_size"], seed=settings["seed"])
    impl = settings["impl"]
    if impl == "tm_gpu":
        if not cuda_available():
            raise BackendUnavailableError(
                "tm_gpu needs an NVIDIA GPU with PyCUDA (pip install -e '.[cuda]'), and none was found on this "
                "host. Run tm_cpu instead, or leave config gpu: auto so that tm_gpu runs are not requested here.")
        return make_peer("asynctm", task, h["n_clauses"], h["T"], h["s"], backend="cuda", **common)
    if impl == "tm_cpu":
        return make_peer("asynctm", task, h["n_clauses"], h["T"], h["s"], backend="cpu", n_threads=threads,
                         **common)
    return make_peer("pytm", task, h["n_clauses"], h["T"], h["s"], indexed=impl == "pytm_indexed", **common)


def _metric_line(m: dict) -> str:
    if "mae" in m:
        return f"MAE {m['mae']:.3f}"
    return f"acc {m['accuracy']:.2f} F1 {m['f1']:.2f}" if m["f1"] is not None else f"acc {m['accuracy']:.2f}"


def run_tm(settings: dict, data_dir, out, log=None, threads: int | None = None) -> dict:
    """Train one TM implementation for ``epochs`` epochs and write its record to ``out``."""
    started = time.time()
    out = Path(out)
    say = _Progress(Path(log) if log else None, _tag(settings))
    try:
        t0 = time.perf_counter()
        ds = load_dataset(data_dir, settings)
        load_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        peer = make_tm_peer(settings, threads)
        construct_s = time.perf_counter() - t0
        setup = peer.prepare(ds.X_train, ds.y_train)
        h = settings["hyperparameters"]
        say(f"{ds.X_train.shape[0]} train x {ds.X_train.shape[1]} features, {h['epochs']} epochs; set-up "
            f"{sum(setup.values()):.2f} s ({peer.metadata()['device']})")
        epochs = []
        for epoch in range(1, h["epochs"] + 1):
            t0 = time.perf_counter()
            peer.fit_epoch(ds.X_train, ds.y_train)
            train_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            pred = peer.predict(ds.X_test)
            eval_s = time.perf_counter() - t0
            m, names = evaluate(settings["task"], ds.y_test, pred, settings["f1"])
            epochs.append({"epoch": epoch, "train_s": train_s, "eval_s": eval_s, **m})
            say(f"epoch {epoch}/{h['epochs']} {_metric_line(m)} train {train_s:.3f} s eval {eval_s:.3f} s")
        if settings["task"] == "novelty":
            from .novelty import save_scores

            save_scores(novelty_scores_path(out), peer.class_sums(ds.X_test), ds.y_test,
                        peer.class_sums(ds.X_novel))
        meta = peer.metadata()
        peer.close()
        train = [e["train_s"] for e in epochs]
        timing = {"setup": {"load_data_s": load_s, "construct_s": construct_s, **setup},
                  "train_s_total": sum(train), "train_s_mean": statistics.fmean(train),
                  "train_s_median": statistics.median(train), "eval_s_total": sum(e["eval_s"] for e in epochs)}
        final = {k: v for k, v in epochs[-1].items() if k not in ("epoch", "train_s", "eval_s")}
        record = _record(settings, dataset_summary(ds, settings), hyperparameters=h, implementation=meta,
                         metric_names=names, epochs=epochs, final=final, timing=timing,
                         provenance=provenance(meta.get("threads"), settings["impl"] == "tm_gpu", started))
        write_json_atomic(out, record)
        say(f"done: {_metric_line(final)}, {timing['train_s_mean']:.3f} s/epoch -> {out}")
        return record
    finally:
        say.close()


def novelty_scores_path(record_path) -> Path:
    record_path = Path(record_path)
    return record_path.with_name(record_path.name.removesuffix(".json") + ".scores.npz")


# -- baselines ---------------------------------------------------------------------------------------------

def run_svm(settings: dict, data_dir, out, log=None, threads: int | None = None) -> dict:
    from .svm import run_svm as fit_svm

    started = time.time()
    say = _Progress(Path(log) if log else None, _tag(settings))
    try:
        ds = load_dataset(data_dir, settings)
        say(f"{ds.X_train.shape[0]} train x {ds.X_train.shape[1]} features")
        parts = fit_svm(settings["task"], ds.X_train, ds.y_train, ds.X_test, ds.y_test,
                        settings["hyperparameters"], seed=settings["seed"], f1=settings["f1"], n_threads=threads)
        impl = parts["implementation"]
        gpu = impl.get("build") == "gpu"
        record = _record(settings, dataset_summary(ds, settings), **parts,
                         provenance=provenance(impl.get("threads"), gpu, started))
        write_json_atomic(out, record)
        say(f"done: {impl.get('library')} {_metric_line(parts['final'])}, fit {parts['timing']['fit_s']:.2f} s")
        return record
    finally:
        say.close()


def run_mlp(settings: dict, scores, out, log=None) -> dict:
    from .novelty import load_scores, run_mlp_novelty

    started = time.time()
    say = _Progress(Path(log) if log else None, _tag(settings))
    try:
        tm_record = json.loads(Path(scores).with_name(Path(scores).name.removesuffix(".scores.npz") + ".json")
                               .read_text())
        parts = run_mlp_novelty(load_scores(scores), settings["hyperparameters"])
        record = _record(settings, tm_record["dataset"], **parts, tm_record={
            "impl": tm_record["impl"], "params": tm_record["params"], "seed": tm_record["seed"],
            "timing": tm_record["timing"]}, provenance=provenance(1, False, started))
        write_json_atomic(out, record)
        say(f"done: {_metric_line(parts['final'])} -> {out}")
        return record
    finally:
        say.close()
