"""Bad labels and targets for the estimators: every label type that ``TMClassifier.fit`` accepts is saved as a plain
array (no pickle) and comes back from ``load`` with the same values and dtype kind, so ``predict`` returns labels
equal to the originals; labels it cannot store, and regression targets beyond float64's range, are refused at
``fit`` with one line. Small data on the CPU backend; well under a second each.
"""

from __future__ import annotations

import datetime as dt
import sys
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from asynctm import TMClassifier, TMRegressor

RNG = np.random.default_rng(21)
X = RNG.integers(0, 2, (200, 6)).astype(np.uint8)
BIT = X[:, 0]  # the class: the first feature, learnt within a few epochs


def _labels(pair, wrap=list):
    """``pair[BIT]`` row by row, given to ``fit`` as ``wrap`` makes it (a list, an array, a pandas object)."""
    return wrap([pair[int(b)] for b in BIT])


def _fit(y, **kwargs):
    return TMClassifier(10, 5, 3.0, backend="cpu", n_threads=1, seed=2, **kwargs).fit(X, y, epochs=5)


NS = pd.Timestamp("2021-06-01 12:00:00.000000001")
LABELS = {  # name: (the two labels, how fit gets them, the dtype kind of classes_)
    "str list": (("no", "yes"), list, "U"),
    "non-ASCII str": (("αβγ", "δ"), list, "U"),
    "str array": (("no", "yes"), np.array, "U"),
    "pandas Series of str": (("no", "yes"), pd.Series, "U"),
    "pandas string dtype": (("no", "yes"), lambda v: pd.Series(v, dtype="string"), "U"),
    "pandas Categorical": (("cat", "dog"), pd.Categorical, "U"),
    "Series of category dtype": (("cat", "dog"), lambda v: pd.Series(v, dtype="category"), "U"),
    "Categorical of ints": ((3, 8), pd.Categorical, "i"),
    "bytes list": ((b"off", b"on"), list, "S"),
    "bytes array": ((b"off", b"on"), np.array, "S"),
    "datetimes": ((dt.datetime(2020, 1, 1), dt.datetime(2020, 1, 1, 0, 0, 1)), list, "M"),
    "dates": ((dt.date(2020, 1, 1), dt.date(2021, 1, 1)), list, "M"),
    "Timestamps in ns": ((NS, NS + pd.Timedelta(1, "ns")), list, "M"),
    "datetime Series": ((pd.Timestamp("2020-01-01"), pd.Timestamp("2020-02-01")), pd.Series, "M"),
    "datetime64 array": ((np.datetime64("2020-01-01"), np.datetime64("2020-01-02")), np.array, "M"),
    "timedeltas": ((dt.timedelta(seconds=1), dt.timedelta(days=2)), list, "m"),
    "negative ints": ((-7, 4), np.array, "i"),
    "ints as objects": ((0, 1), lambda v: np.array(v, dtype=object), "i"),
    "ints beyond int64": ((2**63, 2**63 + 5), list, "u"),
    "nullable Int64 Series": ((0, 1), lambda v: pd.Series(v, dtype="Int64"), "i"),
    "floats": ((0.25, 1.5), list, "f"),
    "ints with floats": ((1, 2.5), list, "f"),
    "bools": ((False, True), np.array, "b"),
}


@pytest.mark.parametrize("name", LABELS)
def test_labels_of_every_accepted_type_survive_save_and_load(tmp_path, name):
    pair, wrap, kind = LABELS[name]
    y = _labels(pair, wrap)
    tm = _fit(y)
    tm.save(tmp_path / "m.npz")
    with np.load(tmp_path / "m.npz", allow_pickle=False) as z:  # a plain array: no pickle
        assert z["classes"].dtype.kind == kind
    loaded = TMClassifier.load(tmp_path / "m.npz")
    assert loaded.classes_.dtype == tm.classes_.dtype and loaded.classes_.dtype.kind == kind
    assert len(loaded.classes_) == 2 and all(c == p for c, p in zip(loaded.classes_, sorted(pair)))
    pred = loaded.predict(X)
    np.testing.assert_array_equal(pred, tm.predict(X))
    # the labels it predicts equal the original ones (not strings of them, nor other units or types)
    assert np.mean([p == pair[int(b)] for p, b in zip(pred, BIT)]) > 0.9
    loaded.fit(X, y, epochs=1, incremental=True)  # the same labels again: the classes match
    assert loaded.epochs_trained_ == 6


REFUSED = {  # name: (two labels, how fit gets them, what the one line says)
    "None": ((1, None), list, "missing label \\(None\\) at row 1"),
    "None among strings": (("a", None), list, "missing label \\(None\\) at row 1"),
    "NaN among strings": (("a", float("nan")), list, "missing label \\(nan\\) at row 1"),
    "NaN float": ((1.0, np.nan), np.array, "the label nan at row 1: NaN, NaT and infinite values are not classes"),
    "infinite float": ((1.0, np.inf), np.array, "the label inf at row 1"),
    "pd.NA": ((1, None), lambda v: pd.Series(v, dtype="Int64"), "the label nan at row 1"),
    "missing category": (("a", None), pd.Categorical, "missing label \\(nan\\) at row 1"),
    "NaT": (("2020-01-01", "NaT"), lambda v: np.array(v, dtype="datetime64[D]"), "the label NaT at row 1"),
    "strings and numbers": ((0, "a"), list, "y mixes strings and numbers as class labels \\(row 1: 'a', row 0: 0\\)"),
    "strings and bytes": (("a", b"a"), list, "y mixes strings and bytes"),
    "booleans and numbers": ((True, 2), list, "y mixes numbers and booleans"),
    "dates and datetimes": ((dt.date(2020, 1, 1), dt.datetime(2020, 1, 1)), list, "y mixes datetimes and dates"),
    "timezone-aware": (tuple(pd.date_range("2020-01-01", periods=2, tz="UTC")), list,
                       "timezone-aware label .* at row 0"),
    "complex": ((1j, 2), np.array, "labels of dtype complex128, which a model file cannot store"),
    "other objects": ((object(), object()), list, "\\(type object\\) at row 0, which a model file cannot store"),
    "trailing NUL": (("a\0", "b"), list, "ends in a NUL character"),
    "inexact numbers": ((Fraction(1, 3), 1), list, "neither 64-bit integers nor floats hold exactly"),
    "ints too large with floats": ((2**60 + 1, 0.5), list, "neither 64-bit integers nor floats hold exactly"),
}


