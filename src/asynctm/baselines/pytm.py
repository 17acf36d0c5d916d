"""Peers: our Tsetlin Machine and the paper's baselines behind one interface.

``make_peer(name, task, n_clauses, T, s, ...)`` returns a :class:`Peer` with

- ``fit_epoch(X, y)``: one more training epoch (the first call starts from a fresh model),
- ``predict(X)``: class labels (classification) or real-valued targets (regression),
- ``class_sums(X)``: classification only, the clipped class sums ``(n, C)`` int32 in ``[-T, T]``, columns in
  sorted-label order (the novelty experiments' first stage),
- ``metadata()``: library, version, device, ``indexed``, hyperparameters in both vocabularies, and how
  the peer is driven.

Hyperparameter mapping (the same numbers reach every implementation)
---------------------------------------------------------------------

===================== ===================================== ===================================== ==========================
ours                  pyTsetlinMachine 0.6.6                pyTsetlinMachine 0.6.6                PyTsetlinMachineCUDA
                      ``MultiClassTsetlinMachine``          ``RegressionTsetlinMachine``          (both classes)
===================== ===================================== ===================================== ==========================
``n_clauses``         ``number_of_clauses``: also *per      ``number_of_clauses`` (one machine,   ``number_of_clauses``, per
(per class)           class*: the C code builds one         positive clauses only)                class
                      machine of ``number_of_clauses``
                      clauses for each class
``T``                 ``T``                                 ``T``                                 ``T``
``s``                 ``s`` (``s_range`` left unset, so     ``s``                                 ``s``
                      every clause uses ``s``)
``state_bits``        ``number_of_state_bits``              ``number_of_state_bits``              ``number_of_state_bits``
``boost_true_         ``boost_true_positive_feedback``      ``boost_true_positive_feedback``      ``boost_true_positive_
positive``            (1/0)                                 (1/0)                                 feedback`` (1/0)
``append_negated``    ``append_negated``                    always on (no option; ``False`` is    ``append_negated``
                                                            refused here)
``batch_size``        none: one example at a time           none                                  ``fit(..., batch_size=)``
``seed``              libc ``srand(seed + 1)`` (the per-    not used (no shuffle; the pcg32       not settable (a global,
                      epoch shuffle; glibc's ``srand(0)``   stream is fixed): every seed is the   unseeded curand XORWOW)
                      is ``srand(1)``); the pcg32 stream    same run (metadata ``seeded: false``)
                      of the feedback draws cannot be
                      seeded
===================== ===================================== ===================================== ==========================

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

PyTsetlinMachineCUDA is imported only when a CUDA GPU is found. It runs ``import pycuda.autoinit`` at
import, which would create a second CUDA context beside ours; :func:`_share_our_context` puts a stand-in
for that module in place first, so that both libraries' buffers and kernels live in our (primary) context.
That adapter has never been run on the machine it was written on (no GPU there); treat its first run on a
GPU as its test.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib.metadata
import numbers
import threading
import time

import numpy as np
import scipy.sparse as sp

PEERS = ("asynctm", "pytm", "pytm_cuda")
TASKS = ("classification", "regression")

_PYTM_DIST = "pyTsetlinMachine"
_PYTM_CUDA_DISTS = ("pyTsetlinMachineCUDA", "PyTsetlinMachineCUDA", "pytsetlinmachinecuda")


def _dist_version(*names: str) -> str | None:
    for name in names:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def available_peers() -> dict[str, str]:
    """``{peer: "ok" or the reason it cannot run here}``, without importing any GPU code."""
    out = {"asynctm": "ok"}
    try:
        import pyTsetlinMachine.tm  # noqa: F401
        out["pytm"] = "ok"
    except Exception as exc:  # noqa: BLE001 - any import failure means "not here"
        out["pytm"] = f"pyTsetlinMachine not importable: {exc}"
    if _dist_version(*_PYTM_CUDA_DISTS) is None:
        out["pytm_cuda"] = "PyTsetlinMachineCUDA is not installed"
    else:
        from ..backends import cuda_available

        out["pytm_cuda"] = "ok" if cuda_available() else "no CUDA GPU here"
    return out


def interruptible(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` run in a daemon thread while this (main) thread waits for it, so that SIGINT and
    SIGTERM handlers run within a fraction of a second even while pyTsetlinMachine's C code is busy for
    minutes: Python runs signal handlers only in the main thread, between bytecodes, never inside a C call.
    pyTsetlinMachine calls its C library through ctypes, which releases the GIL, so the waiting thread stays
    responsive. On an exception here (KeyboardInterrupt, the runner's SIGTERM handler) the worker is left
    behind: the process is ending. Off the main thread, ``fn`` is called directly."""
    if threading.current_thread() is not threading.main_thread():
        return fn(*args, **kwargs)
    box = {}

    def work():
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            box["error"] = exc

    worker = threading.Thread(target=work, name="pyTsetlinMachine", daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(0.25)
    if "error" in box:
        raise box["error"]
    return box.get("value")


def _dense01(X) -> np.ndarray:
    """A dense 0/1 uint8 array (the baselines take dense input only), validated like ours."""
    from ..encoding import check_binary_matrix

    X = check_binary_matrix(X)
    if sp.issparse(X):
        X = X.toarray()
    return np.ascontiguousarray(X, dtype=np.uint8)


class Peer:
    """One implementation, trained epoch by epoch. Subclasses set ``library`` and implement ``_fit``."""

    library = "?"
    peer = "?"

    def __init__(self, task: str, n_clauses: int, T: int, s: float, state_bits: int = 8,
                 boost_true_positive: bool = True, append_negated: bool = True, batch_size: int = 100,
                 seed: int | None = None):
        if task not in TASKS:
            raise ValueError(f"task must be one of {TASKS}, got {task!r}")
        for name, value in (("n_clauses", n_clauses), ("T", T), ("state_bits", state_bits),
                            ("batch_size", batch_size)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if task == "classification" and n_clauses % 2:
            raise ValueError(f"n_clauses must be even for classification, got {n_clauses}")
        if isinstance(s, bool) or not isinstance(s, numbers.Real) or not s >= 1:
            raise ValueError(f"s must be a number >= 1, got {s!r}")
        self.task = task
        self.n_clauses, self.T, self.s, self.state_bits = int(n_clauses), int(T), float(s), int(state_bits)
        self.boost_true_positive, self.append_negated = bool(boost_true_positive), bool(append_negated)
        self.batch_size, self.seed = int(batch_size), seed
        self.epochs_trained = 0
        self.classes_: np.ndarray | None = None
        self._cache: tuple | None = None  # (X, y, converted X, converted y): convert each input once

    # -- the interface ------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.peer

    def prepare(self, X, y) -> dict:
        """One-time set-up on the training data before the first epoch, timed apart from the epochs:
        ``{"encode_s": ...}`` (here: checking and converting X to the dense 0/1 array the library takes;
        the library's own per-call encoding stays inside every epoch, as its users pay it)."""
        t0 = time.perf_counter()
        self._cache = (X, y, *self._convert(X, y))
        return {"encode_s": time.perf_counter() - t0}

    def fit_epoch(self, X, y) -> None:
        """Train one more epoch on ``(X, y)`` (a fresh model on the first call)."""
        if self._cache is None or self._cache[0] is not X or self._cache[1] is not y:
            self._cache = (X, y, *self._convert(X, y))
        self._fit(self._cache[2], self._cache[3])
        self.epochs_trained += 1

    def predict(self, X) -> np.ndarray:
        if self.epochs_trained == 0:
            raise RuntimeError(f"{self.name}: call fit_epoch first")
        out = self._predict(X)
        if self.task == "classification" and self.classes_ is not None:
            return self.classes_[np.asarray(out, dtype=np.int64)]
        return np.asarray(out, dtype=np.float64)

    def hyperparameters(self) -> dict:
        return {"n_clauses": self.n_clauses, "T": self.T, "s": self.s, "state_bits": self.state_bits,
                "boost_true_positive": self.boost_true_positive, "append_negated": self.append_negated,
                "batch_size": self.batch_size}

    def metadata(self) -> dict:
        return {"peer": self.peer, "library": self.library, "version": self.version(), "task": self.task,
                "indexed": None, "device": "CPU, 1 thread", "threads": 1, "seed": self.seed,
                "hyperparameters": self.hyperparameters(), "library_arguments": self.library_arguments(),
                "driving": "fit(X, y, epochs=1, incremental=True) once per epoch"}

    def close(self) -> None:
        self._cache = None

    def class_sums(self, X) -> np.ndarray:
        """The clipped class sums ``(n, C)`` int32 in ``[-T, T]``; column ``c`` is the ``c``-th class in sorted
        label order, so ``argmax`` over columns is ``predict`` (up to ties). Classification only."""
        if self.task != "classification":
            raise ValueError(f"{self.name}: class sums are a classification notion; this peer does {self.task} "
                             "(its single clause sum is what predict rescales)")
        if self.epochs_trained == 0:
            raise RuntimeError(f"{self.name}: call fit_epoch first")
        n = X.shape[0]
        out = np.asarray(self._class_sums(X))
        n_classes = self._n_classes()
        if out.shape != (n, n_classes):
            raise RuntimeError(f"{self.name}: class sums of shape {out.shape}, expected {(n, n_classes)}")
        return np.clip(out, -self.T, self.T).astype(np.int32)

    def _n_classes(self) -> int:
        return len(self.classes_)

    # -- checkpoints (experiments.run resumes an interrupted run from its last completed epoch) -------------
    #: Whether a run resumed from a checkpoint trains exactly as an uninterrupted one (None: no checkpoints).
    resume_exact: bool | None = None
    #: What a resume restores and what it cannot (the record repeats it).
    resume_note = "this peer's state cannot be saved: an interrupted run restarts from epoch 1"

    def checkpoint(self) -> dict | None:
        """The state after the epochs trained so far, as named arrays for an ``.npz`` (None: not supported)."""
        return None

    def restore(self, path, X, y, epochs_trained: int) -> None:
        """Continue from the arrays of :meth:`checkpoint` in the ``.npz`` at ``path``, on the same ``(X, y)``,
        after ``prepare(X, y)``; the next ``fit_epoch`` trains epoch ``epochs_trained + 1``."""
        raise NotImplementedError(f"{self.name}: {self.resume_note}")

    # -- to implement ---------------------------------------------------------------------------------
    def version(self) -> str | None:
        raise NotImplementedError

    def library_arguments(self) -> dict:
        raise NotImplementedError

    def _fit(self, X, y) -> None:
        raise NotImplementedError

    def _predict(self, X) -> np.ndarray:
        raise NotImplementedError

    def _class_sums(self, X) -> np.ndarray:
        raise NotImplementedError(f"{self.name}: class sums are not available")

    # -- shared helpers -------------------------------------------------------------------------------
    def _check_X(self, X):
        """The training input as this peer's library takes it (default: a dense 0/1 uint8 array)."""
        return _dense01(X)

    def _convert(self, X, y):
        X = self._check_X(X)
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != X.shape[0]:
            raise ValueError(f"y must be 1-D with one target per row of X ({X.shape[0]}), got shape {y.shape}")
        if self.task == "classification":
            if self.classes_ is None:
                self.classes_ = np.unique(y)
                if len(self.classes_) < 2:
                    raise ValueError("y must contain at least 2 classes")
            idx = np.clip(np.searchsorted(self.classes_, y), 0, len(self.classes_) - 1)
            if not np.all(self.classes_[idx] == y):
                raise ValueError("y contains a class not seen in the first fit_epoch")
            return X, idx.astype(np.uint32)
        return X, y.astype(np.float64)


class AsyncTMPeer(Peer):
    """This package's estimators (``backend``, ``n_threads`` as in :class:`asynctm.TMClassifier`)."""

    library = "asynctm"
    peer = "asynctm"

    def __init__(self, *args, backend: str = "cpu", n_threads: int | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        from ..estimators import TMClassifier, TMRegressor

        cls = TMClassifier if self.task == "classification" else TMRegressor
        self.model = cls(n_clauses=self.n_clauses, T=self.T, s=self.s, state_bits=self.state_bits,
                         boost_true_positive=self.boost_true_positive, append_negated=self.append_negated,
                         batch_size=self.batch_size, backend=backend, n_threads=n_threads, seed=self.seed)

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
        return self.model.decision_function(X)  # already clipped to [-T, T], columns = sorted classes_

    def _n_classes(self) -> int:
        return len(self.model.classes_)

    def version(self) -> str | None:
        import asynctm

        return asynctm.__version__

    def library_arguments(self) -> dict:
        return self.model.get_params()

    def metadata(self) -> dict:
        meta = super().metadata()
        be = getattr(self.model, "_backend", None)
        meta["backend"] = getattr(self.model, "backend_", None)
        meta["device"] = getattr(self.model, "device_", None)
        meta["threads"] = getattr(be, "n_threads", None) if meta["backend"] == "cpu" else None
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


def _libc():
    path = ctypes.util.find_library("c")
    return ctypes.CDLL(path) if path else ctypes.CDLL(None)


def libc_seed(seed: int) -> int:
    """The value given to libc ``srand`` for our ``seed``: ``seed + 1``. glibc's ``srand(0)`` is ``srand(1)``
    (it replaces a zero seed by 1), so seeding with ``seed`` itself made seeds 0 and 1 one run."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= seed < 2**32 - 1:
        raise ValueError(f"a pyTsetlinMachine seed must be an integer in [0, 2^32 - 2] (libc srand takes seed + 1), "
                         f"got {seed!r}")
    return int(seed) + 1


def machine_arguments(peer: Peer) -> dict:
    """Keyword arguments of pyTsetlinMachine's machines for ``peer``'s settings (pyTsetlinMachineParallel's
    MultiClassTsetlinMachine and RegressionTsetlinMachine take the same): ``number_of_clauses``, ``T``,
    ``s``, ``boost_true_positive_feedback``, ``number_of_state_bits``, and for classification
    ``append_negated``. The regression machines always append negated literals, so ``append_negated=False``
    is refused there."""
    args = {"number_of_clauses": peer.n_clauses, "T": peer.T, "s": peer.s,
            "boost_true_positive_feedback": int(peer.boost_true_positive),
            "number_of_state_bits": peer.state_bits}
    if peer.task == "classification":
        args["append_negated"] = peer.append_negated
    elif not peer.append_negated:
        raise ValueError(f"{peer.library}'s RegressionTsetlinMachine always appends negated literals; "
                         "append_negated=False cannot be matched")
    return args


class PyTMPeer(Peer):
    """pyTsetlinMachine 0.6.6 on one CPU thread, ``indexed=True`` (default) or ``False``."""

    library = "pyTsetlinMachine"
    peer = "pytm"

    def __init__(self, *args, indexed: bool = True, **kwargs):
        super().__init__(*args, **kwargs)
        # Raises ImportError if absent: callers skip.
        from pyTsetlinMachine import tm as pytm

        # the regression machine has no index
        self.indexed = bool(indexed) and self.task == "classification"
        if self.task == "classification":
            self.model = pytm.MultiClassTsetlinMachine(**self.library_arguments())
        else:
            self.model = pytm.RegressionTsetlinMachine(**self.library_arguments())
        # The classification machines shuffle the examples every epoch with libc rand(): seed it so the order is
        # reproducible. The regression machine does not shuffle, so there the seed changes nothing.
        self.libc_seed = libc_seed(self.seed) if self.seed is not None and self.task == "classification" else None
        if self.libc_seed is not None:
            _libc().srand(ctypes.c_uint(self.libc_seed))

    @property
    def name(self) -> str:
        if self.task == "classification":
            return "pytm_indexed" if self.indexed else "pytm_unindexed"
        return "pytm"

    def version(self) -> str | None:
        return _dist_version(_PYTM_DIST)

    def library_arguments(self) -> dict:
        args = machine_arguments(self)
        if self.task == "classification":
            args["indexed"] = self.indexed
        return args

    def metadata(self) -> dict:
        meta = super().metadata()
        meta["indexed"] = self.indexed if self.task == "classification" else None
        meta["class"] = type(self.model).__name__
        meta["random_numbers"] = (
            "pcg32 with a fixed start state per process (not seedable, shared by all instances); "
            + ("libc rand() for the per-epoch shuffle, seeded with srand(seed + 1) (glibc's srand(0) is srand(1))"
               if self.libc_seed is not None else
               "no shuffle, so the seed changes nothing: every seed repeats one run" if self.task == "regression"
               else "libc rand() for the per-epoch shuffle, unseeded"))
        # seeded: whether the seed changes the run at all (false: all seeds are one distinct run).
        meta["seeded"] = self.libc_seed is not None
        meta["libc_srand_seed"] = self.libc_seed
        meta["driving"] += ("; every call re-encodes X" + (" and rebuilds the clause index" if meta["indexed"]
                                                            else ""))
        return meta

    def _fit(self, X, y) -> None:
        interruptible(self.model.fit, X, y, epochs=1, incremental=True)

    resume_exact = False
    resume_note = ("TA states and clause weights restored (get_state/set_state); pyTsetlinMachine's random "
                   "streams cannot be saved (pcg32 restarts from its fixed state, libc rand() from srand), so the "
                   "epochs after a resume are not those of an uninterrupted run")

    def checkpoint(self) -> dict | None:
        if self.epochs_trained == 0:
            return None
        state = self.model.get_state()
        pairs = [state] if self.task == "regression" else state  # regression: one (weights, ta_states) pair
        arrays = {}
        for i, (weights, ta_states) in enumerate(pairs):
            arrays[f"pytm_weights_{i}"], arrays[f"pytm_ta_states_{i}"] = weights, ta_states
        return arrays

    def restore(self, path, X, y, epochs_trained: int) -> None:
        if self._cache is None or self._cache[0] is not X or self._cache[1] is not y:
            self._cache = (X, y, *self._convert(X, y))
        interruptible(self.model.fit, self._cache[2], self._cache[3], epochs=0, incremental=True)  # builds it
        with np.load(path, allow_pickle=False) as z:
            n = len([k for k in z.files if k.startswith("pytm_weights_")])
            pairs = [(np.ascontiguousarray(z[f"pytm_weights_{i}"]), np.ascontiguousarray(z[f"pytm_ta_states_{i}"]))
                     for i in range(n)]
        self.model.set_state(pairs[0] if self.task == "regression" else pairs)
        self.epochs_trained = epochs_trained

    def _predict(self, X) -> np.ndarray:
        return interruptible(self.model.predict, _dense01(X))

    def _class_sums(self, X) -> np.ndarray:
        # Clause outputs from transform(X, inverted=False), shape (n, C * n_clauses), class-major. In the C code
        # clause j of a class votes +1 when j is even and -1 when odd, times its weight (1: weighted clauses
        # off). A clause that includes no literal outputs 0 at inference (mc_tm_predict, itm_predict), and also
        # in mc_tm_transform, but 1 in itm_transform (indexed machines): such clauses are zeroed here from the
        # include bits of get_state(). Checked against predict() and against outputs recomputed from the
        # include bits (tests/test_svm_novelty.py).
        m = self.model
        X = _dense01(X)
        C, nc = int(m.number_of_classes), int(m.number_of_clauses)
        chunks, bits, n_lit = int(m.number_of_ta_chunks), int(m.number_of_state_bits), int(m.number_of_features)
        coef = np.empty((C, nc), dtype=np.int64)
        sign = np.where(np.arange(nc) % 2 == 0, 1, -1)
        for c, (weights, ta_state) in enumerate(m.get_state()):
            include = ta_state.reshape(nc, chunks, bits)[:, :, bits - 1].copy()  # the action bit plane
            if n_lit % 32:
                include[:, -1] &= np.uint32((1 << (n_lit % 32)) - 1)
            coef[c] = sign * weights.astype(np.int64) * include.any(axis=1)
        n = X.shape[0]
        sums = np.empty((n, C), dtype=np.int64)
        step = max(1, (1 << 24) // (C * nc))  # rows per transform call: at most 64 MB of clause outputs
        for start in range(0, n, step):
            out = interruptible(m.transform, X[start:start + step], inverted=False).reshape(-1, C, nc)
            sums[start:start + step] = np.einsum("bcj,cj->bc", out.astype(np.int64), coef)
        return sums


def _share_our_context() -> None:
    """Make ``import pycuda.autoinit`` yield our backend's context instead of creating a new one: two contexts
    in one process would each own their allocations, and a kernel of one cannot use the other's buffers."""
    import sys
    import types

    if "pycuda.autoinit" in sys.modules:
        return
    from ..backends.cuda import context

    ctx = context()
    stand_in = types.ModuleType("pycuda.autoinit")
    stand_in.context, stand_in.device = ctx, ctx.get_device()
    sys.modules["pycuda.autoinit"] = stand_in


class PyTMCudaPeer(Peer):
    """PyTsetlinMachineCUDA (the paper's GPU code). Untested where it was written: no GPU there."""

    library = "PyTsetlinMachineCUDA"
    peer = "pytm_cuda"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        from ..backends import BackendUnavailableError, cuda_available

        if not cuda_available():
            raise BackendUnavailableError("PyTsetlinMachineCUDA needs a CUDA GPU; none was found")
        # Imported here only: the module runs `import pycuda.autoinit`, which would create a GPU context.
        _share_our_context()
        from PyTsetlinMachineCUDA import tm as cutm

        bt = int(self.boost_true_positive)
        cls = cutm.MultiClassTsetlinMachine if self.task == "classification" else cutm.RegressionTsetlinMachine
        self.model = cls(self.n_clauses, self.T, self.s, boost_true_positive_feedback=bt,
                         number_of_state_bits=self.state_bits, append_negated=self.append_negated)

    def version(self) -> str | None:
        return _dist_version(*_PYTM_CUDA_DISTS)

    def library_arguments(self) -> dict:
        return {"number_of_clauses": self.n_clauses, "T": self.T, "s": self.s,
                "boost_true_positive_feedback": int(self.boost_true_positive),
                "number_of_state_bits": self.state_bits, "append_negated": self.append_negated,
                "fit.batch_size": self.batch_size}

    def metadata(self) -> dict:
        meta = super().metadata()
        try:
            import pycuda.driver as drv

            dev = drv.Context.get_device()
            meta["device"] = f"{dev.name()} (driver {drv.get_driver_version()})"
        except Exception:  # noqa: BLE001
            meta["device"] = "CUDA GPU"
        meta["threads"] = None
        meta["random_numbers"] = "a global curand XORWOW generator, not seedable through the library"
        meta["driving"] += "; the encoded training data stay on the GPU while X compares equal"
        return meta

    def _fit(self, X, y) -> None:
        # Its regression fit recomputes min/max of y on every call; y is the same array each epoch.
        self.model.fit(X, y, epochs=1, incremental=True, batch_size=self.batch_size)

    def _predict(self, X) -> np.ndarray:
        return self.model.predict(_dense01(X))

    def _class_sums(self, X) -> np.ndarray:
        # The authors' PyTsetlinMachineCUDA (their ICML repository) has score(X): the clipped class sums,
        # shape (C, n). The cair/PyTsetlinMachineCUDA tm.py we read has no such method (predict only).
        # Untested here (no GPU where this was written).
        score = getattr(self.model, "score", None)
        if score is None:
            raise NotImplementedError(
                f"{self.name}: this PyTsetlinMachineCUDA ({self.version()}) has no score() method, so its class sums "
                "cannot be read; the authors' version (their ICML repository) has one")
        X = _dense01(X)
        out = np.asarray(score(X))
        C, n = self._n_classes(), X.shape[0]
        if out.shape == (C, n):
            return out.T
        if out.shape == (n, C):
            return out
        raise RuntimeError(f"{self.name}: score() returned shape {out.shape}; expected {(C, n)}")


def make_peer(name: str, task: str, n_clauses: int, T: int, s: float, *, state_bits: int = 8,
              boost_true_positive: bool = True, append_negated: bool = True, batch_size: int = 100,
              seed: int | None = None, indexed: bool = True, backend: str = "cpu",
              n_threads: int | None = None) -> Peer:
    """A peer by name (one of :data:`PEERS`) with our hyperparameter names (see the module docstring).

    ``indexed`` applies to ``pytm`` classification only; ``backend`` and ``n_threads`` to ``asynctm`` only.
    Raises ``ImportError`` when the library is missing and
    :class:`asynctm.backends.BackendUnavailableError` when it needs a GPU that is not there.
    """
    common = {"state_bits": state_bits, "boost_true_positive": boost_true_positive,
              "append_negated": append_negated, "batch_size": batch_size, "seed": seed}
    if name == "asynctm":
        return AsyncTMPeer(task, n_clauses, T, s, backend=backend, n_threads=n_threads, **common)
    if name == "pytm":
        return PyTMPeer(task, n_clauses, T, s, indexed=indexed, **common)
    if name == "pytm_cuda":
        return PyTMCudaPeer(task, n_clauses, T, s, **common)
    raise ValueError(f"unknown peer {name!r}; known: {', '.join(PEERS)}")
