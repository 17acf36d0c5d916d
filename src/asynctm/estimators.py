"""scikit-learn estimators on the asynchronous Tsetlin Machine kernels.

``TMClassifier`` (one team of ``n_clauses`` clauses per class, half of them positive) and ``TMRegressor``
(the Regression Tsetlin Machine: positive clauses only, targets scaled to ``[0, T]``). Training runs the
paper's Algorithm 1 on a GPU (PyCUDA) or on CPU threads, from the same CUDA C source.

Both pass scikit-learn's estimator checks (docs/library.md, "scikit-learn"): parameters are checked in ``fit``,
``partial_fit`` trains one epoch, ``predict`` before ``fit`` raises ``NotFittedError``. ``X`` is 0/1 features
(dense or scipy.sparse, packed as they are); ``booleanize=k`` takes real values and turns them into 0/1 features
inside ``fit`` and ``predict`` (:class:`asynctm.booleanize.Booleanizer`). ``rules``, ``explain`` and
``export_rules`` read the learned clauses (:mod:`asynctm.rules`). Nothing here imports the pipeline.
"""

from __future__ import annotations

import datetime
import json
import logging
import math
import numbers
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.exceptions import DataConversionWarning, NotFittedError

from .backends import ORDERS as _ORDERS
from .backends import TALLIES as _TALLIES
from .backends import THREADS_PER_CLAUSE as _THREADS_PER_CLAUSE
from .backends import UPDATE_RULES as _REGRESSION_RULES
from .backends import KernelConfig, make_backend, resolve_backend
from .booleanize import Booleanizer, check_n_thresholds, format_threshold, validate_input
from .encoding import WORD_BITS, check_binary_matrix, check_positive_int, pack_literals, planes_to_states
from .io import atomic_open
from .limits import INT32_MAX as _INT32_MAX
from .limits import T_MAX
from .rules import FORMAT as _RULES_FORMAT
from .rules import VERSION as _RULES_VERSION
from .rules import clause_text

logger = logging.getLogger("asynctm")

SAVE_FORMAT = 1
_BACKENDS = ("auto", "cuda", "cpu")


def _target_array(y) -> np.ndarray:
    """``y`` as an array: a pandas Series or Categorical as its values' array, an array as it is; the labels of a
    list or tuple keep their Python types (an object array, typed by ``_label_array``), since NumPy would silently
    make ``[1, 'a']`` all strings (``predict`` would then return ``'1'`` for ``1``) and ``[2**60 + 1, 0.5]`` inexact
    floats."""
    if isinstance(y, np.ndarray):
        return y
    if hasattr(y, "dtype") or not isinstance(y, (list, tuple)):
        return np.asarray(y)
    return np.asarray(y, dtype=object)


# The labels a model file stores as plain arrays (no pickle): bool, int, float, str ('U'), bytes ('S'),
# datetime64 ('M') and timedelta64 ('m').
_LABEL_KINDS = "biufUSMm"
_LABEL_TYPES = "ints, floats, bools, str, bytes, datetimes or timedeltas"
# What each kind of Python label is called in messages, in the order they are named.
_LABEL_NAMES = {"str": "strings", "bytes": "bytes", "number": "numbers", "bool": "booleans", "datetime": "datetimes",
                "date": "dates", "timedelta": "timedeltas"}


def _label_group(v) -> str | None:
    """Which kind of label ``v`` is (a key of ``_LABEL_NAMES``); None: none that a model file can store."""
    if isinstance(v, (bool, np.bool_)):
        return "bool"
    if isinstance(v, (str, bytes)):
        return "str" if isinstance(v, str) else "bytes"
    if isinstance(v, (datetime.datetime, np.datetime64)):
        return "datetime"
    if isinstance(v, datetime.date):
        return "date"
    if isinstance(v, (datetime.timedelta, np.timedelta64)):  # before numbers: NumPy's timedelta64 is an integer
        return "timedelta"
    if isinstance(v, numbers.Real):
        return "number"
    return None


def _missing(flat: np.ndarray) -> np.ndarray:
    """Which objects are missing values: None, NaN and NaT (and pandas' NA and NaT, through pandas' own test
    whenever pandas is loaded, as it is wherever such values exist). The library does not need pandas."""
    pd = sys.modules.get("pandas")
    if pd is not None:
        return np.asarray(pd.isna(flat), dtype=bool)
    return np.array([v is None or (isinstance(v, (float, np.floating)) and math.isnan(v))
                     or (isinstance(v, (np.datetime64, np.timedelta64)) and bool(np.isnat(v))) for v in flat.tolist()],
                    dtype=bool).reshape(flat.shape)


