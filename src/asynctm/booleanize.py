"""Real-valued features as 0/1 features for the Tsetlin Machine: thermometer encoding on quantile thresholds.

:class:`Booleanizer` learns, per input feature, up to ``n_thresholds`` thresholds ``t`` from the training data
(values of the feature at evenly spaced quantiles) and turns the feature into one 0/1 feature per threshold,
``x > t``. A clause can then say "age > 42 AND NOT income > 5e+04" (the second literal: income <= 5e+04).

- A feature whose training values are all 0 or 1 keeps one feature, itself (threshold 0): binary features pass
  through unchanged, under their own names.
- A feature with at most ``n_thresholds + 1`` distinct values gets a threshold at each of them but the largest
  (every cut between two seen values); a constant feature gets one (the value: 0 on the training data).
- Otherwise the thresholds are the values at the quantile levels ``j / (n_thresholds + 1)``, ``j = 1 ..
  n_thresholds`` (the inverted empirical distribution: values of the training data), ties merged and the
  largest value left out (``x > max`` is 0 on every training example).
- Each threshold then moves up to the number with the fewest significant digits below the next training value:
  the training data splits exactly as before, and rules read "age > 42", not "age > 41.99817".

Dense input gives a dense ``uint8`` array; a scipy.sparse input gives a CSR matrix of ``uint8`` (zeros stay
implicit as long as no threshold is negative). It works in a :class:`sklearn.pipeline.Pipeline`, before a
:class:`asynctm.TMClassifier`; the estimators' ``booleanize=`` option runs it inside ``fit`` and ``predict``.
"""

from __future__ import annotations

import numbers
from decimal import ROUND_CEILING, Decimal, InvalidOperation

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import _check_feature_names_in, check_is_fitted, validate_data

_ROWS_PER_BLOCK = 4096  # dense transform: rows per block (bounds the temporary float array)


def check_n_thresholds(value, name: str = "n_thresholds") -> int:
    """``value`` as the number of thresholds per feature (an integer >= 1), or a one-line error."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer >= 1 (thresholds per feature), got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1 (thresholds per feature), got {value}")
    return int(value)


def format_threshold(t: float) -> str:
    """A threshold as rules show it: Python's shortest exact form, without a trailing ``.0``."""
    return repr(float(t)).removesuffix(".0")


def _short_cut(lo: float, hi: float | None) -> float:
    """The number with the fewest significant digits in ``[lo, hi)``: ``x > cut`` splits the training values
    exactly as ``x > lo`` does (none lies between ``lo`` and ``hi``, the next one up), and reads better."""
    if hi is None:
        return lo
    exact = Decimal(lo)
    for digits in range(1, 18):
        try:
            step = Decimal(1).scaleb(exact.adjusted() - digits + 1) if exact else Decimal(1)
            cut = float(exact.quantize(step, rounding=ROUND_CEILING))
        except InvalidOperation:
            break
        if lo <= cut < hi:
            return cut
    return lo


def check_numeric_input(X, name: str = "X"):
    """One-line refusals for what is not a 2-D table of numbers (before scikit-learn's checks, whose messages
    run over several lines)."""
    if X is None or isinstance(X, (str, bytes)):
        raise TypeError(f"{name} must be a 2-D array or scipy.sparse matrix of numbers, got {type(X).__name__}")
    if sp.issparse(X):
        return
    dtype = getattr(X, "dtype", None)
    if isinstance(dtype, np.dtype) and dtype.kind in "USV":
        raise TypeError(f"{name} has dtype {dtype}; expected numbers (convert text to features first, e.g. a bag "
                        "of words)")
    shape = getattr(X, "shape", None)
    if shape is None and not hasattr(X, "__array__"):
        try:
            shape = np.shape(X)
        except ValueError:  # ragged rows
            raise ValueError(f"{name} has rows of different lengths; give every row the same features") from None
    if shape is not None and len(shape) != 2:
        if len(shape) == 1:
            raise ValueError(f"{name} must be 2-D (examples x features), got shape {tuple(shape)}. Reshape your "
                             f"data: {name}.reshape(-1, 1) for one feature, {name}.reshape(1, -1) for one example")
        raise ValueError(f"{name} must be 2-D (examples x features), got shape {tuple(shape)}")


