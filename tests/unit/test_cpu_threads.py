"""The CPU build's threads under OpenMP thread binding (OMP_PROC_BIND, OMP_PLACES).

scikit-learn's wheel brings its own OpenMP runtime, which loads with scikit-learn and, asked to bind, binds the main
thread to one CPU. The runtime of our build, loaded after it, computes its places from that thread's affinity: it
would put every thread on that one CPU unless the backend hands it back the CPUs the process had.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from asynctm import affinity
from asynctm.backends import cpu
from tests.helpers import REPO


@pytest.fixture
def cpus_now(monkeypatch):
    """The process could use CPUs 0-3 when asynctm was imported; the thread may now use ``now``."""
    def set_now(now):
        monkeypatch.setattr(affinity, "START_CPUS", frozenset({0, 1, 2, 3}))
        monkeypatch.setattr(affinity.os, "sched_getaffinity", lambda pid: set(now))
    for var in affinity.BINDING_VARIABLES:
        monkeypatch.delenv(var, raising=False)
    return set_now


def test_the_cpus_another_runtime_took_away_are_given_back_only_where_binding_is_asked_for(cpus_now, monkeypatch):
    cpus_now({0})
    assert affinity.process_cpus() == {0} and cpu.default_threads() == 1  # no binding: the affinity is the user's
    monkeypatch.setenv("OMP_PROC_BIND", "false")
    assert affinity.process_cpus() == {0}
    monkeypatch.setenv("OMP_PROC_BIND", "close")
    assert affinity.process_cpus() == {0, 1, 2, 3} and cpu.default_threads() == 4
    cpus_now({4, 5})  # not narrower than at import (a CPU set changed since): the affinity stands
    assert affinity.process_cpus() == {4, 5}


def test_threads_sharing_one_bound_cpu_are_told_the_fix(cpus_now, monkeypatch):
    cpus_now({0})
    monkeypatch.setattr(affinity, "START_CPUS", frozenset({0}))  # imported after scikit-learn: nothing to give back
    monkeypatch.setattr(affinity.os, "cpu_count", lambda: 4)
    assert affinity.one_bound_cpu(2) is None  # no binding asked for
    monkeypatch.setenv("OMP_PLACES", "cores")
    message = affinity.one_bound_cpu(2)
    assert "OMP_PLACES" in message and "CPU 0 only" in message and "import asynctm before scikit-learn" in message
    assert affinity.one_bound_cpu(1) is None
    monkeypatch.setattr(affinity, "START_CPUS", frozenset({0, 1, 2, 3}))  # given back at load: nothing to tell
    assert affinity.one_bound_cpu(2) is None


BOUND_FIT = """
import sys, warnings
import numpy as np
if sys.argv[1:] == ["sklearn-first"]:
    import sklearn.base  # its OpenMP runtime binds this thread before asynctm sees the CPUs
from asynctm import TMClassifier  # imports scikit-learn, whose OpenMP runtime binds this thread
warnings.simplefilter("always")
X = np.random.default_rng(0).integers(0, 2, (200, 64)).astype(np.uint8)
TMClassifier(n_clauses=40, T=10, s=3.0, backend="cpu", n_threads=2, seed=0).fit(X, X[:, 0], epochs=1)
"""


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_bound_threads_of_our_build_run_on_cpus_of_their_own():
    env = {**os.environ, "OMP_PROC_BIND": "close", "OMP_PLACES": "cores", "OMP_DISPLAY_AFFINITY": "TRUE",
           "OMP_AFFINITY_FORMAT": "openmp-thread-affinity %A", "PYTHONPATH": str(REPO / "src")}
    def fit(*args):
        r = subprocess.run([sys.executable, "-c", BOUND_FIT, *args], env=env, capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
        places = {line.split()[-1] for line in (r.stdout + r.stderr).splitlines()
                  if line.startswith("openmp-thread-affinity ")}
        return places, r.stderr

    places, err = fit()
    assert len(places) >= 2, places  # the two threads of our build on two places, not both on the first CPU
    assert "RuntimeWarning" not in err
    places, err = fit("sklearn-first")  # too late to give the CPUs back: one warning says what to do
    assert places == {"0"} and err.count("import asynctm before scikit-learn") == 1
