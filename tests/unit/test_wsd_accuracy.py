"""Our CPU build learns WSD apple as well as pyTsetlinMachine, at the paper's hyperparameters.

The paper's WSD setting (300 clauses per class, T=50, s=5.0, 3,000 features), the project's own
preprocessing from the mirror, the same number of epochs for both. Single epochs fluctuate by a few
points, so each side is the mean test accuracy of its last 3 epochs (ours also over 2 seeds).
"""

from __future__ import annotations

import numpy as np
import pytest

from asynctm import TMClassifier
from asynctm.datasets import prepare_dataset
from asynctm.datasets.base import load_processed
from asynctm.datasets.fetch import fetch

EPOCHS = 10
SETTING = dict(n_clauses=300, T=50, s=5.0)


@pytest.fixture(scope="module")
def apple(mirror, tmp_path_factory):
    root = tmp_path_factory.mktemp("apple")
    fetch("wsd_apple", root / "raw", mirror)
    prepare_dataset("wsd_apple", root / "raw", "paper", root / "processed")
    return load_processed(root / "processed")


def _last3_accuracy(fit_epoch, predict, X_test, y_test):
    scores = []
    for _ in range(EPOCHS):
        fit_epoch()
        scores.append(100.0 * np.mean(predict(X_test) == y_test))
    return float(np.mean(scores[-3:]))


def test_apple_accuracy_is_within_2_points_of_pytsetlinmachine(apple):
    pytm = pytest.importorskip("pyTsetlinMachine.tm")
    X_train, y_train = apple.X_train, apple.y_train.astype(np.uint32)
    X_test, y_test = apple.X_test, apple.y_test
    assert X_train.shape == (1784, 3000)

    ours = []
    for seed in (1, 2):
        tm = TMClassifier(**SETTING, backend="cpu", seed=seed)
        ours.append(_last3_accuracy(lambda tm=tm: tm.fit(X_train, y_train, epochs=1, incremental=True), tm.predict,
                                    X_test, y_test))
    peer = pytm.MultiClassTsetlinMachine(SETTING["n_clauses"], SETTING["T"], SETTING["s"],
                                         boost_true_positive_feedback=1, number_of_state_bits=8, indexed=True)
    X_peer = np.ascontiguousarray(X_train, dtype=np.uint32)
    theirs = _last3_accuracy(lambda: peer.fit(X_peer, y_train, epochs=1, incremental=True),
                             lambda X: peer.predict(np.ascontiguousarray(X, dtype=np.uint32)), X_test, y_test)
    print(f"\nWSD apple, mean of last 3 of {EPOCHS} epochs: ours {ours} pyTsetlinMachine {theirs:.2f}")
    # We must not be worse by more than 2 points (being better is not a failure).
    assert np.mean(ours) >= theirs - 2.0, (ours, theirs)
