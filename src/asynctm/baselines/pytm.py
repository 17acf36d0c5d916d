"""pyTsetlinMachine 0.6.6, the paper's CPU baseline, as a peer (:class:`asynctm.baselines.base.Peer`).

The hyperparameter mapping and where the implementations differ by design: :mod:`asynctm.peers`. Here:
the seeds' range (:func:`check_seed`), the libc seed of its per-epoch shuffle (:func:`libc_seed`), the regression
machine's seed (:func:`stream_examples`, :func:`advance_stream`), the machines' keyword arguments
(:func:`machine_arguments`, shared with pyTsetlinMachineParallel), and :func:`interruptible`, which keeps
its C epochs from delaying SIGINT and SIGTERM.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import numbers
import threading

import numpy as np

from ..provenance import dist_version
from .base import Peer, dense01

DISTRIBUTION = "pyTsetlinMachine"


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


def _libc():
    path = ctypes.util.find_library("c")
    return ctypes.CDLL(path) if path else ctypes.CDLL(None)


def check_seed(seed) -> int:
    """``seed`` as an int, refused unless an integer in [0, 2^32 - 2]: the range of :func:`libc_seed`, which both
    kinds of machine share so that one seed is valid for every pyTsetlinMachine run."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= seed < 2**32 - 1:
        raise ValueError(f"a pyTsetlinMachine seed must be an integer in [0, 2^32 - 2] (libc srand takes seed + 1), "
                         f"got {seed!r}")
    return int(seed)


def libc_seed(seed: int) -> int:
    """The value given to libc ``srand`` for our ``seed``: ``seed + 1``. glibc's ``srand(0)`` is ``srand(1)``
    (it replaces a zero seed by 1), so seeding with ``seed`` itself made seeds 0 and 1 one run."""
    return check_seed(seed) + 1


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


def stream_examples(seed: int) -> int:
    """How many throwaway examples move pyTsetlinMachine's pcg32 stream on for the regression machine's ``seed``
    (:func:`advance_stream`): ``seed + 1`` for a seed above 0, none for seed 0 (the stream's start, the runs made
    before seeds moved it). Range-checked as :func:`check_seed`."""
    seed = check_seed(seed)
    return seed + 1 if seed else 0


def advance_stream(seed: int) -> int:
    """Move pyTsetlinMachine's pcg32 stream on by one epoch of a throwaway 32-clause regression machine over
    :func:`stream_examples` examples, and return that count. The stream has a fixed start in every process and is
    shared by all of the library's regression machines, and every example of that epoch draws from it (one draw per
    clause at least), so each count starts the next machine at another point of the stream: the regression
    machine's only way to make two seeds two runs (it does not shuffle). tests/unit/test_pytm_seeds.py checks that
    seeds 0-9 are ten runs. Nothing else of the library is touched."""
    examples = stream_examples(seed)
    if examples:
        from pyTsetlinMachine import tm as pytm

        y = np.zeros(examples)
        y[0] = 1.0
        pytm.RegressionTsetlinMachine(number_of_clauses=32, T=1, s=1.5).fit(
            np.zeros((examples, 2), dtype=np.uint32), y, epochs=1)
    return examples


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
        # reproducible. The regression machine does not shuffle: there the seed moves the shared pcg32 stream on
        # before training (advance_stream; stream_advance: the throwaway examples it took).
        self.libc_seed = libc_seed(self.seed) if self.seed is not None and self.task == "classification" else None
        if self.libc_seed is not None:
            _libc().srand(ctypes.c_uint(self.libc_seed))
        self.stream_advance = (advance_stream(self.seed) if self.seed is not None and self.task == "regression"
                               else None)

    @property
    def name(self) -> str:
        if self.task == "classification":
            return "pytm_indexed" if self.indexed else "pytm_unindexed"
        return "pytm"

    def version(self) -> str | None:
        return dist_version(DISTRIBUTION)

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
               "no shuffle; the seed k moves the pcg32 stream on by a throwaway epoch over k + 1 examples before "
               "training (seed 0: the stream's start), so seeds are distinct runs"
               if self.stream_advance is not None else
               "libc rand() for the per-epoch shuffle, unseeded"))
        # seeded: whether the seed changes the run at all (false: all seeds are one distinct run).
        meta["seeded"] = self.libc_seed is not None or self.stream_advance is not None
        meta["libc_srand_seed"] = self.libc_seed
        # the throwaway examples that moved the stream on (advance_stream): none for seed 0
        meta["pcg32_advance_examples"] = self.stream_advance
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
        return interruptible(self.model.predict, dense01(X))

    def _class_sums(self, X) -> np.ndarray:
        # Clause outputs from transform(X, inverted=False), shape (n, C * n_clauses), class-major. In the C code
        # clause j of a class votes +1 when j is even and -1 when odd, times its weight (1: weighted clauses
        # off). A clause that includes no literal outputs 0 at inference (mc_tm_predict, itm_predict), and also
        # in mc_tm_transform, but 1 in itm_transform (indexed machines): such clauses are zeroed here from the
        # include bits of get_state(). Checked against predict() and against outputs recomputed from the
        # include bits (tests/unit/test_svm_novelty.py).
        m = self.model
        X = dense01(X)
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
