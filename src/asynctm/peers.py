"""The peers: our Tsetlin Machine and the paper's baselines behind one interface, for the experiment runner
(:mod:`asynctm.experiments.run`), the GPU campaign and the benchmarks (:mod:`asynctm.benchmarking`).

This module holds our own adapter (:class:`AsyncTMPeer`, the reference every baseline is compared with, so it
is not one of them) and :func:`make_peer`; the interface (:class:`Peer`, importable from here) is defined in
:mod:`asynctm.baselines.base`, below the baselines that implement it, so that they import nothing of this module.
The baselines live in :mod:`asynctm.baselines`, one module each: ``pytm`` (pyTsetlinMachine 0.6.6), ``pytm_cuda``
(PyTsetlinMachineCUDA), ``pytm_parallel`` (pyTsetlinMachineParallel, in a worker process) and
``thundersvm`` (the SVM of Table 4, not a peer).

``make_peer(name, task, n_clauses, T, s, ...)`` returns a :class:`Peer` with

- ``fit_epoch(X, y)``: one more training epoch (the first call starts from a fresh model),
- ``predict(X)``: class labels (classification) or real-valued targets (regression),
- ``class_sums(X)``: classification only, the clipped class sums ``(n, C)`` int32 in ``[-T, T]``, columns in
  sorted-label order (the novelty experiments' first stage),
- ``metadata()``: library, version, device, ``indexed``, hyperparameters in both vocabularies, and how
  the peer is driven.

Hyperparameter mapping (the same numbers reach every implementation)
---------------------------------------------------------------------

================== ===================================== ===================================== =========================
ours               pyTsetlinMachine 0.6.6                pyTsetlinMachine 0.6.6                PyTsetlinMachineCUDA
                   ``MultiClassTsetlinMachine``          ``RegressionTsetlinMachine``          (both classes)
================== ===================================== ===================================== =========================
``n_clauses``      ``number_of_clauses``: also *per      ``number_of_clauses`` (one machine,   ``number_of_clauses``,
(per class)        class*: the C code builds one         positive clauses only)                per class
                   machine of ``number_of_clauses``
                   clauses for each class
``T``              ``T``                                 ``T``                                 ``T``
``s``              ``s`` (``s_range`` left unset, so     ``s``                                 ``s``
                   every clause uses ``s``)
``state_bits``     ``number_of_state_bits``              ``number_of_state_bits``              ``number_of_state_bits``
``boost_true_      ``boost_true_positive_feedback``      ``boost_true_positive_feedback``      ``boost_true_positive_
positive``         (1/0)                                 (1/0)                                 feedback`` (1/0)
``append_negated`` ``append_negated``                    always on (no option; ``False`` is    ``append_negated``
                                                         refused here)
``batch_size``     none: one example at a time           none                                  ``fit(..., batch_size=)``
``seed``           libc ``srand(seed + 1)`` (the per-    not used (no shuffle; the pcg32       not settable (a global,
                   epoch shuffle; glibc's ``srand(0)``   stream is fixed): every seed is the   unseeded curand XORWOW)
                   is ``srand(1)``); the pcg32 stream    same run (metadata ``seeded: false``)
                   of the feedback draws cannot be
                   seeded
================== ===================================== ===================================== =========================

Options we leave at their defaults because the paper's machines do not use them: weighted clauses off,
``clause_drop_p = literal_drop_p = 0``, no literal budget (``max_included_literals`` = all literals),
``max_weight = 1`` (CUDA). Classification labels are mapped to ``0..C-1`` (sorted), as both libraries
require, and mapped back by ``predict``. Regression targets are scaled to ``[0, T]`` by the training
minimum and maximum and truncated to integers by all implementations alike; predictions are
``v / T`` rescaled.

Where the implementations differ by design (same hyperparameters, different algorithm)
----------------------------------------------------------------------------------------

- **Schedule.** pyTsetlinMachine trains one example at a time, with exact class sums, and (classification
  only) shuffles the examples every epoch with libc ``rand()``; regression visits them in file order.
  Ours and PyTsetlinMachineCUDA visit examples in dataset order in batches of ``batch_size``, each clause
  reading a possibly stale voting tally (the paper's Algorithm 1).
- **Non-target classes.** pyTsetlinMachine updates the target class and *one* randomly chosen other class
  per example; ours (and the paper's GPU code) let every non-target class take part with probability
  ``1/(C-1)``. Identical for two classes (the WSD tasks).
- **The 1/s draws.** pyTsetlinMachine 0.6.6 (``tm_initialize_random_streams``) draws the *number* of
  literals to forget from a rounded normal approximation of Binomial(n, 1/s) (Box-Muller, 2 draws), then
  picks that many distinct literals with ``pcg32() % n`` (retrying repeats): about ``n/s`` pcg32 draws and
  integer divisions per Type I event, not one float per literal. PyTsetlinMachineCUDA draws one
  ``curand_uniform`` float per literal. Ours takes each 64 literals' mask from a per-seed pool of bits with exactly
  ``round(2^22/s)`` ones, chosen and rotated by counter-based draws: P(m = 1) within ``2^-23`` of ``1/s``
  (``kernels/README.md``, "The 1/s pool").
- **Regression update probability.** pyTsetlinMachine 0.6.6 gives a clause feedback with probability
  ``((v - y) / T)^2``; ours and PyTsetlinMachineCUDA (the paper's GPU code) with ``|y - v| / 2T``. The
  feedback *types* agree (Type I when ``v < y``, Type II when ``v > y``). So on Bike Sharing the
  hyperparameters are identical but the RTM update rule is not: compare its timings per epoch with this
  in mind (fewer updates per epoch once the error is small).

How the peers are driven
------------------------

``fit_epoch`` calls the library's ``fit(X, y, epochs=1, incremental=True)``, once per epoch, as the
paper's authors drove pyTsetlinMachine (evaluating between epochs). pyTsetlinMachine re-encodes its input
(``X.flatten().astype(uint32)`` then ``tm_encode``) and, with ``indexed=True``, rebuilds its clause index
on every ``fit`` call; that cost is part of its epoch, because that is what its users pay. Ours encodes
once: passing the very same ``X``/``y`` objects again continues without re-encoding. PyTsetlinMachineCUDA
keeps its encoded training data on the GPU while ``X`` compares equal.

PyTsetlinMachineCUDA is imported only when a CUDA GPU is found (:mod:`asynctm.baselines.pytm_cuda`).
"""