def _labels_from_objects(arr: np.ndarray, name: str) -> np.ndarray:
    """The typed array of an object array of labels all of one kind; ValueError (one line) for missing labels,
    mixed kinds and labels that no plain array holds exactly."""
    flat = arr.ravel()
    missing = _missing(flat)
    if missing.any():
        i = int(np.argmax(missing))
        raise ValueError(f"{name} has a missing label ({flat[i]!r}) at row {i}: None, NaN and NaT are not classes; "
                         "drop those rows or give them a class")
    first: dict = {}
    for i, v in enumerate(flat):
        group = _label_group(v)
        if group is None:
            raise ValueError(f"{name} has the label {v!r} (type {type(v).__name__}) at row {i}, which a model file "
                             f"cannot store; give the labels as {_LABEL_TYPES}")
        first.setdefault(group, i)
    if len(first) > 1:
        a, b = sorted(first, key=list(_LABEL_NAMES).index)[:2]
        raise ValueError(f"{name} mixes {_LABEL_NAMES[a]} and {_LABEL_NAMES[b]} as class labels (row {first[a]}: "
                         f"{flat[first[a]]!r}, row {first[b]}: {flat[first[b]]!r}); give every label the same type "
                         "(e.g. all int, or all str)")
    group, values = next(iter(first), None), flat.tolist()
    if group in ("str", "bytes"):
        nul = "\0" if group == "str" else b"\0"
        cut = next((i for i, v in enumerate(values) if v.endswith(nul)), None)
        if cut is not None:
            raise ValueError(f"{name} has the label {values[cut]!r} at row {cut}, which ends in a NUL character that "
                             "fixed-width NumPy strings drop; strip trailing NUL characters from the labels")
        typed = np.array(values, dtype=str if group == "str" else bytes)
    elif group == "bool":
        typed = np.array(values, dtype=bool)
    elif group == "number":
        try:
            typed = np.array(values)
        except OverflowError:
            typed = None
        if typed is None or typed.dtype.kind not in "iu":  # floats, ints with floats, ints beyond 64 bits: if exact
            try:
                typed = np.array(values, dtype=np.float64)
            except OverflowError:
                typed = None
            if typed is None or not all(float(v) == v for v in values):
                raise ValueError(f"{name} has numeric labels that neither 64-bit integers nor floats hold exactly; "
                                 "give them as str")
    elif group in ("datetime", "date", "timedelta"):
        aware = next((i for i, v in enumerate(values) if getattr(v, "tzinfo", None) is not None), None)
        if aware is not None:
            raise ValueError(f"{name} has the timezone-aware label {values[aware]!r} at row {aware}, which a model "
                             "file cannot store with its zone; convert the labels to naive UTC first "
                             "(e.g. y.dt.tz_convert(None))")
        as64 = (np.datetime64, "to_datetime64") if group != "timedelta" else (np.timedelta64, "to_timedelta64")
        typed = np.array([getattr(v, as64[1])() if hasattr(v, as64[1]) else as64[0](v) for v in flat.tolist()])
    else:  # no labels at all
        typed = np.array(values, dtype=np.float64)
    return typed.reshape(arr.shape)


def _label_array(y: np.ndarray, name: str = "y") -> np.ndarray:
    """Class labels as an array that a model file stores and loads without pickle (see ``_LABEL_KINDS``), with
    the same values; ValueError (one line) for labels of another type, mixed types and missing labels."""
    if y.dtype.kind == "O":
        y = _labels_from_objects(y, name)
    if y.dtype.kind not in _LABEL_KINDS:
        raise ValueError(f"{name} has labels of dtype {y.dtype}, which a model file cannot store; give the labels as "
                         f"{_LABEL_TYPES}")
    bad = ~np.isfinite(y) if y.dtype.kind == "f" else np.isnat(y) if y.dtype.kind in "Mm" else None
    if bad is not None and bad.any():
        i = int(np.argmax(bad.ravel()))
        raise ValueError(f"{name} has the label {y.ravel()[i]} at row {i}: NaN, NaT and infinite values are not "
                         "classes; drop those rows or give them a class")
    return y


def _numeric_targets(y: np.ndarray) -> np.ndarray:
    """Regression targets of an object array (a list's or pandas') as float64; ValueError for missing ones and
    numbers beyond float64, TypeError for targets that are not numbers."""
    flat = y.ravel()
    missing = _missing(flat)
    if missing.any():
        i = int(np.argmax(missing))
        raise ValueError(f"y has a missing target ({flat[i]!r}) at row {i}: drop those rows or fill them")
    for i, v in enumerate(flat):
        if isinstance(v, (np.datetime64, np.timedelta64)) or not isinstance(v, numbers.Real):
            raise TypeError(f"y must be numeric for regression, got {v!r} (type {type(v).__name__}) at row {i}")
    try:
        return np.array(flat.tolist(), dtype=np.float64).reshape(y.shape)
    except OverflowError:
        raise ValueError("y has a target beyond float64's largest number; rescale y (e.g. divide it by 1e10) and "
                         "scale the predictions back") from None


def _label_family(labels: np.ndarray) -> str:
    """Labels of one family compare with each other: numbers (bool, int, float), or one of the other kinds."""
    return "number" if labels.dtype.kind in "biuf" else labels.dtype.kind


def _check_epochs(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1 (the number of training epochs), got {value!r}")
    return int(value)


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


def _json_number(value):
    """Parameters that are NumPy scalars (a sweep's np.int64) as the Python numbers JSON writes."""
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"parameter value {value!r} of type {type(value).__name__} cannot be saved as JSON")


