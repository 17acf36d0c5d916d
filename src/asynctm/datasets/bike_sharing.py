"""Bike Sharing (UCI 275, hourly): regression of the hourly rental count ``cnt``.

Protocol ``paper`` (the authors' ``bikeS`` + ``regression_demo.py``, as established by comparing
files): ``hour.csv`` without ``instant`` and ``dteday`` leaves 14 features, among them ``casual``
and ``registered``, whose sum is the target ``cnt`` on every row (the target leaks into the
features). Thermometer bits ``x <= u`` for every sorted unique value ``u`` of each feature over all
17,379 rows give 1,389 bits; the first 80% of rows (13,904) train, the last 20% (3,475) test, in
file order (the data are a time series; no shuffle).

Protocol ``clean`` drops ``casual`` and ``registered`` (12 features, 291 bits); all else is equal.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from . import thermometer
from .base import ProcessedDataset, RawFile, Source

NAME = "bike_sharing"
TASK = "regression"  # what the processed dataset is for (the config's experiments must agree)
PROTOCOLS = ("paper", "clean")
SOURCES = (
    Source(
        url="https://archive.ics.uci.edu/ml/machine-learning-databases/00275/Bike-Sharing-Dataset.zip",
        mirror_path="bike_sharing/hour.csv",
        kind="zip",
        mirror_kind="file",  # the mirror holds the zip's members, unpacked
        members=(RawFile("hour.csv", "e03de4ee4ef4dc376ac6e04bf829673c6269e8eba5c60fa121640fa2f829504f"),),
        max_unpacked=16 << 20,  # hour.csv is 1.2 MB
    ),
)

TARGET = "cnt"
DROPPED = {"paper": ("instant", "dteday"), "clean": ("instant", "dteday", "casual", "registered")}
TEST_FRACTION_PERCENT = 20


def load_table(raw_dir, protocol: str = "paper") -> tuple[np.ndarray, np.ndarray, list]:
    """Features before binarization (float64, file order), the target ``cnt``, feature names.

    For ``paper`` the features plus the target column are exactly the authors' ``bikeS``.
    """
    df = pd.read_csv(Path(raw_dir) / "hour.csv")
    feats = df.drop(columns=[*DROPPED[protocol], TARGET])
    return feats.to_numpy(np.float64), df[TARGET].to_numpy(np.float64), list(feats.columns)


def split_sizes(n: int) -> tuple[int, int]:
    """The authors' split: test = floor(20% of n), train = the rest, in file order."""
    n_test = n * TEST_FRACTION_PERCENT // 100
    return n - n_test, n_test


def prepare(raw_dir, protocol: str = "paper") -> ProcessedDataset:
    if protocol not in PROTOCOLS:
        raise ValueError(f"{NAME}: unknown protocol {protocol!r}")
    X, y, names = load_table(raw_dir, protocol)
    # Thresholds from all rows, as the authors did; they use feature values only, never the target.
    thresholds = thermometer.unique_thresholds(X)
    bits, bit_names = thermometer.encode(X, thresholds, names)
    n_train, _ = split_sizes(len(X))
    return ProcessedDataset(
        name=NAME, protocol=protocol, task=TASK, X_train=bits[:n_train], y_train=y[:n_train], X_test=bits[n_train:],
        y_test=y[n_train:], feature_names=bit_names,
        meta={"source_features": names, "target": TARGET,
              "binarization": "thermometer: x <= u for every sorted unique value u of each feature, all rows",
              "split": "first 80% train, last 20% test, file order"})
