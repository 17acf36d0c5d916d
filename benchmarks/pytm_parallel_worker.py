#!/usr/bin/env python
"""Worker process of the pyTsetlinMachineParallel peer; run with the python of its own environment.

pyTsetlinMachineParallel cannot share an environment with pyTsetlinMachine (both install a top-level
``libTM`` C library, and the later install overwrites the other's), so ``benchmarks/bench_tm.py`` builds it
in ``benchmarks/.venv-pytmparallel`` (``benchmarks/setup_pytm_parallel.sh``) and drives it through this
script, which imports only NumPy and the library (never ``asynctm``). The client is
:class:`asynctm.baselines.pytm_parallel.PyTMParallelPeer`.

Protocol: one JSON object per line on stdin, one JSON reply per line on stdout (``{"ok": true, ...}`` or
``{"ok": false, "error": "..."}``); anything the library prints goes to stderr. Commands:

``init``      ``task`` ("classification" / "regression"), ``n_clauses``, ``T``, ``s``, ``state_bits``,
              ``boost_true_positive``, ``append_negated``, ``seed``: builds the machine; replies with
              the library version, NumPy version and the OpenMP thread count the library will use.
``load``      ``name``, ``path``: an ``.npz`` holding ``X`` dense, or ``X_data``/``X_indices``/``X_indptr``/
              ``X_shape`` (CSR), and optionally ``y``; X becomes a dense 0/1 uint8 array once, here, outside
              any timed region (the in-process pyTsetlinMachine peer converts once too).
``fit_epoch`` ``name``: ``fit(X, y, epochs=1, incremental=True)``, timed here with ``perf_counter`` (and
              ``process_time``: CPU seconds of all threads); replies ``epoch_s``, ``cpu_s``.
``predict``   ``name``: replies ``y_pred`` (a list) and ``predict_s``.
``close``     replies and exits.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib.metadata
import json
import os
import sys
import time
import traceback

import numpy as np


def _dense_from_npz(z) -> np.ndarray:
    if "X" in z.files:
        return np.ascontiguousarray(z["X"], dtype=np.uint8)
    n, d = (int(v) for v in z["X_shape"])
    indptr, indices = z["X_indptr"].astype(np.int64), z["X_indices"].astype(np.int64)
    X = np.zeros((n, d), dtype=np.uint8)
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    X[rows, indices] = 1
    return X


class Worker:
    def __init__(self):
        self.model = None
        self.task = None
        self.data: dict[str, tuple[np.ndarray, np.ndarray | None]] = {}

    def init(self, task, arguments, seed=None):
        """Build the machine from the peer's constructor arguments (asynctm.baselines.pytm.machine_arguments)."""
        from pyTsetlinMachineParallel import tm

        if task == "classification":
            self.model = tm.MultiClassTsetlinMachine(**arguments)
        elif task == "regression":
            self.model = tm.RegressionTsetlinMachine(**arguments)
        else:
            raise ValueError(f"unknown task {task!r}")
        self.task = task
        if seed is not None:
            # The library draws the other class with libc rand(); seed it (its feedback generator has no seed
            # in the API). Its threads share the generators, so results still vary from run to run.
            path = ctypes.util.find_library("c")
            (ctypes.CDLL(path) if path else ctypes.CDLL(None)).srand(ctypes.c_uint(int(seed) % 2**32))
        try:
            omp_threads = int(tm._lib.omp_get_max_threads())  # resolved through libTM's libgomp
        except Exception:  # noqa: BLE001
            omp_threads = None
        # Asked here, not through asynctm.provenance.dist_version: this runs in pyTsetlinMachineParallel's own
        # environment, where asynctm is not installed.
        return {"library": "pyTsetlinMachineParallel",
                "version": importlib.metadata.version("pyTsetlinMachineParallel"),
                "numpy": np.__version__, "python": sys.version.split()[0], "class": type(self.model).__name__,
                "omp_max_threads": omp_threads, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
                "pid": os.getpid()}

    def load(self, name, path):
        t0 = time.perf_counter()
        with np.load(path) as z:
            X = _dense_from_npz(z)
            y = z["y"] if "y" in z.files else None
        if self.task == "classification" and y is not None:
            y = np.ascontiguousarray(y, dtype=np.uint32)
        elif y is not None:
            y = np.ascontiguousarray(y, dtype=np.float64)
        self.data[name] = (X, y)
        return {"shape": list(X.shape), "load_s": time.perf_counter() - t0}

    def fit_epoch(self, name):
        X, y = self.data[name]
        if y is None:
            raise ValueError(f"{name}: no targets loaded")
        c0, t0 = time.process_time(), time.perf_counter()
        self.model.fit(X, y, epochs=1, incremental=True)
        t1, c1 = time.perf_counter(), time.process_time()
        return {"epoch_s": t1 - t0, "cpu_s": c1 - c0}

    def predict(self, name):
        X, _ = self.data[name]
        t0 = time.perf_counter()
        out = np.asarray(self.model.predict(X))
        return {"y_pred": out.tolist(), "predict_s": time.perf_counter() - t0}


def main() -> int:
    # Replies go through the original stdout only; the library's own prints are sent to stderr.
    reply_fd = os.dup(1)
    os.dup2(2, 1)
    replies = os.fdopen(reply_fd, "w", buffering=1)
    sys.stdout = sys.stderr
    worker = Worker()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            msg = json.loads(line)
            cmd = msg.pop("cmd")
            if cmd == "close":
                replies.write(json.dumps({"ok": True}) + "\n")
                return 0
            if cmd not in ("init", "load", "fit_epoch", "predict"):
                raise ValueError(f"unknown command {cmd!r}")
            out = getattr(worker, cmd)(**msg)
            replies.write(json.dumps({"ok": True, **out}) + "\n")
        except Exception as exc:  # noqa: BLE001 - reported to the client, which raises it
            replies.write(json.dumps({"ok": False, "error": f"{type(exc).__name__}: {exc}",
                                      "traceback": traceback.format_exc()}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
