"""The JSON-lines loop shared by the benchmark's worker scripts of the peers that live in their own virtual
environments (``tmu_worker.py``, ``green_tsetlin_worker.py``, whose client is ``worker_peers.py``, and
``pytm_parallel_worker.py``, whose client is :mod:`asynctm.baselines.pytm_parallel`).

It imports NumPy only (never ``asynctm``): a worker runs with the python of its library's environment, where our
package is not installed. The script's folder is on ``sys.path`` when a worker runs, which is how the workers
import this module.

Protocol: one JSON object per line on stdin, one JSON reply per line on stdout (``{"ok": true, ...}`` or
``{"ok": false, "error": "..."}``); whatever the library prints goes to stderr. Commands:

``init``      ``task``, ``arguments`` (the library's constructor arguments, as the client recorded them),
              ``seed``, ``n_threads``: the library's version and environment come back.
``load``      ``name``, ``path``: an ``.npz`` with ``X`` (dense) or ``X_data``/``X_indices``/``X_indptr``/
              ``X_shape`` (CSR), and optionally ``y``; X becomes the dense array the library takes once, here,
              outside any timed region.
``fit_epoch`` ``name``: one training epoch, timed by the worker with ``perf_counter`` and ``process_time``;
              replies ``epoch_s``, ``cpu_s`` (and ``built``: the arguments of a model made by this epoch).
``predict``   ``name``: replies ``y_pred`` (a list) and ``predict_s``.
``close``     replies and exits.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback

import numpy as np


def dense_from_npz(z, dtype=np.uint8) -> np.ndarray:
    """The 0/1 matrix of an ``.npz`` written by the client, dense, C-contiguous, of ``dtype``."""
    if "X" in z.files:
        return np.ascontiguousarray(z["X"], dtype=dtype)
    n, d = (int(v) for v in z["X_shape"])
    indptr, indices = z["X_indptr"].astype(np.int64), z["X_indices"].astype(np.int64)
    X = np.zeros((n, d), dtype=dtype)
    X[np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr)), indices] = 1
    return X


class Worker:
    """A library behind the protocol: subclasses implement ``build``, ``convert``, ``train_epoch`` and
    ``predict_array`` (and may override ``version``, or ``init`` where its reply is their own)."""

    library = "?"

    def __init__(self):
        self.task = None
        self.arguments: dict = {}
        self.seed = None
        self.n_threads = 1
        self.data: dict[str, tuple[np.ndarray, np.ndarray | None]] = {}

    # -- to implement --------------------------------------------------------------------------------------
    def build(self) -> dict:
        """Make the model from ``self.arguments``; returns extra facts for the init reply."""
        raise NotImplementedError

    def convert(self, X: np.ndarray, y: np.ndarray | None) -> tuple:
        """The arrays as the library takes them (done once per load)."""
        return X, y

    def train_epoch(self, X, y) -> dict | None:
        """One epoch; may return facts for the reply (e.g. what a model built on its first epoch)."""
        raise NotImplementedError

    def predict_array(self, X) -> np.ndarray:
        raise NotImplementedError

    def version(self) -> str | None:
        import importlib.metadata

        return importlib.metadata.version(self.library)

    # -- the commands --------------------------------------------------------------------------------------
    def init(self, task, arguments, seed=None, n_threads=1):
        if task not in ("classification", "regression"):
            raise ValueError(f"unknown task {task!r}")
        self.task, self.arguments, self.seed, self.n_threads = task, dict(arguments), seed, int(n_threads)
        extra = self.build() or {}
        return {"library": self.library, "version": self.version(), "numpy": np.__version__,
                "python": sys.version.split()[0], "pid": os.getpid(), **extra}

    def load(self, name, path):
        t0 = time.perf_counter()
        with np.load(path) as z:
            X = dense_from_npz(z)
            y = z["y"] if "y" in z.files else None
        if y is not None:
            y = np.ascontiguousarray(y, dtype=np.uint32 if self.task == "classification" else np.float64)
        self.data[name] = self.convert(X, y)
        return {"shape": list(X.shape), "load_s": time.perf_counter() - t0}

    def fit_epoch(self, name):
        X, y = self.data[name]
        if y is None:
            raise ValueError(f"{name}: no targets loaded")
        c0, t0 = time.process_time(), time.perf_counter()
        extra = self.train_epoch(X, y)
        t1, c1 = time.perf_counter(), time.process_time()
        return {"epoch_s": t1 - t0, "cpu_s": c1 - c0, **(extra or {})}

    def predict(self, name):
        X, _ = self.data[name]
        t0 = time.perf_counter()
        out = np.asarray(self.predict_array(X))
        return {"y_pred": out.tolist(), "predict_s": time.perf_counter() - t0}


def serve(worker: Worker) -> int:
    """Answer the client's commands on stdin until ``close`` or the end of input."""
    # Replies go through the original stdout only; the library's own prints go to stderr.
    reply_fd = os.dup(1)
    os.dup2(2, 1)
    replies = os.fdopen(reply_fd, "w", buffering=1)
    sys.stdout = sys.stderr
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