def validate_input(estimator, X, reset: bool, accept_sparse):
    """scikit-learn's ``validate_data`` (``n_features_in_``, ``feature_names_in_``, numbers, at least one row and
    one feature) with every refusal on one line; NaN and infinity are left to the caller."""
    check_numeric_input(X)
    try:
        return validate_data(estimator, X, reset=reset, accept_sparse=accept_sparse, dtype="numeric",
                             ensure_all_finite=False)
    except ValueError as e:  # scikit-learn's messages may run over several lines
        if "\n" not in str(e):
            raise
        raise ValueError(" ".join(str(e).split())) from None


def check_finite(X, name: str = "X") -> None:
    """ValueError (one line: the first row and column) for NaN or infinite values."""
    data = X.data if sp.issparse(X) else X
    if data.dtype.kind not in "fc" or np.isfinite(data).all():
        return
    if sp.issparse(X):
        coo = X.tocoo()
        i = int(np.argmax(~np.isfinite(coo.data)))
        row, col, value = int(coo.row[i]), int(coo.col[i]), coo.data[i]
    else:
        row, col = (int(v) for v in np.argwhere(~np.isfinite(X))[0])
        value = X[row, col]
    raise ValueError(f"{name} contains NaN or infinite values (the first: {value} at row {row}, column {col}); drop "
                     "or fill them (e.g. sklearn.impute.SimpleImputer)")


