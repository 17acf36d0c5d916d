"""One run of an experiment -> one record (layout and fields: results/README.md).

``run_tm`` trains one implementation epoch by epoch, evaluating on the test set after every epoch (outside
the timed region), logging progress (epoch k/N, metric, s/epoch, time left), and writes the record last and
atomically. Every ``checkpoint_every_s`` seconds (after the epoch that passes it) it saves the state after
the last completed epoch to ``seed<k>.checkpoint.npz`` beside the record, atomically; a rerun of the same run
resumes from there, and the checkpoint is removed once the record is written. SIGINT and SIGTERM end a run
with "interrupted at epoch k" in its log, no record, the checkpoint kept, and ``RunInterrupted``. With
``stop_at`` (a UNIX time: the end of a time-limited allocation) a run that has time for no further epoch saves
its checkpoint and ends with "paused before epoch k" and ``RunPaused``; the same command resumes it.
``run_svm`` and ``run_mlp`` wrap the baselines of :mod:`asynctm.baselines.thundersvm` and :mod:`.novelty` into
records the same way.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import os
import platform
import signal
import statistics
import sys
import threading
import time
import zipfile
import zlib
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from ..datasets.base import ProcessedDataset, load_processed
from ..io import atomic_open, write_json_atomic
from ..jobs import EXIT_PAUSED, JobLog  # noqa: F401 - EXIT_PAUSED: the command line's exit status for a pause
from .metrics import evaluate
from .plan import GPU_IMPLS

SCHEMA = 1
logger = logging.getLogger("asynctm.experiments")
# A checkpoint after the first epoch that ends this long after the previous one (slow epochs: every epoch).
DEFAULT_CHECKPOINT_EVERY_S = 120.0
HEARTBEAT_S = 60.0  # a line while one epoch runs longer than this, and again every HEARTBEAT_S


class RunPaused(Exception):
    """A run with a ``stop_at`` had no time for its next epoch: its checkpoint holds what it did."""

    def __init__(self, epochs_done: int, n_epochs: int, checkpoint: Path | None):
        self.epochs_done, self.n_epochs, self.checkpoint = epochs_done, n_epochs, checkpoint
        super().__init__(f"paused after {epochs_done} of {n_epochs} epochs"
                         + (f"; {checkpoint.name} resumes it" if checkpoint else "; no checkpoint"))


# A paused run's margin beyond the next epoch's predicted time (its wall time last epoch, by PAUSE_FACTOR) and the
# last checkpoint's write time.
PAUSE_MARGIN_S = 3.0
PAUSE_FACTOR = 1.1


class RunInterrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM ended a run (a KeyboardInterrupt, so that nothing treats it as an ordinary error)."""

    def __init__(self, signum: int):
        self.signum = int(signum)
        super().__init__(signal.Signals(self.signum).name)


def write_record(out, record: dict) -> None:
    """Write a finished run's record, atomically, after the gate (asynctm.store) accepted it: a run never writes a
    record that the tables would refuse. A refused one is kept beside it as ``seed<k>.json.refused`` (its training
    is not lost) and the run fails with the gate's line."""
    from .. import store

    parts = Path(out).parts
    own = Path(str(record.get("experiment")), str(record.get("impl")), str(record.get("params")),
               f"seed{record.get('seed')}.json")  # the place it names (the reader checks the place it is in)
    rel = Path(*parts[-6:]) if len(parts) >= 6 and parts[-6] == "ablation" else own
    try:
        store.check_record(json.loads(json.dumps(record)), rel, path=Path(out))
    except store.RecordError:
        write_json_atomic(f"{out}.refused", record)
        raise
    write_json_atomic(out, record)


