"""fit's per-epoch callback, its progress lines (``verbose``) and its check of ``epochs``."""

from __future__ import annotations

import numpy as np
import pytest

from asynctm import TMClassifier, TMRegressor


def _data(n=200, features=12, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 2, size=(n, features), dtype=np.uint8)
    return X, X[:, 0] ^ X[:, 1]


@pytest.mark.parametrize("epochs", [0, -1, 2.0, True, "3"])
@pytest.mark.parametrize("cls", [TMClassifier, TMRegressor])
def test_epochs_below_one_or_not_an_integer_is_refused(cls, epochs):
    X, y = _data()
    with pytest.raises(ValueError, match=r"epochs must be an integer >= 1 \(the number of training epochs\)"):
        cls(10, 5, 3.0, backend="cpu", n_threads=1, seed=1).fit(X, y, epochs=epochs)


def test_callback_sees_every_epoch_and_can_stop_training(capsys):
    X, y = _data()
    seen = []
    tm = TMClassifier(10, 5, 3.0, backend="cpu", n_threads=1, seed=1)
    tm.fit(X, y, epochs=4, callback=lambda est, epoch, train_s: seen.append((est, epoch, train_s)))
    assert [e for _, e, _ in seen] == [1, 2, 3, 4] and all(est is tm for est, _, _ in seen)
    assert all(t > 0 for _, _, t in seen) and tm.epochs_trained_ == 4
    assert capsys.readouterr().err == ""  # verbose=0: silent
    tm.fit(X, y, epochs=10, incremental=True, callback=lambda est, epoch, train_s: epoch == 2)
    assert tm.epochs_trained_ == 6  # stopped after the callback's True


def test_callback_does_not_change_training():
    X, y = _data()
    a = TMClassifier(10, 5, 3.0, backend="cpu", n_threads=1, seed=3).fit(X, y, epochs=3)
    b = TMClassifier(10, 5, 3.0, backend="cpu", n_threads=1, seed=3).fit(X, y, epochs=3, callback=lambda *a: None,
                                                                        verbose=1)
    np.testing.assert_array_equal(a.ta_states(), b.ta_states())


def test_verbose_prints_one_line_per_epoch_with_time_left(capsys):
    X, y = _data()
    TMRegressor(8, 5, 2.0, backend="cpu", n_threads=1, seed=1).fit(X, y.astype(float), epochs=3, verbose=1)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("[TMRegressor] epoch 1/3: ") and "s/epoch, about" in lines[0]
    assert lines[-1].endswith("about 0 s left")


def test_a_callback_that_is_not_callable_is_refused():
    X, y = _data()
    with pytest.raises(TypeError, match="callback must be callable"):
        TMClassifier(10, 5, 3.0, backend="cpu", n_threads=1).fit(X, y, epochs=1, callback="print")


def test_a_numpy_true_from_the_callback_stops_too():
    X, y = _data()
    tm = TMClassifier(10, 5, 3.0, backend="cpu", n_threads=1, seed=1)
    tm.fit(X, y, epochs=5, callback=lambda est, epoch, train_s: np.float64(epoch) > 1.5)  # np.bool_
    assert tm.epochs_trained_ == 2
