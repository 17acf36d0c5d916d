"""A clean Ctrl-C: a pyTsetlinMachine epoch busy in C ends within seconds on SIGINT or SIGTERM, and an
interrupted Snakemake run leaves no record, no lock and nothing that needs --unlock."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

# One epoch of this machine takes 15+ s on 2 cores: far longer than the few seconds an interrupt may take.
LONG_EPOCH = textwrap.dedent("""
    import numpy as np, sys
    from asynctm.baselines.pytm import make_peer
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, size=(2000, 2000), dtype=np.uint8)
    y = X[:, 0] ^ X[:, 1]
    peer = make_peer("pytm", "classification", 2000, 50, 10.0, indexed=False, seed=1)
    peer.prepare(X, y)
    print("epoch started", flush=True)
    peer.fit_epoch(X, y)
    print("epoch finished", flush=True)
""")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_pytm_epoch_in_c_ends_within_seconds(sig):
    pytest.importorskip("pyTsetlinMachine.tm", reason="pyTsetlinMachine is not installed")
    proc = subprocess.Popen([sys.executable, "-c", LONG_EPOCH], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline().strip() == "epoch started"
        time.sleep(1.0)  # well inside the C call
        sent = time.monotonic()
        proc.send_signal(sig)
        proc.wait(timeout=30)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out = proc.stdout.read()
    assert "epoch finished" not in out
    assert proc.returncode != 0
    assert took < 3.0, f"{sig.name} took {took:.1f} s to end the process"
