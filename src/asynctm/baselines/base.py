"""The interface every peer implements (:class:`Peer`): our Tsetlin Machine's adapter
(:class:`asynctm.peers.AsyncTMPeer`) and the paper's baselines in this package alike, with :func:`dense01`, the dense
0/1 input the baselines take. It lies here, below both, so that the baselines need nothing of :mod:`asynctm.peers`,
which builds any peer by name (:func:`asynctm.peers.make_peer`) and re-exports these names; the hyperparameter
mapping and the differences between the implementations are documented there.
"""

from __future__ import annotations

import numbers
import time

import numpy as np
import scipy.sparse as sp

TASKS = ("classification", "regression")


def dense01(X) -> np.ndarray:
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
        return dense01(X)

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
