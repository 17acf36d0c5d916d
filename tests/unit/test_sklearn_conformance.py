"""scikit-learn's own estimator checks (the installed version's suite, each check a test) on TMClassifier,
TMRegressor and the Booleanizer, plus the tags they declare.

The suite feeds real-valued data, so the estimators run with ``booleanize`` set; with ``seed``, the CPU backend
and one thread they are deterministic, as their tags then say, so every check applies. Small models keep it
fast (the kernels are built once per shape, then cached): the instances are configured here, the library's
defaults stay as they are (docs/library.md, "scikit-learn").
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.utils import get_tags
from sklearn.utils.estimator_checks import parametrize_with_checks

from asynctm import TMClassifier, TMRegressor
from asynctm.booleanize import Booleanizer

CPU = {"backend": "cpu", "n_threads": 1, "seed": 0}
# The regressor needs enough clauses, a fine enough vote range and epochs to pass the suite's bar on its regression
# data (R^2 > 0.5 with one informative feature among ten); the classifier's blobs are learnt by a small model.
CHECKED = [
    TMClassifier(n_clauses=10, epochs=10, booleanize=8, **CPU),
    TMRegressor(n_clauses=100, T=50, s=3.0, epochs=50, booleanize=8, **CPU),
    Booleanizer(),
]


@parametrize_with_checks(CHECKED)
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)


def test_the_array_api_check_passes_with_array_api_dispatch():
    """The one check the suite skips unless SCIPY_ARRAY_API is set before SciPy is imported: run it in a fresh
    interpreter that sets it (the estimators declare no Array API support; with NumPy input the results must
    not change)."""
    code = (
        "from sklearn.utils.estimator_checks import check_estimator\n"
        "from test_sklearn_conformance import CHECKED\n"
        "for est in CHECKED:\n"
        "    res = [r for r in check_estimator(est, on_fail=None) if r['check_name'] == 'check_array_api_input']\n"
        "    assert res and all(r['status'] == 'passed' for r in res), (type(est).__name__, res)\n"
        "print('ok')\n"
    )
    env = {**os.environ, "SCIPY_ARRAY_API": "1", "PYTHONPATH": os.pathsep.join(
        [os.path.dirname(__file__), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, env=env,
                         timeout=600)
    assert run.returncode == 0 and run.stdout.strip().endswith("ok"), run.stderr[-3000:]


@pytest.mark.parametrize("params, deterministic", [
    ({}, False),  # no seed: a fresh one each fit
    ({"seed": 0}, False),  # all cores (or a GPU with backend="auto"): clauses read changing tallies
    ({"seed": 0, "backend": "cpu", "n_threads": 2}, False),
    ({"seed": 0, "backend": "auto", "n_threads": 1}, False),  # may pick a GPU
    ({"seed": 0, "backend": "cpu", "n_threads": 1}, True),
])
def test_tags_say_when_training_is_deterministic(params, deterministic):
    for cls in (TMClassifier, TMRegressor):
        tags = get_tags(cls(**params))
        assert tags.non_deterministic is not deterministic
        assert tags.input_tags.sparse and not tags.input_tags.positive_only and not tags.input_tags.allow_nan


def test_the_checked_instances_are_deterministic_as_their_tags_say():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(80, 3))
    y = (X[:, 0] > 0).astype(int)
    a, b = (clone(CHECKED[0]).fit(X, y) for _ in range(2))
    np.testing.assert_array_equal(a.ta_states(), b.ta_states())


def test_construction_and_set_params_never_raise_and_never_change_values():
    """scikit-learn's rule: parameters are stored as given; fit checks them (tests/unit/test_estimators.py)."""
    odd = {"n_clauses": -3, "T": "big", "s": None, "backend": "gpu", "booleanize": 0, "epochs": -1}
    for cls in (TMClassifier, TMRegressor):
        tm = cls(**odd)
        assert {k: tm.get_params()[k] for k in odd} == odd
        assert clone(tm).set_params(n_clauses=0).n_clauses == 0


def test_binary_and_sparse_input_keep_the_packed_path():
    """0/1 features go to the kernels as they are (a CSR matrix stays sparse, never densified); with
    ``booleanize`` a 0/1 feature keeps one feature, itself, so the model learns exactly the same clauses."""
    rng = np.random.default_rng(4)
    X = rng.integers(0, 2, (300, 12)).astype(np.uint8)
    y = X[:, 0] ^ X[:, 1]
    plain = TMClassifier(10, 15, 3.9, **CPU).fit(X, y, epochs=3)
    via_booleanizer = TMClassifier(10, 15, 3.9, booleanize=8, **CPU).fit(X, y, epochs=3)
    np.testing.assert_array_equal(plain.ta_states(), via_booleanizer.ta_states())
    assert via_booleanizer.n_binary_features_ == 12
    for booleanize in (None, 8):
        tm = TMClassifier(10, 15, 3.9, booleanize=booleanize, **CPU).fit(sp.csr_matrix(X), y, epochs=3)
        assert sp.issparse(tm._check_X(sp.csr_matrix(X), fitting=False))
        np.testing.assert_array_equal(tm.ta_states(), plain.ta_states())
