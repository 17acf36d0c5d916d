"""The SVM baseline (asynctm.baselines.thundersvm), the novelty MLP stage and its scores file
(asynctm.experiments.novelty), and the class sums of every peer (asynctm.peers).

Every SVM library importable here is run (forced by name); pyTsetlinMachine tests skip where it is missing.
"""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import accuracy_score, f1_score

from asynctm.baselines import thundersvm as svmmod
from asynctm.baselines.thundersvm import SVMUnavailableError, available_libraries, run_svm
from asynctm.experiments.metrics import regression_metrics
from asynctm.experiments.novelty import load_scores, run_mlp_novelty, save_scores

RECORD_PARTS = {"implementation", "hyperparameters", "final", "metric_names", "timing"}
CLS_PARAMS = {"kernel": "linear", "C": 1.0}
REG_PARAMS = {"kernel": "rbf", "C": 1.0, "epsilon": 0.1}
MLP_PARAMS = {"hidden_layer_sizes": [100, 30], "learning_rate_init": 0.1, "alpha": 0.0001, "max_iter": 300,
              "test_size": 0.2, "seed": 42}
LIBS_HERE = [lib for lib, why in available_libraries().items() if why == "ok"]


# -- SVM --------------------------------------------------------------------------------------------------------
def _majority_problem(n_train=300, n_test=200, d=20, flip=0.1, seed=0):
    """y = majority of bits 0..2 (linearly separable with a margin; noise bits elsewhere). A fraction ``flip`` of
    the *test* labels is flipped, so every correct SVM predicts the clean labels and scores below 100%."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 2, (n_train + n_test, d)).astype(np.uint8)
    y = (X[:, :3].sum(axis=1) >= 2).astype(np.int64)
    y_test_clean = y[n_train:].copy()
    y_test = y_test_clean.copy()
    flipped = rng.choice(n_test, int(flip * n_test), replace=False)
    y_test[flipped] = 1 - y_test[flipped]
    return X[:n_train], y[:n_train], X[n_train:], y_test, y_test_clean


def _three_class_problem(n_train=240, n_test=120, d=15, seed=1):
    """Class k (labels 2, 5, 9) sets bit k and clears the other two of bits 0..2; bits 3.. are noise."""
    rng = np.random.default_rng(seed)
    n = n_train + n_test
    k = rng.integers(0, 3, n)
    X = rng.integers(0, 2, (n, d)).astype(np.uint8)
    X[:, :3] = 0
    X[np.arange(n), k] = 1
    y = np.array([2, 5, 9])[k]
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


@pytest.mark.parametrize("library", LIBS_HERE)
@pytest.mark.parametrize("sparse", [False, True])
def test_svm_binary_classification(library, sparse):
    Xtr, ytr, Xte, yte, yclean = _majority_problem()
    if sparse:
        Xtr, Xte = sp.csr_matrix(Xtr), sp.csr_matrix(Xte)
    rec = run_svm("classification", Xtr, ytr, Xte, yte, CLS_PARAMS, seed=3, f1="binary", library=library)
    assert set(rec) == RECORD_PARTS
    json.dumps(rec, allow_nan=False)  # a record part must be plain JSON
    assert set(rec["timing"]) == {"fit_s", "predict_s"} and all(v >= 0 for v in rec["timing"].values())
    impl = rec["implementation"]
    assert impl["library_choice"] == library and impl["forced"] is True and impl["class"] == "SVC"
    assert impl["build"] == {"thundersvm-gpu": "gpu", "thundersvm-cpu": "cpu", "sklearn": "cpu"}[library]
    assert impl["library"] == ("scikit-learn" if library == "sklearn" else "ThunderSVM")
    assert impl["version"] and impl["threads"] >= 1 and impl["device"]
    assert rec["hyperparameters"] == {"kernel": "linear", "C": 1.0, "gamma": None,
                                      "gamma_rule": "not used by the linear kernel", "tol": 0.001}
    # The metrics, computed independently: the SVM predicts the clean labels; 10% of the test labels are flipped.
    want = {"accuracy": 100 * accuracy_score(yte, yclean), "f1_macro": 100 * f1_score(yte, yclean, average="macro"),
            "f1_binary": 100 * f1_score(yte, yclean)}
    want["f1"] = want["f1_binary"]
    assert rec["final"] == pytest.approx(want, abs=1e-9)
    assert rec["final"]["accuracy"] == pytest.approx(90.0)
    assert set(rec["metric_names"]) == set(rec["final"])


@pytest.mark.parametrize("library", LIBS_HERE)
def test_svm_multiclass_labels_are_mapped_back(library):
    Xtr, ytr, Xte, yte = _three_class_problem()
    rec = run_svm("novelty", Xtr, ytr, Xte, yte, CLS_PARAMS, seed=0, library=library)
    assert rec["final"]["accuracy"] == 100.0 and rec["final"]["f1"] == rec["final"]["f1_macro"] == 100.0
    assert rec["final"]["f1_binary"] is None  # labels are not 0/1


def _regression_problem(n_train=300, n_test=150, d=12, seed=2):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 2, (n_train + n_test, d)).astype(np.uint8)
    y = 3.0 * (X @ rng.normal(size=d)) + 5.0 + rng.normal(0, 0.3, len(X))
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def test_svm_regression_same_model_in_every_library():
    from sklearn.svm import SVR

    Xtr, ytr, Xte, yte = _regression_problem()
    # Independently: sklearn's SVR with gamma="scale" (its own rule) must give the same predictions.
    ref = SVR(kernel="rbf", C=1.0, epsilon=0.1, gamma="scale").fit(Xtr.astype(float), ytr).predict(Xte.astype(float))
    want = regression_metrics(yte, ref)
    assert want["mae"] == pytest.approx(np.mean(np.abs(ref - yte)))
    gamma = 1.0 / (Xtr.shape[1] * Xtr.astype(float).var())
    for library in LIBS_HERE:
        rec = run_svm("regression", Xtr, ytr, Xte, yte, REG_PARAMS, seed=0, library=library)
        assert set(rec) == RECORD_PARTS and rec["implementation"]["class"] == "SVR"
        assert rec["hyperparameters"]["gamma"] == pytest.approx(gamma, rel=1e-12)
        assert rec["hyperparameters"]["epsilon"] == 0.1
        assert set(rec["final"]) == {"mae", "rmse"} == set(rec["metric_names"])
        # ThunderSVM solves in float32 to tol=1e-3: agreement to 2e-3 relative (another gamma, e.g. ThunderSVM's
        # default 1/n_features, moves these by over 10%); sklearn's own path exactly.
        tol = 1e-9 if library == "sklearn" else 2e-3
        assert rec["final"]["mae"] == pytest.approx(want["mae"], rel=tol)
        assert rec["final"]["rmse"] == pytest.approx(want["rmse"], rel=tol)


def test_svm_scale_gamma_sparse_equals_dense():
    X = np.random.default_rng(0).integers(0, 2, (50, 7)).astype(np.uint8)
    assert svmmod.scale_gamma(sp.csr_matrix(X)) == pytest.approx(svmmod.scale_gamma(X), rel=1e-12)
    assert svmmod.scale_gamma(np.zeros((4, 3))) == 1.0


def test_svm_default_choice_records_what_was_skipped(monkeypatch):
    monkeypatch.delenv(svmmod.ENV_LIBRARY, raising=False)
    Xtr, ytr, Xte, yte, _ = _majority_problem(n_train=100, n_test=50)
    rec = run_svm("classification", Xtr, ytr, Xte, yte, CLS_PARAMS, seed=0)
    impl = rec["implementation"]
    assert impl["library_choice"] == LIBS_HERE[0] and impl["forced"] is False
    order = list(svmmod.LIBRARIES)
    assert list(impl["skipped"]) == order[:order.index(impl["library_choice"])]
    assert all(isinstance(why, str) and why != "ok" for why in impl["skipped"].values())
    # The environment variable forces a library.
    monkeypatch.setenv(svmmod.ENV_LIBRARY, "sklearn")
    rec = run_svm("classification", Xtr, ytr, Xte, yte, CLS_PARAMS, seed=0)
    assert rec["implementation"]["library_choice"] == "sklearn" and rec["implementation"]["forced"] is True


@pytest.mark.skipif("thundersvm-cpu" not in LIBS_HERE, reason="thundersvm-cpu is not installed")
def test_thundersvm_dense_input_that_would_not_fit_falls_to_sparse_sklearn(monkeypatch):
    monkeypatch.delenv(svmmod.ENV_LIBRARY, raising=False)
    Xtr, ytr, Xte, yte, _ = _majority_problem(n_train=100, n_test=50)
    need = svmmod.DENSE_BYTES_PER_ENTRY * Xtr.size + 12 * Xte.size
    # Plenty of memory: ThunderSVM runs.
    monkeypatch.setattr(svmmod, "_available_memory", lambda: 100 * need)
    rec = run_svm("classification", Xtr, ytr, Xte, yte, CLS_PARAMS, seed=0)
    assert rec["implementation"]["library"] == "ThunderSVM"
    # Too little: the automatic choice falls to scikit-learn, and the record says why.
    monkeypatch.setattr(svmmod, "_available_memory", lambda: need)
    rec = run_svm("classification", sp.csr_matrix(Xtr), ytr, sp.csr_matrix(Xte), yte, CLS_PARAMS, seed=0)
    impl = rec["implementation"]
    assert impl["library_choice"] == "sklearn" and impl["input"] == "CSR float64"
    assert "GiB" in impl["skipped"]["thundersvm-cpu"] and "dense input of 100 x 20" in impl["skipped"]["thundersvm-cpu"]
    # A forced ThunderSVM is refused with one line instead of being killed for memory.
    with pytest.raises(SVMUnavailableError, match="cannot run this dataset here: dense input"):
        run_svm("classification", Xtr, ytr, Xte, yte, CLS_PARAMS, seed=0, library="thundersvm-cpu")


def test_thundersvm_build_detection():
    info = svmmod.thundersvm_info()
    if info["distributions"]["thundersvm-cpu"] and not info["distributions"]["thundersvm"]:
        assert info["importable"] and info["build"] == "cpu" and info["distribution"] == "thundersvm-cpu"
        assert info["so_calls_cuda"] is False
        assert available_libraries()["thundersvm-cpu"] == "ok"
        assert "cpu build" in available_libraries()["thundersvm-gpu"]
    elif not any(info["distributions"].values()):
        assert info["build"] is None and not info["importable"]
    else:
        assert info["build"] in ("gpu", "cpu", None)


def test_svm_clear_errors(monkeypatch):
    Xtr, ytr, Xte, yte, _ = _majority_problem(n_train=60, n_test=30)
    with pytest.raises(ValueError, match="unknown kernel"):
        run_svm("classification", Xtr, ytr, Xte, yte, {"kernel": "poly", "C": 1.0}, 0)
    with pytest.raises(ValueError, match="unknown SVM parameter"):
        run_svm("classification", Xtr, ytr, Xte, yte, {"kernel": "linear", "C": 1.0, "epsilon": 0.1}, 0)
    with pytest.raises(ValueError, match="C must be"):
        run_svm("classification", Xtr, ytr, Xte, yte, {"kernel": "linear", "C": 0}, 0)
    with pytest.raises(ValueError, match="NaN or infinite"):
        run_svm("regression", Xtr, np.where(ytr > 0, np.nan, 1.0), Xte, yte.astype(float), REG_PARAMS, 0)
    with pytest.raises(ValueError, match="one target per row"):
        run_svm("classification", Xtr, ytr[:-1], Xte, yte, CLS_PARAMS, 0)
    with pytest.raises(ValueError, match="features"):
        run_svm("classification", Xtr, ytr, Xte[:, :-1], yte, CLS_PARAMS, 0)
    with pytest.raises(ValueError, match="task"):
        run_svm("ranking", Xtr, ytr, Xte, yte, CLS_PARAMS, 0)
    with pytest.raises(ValueError, match="at least 2 classes"):
        run_svm("classification", Xtr, np.zeros_like(ytr), Xte, yte, CLS_PARAMS, 0)
    with pytest.raises(ValueError, match="unknown SVM library"):
        run_svm("classification", Xtr, ytr, Xte, yte, CLS_PARAMS, 0, library="libsvm")
    for lib, why in available_libraries().items():
        if why != "ok":  # a forced library that cannot run is an error, not a fallback
            with pytest.raises(SVMUnavailableError, match=lib):
                run_svm("classification", Xtr, ytr, Xte, yte, CLS_PARAMS, 0, library=lib)


# -- novelty MLP ------------------------------------------------------------------------------------------------
def _sums(rng, n, mean, sd=25.0, T=100):
    return np.clip(np.round(rng.normal(mean, sd, (n, 2))), -T, T).astype(np.int32)


def test_mlp_separable_sums_are_detected():
    rng = np.random.default_rng(0)
    known, novel = _sums(rng, 400, [60, -50]), _sums(rng, 300, [-40, -40])
    rec = run_mlp_novelty({"known_sums": known, "known_labels": rng.integers(0, 2, 400), "novel_sums": novel},
                          MLP_PARAMS)
    assert set(rec) == RECORD_PARTS and set(rec["timing"]) == {"fit_s"}
    json.dumps(rec, allow_nan=False)
    assert set(rec["final"]) == {"accuracy", "f1_macro", "f1_binary", "f1"} == set(rec["metric_names"])
    assert rec["final"]["accuracy"] > 95 and rec["final"]["f1"] > 95
    impl = rec["implementation"]
    assert (impl["n_known"], impl["n_novel"], impl["n_train"], impl["n_test"]) == (400, 300, 560, 140)
    assert rec["hyperparameters"]["hidden_layer_sizes"] == [100, 30] and rec["hyperparameters"]["solver"] == "sgd"


def test_mlp_matches_the_authors_procedure_computed_independently():
    from sklearn.model_selection import train_test_split
    from sklearn.neural_network import MLPClassifier
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(1)
    known, novel = _sums(rng, 300, [20, -10], sd=30), _sums(rng, 200, [-5, -5], sd=30)  # overlapping
    rec = run_mlp_novelty({"known_sums": known, "known_labels": np.zeros(300, int), "novel_sums": novel},
                          MLP_PARAMS)
    # classification_novelty.py of the authors: novel rows (0) then known rows (1), split, scaler on train.
    X = np.concatenate([novel, known]).astype(float)
    y = np.r_[np.zeros(len(novel), int), np.ones(len(known), int)]
    Xa, Xb, ya, yb = train_test_split(X, y, test_size=0.20, shuffle=True, random_state=42)
    sc = StandardScaler().fit(Xa)
    mlp = MLPClassifier(hidden_layer_sizes=(100, 30), max_iter=300, alpha=1e-4, activation="relu", solver="sgd",
                        tol=1e-4, random_state=42, learning_rate_init=.1).fit(sc.transform(Xa), ya)
    pred = mlp.predict(sc.transform(Xb))
    assert rec["final"]["accuracy"] == pytest.approx(100 * accuracy_score(yb, pred), abs=1e-9)
    assert rec["final"]["f1"] == pytest.approx(100 * f1_score(yb, pred), abs=1e-9)  # pos_label 1 = known
    assert rec["final"]["f1_macro"] == pytest.approx(100 * f1_score(yb, pred, average="macro"), abs=1e-9)
    assert 55 < rec["final"]["accuracy"] < 100  # neither trivial nor chance


def test_mlp_identical_distributions_give_chance():
    # Known and novel sums from one distribution: test accuracy ~ Binomial(400, 1/2) / 400 (sd 2.5 points);
    # 15 points is 6 sd, a chance failure has probability ~2e-9.
    rng = np.random.default_rng(7)
    rec = run_mlp_novelty({"known_sums": _sums(rng, 1000, [0, 0], sd=30), "known_labels": np.zeros(1000, int),
                           "novel_sums": _sums(rng, 1000, [0, 0], sd=30)}, MLP_PARAMS)
    assert abs(rec["final"]["accuracy"] - 50) < 15


def test_mlp_param_errors():
    s = {"known_sums": np.zeros((10, 2)), "known_labels": np.zeros(10, int), "novel_sums": np.ones((10, 2))}
    with pytest.raises(ValueError, match="unknown mlp_novelty"):
        run_mlp_novelty(s, {**MLP_PARAMS, "layers": 3})
    with pytest.raises(ValueError, match="test_size"):
        run_mlp_novelty(s, {**MLP_PARAMS, "test_size": 1.5})
    with pytest.raises(ValueError, match=r"shape \(n, 2\)"):
        run_mlp_novelty({**s, "novel_sums": np.ones((10, 3))}, MLP_PARAMS)


def test_scores_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    known, labels, novel = rng.integers(-100, 101, (30, 2)), rng.integers(0, 2, 30), rng.integers(-100, 101, (9, 2))
    path = tmp_path / "sub" / "seed0.scores.npz"
    save_scores(path, known, labels, novel)
    assert sorted(os.listdir(path.parent)) == ["seed0.scores.npz"]  # no temporary file left
    got = load_scores(path)
    assert got["known_sums"].dtype == np.int32 and got["novel_sums"].dtype == np.int32
    assert got["known_labels"].dtype == np.int64
    np.testing.assert_array_equal(got["known_sums"], known)
    np.testing.assert_array_equal(got["known_labels"], labels)
    np.testing.assert_array_equal(got["novel_sums"], novel)


def test_scores_malformed(tmp_path):
    ok = dict(known_sums=np.zeros((5, 2), np.int32), known_labels=np.zeros(5, np.int64),
              novel_sums=np.zeros((3, 2), np.int32))
    cases = {
        "three_columns": ({**ok, "known_sums": np.zeros((5, 3), np.int32)}, r"shape \(n, 2\)"),
        "unequal": ({**ok, "known_labels": np.zeros(4, np.int64)}, "one label per row"),
        "nan": ({**ok, "novel_sums": np.array([[0.0, np.nan], [1, 2], [3, 4]])}, "NaN or infinite"),
        "fractional": ({**ok, "novel_sums": np.full((3, 2), 0.5)}, "integer"),
        "empty": ({**ok, "novel_sums": np.zeros((0, 2), np.int32)}, "no rows"),
    }
    for name, (arrays, match) in cases.items():
        path = tmp_path / f"{name}.scores.npz"
        with pytest.raises(ValueError, match=match):  # refused on saving, nothing written
            save_scores(path, **arrays)
        assert not path.exists()
        np.savez(path, **arrays)  # and on loading, naming the file
        with pytest.raises(ValueError, match=re.escape(path.name)):
            load_scores(path)
    missing = tmp_path / "missing.scores.npz"
    np.savez(missing, known_sums=ok["known_sums"], known_labels=ok["known_labels"])
    with pytest.raises(ValueError, match="missing.scores.npz: missing array"):
        load_scores(missing)
    garbage = tmp_path / "garbage.scores.npz"
    garbage.write_text("not a zip file\n")
    with pytest.raises(ValueError, match="garbage.scores.npz: not a readable"):
        load_scores(garbage)
    with pytest.raises(FileNotFoundError, match="nowhere.scores.npz"):
        load_scores(tmp_path / "nowhere.scores.npz")


# -- class sums of the peers ------------------------------------------------------------------------------------
def _peer_problem(n=400, d=14, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 2, (n, d)).astype(np.uint8)
    y = np.array(["b", "a", "c"])[(X[:, 0] + 2 * X[:, 1]) % 3]
    return X, y


def _pytm_sums_from_include_bits(model, X, T):
    """The class sums recomputed from pyTsetlinMachine's include bits (get_state), without transform()."""
    C, nc, chunks, bits = model.number_of_classes, model.number_of_clauses, model.number_of_ta_chunks, \
        model.number_of_state_bits
    n_lit = model.number_of_features
    lits = np.hstack([X, 1 - X]) if model.append_negated else X  # literals: features, then their negations
    sums = np.zeros((X.shape[0], C), np.int64)
    for c, (weights, ta) in enumerate(model.get_state()):
        plane = ta.reshape(nc, chunks, bits)[:, :, bits - 1]
        include = np.unpackbits(plane.astype("<u4").view(np.uint8), axis=1, bitorder="little")[:, :n_lit]
        for j in range(nc):
            inc = include[j].astype(bool)
            out = np.all(lits[:, inc] == 1, axis=1) if inc.any() else np.zeros(len(X), bool)
            sums[:, c] += (1 if j % 2 == 0 else -1) * int(weights[j]) * out
    return np.clip(sums, -T, T)


