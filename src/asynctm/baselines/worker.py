"""The client side of a peer whose library runs in a worker process: a worker script started with the python of
another virtual environment (where our package is not installed), spoken to in JSON lines over a pipe.

:class:`PipePeer` starts the worker (``OMP_NUM_THREADS`` set to ``n_threads``, ``PYTHONPATH`` dropped so that it
sees its own environment's packages only), sends it the data once per new ``X`` object as an ``.npz`` in a private
temporary folder (CSR parts when ``X`` is sparse; the worker makes the dense array), calls its commands (``init``,
``load``, ``fit_epoch``, ``predict``, ``close``) and stops it, and removes the folder, when the peer is closed or
collected. Its users: :mod:`asynctm.baselines.pytm_parallel` and the benchmarks' ``worker_peers.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import weakref
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .base import Peer


class WorkerError(RuntimeError):
    """The worker process failed, or replied with an error."""


def _stop(proc: subprocess.Popen, tmp: str) -> None:
    try:
        if proc.poll() is None:
            try:
                proc.stdin.write(json.dumps({"cmd": "close"}) + "\n")
                proc.stdin.flush()
                proc.wait(timeout=10)
            except (OSError, ValueError, subprocess.TimeoutExpired):
                proc.kill()
                proc.wait(timeout=10)
    finally:
        for f in (proc.stdin, proc.stdout):
            try:
                f.close()
            except (OSError, ValueError):
                pass
        shutil.rmtree(tmp, ignore_errors=True)


class PipePeer(Peer):
    """A peer whose library runs in a worker script; subclasses set ``n_threads`` and call :meth:`_start`."""

    n_threads: int = 1
    #: Whether an error reply's traceback (from the worker) is appended to the :class:`WorkerError`'s message.
    reply_traceback = False

    def _worker_name(self) -> str:
        """How messages name the worker."""
        return f"{self.library} worker"

    def _start(self, python: str, script: str, tmp_prefix: str, **init) -> None:
        """Start ``python script``, then send it ``init`` with ``init``'s fields; its reply becomes
        :attr:`worker_info` (a failed ``init`` closes the worker and raises)."""
        self.last_epoch_s: float | None = None  # the worker's timings of the latest epoch
        self.last_epoch_cpu_s: float | None = None
        env = {**os.environ, "OMP_NUM_THREADS": str(self.n_threads)}
        env.pop("PYTHONPATH", None)  # the worker sees its own environment's packages only
        self._tmp = tempfile.mkdtemp(prefix=tmp_prefix)
        self._proc = subprocess.Popen([python, script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      text=True, bufsize=1, env=env)
        self._finalizer = weakref.finalize(self, _stop, self._proc, self._tmp)
        self._loaded: dict[str, tuple] = {}  # name -> the objects last sent under it (compared by identity)
        self._n_sent = 0
        try:
            self.worker_info = self._call("init", **init)
        except Exception:
            self.close()
            raise

    # -- the pipe -------------------------------------------------------------------------------------
    def _call(self, cmd: str, **kwargs) -> dict:
        what = self._worker_name()
        if self._proc.poll() is not None:
            raise WorkerError(f"{what} exited with status {self._proc.returncode}")
        try:
            self._proc.stdin.write(json.dumps({"cmd": cmd, **kwargs}) + "\n")
            self._proc.stdin.flush()
            line = self._proc.stdout.readline()
        except (BrokenPipeError, OSError) as exc:
            raise WorkerError(f"{what}: {exc}") from None
        if not line:
            self._proc.wait(timeout=10)
            raise WorkerError(f"{what} exited with status {self._proc.returncode} during {cmd!r} (its stderr is above)")
        reply = json.loads(line)
        if not reply.pop("ok", False):
            detail = f"\n{reply.get('traceback', '')}" if self.reply_traceback else ""
            raise WorkerError(f"{what}, {cmd}: {reply.get('error')}{detail}")
        return reply

    def _is_loaded(self, name: str, *objects) -> bool:
        prev = self._loaded.get(name)
        return prev is not None and len(prev) == len(objects) and all(a is b for a, b in zip(prev, objects))

    def _send(self, name: str, X, y=None, key: tuple | None = None) -> None:
        """Load ``X`` (and ``y``) into the worker under ``name`` unless the objects ``key`` (default
        ``(X, y)``) are what was loaded there last."""
        key = (X, y) if key is None else key
        if self._is_loaded(name, *key):
            return
        self._n_sent += 1
        path = Path(self._tmp) / f"{name}-{self._n_sent}.npz"
        arrays = {}
        if sp.issparse(X):
            X = sp.csr_matrix(X)
            arrays.update(X_data=X.data, X_indices=X.indices, X_indptr=X.indptr, X_shape=np.array(X.shape))
        else:
            arrays["X"] = np.ascontiguousarray(X, dtype=np.uint8)
        if y is not None:
            arrays["y"] = np.asarray(y)
        np.savez(path, **arrays)
        try:
            self._call("load", name=name, path=str(path))
        finally:
            path.unlink(missing_ok=True)
        self._loaded[name] = key

    def _fit_epoch(self, X, y) -> dict:
        """One epoch in the worker; its reply (the worker's timings are kept in :attr:`last_epoch_s` and
        :attr:`last_epoch_cpu_s`)."""
        self._send("train", X, y)
        out = self._call("fit_epoch", name="train")
        self.last_epoch_s, self.last_epoch_cpu_s = float(out["epoch_s"]), float(out["cpu_s"])
        return out

    # -- Peer -----------------------------------------------------------------------------------------
    def _check_X(self, X):
        from ..encoding import check_binary_matrix

        return check_binary_matrix(X)  # CSR stays CSR: the worker makes the dense array

    def _fit(self, X, y) -> None:
        self._fit_epoch(X, y)

    def _predict(self, X) -> np.ndarray:
        from ..encoding import check_binary_matrix

        if not self._is_loaded("predict", X):
            self._send("predict", check_binary_matrix(X), key=(X,))
        out = self._call("predict", name="predict")
        return np.asarray(out["y_pred"])

    def version(self) -> str | None:
        return getattr(self, "worker_info", {}).get("version")

    def _worker_metadata(self, meta: dict, threads: str, script: str, **more) -> dict:
        """``meta`` with the worker's facts: ``indexed`` (none), the threads (``threads`` names them, e.g.
        "OpenMP thread"), the device, the worker's reply to ``init`` with its executable and ``script``, its
        environment, then ``more``."""
        meta.update(indexed=None, threads=self.n_threads,
                    device=f"CPU, {self.n_threads} {threads}{'s' if self.n_threads != 1 else ''} (worker process)",
                    worker={**getattr(self, "worker_info", {}), "executable": self.python, "script": script},
                    env={"OMP_NUM_THREADS": str(self.n_threads)}, **more)
        return meta

    def close(self) -> None:
        self._cache = None
        if getattr(self, "_finalizer", None) is not None:
            self._finalizer()
