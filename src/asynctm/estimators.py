"""scikit-learn style estimators on the asynchronous Tsetlin Machine kernels.

``TMClassifier`` (one team of ``n_clauses`` clauses per class, half of them positive) and ``TMRegressor``
(the Regression Tsetlin Machine: positive clauses only, targets scaled to ``[0, T]``). Training runs the
paper's Algorithm 1 on a GPU (PyCUDA) or on CPU threads, from the same CUDA C source.
"""

from __future__ import annotations

import json
import logging
import math
import numbers
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin

from .backends import THREADS_PER_CLAUSE as _THREADS_PER_CLAUSE
from .backends import TALLIES as _TALLIES
from .backends import ORDERS as _ORDERS
from .backends import UPDATE_RULES as _REGRESSION_RULES
from .backends import KernelConfig, make_backend, resolve_backend
from .io import atomic_open
from .config_check import T_MAX
from .encoding import check_binary_matrix, check_positive_int, pack_literals, planes_to_states

logger = logging.getLogger("asynctm")

SAVE_FORMAT = 1
_BACKENDS = ("auto", "cuda", "cpu")
_INT32_MAX = 2**31 - 1  # counts the kernels take as 32-bit ints (clauses, threads)


def _target_array(y) -> np.ndarray:
    """``y`` as an array; labels that mix strings and numbers are refused (NumPy would silently make them
    all strings, and ``predict`` would then return ``'1'`` for ``1``)."""
    arr = np.asarray(y)
    if arr.dtype.kind in "OUS" and not (isinstance(y, np.ndarray) and y.dtype.kind in "US"):
        kinds = {isinstance(v, (str, bytes, np.str_, np.bytes_)) for v in np.asarray(y, dtype=object).ravel()}
        if len(kinds) > 1:
            raise ValueError("y mixes strings and numbers as class labels; give every label the same type "
                             "(e.g. all int, or all str)")
    return arr


class _BadModelFile(ValueError):
    """A model file that :meth:`_TsetlinMachine.load` cannot use; ``load`` adds the file's name."""


def _stored(z, key: str) -> np.ndarray:
    """One array of a saved model, or :class:`_BadModelFile` saying it is missing or unreadable."""
    try:
        return z[key]
    except KeyError:
        raise _BadModelFile(f"it has no {key!r} array (not written by save(), or cut short)") from None
    except Exception as e:  # noqa: BLE001 - a damaged member: zlib, zip, EOF or NumPy format errors
        raise _BadModelFile(f"its {key!r} array is damaged ({type(e).__name__}: {e})") from None


def _stored_int(z, key: str, minimum: int, maximum: int | None = None) -> int:
    a = _stored(z, key)
    if a.shape != () or a.dtype.kind not in "iu":
        raise _BadModelFile(f"{key} must be one integer, got {a.dtype} of shape {a.shape}")
    if a < minimum or (maximum is not None and a > maximum):
        upper = "inf" if maximum is None else maximum
        raise _BadModelFile(f"{key} = {int(a)} is out of range [{minimum}, {upper}]")
    return int(a)


