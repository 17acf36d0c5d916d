"""Thermometer binarization of numeric features: one bit ``x <= u`` per threshold ``u``.

With thresholds sorted ascending, a value's bits read 0...01...1 (a thermometer), so a clause can
express ``x <= u`` by one literal and ``x > u`` by its negation (Abeyrathna et al. 2020's RTM
encoding, used by the paper for Bike Sharing and BlogFeedback).
"""

from __future__ import annotations

import numpy as np


def fmt(v: float) -> str:
    """A threshold as the shortest text that reads back to the same float (``0.24``, ``3``)."""
    return np.format_float_positional(float(v), trim="-")


def encode(X: np.ndarray, thresholds: list, names: list) -> tuple[np.ndarray, list]:
    """Bits ``X[:, j] <= u`` for each ``u`` in ``thresholds[j]``, features in order; with names."""
    X = np.asarray(X, dtype=np.float64)
    blocks, bit_names = [], []
    for j, (th, name) in enumerate(zip(thresholds, names)):
        th = np.asarray(th, dtype=np.float64)
        blocks.append((X[:, j : j + 1] <= th[None, :]).astype(np.uint8))
        bit_names += [f"{name}<={fmt(u)}" for u in th]
    bits = np.concatenate(blocks, axis=1) if blocks else np.zeros((len(X), 0), np.uint8)
    return bits, bit_names


def unique_thresholds(X: np.ndarray) -> list:
    """Every sorted unique value of each column (the paper's rule for Bike Sharing).

    The largest value gives a bit that is 1 on every row that was used to fit; it is kept because
    the authors' encoding keeps it (it is part of their 1,389 bits).
    """
    return [np.unique(X[:, j]) for j in range(X.shape[1])]


def quantile_thresholds(X: np.ndarray, max_bits: int = 25) -> list:
    """At most ``max_bits`` thresholds per column, chosen from the rows in ``X`` (the training part).

    - A column with at most ``max_bits + 1`` distinct values gets all of them but the largest
      (the bike rule without its always-1 bit).
    - Otherwise the thresholds are the empirical quantiles at levels k/(max_bits+1), k = 1..max_bits,
      taken as observed values (``method="inverted_cdf"``), de-duplicated, again without the
      largest value. Heavy ties (many zeros, as in BlogFeedback's counts) merge quantiles, so a
      column can end with fewer bits; a constant column gets none.
    """
    out = []
    levels = np.arange(1, max_bits + 1) / (max_bits + 1)
    for j in range(X.shape[1]):
        col = np.asarray(X[:, j], dtype=np.float64)
        uniq = np.unique(col)
        th = uniq if len(uniq) <= max_bits + 1 else np.unique(np.quantile(col, levels, method="inverted_cdf"))
        out.append(th[th < uniq[-1]])
    return out