@pytest.mark.parametrize("name", REFUSED)
def test_labels_a_model_file_cannot_store_are_refused_at_fit(tmp_path, name):
    pair, wrap, message = REFUSED[name]
    with pytest.raises(ValueError, match=message) as e:
        TMClassifier(4, 5, 3.0, backend="cpu", n_threads=1).fit(X, wrap(list(pair) * (len(X) // 2)), epochs=1)
    assert "\n" not in str(e.value)
    assert any(fix in str(e.value) for fix in ("; give", "; drop", "; strip", "; convert"))


def test_save_refuses_classes_it_cannot_store_and_writes_nothing(tmp_path):
    tm = _fit(_labels((0, 1)))
    tm.classes_ = np.array([None, 1], dtype=object)  # set by hand: no plain array holds it
    with pytest.raises(ValueError, match="classes_ has a missing label"):
        tm.save(tmp_path / "m.npz")
    assert not list(tmp_path.iterdir())


def test_continued_training_with_labels_of_another_type_is_refused():
    tm = _fit(_labels(("no", "yes")))
    with pytest.raises(ValueError, match="y holds labels of dtype int64, but this model's classes are <U3"):
        tm.fit(X, BIT.astype(np.int64), epochs=1, incremental=True)
    with pytest.raises(ValueError, match="the class 'maybe', which was not seen"):
        tm.fit(X, _labels(("no", "maybe")), epochs=1, incremental=True)


def test_a_model_file_with_classes_of_another_dtype_is_refused_at_load(tmp_path):
    tm = _fit(_labels((0, 1)))
    tm.save(tmp_path / "m.npz")
    with np.load(tmp_path / "m.npz", allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["classes"] = np.array([np.complex128(1), 2j])
    np.savez(tmp_path / "c.npz", **arrays)
    with pytest.raises(ValueError, match="classes must be a list of at least 2 labels"):
        TMClassifier.load(tmp_path / "c.npz")


# -- regression targets ------------------------------------------------------------------------------------------

FLOAT_MAX = sys.float_info.max


def _regress(y):
    return TMRegressor(8, 10, 2.0, backend="cpu", n_threads=1, seed=1).fit(X, y, epochs=2)


@pytest.mark.parametrize("low, high", [
    (0.0, FLOAT_MAX),  # the widest range: y_max - y_min is float64's largest number
    (1e308, 1.5e308),
    (-FLOAT_MAX / 2, FLOAT_MAX / 2),
    (-9e291, FLOAT_MAX),  # y_max - y_min rounds to float64's largest number (below half its last unit over it)
    (0.0, 5e-324),  # the narrowest range: one subnormal step
])
def test_targets_at_the_edges_of_float64_train_and_predict_finite_values(tmp_path, low, high):
    y = np.where(BIT == 1, high, low)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow, no invalid value anywhere
        tm = _regress(y)
        pred = tm.predict(X)
        tm.save(tmp_path / "r.npz")
        loaded = TMRegressor.load(tmp_path / "r.npz")
        np.testing.assert_array_equal(loaded.predict(X), pred)
    assert np.all(np.isfinite(pred)) and pred.min() >= low and pred.max() <= high


@pytest.mark.parametrize("y, error, message", [
    (np.where(BIT == 1, 1e308, -1e308), ValueError, "y spans -1e\\+308 to 1e\\+308, a width beyond float64"),
    (np.where(BIT == 1, FLOAT_MAX, -1e292), ValueError, "a width beyond float64"),  # just past the bound above
    (np.where(BIT == 1, np.inf, 0.0), ValueError, "y contains NaN or infinite values \\(row"),
    (np.where(BIT == 1, np.longdouble(FLOAT_MAX) * 4, 0), ValueError, "or values beyond float64"),
    ([None if b else 1.0 for b in BIT], ValueError, "y has a missing target \\(None\\) at row"),
    (pd.Series(BIT, dtype="Int64").where(BIT == 0), ValueError, "NaN or infinite values"),
    ([10**400 if b else 1 for b in BIT], ValueError, "y has a target beyond float64's largest number"),
    (["a" if b else "b" for b in BIT], TypeError, "y must be numeric for regression, got 'b' \\(type str\\) at row"),
])
def test_regression_targets_beyond_float64_are_refused_at_fit(y, error, message):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(error, match=message) as e:
            _regress(y)
    assert "\n" not in str(e.value)


def test_a_model_file_whose_target_range_overflows_is_refused_at_load(tmp_path):
    _regress(BIT * 2.0).save(tmp_path / "r.npz")
    with np.load(tmp_path / "r.npz", allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["y_range"] = np.array([-1e308, 1e308])
    np.savez(tmp_path / "wide.npz", **arrays)
    with pytest.raises(ValueError, match="y_range must be two finite numbers, the smaller first, at most float64's"):
        TMRegressor.load(tmp_path / "wide.npz")
