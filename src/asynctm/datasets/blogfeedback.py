"""BlogFeedback (UCI 304): regression of the number of comments in the next 24 hours.

Protocol ``paper``: the first 20,000 rows of ``blogData_train.csv`` (in ``BlogFeedback.zip``), 280
features, the target is the last (281st) column; the first 80% (16,000) train, the last 20%
(4,000) test, in file order, as the paper states. The authors' binarization for this dataset is not
published; their Bike Sharing rule (a bit per unique value) would give tens of thousands of bits
here, so features are thermometer-encoded on at most 25 thresholds each, fitted on the 16,000
training rows only (:func:`asynctm.datasets.thermometer.quantile_thresholds`: every distinct
value but the largest when a feature has at most 26, else its empirical quantiles at levels
k/26, k = 1..25, as observed values, de-duplicated, without the largest value).

There are no known questionable choices to fix, so ``clean`` is the same preparation (offered so
that every dataset accepts both protocols; the meta records which was asked for).
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from . import thermometer
from .base import ProcessedDataset, RawFile, Source

NAME = "blogfeedback"
TASK = "regression"  # what the processed dataset is for (the config's experiments must agree)
PROTOCOLS = ("paper", "clean")
SOURCES = (
    Source(
        url="https://archive.ics.uci.edu/ml/machine-learning-databases/00304/BlogFeedback.zip",
        mirror_path="blogfeedback/BlogFeedback.zip",
        kind="zip",
        members=(RawFile("blogData_train.csv", "f3cc953ea9913361be6d3bae2c393eef73eab57b1cb8e5bf8a22f1e5eb5dd05f"),),
        max_unpacked=128 << 20,  # the whole zip unpacks to 74 MB; only blogData_train.csv is written
    ),
)

N_ROWS = 20_000
N_TRAIN = 16_000
MAX_THRESHOLDS = 25


def load_table(raw_dir) -> tuple[np.ndarray, np.ndarray]:
    """The first 20,000 rows: 280 features and the target (float64, file order)."""
    with open(Path(raw_dir) / "blogData_train.csv") as f:
        head = "".join(line for _, line in zip(range(N_ROWS), f))
    data = np.loadtxt(io.StringIO(head), delimiter=",", dtype=np.float64, ndmin=2)
    if data.shape != (N_ROWS, 281):
        raise ValueError(f"{NAME}: expected {N_ROWS} x 281 values, read {data.shape}")
    return data[:, :-1], data[:, -1]


def prepare(raw_dir, protocol: str = "paper") -> ProcessedDataset:
    if protocol not in PROTOCOLS:
        raise ValueError(f"{NAME}: unknown protocol {protocol!r}")
    X, y = load_table(raw_dir)
    names = [f"x{j + 1}" for j in range(X.shape[1])]  # UCI numbers the attributes from 1
    thresholds = thermometer.quantile_thresholds(X[:N_TRAIN], MAX_THRESHOLDS)
    bits, bit_names = thermometer.encode(X, thresholds, names)
    return ProcessedDataset(
        name=NAME, protocol=protocol, task=TASK, X_train=bits[:N_TRAIN], y_train=y[:N_TRAIN], X_test=bits[N_TRAIN:],
        y_test=y[N_TRAIN:], feature_names=bit_names,
        meta={"target": "x281 (comments in the next 24 hours)",
              "binarization": f"thermometer on at most {MAX_THRESHOLDS} quantile thresholds per feature, "
              "fitted on the training rows (asynctm.datasets.thermometer.quantile_thresholds)",
              "split": "first 16,000 rows train, next 4,000 test, file order",
              "protocol_note": "paper and clean are the same preparation for this dataset"})