@contextlib.contextmanager
def stop_on_signals():
    """Within: SIGINT and SIGTERM raise ``RunInterrupted`` in the main thread (SIGTERM would otherwise end
    the process at once, with no word in the log). Off the main thread: nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise RunInterrupted(signum)

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def duration(seconds: float) -> str:
    """'42 s', '3 min 20 s', '2 h 05 min', '3 d 04 h': a time left, readable at a glance."""
    seconds = max(0.0, float(seconds))
    if seconds < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"
    minutes, s = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes} min {s:02d} s"
    hours, m = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {m:02d} min"
    days, h = divmod(hours, 24)
    return f"{days} d {h:02d} h"


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
    summary = {"name": ds.name, "protocol": ds.protocol, "raw_digest": ds.meta.get("raw_digest"),
               "n_train": int(ds.X_train.shape[0]), "n_test": int(ds.X_test.shape[0]),
               "n_novel": None if ds.X_novel is None else int(ds.X_novel.shape[0]),
               "n_features": int(ds.X_train.shape[1]),
               "max_train": settings.get("max_train"), "max_test": settings.get("max_test")}
    if settings["task"] == "regression":
        summary["constant_baseline"] = constant_baseline(ds.y_train, ds.y_test)
    return summary


def constant_baseline(y_train, y_test) -> dict:
    """What a model that ignores the features scores: the training targets' median (the constant with the
    least absolute error on them) predicted for every test example. A regression run whose MAE is above it
    has learned nothing usable from the features."""
    y_train, y_test = np.asarray(y_train, dtype=np.float64), np.asarray(y_test, dtype=np.float64)
    median = float(np.median(y_train))
    return {"predict": "median of the training targets", "value": median,
            "mae": float(np.mean(np.abs(y_test - median)))}


# -- provenance ----------------------------------------------------------------------------------------------

def provenance(threads: int | None, gpu: bool, started: float, git: dict) -> dict:
    """The record's ``provenance``. ``git``: ``provenance.git_info()`` when this attempt started, the code it
    loaded (taken at the end instead, a commit or an edit made while a run of hours went on would be recorded as
    the run's code); where the checkout changed while the run went on, ``git_at_end`` says how it stood then."""
    from ..provenance import cpu_info, git_info, gpu_info, host_id, versions

    end = git_info()
    changed = {} if end == git else {"git_at_end": {"commit": end["commit"],
                                                    "git_dirty": end["tracked_files_modified"]}}
    cpu = cpu_info()
    return {"git_commit": git["commit"], "git_dirty": git["tracked_files_modified"], **changed,
            "command": " ".join(sys.argv), "python": platform.python_version(), "packages": versions(),
            "platform": platform.platform(), "host_id": host_id(), "cpu_model": cpu["model"],
            "logical_cores": cpu["logical_cores"],
            "usable_cores": cpu["usable_cores"], "threads": threads, "gpu": gpu_info() if gpu else None,
            "started_utc": datetime.fromtimestamp(started, UTC).isoformat(timespec="seconds"),
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


class _Heartbeat:
    """While an epoch runs longer than ``every`` seconds, a line every ``every`` seconds saying so (a first
    epoch of pyTsetlinMachine on a large dataset takes many minutes)."""

    def __init__(self, say, every: float = HEARTBEAT_S):
        self.say, self.every = say, every
        self.stop = threading.Event()
        self.thread = None

    def start(self, epoch: int, n_epochs: int, expected: float | None) -> None:
        self.stop.clear()
        began = time.monotonic()

        def beat():
            while not self.stop.wait(self.every):
                hint = f" of about {duration(expected)} expected" if expected else ""
                self.say(f"epoch {epoch}/{n_epochs} still running: {duration(time.monotonic() - began)}{hint}")

        # Kept only once started: a signal that interrupts this method leaves no unstarted thread for end() to
        # join (joining one raises, which turned a clean SIGTERM stop into an error).
        thread = threading.Thread(target=beat, name="heartbeat", daemon=True)
        thread.start()
        self.thread = thread

    def end(self) -> None:
        self.stop.set()
        thread, self.thread = self.thread, None
        if thread is not None and thread.is_alive():
            thread.join()


# -- checkpoints -----------------------------------------------------------------------------------------

def checkpoint_path(record_path) -> Path:
    """``seed<k>.checkpoint.npz`` beside the record ``seed<k>.json``."""
    record_path = Path(record_path)
    return record_path.with_name(record_path.name.removesuffix(".json") + ".checkpoint.npz")


def _checkpoint_key(settings: dict, threads, gpu: str | None = None) -> str:
    """What a checkpoint must have been written for to be resumed: the same settings and thread count (and
    GPU, for a GPU run)."""
    key = {"settings": {k: v for k, v in settings.items() if k != "checkpoint_every_s"}, "threads": threads}
    if gpu is not None:
        key["gpu"] = gpu
    return json.dumps(key, sort_keys=True)


def write_checkpoint(path: Path, peer, state: dict) -> bool:
    """The peer's state after its last completed epoch and the run's ``state`` (JSON), atomically; False
    where the peer has no checkpoints."""
    arrays = peer.checkpoint()
    if arrays is None:
        return False
    arrays = {**arrays, "run_state": np.array(json.dumps(state, sort_keys=True))}
    with atomic_open(path, "wb") as fh:
        np.savez(fh, **arrays)
    return True


def read_checkpoint(path: Path) -> dict:
    """The run state of a checkpoint; ValueError saying what is wrong when the file cannot be read (truncated,
    damaged, not a checkpoint) or its run state is inconsistent (see :func:`_state_problem`)."""
    try:
        with np.load(path, allow_pickle=False) as z:
            state = json.loads(str(z["run_state"]))
            trained = z["epochs_trained"] if "epochs_trained" in z.files else None
    except Exception as exc:  # noqa: BLE001 - zip, CRC, zlib, EOF, NumPy format or JSON errors of a damaged file
        raise ValueError(f"unreadable ({type(exc).__name__}: {' '.join(str(exc).split())})") from None
    problem = _state_problem(state, trained)
    if problem:
        raise ValueError(f"inconsistent: {problem}")
    return state


def _state_problem(state, trained) -> str | None:
    """What makes a checkpoint's run state unusable (None: nothing): not the JSON that :func:`run_tm` writes, or an
    epoch count other than that of the model it holds (``trained``: its ``epochs_trained``, where it has one)."""
    if not isinstance(state, dict) or not isinstance(state.get("key"), str):
        return "its run state is not a JSON object with the run's settings"
    epochs, resume = state.get("epochs"), state.get("resume")
    if not isinstance(epochs, list) or not all(isinstance(e, dict) for e in epochs):
        return "its run state has no list of epochs"
    if [e.get("epoch") for e in epochs] != list(range(1, len(epochs) + 1)):
        return f"its {len(epochs)} epochs are not numbered 1 to {len(epochs)}"
    if not all(isinstance(e.get(k), (int, float)) and not isinstance(e.get(k), bool)
               for e in epochs for k in ("train_s", "eval_s")):
        return "its epochs lack their times (train_s, eval_s)"
    if not isinstance(resume, list) or not all(isinstance(r, dict) and isinstance(r.get("after_epoch"), int)
                                               for r in resume):
        return "its resume history is not a list of resumes"
    if trained is not None:
        if trained.shape != () or trained.dtype.kind not in "iu":
            return f"its epochs_trained is not one integer ({trained.dtype}, shape {trained.shape})"
        if int(trained) != len(epochs):
            return f"its model has trained {int(trained)} epochs, but its run state holds {len(epochs)}"
    return None


# What restoring a checkpoint that passed read_checkpoint raises when one of its arrays is damaged or inconsistent.
_RESTORE_ERRORS = (ValueError, KeyError, OSError, EOFError, zipfile.BadZipFile, zlib.error)


def set_aside(path: Path) -> Path:
    """Rename a damaged checkpoint to ``<name>.damaged`` (``<name>.2.damaged``, ... where that is taken), kept
    for a look and never deleted; the new name."""
    for k in itertools.count(1):
        aside = path.with_name(path.name + (".damaged" if k == 1 else f".{k}.damaged"))
        if not aside.exists():
            path.rename(aside)
            return aside
    raise AssertionError("unreachable")


def _set_aside_damaged(path: Path, exc: Exception, say) -> None:
    """Set a checkpoint that cannot be resumed (``exc``: why) aside and say so in one line (OSError, one line,
    where it cannot be renamed: a rerun would meet it again)."""
    problem = " ".join(str(exc).removeprefix(f"{path}: ").split())
    if not isinstance(exc, ValueError):
        problem = f"{type(exc).__name__}: {problem}"
    try:
        aside = set_aside(path)
    except OSError as err:
        raise OSError(f"{path}: damaged checkpoint ({problem}) that cannot be set aside ({err}); move it away and "
                      "rerun") from None
    say(f"checkpoint {path.name} is damaged: {problem}; set aside as {aside.name}, the run starts again from "
        "epoch 1")


def _resume_refusal(state: dict, key: str, cpu_model: str, peer, n_epochs: int) -> str | None:
    """Why a checkpoint cannot be resumed here (None: it can)."""
    if peer.resume_exact is None:
        return peer.resume_note
    if state.get("key") != key:
        return "it was written for other settings or another thread count"
    if state.get("cpu_model") != cpu_model:
        return (f"it was written on another CPU ({state.get('cpu_model')}); per-epoch times of two machines "
                "would mix in one record")
    if not 0 < len(state.get("epochs", [])) < n_epochs:
        return f"it holds {len(state.get('epochs', []))} of {n_epochs} epochs"
    return None


# -- TM runs -------------------------------------------------------------------------------------------------

def make_tm_peer(settings: dict, threads: int | None):
    """The peer (asynctm.peers) that runs ``settings['impl']``; a clear error where it cannot run here."""
    from ..backends import BackendUnavailableError, cuda_available
    from ..peers import make_peer

    h = settings["hyperparameters"]
    task = "regression" if settings["task"] == "regression" else "classification"
    common = dict(state_bits=h["state_bits"], boost_true_positive=h["boost_true_positive"],
                  append_negated=h["append_negated"], batch_size=h["batch_size"], seed=settings["seed"])
    impl = settings["impl"]
    if impl in GPU_IMPLS:  # tm_gpu: one thread per clause; tm_gpu_warp: a warp (its threads_per_clause)
        if not cuda_available():
            raise BackendUnavailableError(
                f"{impl} needs an NVIDIA GPU with PyCUDA (pip install -e '.[cuda]'), and none was found on this "
                f"host. Run tm_cpu instead, or leave config gpu: auto so that {impl} runs are not requested here.")
        return _with_switches(make_peer("asynctm", task, h["n_clauses"], h["T"], h["s"], backend="cuda", **common), h)
    if impl == "tm_cpu":
        return _with_switches(make_peer("asynctm", task, h["n_clauses"], h["T"], h["s"], backend="cpu",
                                        n_threads=threads, **common), h)
    return make_peer("pytm", task, h["n_clauses"], h["T"], h["s"], indexed=impl == "pytm_indexed", **common)


def _with_switches(peer, h: dict):
    """Our TM with the settings' ``tally``, ``regression_rule``, ``order`` and ``threads_per_clause`` (the
    estimators' ``gpu_threads_per_clause``; kernels/README.md), where they name them."""
    switches = {k: h[k] for k in ("tally", "regression_rule", "order") if k in h}
    if "threads_per_clause" in h:
        switches["gpu_threads_per_clause"] = h["threads_per_clause"]
    if switches:
        peer.model.set_params(**switches)
    return peer


def _diagnostics(peer) -> dict:
    """The epoch's training diagnostics of our TM (literals per clause, Type Ia/Ib/II feedback events), as
    ``{"diagnostics": {...}}`` for the record's epoch entry; nothing for the other implementations."""
    history = getattr(getattr(peer, "model", None), "epoch_diagnostics_", None)
    if not history:
        return {}
    return {"diagnostics": {k: v for k, v in history[-1].items() if k != "epoch"}}


def _metric_line(m: dict) -> str:
    if "mae" in m:
        return f"MAE {m['mae']:.3f}"
    return f"acc {m['accuracy']:.2f} F1 {m['f1']:.2f}" if m["f1"] is not None else f"acc {m['accuracy']:.2f}"


def epoch_estimate(settings: dict, out, n_train: int) -> tuple[float, str] | None:
    """(seconds, basis): the expected time of one epoch (training and evaluation), from the paper-scale records
    of the same dataset and implementation under the record's results root, scaled by clauses and training
    examples as ``plan --estimate`` does (:mod:`.estimate`); None where there is none."""
    from .estimate import load_timings

    try:
        root = Path(out).resolve().parents[3]  # <root>/<experiment>/<impl>/<params>/seed<k>.json
        refs = load_timings(root).tm.get((settings["dataset"], settings["protocol"], settings["impl"]))
    except (OSError, ValueError, IndexError):
        return None
    clauses = settings["hyperparameters"]["n_clauses"]
    refs = [r for r in refs or [] if r.clauses and r.n_train]
    if not refs:
        return None
    ref = min(refs, key=lambda r: (abs(np.log(clauses / r.clauses)), -r.clauses))
    seconds = ref.epoch_s * clauses / ref.clauses * n_train / ref.n_train
    return seconds, f"from {ref.count} record(s) at n{ref.clauses}" + (f" on {ref.cpu}" if ref.cpu else "")


def _first_epoch_hint(settings: dict, ds, n_classes: int, estimate: tuple[float, str] | None) -> str:
    """What the first epoch holds (examples x clauses x classes) and, with an estimate, how long it should
    take (and that it may take long)."""
    h = settings["hyperparameters"]
    work = (f"{ds.X_train.shape[0]:,} examples x {h['n_clauses']:,} clauses"
            + (f" x {n_classes} classes" if n_classes > 1 else ""))
    if estimate is not None:
        per_epoch, basis = estimate
        long = "; this may take long" if per_epoch >= HEARTBEAT_S else ""
        return (f"{work}: about {duration(per_epoch)} per epoch, {duration(per_epoch * h['epochs'])} in all "
                f"(estimate {basis}){long}")
    return f"{work} (no estimate: no record of this dataset and implementation yet); progress after each epoch"


def run_tm(settings: dict, data_dir, out, log=None, threads: int | None = None,
           checkpoint_every_s: float | None = None, stop_at: float | None = None) -> dict:
    """Train one TM implementation for ``epochs`` epochs and write its record to ``out``, resuming from the
    run's checkpoint where an interrupted attempt left one. ``checkpoint_every_s`` (default: the settings'
    ``checkpoint_every_s``, else 120): the least time between two checkpoints (0: after every epoch).
    ``stop_at`` (UNIX time): before an epoch that would not end by then (its predicted time: the last epoch's,
    of this attempt or of the checkpoint), save the checkpoint and raise :class:`RunPaused`; a run's very first
    epoch, which nothing predicts, always starts."""
    from ..provenance import git_info

    started, git = time.time(), git_info()
    out = Path(out)
    ckpt = checkpoint_path(out)
    every = checkpoint_every_s if checkpoint_every_s is not None else settings.get("checkpoint_every_s",
                                                                                      DEFAULT_CHECKPOINT_EVERY_S)
    say = JobLog(log, _tag(settings), append=ckpt.exists())
    heartbeat = _Heartbeat(say)
    n_epochs = settings["hyperparameters"]["epochs"]
    epochs: list[dict] = []
    phase = "set-up"
    try:
        with stop_on_signals():
            t0 = time.perf_counter()
            ds = load_dataset(data_dir, settings)
            load_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            peer = make_tm_peer(settings, threads)
            construct_s = time.perf_counter() - t0
            setup = peer.prepare(ds.X_train, ds.y_train)
            h = settings["hyperparameters"]
            device = peer.metadata()
            say(f"{ds.X_train.shape[0]} train x {ds.X_train.shape[1]} features, {h['epochs']} epochs; set-up "
                f"{sum(setup.values()):.2f} s ({device['device']})")
            from ..provenance import cpu_info

            # A GPU run's checkpoint also names its GPU: per-epoch times of two GPUs would mix in one record.
            key = _checkpoint_key(settings, device.get("threads"),
                                  device.get("device") if settings["impl"] in GPU_IMPLS else None)
            cpu_model = cpu_info()["model"]
            history: list[dict] = []
            if ckpt.exists():
                try:
                    state = read_checkpoint(ckpt)
                except ValueError as exc:  # damaged or inconsistent: kept aside, the run starts afresh
                    state = None
                    _set_aside_damaged(ckpt, exc, say)
                refusal = _resume_refusal(state, key, cpu_model, peer, n_epochs) if state is not None else None
                if refusal:
                    say(f"checkpoint {ckpt.name} not used: {refusal}; starting from epoch 1")
                    ckpt.unlink()
                    state = None
                elif state is not None:
                    try:
                        peer.restore(ckpt, ds.X_train, ds.y_train, len(state["epochs"]))
                    except _RESTORE_ERRORS as exc:  # an array damaged or at odds with the run: as above
                        state = None
                        _set_aside_damaged(ckpt, exc, say)
                        peer.close()  # and a fresh one, as a run without a checkpoint has
                        t0 = time.perf_counter()
                        peer = make_tm_peer(settings, threads)
                        construct_s = time.perf_counter() - t0
                        setup = peer.prepare(ds.X_train, ds.y_train)
                if state is not None:
                    epochs = state["epochs"]
                    history = state["resume"] + [{"after_epoch": len(epochs), "started_utc": _utc(started),
                                                  "git_commit": git["commit"]}]
                    say(f"resumed from {ckpt.name} after epoch {len(epochs)}/{n_epochs} (resume {len(history)}; "
                        + ("bit for bit as an uninterrupted run" if peer.resume_exact else
                           "not bit for bit: " + peer.resume_note) + ")")
            if peer.resume_exact is None:
                say(f"no checkpoints: {peer.resume_note}")
            n_classes = len(peer.classes_) if getattr(peer, "classes_", None) is not None else (
                len(np.unique(ds.y_train)) if settings["task"] != "regression" else 1)
            estimate = epoch_estimate(settings, out, ds.X_train.shape[0])
            if not epochs:
                say(f"epoch 1/{n_epochs} starting: {_first_epoch_hint(settings, ds, n_classes, estimate)}")
            last_checkpoint, walls, names, write_s = time.monotonic(), [], None, 0.0

            def save() -> bool:
                nonlocal last_checkpoint, write_s
                t0 = time.perf_counter()
                if not write_checkpoint(ckpt, peer, {"key": key, "cpu_model": cpu_model, "epochs": epochs,
                                                     "resume": history}):
                    return False
                last_checkpoint, write_s = time.monotonic(), time.perf_counter() - t0
                return True

            for epoch in range(len(epochs) + 1, n_epochs + 1):
                if stop_at is not None:
                    # the next epoch's time: this attempt's last, else the last epoch the checkpoint holds
                    last = walls[-1] if walls else (epochs[-1]["train_s"] + epochs[-1]["eval_s"] if epochs else None)
                    need = None if last is None else PAUSE_FACTOR * last + write_s + PAUSE_MARGIN_S
                    if need is not None and time.time() + need > stop_at:
                        if walls:  # epochs trained since the last start (else the checkpoint holds them all)
                            save()
                        kept = ckpt if epochs and ckpt.exists() else None
                        say(f"paused before epoch {epoch}/{n_epochs}: it would take about {need:.1f} s and "
                            f"{max(0.0, stop_at - time.time()):.1f} s are left before the stop time; " +
                            (f"checkpoint {ckpt.name} (after epoch {len(epochs)}) resumes it" if kept else
                             "no checkpoint: a rerun starts from epoch 1"))
                        raise RunPaused(len(epochs), n_epochs, kept)
                phase = "training"
                wall0 = time.perf_counter()
                heartbeat.start(epoch, n_epochs, walls[-1] if walls else estimate and estimate[0])
                try:
                    t0 = time.perf_counter()
                    peer.fit_epoch(ds.X_train, ds.y_train)
                    train_s = time.perf_counter() - t0
                    t0 = time.perf_counter()
                    pred = peer.predict(ds.X_test)
                    eval_s = time.perf_counter() - t0
                finally:
                    heartbeat.end()
                m, names = evaluate(settings["task"], ds.y_test, pred, settings["f1"])
                epochs.append({"epoch": epoch, "train_s": train_s, "eval_s": eval_s, **m, **_diagnostics(peer)})
                saved = ""
                if epoch < n_epochs and time.monotonic() - last_checkpoint >= every and save():
                    saved = ", checkpoint saved"
                walls.append(time.perf_counter() - wall0)
                # the last 10 epochs of this attempt; not the first once there are others (one-off costs)
                per_epoch = statistics.fmean(walls[-10:] if len(walls) < 2 else walls[1:][-10:])
                say(f"epoch {epoch}/{n_epochs} {_metric_line(m)} | {train_s:.3f} s/epoch (eval {eval_s:.3f} s) | "
                    f"time left {duration(per_epoch * (n_epochs - epoch))} (estimate){saved}")
            phase = "writing the record"
            if names is None:  # every epoch came from the checkpoint (not possible: it holds fewer)
                raise RuntimeError(f"{ckpt}: nothing left to train")
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
            final = {k: v for k, v in epochs[-1].items() if k not in ("epoch", "train_s", "eval_s", "diagnostics")}
            resume = {"count": len(history), "after_epochs": [r["after_epoch"] for r in history],
                      "history": history, "checkpoint_every_s": every, "supported": peer.resume_exact is not None,
                      "exact": peer.resume_exact, "note": peer.resume_note}
            record = _record(settings, dataset_summary(ds, settings), hyperparameters=h, implementation=meta,
                             metric_names=names, epochs=epochs, final=final, timing=timing, resume=resume,
                             provenance=provenance(meta.get("threads"), settings["impl"] in GPU_IMPLS, started, git))
            write_record(out, record)
            ckpt.unlink(missing_ok=True)
            say(f"done: {_metric_line(final)}, {timing['train_s_mean']:.3f} s/epoch -> {out}"
                + (f" (resumed {len(history)} time(s))" if history else ""))
            return record
    except KeyboardInterrupt as exc:
        how = signal.Signals(exc.signum).name if isinstance(exc, RunInterrupted) else "KeyboardInterrupt"
        try:
            kept = (f"checkpoint {ckpt.name} kept (after epoch {len(read_checkpoint(ckpt)['epochs'])}): the same "
                    "command resumes from it" if ckpt.exists() else "no checkpoint yet: a rerun starts from epoch 1")
        except ValueError:
            kept = f"checkpoint {ckpt.name} unreadable: a rerun starts from epoch 1"
        where = f"at epoch {len(epochs) + 1}/{n_epochs}" if phase == "training" else f"during {phase}"
        say(f"interrupted {where} ({how}) after {len(epochs)} completed epoch(s): no record written; {kept}")
        raise
    finally:
        heartbeat.end()


def _utc(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds")


def novelty_scores_path(record_path) -> Path:
    record_path = Path(record_path)
    return record_path.with_name(record_path.name.removesuffix(".json") + ".scores.npz")


# -- baselines ---------------------------------------------------------------------------------------------

def run_svm(settings: dict, data_dir, out, log=None, threads: int | None = None) -> dict:
    from ..baselines.thundersvm import run_svm as fit_svm
    from ..provenance import git_info

    started, git = time.time(), git_info()
    say = JobLog(log, _tag(settings))
    ds = load_dataset(data_dir, settings)
    say(f"{ds.X_train.shape[0]} train x {ds.X_train.shape[1]} features")
    parts = fit_svm(settings["task"], ds.X_train, ds.y_train, ds.X_test, ds.y_test,
                    settings["hyperparameters"], seed=settings["seed"], f1=settings["f1"], n_threads=threads,
                    library=settings.get("library"))
    impl = parts["implementation"]
    if settings.get("library"):
        impl["forced_by"] = f"config experiments.{settings['experiment']}.svm_library"
    gpu = impl.get("build") == "gpu"
    record = _record(settings, dataset_summary(ds, settings), **parts,
                     provenance=provenance(impl.get("threads"), gpu, started, git))
    write_record(out, record)
    say(f"done: {impl.get('library')} {_metric_line(parts['final'])}, fit {parts['timing']['fit_s']:.2f} s")
    return record


def run_mlp(settings: dict, scores, out, log=None) -> dict:
    from ..provenance import git_info
    from .novelty import load_scores, run_mlp_novelty

    started, git = time.time(), git_info()
    say = JobLog(log, _tag(settings))
    tm_record = json.loads(Path(scores).with_name(Path(scores).name.removesuffix(".scores.npz") + ".json")
                           .read_text())
    parts = run_mlp_novelty(load_scores(scores), settings["hyperparameters"])
    record = _record(settings, tm_record["dataset"], **parts, tm_record={
        "impl": tm_record["impl"], "params": tm_record["params"], "seed": tm_record["seed"],
        "timing": tm_record["timing"]}, provenance=provenance(1, False, started, git))
    write_record(out, record)
    say(f"done: {_metric_line(parts['final'])} -> {out}")
    return record
