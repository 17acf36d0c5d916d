"""Checkpoints and resume of a TM run (asynctm.experiments.run): a run killed after epoch 3 resumes from its
checkpoint, and on one thread its per-epoch metrics equal an uninterrupted run's; SIGTERM leaves a log that
says where it stopped, no record and the checkpoint; a checkpoint of other settings is not used.
A small processed dataset in a temporary folder, subprocesses through the CLI; seconds each.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from asynctm.datasets.base import ProcessedDataset, save_processed
from asynctm.experiments.run import checkpoint_path, run_tm

N_EPOCHS = 12


def _toy(tmp_path, n=3000):
    """Class: at least 3 of the first 5 features set, with 10 % label noise (the accuracy moves by epoch)."""
    rng = np.random.default_rng(11)
    X = (rng.random((n, 16)) < 0.5).astype(np.uint8)
    y = ((X[:, :5].sum(1) >= 3) ^ (rng.random(n) < 0.1)).astype(np.int64)
    cut = n * 4 // 5
    save_processed(ProcessedDataset(name="toy", protocol="paper", task="classification", X_train=X[:cut],
                                    y_train=y[:cut], X_test=X[cut:], y_test=y[cut:],
                                    feature_names=[f"f{i}" for i in range(16)], meta={"raw_digest": "abc"}),
                   tmp_path / "data" / "processed" / "toy" / "paper")


def _settings(impl="tm_cpu", epochs=N_EPOCHS, clauses=20, **extra):
    return {"kind": "tm", "experiment": "toy", "impl": impl, "params": f"n{clauses}_T10_s3_e{epochs}", "seed": 3,
            "scale": "smoke", "task": "classification", "dataset": "toy", "protocol": "paper", "f1": "macro",
            "max_train": None, "max_test": None, "checkpoint_every_s": 0,
            "hyperparameters": {"n_clauses": clauses, "T": 10, "s": 3.0, "epochs": epochs, "state_bits": 8,
                                "boost_true_positive": True, "batch_size": 50, "append_negated": True}, **extra}


def _command(tmp_path, settings, name):
    return [sys.executable, "-m", "asynctm.experiments", "tm", "--settings", json.dumps(settings), "--data-dir",
            str(tmp_path / "data"), "--out", str(tmp_path / f"{name}.json"), "--log", str(tmp_path / f"{name}.log"),
            "--threads", "1"]


def _start_and_signal(cmd, after: str, sig) -> tuple[subprocess.Popen, float]:
    """Start ``cmd``, wait for a progress line containing ``after``, send ``sig``; (process, seconds to exit)."""
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    try:
        for line in proc.stderr:
            if after in line:
                sent = time.monotonic()
                proc.send_signal(sig)
                break
        else:
            pytest.fail(f"the run ended before printing {after!r}")
        proc.wait(timeout=30)
        return proc, time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _metrics(record):
    return [{k: v for k, v in e.items() if k not in ("train_s", "eval_s")} for e in record["epochs"]]


def test_killed_run_resumes_and_equals_an_uninterrupted_run(tmp_path):
    _toy(tmp_path)
    st = _settings()
    reference = run_tm(st, tmp_path / "data", tmp_path / "whole.json", threads=1)  # uninterrupted
    assert reference["resume"]["count"] == 0 and reference["resume"]["exact"] is True
    assert not checkpoint_path(tmp_path / "whole.json").exists()  # removed once the record is written

    proc, _ = _start_and_signal(_command(tmp_path, st, "cut"), f"epoch 3/{N_EPOCHS} acc", signal.SIGKILL)
    assert proc.returncode == -signal.SIGKILL
    assert not (tmp_path / "cut.json").exists() and checkpoint_path(tmp_path / "cut.json").exists()

    again = subprocess.run(_command(tmp_path, st, "cut"), capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    resumed = json.loads((tmp_path / "cut.json").read_text())
    after = resumed["resume"]["after_epochs"]
    assert resumed["resume"]["count"] == 1 and 3 <= after[0] < N_EPOCHS, resumed["resume"]
    assert "resumed from cut.checkpoint.npz after epoch" in again.stderr
    assert _metrics(resumed) == _metrics(reference)  # bit for bit, epoch by epoch
    assert len({e["accuracy"] for e in reference["epochs"]}) > 1  # the metrics do move: the test can fail
    assert not checkpoint_path(tmp_path / "cut.json").exists()
    log = (tmp_path / "cut.log").read_text()
    assert log.index(f"epoch 3/{N_EPOCHS} acc") < log.index("resumed from")  # both attempts kept in the log


def test_resume_from_tallies_is_needed_for_exactness(tmp_path):
    """Resuming from the clauses alone (tallies recomputed) would not be exact: the checkpoint must hold the
    stale tallies and stored outputs of Algorithm 1. Guards against dropping them."""
    from asynctm import TMClassifier

    rng = np.random.default_rng(2)
    X = (rng.random((600, 16)) < 0.5).astype(np.uint8)
    y = ((X[:, 0] & X[:, 1]) ^ (rng.random(600) < 0.1)).astype(np.int64)
    a = TMClassifier(n_clauses=40, T=10, s=3.0, batch_size=50, backend="cpu", n_threads=1, seed=3)
    a.fit(X, y, epochs=3)
    path = tmp_path / "m.npz"
    a.save(path)
    a.fit(X, y, epochs=2, incremental=True)
    b = TMClassifier.load(path, n_threads=1)
    b.fit(X, y, epochs=2, incremental=True)
    assert not np.array_equal(a.ta_states(), b.ta_states())


def test_sigterm_logs_the_epoch_leaves_no_record_and_keeps_the_checkpoint(tmp_path):
    _toy(tmp_path)
    st = _settings(epochs=400)
    proc, took = _start_and_signal(_command(tmp_path, st, "term"), "epoch 2/400 acc", signal.SIGTERM)
    assert proc.returncode == 128 + signal.SIGTERM and took < 5.0
    assert not (tmp_path / "term.json").exists() and checkpoint_path(tmp_path / "term.json").exists()
    log = (tmp_path / "term.log").read_text()
    stop = next(line for line in log.splitlines() if "interrupted at epoch" in line)
    k = int(stop.split("interrupted at epoch ")[1].split("/")[0])
    assert k >= 3 and f"after {k - 1} completed epoch(s)" in stop  # the epoch it stopped in, not a done one
    assert f"epoch {k - 1}/400 acc" in log and f"epoch {k}/400 acc" not in log
    assert "(SIGTERM)" in stop and "no record written" in stop
    assert "kept" in log and "time left" in log and "s/epoch" in log
    assert not list(tmp_path.glob(".*.tmp"))


def test_checkpoint_of_other_settings_is_not_used(tmp_path, capsys):
    _toy(tmp_path)
    out = tmp_path / "r.json"
    ckpt = checkpoint_path(out)
    from asynctm import peers

    real, calls = peers.AsyncTMPeer.fit_epoch, {"n": 0}

    def stop_at_third(self, X, y):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real(self, X, y)

    peers.AsyncTMPeer.fit_epoch = stop_at_third
    try:
        with pytest.raises(KeyboardInterrupt):
            run_tm(_settings(), tmp_path / "data", out, threads=1)
    finally:
        peers.AsyncTMPeer.fit_epoch = real
    assert ckpt.exists()
    record = run_tm(_settings(clauses=10), tmp_path / "data", out, threads=1)  # other settings: start afresh
    assert record["resume"]["count"] == 0 and not ckpt.exists()
    assert "not used: it was written for other settings" in capsys.readouterr().err


def test_pytm_resume_is_recorded_as_not_exact(tmp_path):
    pytest.importorskip("pyTsetlinMachine.tm", reason="pyTsetlinMachine is not installed")
    _toy(tmp_path, n=400)
    from asynctm.baselines import pytm as peers

    out = tmp_path / "p.json"
    real, calls = peers.PyTMPeer.fit_epoch, {"n": 0}

    def stop_at_third(self, X, y):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real(self, X, y)

    st = _settings(impl="pytm_nonindexed", epochs=4)
    peers.PyTMPeer.fit_epoch = stop_at_third
    try:
        with pytest.raises(KeyboardInterrupt):
            run_tm(st, tmp_path / "data", out)
    finally:
        peers.PyTMPeer.fit_epoch = real
    record = run_tm(st, tmp_path / "data", out)
    assert record["resume"]["count"] == 1 and record["resume"]["after_epochs"] == [2]
    assert record["resume"]["exact"] is False and "not those of an uninterrupted run" in record["resume"]["note"]
    assert [e["epoch"] for e in record["epochs"]] == [1, 2, 3, 4]
    # The restored machine predicts as the saved one did: epoch 3 starts from epoch 2's clauses, so its
    # accuracy is that of a trained machine, not of a fresh one.
    assert record["epochs"][2]["accuracy"] > 60


def test_a_signal_while_the_heartbeat_starts_leaves_no_thread_to_join(monkeypatch):
    """SIGTERM can land while an epoch's heartbeat thread is being started; the clean stop must then not fail
    on joining a thread that never started (it did, about one SIGTERM in five, with exit status 1)."""
    import threading

    from asynctm.experiments import run

    beat = run._Heartbeat(lambda msg: None, every=60)

    def interrupted(self):
        raise run.RunInterrupted(signal.SIGTERM)

    monkeypatch.setattr(threading.Thread, "start", interrupted)
    with pytest.raises(run.RunInterrupted):
        beat.start(1, 2, None)
    beat.end()
    assert beat.thread is None


def test_a_run_at_its_stop_time_pauses_with_a_checkpoint_and_resumes_exactly(tmp_path):
    """``--stop-at`` already past: one epoch (nothing predicts its time before it), then a pause before the
    second with the checkpoint saved and exit status 75; the same command without it finishes the run, equal to
    an uninterrupted one epoch by epoch."""
    from asynctm.experiments.__main__ import EXIT_PAUSED

    _toy(tmp_path)
    st = _settings(checkpoint_every_s=10**6)  # no periodic checkpoint: the pause must save its own
    reference = run_tm(st, tmp_path / "data", tmp_path / "whole.json", threads=1)
    cmd = _command(tmp_path, st, "paused")
    first = subprocess.run([*cmd, "--stop-at", str(time.time() - 1)], capture_output=True, text=True)
    assert first.returncode == EXIT_PAUSED, first.stderr
    assert "paused after 1 of 12 epochs" in first.stderr and not (tmp_path / "paused.json").exists()
    assert checkpoint_path(tmp_path / "paused.json").exists()
    log = (tmp_path / "paused.log").read_text()
    assert f"epoch 1/{N_EPOCHS} acc" in log and f"paused before epoch 2/{N_EPOCHS}" in log
    again = subprocess.run(cmd, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    resumed = json.loads((tmp_path / "paused.json").read_text())
    assert resumed["resume"]["after_epochs"] == [1] and _metrics(resumed) == _metrics(reference)


def test_a_pause_comes_before_the_epoch_that_would_end_after_the_stop_time(tmp_path, monkeypatch):
    """The clock passes the stop time during epoch 3: the run pauses before epoch 4 with 3 epochs saved."""
    from asynctm import peers
    from asynctm.experiments import run as run_mod

    _toy(tmp_path)
    real_time, real_fit = time.time, peers.AsyncTMPeer.fit_epoch
    offset, calls = [0.0], [0]

    def fit_epoch(self, X, y):
        calls[0] += 1
        if calls[0] == 3:
            offset[0] = 10**6
        return real_fit(self, X, y)

    monkeypatch.setattr(peers.AsyncTMPeer, "fit_epoch", fit_epoch)
    monkeypatch.setattr(run_mod, "time", type("Clock", (), {"time": staticmethod(lambda: real_time() + offset[0]),
                                                            "perf_counter": staticmethod(time.perf_counter),
                                                            "monotonic": staticmethod(time.monotonic)}))
    out = tmp_path / "r.json"
    with pytest.raises(run_mod.RunPaused) as info:
        run_tm(_settings(checkpoint_every_s=10**6), tmp_path / "data", out, threads=1, stop_at=real_time() + 10**5)
    assert (info.value.epochs_done, info.value.n_epochs, info.value.checkpoint) == (3, N_EPOCHS,
                                                                                   checkpoint_path(out))
    from asynctm.experiments.run import read_checkpoint

    assert len(read_checkpoint(checkpoint_path(out))["epochs"]) == 3 and not out.exists()


def test_a_gpu_run_pauses_and_resumes_exactly_on_the_simulated_gpu(tmp_path, monkeypatch):
    """tm_gpu through the simulated PyCUDA (sequential, so deterministic): a pause after epoch 1 saves the device's
    TA states, tallies and stored outputs; the resumed run equals an uninterrupted one epoch by epoch, and its
    checkpoint names the GPU."""
    from asynctm.experiments.run import RunPaused, read_checkpoint
    from tests.gpu.test_cuda_glue import _install_fake

    _install_fake(monkeypatch, warps=False)
    _toy(tmp_path, n=600)
    st = _settings(impl="tm_gpu", epochs=4, checkpoint_every_s=10**6)
    reference = run_tm(st, tmp_path / "data", tmp_path / "whole.json")
    out = tmp_path / "gpu.json"
    with pytest.raises(RunPaused):
        run_tm(st, tmp_path / "data", out, stop_at=time.time() - 1)
    state = read_checkpoint(checkpoint_path(out))
    assert len(state["epochs"]) == 1 and '"gpu": "Simulated GPU' in state["key"]
    resumed = run_tm(st, tmp_path / "data", out)
    assert resumed["resume"]["after_epochs"] == [1] and _metrics(resumed) == _metrics(reference)
    # the epochs differ (feedback counts, literals): equal metrics epoch by epoch are a real check
    assert reference["epochs"][0]["diagnostics"] != reference["epochs"][-1]["diagnostics"]


# -- damaged checkpoints ---------------------------------------------------------------------------------------

def _interrupted_after_two_epochs(tmp_path, monkeypatch, st) -> tuple:
    """A run of ``st`` stopped in its third epoch: (record path, its checkpoint after epoch 2)."""
    from asynctm import peers

    real, calls = peers.AsyncTMPeer.fit_epoch, {"n": 0}

    def stop_at_third(self, X, y):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real(self, X, y)

    out = tmp_path / "r.json"
    with monkeypatch.context() as m:
        m.setattr(peers.AsyncTMPeer, "fit_epoch", stop_at_third)
        with pytest.raises(KeyboardInterrupt):
            run_tm(st, tmp_path / "data", out, threads=1)
    ckpt = checkpoint_path(out)
    assert ckpt.exists() and not out.exists()
    return out, ckpt


def _member_data_offset(path, member: str) -> tuple[int, int]:
    """(offset, size) of a stored (uncompressed) member's bytes in the ``.npz`` at ``path``."""
    import zipfile

    with zipfile.ZipFile(path) as z:
        info = z.getinfo(member)
    raw = path.read_bytes()
    start = info.header_offset
    name_len, extra_len = (int.from_bytes(raw[start + k:start + k + 2], "little") for k in (26, 28))
    return start + 30 + name_len + extra_len, info.compress_size


