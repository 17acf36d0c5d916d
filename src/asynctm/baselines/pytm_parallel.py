"""pyTsetlinMachineParallel (Granmo's OpenMP build of pyTsetlinMachine) as a peer, in a worker process.

pyTsetlinMachineParallel 0.2.1 and pyTsetlinMachine 0.6.6 both install their C library as a top-level
``libTM`` extension in ``site-packages``; installing one overwrites the other's. So this peer never imports
the library: it starts a worker script (``benchmarks/pytm_parallel_worker.py``) with the python of a
separate virtual environment (``benchmarks/setup_pytm_parallel.sh`` builds ``benchmarks/.venv-pytmparallel``)
and talks to it in JSON lines over a pipe. The caller passes both paths; nothing here knows the repository
layout.

Hyperparameters map as for pyTsetlinMachine (:mod:`asynctm.peers`): ``number_of_clauses`` per
class, ``T``, ``s``, ``number_of_state_bits``, ``boost_true_positive_feedback``, ``append_negated``
(classification; the regression machine always appends negated literals). Differences from
pyTsetlinMachine 0.6.6: no clause index (``MultiClassTsetlinMachine`` has no ``indexed`` option), no
per-epoch shuffle (examples in file order, split across OpenMP threads, ``#pragma omp parallel for``, for the
multi-class and the regression machine alike), and one lock per clause around its feedback (read in the
cair/pyTsetlinMachineParallel C source; the installed 0.2.1 ships only the compiled library). The regression
machine updates a clause with probability ``((v - y) / T)^2`` like pyTsetlinMachine 0.6.6. Random numbers:
the library's own generator for the feedback draws and libc ``rand()`` (the other class); neither is
seedable through its API. The worker calls ``srand(seed)``, but all threads draw from shared generators, so
runs do not repeat exactly.

Timing: the worker times ``fit(X, y, epochs=1, incremental=True)`` itself with ``perf_counter`` (and its
CPU time with ``process_time``); :attr:`last_epoch_s` / :attr:`last_epoch_cpu_s` hold the latest, so a
runner can report the library's epoch without the pipe round trip. The threads: ``OMP_NUM_THREADS`` is set
to ``n_threads`` in the worker's environment and the library's ``omp_get_max_threads()`` is reported back.
The data go to the worker once per new ``X`` object, as an ``.npz`` in a private temporary folder (CSR parts
when ``X`` is sparse, so a 6,000 x 102,176 SemEval matrix travels as its ~190,000 ones); the worker makes
the dense uint8 array the library needs once, outside the timed region, like the in-process pyTM peer.
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
from .pytm import machine_arguments

DIST = "pyTsetlinMachineParallel"
VERSION = "0.2.1"


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


class PyTMParallelPeer(Peer):
    """pyTsetlinMachineParallel on ``n_threads`` OpenMP threads, in a worker run by ``python``."""

    library = DIST
    peer = "pytm_parallel"

    def __init__(self, *args, python: str | os.PathLike, worker: str | os.PathLike, n_threads: int = 1,
                 **kwargs):
        super().__init__(*args, **kwargs)
        python, worker = Path(python), Path(worker)
        if not python.exists():
            raise FileNotFoundError(f"no python for {DIST} at {python} (build its environment with "
                                    "benchmarks/setup_pytm_parallel.sh)")
        if not worker.is_file():
            raise FileNotFoundError(f"no worker script at {worker}")
        self.n_threads = int(n_threads)
        self.python, self.worker = str(python), str(worker)
        self.last_epoch_s: float | None = None
        self.last_epoch_cpu_s: float | None = None
        self.last_predict_s: float | None = None
        env = {**os.environ, "OMP_NUM_THREADS": str(self.n_threads)}
        env.pop("PYTHONPATH", None)  # the worker must see its own environment's packages only
        self._tmp = tempfile.mkdtemp(prefix="asynctm-pytmparallel-")
        self._proc = subprocess.Popen([self.python, self.worker], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      text=True, bufsize=1, env=env)
        self._finalizer = weakref.finalize(self, _stop, self._proc, self._tmp)
        self._loaded: dict[str, tuple] = {}  # name -> the objects last sent under it (compared by identity)
        self._n_sent = 0
        try:
            self.worker_info = self._call("init", task=self.task, arguments=self.library_arguments(), seed=self.seed)
        except Exception:
            self.close()
            raise

    # -- the pipe -------------------------------------------------------------------------------------
    def _call(self, cmd: str, **kwargs) -> dict:
        if self._proc.poll() is not None:
            raise WorkerError(f"{DIST} worker exited with status {self._proc.returncode}")
        try:
            self._proc.stdin.write(json.dumps({"cmd": cmd, **kwargs}) + "\n")
            self._proc.stdin.flush()
            line = self._proc.stdout.readline()
        except (BrokenPipeError, OSError) as exc:
            raise WorkerError(f"{DIST} worker: {exc}") from None
        if not line:
            self._proc.wait(timeout=10)
            raise WorkerError(f"{DIST} worker exited with status {self._proc.returncode} during {cmd!r} "
                              "(its stderr is above)")
        reply = json.loads(line)
        if not reply.pop("ok", False):
            raise WorkerError(f"{DIST} worker, {cmd}: {reply.get('error')}\n{reply.get('traceback', '')}")
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

    # -- Peer -----------------------------------------------------------------------------------------
    def _check_X(self, X):
        from ..encoding import check_binary_matrix

        return check_binary_matrix(X)  # CSR stays CSR: the worker densifies

    def _fit(self, X, y) -> None:
        self._send("train", X, y)
        out = self._call("fit_epoch", name="train")
        self.last_epoch_s, self.last_epoch_cpu_s = float(out["epoch_s"]), float(out["cpu_s"])

    def _predict(self, X) -> np.ndarray:
        from ..encoding import check_binary_matrix

        if not self._is_loaded("predict", X):
            self._send("predict", check_binary_matrix(X), key=(X,))
        out = self._call("predict", name="predict")
        self.last_predict_s = float(out["predict_s"])
        return np.asarray(out["y_pred"])

    def version(self) -> str | None:
        return getattr(self, "worker_info", {}).get("version")

    def library_arguments(self) -> dict:
        return machine_arguments(self)

    def metadata(self) -> dict:
        meta = super().metadata()
        info = dict(getattr(self, "worker_info", {}))
        meta.update(
            indexed=None, threads=self.n_threads,
            device=f"CPU, {self.n_threads} OpenMP thread{'s' if self.n_threads != 1 else ''} (worker process)",
            worker={**info, "executable": self.python, "script": self.worker},
            env={"OMP_NUM_THREADS": str(self.n_threads)},
            random_numbers="the library's own generator and libc rand(), shared by all threads; srand(seed) "
                           "in the worker; not reproducible run to run (thread interleaving)",
            timing="perf_counter around fit(X, y, epochs=1, incremental=True) inside the worker; the pipe "
                   "round trip is left out")
        meta["driving"] += "; every call re-encodes X (flatten, uint32, tm_encode); examples in file order"
        return meta

    def close(self) -> None:
        self._cache = None
        if getattr(self, "_finalizer", None) is not None:
            self._finalizer()
