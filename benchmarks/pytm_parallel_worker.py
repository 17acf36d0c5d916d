#!/usr/bin/env python
"""Worker process of the pyTsetlinMachineParallel peer; run with the python of its own environment.

pyTsetlinMachineParallel cannot share an environment with pyTsetlinMachine (both install a top-level
``libTM`` C library, and the later install overwrites the other's), so ``benchmarks/bench_tm.py`` builds it
in ``benchmarks/.venv-pytmparallel`` (``benchmarks/setup_pytm_parallel.sh``) and drives it through this
script, which imports only NumPy and the library (never ``asynctm``). The client is
:class:`asynctm.baselines.pytm_parallel.PyTMParallelPeer`.

Protocol (the loop and the data handling are ``worker_protocol.py``'s, imported from this script's folder, which
is on ``sys.path`` when the script runs): one JSON object per line on stdin, one JSON reply per line on stdout
(``{"ok": true, ...}`` or ``{"ok": false, "error": "..."}``); anything the library prints goes to stderr. Commands:

``init``      ``task`` ("classification" / "regression"), ``arguments`` (the machine's constructor arguments),
              ``seed``: builds the machine; replies with the library version, NumPy version and the OpenMP thread
              count the library will use.
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
import os
import sys

import numpy as np
from worker_protocol import Worker, serve


class PyTMParallelWorker(Worker):
    library = "pyTsetlinMachineParallel"

    def __init__(self):
        super().__init__()
        self.model = None

    def init(self, task, arguments, seed=None):
        """Build the machine from the peer's constructor arguments (asynctm.baselines.pytm.machine_arguments)."""
        from pyTsetlinMachineParallel import tm

        if task == "classification":
            self.model = tm.MultiClassTsetlinMachine(**arguments)
        elif task == "regression":
            self.model = tm.RegressionTsetlinMachine(**arguments)
        else:
            raise ValueError(f"unknown task {task!r}")
        self.task, self.arguments, self.seed = task, dict(arguments), seed
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
        return {"library": self.library, "version": self.version(),
                "numpy": np.__version__, "python": sys.version.split()[0], "class": type(self.model).__name__,
                "omp_max_threads": omp_threads, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
                "pid": os.getpid()}

    def train_epoch(self, X, y) -> None:
        self.model.fit(X, y, epochs=1, incremental=True)

    def predict_array(self, X) -> np.ndarray:
        return self.model.predict(X)


if __name__ == "__main__":
    sys.exit(serve(PyTMParallelWorker()))
