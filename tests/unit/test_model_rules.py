"""Readable models: clauses as rules over named features, the clauses behind one prediction, and the JSON export
that the pure-Python evaluator (asynctm.rules.RuleModel) turns into the very same predictions."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from asynctm import TMClassifier, TMRegressor
from asynctm.encoding import states_to_planes
from asynctm.rules import RuleModel
from tests.helpers import REPO

CPU = {"backend": "cpu", "n_threads": 1, "seed": 3}
NAMES = ["word_apple", "word_tree", "word_pie"]


def _hand_made(includes: dict, n_clauses=2, classes=("fruit", "wood")) -> TMClassifier:
    """A classifier over NAMES whose clause (class index, clause) includes the given literals (0-2: the words,
    3-5: their negations), every other automaton one step below include."""
    X = np.array([[1, 0, 0], [0, 1, 0]] * 4, dtype=np.uint8)
    tm = TMClassifier(n_clauses, 5, 3.0, **CPU).fit(X, [classes[i % 2] for i in range(8)], epochs=1)
    states = np.full((len(classes) * n_clauses, 6), 127)
    for (c, j), literals in includes.items():
        states[c * n_clauses + j, literals] = 200
    tm.close()
    tm._ta_state = states_to_planes(states, 8)
    return tm


def test_each_clause_is_a_rule_over_named_features_with_its_polarity_and_class():
    tm = _hand_made({(0, 0): [0, 4], (0, 1): [1], (1, 0): [1, 3, 5]})
    rules = tm.rules(feature_names=NAMES)
    assert rules == [
        {"class": "fruit", "clause": 0, "polarity": 1, "rule": "word_apple AND NOT word_tree",
         "positive": ["word_apple"], "negated": ["word_tree"]},
        {"class": "fruit", "clause": 1, "polarity": -1, "rule": "word_tree", "positive": ["word_tree"], "negated": []},
        {"class": "wood", "clause": 0, "polarity": 1, "rule": "word_tree AND NOT word_apple AND NOT word_pie",
         "positive": ["word_tree"], "negated": ["word_apple", "word_pie"]},
    ]  # the empty clause (wood, 1) never fires at inference and is left out
    assert tm.rules()[0]["rule"] == "x0 AND NOT x1"  # no names given: x0, x1, ...
    with pytest.raises(ValueError, match="feature_names has 2 names, but this model reads 3 features"):
        tm.rules(feature_names=NAMES[:2])


def test_explain_lists_the_clauses_that_fired_and_their_votes():
    tm = _hand_made({(0, 0): [0, 4], (0, 1): [1], (1, 0): [1, 3, 5]})
    out = tm.explain([1, 0, 1], feature_names=NAMES)
    assert out["prediction"] == "fruit"
    assert out["sums"] == {"fruit": 1, "wood": 0}
    assert out["fired"] == [{"class": "fruit", "clause": 0, "vote": 1, "rule": "word_apple AND NOT word_tree"}]
    out = tm.explain(np.array([[0, 1, 0]], dtype=np.uint8), feature_names=NAMES)
    assert out["sums"] == {"fruit": -1, "wood": 1} and out["prediction"] == "wood"
    assert [(f["class"], f["vote"]) for f in out["fired"]] == [("fruit", -1), ("wood", 1)]
    np.testing.assert_array_equal(tm.class_sums(np.array([[0, 1, 0]])), [[-1, 1]])
    with pytest.raises(ValueError, match="explain takes one example"):
        tm.explain(np.zeros((2, 3)))


def test_the_sums_of_explain_are_the_kernels_sums_on_a_trained_model():
    rng = np.random.default_rng(2)
    X = rng.integers(0, 2, (400, 10)).astype(np.uint8)
    y = X[:, 0] * 2 + X[:, 1]  # four classes
    tm = TMClassifier(20, 10, 3.0, **CPU).fit(X, y, epochs=10)
    sums = tm.class_sums(X[:40])
    for i in range(40):
        out = tm.explain(X[i])
        assert [out["sums"][c] for c in tm.classes_.tolist()] == sums[i].tolist()
        assert out["prediction"] == tm.predict(X[i:i + 1])[0]


def _roundtrip(tm, tmp_path, **kwargs) -> RuleModel:
    tm.export_rules(tmp_path / "rules.json", **kwargs)
    return RuleModel.load(tmp_path / "rules.json")


def test_the_exported_binary_classifier_predicts_as_the_estimator(tmp_path):
    rng = np.random.default_rng(1)
    X = rng.integers(0, 2, (500, 12)).astype(np.uint8)
    y = np.where(X[:, 0] ^ X[:, 1], "odd", "even")
    tm = TMClassifier(20, 15, 3.9, **CPU).fit(X, y, epochs=15)
    model = _roundtrip(tm, tmp_path)
    assert model.predict(X.tolist()) == tm.predict(X).tolist()
    assert model.class_sums(X.tolist()) == tm.class_sums(X).tolist()
    # sparse rows as mappings (absent features are 0), by column number or by name
    csr = sp.csr_matrix(X[:50])
    rows = [dict(zip(csr[i].indices.tolist(), [1] * csr[i].nnz)) for i in range(50)]
    assert model.predict(rows) == tm.predict(csr).tolist()
    named = [{f"x{k}": v for k, v in r.items()} for r in rows]
    assert model.predict(named) == tm.predict(csr).tolist()
    assert model.explain(X[0].tolist())["fired"] == [
        {k: v for k, v in f.items()} for f in tm.explain(X[0])["fired"]]
    with pytest.raises(ValueError, match="must be 0 or 1"):
        model.predict([[2] + [0] * 11])
    with pytest.raises(ValueError, match="a row has 3 values, but this model reads 12 features"):
        model.predict([[0, 1, 0]])


@pytest.mark.parametrize("labels", [(0, 1, 2), ("a", "b", "c"), (0.5, 1.5, 2.5), (False, True, None)])
def test_the_exported_booleanized_classifier_predicts_as_the_estimator(tmp_path, labels):
    from sklearn.datasets import make_blobs

    X, y = make_blobs(300, n_features=3, centers=3 if labels[-1] is not None else 2, random_state=4)
    y = np.array([labels[v] for v in y])
    tm = TMClassifier(20, 10, 3.0, booleanize=6, **CPU).fit(X, y, epochs=10)
    model = _roundtrip(tm, tmp_path, feature_names=["a", "b", "c"])
    assert model.predict(X.tolist()) == tm.predict(X).tolist()
    X_new = X + np.random.default_rng(0).normal(size=X.shape)  # values between and beyond the thresholds
    assert model.predict(X_new.tolist()) == tm.predict(X_new).tolist()
    assert model.document["features"] == ["a", "b", "c"]
    assert all(re.fullmatch(r"[\w. <>=+-]+( AND [\w. <>=+-]+)*", c["rule"]) for c in model.clauses)


def test_the_exported_regressor_predicts_as_the_estimator(tmp_path):
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, size=(300, 3))
    y = 4 * X[:, 0] - X[:, 1] + 10
    tm = TMRegressor(40, 30, 3.0, booleanize=8, **CPU).fit(X, y, epochs=10)
    model = _roundtrip(tm, tmp_path)
    assert model.predict(X.tolist()) == tm.predict(X).tolist()  # equal floats, not just close
    out = model.explain(X[0].tolist())
    assert out["prediction"] == tm.predict(X[:1])[0] and out["sum"] == tm.class_sums(X[:1])[0, 0]
    assert tm.explain(X[0])["sum"] == out["sum"]


def test_datetime_classes_are_exported_as_their_dtype_reads_them(tmp_path):
    X = np.array([[1, 0], [0, 1]] * 20, dtype=np.uint8)
    days = np.array(["2021-01-01", "2021-06-01"], dtype="datetime64[D]")
    tm = TMClassifier(4, 5, 3.0, **CPU).fit(X, days[X[:, 1]], epochs=5)
    model = _roundtrip(tm, tmp_path)
    assert model.document["classes"] == ["2021-01-01", "2021-06-01"]
    back = np.array(model.predict(X.tolist()), dtype=model.document["class_dtype"])
    np.testing.assert_array_equal(back, tm.predict(X))


def test_the_evaluator_runs_without_numpy(tmp_path):
    rng = np.random.default_rng(6)
    X = rng.normal(size=(100, 2))
    tm = TMClassifier(10, 10, 3.0, booleanize=4, **CPU).fit(X, (X[:, 0] > X[:, 1]).astype(int), epochs=5)
    tm.export_rules(tmp_path / "rules.json")
    (tmp_path / "rows.json").write_text(json.dumps(X.tolist()))
    code = ("import json, sys\n"
            "sys.modules['numpy'] = None  # any import of NumPy now fails\n"
            "from asynctm.rules import RuleModel\n"
            f"rows = json.load(open({str(tmp_path / 'rows.json')!r}))\n"
            f"print(json.dumps(RuleModel.load({str(tmp_path / 'rules.json')!r}).predict(rows)))\n")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, env=env,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == tm.predict(X).tolist()


@pytest.mark.parametrize("change, message", [
    ({"format": "other"}, "not a rules file"),
    ({"version": 2}, "rules file version 2; this asynctm reads version 1"),
    ({"T": 0}, "\"T\" must be an integer >= 1"),
    ({"classes": ["only"]}, "\"classes\" must list at least 2 classes"),
    ({"inputs": [{"feature": 9, "threshold": None}]}, "inputs\\[0\\] must name a feature column"),
    ({"clauses": [{"output": 5, "polarity": 1, "positive": [], "negated": []}]}, "clauses\\[0\\] must hold"),
])
def test_a_bad_rules_file_is_one_line(tmp_path, change, message):
    tm = _hand_made({(0, 0): [0]})
    document = {**tm.export_rules(), **change}
    (tmp_path / "bad.json").write_text(json.dumps(document))
    with pytest.raises(ValueError, match=message) as e:
        RuleModel.load(tmp_path / "bad.json")
    assert str(e.value).startswith(str(tmp_path / "bad.json")) and "\n" not in str(e.value)
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(ValueError, match="not valid JSON"):
        RuleModel.load(tmp_path / "broken.json")


def test_the_documented_schema_names_every_key_of_the_export():
    """docs/library.md documents the rules file: every key an export writes is named there."""
    doc = (REPO / "docs" / "library.md").read_text()
    section = doc[doc.index("## The rules file"):]
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    keys = set()
    for tm in (TMClassifier(4, 5, 3.0, booleanize=2, **CPU).fit(X, X[:, 0] > 0, epochs=2),
               TMRegressor(4, 5, 3.0, booleanize=2, **CPU).fit(X, X[:, 0], epochs=2)):
        document = tm.export_rules()
        keys |= set(document) | {k for spec in document["inputs"] for k in spec}
        keys |= {k for c in document["clauses"] for k in c}
    missing = sorted(k for k in keys if f"`{k}`" not in section)
    assert not missing, f"docs/library.md, 'The rules file', does not name {missing}"


def test_the_quick_start_runs(tmp_path, monkeypatch):
    """docs/library.md's quick start, as written, on small real-valued data (its GPU line where a GPU is)."""
    from asynctm.backends import cuda_available

    doc = (REPO / "docs" / "library.md").read_text()
    block = re.search(r"## Quick start\n\n```python\n(.*?)\n```", doc, re.DOTALL).group(1)
    lines = block.splitlines()
    assert len(lines) <= 10, "the quick start is ten lines at most"
    if not cuda_available():
        lines = [line for line in lines if 'backend="cuda"' not in line]
    rng = np.random.default_rng(7)
    X_train, X_test = rng.normal(size=(120, 3)), rng.normal(size=(30, 3))
    y_train, y_test = (X_train[:, 0] > 0).astype(int), (X_test[:, 0] > 0).astype(int)
    monkeypatch.chdir(tmp_path)
    scope = {"X_train": X_train, "y_train": y_train, "X_test": X_test, "y_test": y_test, "names": ["a", "b", "c"]}
    exec(compile("\n".join(lines), "docs/library.md", "exec"), scope)  # noqa: S102 - our own documentation
    assert (tmp_path / "model.npz").is_file() and (tmp_path / "model.json").is_file()