@pytest.mark.parametrize("indexed", [True, False])
@pytest.mark.parametrize("append_negated", [True, False])
def test_pytm_class_sums(indexed, append_negated):
    pytest.importorskip("pyTsetlinMachine.tm", reason="pyTsetlinMachine is not installed")
    from asynctm.peers import make_peer

    X, y = _peer_problem()
    T = 5
    peer = make_peer("pytm", "classification", 10, T, 3.0, indexed=indexed, append_negated=append_negated, seed=1)
    with pytest.raises(RuntimeError, match="fit_epoch first"):
        peer.class_sums(X)
    for _ in range(3):
        peer.fit_epoch(X, y)
    sums = peer.class_sums(X)
    assert sums.shape == (len(X), 3) and sums.dtype == np.int32
    assert sums.min() >= -T and sums.max() <= T
    np.testing.assert_array_equal(sums, _pytm_sums_from_include_bits(peer.model, X, T))
    # pyTsetlinMachine's predict takes the first maximum, as argmax does: equal even on ties.
    np.testing.assert_array_equal(np.unique(y)[sums.argmax(axis=1)], peer.predict(X))


def test_pytm_class_sums_of_empty_clauses_are_zero():
    # Before training every clause is empty: inference counts it 0 (the indexed transform() would say 1).
    pytest.importorskip("pyTsetlinMachine.tm", reason="pyTsetlinMachine is not installed")
    from asynctm.peers import make_peer

    X, y = _peer_problem(n=50)
    for indexed in (True, False):
        peer = make_peer("pytm", "classification", 10, 5, 3.0, indexed=indexed)
        peer._convert(X, y)  # sets classes_
        peer.model.fit(X, np.searchsorted(np.unique(y), y).astype(np.uint32), epochs=0)
        peer.epochs_trained = 1
        assert not peer.class_sums(X).any()