def _load_booleanizer(z, n_features: int, booleanize) -> Booleanizer | None:
    """The fitted :class:`Booleanizer` of a model file (None for a model of 0/1 features), every array checked."""
    if "booleanizer_counts" not in z.files:
        if booleanize is not None:
            raise _BadModelFile(f"its parameters say booleanize={booleanize!r} but it has no 'booleanizer_counts' "
                                "array (not written by save(), or cut short)")
        return None
    counts, flat, binary = (_stored(z, k) for k in ("booleanizer_counts", "booleanizer_thresholds",
                                                     "booleanizer_binary"))
    if counts.shape != (n_features,) or counts.dtype.kind not in "iu" or (counts.size and counts.min() < 1):
        raise _BadModelFile(f"booleanizer_counts must be {n_features} integers >= 1 (thresholds per feature)")
    if flat.shape != (int(counts.sum()),) or flat.dtype.kind != "f" or not np.all(np.isfinite(flat)):
        raise _BadModelFile(f"booleanizer_thresholds must be {int(counts.sum())} finite floats (as many as "
                            "booleanizer_counts adds up to)")
    if binary.shape != (n_features,) or binary.dtype.kind != "b":
        raise _BadModelFile(f"booleanizer_binary must be {n_features} booleans")
    thresholds = np.split(flat.astype(np.float64), np.cumsum(counts)[:-1])
    if any(np.any(np.diff(t) <= 0) for t in thresholds):
        raise _BadModelFile("each feature's booleanizer thresholds must be increasing")
    b = Booleanizer(int(booleanize) if booleanize is not None else int(counts.max()))
    b.thresholds_, b.binary_, b.n_features_in_ = thresholds, binary.astype(bool), n_features
    b.n_features_out_ = int(counts.sum())
    return b


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
                 gpu_threads_per_clause=1, order="dataset", epochs=100, booleanize=None, gpu_shared_state=False):
        # Parameters are stored as given and checked by fit (scikit-learn's convention: set_params and clone
        # never raise); load checks those of a model file.
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
        # warp) or 64 to 1,024 (2 to 32 warps, for wide inputs with few clauses; from 128 on a block of its own,
        # 1,024 being CUDA's most threads per block), a power of two; the clause's literal words split
        # across them in training, the clauses of a class across them at inference; the same rules, so the same
        # results as 1 wherever the GPU's schedule is deterministic. The CPU build ignores it.
        self.gpu_threads_per_clause = gpu_threads_per_clause
        # gpu_shared_state: on the GPU, each clause's automata in its block's shared memory for a batch (read and
        # updated there, written back at the batch's end): the same results, less traffic to the GPU's memory;
        # asynchronous tallies only, and refused where a block's clauses do not fit. The CPU build ignores it.
        self.gpu_shared_state = gpu_shared_state
        # order: how each clause walks a batch's examples: "dataset" (all clauses in the data's order, as the
        # paper's kernel) or "staggered" (clause g starts at example g mod the batch's size and wraps around, so
        # that clauses running side by side on a GPU visit different examples). kernels/README.md, "Example order".
        self.order = order
        # epochs: the epochs of fit(X, y) when its own epochs argument is not given.
        self.epochs = epochs
        # booleanize: None, X must be 0/1 features (dense or sparse, packed as they are); an integer k, real
        # values are turned into up to k 0/1 features each, x > t on thresholds at quantiles of the first fit's
        # data (asynctm.booleanize.Booleanizer, fitted on that data and kept as booleanizer_).
        self.booleanize = booleanize

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
        if not isinstance(self.gpu_shared_state, bool):
            raise ValueError(f"gpu_shared_state must be True or False, got {self.gpu_shared_state!r}")
        if self.gpu_shared_state and self.tally == "sync":
            raise ValueError("gpu_shared_state=True needs tally='async': the synchronous tallies have no batch to keep "
                             "the automata for")
        if self.seed is not None:
            if isinstance(self.seed, bool) or not isinstance(self.seed, numbers.Integral) or not 0 <= self.seed < 2**64:
                raise ValueError(f"seed must be None or an integer in [0, 2^64), got {self.seed!r}")
        _check_epochs(self.epochs, "epochs")
        if self.booleanize is not None:
            check_n_thresholds(self.booleanize, "booleanize")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # scipy.sparse X is packed as it is, never densified
        # One CPU thread and a seed give the same model every time; more threads or a GPU let clauses read each
        # other's tallies while they change (the paper's asynchrony), and no seed draws a fresh one.
        tags.non_deterministic = not (self.seed is not None and self.backend == "cpu" and self.n_threads == 1)
        return tags

    # -- data --------------------------------------------------------------------------------------
    def _check_X(self, X, fitting: bool):
        """``X`` as the kernels' 0/1 features (a uint8 array or a CSR matrix): checked by scikit-learn's rules
        (``n_features_in_``, ``feature_names_in_``), then booleanized (``booleanizer_``) or checked to be 0/1."""
        if not fitting:
            self._check_fitted()
        X = validate_input(self, X, fitting, accept_sparse=True)
        if fitting:
            self.booleanizer_ = None if self.booleanize is None else Booleanizer(int(self.booleanize)).fit(X)
        booleanizer = getattr(self, "booleanizer_", None)
        if booleanizer is not None:
            return booleanizer.transform(X)
        try:
            return check_binary_matrix(X)
        except ValueError as e:
            if "must be binary" not in str(e):
                raise
            raise ValueError(f"{e} Or pass booleanize=8 (up to 8 thresholds per feature, from quantiles) to turn "
                             "real values into 0/1 features") from None

    def __sklearn_is_fitted__(self) -> bool:
        return getattr(self, "_ta_state", None) is not None or getattr(self, "_backend", None) is not None

    def _check_fitted(self):
        if not self.__sklearn_is_fitted__():
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet: call fit(X, y) first")

    @property
    def n_binary_features_(self) -> int:
        """The 0/1 features the clauses read: ``n_features_in_``, or what ``booleanize`` made of them."""
        self._check_fitted()
        return self.n_literals_ // 2 if self.append_negated else self.n_literals_

    def _encode(self, X) -> np.ndarray:
        words, _ = pack_literals(X, self.append_negated)
        return words

    # -- backend -------------------------------------------------------------------------------------
    def _kernel_config(self, backend: str | None = None) -> KernelConfig:
        """The kernels' configuration for ``backend`` (the resolved name; None: resolve ``self.backend``)."""
        return KernelConfig(n_classes=self._n_outputs, n_clauses=self.n_clauses, n_literals=self.n_literals_,
                            T=int(self.T), s=float(self.s), state_bits=self.state_bits,
                            boost_true_positive=bool(self.boost_true_positive), regression=self._regression,
                            tally=self.tally, regression_rule=self.regression_rule,
                            threads_per_clause=int(self.gpu_threads_per_clause), order=self.order,
                            shared_state=self.gpu_shared_state and (backend or resolve_backend(self.backend)) == "cuda")

    def _make_backend(self):
        name = resolve_backend(self.backend)
        if self.backend == "auto":
            logger.info("asynctm: backend='auto' picked %r", name)
        be = make_backend(name, self._kernel_config(name), n_threads=self.n_threads)
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
        state = dict(super().__getstate__())
        if state.get("_backend") is not None:
            state["_ta_state"] = self._planes()
        state["_backend"] = None
        state["_train_ref"] = None
        return state

    # -- training ------------------------------------------------------------------------------------
    def _targets(self, y, n: int, fitting_first: bool, classes=None) -> np.ndarray:
        raise NotImplementedError

    def fit(self, X, y, epochs: int | None = None, incremental: bool = False, *, callback=None, verbose: int = 0):
        """Train for ``epochs`` epochs (an integer >= 1; by default the ``epochs`` parameter, 100).
        ``incremental=True`` continues from the current clauses (and, with the very same ``X`` and ``y`` objects
        as the previous call, from the current voting tallies); :meth:`partial_fit` is one such epoch.

        ``callback(estimator, epoch, train_s)``, if given, is called after every epoch (``epoch``: this call's
        epoch, from 1; ``train_s``: its seconds); a true return value stops training after that epoch.
        ``verbose`` (scikit-learn's convention): 0 prints nothing, 1 or more prints one line per epoch to
        stderr: epoch k/N, seconds per epoch and the estimated time left."""
        return self._fit(X, y, epochs, incremental, callback=callback, verbose=verbose)

    def _fit(self, X, y, epochs, incremental, classes=None, callback=None, verbose=0):
        if epochs is not None:
            _check_epochs(epochs, "epochs")
        if callback is not None and not callable(callback):
            raise TypeError(f"callback must be callable as callback(estimator, epoch, train_s), got {callback!r}")
        self._prepare_training(X, y, incremental, classes=classes)
        epochs = int(self.epochs if epochs is None else epochs)
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

    def _prepare_training(self, X, y, incremental: bool = False, classes=None) -> None:
        """Everything ``fit`` does before its first epoch: check and encode the data, set up the backend and
        compute the voting tallies (timings in ``setup_timings_``). A following ``fit(X, y, incremental=True)``
        with the same objects trains from there."""
        self._validate_params()
        continuing = self.__sklearn_is_fitted__() and bool(incremental)
        ref = getattr(self, "_train_ref", None) if continuing else None
        if continuing and classes is not None:
            self._check_same_classes(classes)
        if ref is None or ref[0] is not X or ref[1] is not y:
            # New training data: check and encode it once, then compute stored outputs and tallies from the
            # clauses. (The same X and y objects again: nothing to redo, the tallies continue.)
            if continuing:
                self._new_training_data(X, y, continuing, classes)
            else:
                try:
                    self._new_training_data(X, y, continuing, classes)
                except BaseException:
                    self._release()  # a fresh fit that failed leaves no half-fitted model behind
                    self._ta_state = None
                    raise

    def _new_training_data(self, X, y, continuing: bool, classes) -> None:
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None; give one "
                             "target per row of X")
        if not continuing:
            self._release()
            self._ta_state = None
        X_checked = self._check_X(X, fitting=not continuing)
        n = X_checked.shape[0]
        y_arr = _target_array(y)
        if y_arr.ndim == 2 and y_arr.shape[1] == 1 and y_arr.shape[0] == n:
            warnings.warn("A column-vector y was passed when a 1d array was expected; y is used as y.ravel()",
                          DataConversionWarning, stacklevel=5)
            y_arr = y_arr.ravel()
        if y_arr.ndim != 1 or y_arr.shape[0] != n:
            raise ValueError(f"y must be 1-D with one target per row of X ({n}), got shape {y_arr.shape}")
        if not continuing:
            n_binary = X_checked.shape[1]
            self.n_literals_ = 2 * n_binary if self.append_negated else n_binary
        y_target = self._targets(y_arr, n, fitting_first=not continuing, classes=classes)
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

    def class_sums(self, X) -> np.ndarray:
        """The clipped vote sums, ``(n_samples, n_outputs)`` int32 in ``[-T, T]``: one column per class (in
        ``classes_`` order) for a classifier, one column (the clause sum ``v``) for a regressor."""
        return self._class_sums(X)

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

    # -- readable models (asynctm.rules) -----------------------------------------------------------------
    def _include_lists(self) -> list[np.ndarray]:
        """The literals each clause includes (sorted), clause ``g = output * n_clauses + j``: read from the
        include bits (the states' top plane) word by word, so a model of many literals stays cheap."""
        self._check_fitted()
        top = self._planes()[:, self.state_bits - 1, :]
        g, w = np.nonzero(top)
        bits = (top[g, w].astype(np.uint64)[:, None] >> np.arange(WORD_BITS, dtype=np.uint64)) & np.uint64(1)
        k, b = np.nonzero(bits)
        literal, clause = w[k].astype(np.int64) * WORD_BITS + b, g[k]
        keep = literal < self.n_literals_
        literal, clause = literal[keep], clause[keep]
        bounds = np.searchsorted(clause, np.arange(top.shape[0] + 1))
        return [literal[bounds[i]:bounds[i + 1]] for i in range(top.shape[0])]

    def _feature_names(self, feature_names=None) -> list[str]:
        """``feature_names``, else ``feature_names_in_`` (a DataFrame's columns), else ``x0, x1, ...``."""
        if feature_names is None:
            feature_names = getattr(self, "feature_names_in_", None)
        if feature_names is None:
            return [f"x{i}" for i in range(self.n_features_in_)]
        if isinstance(feature_names, (str, bytes)):
            raise TypeError(f"feature_names must be a list of {self.n_features_in_} names, got a string")
        names = [str(v) for v in feature_names]
        if len(names) != self.n_features_in_:
            raise ValueError(f"feature_names has {len(names)} names, but this model reads {self.n_features_in_} "
                             "features; give one name per column of X")
        return names

    def _inputs(self, feature_names=None) -> tuple[list[dict], list[bool]]:
        """The 0/1 features the clauses read, as the rules file lists them (asynctm.rules), and which of them
        are cuts ``x > t`` of a real feature (the others: 0/1 features as they are)."""
        self._check_fitted()
        names = self._feature_names(feature_names)
        booleanizer = getattr(self, "booleanizer_", None)
        if booleanizer is None:
            return [{"feature": i, "threshold": None, "name": n, "negated_name": f"NOT {n}"}
                    for i, n in enumerate(names)], [False] * len(names)
        inputs, cuts = [], []
        for i, (thresholds, binary) in enumerate(zip(booleanizer.thresholds_, booleanizer.binary_)):
            for t in thresholds:
                text = format_threshold(float(t))
                name, negated = (names[i], f"NOT {names[i]}") if binary else (f"{names[i]} > {text}",
                                                                               f"{names[i]} <= {text}")
                inputs.append({"feature": i, "threshold": float(t), "name": name, "negated_name": negated})
                cuts.append(not binary)
        return inputs, cuts

    @staticmethod
    def _rule_text(inputs, cuts, positive, negated, names) -> str:
        """A clause's literals joined by AND: the features it needs, then (NOT ...) those it needs absent, each
        in feature order; the cuts of one real feature merged into one interval (``x > 0.2 AND x > 0.5 AND
        x <= 0.9`` reads ``0.5 < x <= 0.9``)."""
        lower, upper, terms = {}, {}, []
        for k in positive:
            f = inputs[k]["feature"]
            if cuts[k]:
                lower[f] = max(lower.get(f, -math.inf), inputs[k]["threshold"])
            else:
                terms.append((0, f, inputs[k]["name"]))
        for k in negated:
            f = inputs[k]["feature"]
            if cuts[k]:
                upper[f] = min(upper.get(f, math.inf), inputs[k]["threshold"])
            else:
                terms.append((1, f, inputs[k]["negated_name"]))
        for f in set(lower) | set(upper):
            lo, hi = lower.get(f), upper.get(f)
            if lo is not None and hi is not None and lo < hi:
                terms.append((0, f, f"{format_threshold(lo)} < {names[f]} <= {format_threshold(hi)}"))
            else:  # one bound, or bounds no value meets (the clause never fires): each as it is
                if lo is not None:
                    terms.append((0, f, f"{names[f]} > {format_threshold(lo)}"))
                if hi is not None:
                    terms.append((0, f, f"{names[f]} <= {format_threshold(hi)}"))
        return clause_text([t for _, _, t in sorted(terms, key=lambda v: v[:2])], [])

    def _clause_records(self, feature_names=None) -> tuple[list[dict], list[dict]]:
        """``(inputs, clauses)`` of the rules file: every clause that includes a literal (an empty clause never
        fires at inference), with its output, polarity, inputs and rule text."""
        inputs, cuts = self._inputs(feature_names)
        names = self._feature_names(feature_names)
        n_inputs = len(inputs)
        records = []
        for g, literals in enumerate(self._include_lists()):
            if not literals.size:
                continue
            output, j = divmod(g, self.n_clauses)
            positive = [int(v) for v in literals if v < n_inputs]
            negated = [int(v) - n_inputs for v in literals if v >= n_inputs]
            records.append({"output": output, "clause": j, "polarity": 1 if self._regression or j % 2 == 0 else -1,
                            "positive": positive, "negated": negated,
                            "rule": self._rule_text(inputs, cuts, positive, negated, names)})
        return inputs, records

    def _output_label(self, output: int):
        return None

    def rules(self, feature_names=None) -> list[dict]:
        """Every clause that includes a literal, as a rule over named features: ``{"class" (a classifier's),
        "clause", "polarity", "rule", "positive", "negated"}``, e.g. ``{"class": "sport", "clause": 4,
        "polarity": 1, "rule": "word_goal AND NOT word_vote", ...}``; ``positive`` and ``negated`` name the
        0/1 features it needs to be 1 and 0. Names: ``feature_names``, else ``feature_names_in_``, else
        ``x0, x1, ...``; with ``booleanize`` a real feature reads ``"age > 42"`` (and ``"age <= 42"`` negated)."""
        inputs, records = self._clause_records(feature_names)
        out = []
        for r in records:
            label = self._output_label(r["output"])
            out.append({**({"class": label} if label is not None else {}), "clause": r["clause"],
                        "polarity": r["polarity"], "rule": r["rule"],
                        "positive": [inputs[k]["name"] for k in r["positive"]],
                        "negated": [inputs[k]["name"] for k in r["negated"]]})
        return out

    def explain(self, x, feature_names=None) -> dict:
        """Why the model predicts what it does for one example ``x`` (a row: 1-D, ``(1, n_features)`` or a
        one-row sparse matrix): ``{"prediction", "sums" (per class; a regressor: "sum"), "fired"}``, where
        ``fired`` lists each clause that fired with its class, its vote (+1 or -1) and its rule. The sums are
        the fired votes added up and clipped to ``[-T, T]``: those of ``class_sums``."""
        self._check_fitted()
        if getattr(x, "ndim", None) == 1 and hasattr(x, "to_frame"):  # a pandas Series: one row, named
            x = x.to_frame().T
        elif not sp.issparse(x) and not hasattr(x, "columns"):
            x = np.asarray(x)
            if x.ndim == 1:
                x = x.reshape(1, -1)
        if x.shape[0] != 1:
            raise ValueError(f"explain takes one example (one row), got {x.shape[0]} rows; call it once per row")
        bits = self._check_X(x, fitting=False)
        row = np.asarray(bits.toarray() if sp.issparse(bits) else bits)[0].astype(bool)
        _, records = self._clause_records(feature_names)
        fired = [r for r in records if row[r["positive"]].all() and not row[r["negated"]].any()]
        sums = np.zeros(self._n_outputs, dtype=np.int64)
        for r in fired:
            sums[r["output"]] += r["polarity"]
        sums = np.clip(sums, -int(self.T), int(self.T))
        out = {"prediction": self.predict(x)[0]}
        if self._regression:
            out["sum"] = int(sums[0])
        else:
            out["sums"] = {self._output_label(k): int(v) for k, v in enumerate(sums)}
        out["fired"] = [{**({"class": self._output_label(r["output"])} if not self._regression else {}),
                         "clause": r["clause"], "vote": r["polarity"], "rule": r["rule"]} for r in fired]
        return out

    def export_rules(self, path=None, feature_names=None) -> dict:
        """The learned model as a JSON document (the schema: :mod:`asynctm.rules`, docs/library.md), written
        to ``path`` (atomically) when given; ``asynctm.rules.RuleModel`` evaluates it in pure Python to the
        same predictions."""
        inputs, records = self._clause_records(feature_names)
        document = {"format": _RULES_FORMAT, "version": _RULES_VERSION, "estimator": type(self).__name__,
                    "T": int(self.T), "features": self._feature_names(feature_names), "inputs": inputs,
                    "clauses": records, **self._rules_outputs()}
        if path is not None:
            text = json.dumps(document, indent=1) + "\n"
            with atomic_open(Path(path), "wb") as fh:
                fh.write(text.encode("utf-8"))
        return document

    # -- persistence -------------------------------------------------------------------------------------
    def save(self, path) -> None:
        """Save parameters and learned state to a plain ``.npz`` (no pickle), written atomically."""
        path = Path(path)
        arrays = self._save_arrays()  # refusals (an unfitted model, labels no plain array holds) come before the file
        with atomic_open(path, "wb") as fh:
            np.savez(fh, **arrays)

    def _save_arrays(self) -> dict:
        """The arrays of :meth:`save` (a checkpoint adds its own to them; :meth:`load` ignores extra keys)."""
        self._check_fitted()
        arrays = {
            "format": np.array(SAVE_FORMAT),
            "kind": np.array(type(self).__name__),
            "params": np.array(json.dumps(self.get_params(), sort_keys=True, default=_json_number)),
            "ta_state": self._planes(),
            "n_features_in": np.array(self.n_features_in_),
            "epochs_trained": np.array(self.epochs_trained_),
            "seed": np.array(str(self.seed_)),
            **self._extra_state(),
        }
        names = getattr(self, "feature_names_in_", None)
        if names is not None:
            arrays["feature_names_in"] = np.array([str(v) for v in names])
        booleanizer = getattr(self, "booleanizer_", None)
        if booleanizer is not None:
            arrays["booleanizer_counts"] = np.array([len(t) for t in booleanizer.thresholds_], dtype=np.int64)
            arrays["booleanizer_thresholds"] = np.concatenate(booleanizer.thresholds_).astype(np.float64)
            arrays["booleanizer_binary"] = np.asarray(booleanizer.binary_, dtype=bool)
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
            model._validate_params()
        except (TypeError, ValueError) as e:
            raise _BadModelFile(f"its parameters are invalid ({e})") from None
        model.n_features_in_ = _stored_int(z, "n_features_in", 1, _INT32_MAX)
        if "feature_names_in" in z.files:
            names = _stored(z, "feature_names_in")
            if names.shape != (model.n_features_in_,) or names.dtype.kind != "U":
                raise _BadModelFile(f"feature_names_in must be {model.n_features_in_} strings, got {names.dtype} of "
                                    f"shape {names.shape}")
            model.feature_names_in_ = np.array(names.tolist(), dtype=object)
        model.booleanizer_ = _load_booleanizer(z, model.n_features_in_, params.get("booleanize"))
        n_binary = model.n_features_in_ if model.booleanizer_ is None else model.booleanizer_.n_features_out_
        model.n_literals_ = 2 * n_binary if model.append_negated else n_binary
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
                + ("" if model.booleanizer_ is None else f"booleanized into {n_binary} ")
                + f"({model.n_literals_} literals) need {expected}")
        model._ta_state = np.array(planes, dtype=np.uint32)
        return model


