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

import os
from pathlib import Path

from .pytm import machine_arguments
from .worker import PipePeer, WorkerError  # noqa: F401 - WorkerError: what a failed worker raises

DIST = "pyTsetlinMachineParallel"
VERSION = "0.2.1"


class PyTMParallelPeer(PipePeer):
    """pyTsetlinMachineParallel on ``n_threads`` OpenMP threads, in a worker run by ``python``."""

    library = DIST
    peer = "pytm_parallel"
    reply_traceback = True

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
        self._start(self.python, self.worker, "asynctm-pytmparallel-", task=self.task,
                    arguments=self.library_arguments(), seed=self.seed)

    def library_arguments(self) -> dict:
        return machine_arguments(self)

    def metadata(self) -> dict:
        meta = self._worker_metadata(
            super().metadata(), "OpenMP thread", self.worker,
            random_numbers="the library's own generator and libc rand(), shared by all threads; srand(seed) "
                           "in the worker; not reproducible run to run (thread interleaving)",
            timing="perf_counter around fit(X, y, epochs=1, incremental=True) inside the worker; the pipe "
                   "round trip is left out")
        meta["driving"] += "; every call re-encodes X (flatten, uint32, tm_encode); examples in file order"
        return meta