def test_regression_peers_have_no_class_sums():
    pytest.importorskip("pyTsetlinMachine.tm", reason="pyTsetlinMachine is not installed")
    from asynctm.peers import make_peer

    X, _ = _peer_problem(n=60)
    peer = make_peer("pytm", "regression", 10, 5, 3.0)
    peer.fit_epoch(X, np.linspace(0, 1, len(X)))
    with pytest.raises(ValueError, match="classification notion"):
        peer.class_sums(X)


def test_asynctm_class_sums():
    from asynctm.peers import make_peer

    X, y = _peer_problem()
    T = 5
    peer = make_peer("asynctm", "classification", 10, T, 3.0, seed=1, n_threads=1)
    for _ in range(3):
        peer.fit_epoch(X, y)
    sums = peer.class_sums(sp.csr_matrix(X))
    assert sums.shape == (len(X), 3) and sums.dtype == np.int32
    assert sums.min() >= -T and sums.max() <= T
    np.testing.assert_array_equal(np.unique(y)[sums.argmax(axis=1)], peer.predict(X))
    np.testing.assert_array_equal(sums, peer.class_sums(X))
    reg = make_peer("asynctm", "regression", 10, 5, 3.0, seed=1, n_threads=1)
    reg.fit_epoch(X, np.linspace(0, 1, len(X)))
    with pytest.raises(ValueError, match="classification notion"):
        reg.class_sums(X)
    peer.close()
    reg.close()
