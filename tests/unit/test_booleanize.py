"""Real-valued features: the Booleanizer (thermometer encoding on quantile thresholds) on its own, in a Pipeline,
and inside the estimators (``booleanize=k``), dense and sparse, saved and loaded."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError
from sklearn.pipeline import make_pipeline

from asynctm import TMClassifier, TMRegressor
from asynctm.booleanize import Booleanizer, format_threshold

CPU = {"backend": "cpu", "n_threads": 1, "seed": 1}
RNG = np.random.default_rng(5)


def test_thresholds_are_quantiles_that_split_the_training_data_evenly():
    x = RNG.normal(size=(1000, 1))
    b = Booleanizer(n_thresholds=3).fit(x)
    (t,) = b.thresholds_
    assert len(t) == 3 and np.all(np.diff(t) > 0)
    # x > t_j holds for about 1 - j/4 of the training values, and each cut lies between two training values
    # exactly where the j/4 quantile does (the threshold moved up to a short number below the next value)
    sorted_x = np.sort(x[:, 0])
    for j, cut in enumerate(t, start=1):
        below = np.sum(sorted_x <= cut)
        assert below == int(np.ceil(j * 1000 / 4)), (j, cut, below)
        assert len(format_threshold(cut)) <= 8, cut  # a short number, not a long float
    out = b.transform(x)
    assert out.dtype == np.uint8 and out.shape == (1000, 3)
    np.testing.assert_array_equal(out, x > t)
    assert np.all(out[:, :-1] >= out[:, 1:])  # a thermometer: a bit set implies every lower one


def test_binary_constant_and_few_valued_features():
    X = np.c_[RNG.integers(0, 2, 50), np.zeros(50), np.ones(50), np.full(50, 7.5), RNG.integers(0, 3, 50) * 10.0,
              RNG.normal(size=50)]
    b = Booleanizer(n_thresholds=4).fit(X)
    t = [v.tolist() for v in b.thresholds_]
    assert t[:5] == [[0.0], [0.0], [0.0], [7.5], [0.0, 10.0]]  # 0/1 features (also all-0, all-1) are themselves
    assert b.binary_.tolist() == [True, True, True, False, False, False]
    assert len(t[5]) == 4
    names = b.get_feature_names_out(["a", "b", "c", "d", "e", "f"]).tolist()
    assert names[:6] == ["a", "b", "c", "d > 7.5", "e > 0", "e > 10"]
    out = b.transform(X)
    np.testing.assert_array_equal(out[:, :3], X[:, :3])
    assert not out[:, 3].any()  # a constant: 0 on the training data (x > value)
    assert b.n_features_out_ == out.shape[1] == 10


def test_sparse_input_gives_the_dense_result_as_a_sparse_matrix():
    dense = RNG.normal(size=(200, 5)) * (RNG.random((200, 5)) < 0.3)
    dense[:, 4] = np.abs(dense[:, 4])  # a non-negative column: its zeros stay implicit
    b_dense = Booleanizer(5).fit(dense)
    for fmt in ("csr", "csc", "coo"):
        b = Booleanizer(5).fit(sp.csr_matrix(dense).asformat(fmt))
        for t_sparse, t_dense in zip(b.thresholds_, b_dense.thresholds_):
            np.testing.assert_array_equal(t_sparse, t_dense)
        out = b.transform(sp.csr_matrix(dense).asformat(fmt))
        assert sp.issparse(out) and out.format == "csr" and out.dtype == np.uint8
        np.testing.assert_array_equal(out.toarray(), b_dense.transform(dense))


def test_a_sparse_bag_of_words_passes_through_unchanged():
    X = sp.random(300, 2000, density=0.01, format="csr", random_state=2)
    X.data[:] = 1
    b = Booleanizer(8).fit(X)
    assert b.binary_.all() and b.n_features_out_ == 2000
    out = b.transform(X)
    assert sp.issparse(out) and out.nnz == X.nnz
    np.testing.assert_array_equal(out.toarray(), X.toarray())


@pytest.mark.parametrize("X, error, match", [
    (np.array([[0.0, np.nan], [1.0, 2.0]]), ValueError, "NaN or infinite values \\(the first: nan at row 0, column 1"),
    (sp.csr_matrix(np.array([[0.0, np.inf], [1.0, 2.0]])), ValueError, "NaN or infinite values"),
    (np.array([1.0, 2.0]), ValueError, "must be 2-D"),
    (np.array([["a"], ["b"]]), TypeError, "dtype <U1; expected numbers"),
    ("text", TypeError, "must be a 2-D array"),
    (np.zeros((0, 2)), ValueError, "0 sample"),
    (np.array([[1 + 2j], [0j]]), ValueError, "Complex data not supported"),
])
def test_bad_input_is_one_line(X, error, match):
    with pytest.raises(error, match=match) as e:
        Booleanizer().fit(X)
    assert "\n" not in str(e.value)


def test_bad_parameters_unfitted_and_wrong_width():
    with pytest.raises(ValueError, match="n_thresholds must be >= 1"):
        Booleanizer(0).fit(np.ones((3, 1)))
    with pytest.raises(TypeError, match="n_thresholds must be an integer"):
        Booleanizer(2.5).fit(np.ones((3, 1)))
    with pytest.raises(NotFittedError):
        Booleanizer().transform(np.ones((3, 1)))
    b = Booleanizer().fit(np.ones((3, 2)))
    with pytest.raises(ValueError, match="X has 3 features, but Booleanizer is expecting 2"):
        b.transform(np.ones((3, 3)))


def _moons(n=600):
    from sklearn.datasets import make_moons

    return make_moons(n, noise=0.15, random_state=0)


def test_booleanize_in_the_estimator_equals_the_pipeline():
    X, y = _moons()
    inside = TMClassifier(20, 10, 3.0, booleanize=8, **CPU).fit(X, y, epochs=10)
    piped = make_pipeline(Booleanizer(8), TMClassifier(20, 10, 3.0, **CPU)).fit(X, y, tmclassifier__epochs=10)
    np.testing.assert_array_equal(inside.ta_states(), piped[-1].ta_states())
    np.testing.assert_array_equal(inside.predict(X), piped.predict(X))
    assert inside.n_features_in_ == 2 and inside.n_binary_features_ == piped[0].n_features_out_
    assert inside.score(X, y) > 0.8  # deterministic (seed, one thread): a fixed outcome, not a random draw


def test_the_booleanizer_is_fitted_on_the_first_fit_only():
    X, y = _moons()
    tm = TMClassifier(20, 10, 3.0, booleanize=4, **CPU).fit(X[:300], y[:300], epochs=2)
    thresholds = [t.copy() for t in tm.booleanizer_.thresholds_]
    tm.fit(X[300:] * 5, y[300:], epochs=1, incremental=True)
    tm.partial_fit(X[300:] * 5, y[300:])
    assert all(np.array_equal(a, b) for a, b in zip(thresholds, tm.booleanizer_.thresholds_))
    tm.fit(X[300:] * 5, y[300:], epochs=1)  # a fresh fit learns new thresholds
    assert not all(np.array_equal(a, b) for a, b in zip(thresholds, tm.booleanizer_.thresholds_))


def test_a_regressor_learns_real_valued_input():
    X = RNG.uniform(-2, 2, size=(400, 2))
    y = 3 * X[:, 0] + 1
    tm = TMRegressor(100, 50, 3.0, booleanize=16, **CPU).fit(X, y, epochs=30)
    assert tm.score(X, y) > 0.8  # deterministic (seed, one thread)


def test_save_and_load_keep_the_booleanizer_and_the_feature_names(tmp_path):
    pd = pytest.importorskip("pandas")
    X, y = _moons()
    frame = pd.DataFrame(X, columns=["width", "height"])
    tm = TMClassifier(20, 10, 3.0, booleanize=6, **CPU).fit(frame, np.where(y == 1, "b", "a"), epochs=5)
    tm.save(tmp_path / "m.npz")
    loaded = TMClassifier.load(tmp_path / "m.npz")
    assert loaded.feature_names_in_.tolist() == ["width", "height"]
    for a, b in zip(loaded.booleanizer_.thresholds_, tm.booleanizer_.thresholds_):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(loaded.predict(frame), tm.predict(frame))
    assert loaded.rules() == tm.rules() and any("width" in r["rule"] for r in tm.rules())
    with pytest.raises(ValueError, match="must be binary .* pass booleanize"):
        TMClassifier(20, 10, 3.0, **CPU).fit(X, y, epochs=1)


@pytest.mark.parametrize("change, message", [
    ({"booleanizer_counts": None}, "booleanize=6 but it has no 'booleanizer_counts' array"),
    ({"booleanizer_thresholds": np.zeros(3)}, "booleanizer_thresholds must be"),
    ({"booleanizer_counts": np.array([0, 5])}, "booleanizer_counts must be 2 integers >= 1"),
    ({"booleanizer_binary": np.zeros(3, dtype=bool)}, "booleanizer_binary must be 2 booleans"),
    ({"feature_names_in": np.array(["only one"])}, "feature_names_in must be 2 strings"),
])
def test_a_damaged_booleanizer_in_a_model_file_is_one_line(tmp_path, change, message):
    X, y = _moons(100)
    TMClassifier(4, 5, 3.0, booleanize=6, **CPU).fit(X, y, epochs=1).save(tmp_path / "m.npz")
    with np.load(tmp_path / "m.npz", allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["feature_names_in"] = np.array(["a", "b"])
    for key, value in change.items():
        if value is None:
            del arrays[key]
        else:
            arrays[key] = value
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ValueError, match=message) as e:
        TMClassifier.load(tmp_path / "bad.npz")
    assert str(e.value).startswith(str(tmp_path / "bad.npz")) and "\n" not in str(e.value)
