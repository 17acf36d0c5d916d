"""A clean Ctrl-C: a pyTsetlinMachine epoch busy in C ends within seconds on SIGINT or SIGTERM, and an
interrupted Snakemake run leaves no record, no lock and nothing that needs --unlock."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

import pytest

from tests.helpers import copy_workflow

# One epoch of this machine takes 15+ s on 2 cores: far longer than the few seconds an interrupt may take.
LONG_EPOCH = textwrap.dedent("""
    import numpy as np, sys
    from asynctm.peers import make_peer
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
    # A shell's background job starts with SIGINT ignored, and Python then never raises KeyboardInterrupt:
    # give the child the default disposition whatever started this test.
    proc = subprocess.Popen([sys.executable, "-c", LONG_EPOCH], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
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


RECORD = "results/wsd_apple/pytm_nonindexed/n300_T50_s5_e100/seed0.json"


def _write_dataset(workdir, n_train, n_features):
    """A made-up wsd_apple in the processed layout (the run reads only that), so no data rule has to run."""
    import numpy as np

    from asynctm.datasets.base import ProcessedDataset, save_processed

    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, size=(n_train + 100, n_features), dtype=np.uint8)
    y = (X[:, 0] ^ X[:, 1]).astype(np.int64)
    save_processed(ProcessedDataset("wsd_apple", "paper", "classification", X[:n_train], y[:n_train], X[n_train:],
                                    y[n_train:], [f"f{i}" for i in range(n_features)], ["a", "b"]),
                   workdir / "data" / "processed" / "wsd_apple" / "paper")


def _snakemake_args(*extra):
    # --allowed-rules run_tm: the made-up processed dataset counts as a source (no fetch, no prepare).
    return [sys.executable, "-m", "snakemake", "--cores", "2", "--allowed-rules", "run_tm", *extra, "--", RECORD]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_snakemake_stops_within_seconds_and_reruns_without_unlock(repo_root, tmp_path, sig):
    """The signal goes to the snakemake process only (not its process group, as a terminal's Ctrl-C would):
    Snakemake alone would wait for the pyTsetlinMachine run (100 epochs of several seconds each)."""
    pytest.importorskip("pyTsetlinMachine.tm", reason="pyTsetlinMachine is not installed")
    copy_workflow(tmp_path)
    _write_dataset(tmp_path, 2000, 3000)
    log = tmp_path / RECORD.replace(".json", ".log")
    proc = subprocess.Popen(_snakemake_args(), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    try:
        deadline = time.monotonic() + 120
        while not (log.is_file() and "epoch" in log.read_text()):
            assert proc.poll() is None and time.monotonic() < deadline, "the run did not start"
            time.sleep(0.2)
        time.sleep(1.0)  # inside pyTsetlinMachine's first epoch
        sent = time.monotonic()
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode != 0
    assert took < 15, f"snakemake took {took:.1f} s to stop after {sig.name}\n{out[-3000:]}"
    assert f"{sig.name}: stopping the running jobs" in out
    assert not (tmp_path / RECORD).exists()
    assert not list(tmp_path.glob("results/**/*.tmp*"))
    leftovers = subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True, text=True).stdout.split()
    assert not leftovers, f"processes left running: {leftovers}"
    snake = tmp_path / ".snakemake"
    assert not any((snake / "locks").glob("*")) and not any((snake / "incomplete").glob("*"))
    if sig != signal.SIGINT:
        return  # the same clean state as after SIGINT; one rerun check is enough
    # The same command again, without --unlock, runs the job (on a tiny dataset now, so it is quick).
    _write_dataset(tmp_path, 50, 20)
    again = subprocess.run(_snakemake_args(), cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    assert (tmp_path / RECORD).is_file()
