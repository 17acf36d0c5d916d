"""The estimators' tally, regression_rule and order switches and their per-epoch training diagnostics."""

from __future__ import annotations

import json

import numpy as np
import pytest

from asynctm import TMClassifier, TMRegressor


def _xor(n=300, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 2, (n, 8)).astype(np.uint8)
    return X, X[:, 0] ^ X[:, 1]


@pytest.mark.parametrize("kwargs, message", [
    (dict(tally="synchronous"), "tally must be one of"),
    (dict(regression_rule="cubic"), "regression_rule must be one of"),
    (dict(regression_rule="quadratic"), "applies to TMRegressor only"),
    (dict(order="shuffled"), "order must be one of"),
])
def test_bad_switches_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):  # by fit, before it trains (scikit-learn's convention)
        TMClassifier(10, 10, 3.9, **kwargs).fit(*_xor(), epochs=1)


def test_sync_learns_and_is_thread_count_independent():
    """Synchronous tallies give the same machine on 1 and 2 threads (no clause reads a tally that another
    may still change), learn XOR, and take a different path from asynchronous tallies."""
    X, y = _xor()
    one = TMClassifier(10, 10, 3.9, backend="cpu", n_threads=1, seed=3, tally="sync").fit(X, y, epochs=15)
    two = TMClassifier(10, 10, 3.9, backend="cpu", n_threads=2, seed=3, tally="sync").fit(X, y, epochs=15)
    np.testing.assert_array_equal(one.ta_states(), two.ta_states())
    assert one.epoch_diagnostics_ == two.epoch_diagnostics_
    assert (one.predict(X) == y).mean() > 0.9
    asyn = TMClassifier(10, 10, 3.9, backend="cpu", n_threads=1, seed=3).fit(X, y, epochs=15)
    assert not np.array_equal(asyn.ta_states(), one.ta_states())


def test_the_staggered_order_learns_takes_its_own_path_and_is_saved(tmp_path):
    """order="staggered" reaches the kernels (another path than dataset order from the same seed), still learns
    XOR, is thread-count independent with synchronous tallies, and survives save and load."""
    X, y = _xor()
    kw = dict(backend="cpu", seed=3, order="staggered")
    one = TMClassifier(10, 10, 3.9, n_threads=1, tally="sync", **kw).fit(X, y, epochs=15)
    two = TMClassifier(10, 10, 3.9, n_threads=2, tally="sync", **kw).fit(X, y, epochs=15)
    np.testing.assert_array_equal(one.ta_states(), two.ta_states())
    dataset = TMClassifier(10, 10, 3.9, backend="cpu", n_threads=1, seed=3, tally="sync").fit(X, y, epochs=15)
    assert not np.array_equal(one.ta_states(), dataset.ta_states())
    asyn = TMClassifier(10, 10, 3.9, n_threads=1, **kw).fit(X, y, epochs=15)
    assert (asyn.predict(X) == y).mean() > 0.85 and (one.predict(X) == y).mean() > 0.85
    asyn.save(tmp_path / "m.npz")
    assert TMClassifier.load(tmp_path / "m.npz").order == "staggered"


def test_switches_are_saved_and_old_files_load_as_async(tmp_path):
    X = np.random.default_rng(0).integers(0, 2, (80, 6)).astype(np.uint8)
    y = X.sum(axis=1).astype(float)
    tm = TMRegressor(8, 6, 2.0, backend="cpu", n_threads=1, seed=1, tally="sync", regression_rule="quadratic")
    tm.fit(X, y, epochs=3)
    tm.save(tmp_path / "m.npz")
    back = TMRegressor.load(tmp_path / "m.npz")
    assert (back.tally, back.regression_rule) == ("sync", "quadratic")
    np.testing.assert_array_equal(back.predict(X), tm.predict(X))
    # A file written before the switches existed: its params have neither key.
    with np.load(tmp_path / "m.npz") as z:
        arrays = {k: z[k] for k in z.files}
    params = json.loads(str(arrays["params"]))
    del params["tally"], params["regression_rule"]
    arrays["params"] = np.array(json.dumps(params, sort_keys=True))
    np.savez(tmp_path / "old.npz", **arrays)
    old = TMRegressor.load(tmp_path / "old.npz")
    assert (old.tally, old.regression_rule) == ("async", "linear")


def test_epoch_diagnostics_match_the_clauses():
    X, y = _xor()
    tm = TMClassifier(10, 10, 3.9, backend="cpu", n_threads=2, seed=4)
    tm.fit(X, y, epochs=2)
    tm.fit(X, y, epochs=3, incremental=True)
    d = tm.epoch_diagnostics_
    assert [e["epoch"] for e in d] == [1, 2, 3, 4, 5]
    include = tm.clauses_  # (classes, clauses, literals): features then negations
    last = d[-1]
    assert last["positive_literals_per_clause"] == pytest.approx(include[..., :8].sum(-1).mean())
    assert last["negated_literals_per_clause"] == pytest.approx(include[..., 8:].sum(-1).mean())
    assert last["literals_per_clause"] == pytest.approx(include.sum(-1).mean())
    for e in d:  # per epoch, not cumulative: every epoch has some of each on this problem, and no more than
        # one event per clause and example
        total = e["type_ia_feedback"] + e["type_ib_feedback"] + e["type_ii_feedback"]
        assert 0 < total <= 2 * 10 * len(X)
        assert e["type_ia_feedback"] > 0 and e["type_ib_feedback"] > 0
    assert d[0]["type_ii_feedback"] + d[1]["type_ii_feedback"] > 0
    per_epoch = [sum(e[k] for e in d) for k in ("type_ia_feedback", "type_ib_feedback", "type_ii_feedback")]
    assert per_epoch == tm._backend.feedback_event_counts().sum(axis=0).tolist()  # the epochs add up
    refit = TMClassifier(10, 10, 3.9, backend="cpu", n_threads=2, seed=4).fit(X, y, epochs=1)
    assert len(refit.epoch_diagnostics_) == 1