class TMClassifier(ClassifierMixin, _TsetlinMachine):
    """Multi-class Tsetlin Machine: ``n_clauses`` clauses per class (even: half positive, half negative).

    ``class_sums`` returns the clipped class sums ``(n_samples, n_classes)``, in ``[-T, T]``;
    ``decision_function`` the same with several classes, and with two (scikit-learn's convention) one column,
    the second class's sum minus the first's (positive: the second class).
    """

    _regression = False

    @property
    def _n_outputs(self) -> int:
        return len(self.classes_)

    def partial_fit(self, X, y, classes=None):
        """One epoch on ``(X, y)``, continuing from the current clauses (the first call starts a model, as
        ``fit(X, y, epochs=1, incremental=True)``). ``classes``: every class the model will see, needed on the
        first call when its ``y`` does not hold them all; later calls may leave it out."""
        return self._fit(X, y, 1, True, classes=classes)

    def _check_same_classes(self, classes) -> None:
        given = np.unique(_label_array(_target_array(classes), "classes"))
        if given.shape != self.classes_.shape or _label_family(given) != _label_family(self.classes_) \
                or not np.all(given == self.classes_):
            raise ValueError(f"classes={given.tolist()} differs from this model's classes_ {self.classes_.tolist()}; "
                             "give the classes of the first call (or leave classes out)")

    def _targets(self, y, n, fitting_first, classes=None):
        y = _label_array(y)
        if fitting_first and classes is not None:
            given = np.unique(_label_array(_target_array(classes), "classes"))
            if given.ndim != 1 or len(given) < 2:
                raise ValueError(f"classes must list at least 2 classes, got {given.tolist()}")
            self.classes_ = given
        elif classes is not None:
            self._check_same_classes(classes)
        if fitting_first and classes is None:
            classes = np.unique(y)
            if len(classes) < 2:
                raise ValueError(f"y must contain at least 2 classes, found {len(classes)} class; give examples of "
                                 "at least two classes (partial_fit: pass classes=[...] on the first call)")
            if y.dtype.kind == "f" and not np.all(np.floor(y) == y):
                _, counts = np.unique(y, return_counts=True)
                once = int(np.sum(counts == 1))
                if 2 * once > len(counts):
                    raise ValueError(f"y looks continuous ({once} of its {len(counts)} distinct non-integer values "
                                     "occur only once), not like class labels; use TMRegressor for a continuous "
                                     "target, or give the classes as ints or str")
            self.classes_ = classes
        elif _label_family(y) != _label_family(self.classes_):
            raise ValueError(f"y holds labels of dtype {y.dtype}, but this model's classes are {self.classes_.dtype}; "
                             "give labels of the type of the first fit")
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
        """The clipped class sums ``(n_samples, n_classes)``; with two classes ``(n_samples,)``: the second
        class's sum minus the first's, so that ``decision_function(X) > 0`` predicts ``classes_[1]``."""
        sums = self._class_sums(X)
        if sums.shape[1] == 2:
            return sums[:, 1].astype(np.int64) - sums[:, 0]
        return sums

    def predict(self, X) -> np.ndarray:
        sums = self._class_sums(X)
        return self.classes_[np.argmax(sums, axis=1)]

    def _output_label(self, output: int):
        label = self.classes_[output]
        return label.item() if isinstance(label, np.generic) and label.dtype.kind not in "Mm" else label

    def _rules_outputs(self) -> dict:
        classes = self.classes_
        if classes.dtype.kind == "M":
            labels = [str(v) for v in np.datetime_as_string(classes)]
        elif classes.dtype.kind == "m":
            labels = [int(v) for v in classes.astype(np.int64)]
        elif classes.dtype.kind == "S":
            labels = [v.decode("latin-1") for v in classes.tolist()]
        else:
            labels = classes.tolist()
        return {"classes": labels, "class_dtype": classes.dtype.str}

    def _extra_state(self):
        return {"classes": _label_array(np.asarray(self.classes_), "classes_")}

    def _load_extra_state(self, z):
        classes = np.array(_stored(z, "classes"))
        if classes.ndim != 1 or len(classes) < 2 or classes.dtype.kind not in _LABEL_KINDS:
            raise _BadModelFile(f"classes must be a list of at least 2 labels ({_LABEL_TYPES}), got {classes!r}")
        if classes.dtype.kind == "f" and not np.all(np.isfinite(classes)):
            raise _BadModelFile(f"classes must be finite, got {classes.tolist()}")
        if classes.dtype.kind in "Mm" and np.any(np.isnat(classes)):
            raise _BadModelFile(f"classes must not hold NaT, got {classes}")
        if not np.all(classes[1:] > classes[:-1]):
            raise _BadModelFile(f"classes must be sorted and distinct (as fit stores them), got {classes.tolist()}")
        self.classes_ = classes