def _flip_a_bit(member: str):
    def damage(ckpt):
        at, size = _member_data_offset(ckpt, member)
        data = bytearray(ckpt.read_bytes())
        data[at + size // 2] ^= 0x10  # one bit in the middle of the member (past its .npy header)
        ckpt.write_bytes(bytes(data))
    return damage


def _rewritten(**changes):
    """Rewrite the checkpoint with some arrays changed (a callable gets the arrays, returns the new value)."""
    def damage(ckpt):
        with np.load(ckpt, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        arrays.update({k: v(arrays) for k, v in changes.items()})
        with open(ckpt, "wb") as fh:
            np.savez(fh, **arrays)
    return damage


def _fewer_epochs_in_state(arrays):
    state = json.loads(str(arrays["run_state"]))
    state["epochs"] = state["epochs"][:1]
    return np.array(json.dumps(state))


DAMAGES = {
    "truncated": (lambda ckpt: ckpt.write_bytes(ckpt.read_bytes()[:ckpt.stat().st_size // 2]), "unreadable"),
    "bit-flip-in-the-run-state": (_flip_a_bit("run_state.npy"), "unreadable"),
    "bit-flip-in-the-ta-states": (_flip_a_bit("ta_state.npy"), "'ta_state' array is damaged"),
    "epoch-count-of-the-state": (_rewritten(run_state=_fewer_epochs_in_state),
                                 "its model has trained 2 epochs, but its run state holds 1"),
    "epoch-count-of-the-model": (_rewritten(epochs_trained=lambda a: np.array(5)),
                                 "its model has trained 5 epochs, but its run state holds 2"),
    "tallies-of-other-data": (_rewritten(training_class_sum=lambda a: a["training_class_sum"][:, :7]),
                              "class_sum has shape"),
}


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_checkpoint_is_set_aside_and_the_run_starts_again(tmp_path, monkeypatch, capsys, damage):
    """A truncated, bit-flipped or inconsistent checkpoint: one line names it and says the run starts again; the
    file is kept aside, never deleted; the run trains from epoch 1 and equals an uninterrupted one."""
    _toy(tmp_path, n=1500)
    st = _settings(epochs=5)
    reference = run_tm(st, tmp_path / "data", tmp_path / "whole.json", threads=1)
    out, ckpt = _interrupted_after_two_epochs(tmp_path, monkeypatch, st)
    make, reason = DAMAGES[damage]
    make(ckpt)
    damaged = ckpt.read_bytes()
    capsys.readouterr()

    record = run_tm(st, tmp_path / "data", out, tmp_path / "r.log", threads=1)
    err = capsys.readouterr().err
    aside = ckpt.with_name(ckpt.name + ".damaged")
    lines = [line for line in err.splitlines() if "is damaged" in line]
    assert len(lines) == 1, err
    assert f"checkpoint {ckpt.name} is damaged: " in lines[0] and reason in lines[0], lines[0]
    assert f"set aside as {aside.name}, the run starts again from epoch 1" in lines[0]
    assert "Traceback" not in err and "resumed from" not in err
    assert lines[0] in (tmp_path / "r.log").read_text()
    assert aside.read_bytes() == damaged  # kept as it was
    assert not ckpt.exists() and out.exists()  # the new run's checkpoint is removed once its record is written
    assert record["resume"]["count"] == 0 and [e["epoch"] for e in record["epochs"]] == [1, 2, 3, 4, 5]
    assert _metrics(record) == _metrics(reference)  # trained from epoch 1, as an uninterrupted run
    assert len({e["accuracy"] for e in reference["epochs"]}) > 1  # the metrics move: the comparison can fail


def test_a_damaged_checkpoint_through_the_command_line_and_a_second_one_aside(tmp_path):
    """The command line finishes the run (exit 0) after a damaged checkpoint; a second damaged checkpoint of the
    same run is set aside beside the first, which stays as it was."""
    _toy(tmp_path, n=600)
    st = _settings(epochs=3)
    ckpt = checkpoint_path(tmp_path / "cli.json")
    first = ckpt.with_name(ckpt.name + ".damaged")
    first.write_bytes(b"an earlier damaged checkpoint")
    ckpt.write_bytes(b"PK\x03\x04 cut short")
    done = subprocess.run(_command(tmp_path, st, "cli"), check=False, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    second = ckpt.with_name(ckpt.name + ".2.damaged")
    assert f"checkpoint {ckpt.name} is damaged: unreadable (BadZipFile" in done.stderr
    assert f"set aside as {second.name}, the run starts again from epoch 1" in done.stderr
    assert "Traceback" not in done.stderr
    assert first.read_bytes() == b"an earlier damaged checkpoint" and second.read_bytes() == b"PK\x03\x04 cut short"
    record = json.loads((tmp_path / "cli.json").read_text())
    assert [e["epoch"] for e in record["epochs"]] == [1, 2, 3] and record["resume"]["count"] == 0