from __future__ import annotations

import numpy as np

# The interface lies below the baselines that implement it; both names stay importable from here (the GPU
# benchmark, benchmarks/bench_gpu.py, and the benchmarks' peers import them so).
from .baselines.base import Peer, dense01  # noqa: F401

PEERS = ("asynctm", "pytm", "pytm_cuda")


class AsyncTMPeer(Peer):
    """This package's estimators (``backend``, ``n_threads``, ``gpu_threads_per_clause``, ``gpu_shared_state`` as
    in :class:`asynctm.TMClassifier`)."""

    library = "asynctm"
    peer = "asynctm"

    def __init__(self, *args, backend: str = "cpu", n_threads: int | None = None, gpu_threads_per_clause: int = 1,
                 gpu_shared_state: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        from .estimators import TMClassifier, TMRegressor

        cls = TMClassifier if self.task == "classification" else TMRegressor
        self.model = cls(n_clauses=self.n_clauses, T=self.T, s=self.s, state_bits=self.state_bits,
                         boost_true_positive=self.boost_true_positive, append_negated=self.append_negated,
                         batch_size=self.batch_size, backend=backend, n_threads=n_threads, seed=self.seed,
                         gpu_threads_per_clause=gpu_threads_per_clause, gpu_shared_state=gpu_shared_state)

    def prepare(self, X, y) -> dict:
        """Build (or load) the kernels, encode and upload the data, compute the tallies: no training.
        ``{"compile_s", "encode_s", "upload_s"}`` (see the estimator's ``setup_timings_``)."""
        self.model._prepare_training(X, y)
        self._prepared = True
        return dict(self.model.setup_timings_)

    def fit_epoch(self, X, y) -> None:
        # The estimator validates and encodes X itself, once per new X object; no conversion here.
        continuing = self.epochs_trained > 0 or getattr(self, "_prepared", False)
        self.model.fit(X, y, epochs=1, incremental=continuing)
        self.epochs_trained += 1

    def predict(self, X) -> np.ndarray:
        return self.model.predict(X)

    def _class_sums(self, X) -> np.ndarray:
        return self.model.class_sums(X)  # already clipped to [-T, T], columns = sorted classes_

    def _n_classes(self) -> int:
        return len(self.model.classes_)

    def version(self) -> str | None:
        import asynctm

        return asynctm.__version__

    def library_arguments(self) -> dict:
        # The runner drives the epochs one fit call at a time and the data layer binarizes: the estimator's own
        # `epochs` (fit's default) and `booleanize` are not how the run trained, so its record leaves them out.
        return {k: v for k, v in self.model.get_params().items() if k not in ("epochs", "booleanize")}

    def metadata(self) -> dict:
        meta = super().metadata()
        be = getattr(self.model, "_backend", None)
        meta["backend"] = getattr(self.model, "backend_", None)
        meta["device"] = getattr(self.model, "device_", None)
        meta["threads"] = getattr(be, "n_threads", None) if meta["backend"] == "cpu" else None
        if meta["backend"] == "cuda":
            meta["threads_per_clause"] = self.model.gpu_threads_per_clause
            meta["shared_state"] = self.model.gpu_shared_state
        meta["driving"] = ("fit(X, y, epochs=1) then fit(X, y, epochs=1, incremental=True) with the same X, y "
                           "objects (encoded once)")
        return meta

    def close(self) -> None:
        self.model.close()

    resume_exact = True
    resume_note = ("TA states, voting tallies and stored clause outputs restored; the random draws are keyed by "
                   "(seed, epoch), so on one thread a resumed run equals an uninterrupted one bit for bit")

    def checkpoint(self) -> dict | None:
        arrays = self.model._save_arrays()
        arrays.update({f"training_{k}": v for k, v in self.model._training_state().items()})
        return arrays

    def restore(self, path, X, y, epochs_trained: int) -> None:
        params = self.model.get_params()
        model = type(self.model).load(path, backend=params["backend"], n_threads=params["n_threads"])
        if model.epochs_trained_ != epochs_trained:
            raise ValueError(f"{path}: holds {model.epochs_trained_} epochs, expected {epochs_trained}")
        model._prepare_training(X, y, incremental=True)  # the training data, tallies recomputed from the clauses
        with np.load(path, allow_pickle=False) as z:  # ... then the tallies the run had (stale ones included)
            model._set_training_state(z["training_class_sum"], z["training_clause_output"])
        self.model.close()
        self.model = model
        self._prepared = True
        self.epochs_trained = epochs_trained


def make_peer(name: str, task: str, n_clauses: int, T: int, s: float, *, state_bits: int = 8,
              boost_true_positive: bool = True, append_negated: bool = True, batch_size: int = 100,
              seed: int | None = None, indexed: bool = True, backend: str = "cpu",
              n_threads: int | None = None, gpu_threads_per_clause: int = 1, gpu_shared_state: bool = False) -> Peer:
    """A peer by name (one of :data:`PEERS`) with our hyperparameter names (see the module docstring).

    ``indexed`` applies to ``pytm`` classification only; ``backend``, ``n_threads``, ``gpu_threads_per_clause``
    and ``gpu_shared_state`` to ``asynctm`` only.
    Raises ``ImportError`` when the library is missing and
    :class:`asynctm.backends.BackendUnavailableError` when it needs a GPU that is not there.
    """
    common = {"state_bits": state_bits, "boost_true_positive": boost_true_positive,
              "append_negated": append_negated, "batch_size": batch_size, "seed": seed}
    if name == "asynctm":
        return AsyncTMPeer(task, n_clauses, T, s, backend=backend, n_threads=n_threads,
                           gpu_threads_per_clause=gpu_threads_per_clause, gpu_shared_state=gpu_shared_state, **common)
    if name == "pytm":
        from .baselines.pytm import PyTMPeer

        return PyTMPeer(task, n_clauses, T, s, indexed=indexed, **common)
    if name == "pytm_cuda":
        from .baselines.pytm_cuda import PyTMCudaPeer

        return PyTMCudaPeer(task, n_clauses, T, s, **common)
    raise ValueError(f"unknown peer {name!r}; known: {', '.join(PEERS)}")