class TMRegressor(RegressorMixin, _TsetlinMachine):
    """Regression Tsetlin Machine: positive clauses only; the target is scaled to ``[0, T]`` and predicted as
    ``v / T`` rescaled to the training range, where ``v`` is the clipped sum of clause outputs."""

    _regression = True
    _n_outputs = 1

    def partial_fit(self, X, y):
        """One epoch on ``(X, y)``, continuing from the current clauses (the first call starts a model, as
        ``fit(X, y, epochs=1, incremental=True)``, and fixes the target range: later targets outside it count as
        its nearest end)."""
        return self._fit(X, y, 1, True)

    def _targets(self, y, n, fitting_first, classes=None):
        if y.dtype.kind == "O":
            y = _numeric_targets(y)
        if y.dtype.kind not in "biuf":
            raise TypeError(f"y must be numeric for regression, got dtype {y.dtype}")
        with np.errstate(over="ignore"):  # a longdouble beyond float64 becomes inf, refused below
            y = y.astype(np.float64)
        bad = ~np.isfinite(y)
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError(f"y contains NaN or infinite values (row {i}), or values beyond float64: drop or fill "
                             "those rows")
        if fitting_first:
            if n == 1:
                raise ValueError("y has 1 sample (n_samples=1); a regression target needs at least two examples "
                                 "with different values")
            y_min, y_max = float(y.min()), float(y.max())
            if y_max == y_min:
                raise ValueError(f"y is constant ({y_min}); a regression target needs at least two values")
            if not math.isfinite(y_max - y_min):
                # the targets are scaled by y_max - y_min to the vote range [0, T] and predicted back by it: a width
                # beyond float64 turns both into inf and NaN
                raise ValueError(f"y spans {y_min:g} to {y_max:g}, a width beyond float64's largest number "
                                 f"({sys.float_info.max:g}) by which the targets are scaled to the vote range [0, T]; "
                                 "rescale y (e.g. divide it by 1e10) and scale the predictions back")
            self.y_min_, self.y_max_ = y_min, y_max
        scaled = np.floor((y - self.y_min_) / (self.y_max_ - self.y_min_) * int(self.T))
        return np.clip(scaled, 0, int(self.T)).astype(np.int32)[None, :]

    def predict(self, X) -> np.ndarray:
        """``v / T`` rescaled to the training range, ``v`` the clipped clause sum (``class_sums(X)[:, 0]``)."""
        v = self._class_sums(X)[:, 0].astype(np.float64)
        return v / int(self.T) * (self.y_max_ - self.y_min_) + self.y_min_

    def _rules_outputs(self) -> dict:
        return {"y_range": [float(self.y_min_), float(self.y_max_)]}

    def _extra_state(self):
        return {"y_range": np.array([self.y_min_, self.y_max_])}

    def _load_extra_state(self, z):
        y_range = _stored(z, "y_range")
        if y_range.shape != (2,) or y_range.dtype.kind not in "iuf" or not np.all(np.isfinite(y_range)) \
                or not y_range[0] < y_range[1] or not math.isfinite(float(y_range[1]) - float(y_range[0])):
            raise _BadModelFile(f"y_range must be two finite numbers, the smaller first, at most float64's largest "
                                f"number apart, got {y_range.tolist()}")
        self.y_min_, self.y_max_ = (float(v) for v in y_range)
