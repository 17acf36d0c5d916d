"""Packing of 0/1 features into literal words, and conversions of bit-sliced automaton states.

Literal ``l`` of an example is bit ``l % 32`` of word ``l // 32`` (kernels/README.md, Layout): the
features first, then (with ``append_negated``) their negations. Input validation lives here too, so
every entry point rejects bad input with the same clear messages.
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp

WORD_BITS = 32


def n_words(n_literals: int) -> int:
    return (n_literals + WORD_BITS - 1) // WORD_BITS


def check_binary_matrix(X, name: str = "X"):
    """Return ``X`` as a 0/1 uint8 ndarray or a CSR matrix with all-ones data, or raise clearly."""
    if isinstance(X, (str, bytes)) or X is None:
        raise TypeError(f"{name} must be a 2-D array or scipy.sparse matrix of 0/1, got {type(X).__name__}")
    if sp.issparse(X):
        # A copy: canonicalising below works in place, and must never change the caller's matrix.
        X = sp.csr_matrix(X, copy=True)
        if X.ndim != 2:
            raise ValueError(f"{name} must be 2-D, got shape {X.shape}")
        X.sum_duplicates()
        X.eliminate_zeros()
        data = X.data
        if data.dtype.kind not in "biuf":
            raise TypeError(f"{name} has dtype {data.dtype}; expected 0/1 numbers")
        if data.size and not np.all(data == 1):
            bad = data[data != 1][0]
            raise ValueError(f"{name} must be binary (0/1); found the value {bad!r}. Binarize the features first "
                             "(e.g. thresholds or a bag of words).")
        X.data = np.ones_like(X.data, dtype=np.uint8)
        if X.shape[0] == 0 or X.shape[1] == 0:
            raise ValueError(f"{name} is empty (shape {X.shape})")
        return X
    try:
        arr = np.asarray(X)
    except Exception as exc:  # ragged lists and the like
        raise TypeError(f"{name} could not be read as an array: {exc}") from None
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} has dtype {arr.dtype}; expected a numeric 0/1 array")
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D (examples x features), got shape {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {arr.shape})")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values; features must be 0/1")
    if arr.dtype != np.uint8 or arr.max(initial=0) > 1:
        ok = (arr == 0) | (arr == 1)
        if not ok.all():
            bad = arr[~ok].flat[0]
            raise ValueError(f"{name} must be binary (0/1); found the value {bad!r}. Binarize the features first "
                             "(e.g. thresholds or a bag of words).")
    return arr.astype(np.uint8, copy=False)


def pack_literals(X, append_negated: bool = True) -> tuple[np.ndarray, int]:
    """Pack 0/1 features into literal words: ``(uint32 array (n, WORDS), n_literals)``."""
    X = check_binary_matrix(X)
    n, n_features = X.shape
    n_literals = 2 * n_features if append_negated else n_features
    words = n_words(n_literals)
    if sp.issparse(X):
        # Never densify a sparse input (SemEval has ~100k features): set bits from the indices.
        packed = np.zeros((n, words), dtype=np.uint32)
        if append_negated:
            neg = np.zeros(n_literals, dtype=np.uint8)
            neg[n_features:] = 1
            packed[:] = _pack_rows(neg[None, :], words)[0]
        rows = np.repeat(np.arange(n), np.diff(X.indptr))
        cols = X.indices.astype(np.int64)
        np.bitwise_or.at(packed, (rows, cols // WORD_BITS), (np.uint32(1) << (cols % WORD_BITS)).astype(np.uint32))
        if append_negated:
            ncols = cols + n_features
            np.bitwise_and.at(packed, (rows, ncols // WORD_BITS),
                              ~(np.uint32(1) << (ncols % WORD_BITS)).astype(np.uint32))
        return packed, n_literals
    literals = np.concatenate([X, 1 - X], axis=1) if append_negated else X
    return _pack_rows(literals, words), n_literals


def _pack_rows(literals: np.ndarray, words: int) -> np.ndarray:
    n, L = literals.shape
    padded = np.zeros((n, words * WORD_BITS), dtype=np.uint8)
    padded[:, :L] = literals
    as_bytes = np.packbits(padded, axis=1, bitorder="little")
    return np.ascontiguousarray(as_bytes).view("<u4").astype(np.uint32, copy=False).reshape(n, words)


def unpack_literals(packed: np.ndarray, n_literals: int) -> np.ndarray:
    as_bytes = np.ascontiguousarray(packed.astype("<u4")).view(np.uint8)
    return np.unpackbits(as_bytes, axis=1, bitorder="little")[:, :n_literals]


def planes_to_states(planes: np.ndarray, n_literals: int) -> np.ndarray:
    """Bit-sliced planes ``(G, STATE_BITS, WORDS)`` -> integer states ``(G, n_literals)``."""
    G, bits, words = planes.shape
    states = np.zeros((G, n_literals), dtype=np.int64)
    for b in range(bits):
        states += unpack_literals(planes[:, b, :], n_literals).astype(np.int64) << b
    return states


def states_to_planes(states: np.ndarray, state_bits: int, n_literals: int | None = None,
                     padding_state: int | None = None) -> np.ndarray:
    """Integer states ``(G, n_literals)`` -> bit-sliced planes ``(G, state_bits, WORDS)``.

    Padding lanes get ``padding_state`` (default: the initial state, 2^(bits-1)-1)."""
    states = np.asarray(states, dtype=np.int64)
    G, L = states.shape
    words = n_words(L)
    full = np.full((G, words * WORD_BITS), (1 << (state_bits - 1)) - 1 if padding_state is None else padding_state,
                   dtype=np.int64)
    full[:, :L] = states
    planes = np.zeros((G, state_bits, words), dtype=np.uint32)
    for b in range(state_bits):
        planes[:, b, :] = _pack_rows(((full >> b) & 1).astype(np.uint8), words)
    return planes


def check_positive_int(value, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)