def _column_thresholds(neg: np.ndarray, n_zero: int, pos: np.ndarray, k: int) -> tuple[np.ndarray, bool]:
    """The thresholds of one feature, and whether it is binary (all values 0 or 1). Its sorted values are
    ``neg``, then ``n_zero`` zeros, then ``pos`` (a sparse column: its stored values below and above 0, so it
    needs no dense copy; a dense column: all its values in ``neg``)."""
    n = len(neg) + n_zero + len(pos)
    distinct = np.unique(np.concatenate([neg, [0.0] if n_zero else [], pos]))
    if np.all((distinct == 0) | (distinct == 1)):
        return np.zeros(1), True
    if len(distinct) == 1:
        return distinct, False
    if len(distinct) - 1 <= k:
        return _short_cuts(distinct[:-1], distinct), False

    def value_at(i: int) -> float:
        if i < len(neg):
            return neg[i]
        if i < len(neg) + n_zero:
            return 0.0
        return pos[i - len(neg) - n_zero]

    # inverted empirical CDF: the value at level p is the (ceil(p n) - 1)-th smallest; p = j / (k + 1)
    picks = np.unique([value_at((j * n + k) // (k + 1) - 1) for j in range(1, k + 1)])
    picks = picks[picks < distinct[-1]]
    if picks.size == 0:  # nearly all values at the maximum: cut just below it
        picks = distinct[-2:-1]
    return _short_cuts(picks, distinct), False


def _short_cuts(picks: np.ndarray, distinct: np.ndarray) -> np.ndarray:
    """Each pick (a value of the feature, not its largest) moved to the shortest number below the next value."""
    above = distinct[np.searchsorted(distinct, picks, side="right")]
    return np.array([_short_cut(float(lo), float(hi)) for lo, hi in zip(picks, above)], dtype=np.float64)


class Booleanizer(TransformerMixin, BaseEstimator):
    """Thermometer encoding on quantile thresholds: each feature becomes up to ``n_thresholds`` 0/1 features
    ``x > t`` (see the module's documentation for how the thresholds are chosen).

    Attributes after ``fit``: ``thresholds_`` (a list: one sorted float64 array per input feature),
    ``binary_`` (bool per input feature: its training values were all 0 or 1, so it passes through as itself),
    ``n_features_in_``, ``feature_names_in_`` (for a DataFrame with string column names) and
    ``n_features_out_``.
    """

    def __init__(self, n_thresholds=8):
        self.n_thresholds = n_thresholds

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.transformer_tags.preserves_dtype = []  # always uint8
        return tags

    def _validate(self, X, reset: bool):
        X = validate_input(self, X, reset, accept_sparse=("csr", "csc"))
        if np.issubdtype(X.dtype, np.complexfloating):
            raise ValueError("Complex data not supported: X has complex values; give real numbers")
        check_finite(X)
        return X

    def fit(self, X, y=None):
        """Learn the thresholds of every feature from ``X`` (``y`` is ignored)."""
        k = check_n_thresholds(self.n_thresholds)
        X = self._validate(X, reset=True)
        n, d = X.shape
        thresholds, binary = [], np.zeros(d, dtype=bool)
        if sp.issparse(X):
            X = X.tocsc()
            X.sort_indices()
            data = X.data.astype(np.float64, copy=False)
            if data.size == 0 or np.all(data == 1):  # a sparse 0/1 matrix (bag of words): all binary, fast
                self.thresholds_ = [np.zeros(1) for _ in range(d)]
                self.binary_ = np.ones(d, dtype=bool)
                self.n_features_out_ = d
                return self
            for c in range(d):
                col = np.sort(data[X.indptr[c]:X.indptr[c + 1]])
                nonzero = col[col != 0]
                n_zero = n - nonzero.size
                t, binary[c] = _column_thresholds(nonzero[nonzero < 0], n_zero, nonzero[nonzero > 0], k)
                thresholds.append(t)
        else:
            S = np.sort(np.asarray(X, dtype=np.float64), axis=0)
            for c in range(d):
                t, binary[c] = _column_thresholds(S[:, c], 0, S[:0, c], k)
                thresholds.append(t)
        self.thresholds_ = thresholds
        self.binary_ = binary
        self.n_features_out_ = int(sum(len(t) for t in thresholds))
        return self

    def _layout(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(source feature, threshold)`` of each output feature, and each input feature's first output."""
        counts = np.array([len(t) for t in self.thresholds_], dtype=np.int64)
        source = np.repeat(np.arange(len(counts)), counts)
        flat = np.concatenate(self.thresholds_) if len(counts) else np.zeros(0)
        offsets = np.concatenate([[0], np.cumsum(counts)])
        return source, flat, offsets

    def transform(self, X):
        """``X`` as 0/1 features: a ``uint8`` array, or a CSR matrix of ``uint8`` for sparse input."""
        check_is_fitted(self, "thresholds_")
        X = self._validate(X, reset=False)
        source, flat, offsets = self._layout()
        n = X.shape[0]
        if not sp.issparse(X):
            out = np.empty((n, len(flat)), dtype=np.uint8)
            for start in range(0, n, _ROWS_PER_BLOCK):
                block = np.asarray(X[start:start + _ROWS_PER_BLOCK], dtype=np.float64)
                out[start:start + _ROWS_PER_BLOCK] = block[:, source] > flat
            return out
        return self._transform_sparse(X.tocsr(), flat, offsets)

    def _transform_sparse(self, X, flat: np.ndarray, offsets: np.ndarray):
        n = X.shape[0]
        X.sum_duplicates()
        rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(X.indptr))
        cols = X.indices.astype(np.int64)
        vals = X.data.astype(np.float64, copy=False)
        counts = np.diff(offsets)
        out_rows, out_cols = [], []
        # stored entries: bit m of feature c is set where the value exceeds its m-th threshold
        for m in range(int(counts.max(initial=0))):
            has = counts[cols] > m
            at = offsets[cols[has]] + m
            hit = vals[has] > flat[at]
            out_rows.append(rows[has][hit])
            out_cols.append(at[hit])
        # implicit zeros exceed the negative thresholds
        negative = np.flatnonzero(flat < 0)
        if negative.size:
            X_csc = X.tocsc()
            for c in np.unique(np.searchsorted(offsets, negative, side="right") - 1):
                stored = np.zeros(n, dtype=bool)
                stored[X_csc.indices[X_csc.indptr[c]:X_csc.indptr[c + 1]]] = True
                zero_rows = np.flatnonzero(~stored)
                for at in range(offsets[c], offsets[c + 1]):
                    if flat[at] < 0:
                        out_rows.append(zero_rows)
                        out_cols.append(np.full(zero_rows.size, at, dtype=np.int64))
        r = np.concatenate(out_rows) if out_rows else np.zeros(0, dtype=np.int64)
        c = np.concatenate(out_cols) if out_cols else np.zeros(0, dtype=np.int64)
        out = sp.csr_matrix((np.ones(r.size, dtype=np.uint8), (r, c)), shape=(n, len(flat)))
        out.sort_indices()
        return out

    def get_feature_names_out(self, input_features=None):
        """``"name > t"`` for each output feature; a binary input feature keeps its own name."""
        check_is_fitted(self, "thresholds_")
        names = _check_feature_names_in(self, input_features)
        return np.asarray(feature_names_out(names, self.thresholds_, self.binary_), dtype=object)


def feature_names_out(names, thresholds, binary) -> list[str]:
    """The names of the 0/1 features that ``thresholds`` make of the features ``names``."""
    out = []
    for name, ts, b in zip(names, thresholds, binary):
        out.extend([str(name)] if b else [f"{name} > {format_threshold(float(t))}" for t in ts])
    return out