class _TsetlinMachine(BaseEstimator):
    _regression = False

    def __init__(self, n_clauses=100, T=15, s=3.9, state_bits=8, boost_true_positive=True, append_negated=True,
                 batch_size=100, backend="auto", n_threads=None, seed=None, tally="async", regression_rule="linear",
                 gpu_threads_per_clause=1, order="dataset"):
        self.n_clauses = n_clauses
        self.T = T
        self.s = s
        self.state_bits = state_bits
        self.boost_true_positive = boost_true_positive
        self.append_negated = append_negated
        self.batch_size = batch_size
        self.backend = backend
        self.n_threads = n_threads
        self.seed = seed
        # tally: "async", the paper's Algorithm 1 (each clause learns from the local voting tally as it finds
        # it), or "sync", the classic Tsetlin Machine (every clause's vote refreshed before any feedback);
        # regression_rule: P(update) = |y - v| / 2T ("linear") or ((y - v) / T)^2 ("quadratic", TMRegressor
        # only, pyTsetlinMachine's). kernels/README.md states both exactly.
        self.tally = tally
        self.regression_rule = regression_rule
        # gpu_threads_per_clause: threads per clause on the GPU: 1 (the paper's one thread per clause) up to 32 (a
        # warp), the clause's literal words split across them in training, the clauses of a class across them at
        # inference; the same rules, so the same results as 1 wherever the GPU's schedule is deterministic. The
        # CPU build ignores it.
        self.gpu_threads_per_clause = gpu_threads_per_clause
        # order: how each clause walks a batch's examples: "dataset" (all clauses in the data's order, as the
        # paper's kernel) or "staggered" (clause g starts at example g mod the batch's size and wraps around, so
        # that clauses running side by side on a GPU visit different examples). kernels/README.md, "Example order".
        self.order = order
        self._validate_params()

    # -- parameters ------------------------------------------------------------------------------
    def _validate_params(self) -> None:
        check_positive_int(self.n_clauses, "n_clauses", 1)
        if not self._regression and self.n_clauses % 2:
            raise ValueError(f"n_clauses must be even (half the clauses of each class are positive, half negative), "
                             f"got {self.n_clauses}")
        check_positive_int(self.T, "T", 1)
        if self.T > T_MAX:
            raise ValueError(f"T must be at most 2^30 - 1 = {T_MAX} (the kernels compute 2T in 32-bit integers), "
                             f"got {self.T}")
        if isinstance(self.s, bool) or not isinstance(self.s, numbers.Real) or not math.isfinite(self.s) or self.s < 1:
            raise ValueError(f"s must be a finite number >= 1 (the literal is forgotten with probability 1/s), "
                             f"got {self.s!r}")
        check_positive_int(self.state_bits, "state_bits", 2)
        if self.state_bits > 31:
            raise ValueError(f"state_bits must be at most 31, got {self.state_bits}")
        for name in ("boost_true_positive", "append_negated"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise TypeError(f"{name} must be True or False, got {getattr(self, name)!r}")
        check_positive_int(self.batch_size, "batch_size", 1)
        if self.backend not in _BACKENDS:
            raise ValueError(f"backend must be one of {_BACKENDS}, got {self.backend!r}")
        if self.n_threads is not None:
            check_positive_int(self.n_threads, "n_threads", 1)
        for name in ("n_clauses", "batch_size", "n_threads"):
            if getattr(self, name) is not None and getattr(self, name) > _INT32_MAX:
                raise ValueError(f"{name} must be at most 2^31 - 1 = {_INT32_MAX} (a 32-bit integer in the kernels), "
                                 f"got {getattr(self, name)}")
        if self.tally not in _TALLIES:
            raise ValueError(f"tally must be one of {_TALLIES}, got {self.tally!r}")
        if self.order not in _ORDERS:
            raise ValueError(f"order must be one of {_ORDERS}, got {self.order!r}")
        if self.regression_rule not in _REGRESSION_RULES:
            raise ValueError(f"regression_rule must be one of {_REGRESSION_RULES}, got {self.regression_rule!r}")
        if self.regression_rule != "linear" and not self._regression:
            raise ValueError(f"regression_rule={self.regression_rule!r} applies to TMRegressor only; "
                             "TMClassifier uses 'linear' (|y - v| / 2T)")
        if self.regression_rule == "quadratic" and self.T > 32767:
            raise ValueError(f"regression_rule='quadratic' needs T <= 32767, got {self.T}")
        if isinstance(self.gpu_threads_per_clause, bool) or self.gpu_threads_per_clause not in _THREADS_PER_CLAUSE:
            raise ValueError(f"gpu_threads_per_clause must be one of {_THREADS_PER_CLAUSE}, "
                             f"got {self.gpu_threads_per_clause!r}")
        if self.seed is not None:
            if isinstance(self.seed, bool) or not isinstance(self.seed, numbers.Integral) or not 0 <= self.seed < 2**64:
                raise ValueError(f"seed must be None or an integer in [0, 2^64), got {self.seed!r}")

    # -- data --------------------------------------------------------------------------------------
    def _check_X(self, X, fitting: bool):
        X = check_binary_matrix(X)
        if not fitting:
            self._check_fitted()
            if X.shape[1] != self.n_features_in_:
                raise ValueError(f"X has {X.shape[1]} features, but this model was trained with {self.n_features_in_}")
        return X

    def _check_fitted(self):
        if getattr(self, "_ta_state", None) is None and getattr(self, "_backend", None) is None:
            raise RuntimeError(f"this {type(self).__name__} is not fitted yet: call fit(X, y) first")

    def _encode(self, X) -> np.ndarray:
        words, _ = pack_literals(X, self.append_negated)
        return words

    # -- backend -------------------------------------------------------------------------------------
    def _kernel_config(self) -> KernelConfig:
        return KernelConfig(n_classes=self._n_outputs, n_clauses=self.n_clauses, n_literals=self.n_literals_,
                            T=int(self.T), s=float(self.s), state_bits=self.state_bits,
                            boost_true_positive=bool(self.boost_true_positive), regression=self._regression,
                            tally=self.tally, regression_rule=self.regression_rule,
                            threads_per_clause=int(self.gpu_threads_per_clause), order=self.order)

    def _make_backend(self):
        name = resolve_backend(self.backend)
        if self.backend == "auto":
            logger.info("asynctm: backend='auto' picked %r", name)
        be = make_backend(name, self._kernel_config(), n_threads=self.n_threads)
        self.backend_ = be.name
        self.device_ = be.device
        return be

    def _ensure_backend(self):
        if getattr(self, "_backend", None) is None:
            self._backend = self._make_backend()
            if getattr(self, "_ta_state", None) is not None:  # loaded from a file
                self._backend.set_ta_state(self._ta_state)
                self._ta_state = None
        return self._backend

    def _planes(self) -> np.ndarray:
        """The bit-sliced TA state, from the backend or (after load/close) from the host copy."""
        be = getattr(self, "_backend", None)
        return be.get_ta_state() if be is not None else self._ta_state

    def _release(self) -> None:
        be = getattr(self, "_backend", None)
        if be is not None:
            be.close()
        self._backend = None
        self._train_ref = None

    def close(self) -> None:
        """Release the backend's memory (GPU memory included). The learned state is kept on the host."""
        if getattr(self, "_backend", None) is not None:
            self._ta_state = self._planes()
            self._release()

    def __del__(self):
        try:
            be = getattr(self, "_backend", None)
            if be is not None:
                be.close()
        except Exception:
            pass

    def __getstate__(self):
        # Pickling (e.g. sklearn.clone or joblib) keeps parameters and the learned state, never a GPU object.
        state = self.__dict__.copy()
        if state.get("_backend") is not None:
            state["_ta_state"] = self._planes()
        state["_backend"] = None
        state["_train_ref"] = None
        return state

    # -- training ------------------------------------------------------------------------------------
    def _targets(self, y, n: int, fitting_first: bool) -> np.ndarray:
        raise NotImplementedError

    def fit(self, X, y, epochs: int = 100, incremental: bool = False, *, callback=None, verbose: int = 0):
        """Train for ``epochs`` epochs (an integer >= 1). ``incremental=True`` continues from the current
        clauses (and, with the very same ``X`` and ``y`` objects as the previous call, from the current voting
        tallies).

        ``callback(estimator, epoch, train_s)``, if given, is called after every epoch (``epoch``: this call's
        epoch, from 1; ``train_s``: its seconds); a true return value stops training after that epoch.
        ``verbose`` (scikit-learn's convention): 0 prints nothing, 1 or more prints one line per epoch to
        stderr: epoch k/N, seconds per epoch and the estimated time left."""
        if isinstance(epochs, bool) or not isinstance(epochs, numbers.Integral) or epochs < 1:
            raise ValueError(f"epochs must be an integer >= 1 (the number of training epochs), got {epochs!r}")
        if callback is not None and not callable(callback):
            raise TypeError(f"callback must be callable as callback(estimator, epoch, train_s), got {callback!r}")
        self._prepare_training(X, y, incremental)
        be = self._backend
        started = time.perf_counter()
        for epoch in range(1, epochs + 1):
            t0 = time.perf_counter()
            be.train_epoch(self.epochs_trained_, self.seed_, self.batch_size)
            self.epochs_trained_ += 1
            train_s = time.perf_counter() - t0
            self.__dict__.setdefault("epoch_diagnostics_", []).append(self._epoch_diagnostics(be))
            if verbose:
                per_epoch = (time.perf_counter() - started) / epoch
                print(f"[{type(self).__name__}] epoch {epoch}/{epochs}: {train_s:.3f} s, "
                      f"{per_epoch:.3f} s/epoch, about {per_epoch * (epochs - epoch):.0f} s left",
                      file=sys.stderr, flush=True)
            if callback is not None and callback(self, epoch, train_s):
                break
        return self

    def _prepare_training(self, X, y, incremental: bool = False) -> None:
        """Everything ``fit`` does before its first epoch: check and encode the data, set up the backend and
        compute the voting tallies (timings in ``setup_timings_``). A following ``fit(X, y, incremental=True)``
        with the same objects trains from there."""
        self._validate_params()
        continuing = bool(incremental) and (getattr(self, "_backend", None) is not None
                                            or getattr(self, "_ta_state", None) is not None)
        ref = getattr(self, "_train_ref", None) if continuing else None
        if ref is None or ref[0] is not X or ref[1] is not y:
            # New training data: check and encode it once, then compute stored outputs and tallies from the
            # clauses. (The same X and y objects again: nothing to redo, the tallies continue.)
            X_checked = self._check_X(X, fitting=not continuing)
            n = X_checked.shape[0]
            y_arr = _target_array(y)
            if y_arr.ndim != 1 or y_arr.shape[0] != n:
                raise ValueError(f"y must be 1-D with one target per row of X ({n}), got shape {y_arr.shape}")
            if not continuing:
                self._release()
                self._ta_state = None
                self.n_features_in_ = X_checked.shape[1]
                self.n_literals_ = 2 * self.n_features_in_ if self.append_negated else self.n_features_in_
            y_target = self._targets(y_arr, n, fitting_first=not continuing)
            t0 = time.perf_counter()
            be = self._ensure_backend()
            t1 = time.perf_counter()
            if not continuing:
                self.seed_ = int(self.seed) if self.seed is not None else int(
                    np.random.SeedSequence().generate_state(1, np.uint64)[0])
                self.epochs_trained_ = 0
                self.epoch_diagnostics_ = []
                be.init_state()
            words = self._encode(X_checked)
            t2 = time.perf_counter()
            be.set_training_data(words, y_target)
            t3 = time.perf_counter()
            # Wall-clock seconds of the last data set-up (see results/README.md): building or loading the
            # kernels (0 when already built), packing X into literal words, uploading them and computing the
            # stored clause outputs and tallies (synchronised on a GPU).
            self.setup_timings_ = {"compile_s": t1 - t0, "encode_s": t2 - t1, "upload_s": t3 - t2}
            self._train_ref = (X, y)

    def _epoch_diagnostics(self, be) -> dict:
        """The training diagnostics after an epoch (kernels/README.md): included literals per clause (mean over
        all clauses; of the features and of their negations) and the Type Ia, Ib and II feedback events of the
        epoch. One pass over the include plane and one copy of per-clause counters: no special build."""
        first_negated = self.n_features_in_ if self.append_negated else self.n_literals_
        counts = be.include_counts(first_negated).astype(np.float64)
        ia, ib, ii = (int(v) for v in be.take_feedback_events())
        positive, negated = (float(v) for v in counts.mean(axis=0))
        return {"epoch": self.epochs_trained_, "literals_per_clause": positive + negated,
                "positive_literals_per_clause": positive, "negated_literals_per_clause": negated,
                "type_ia_feedback": ia, "type_ib_feedback": ib, "type_ii_feedback": ii}

    def _class_sums(self, X) -> np.ndarray:
        X = self._check_X(X, fitting=False)
        be = self._ensure_backend()
        return be.class_sums(self._encode(X)).T  # (n, outputs)

    # -- learned clauses -------------------------------------------------------------------------------
    def ta_states(self) -> np.ndarray:
        """Automaton states, ``(n_outputs, n_clauses, n_literals)``; literals are the features, then (with
        ``append_negated``) their negations."""
        self._check_fitted()
        states = planes_to_states(self._planes(), self.n_literals_)
        return states.reshape(self._n_outputs, self.n_clauses, self.n_literals_)

    @property
    def clauses_(self) -> np.ndarray:
        """Boolean include masks ``(n_outputs, n_clauses, n_literals)``: which literals each clause includes."""
        return self.ta_states() >= (1 << (self.state_bits - 1))

    # -- persistence -------------------------------------------------------------------------------------
    def save(self, path) -> None:
        """Save parameters and learned state to a plain ``.npz`` (no pickle), written atomically."""
        path = Path(path)
        with atomic_open(path, "wb") as fh:
            np.savez(fh, **self._save_arrays())

    def _save_arrays(self) -> dict:
        """The arrays of :meth:`save` (a checkpoint adds its own to them; :meth:`load` ignores extra keys)."""
        self._check_fitted()
        arrays = {
            "format": np.array(SAVE_FORMAT),
            "kind": np.array(type(self).__name__),
            "params": np.array(json.dumps(self.get_params(), sort_keys=True)),
            "ta_state": self._planes(),
            "n_features_in": np.array(self.n_features_in_),
            "epochs_trained": np.array(self.epochs_trained_),
            "seed": np.array(str(self.seed_)),
            **self._extra_state(),
        }
        return arrays

    def _training_state(self) -> dict:
        """The training data's voting tallies and stored clause outputs (Algorithm 1 keeps both across
        epochs, so they are part of the state a resumed run needs to continue bit for bit)."""
        be = self._backend
        return {"class_sum": be.get_tallies(), "clause_output": be.get_clause_output_bits()}

    def _set_training_state(self, class_sum: np.ndarray, clause_output: np.ndarray) -> None:
        """Restore what :meth:`_training_state` returned, after ``fit(X, y, epochs=0, incremental=True)`` on the
        same training data (which recomputed both from the clauses)."""
        be = self._backend
        current = self._training_state()
        for name, new in (("class_sum", class_sum), ("clause_output", clause_output)):
            if np.shape(new) != current[name].shape:
                raise ValueError(f"{name} has shape {np.shape(new)}, the training data needs {current[name].shape}")
        if be.name == "cpu":
            be.class_sum[...] = class_sum
            be.clause_output[...] = clause_output
        else:
            be.drv.memcpy_htod(be.class_sum, np.ascontiguousarray(class_sum, dtype=np.int32))
            be.drv.memcpy_htod(be.clause_output, np.ascontiguousarray(clause_output, dtype=np.uint32))

    @classmethod
    def load(cls, path, backend: str | None = None, n_threads: int | None = None):
        """Load a model saved by :meth:`save`; optionally on another backend or thread count.

        A damaged, foreign or inconsistent file is refused with a ``ValueError`` naming the file and what is
        wrong with it (never unpickled: the file holds plain arrays only)."""
        try:
            z = np.load(path, allow_pickle=False)
        except FileNotFoundError:
            raise
        except Exception as e:  # noqa: BLE001 - NumPy says "pickled data" for any file it cannot read
            raise ValueError(f"{path}: not an asynctm model file: not a NumPy .npz archive, or a damaged one "
                             f"({type(e).__name__}: {e})") from None
        if not hasattr(z, "files"):
            raise ValueError(f"{path}: not an asynctm model file: a single NumPy array, not the .npz of save()")
        try:
            with z:
                model = cls._from_saved(z, backend, n_threads)
        except _BadModelFile as e:
            raise ValueError(f"{path}: not a usable {cls.__name__} model file: {e}") from None
        model._backend = None
        model._train_ref = None
        return model

    @classmethod
    def _from_saved(cls, z, backend, n_threads):
        """The model in an open ``.npz`` of :meth:`save`, every array checked against the others."""
        if "format" not in z.files or _stored(z, "format").shape != () or _stored(z, "format") != SAVE_FORMAT:
            raise _BadModelFile(f"it is not an asynctm model file (format {SAVE_FORMAT})")
        kind = _stored(z, "kind")
        if kind.shape != () or kind.dtype.kind != "U" or str(kind) != cls.__name__:
            raise _BadModelFile(f"it holds a {kind}, not a {cls.__name__}")
        try:
            params = json.loads(str(_stored(z, "params")))
        except json.JSONDecodeError as e:
            raise _BadModelFile(f"its parameters are not valid JSON ({e})") from None
        if not isinstance(params, dict):
            raise _BadModelFile(f"its parameters must be a JSON object, got {type(params).__name__}")
        if backend is not None:
            params["backend"] = backend
        if n_threads is not None:
            params["n_threads"] = n_threads
        try:
            model = cls(**params)
        except (TypeError, ValueError) as e:
            raise _BadModelFile(f"its parameters are invalid ({e})") from None
        model.n_features_in_ = _stored_int(z, "n_features_in", 1, _INT32_MAX)
        model.n_literals_ = 2 * model.n_features_in_ if model.append_negated else model.n_features_in_
        model.epochs_trained_ = _stored_int(z, "epochs_trained", 0)
        seed = str(_stored(z, "seed"))
        if not seed.isdigit() or int(seed) >= 2**64:
            raise _BadModelFile(f"seed {seed!r} is not an integer in [0, 2^64)")
        model.seed_ = int(seed)
        model._load_extra_state(z)
        planes = _stored(z, "ta_state")
        if planes.dtype.kind not in "iu":
            raise _BadModelFile(f"the TA states must be integers (bit planes), got {planes.dtype}")
        if planes.size and (planes.min() < 0 or planes.max() > 0xFFFFFFFF):
            raise _BadModelFile("the TA state bit planes must be 32-bit words (0 to 2^32 - 1), found "
                                f"{planes.min()} to {planes.max()}")
        expected = (model._n_outputs * model.n_clauses, model.state_bits, (model.n_literals_ + 31) // 32)
        if planes.shape != expected:
            raise _BadModelFile(
                f"its TA states have shape {planes.shape}, but {model._n_outputs} output(s) x {model.n_clauses} "
                f"clauses, {model.state_bits} state bits and {model.n_features_in_} features "
                f"({model.n_literals_} literals) need {expected}")
        model._ta_state = np.array(planes, dtype=np.uint32)
        return model


class TMClassifier(ClassifierMixin, _TsetlinMachine):
    """Multi-class Tsetlin Machine: ``n_clauses`` clauses per class (even: half positive, half negative).

    ``decision_function`` returns the clipped class sums ``(n_samples, n_classes)``, in ``[-T, T]``.
    """

    _regression = False

    @property
    def _n_outputs(self) -> int:
        return len(self.classes_)

    def _targets(self, y, n, fitting_first):
        if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
            raise ValueError("y contains NaN or infinite values")
        if fitting_first:
            classes = np.unique(y)
            if len(classes) < 2:
                raise ValueError(f"y must contain at least 2 classes, found {len(classes)}")
            self.classes_ = classes
        idx = np.searchsorted(self.classes_, y)
        idx = np.clip(idx, 0, len(self.classes_) - 1)
        if not np.all(self.classes_[idx] == y):
            unknown = y[self.classes_[idx] != y][0]
            unknown = unknown.item() if hasattr(unknown, "item") else unknown
            raise ValueError(f"y contains the class {unknown!r}, which was not seen in the first fit")
        T = int(self.T)
        target = np.full((len(self.classes_), n), -T, dtype=np.int32)
        target[idx, np.arange(n)] = T
        return target

    def decision_function(self, X) -> np.ndarray:
        return self._class_sums(X)

    def predict(self, X) -> np.ndarray:
        sums = self._class_sums(X)
        return self.classes_[np.argmax(sums, axis=1)]

    def _extra_state(self):
        return {"classes": np.asarray(self.classes_)}

    def _load_extra_state(self, z):
        classes = np.array(_stored(z, "classes"))
        if classes.ndim != 1 or len(classes) < 2 or classes.dtype.kind not in "biufU":
            raise _BadModelFile(f"classes must be a list of at least 2 numbers or strings, got {classes!r}")
        if classes.dtype.kind == "f" and not np.all(np.isfinite(classes)):
            raise _BadModelFile(f"classes must be finite, got {classes.tolist()}")
        if not np.all(classes[1:] > classes[:-1]):
            raise _BadModelFile(f"classes must be sorted and distinct (as fit stores them), got {classes.tolist()}")
        self.classes_ = classes


class TMRegressor(RegressorMixin, _TsetlinMachine):
    """Regression Tsetlin Machine: positive clauses only; the target is scaled to ``[0, T]`` and predicted as
    ``v / T`` rescaled to the training range, where ``v`` is the clipped sum of clause outputs."""

    _regression = True
    _n_outputs = 1

    def _targets(self, y, n, fitting_first):
        if y.dtype.kind not in "biuf":
            raise TypeError(f"y must be numeric for regression, got dtype {y.dtype}")
        y = y.astype(np.float64)
        if not np.all(np.isfinite(y)):
            raise ValueError("y contains NaN or infinite values")
        if fitting_first:
            self.y_min_, self.y_max_ = float(y.min()), float(y.max())
            if self.y_max_ == self.y_min_:
                raise ValueError(f"y is constant ({self.y_min_}); a regression target needs at least two values")
        scaled = np.floor((y - self.y_min_) / (self.y_max_ - self.y_min_) * int(self.T))
        return np.clip(scaled, 0, int(self.T)).astype(np.int32)[None, :]

    def decision_function(self, X) -> np.ndarray:
        """The clipped clause sums ``v`` in ``[0, T]``, shape ``(n_samples,)``."""
        return self._class_sums(X)[:, 0]

    def predict(self, X) -> np.ndarray:
        v = self.decision_function(X).astype(np.float64)
        return v / int(self.T) * (self.y_max_ - self.y_min_) + self.y_min_

    def _extra_state(self):
        return {"y_range": np.array([self.y_min_, self.y_max_])}

    def _load_extra_state(self, z):
        y_range = _stored(z, "y_range")
        if y_range.shape != (2,) or y_range.dtype.kind not in "iuf" or not np.all(np.isfinite(y_range)) \
                or not y_range[0] < y_range[1]:
            raise _BadModelFile(f"y_range must be two finite numbers, the smaller first, got {y_range.tolist()}")
        self.y_min_, self.y_max_ = (float(v) for v in y_range)
