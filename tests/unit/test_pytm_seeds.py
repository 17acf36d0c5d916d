"""pyTsetlinMachine's seeds: every seed a distinct example order, and records that say when a seed changes nothing.

pyTsetlinMachine shuffles the training examples every epoch with libc ``rand()``; glibc treats ``srand(0)`` as
``srand(1)``, so the peer seeds libc with ``seed + 1``. Its pcg32 feedback stream has a fixed start state per
process, so the runs are compared in fresh processes: there only the shuffle can tell two seeds apart.
"""

from __future__ import annotations

import ctypes
import subprocess
import sys

import pytest

from asynctm.baselines.pytm import _libc, libc_seed, stream_examples
from asynctm.peers import make_peer

pytm = pytest.importorskip("pyTsetlinMachine.tm", reason="pyTsetlinMachine is not installed")

# One epoch of an unindexed machine on a small random problem, in a fresh process; prints a digest of the
# TA states, which depend on the order in which the examples were visited.
_ONE_EPOCH = """
import hashlib, sys
import numpy as np
from asynctm.peers import make_peer
rng = np.random.default_rng(7)
X = rng.integers(0, 2, size=(120, 16), dtype=np.uint8)
y = (X[:, 0] ^ X[:, 1]).astype(np.uint32)
peer = make_peer("pytm", "classification", 10, 15, 3.9, indexed=False, seed=int(sys.argv[1]))
peer.fit_epoch(X, y)
h = hashlib.sha256()
for weights, ta_state in peer.model.get_state():
    h.update(np.ascontiguousarray(ta_state).tobytes())
print(h.hexdigest(), peer.metadata()["libc_srand_seed"])
"""


def _state_after_one_epoch(seed: int) -> tuple[str, int]:
    out = subprocess.run([sys.executable, "-c", _ONE_EPOCH, str(seed)], capture_output=True, text=True,
                         timeout=120, check=True).stdout.split()
    return out[0], int(out[1])


def test_glibc_srand_zero_is_srand_one():
    """Why the mapping exists: on this libc srand(0) and srand(1) start the same rand() stream."""
    libc = _libc()

    def first(seed):
        libc.srand(ctypes.c_uint(seed))
        return [libc.rand() for _ in range(5)]

    if first(0) != first(1):
        pytest.skip("this libc does not treat srand(0) as srand(1)")
    assert first(1) != first(2)


def test_libc_seed_is_seed_plus_one_and_checked():
    assert [libc_seed(k) for k in (0, 1, 2, 4)] == [1, 2, 3, 5]
    for bad in (-1, 2**32 - 1, 1.5, True):
        with pytest.raises(ValueError, match=r"\[0, 2\^32 - 2\]"):
            libc_seed(bad)


def test_regression_seeds_take_seed_plus_one_examples_and_the_same_range():
    assert [stream_examples(k) for k in (0, 1, 2, 4)] == [0, 2, 3, 5]
    for bad in (-1, 2**32 - 1, 0.5, True):
        with pytest.raises(ValueError, match=r"\[0, 2\^32 - 2\]"):
            stream_examples(bad)
        with pytest.raises(ValueError, match=r"\[0, 2\^32 - 2\]"):
            make_peer("pytm", "regression", 10, 8, 1.5, seed=bad)


def test_seeds_zero_and_one_give_different_example_orders():
    state0, srand0 = _state_after_one_epoch(0)
    again0, _ = _state_after_one_epoch(0)
    state1, srand1 = _state_after_one_epoch(1)
    assert (srand0, srand1) == (1, 2)
    assert state0 == again0, "one seed must give one run (the comparison below would mean nothing otherwise)"
    assert state0 != state1, "seeds 0 and 1 trained in the same example order"


def test_records_say_whether_the_seed_changes_the_run():
    cls = make_peer("pytm", "classification", 10, 15, 3.9, seed=3).metadata()
    assert cls["seeded"] is True and cls["libc_srand_seed"] == 4 and "srand(seed + 1)" in cls["random_numbers"]
    assert cls["pcg32_advance_examples"] is None
    reg = make_peer("pytm", "regression", 10, 15, 3.9, seed=3).metadata()
    assert reg["seeded"] is True and reg["libc_srand_seed"] is None and reg["pcg32_advance_examples"] == 4
    assert make_peer("pytm", "regression", 10, 15, 3.9, seed=0).metadata()["pcg32_advance_examples"] == 0
    assert "seeds are distinct runs" in reg["random_numbers"]
    unseeded = make_peer("pytm", "regression", 10, 15, 3.9).metadata()
    assert unseeded["seeded"] is False and unseeded["pcg32_advance_examples"] is None


# One epoch of the regression machine on a small problem, in a fresh process (the pcg32 stream starts there):
# a digest of its TA states, which depend on where in the stream the machine started.
_ONE_REGRESSION_EPOCH = """
import hashlib, sys
import numpy as np
from asynctm.peers import make_peer
rng = np.random.default_rng(7)
X = rng.integers(0, 2, size=(120, 16), dtype=np.uint8)
y = (3.0 * X[:, 0] + X[:, 1]).astype(np.float64)
peer = make_peer("pytm", "regression", 10, 8, 1.5, seed=int(sys.argv[1]))
peer.fit_epoch(X, y)
h = hashlib.sha256()
for part in peer.model.get_state():
    h.update(np.ascontiguousarray(part).tobytes())
print(h.hexdigest())
"""


def test_regression_seeds_0_to_9_are_ten_runs_and_one_seed_is_one_run():
    def digest(seed):
        return subprocess.run([sys.executable, "-c", _ONE_REGRESSION_EPOCH, str(seed)], capture_output=True,
                              text=True, timeout=120, check=True).stdout.strip()

    runs = {seed: digest(seed) for seed in range(10)}
    assert digest(3) == runs[3], "one seed must give one run"
    assert len(set(runs.values())) == 10, f"regression seeds share a run: {runs}"
